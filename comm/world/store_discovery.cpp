// Implements bootstrap_store_world and the groups of a store's world (comm/world/discovery.h): a job
// that no MPI launcher started (torchrun, mp.spawn, a framework's launcher) finds its peers
// through the key-value store its launcher hands over, and UCX carries every message. MPI is never
// initialised in such a job. Tested by the torch suite under mp.spawn (tests/torch/spawn.py), the
// torch2 suite under torchrun, and tests/torch/test_launch.sh (a rank that never arrives).
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "comm/bootstrap/store_out_of_band.h"
#include "comm/transport/idle_backoff.h"
#include "comm/transport/shm/shm_segment.h"
#include "comm/transport/ucx/ucx_transport.h"
#include "comm/world/discovery.h"
#include "comm/world/process_identity.h"
#include "comm/world/ucx_departures.h"
#include "config.h"
#include "core/error.h"
#include "core/settings.h"

namespace ringdp::comm {

namespace {

[[maybe_unused]] [[noreturn]] void refuse_without_ucx() {
  RINGDP_FAIL(
      "this process was not started by an MPI launcher, and ringdp was built without UCX, which "
      "carries the messages of jobs started by torchrun, mp.spawn or other launchers: launch with "
      "mpirun, mpiexec or srun, or install libucx-dev and rebuild ringdp (docs/ucx.md)");
}

#if RINGDP_HAVE_UCX
// What each rank tells every other before any transport exists: the world size it was given, its
// host, and the options every rank must agree on (the same fields as the MPI world's agreement).
struct Introduction {
  int32_t size = 0;
  uint32_t cores = 1;
  uint64_t fields[kAgreedFields] = {};  // agreed_fields(), in its order
  char host[64] = {};
  ProcessIdentity process;  // for the departures (a peer on this machine is seen to end) and slots
};

// The host as the hierarchical all-reduce sees it: the machine's name, or with
// RINGDP_RANKS_PER_HOST=k every k consecutive ranks (as under MPI).
std::string host_of(int rank) {
  const uint64_t per_host = settings::number(settings::Id::ranks_per_host).value_or(0);
  if (per_host > 0) return "ranks/" + std::to_string(static_cast<uint64_t>(rank) / per_host);
  char name[64] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

std::vector<Introduction> introduce(OutOfBand& oob, CommOptions& options, int asked_size) {
  Introduction mine;
  mine.size = asked_size;
  mine.cores = std::max(1u, std::thread::hardware_concurrency());
  mine.process = this_process();
  const auto fields = agreed_fields(options);
  for (size_t i = 0; i < kAgreedFields; ++i) mine.fields[i] = *fields[i];
  const std::string host = host_of(oob.rank());
  std::strncpy(mine.host, host.c_str(), sizeof mine.host - 1);
  const auto blobs = oob.all_gather(std::span(reinterpret_cast<const char*>(&mine), sizeof mine));
  std::vector<Introduction> all(blobs.size());
  for (size_t r = 0; r < blobs.size(); ++r) {
    RINGDP_CHECK(blobs[r].size() == sizeof(Introduction), "store bootstrap: rank ", r, " sent ",
                 blobs[r].size(), " bytes of introduction, expected ", sizeof(Introduction),
                 " (another ringdp version on that rank?)");
    std::memcpy(&all[r], blobs[r].data(), sizeof(Introduction));
    RINGDP_CHECK(all[r].size == asked_size, "rank ", r, " was started with world_size ", all[r].size,
                 " but rank ", oob.rank(), " with ", asked_size,
                 ": every rank must be given the same world_size");
  }
  return all;
}

// Where the ranks run, from their introductions: hosts in order of first appearance, each host's
// ranks ascending.
struct Layout {
  std::vector<int> host_of_rank;
  std::vector<std::vector<int>> members;
  int my_host = 0, local_rank = 0;
  /// Whether rank r's host holds more ranks than r's cores.
  bool crowded(const std::vector<Introduction>& all, int r) const {
    return members[static_cast<size_t>(host_of_rank[static_cast<size_t>(r)])].size() >
           all[static_cast<size_t>(r)].cores;
  }
};

Layout lay_out(const std::vector<Introduction>& all, int rank) {
  Layout layout;
  std::vector<std::string> hosts;
  for (const Introduction& i : all) {
    auto at = std::find(hosts.begin(), hosts.end(), std::string(i.host));
    if (at == hosts.end()) at = hosts.insert(hosts.end(), i.host);
    layout.host_of_rank.push_back(static_cast<int>(at - hosts.begin()));
  }
  layout.members.resize(hosts.size());
  for (size_t r = 0; r < all.size(); ++r)
    layout.members[static_cast<size_t>(layout.host_of_rank[r])].push_back(static_cast<int>(r));
  layout.my_host = layout.host_of_rank[static_cast<size_t>(rank)];
  const auto& local = layout.members[static_cast<size_t>(layout.my_host)];
  layout.local_rank = static_cast<int>(std::find(local.begin(), local.end(), rank) - local.begin());
  return layout;
}

// Each rank's unset segment is resolved for its own host, then every rank takes the minimum of
// each agreed field over ranks (comm/comm_options.h), as under MPI.
void agree(CommOptions& options, const std::vector<Introduction>& all, const Layout& layout) {
  const auto fields = agreed_fields(options);
  for (size_t i = 0; i < kAgreedFields; ++i) {
    uint64_t least = UINT64_MAX;
    for (size_t r = 0; r < all.size(); ++r) {
      uint64_t v = all[r].fields[i];
      if (i == 0 && v == 0) v = default_segment_bytes(layout.crowded(all, static_cast<int>(r)));  // unset
      least = std::min(least, v);
    }
    *fields[i] = static_cast<size_t>(least);
  }
}

// Every rank on this machine (RINGDP_RANKS_PER_HOST's hosts may still share one, as under MPI):
// the shared-memory slots, in a segment of their own. Every rank decides alike, from what all sent.
void add_shared_slots(UcxTransport& transport, const std::vector<Introduction>& all,
                      const CommOptions& options, bool yield) {
  // An unknown identity (no /proc of its own) says nothing: no slots then.
  const bool one_machine = std::all_of(
      all.begin(), all.end(), [&](const Introduction& i) { return share_memory(all[0].process, i.process); });
  if (one_machine && all.size() > 1 && options.shared_memory_max_bytes > 0)
    transport.set_shared_slots(
        segment_slots(transport.out_of_band(), options.shared_memory_slot_bytes, yield));
}
#endif

// The world over `oob`'s ranks: hosts, agreed options, a UcxTransport over all, and over the ranks
// of this host and the ranks of this local index when the ranks span hosts; the shared-memory
// slots (`shared_memory`: the world's, not a group's) and the departures.
DiscoveredWorld store_world_over(CommOptions& options, std::unique_ptr<OutOfBand> oob, bool shared_memory) {
#if RINGDP_HAVE_UCX
  (void)spin_time();  // read now: a bad RINGDP_SPIN_US fails here on every rank, not in some wait
  const std::vector<Introduction> all = introduce(*oob, options, oob->size());
  const Layout layout = lay_out(all, oob->rank());
  const auto& local = layout.members[static_cast<size_t>(layout.my_host)];
  DiscoveredWorld world;
  world.local_rank = layout.local_rank;
  world.local_size = static_cast<int>(local.size());
  world.hosts = static_cast<int>(layout.members.size());
  world.uniform_hosts = std::all_of(layout.members.begin(), layout.members.end(),
                                    [&](const auto& m) { return m.size() == local.size(); });
  agree(options, all, layout);
  const bool oversubscribed = layout.crowded(all, oob->rank());
  // No MPI progress engine yields for these ranks: ringdp does when they outnumber the cores.
  const bool yield = settings::flag(settings::Id::yield).value_or(oversubscribed);
  if (world.hosts > 1) {
    std::vector<int> cross;  // the ranks holding this rank's local index on every host
    for (const auto& m : layout.members)
      if (static_cast<size_t>(world.local_rank) < m.size())
        cross.push_back(m[static_cast<size_t>(world.local_rank)]);
    auto host_oob = oob->subset("host" + std::to_string(layout.my_host), local, options.timeout);
    auto cross_oob = oob->subset("cross" + std::to_string(world.local_rank), cross, options.timeout);
    world.host_transport = std::make_unique<UcxTransport>(std::move(host_oob), options.timeout, yield);
    world.cross_transport = std::make_unique<UcxTransport>(std::move(cross_oob), options.timeout, yield);
  }
  // UCX reports the peers known to be apart (another machine): no shared memory is lost there.
  std::vector<bool> reported;
  for (const Introduction& i : all)
    reported.push_back(apart(all[static_cast<size_t>(oob->rank())].process, i.process));
  auto transport =
      std::make_unique<UcxTransport>(std::move(oob), options.timeout, yield, std::move(reported));
  if (shared_memory) add_shared_slots(*transport, all, options, oversubscribed);
  std::vector<ProcessIdentity> processes;
  for (const Introduction& i : all) processes.push_back(i.process);
  world.departures = std::make_unique<UcxDepartures>(*transport, processes);
  world.transport = std::move(transport);
  for (Transport* t : {world.transport.get(), world.host_transport.get(), world.cross_transport.get()})
    if (t) t->set_watch(world.departures.get());
  world.bootstrap = "store";
  world.messages = "ucx";
  return world;
#else
  (void)options;
  (void)oob;
  (void)shared_memory;
  refuse_without_ucx();
#endif
}

// Why `missing` never met rank `rank` of `size`, when its world_size key says another size; "" when
// it does not. Ranks given different sizes count their arrivals apart and never meet.
std::string size_mismatch(KeyValueStore& store, int missing, int rank, int size) {
  const std::string key = "ringdp/size/" + std::to_string(missing);
  if (!store.has(key)) return {};  // never arrived: the wait's own error says so
  const std::vector<char> theirs = store.get(key, std::chrono::seconds(10));
  const std::string text(theirs.begin(), theirs.end());
  if (text == std::to_string(size)) return {};
  // "last joined": the key may be an earlier init's, on a store that outlived it.
  return detail::concat("rank ", missing, " last joined this store with world_size ", text, " but rank ",
                        rank, " with ", size, ": every rank must be given the same world_size");
}

}  // namespace

DiscoveredWorld bootstrap_store_world(CommOptions& options, std::shared_ptr<KeyValueStore> store, int rank,
                                      int size) {
#if !RINGDP_HAVE_UCX
  refuse_without_ucx();  // before it counts as an arrival its peers would wait for
#endif
  RINGDP_CHECK(size >= 1 && rank >= 0 && rank < size, "store bootstrap: rank ", rank, " of ", size,
               " (expected 0 <= rank < world_size)");
  const std::string mine = std::to_string(size);
  store->set("ringdp/size/" + std::to_string(rank), std::vector<char>(mine.begin(), mine.end()));
  // Scoped by generation: a store that outlives a job's first init_process_group (torchrun's agent
  // store, a store= passed in) would otherwise hand a second init the first one's addresses. A
  // generation is `size` arrivals of that size (no rank arrives twice before all arrived once), so
  // an init with another world_size on the same store starts its own count.
  const int64_t arrival = store->add("ringdp/arrivals/" + mine, 1);
  const std::string scope = "ringdp/" + mine + "#" + std::to_string((arrival - 1) / size + 1);
  // Two processes with one rank in a generation: said at once, before either waits (joined, they
  // would exchange each other's addresses).
  const int64_t claims = store->add(scope + "/claims/" + std::to_string(rank), 1);
  // A refused process gives its arrival back, so that the generations after it stay aligned.
  if (claims != 1) store->add("ringdp/arrivals/" + mine, -1);
  RINGDP_CHECK(
      claims == 1, "rank ", rank, " of ", size, ": another process already joined the store bootstrap (",
      scope, ") as rank ", rank,
      ": two jobs share this store (the same MASTER_ADDR:MASTER_PORT, or the same init_method file), two "
      "processes were given the same rank, or an earlier init on this store did not finish on every "
      "rank");
  // Only an absence is explained so: a peer's failure (UCX that cannot start) is its own error.
  auto absence = [rank, size](KeyValueStore& s, int missing) {
    return size_mismatch(s, missing, rank, size);
  };
  return store_world_over(
      options, std::make_unique<StoreOutOfBand>(store, scope, rank, size, options.timeout, absence), true);
}

DiscoveredWorld bootstrap_store_group(CommOptions& options, Transport& parent, std::span<const int> ranks) {
#if RINGDP_HAVE_UCX
  if (auto* ucx = dynamic_cast<UcxTransport*>(&parent)) {
    std::string name = "group";
    for (const int r : ranks) name.append("-").append(std::to_string(r));
    // The group's timeout (new_group's) bounds its own waits in the store too.
    if (auto members = ucx->out_of_band().subset(name, ranks, options.timeout))
      return store_world_over(options, std::move(members), false);  // groups have no slots, as under MPI
  }
#else
  (void)options;
  (void)parent;
  (void)ranks;
#endif
  return {};
}

}  // namespace ringdp::comm
