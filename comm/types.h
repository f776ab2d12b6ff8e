// Names shared across comm/: which collective, which algorithm, which MPI thread level.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace ringdp::comm {

enum class CollectiveKind : uint8_t {
  all_reduce,
  reduce,
  broadcast,
  all_gather,
  reduce_scatter,
  barrier,
  send,
  recv,
  // Added after the others so that the values above (and their tags) stay as they were.
  gather,
  scatter,
  all_to_all  ///< even and uneven (all_to_all with counts) alike
};

/// The MPI thread level ringdp asks for (CommOptions::mpi_thread).
enum class MpiThread : uint8_t { serialized, single, multiple };

/// How a collective is computed: the names users type. `native` is the transport library's own
/// collective (MPI_Allreduce, ...), kept as the baseline ours are measured against. Which
/// collective has which, and each one's code in a message tag, is comm/algorithm_table.h.
enum class Algorithm : uint8_t {
  automatic,
  ring,
  recursive_doubling,
  tree,
  native,
  hierarchical,
  rabenseifner,
  shared_memory,
  pairwise,  ///< all_to_all: each rank exchanges with rank + k and rank - k in step k
  chain,  ///< broadcast: a pipelined chain from the root
  dissemination  ///< barrier: rank r signals r + 2^k in round k
};

/// Which transport carries CUDA tensors (host tensors always travel over MPI): NCCL when built
/// in (`automatic`), MPI (CUDA-aware or staged through host memory), or NCCL.
enum class Backend : uint8_t { automatic, mpi, nccl };

/// What carries the algorithms' messages of host tensors under an MPI launcher: MPI, or UCX's tag
/// matching with MPI only starting the job (docs/ucx.md). A job without an MPI launcher always
/// uses UCX.
enum class HostTransport : uint8_t { mpi, ucx };

const char* kind_name(CollectiveKind kind);
/// "auto", "mpi", "nccl".
const char* backend_name(Backend backend);
/// Parses auto, mpi, nccl; anything else is an Error naming it.
Backend parse_backend(std::string_view name);
/// "mpi", "ucx".
const char* host_transport_name(HostTransport transport);
/// Parses mpi, ucx; anything else is an Error naming it.
HostTransport parse_host_transport(std::string_view name);
const char* algorithm_name(Algorithm algorithm);
/// Parses auto, ring, recursive_doubling (or rd), rabenseifner, shared_memory (or shm), tree,
/// native, hierarchical, pairwise, chain, dissemination.
Algorithm parse_algorithm(std::string_view name);

/// A set of algorithms, one bit per Algorithm value.
class AlgorithmSet {
 public:
  constexpr AlgorithmSet() = default;
  constexpr AlgorithmSet(std::initializer_list<Algorithm> algorithms) {
    for (Algorithm a : algorithms) bits_ |= bit(a);
  }
  constexpr bool contains(Algorithm a) const { return (bits_ & bit(a)) != 0; }
  constexpr void add(Algorithm a) { bits_ |= bit(a); }
  constexpr void remove(Algorithm a) { bits_ &= ~bit(a); }
  /// "ring, recursive_doubling, native": Algorithm order, native last.
  std::string names() const;

 private:
  static constexpr uint32_t bit(Algorithm a) { return 1u << static_cast<unsigned>(a); }
  uint32_t bits_ = 0;
};

}  // namespace ringdp::comm
