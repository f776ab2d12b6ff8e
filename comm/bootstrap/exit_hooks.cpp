// Implements comm/bootstrap/exit_hooks.h (the contract is documented there). Tested by
// tests/torch/test_leave.sh and tests/mpi/rank_leaves.sh (a rank that leaves, fails or is late).
#include "comm/bootstrap/exit_hooks.h"

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "comm/bootstrap/mpi_runtime.h"
#include "config.h"
#include "core/settings.h"
#if RINGDP_HAVE_MPI
#include <mpi.h>
#endif

namespace ringdp::comm {

namespace {
// The communicators' exit hooks (add_exit_hook), and which one runs now.
struct ExitHooks {
  std::mutex mutex;
  std::condition_variable done;
  std::vector<std::pair<int, std::function<void(const Leaving&)>>> hooks;
  int running = 0;
  std::vector<std::function<void()>> before_finalize;  // before_finalize(), in order
};
// Leaked on purpose: the atexit hook that reads it may run after static destructors.
ExitHooks& exit_hooks() {
  static auto* hooks = new ExitHooks;
  return *hooks;
}

// Runs every hook registered, the newest first (a world's groups before it), dropping each as it
// runs; one registered meanwhile runs too.
void run_exit_hooks(const Leaving& leaving) {
  ExitHooks& state = exit_hooks();
  std::unique_lock lock(state.mutex);
  std::vector<int> handles;
  for (const auto& hook : state.hooks) handles.push_back(hook.first);
  for (auto handle = handles.rbegin(); handle != handles.rend(); ++handle) {
    auto found = std::find_if(state.hooks.begin(), state.hooks.end(),
                              [&](const auto& hook) { return hook.first == *handle; });
    if (found == state.hooks.end()) continue;  // dropped meanwhile (its communicator was destroyed)
    std::function<void(const Leaving&)> leave = found->second;
    state.hooks.erase(found);
    // Run unlocked: a hook may wait long (for its peers), and a group being made meanwhile, on
    // another thread, registers its own hook while it holds the execution lock the hook needs.
    state.running = *handle;
    lock.unlock();
    leave(leaving);
    lock.lock();
    state.running = 0;
    state.done.notify_all();
  }
  if (!state.hooks.empty()) {
    lock.unlock();
    run_exit_hooks(leaving);
  }
}

[[maybe_unused]] void run_before_finalize() {
  std::vector<std::function<void()>> steps;
  {
    std::lock_guard lock(exit_hooks().mutex);
    steps.swap(exit_hooks().before_finalize);
  }
  for (auto& step : steps) step();
}
// The longest collective timeout of the job's communicators, in ms; 0 until one is made.
std::atomic<int64_t> g_longest_timeout_ms{0};
}  // namespace

void note_collective_timeout(std::chrono::milliseconds timeout) {
  int64_t longest = g_longest_timeout_ms.load();
  while (timeout.count() > longest && !g_longest_timeout_ms.compare_exchange_weak(longest, timeout.count())) {
  }
}

int add_exit_hook(std::function<void(const Leaving&)> leave) {
  static int next = 0;
  std::lock_guard lock(exit_hooks().mutex);
  exit_hooks().hooks.emplace_back(++next, std::move(leave));
  return next;
}

void drop_exit_hook(int handle) {
  ExitHooks& state = exit_hooks();
  std::unique_lock lock(state.mutex);
  std::erase_if(state.hooks, [&](const auto& hook) { return hook.first == handle; });
  state.done.wait(lock, [&] { return state.running != handle; });
}

void before_finalize(std::function<void()> step) {
  std::lock_guard lock(exit_hooks().mutex);
  exit_hooks().before_finalize.push_back(std::move(step));
}

void leave_job(const Leaving& leaving) {
  // A child forked from a rank (os.fork(), a DataLoader's worker) shares its peers' view of the
  // communicators but is not a rank: its exit must tell them nothing (nor take a lock that a
  // parent's thread may have held at the fork).
  if (in_forked_child()) return;
  run_exit_hooks(leaving);
}

#if RINGDP_HAVE_MPI
namespace {
// How long a rank that exits non-zero waits for its peers at exit before it exits without
// MPI_Finalize (RINGDP_EXIT_GRACE; read_exit_settings, before the hook that reads it is registered).
// Peers inside a ringdp collective hear of it and come within a second; a peer whose own timeout
// fires first (a 3 s group timeout against a rank 6 s late, as tests/torch/test_leave.sh's
// `timeout` runs) needs more; one blocked in gloo never comes.
std::chrono::seconds g_failed_grace{10};

int world_rank() {
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// After how long a rank that finished says that it still waits: the longest collective timeout of
// the job's communicators (torch's, or a program's CommOptions, RINGDP_TIMEOUT applied). MPI is
// initialised only to make one, so a rank without any (its making failed) has none to outlast.
std::optional<std::chrono::milliseconds> notice_after() {
  const int64_t noted = g_longest_timeout_ms.load();
  if (noted <= 0) return std::nullopt;
  return std::chrono::milliseconds(noted);
}

enum class AtExit { everyone, too_late, mpi_failed };

// Every rank's last collective: everyone once every rank has posted it, too_late if `until` passes
// first. Polled with sleeps, not waited in: MPICH's blocking calls spin, starving the rank waited
// for where ranks share cores (tests/support/mpi_main.cpp's global_sum says how much). Past
// `notice` (if any) it says once that it waits, so a job that seems to hang at its end shows which
// ranks finished (the rank that prints nothing is the one they wait for).
AtExit everyone_at_exit(std::chrono::steady_clock::time_point until,
                        std::optional<std::chrono::milliseconds> notice) {
  auto notice_at =
      notice ? std::chrono::steady_clock::now() + *notice : std::chrono::steady_clock::time_point::max();
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Ibarrier(MPI_COMM_WORLD, &request) != MPI_SUCCESS) return AtExit::mpi_failed;
  for (;;) {
    int done = 0;
    if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return AtExit::mpi_failed;
    if (done) return AtExit::everyone;
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) return AtExit::too_late;
    if (now >= notice_at) {
      std::fprintf(stderr,
                   "ringdp: rank %d (process %d): has finished and waits at exit for every other rank "
                   "to finish too, as MPI_Finalize does (longer than the collective timeout, %.0f s, "
                   "already)\n",
                   world_rank(), static_cast<int>(getpid()), static_cast<double>(notice->count()) / 1000);
      notice_at = std::chrono::steady_clock::time_point::max();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// The exit hook of a process whose MPI ringdp initialised. MPI_Finalize waits for every rank; so
// does a last barrier before it, where a rank that exits 0 waits as long as it takes. A rank that
// exits non-zero failed, whether or not an exception said so (Python's sys.exit(1) after catching
// one, a C++ main that returns 1), and its peers may be blocked where only its process ending
// releases them (a gloo group beside ringdp's, which under PyTorch 2.x lives as long as the
// process): it leaves as a failed rank, waits at the barrier for RINGDP_EXIT_GRACE only, then exits
// without MPI_Finalize, and the launcher ends the job. The barrier is on MPI_COMM_WORLD, so every
// process of the job must have had MPI initialised by ringdp (one program's ranks, as ringdp's
// own collectives over the world need anyway). The departure notices' sends complete after it,
// while every peer is inside MPI.
void finalize_at_exit(int status) {
  if (in_forked_child()) return;  // MPI is the parent's: finalizing it here would be the parent's
  leave_job({.why = "its process is exiting", .failed = status != 0});
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // by the program itself: no MPI call may follow
  const auto now = std::chrono::steady_clock::now();
  const auto never = std::chrono::steady_clock::time_point::max();
  const bool failed = status != 0;
  // A failed rank does not wait long enough to say so.
  const AtExit came =
      failed ? everyone_at_exit(now + g_failed_grace, std::nullopt) : everyone_at_exit(never, notice_after());
  if (came == AtExit::everyone) {
    run_before_finalize();
    MPI_Finalize();
    return;
  }
  // Without MPI_Finalize, which would wait for the late peers or fail as the barrier did; the
  // launcher, seeing a rank end without it, ends the others.
  if (came == AtExit::too_late)
    std::fprintf(stderr,
                 "ringdp: rank %d (process %d): exits with status %d without MPI_Finalize: not every "
                 "rank reached its exit within %lld s (RINGDP_EXIT_GRACE); the launcher ends the job\n",
                 world_rank(), static_cast<int>(getpid()), status,
                 static_cast<long long>(g_failed_grace.count()));
  else
    std::fprintf(stderr,
                 "ringdp: rank %d (process %d): exits with status %d without MPI_Finalize: the last "
                 "barrier before it failed in MPI (a peer's process or connection is gone?)\n",
                 world_rank(), static_cast<int>(getpid()), status);
}
}  // namespace

void read_exit_settings() {
  const settings::Setting& grace = settings::get(settings::Id::exit_grace);
  g_failed_grace = std::chrono::seconds(
      settings::number(grace.id).value_or(settings::parse_number(grace, grace.default_text)));
}

void install_mpi_exit_hook() {
#if defined(__GLIBC__)
  on_exit([](int status, void*) { finalize_at_exit(status); }, nullptr);  // glibc's: with the status
#else
  std::atexit([] { finalize_at_exit(0); });  // no status: a non-zero exit waits as MPI_Finalize does
#endif
}
#endif

}  // namespace ringdp::comm
