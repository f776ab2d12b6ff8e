// CUDA runtime wrappers used by tensor/ (which never includes cuda_runtime.h itself).
#include "kernels/device_memory.h"

#include "kernels/cuda/cuda_check.h"

namespace ringdp::kernels {

void cuda_failure(cudaError_t status, const char* call, const char* file, int line) {
  detail::throw_check_failure(file, line, nullptr,
                              detail::concat("CUDA call `", call, "` failed: ", cudaGetErrorName(status),
                                             ": ", cudaGetErrorString(status)));
}

bool built_with_cuda() { return true; }

int cuda_device_count() {
  int count = 0;
  // No driver or no device is a normal situation here (CI), not an error.
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

void* cuda_malloc(size_t bytes, int device) {
  const int count = cuda_device_count();
  RINGDP_CHECK(device >= 0 && device < count, "CUDA device cuda:", device, " does not exist (", count,
               " visible)");
  RINGDP_CUDA_CHECK(cudaSetDevice(device));
  void* ptr = nullptr;
  RINGDP_CUDA_CHECK(cudaMalloc(&ptr, bytes == 0 ? 1 : bytes));
  return ptr;
}

void cuda_free(void* ptr, int device) {
  if (!ptr) return;
  RINGDP_CUDA_CHECK(cudaSetDevice(device));
  RINGDP_CUDA_CHECK(cudaFree(ptr));
}

void* cuda_malloc_host(size_t bytes) {
  void* ptr = nullptr;
  RINGDP_CUDA_CHECK(cudaMallocHost(&ptr, bytes == 0 ? 1 : bytes));
  return ptr;
}

void cuda_free_host(void* ptr) {
  if (ptr) RINGDP_CUDA_CHECK(cudaFreeHost(ptr));
}

namespace {
cudaMemcpyKind cuda_kind(CopyKind kind) {
  return kind == CopyKind::host_to_device   ? cudaMemcpyHostToDevice
         : kind == CopyKind::device_to_host ? cudaMemcpyDeviceToHost
                                            : cudaMemcpyDeviceToDevice;
}
}  // namespace

void cuda_memcpy(void* dst, const void* src, size_t bytes, CopyKind kind) {
  if (bytes == 0) return;
  RINGDP_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cuda_kind(kind)));
}

void cuda_memcpy_on(void* dst, const void* src, size_t bytes, CopyKind kind, void* stream) {
  if (bytes == 0) return;
  RINGDP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cuda_kind(kind), static_cast<cudaStream_t>(stream)));
}

void cuda_host_wait(void* stream, void* event) {
  if (event)
    RINGDP_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event)));
  else
    RINGDP_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}

void cuda_device_synchronize() { RINGDP_CUDA_CHECK(cudaDeviceSynchronize()); }

}  // namespace ringdp::kernels
