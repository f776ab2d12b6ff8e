// Implements comm/types.h (the contract is documented there). Tested by tests/mpi/test_comm_errors.cpp.
#include "comm/types.h"

#include "core/error.h"

namespace ringdp::comm {

const char* kind_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::all_reduce: return "all_reduce";
    case CollectiveKind::reduce: return "reduce";
    case CollectiveKind::broadcast: return "broadcast";
    case CollectiveKind::all_gather: return "all_gather";
    case CollectiveKind::reduce_scatter: return "reduce_scatter";
    case CollectiveKind::barrier: return "barrier";
    case CollectiveKind::send: return "send";
    case CollectiveKind::recv: return "recv";
    case CollectiveKind::gather: return "gather";
    case CollectiveKind::scatter: return "scatter";
    case CollectiveKind::all_to_all: return "all_to_all";
  }
  return "unknown";
}

const char* algorithm_name(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::automatic: return "auto";
    case Algorithm::ring: return "ring";
    case Algorithm::recursive_doubling: return "recursive_doubling";
    case Algorithm::tree: return "tree";
    case Algorithm::native: return "native";
    case Algorithm::hierarchical: return "hierarchical";
    case Algorithm::rabenseifner: return "rabenseifner";
    case Algorithm::shared_memory: return "shared_memory";
    case Algorithm::pairwise: return "pairwise";
    case Algorithm::chain: return "chain";
    case Algorithm::dissemination: return "dissemination";
  }
  return "unknown";
}

const char* backend_name(Backend backend) {
  switch (backend) {
    case Backend::automatic: return "auto";
    case Backend::mpi: return "mpi";
    case Backend::nccl: return "nccl";
  }
  return "unknown";
}

Backend parse_backend(std::string_view name) {
  if (name == "auto") return Backend::automatic;
  if (name == "mpi") return Backend::mpi;
  if (name == "nccl") return Backend::nccl;
  RINGDP_FAIL("unknown backend '", name, "'; expected auto, mpi or nccl");
}

const char* host_transport_name(HostTransport transport) {
  return transport == HostTransport::ucx ? "ucx" : "mpi";
}

HostTransport parse_host_transport(std::string_view name) {
  if (name == "mpi") return HostTransport::mpi;
  if (name == "ucx") return HostTransport::ucx;
  RINGDP_FAIL("unknown transport '", name, "'; expected mpi or ucx");
}

Algorithm parse_algorithm(std::string_view name) {
  if (name == "auto") return Algorithm::automatic;
  if (name == "ring") return Algorithm::ring;
  if (name == "recursive_doubling" || name == "rd") return Algorithm::recursive_doubling;
  if (name == "tree") return Algorithm::tree;
  if (name == "native") return Algorithm::native;
  if (name == "hierarchical") return Algorithm::hierarchical;
  if (name == "rabenseifner") return Algorithm::rabenseifner;
  if (name == "shared_memory" || name == "shm") return Algorithm::shared_memory;
  if (name == "pairwise") return Algorithm::pairwise;
  if (name == "chain") return Algorithm::chain;
  if (name == "dissemination") return Algorithm::dissemination;
  RINGDP_FAIL("unknown algorithm '", name,
              "'; expected auto, ring, recursive_doubling, rabenseifner, shared_memory, tree, native, "
              "hierarchical, pairwise, chain or dissemination");
}

std::string AlgorithmSet::names() const {
  std::string out;
  // The library's own last: it is the baseline, the others are ringdp's.
  const auto native = static_cast<unsigned>(Algorithm::native);
  for (unsigned a = 0; a < 32; ++a)
    if (a != native && (bits_ >> a & 1u))
      out += std::string(out.empty() ? "" : ", ") + algorithm_name(static_cast<Algorithm>(a));
  if (bits_ >> native & 1u) out += std::string(out.empty() ? "" : ", ") + "native";
  return out;
}

}  // namespace ringdp::comm
