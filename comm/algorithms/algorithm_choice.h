// Which algorithm runs a collective: a pure function of the call (kind, bytes, what was asked
// for), where its tensors travel (the route), the world's shape and the agreed options. The
// communicator, `--explain` and the bench all ask here, so the reason printed for a choice is the
// one that made it. No MPI, no communicator: tests/unit/test_algorithm_choice.cpp drives it
// from tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "comm/comm_options.h"
#include "comm/types.h"

namespace ringdp::comm {

/// Where a collective's tensors travel: host memory over MPI (or a world of one), CUDA memory
/// over NCCL, or CUDA memory over MPI (MpiCudaTransport: CUDA-aware or staged).
enum class Route : uint8_t { host, nccl, mpi_cuda };

/// The world as algorithm choice sees it.
struct Topology {
  int size = 1;
  int hosts = 1;
  bool shared_slots =
      false;  ///< every rank on one host, with MPI shared windows (comm/transport/shm/shared_slots.h)
  /// Several hosts, at least one with several ranks: where the hierarchical all-reduce helps.
  bool spans_hosts() const { return hosts > 1 && hosts < size; }
};

/// Why `auto` chose what it chose (or that it was asked for by name).
enum class Reason : uint8_t {
  asked,  ///< named by the caller
  only_one,  ///< the collective has one algorithm of ringdp's own
  hierarchical,  ///< above RINGDP_RD_MAX_BYTES on hosts that share ranks
  shared_memory,  ///< every rank on one host, up to RINGDP_SHM_MAX_BYTES
  shared_buffers,  ///< tensors in shared allocations: each rank reduces its chunk out of all of them
  small,  ///< up to RINGDP_RD_MAX_BYTES: recursive doubling
  medium,  ///< 4+ ranks, up to RINGDP_RABENSEIFNER_MAX_BYTES: Rabenseifner
  large,  ///< otherwise: the ring
  tree_small,  ///< broadcast below RINGDP_CHAIN_MIN_BYTES: binomial tree
  chain_large,  ///< broadcast from RINGDP_CHAIN_MIN_BYTES: pipelined chain
  pairwise,  ///< all_to_all's one algorithm of ringdp's own
};

struct Choice {
  Algorithm algorithm;
  Reason reason;
};

/// What `kind` may run on `route` in this world (without `auto`, which is always allowed).
AlgorithmSet available(CollectiveKind kind, Route route, const Topology& topology);

/// The algorithm for this call; an Error naming what is available when `requested` is not.
/// `shared_buffers`: the tensors lie in the communicator's shared allocations
/// (Communicator::allocate_shared), which `auto` reduces directly out of each other at any size.
Choice choose_algorithm(CollectiveKind kind, size_t bytes, Algorithm requested, Route route,
                        const Topology& topology, const CommOptions& options, bool shared_buffers = false);

/// The choice in words, for a learner: "44 B <= 32 KiB (RINGDP_RD_MAX_BYTES; latency-bound, log2 N
/// steps): recursive_doubling". Built from the Choice, so it cannot restate another rule.
std::string explain(const Choice& choice, size_t bytes, const Topology& topology, const CommOptions& options);

/// "64 KiB", "3 MiB", "44 B".
std::string bytes_text(size_t bytes);

}  // namespace ringdp::comm
