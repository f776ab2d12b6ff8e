// Implements comm/execution/host_staging.h (the contract is documented there).
#include "comm/execution/host_staging.h"

#include "kernels/device_memory.h"

namespace ringdp::comm {

Tensor host_copy(const Tensor& t, const CollectiveOptions& requested) {
  if (requested.stream || requested.ready) kernels::cuda_host_wait(requested.stream, requested.ready);
  return t.to(Device::cpu());
}

void write_back(Tensor& target, const Tensor& host, void* stream, bool host_waits) {
  if (target.is_same(host)) return;
  if (stream && target.device().is_cuda() && host.device().is_cpu() && target.dtype() == host.dtype() &&
      target.numel() == host.numel()) {
    kernels::cuda_memcpy_on(target.data_ptr(), host.data_ptr(), host.nbytes(),
                            kernels::CopyKind::host_to_device, stream);
  } else {
    // Without a caller's stream the legacy default stream is the caller's: a copy from pageable
    // memory may land after it returns, but in that stream's order, which is all the call
    // promises (CollectiveOptions::stream).
    target.copy_from(host);
  }
  if (host_waits && target.device().is_cuda()) kernels::cuda_host_wait(stream, nullptr);
}

}  // namespace ringdp::comm
