// Routes: which transport carries a collective's tensors. Host tensors travel over the world's
// transport (MPI, or a world of one); CUDA tensors over NCCL or over MPI (CUDA-aware or staged
// through host memory), whose transports are created by the first collective that needs them.
// Also where this rank's device is decided, and a tensor on another device is refused.
// Tested by tests/mpi/test_device_placement.cpp and tests/mpi/test_mpi_device_transports.cpp.
#pragma once

#include <memory>
#include <string>

#include "comm/algorithms/algorithm_choice.h"
#include "comm/comm_options.h"
#include "comm/transport/transport.h"
#include "core/device.h"
#include "tensor/tensor.h"

namespace ringdp::comm {

class Routes {
 public:
  Routes(Transport& world, const CommOptions& options, int local_rank);

  /// Where this rank's tensors belong: cuda:(local_rank % visible GPUs) when a GPU is visible, else cpu.
  Device device() const { return device_; }
  /// The route of a collective on `t` (checks the backend against the device, and the device).
  Route route_for(const Tensor& t) const;
  /// The route tensors on `device` would take (no device check).
  Route route_for(Device device) const;
  /// The transport of a route; those of CUDA tensors are created by their first collective.
  Transport& transport(Route route) { return route == Route::host ? world_ : device_transport(route); }
  Transport& host() { return world_; }
  /// Destroys the CUDA transports now (the communicator's teardown, under the execution lock).
  void release() {
    nccl_transport_.reset();
    mpi_cuda_transport_.reset();
  }
  /// Lets the CUDA transports go without destroying them (a forked child: they are the parent's).
  void abandon() {
    (void)nccl_transport_.release();
    (void)mpi_cuda_transport_.release();
  }

 private:
  Transport& device_transport(Route route);
  /// Throws unless the CUDA tensor t is on device().
  void check_device(const Tensor& t) const;

  Transport& world_;
  const CommOptions& options_;
  int local_rank_ = 0;
  Device device_ = Device::cpu();
  std::unique_ptr<Transport> nccl_transport_;  // created by the first CUDA collective on NCCL
  std::unique_ptr<Transport> mpi_cuda_transport_;  // created by the first CUDA collective on MPI
};

}  // namespace ringdp::comm
