// The SGEMM behind Linear on CUDA: C[M,N] = op(A)[M,K] · op(B)[K,N] (+ bias[N]), row-major,
// where op transposes when TRANS_A / TRANS_B is set. One kernel serves the three layouts Linear
// needs: forward y = x·Wᵀ (NT), dx = dy·W (NN), dW = dyᵀ·x (TN).
//
// Tiling (float32): a block of 256 threads computes a 128×128 tile of C, marching over K in
// slices of 8. Each slice of op(A) (128×8) and op(B) (8×128) is staged in shared memory, k-major,
// so the inner loop reads a column of As and a row of Bs. Each thread owns an 8×8 sub-tile of C
// in registers (register blocking): per k it loads 8 + 8 values from shared memory and does 64
// FMAs, which is what makes the kernel compute-bound rather than shared-memory-bound.
// Loads: every thread fetches 4 consecutive elements of each slice along the operand's
// contiguous dimension, as one 16-byte float4 load when the 4 are in bounds and the address is
// 16-byte aligned, else element by element with bounds checks (zeros outside), so any M, N, K
// works. The epilogue adds the bias and stores with bounds checks.
// float64 uses gemm_simple_kernel: one thread per output, K in a loop.
#pragma once

#include <cuda_runtime.h>

namespace ringdp::kernels::gemm {

constexpr int kBM = 128, kBN = 128, kBK = 8, kTM = 8, kTN = 8, kThreads = 256;

// Element (row, col) of a row-major matrix with leading dimension ld, or 0 outside rows × cols.
__device__ __forceinline__ float load_or_zero(const float* p, int row, int col, int rows, int cols, int ld) {
  return (row < rows && col < cols) ? p[static_cast<long long>(row) * ld + col] : 0.0f;
}

// Four consecutive elements (row, col..col+3) of a row-major matrix, vectorised when possible.
__device__ __forceinline__ void load4(const float* p, int row, int col, int rows, int cols, int ld,
                                      float out[4]) {
  const long long index = static_cast<long long>(row) * ld + col;
  if (row < rows && col + 3 < cols && (reinterpret_cast<unsigned long long>(p + index) & 15u) == 0) {
    const float4 v = *reinterpret_cast<const float4*>(p + index);
    out[0] = v.x;
    out[1] = v.y;
    out[2] = v.z;
    out[3] = v.w;
  } else {
    for (int i = 0; i < 4; ++i) out[i] = load_or_zero(p, row, col + i, rows, cols, ld);
  }
}

template <bool TRANS_A, bool TRANS_B>
__global__ void __launch_bounds__(kThreads)
    sgemm_kernel(const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias,
                 float* __restrict__ C, int M, int N, int K) {
  __shared__ float As[kBK][kBM];
  __shared__ float Bs[kBK][kBN];
  const int t = threadIdx.x;
  const int block_m = blockIdx.x * kBM, block_n = blockIdx.y * kBN;  // rows on x: see launch_gemm
  const int ty = t / (kBN / kTN), tx = t % (kBN / kTN);
  // Stored shapes: A is [M,K] (or [K,M] when transposed), B is [K,N] (or [N,K]).
  const int lda = TRANS_A ? M : K, ldb = TRANS_B ? K : N;
  float acc[kTM][kTN] = {};
  float a_frag[kTM], b_frag[kTN], chunk[4];

  for (int k0 = 0; k0 < K; k0 += kBK) {
    if (!TRANS_A) {  // contiguous along k: thread loads A[m][k..k+3]
      const int m = t / 2, k = (t % 2) * 4;
      load4(A, block_m + m, k0 + k, M, K, lda, chunk);
      for (int i = 0; i < 4; ++i) As[k + i][m] = chunk[i];
    } else {  // contiguous along m: thread loads Aᵀ[k][m..m+3]
      const int k = t / 32, m = (t % 32) * 4;
      load4(A, k0 + k, block_m + m, K, M, lda, chunk);
      for (int i = 0; i < 4; ++i) As[k][m + i] = chunk[i];
    }
    if (!TRANS_B) {  // contiguous along n
      const int k = t / 32, n = (t % 32) * 4;
      load4(B, k0 + k, block_n + n, K, N, ldb, chunk);
      for (int i = 0; i < 4; ++i) Bs[k][n + i] = chunk[i];
    } else {  // contiguous along k: thread loads Bᵀ[n][k..k+3]
      const int n = t / 2, k = (t % 2) * 4;
      load4(B, block_n + n, k0 + k, N, K, ldb, chunk);
      for (int i = 0; i < 4; ++i) Bs[k + i][n] = chunk[i];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
#pragma unroll
      for (int i = 0; i < kTM; ++i) a_frag[i] = As[k][ty * kTM + i];
#pragma unroll
      for (int j = 0; j < kTN; ++j) b_frag[j] = Bs[k][tx * kTN + j];
#pragma unroll
      for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] = fmaf(a_frag[i], b_frag[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int m = block_m + ty * kTM + i;
    if (m >= M) continue;
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const int n = block_n + tx * kTN + j;
      if (n < N) C[static_cast<long long>(m) * N + n] = acc[i][j] + (bias ? bias[n] : 0.0f);
    }
  }
}

template <typename T, bool TRANS_A, bool TRANS_B>
__global__ void gemm_simple_kernel(const T* __restrict__ A, const T* __restrict__ B,
                                   const T* __restrict__ bias, T* __restrict__ C, int M, int N, int K) {
  const int n = blockIdx.y * blockDim.x + threadIdx.x;  // threads along n (coalesced), blocks: rows on x
  const int m = blockIdx.x * blockDim.y + threadIdx.y;
  if (m >= M || n >= N) return;
  T acc = bias ? bias[n] : T(0);
  for (int k = 0; k < K; ++k) {
    const T a = TRANS_A ? A[static_cast<long long>(k) * M + m] : A[static_cast<long long>(m) * K + k];
    const T b = TRANS_B ? B[static_cast<long long>(n) * K + k] : B[static_cast<long long>(k) * N + n];
    acc += a * b;
  }
  C[static_cast<long long>(m) * N + n] = acc;
}

}  // namespace ringdp::kernels::gemm
