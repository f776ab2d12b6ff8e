// Implements comm/algorithms/algorithm_choice.h (the contract is documented there). The thresholds were
// measured, not guessed: docs/collectives.md and docs/benchmarks.md say where each comes from.
#include "comm/algorithms/algorithm_choice.h"

#include <limits>

#include "comm/algorithm_table.h"

#include "core/error.h"

namespace ringdp::comm {

AlgorithmSet available(CollectiveKind kind, Route route, const Topology& topology) {
  AlgorithmSet set;
  // Shared memory needs every rank on one host; a world of one has nothing to share.
  const bool one_host = topology.size == 1 || topology.shared_slots;
  for (const AlgorithmRow& row : algorithm_table(kind))
    if ((!row.host_only || route == Route::host) && (!row.one_host || one_host)) set.add(row.algorithm);
  return set;
}

namespace {

// The names three algorithms went by before they had their own (their old spellings): refused,
// naming the new one, since a silent alias would keep the old name alive in scripts and docs.
struct Renamed {
  CollectiveKind kind;
  Algorithm old_name, new_name;
  const char* what;
};
constexpr Renamed kRenamed[] = {
    {CollectiveKind::all_to_all, Algorithm::ring, Algorithm::pairwise, "the pairwise exchange"},
    {CollectiveKind::broadcast, Algorithm::ring, Algorithm::chain, "the pipelined chain"},
    {CollectiveKind::barrier, Algorithm::recursive_doubling, Algorithm::dissemination,
     "the dissemination barrier"},
};

[[noreturn]] void fail_unavailable(CollectiveKind kind, Algorithm requested, Route route,
                                   const Topology& topology, AlgorithmSet set) {
  for (const Renamed& r : kRenamed)
    if (r.kind == kind && r.old_name == requested)
      RINGDP_FAIL(kind_name(kind), " has no ", algorithm_name(requested), " algorithm: ", r.what,
                  ", which this name used to select, is called ", algorithm_name(r.new_name),
                  "; available: ", set.names(), ", auto");
  // The collective has it, but not here: say which need of its row this world or route lacks.
  for (const AlgorithmRow& row : algorithm_table(kind)) {
    if (row.algorithm != requested) continue;
    if (row.host_only && route != Route::host)
      RINGDP_FAIL(kind_name(kind), ": the ", algorithm_name(requested),
                  " algorithm runs on host tensors; got CUDA tensors (use ", set.names(), " or auto)");
    if (row.one_host)
      RINGDP_FAIL(kind_name(kind), ": the ", algorithm_name(requested),
                  " algorithm needs every rank on one host and MPI shared windows in the unified memory "
                  "model; these ",
                  topology.size, " ranks run on ", topology.hosts, " hosts");
  }
  RINGDP_FAIL(kind_name(kind), " has no ", algorithm_name(requested), " algorithm; available: ", set.names(),
              ", auto");
}

Choice choose_all_reduce(size_t bytes, Route route, const Topology& topology, const CommOptions& options,
                         bool shared_buffers) {
  // Rabenseifner's, shared memory's and the hierarchical picks were measured on host tensors
  // only; CUDA tensors keep recursive doubling and the ring.
  const bool host = route == Route::host;
  // The direct all-reduce moves what one memcpy of the buffer moves, at every size: nothing of
  // the others' can do less (docs/lab/benchmarks.md, "The memory-bandwidth bound").
  if (host && shared_buffers && topology.shared_slots)
    return {Algorithm::shared_memory, Reason::shared_buffers};
  // Ranks on several hosts, some sharing one: the hierarchical scheme for all but small
  // messages (recursive doubling's log2 N latency wins those).
  if (host && topology.spans_hosts() && bytes > options.recursive_doubling_max_bytes)
    return {Algorithm::hierarchical, Reason::hierarchical};
  if (host && topology.shared_slots && bytes <= options.shared_memory_max_bytes)
    return {Algorithm::shared_memory, Reason::shared_memory};
  if (bytes <= options.recursive_doubling_max_bytes) return {Algorithm::recursive_doubling, Reason::small};
  if (host && topology.size >= 4 && bytes <= options.rabenseifner_max_bytes)
    return {Algorithm::rabenseifner, Reason::medium};
  return {Algorithm::ring, Reason::large};
}

}  // namespace

Choice choose_algorithm(CollectiveKind kind, size_t bytes, Algorithm requested, Route route,
                        const Topology& topology, const CommOptions& options, bool shared_buffers) {
  // Every collective has the library's own: no set to consult.
  if (requested == Algorithm::native) return {requested, Reason::asked};
  if (requested != Algorithm::automatic) {
    const AlgorithmSet set = available(kind, route, topology);
    if (!set.contains(requested)) fail_unavailable(kind, requested, route, topology, set);
    return {requested, Reason::asked};
  }
  switch (kind) {
    case CollectiveKind::all_reduce:
      return choose_all_reduce(bytes, route, topology, options, shared_buffers);
    case CollectiveKind::reduce: return {Algorithm::tree, Reason::only_one};
    case CollectiveKind::broadcast:
      return bytes < options.chain_broadcast_min_bytes ? Choice{Algorithm::tree, Reason::tree_small}
                                                       : Choice{Algorithm::chain, Reason::chain_large};
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter: return {Algorithm::ring, Reason::only_one};
    case CollectiveKind::barrier: return {Algorithm::dissemination, Reason::only_one};
    case CollectiveKind::send:
    case CollectiveKind::recv: return {Algorithm::native, Reason::only_one};
    case CollectiveKind::gather:
    case CollectiveKind::scatter: return {Algorithm::tree, Reason::only_one};
    case CollectiveKind::all_to_all: return {Algorithm::pairwise, Reason::pairwise};
  }
  return {Algorithm::native, Reason::asked};
}

std::string bytes_text(size_t bytes) {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) == 0)
    return detail::concat(bytes / (1024 * 1024), " MiB");
  if (bytes >= 1024 && bytes % 1024 == 0) return detail::concat(bytes / 1024, " KiB");
  return detail::concat(bytes, " B");
}

namespace {

// Rounds are a slot long but the last; each is scattered when it is long enough, so the first
// round says whether any is and the last whether all are.
std::string explain_shared_memory(size_t bytes, const CommOptions& options) {
  const bool capped = options.shared_memory_max_bytes != std::numeric_limits<size_t>::max();
  const size_t slot = options.shared_memory_slot_bytes, min = options.shared_memory_scatter_min_bytes;
  const size_t first = std::min(bytes, slot), last = bytes > slot ? (bytes - 1) % slot + 1 : bytes;
  return detail::concat(bytes_text(bytes), capped ? " <= " + bytes_text(options.shared_memory_max_bytes) : "",
                        " with every rank on one host (RINGDP_SHM_MAX_BYTES; ",
                        first < min ? "each rank reads the others' parts from shared memory"
                        : last >= min
                            ? "each rank reduces 1/N of every round out of shared memory and copies "
                              "the others' results, RINGDP_SHM_SCATTER_MIN_BYTES"
                            : detail::concat("each rank reduces 1/N of every round out of shared memory "
                                             "and copies the others' results but reads the last, ",
                                             bytes_text(last), ", whole; RINGDP_SHM_SCATTER_MIN_BYTES"),
                        "): shared_memory");
}

}  // namespace

std::string explain(const Choice& choice, size_t bytes, const Topology& topology,
                    const CommOptions& options) {
  const std::string b = bytes_text(bytes);
  const std::string rd = bytes_text(options.recursive_doubling_max_bytes);
  const std::string rabenseifner = bytes_text(options.rabenseifner_max_bytes);
  const std::string chain = bytes_text(options.chain_broadcast_min_bytes);
  switch (choice.reason) {
    case Reason::asked: return detail::concat("asked for: ", algorithm_name(choice.algorithm));
    case Reason::only_one:
      return detail::concat("the only algorithm of ringdp's own: ", algorithm_name(choice.algorithm));
    case Reason::hierarchical:
      return detail::concat(b, " > ", rd, " on ", topology.hosts, " hosts sharing ranks: hierarchical");
    case Reason::shared_memory: return explain_shared_memory(bytes, options);
    case Reason::shared_buffers:
      return detail::concat(b,
                            " in shared allocations (Communicator::allocate_shared): each rank reduces 1/N "
                            "straight out of every rank's buffer into every rank's buffer: shared_memory");
    case Reason::small:
      return detail::concat(b, " <= ", rd,
                            " (RINGDP_RD_MAX_BYTES; latency-bound, log2 N steps): recursive_doubling");
    case Reason::medium:
      return detail::concat(rd, " < ", b, " <= ", rabenseifner, " on ", topology.size,
                            " >= 4 ranks (RINGDP_RABENSEIFNER_MAX_BYTES): rabenseifner");
    case Reason::large:
      return detail::concat(b, " > ", rd,
                            topology.size >= 4
                                ? detail::concat(" and > ", rabenseifner, " (RINGDP_RABENSEIFNER_MAX_BYTES)")
                                : detail::concat(" on ", topology.size, " < 4 ranks"),
                            " (bandwidth-bound, 2(N-1) steps of 1/N each): ring");
    case Reason::pairwise:
      return "the only algorithm of ringdp's own: pairwise exchange (N-1 steps, one peer each): pairwise";
    case Reason::tree_small:
      return detail::concat(b, " < ", chain, " (RINGDP_CHAIN_MIN_BYTES): binomial tree");
    case Reason::chain_large:
      return detail::concat(b, " >= ", chain, " (RINGDP_CHAIN_MIN_BYTES): pipelined chain");
  }
  return {};
}

}  // namespace ringdp::comm
