// Device memory and device queries. With CUDA built in these call the CUDA runtime; without
// it every call but cuda_device_count() throws "ringdp was built without CUDA".
#pragma once

#include <cstddef>

namespace ringdp::kernels {

/// Visible CUDA devices; 0 when built without CUDA or when the driver finds none.
int cuda_device_count();
bool built_with_cuda();

void* cuda_malloc(size_t bytes, int device);
void cuda_free(void* ptr, int device);
void* cuda_malloc_host(size_t bytes);  ///< pinned host memory for staging
void cuda_free_host(void* ptr);

/// Blocks until every stream of the current device is idle (benchmarks time with it).
void cuda_device_synchronize();

enum class CopyKind { host_to_device, device_to_host, device_to_device };
void cuda_memcpy(void* dst, const void* src, size_t bytes, CopyKind kind);
/// A copy queued on `stream` (a cudaStream_t). From pageable host memory the bytes are taken
/// before it returns; into pageable host memory it returns once they have landed (CUDA's rules).
void cuda_memcpy_on(void* dst, const void* src, size_t bytes, CopyKind kind, void* stream);
/// Blocks the host until `event` (a cudaEvent_t) has fired or, without one, until `stream` has
/// run what it holds: what a host copy of data written there waits for.
void cuda_host_wait(void* stream, void* event);

}  // namespace ringdp::kernels
