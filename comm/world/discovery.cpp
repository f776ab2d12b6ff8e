// Implements comm/world/discovery.h (the contract is documented there).
#include "comm/world/discovery.h"

#include <algorithm>
#include <cstdio>
#include <thread>
#include <vector>

#include "comm/algorithms/fingerprint.h"
#include "comm/bootstrap/mpi_runtime.h"
#include "comm/transport/idle_backoff.h"
#include "comm/transport/mpi/mpi_transport.h"
#include "comm/transport/ucx/ucx_transport.h"
#include "comm/world/departures.h"
#include "comm/world/mpi_departures.h"
#include "config.h"
#include "core/debug_level.h"
#include "core/error.h"
#include "core/settings.h"

namespace ringdp::comm {

#if RINGDP_HAVE_MPI
namespace {

struct Hosts {
  MPI_Comm node = MPI_COMM_NULL;  ///< the ranks MPI sees sharing this one's memory
  MPI_Comm host = MPI_COMM_NULL, cross = MPI_COMM_NULL;
  int local_rank = 0, local_size = 1, hosts = 1;
  bool uniform = true;
};

// Hosts for the hierarchical all-reduce: the nodes, or with RINGDP_RANKS_PER_HOST=k every k
// consecutive ranks (to try the algorithm on one machine; GPUs still follow the real node).
Hosts find_hosts(MPI_Comm world, int rank) {
  Hosts h;
  RINGDP_MPI_CHECK(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &h.node));
  RINGDP_MPI_CHECK(MPI_Comm_rank(h.node, &h.local_rank));
  RINGDP_MPI_CHECK(MPI_Comm_size(h.node, &h.local_size));
  const uint64_t per_host = settings::number(settings::Id::ranks_per_host).value_or(0);
  if (per_host > 0)
    RINGDP_MPI_CHECK(
        MPI_Comm_split(world, static_cast<int>(static_cast<uint64_t>(rank) / per_host), rank, &h.host));
  else
    RINGDP_MPI_CHECK(MPI_Comm_dup(h.node, &h.host));
  int host_rank = 0, host_size = 1;
  RINGDP_MPI_CHECK(MPI_Comm_rank(h.host, &host_rank));
  RINGDP_MPI_CHECK(MPI_Comm_size(h.host, &host_size));
  RINGDP_MPI_CHECK(MPI_Comm_split(world, host_rank, rank, &h.cross));
  int sizes[2] = {-host_size, host_size};
  h.hosts = host_rank == 0 ? 1 : 0;
  RINGDP_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &h.hosts, 1, MPI_INT, MPI_SUM, world));
  RINGDP_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT, MPI_MAX, world));
  h.uniform = -sizes[0] == sizes[1];
  return h;
}

// Every rank takes the minimum over ranks of each agreed field (comm/comm_options.h).
void agree(CommOptions& options, MPI_Comm world) {
  const auto fields = agreed_fields(options);
  uint64_t agreed[kAgreedFields];
  for (size_t i = 0; i < kAgreedFields; ++i) agreed[i] = *fields[i];
  RINGDP_MPI_CHECK(
      MPI_Allreduce(MPI_IN_PLACE, agreed, static_cast<int>(kAgreedFields), MPI_UINT64_T, MPI_MIN, world));
  for (size_t i = 0; i < kAgreedFields; ++i) *fields[i] = static_cast<size_t>(agreed[i]);
}

// Open MPI yields inside its own progress when told (mpi_yield_when_idle, which the scripts set),
// and a second yield of ours made small all-reduces on 4 ranks over 2 cores 2-4x slower; MPICH's
// ch4 device has no such setting, so there ringdp yields (RINGDP_YIELD overrides either way;
// docs/lab/benchmarks.md, "MPICH").
bool ringdp_yields(bool oversubscribed) {
#if defined(MPICH_VERSION)
  const bool mpi_yields = false;
#else
  const bool mpi_yields = true;
#endif
  return settings::flag(settings::Id::yield).value_or(oversubscribed && !mpi_yields);
}

// The world over `base` (MPI_COMM_WORLD, or a group's communicator): hosts, agreed options,
// shared memory (`shared_memory`), the transports. Collective over `base`.
DiscoveredWorld mpi_world_over(CommOptions& options, MPI_Comm base, bool shared_memory) {
  (void)spin_time();  // read now: a bad RINGDP_SPIN_US fails here, not inside some rank's wait
  auto transport = std::make_unique<MpiTransport>(base);
  Hosts hosts = find_hosts(transport->comm(), transport->rank());
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const bool oversubscribed = static_cast<unsigned>(hosts.local_size) > cores;
  if (options.segment_bytes == 0) options.segment_bytes = default_segment_bytes(oversubscribed);
  agree(options, transport->comm());
  // Every rank on one host (each sees all in its node): the shared-memory slots. Collective over
  // `node`, and every rank takes the same branch.
  // RINGDP_SHM_MAX_BYTES=0 ("never") takes no /dev/shm at all.
  if (shared_memory && options.shared_memory_max_bytes > 0 && hosts.local_size == transport->size())
    transport->enable_shared_slots(hosts.node, options.shared_memory_slot_bytes, oversubscribed);
  const bool yield = ringdp_yields(oversubscribed);
  auto host_transport = std::make_unique<MpiTransport>(hosts.host, false);
  auto cross_transport = std::make_unique<MpiTransport>(hosts.cross, false);
  for (MpiTransport* t : {transport.get(), host_transport.get(), cross_transport.get()})
    t->set_yield_when_idle(yield);
  for (MPI_Comm* c : {&hosts.node, &hosts.host, &hosts.cross}) RINGDP_MPI_CHECK(MPI_Comm_free(c));
  auto departures = std::make_unique<MpiDepartures>(transport->user_comm(), transport->tag_upper_bound());
  for (MpiTransport* t : {transport.get(), host_transport.get(), cross_transport.get()})
    t->set_watch(departures.get());
  std::unique_ptr<Transport> messages = std::move(transport);
  const char* carrier = "mpi";
  if (options.host_transport == HostTransport::ucx) {
#if RINGDP_HAVE_UCX
    messages = std::make_unique<UcxTransport>(std::move(messages), options.timeout);
    messages->set_watch(departures.get());
    carrier = "ucx";
#else
    RINGDP_FAIL(
        "the UCX transport (RINGDP_TRANSPORT=ucx or --backend ucx), but this ringdp was built without "
        "UCX: install libucx-dev and reconfigure (meson setup --reconfigure BUILD), or use MPI");
#endif
  }
  return DiscoveredWorld{.transport = std::move(messages),
                         .host_transport = std::move(host_transport),
                         .cross_transport = std::move(cross_transport),
                         .local_rank = hosts.local_rank,
                         .local_size = hosts.local_size,
                         .hosts = hosts.hosts,
                         .uniform_hosts = hosts.uniform,
                         .bootstrap = "mpi",
                         .messages = carrier,
                         .departures = std::move(departures)};
}

// MPI_COMM_WORLD ordered by the ranks the processes ask for (CommOptions::rank): a split keyed on
// them, after every rank has seen every rank's request (so all refuse alike what is not a
// permutation). MPI_COMM_WORLD itself when they are MPI's ranks.
MPI_Comm ordered_world(int asked) {
  int rank = 0, size = 1;
  RINGDP_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  RINGDP_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  std::vector<int> asked_by(static_cast<size_t>(size));  // asked_by[MPI rank]
  RINGDP_MPI_CHECK(MPI_Allgather(&asked, 1, MPI_INT, asked_by.data(), 1, MPI_INT, MPI_COMM_WORLD));
  std::vector<int> holder(static_cast<size_t>(size), -1);  // holder[asked rank] = MPI rank
  for (int r = 0; r < size; ++r) {
    const int wanted = asked_by[static_cast<size_t>(r)];
    RINGDP_CHECK(wanted >= 0 && wanted < size, "MPI rank ", r, " asked for rank ", wanted, ", outside 0..",
                 size - 1, " (", size,
                 " ranks); give each process its own rank, e.g. from OMPI_COMM_WORLD_RANK, ",
                 "PMI_RANK or SLURM_PROCID");
    int& first = holder[static_cast<size_t>(wanted)];
    RINGDP_CHECK(
        first < 0, "MPI ranks ", first, " and ", r, " both asked for rank ", wanted,
        "; the ranks must be a permutation of 0..", size - 1,
        ": give each process its own rank, e.g. from OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID");
    first = r;
  }
  bool identity = true;
  for (int r = 0; r < size; ++r) identity = identity && asked_by[static_cast<size_t>(r)] == r;
  if (identity) return MPI_COMM_WORLD;
  MPI_Comm ordered = MPI_COMM_NULL;
  RINGDP_MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, 0, asked, &ordered));
  return ordered;
}

// mpi_world_over on a communicator made for it, which it then frees (the transports hold
// duplicates of it), whether it succeeds or not.
DiscoveredWorld mpi_world_over_made(CommOptions& options, MPI_Comm made, bool shared_memory) {
  try {
    DiscoveredWorld world = mpi_world_over(options, made, shared_memory);
    RINGDP_MPI_CHECK(MPI_Comm_free(&made));
    return world;
  } catch (...) {
    MPI_Comm_free(&made);
    throw;
  }
}

DiscoveredWorld mpi_world(CommOptions& options) {
  mpi_ensure_initialized(options.mpi_thread);
  MPI_Comm base = options.rank < 0 ? MPI_COMM_WORLD : ordered_world(options.rank);
  if (base == MPI_COMM_WORLD) return mpi_world_over(options, base, true);
  return mpi_world_over_made(options, base, true);
}

// The members must have named the same ranks in the same order: compared by the list's hash once
// a communicator over them exists.
void check_same_members(MPI_Comm group, std::span<const int> ranks) {
  const std::vector<int64_t> listed(ranks.begin(), ranks.end());
  const uint64_t hash = counts_hash(listed);  // DETAIL's hash of the uneven collectives' counts
  uint64_t extremes[2] = {hash, ~hash};
  RINGDP_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, extremes, 2, MPI_UINT64_T, MPI_MAX, group));
  RINGDP_CHECK(extremes[0] == hash && ~extremes[1] == hash,
               "group: the members passed different rank lists (this rank passed ", ranks.size(),
               " ranks starting with ", ranks[0],
               "); every member must pass the same ranks in the same order");
}

// The members' communicator, its ranks in the order of `ranks`.
MPI_Comm create_group_comm(MPI_Comm parent, std::span<const int> ranks, int parent_rank) {
  // Created over the sorted list, which members agree on even when their orders differ (MPI
  // cannot build one communicator from groups that differ in order); the order is then checked
  // and applied by a split.
  std::vector<int> sorted(ranks.begin(), ranks.end());
  std::sort(sorted.begin(), sorted.end());
  MPI_Group all = MPI_GROUP_NULL, members = MPI_GROUP_NULL;
  RINGDP_MPI_CHECK(MPI_Comm_group(parent, &all));
  RINGDP_MPI_CHECK(MPI_Group_incl(all, static_cast<int>(sorted.size()), sorted.data(), &members));
  // Collective over the members only (ranks outside call nothing, as torch's new_group calls the
  // backend on members only). Creations from one parent on one rank run one at a time, through
  // the parent's call queue, so a fixed tag per member set does (another parent's are in another
  // context); its space is not point-to-point's (MPI 3.1, 6.4.2). Members
  // that pass different sets are erroneous in MPI and hang there: only the order is checked.
  const int tag = static_cast<int>((sorted.size() * 131 + static_cast<size_t>(sorted[0])) % 32768);
  MPI_Comm by_rank = MPI_COMM_NULL, ordered = MPI_COMM_NULL;
  RINGDP_MPI_CHECK(MPI_Comm_create_group(parent, members, tag, &by_rank));
  RINGDP_MPI_CHECK(MPI_Group_free(&members));
  RINGDP_MPI_CHECK(MPI_Group_free(&all));
  try {
    check_same_members(by_rank, ranks);
  } catch (...) {
    MPI_Comm_free(&by_rank);
    throw;
  }
  const auto position = std::find(ranks.begin(), ranks.end(), parent_rank) - ranks.begin();
  RINGDP_MPI_CHECK(MPI_Comm_split(by_rank, 0, static_cast<int>(position), &ordered));
  RINGDP_MPI_CHECK(MPI_Comm_free(&by_rank));
  return ordered;
}

DiscoveredWorld mpi_group(CommOptions& options, const MpiTransport& parent, std::span<const int> ranks) {
  MPI_Comm comm = create_group_comm(parent.comm(), ranks, parent.rank());
  // No shared-memory slots: freeing their window is collective, and torch frees a group when each
  // rank's Python drops it (del, garbage collection), while its peers may be inside another
  // collective: the first rank there would wait for them, and they for it.
  return mpi_world_over_made(options, comm, false);
}

}  // namespace
#endif

DiscoveredWorld bootstrap_group(CommOptions& options, Transport& parent, std::span<const int> ranks) {
  if (DiscoveredWorld world = bootstrap_store_group(options, parent, ranks); world.transport) return world;
#if RINGDP_HAVE_MPI
  // Over UCX, MPI still makes the group (UCX's native transport is the MPI one it was made over).
  if (auto* mpi = dynamic_cast<MpiTransport*>(&parent.native_transport()))
    return mpi_group(options, *mpi, ranks);
#endif
  // A world of one without MPI: its only group is itself (the caller checked the ranks).
  RINGDP_CHECK(parent.size() == 1, "group: a parent of ", parent.size(), " ranks without MPI");
  DiscoveredWorld world;
  world.transport = std::make_unique<LocalTransport>();
  return world;
}

DiscoveredWorld bootstrap_world(CommOptions& options) {
  const bool under_launcher = launched_by_mpi_launcher() && !options.force_local;
#if RINGDP_HAVE_MPI
  if (under_launcher) return mpi_world(options);
#else
  RINGDP_CHECK(!under_launcher || launcher_world_size() == 1,
               "ringdp was built without MPI but was started by mpirun with ", launcher_world_size(),
               " ranks; rebuild with -Dmpi=enabled");
#endif
  if (options.segment_bytes == 0) options.segment_bytes = default_segment_bytes(false);
  DiscoveredWorld world;
  world.transport = std::make_unique<LocalTransport>();
  return world;
}

void release_transports(DiscoveredWorld& world) {
  if (world.departures && world.departures->usable()) world.departures->stop_listening();
  world.cross_transport.reset();
  world.host_transport.reset();
  world.transport.reset();
}

void report_world(const DiscoveredWorld& world) {
  if (debug_level() == DebugLevel::off) return;
  std::fprintf(stderr, "ringdp: %d ranks on %d host%s; bootstrap %s, host tensors' messages over %s\n",
               world.transport->size(), world.hosts, world.hosts == 1 ? "" : "s", world.bootstrap,
               world.messages);
}

}  // namespace ringdp::comm
