// Implements comm/execution/host_staging.h (the contract is documented there).
#include "comm/execution/host_staging.h"

#include "kernels/device_memory.h"

namespace ringdp::comm {

Tensor host_copy(const Tensor& t, const CollectiveOptions& requested) {
  if (requested.stream || requested.ready) kernels::cuda_host_wait(requested.stream, requested.ready);
  return t.to(Device::cpu());
}

void write_back(Tensor& target, const Tensor& host, void* stream) {
  if (target.is_same(host)) return;
  if (stream && target.device().is_cuda() && host.device().is_cpu() && target.dtype() == host.dtype() &&
      target.numel() == host.numel()) {
    kernels::cuda_memcpy_on(target.data_ptr(), host.data_ptr(), host.nbytes(),
                            kernels::CopyKind::host_to_device, stream);
    return;
  }
  target.copy_from(host);
  // A copy from pageable memory may land after it returns, on the legacy stream, which a reader on
  // a non-blocking stream (ringdp's, torch's side streams) does not wait for: wait here.
  if (target.device().is_cuda() && host.device().is_cpu()) kernels::cuda_host_wait(nullptr, nullptr);
}

}  // namespace ringdp::comm
