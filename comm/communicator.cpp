// Implements comm/communicator.h's creation and its questions (which algorithm, why, which are
// available); the collectives themselves are in comm/collectives.cpp. Tested by tests/mpi/
// (collectives, async, errors) and tests/cli/bench.sh; the choice itself by
// tests/unit/test_algorithm_choice.cpp.
#include "comm/communicator_state.h"

#include <cstdio>
#include <map>
#include <string_view>

#include "comm/bootstrap/exit_hooks.h"
#include "comm/bootstrap/mpi_runtime.h"
#include "comm/transport/shm/shared_slots.h"
#include "comm/world/departures.h"
#include "core/settings.h"
#include "core/timeline.h"

namespace ringdp::comm {

std::shared_ptr<Communicator> Communicator::init(CommOptions options) {
  RINGDP_CHECK(!in_forked_child(),
               "a process forked from a rank cannot start a communicator: MPI is its parent's; start it in "
               "the parent, or launch the process with mpirun");
  mark_owner_process();
  options = with_environment(options);
  FaultPlan::from_environment();  // a malformed RINGDP_FAULT is an error now, before any collective
  DiscoveredWorld world = bootstrap_world(options);
  return std::shared_ptr<Communicator>(new Communicator(std::move(world), options, true));
}

std::shared_ptr<Communicator> Communicator::init(CommOptions options, std::shared_ptr<KeyValueStore> store,
                                                 int rank, int size) {
  RINGDP_CHECK(!in_forked_child(),
               "a process forked from a rank cannot start a communicator; start it in the parent");
  mark_owner_process();
  options = with_environment(options);
  FaultPlan::from_environment();
  DiscoveredWorld world = bootstrap_store_world(options, std::move(store), rank, size);
  return std::shared_ptr<Communicator>(new Communicator(std::move(world), options, true));
}

std::shared_ptr<Communicator> Communicator::group(std::span<const int> ranks,
                                                  std::chrono::milliseconds timeout) {
  RINGDP_CHECK(!ranks.empty(), "group: no ranks given; a group holds at least the calling rank");
  std::vector<bool> seen(static_cast<size_t>(size_), false);
  for (const int r : ranks) {
    RINGDP_CHECK(r >= 0 && r < size_, "group: rank ", r, " out of range for a communicator of ", size_,
                 " rank", size_ == 1 ? "" : "s", " (expected 0..", size_ - 1, ")");
    RINGDP_CHECK(!seen[static_cast<size_t>(r)], "group: rank ", r, " is listed twice");
    seen[static_cast<size_t>(r)] = true;
  }
  state_->executor_.check_open("group");
  RINGDP_CHECK(seen[static_cast<size_t>(rank_)], "group: this rank (", rank_,
               ") is not in the list; only a group's members create it, the others call nothing");
  CommOptions options = options_;
  if (timeout.count() > 0) {
    options.timeout = timeout;
    options = with_environment(options);  // RINGDP_TIMEOUT still wins, as for the world
  }
  // Its MPI calls run as a call of this communicator: after what was issued before it (an
  // asynchronous all-reduce, then new_group).
  std::shared_ptr<Communicator> group;
  state_->executor_.queue().run(
      [&] {
        DiscoveredWorld members = bootstrap_group(options, *state_->world_.transport, ranks);
        group.reset(new Communicator(std::move(members), options, false));
      },
      false);
  for (const int r : ranks) group->world_ranks_.push_back(world_ranks_.empty() ? r : world_ranks_[r]);
  group->state_->executor_.set_label(group_label(group->world_ranks_));
  return group;
}

std::string Communicator::group_label(const std::vector<int>& world_ranks) {
  // Numbered among the groups of the same members, which every member makes in the same order (a
  // count of all groups would differ between members: non-members make none).
  static std::mutex mutex;
  static std::map<std::vector<int>, int> made;
  int number = 0;
  {
    std::lock_guard lock(mutex);
    number = ++made[world_ranks];
  }
  std::string label = detail::concat("group #", number, " of world ranks ");
  for (size_t i = 0; i < world_ranks.size(); ++i) label += (i ? ", " : "") + std::to_string(world_ranks[i]);
  return label;
}

Communicator::Communicator(DiscoveredWorld world, CommOptions options, bool whole_job)
    : options_(options),
      rank_(world.transport->rank()),
      size_(world.transport->size()),
      local_rank_(world.local_rank),
      local_size_(world.local_size),
      whole_job_(whole_job),
      state_(std::make_unique<State>(std::move(world), options_)) {
  if (whole_job) {
    if (rank_ == 0) settings::warn_unknown_variables();
    if (rank_ == 0) report_world(state_->world_);
    FaultPlan::from_environment().check_ranks(size_);
    timeline::start_from_environment(rank_);
  }
  // Last: a constructor that throws runs no destructor, which would leave the hook behind.
  if (state_->world_.departures) {
    state_->world_.departures->watch_position(&state_->executor_.position());
    state_->executor_.set_departures(state_->world_.departures.get());
    state_->exit_hook_ = add_exit_hook([this](const Leaving& leaving) { leave(leaving); });
    note_collective_timeout(options_.timeout);
  }
}

void Communicator::leave(const Leaving& leaving) {
  State& state = *state_;
  std::lock_guard guard(state.leave_mutex_);
  if (state.left_) return;
  state.left_ = true;
  // Telling the peers and freeing the windows must wait for this communicator's calls, and must not
  // run while another communicator's call is inside MPI where one queue serves them all.
  CallQueue& queue = state.executor_.queue();
  queue.drain();
  std::unique_lock lock(queue.exec_mutex());
  state.executor_.close("has left the job (" + leaving.why + ")");
  Departures* departures = state.world_.departures.get();
  if (!departures || !departures->usable()) return;  // a program may have finalized MPI itself
  // Only the shared windows need every rank at teardown; every rank has the same ones.
  const bool shared = (state.shared_slots_ && state.shared_slots_->collective_release()) ||
                      !state.shared_allocations_.empty();
  // Failing, it frees alone: its peers may be blocked in another library for as long as it lives.
  const bool collective =
      shared && !leaving.failed && !leaving.process_exit && std::uncaught_exceptions() == 0;
  departures->announce(leaving.why, state.executor_.finished(), collective);  // once
  bool free = false;
  if (collective) {
    await_peers(lock);
    free = departures->everyone_frees_shared();
  }
  departures->stop_listening();
  // Collective when `free`: every rank is here, and each frees in the same order.
  state.shared_allocations_.release(free);
  if (state.shared_slots_) state.shared_slots_->release(free || !state.shared_slots_->collective_release());
}

void Communicator::await_peers(std::unique_lock<std::mutex>& exec_lock) {
  Departures& departures = *state_->world_.departures;
  if (departures.await_everyone(exec_lock, std::chrono::steady_clock::now() + options_.timeout)) return;
  std::fprintf(stderr,
               "ringdp: rank %d: has left the job and waits for rank(s) %s to leave too before freeing "
               "the shared memory (longer than the collective timeout already)\n",
               rank_, departures.missing().c_str());
  departures.await_everyone(exec_lock, std::chrono::steady_clock::time_point::max());
}

Communicator::~Communicator() {
  if (in_forked_child()) {
    // MPI, the shared windows and the worker thread are the parent's: freeing any of them here
    // would free the parent's (or wait for a thread this process does not have). Let them go.
    state_->shared_allocations_.release(false);
    state_->routes_.abandon();
    new DiscoveredWorld(std::move(state_->world_));
    return;  // the executor's queue drains nothing in a child (comm/execution/call_queue.h)
  }
  if (state_->exit_hook_) drop_exit_hook(state_->exit_hook_);
  leave({.why = "its communicator was destroyed"});
  // Freeing the transports' MPI communicators must not run while another communicator's call is
  // inside MPI where one queue serves them all (comm/execution/call_queue.h).
  std::lock_guard lock(state_->executor_.queue().exec_mutex());
  state_->routes_.release();
  release_transports(state_->world_);
}

Device Communicator::device() const { return state_->routes_.device(); }

const char* Communicator::backend_name() const {
  const State& state = *state_;
  return state.routes_.route_for(device()) == Route::nccl ? "nccl" : state.world_.messages;
}

std::string Communicator::shared_refusal() const {
  const State& state = *state_;
  const std::string why = "allocate_shared: a shared window needs ";
  if (std::string_view(state.world_.bootstrap) == "store")
    return why +
           "ranks started by an MPI launcher (mpirun); these ranks met through a store (torchrun, mp.spawn)";
  if (std::string_view(state.world_.bootstrap) != "mpi")
    return why + "ranks started by an MPI launcher (mpirun); this is a world of one without MPI";
  if (state.world_.local_size != size_)
    return detail::concat(why, "every rank on one host; these ", size_, " ranks run on ", state.world_.hosts,
                          " hosts (", state.world_.local_size, " on this one)");
  if (!whole_job_)
    return why +
           "the whole job's communicator: a group has none, because torch frees groups at each "
           "rank's own time and freeing a window is collective";
  if (!state.shared_slots_)
    return why + "MPI shared windows in the unified memory model, which this MPI did not give";
  return {};
}

Tensor Communicator::allocate_shared(Shape shape, DType dtype) {
  State& state = *state_;
  // Every rank reaches the same answer: the world's shape and MPI's window model are the same
  // for all, so none waits below for a rank that was refused.
  state.executor_.check_open("allocate_shared");
  const std::string refusal = shared_refusal();
  RINGDP_CHECK(refusal.empty(), refusal);
  void* data = nullptr;
  // MPI calls of this communicator: after what was issued before, never beside a queued call.
  state.executor_.queue().run(
      [&] { data = state.shared_allocations_.allocate(*state.world_.transport, shape, dtype); }, false);
  return Tensor::borrow(data, std::move(shape), dtype);
}

Algorithm Communicator::resolve(CollectiveKind kind, size_t bytes, Algorithm requested) const {
  return choose_algorithm(kind, bytes, requested, Route::host, state_->topology(size_), options_).algorithm;
}

std::string Communicator::explain_choice(CollectiveKind kind, size_t bytes, Algorithm requested) const {
  const Topology world = state_->topology(size_);
  return explain(choose_algorithm(kind, bytes, requested, Route::host, world, options_), bytes, world,
                 options_);
}

AlgorithmSet Communicator::available(CollectiveKind kind, Device device) const {
  const State& state = *state_;
  return comm::available(kind, state.routes_.route_for(device), state.topology(size_));
}

void Communicator::set_timeout(std::chrono::milliseconds timeout) {
  CommOptions options = options_;
  options.timeout = timeout;
  options = with_environment(options);  // RINGDP_TIMEOUT wins; the range is checked there
  // The worker reads it as it arms each call: changed there, between calls.
  state_->executor_.queue().run([&] { options_.timeout = options.timeout; }, false);
}

void Communicator::set_step_observer(StepObserver observer) {
  state_->executor_.set_step_observer(std::move(observer));
}

}  // namespace ringdp::comm
