// Implements comm/world/routes.h (the contract is documented there).
#include "comm/world/routes.h"

#include <cstdio>

#include "comm/transport/cuda/mpi_cuda_transport.h"
#include "comm/transport/cuda/nccl_transport.h"
#include "config.h"
#include "core/debug_level.h"
#include "core/error.h"
#include "core/settings.h"
#include "kernels/device_memory.h"

namespace ringdp::comm {

Routes::Routes(Transport& world, const CommOptions& options, int local_rank)
    : world_(world), options_(options), local_rank_(local_rank) {
  // Decided here only: the CUDA transports run on this GPU, and the trainer, the bench and the
  // tests ask for it, so no rank computes on one GPU and communicates on another.
  const int gpus = kernels::cuda_device_count();
  device_ = gpus > 0 ? Device::cuda(local_rank_ % gpus) : Device::cpu();
}

void Routes::check_device(const Tensor& t) const {
  RINGDP_CHECK(t.device() == device_, "rank ", world_.rank(), " (local rank ", local_rank_,
               ") got a tensor on ", t.device().str(), " but communicates on ", device_.str(),
               ": put its tensors on Communicator::device() (each rank uses GPU local_rank % visible GPUs)");
}

Route Routes::route_for(Device device) const {
  if (options_.backend == Backend::nccl) return Route::nccl;
  if (!device.is_cuda()) return Route::host;
  return RINGDP_HAVE_NCCL && options_.backend == Backend::automatic ? Route::nccl : Route::mpi_cuda;
}

Route Routes::route_for(const Tensor& t) const {
  if (options_.backend == Backend::nccl) {
    RINGDP_CHECK(RINGDP_HAVE_NCCL,
                 "--backend nccl: ringdp was built without NCCL (configure with -Dnccl=enabled "
                 "on a machine with CUDA and NCCL)");
    RINGDP_CHECK(!t.defined() || t.device().is_cuda(), "--backend nccl needs CUDA tensors; got a tensor on ",
                 t.device().str(), " (use --backend mpi or auto for host tensors)");
    if (t.defined()) check_device(t);
    return t.defined() ? Route::nccl : Route::host;
  }
  if (!t.defined() || !t.device().is_cuda()) return Route::host;
  check_device(t);
  return route_for(t.device());
}

Transport& Routes::device_transport(Route route) {
  switch (route) {
    case Route::host: return world_;
    case Route::nccl:
#if RINGDP_HAVE_NCCL
      if (!nccl_transport_) {
        Transport& host = world_;
        nccl_transport_ = std::make_unique<NcclTransport>(
            world_.rank(), world_.size(), device_.index,
            [&host](void* id, size_t bytes) { host.bootstrap_broadcast(id, bytes); }, options_.timeout);
      }
      return *nccl_transport_;
#else
      RINGDP_FAIL("the NCCL transport is not built in");
#endif
    case Route::mpi_cuda:
#if RINGDP_HAVE_CUDA
      if (!mpi_cuda_transport_) {
        const auto path = world_.reads_device_memory() ? MpiCudaTransport::Path::cuda_aware
                                                       : MpiCudaTransport::Path::staged;
        mpi_cuda_transport_ = std::make_unique<MpiCudaTransport>(world_, device_.index, path);
        if (world_.rank() == 0 && debug_level() != DebugLevel::off)
          std::fprintf(stderr, "ringdp: CUDA tensors over MPI: %s\n", path_name(path));
      }
      return *mpi_cuda_transport_;
#else
      RINGDP_FAIL("CUDA tensors need a build with CUDA");
#endif
  }
  RINGDP_FAIL("unknown route");
}

}  // namespace ringdp::comm
