// The CUDA entry points of a build without CUDA: each one says so. Only cuda_device_count()
// answers normally (0), so code can ask before it tries.
#include "kernels/adam.h"
#include "kernels/device_memory.h"
#include "kernels/elementwise.h"
#include "kernels/linear.h"
#include "kernels/mse.h"
#include "kernels/reduce_into.h"
#include "kernels/relu.h"
#include "kernels/sgd.h"

namespace ringdp::kernels {
namespace {
[[noreturn]] void no_cuda(const char* what) {
  RINGDP_FAIL(
      what,
      ": ringdp was built without CUDA (configure with -Dcuda=enabled on a machine with the CUDA toolkit)");
}
}  // namespace

bool built_with_cuda() { return false; }
int cuda_device_count() { return 0; }
void* cuda_malloc(size_t, int) { no_cuda("cuda_malloc"); }
void cuda_free(void*, int) { no_cuda("cuda_free"); }
void* cuda_malloc_host(size_t) { no_cuda("cuda_malloc_host"); }
void cuda_free_host(void*) { no_cuda("cuda_free_host"); }
void cuda_memcpy(void*, const void*, size_t, CopyKind) { no_cuda("cuda_memcpy"); }
void cuda_memcpy_on(void*, const void*, size_t, CopyKind, void*) { no_cuda("cuda_memcpy_on"); }
void cuda_host_wait(void*, void*) { no_cuda("cuda_host_wait"); }
void cuda_device_synchronize() { no_cuda("cuda_device_synchronize"); }

void linear_forward_cuda(const void*, const void*, const void*, void*, int64_t, int64_t, int64_t, DType,
                         Stream) {
  no_cuda("linear_forward");
}
void linear_backward_cuda(const void*, const void*, const void*, void*, void*, void*, int64_t, int64_t,
                          int64_t, DType, Stream) {
  no_cuda("linear_backward");
}
void mse_forward_cuda(const void*, const void*, void*, int64_t, DType, Reduction, Stream) {
  no_cuda("mse_forward");
}
void mse_backward_cuda(const void*, const void*, const void*, void*, int64_t, DType, Reduction, Stream) {
  no_cuda("mse_backward");
}
void relu_forward_cuda(const void*, void*, int64_t, DType, Stream) { no_cuda("relu_forward"); }
void relu_backward_cuda(const void*, const void*, void*, int64_t, DType, Stream) { no_cuda("relu_backward"); }
void sgd_step_cuda(void*, const void*, void*, int64_t, DType, const SgdStep&, Stream) { no_cuda("sgd_step"); }
void adam_step_cuda(void*, const void*, void*, void*, int64_t, DType, const AdamStep&, Stream) {
  no_cuda("adam_step");
}
void fill_cuda(void*, int64_t, DType, double, Stream) { no_cuda("fill"); }
void xor_byte_cuda(void*, unsigned char, Stream) { no_cuda("xor_byte"); }
void cast_cuda(const void*, DType, void*, DType, int64_t, Stream) { no_cuda("cast"); }
void scale_cuda(void*, int64_t, DType, double, Stream) { no_cuda("scale"); }
void add_cuda(const void*, const void*, void*, int64_t, DType, double, Stream) { no_cuda("add"); }
void reduce_into_cuda(void*, const void*, int64_t, DType, ReduceOp, Stream) { no_cuda("reduce_into"); }

}  // namespace ringdp::kernels
