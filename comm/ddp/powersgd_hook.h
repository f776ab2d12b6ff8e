// PowerSGD (Vogels, Karimireddy, Jaggi, NeurIPS 2019), as PyTorch 1.13's powerSGD_hook applies it
// to a DDP bucket: each parameter's gradient seen as a matrix M (shape[0] rows, the rest folded into
// columns) is replaced by a rank-r approximation P·Qᵀ built with one step of power iteration and
// two all-reduces of the small factors, instead of all-reducing M.
//
// Per bucket, once PowerSGD has started (iteration >= start_powerSGD_iter; before that the hook is
// a plain average):
//   1. error feedback: M += the error this rank kept from the bucket's last compression; keep a copy
//      of the result (the input);
//   2. a matrix is compressed when (rows + cols)·r·min_compression_rate < rows·cols; the others
//      (every vector: biases) are all-reduced uncompressed, concatenated, and averaged;
//   3. Q (cols x r): the last step's (warm start), orthogonalised again, or on the first compressed
//      step (or always without warm start) drawn from N(0, 1) with a seed every rank draws alike;
//   4. P = M·Q; all-reduce (sum) every P of the bucket as one buffer; orthogonalise each P
//      (Gram-Schmidt: no division by the world size needed, the columns are normalised);
//   5. Q = Mᵀ·P; all-reduce (sum) every Q as one buffer, divide by the world size;
//   6. M ← P·Qᵀ, written into the bucket: every rank holds the same approximation of the average
//      gradient, P·Pᵀ·mean(M);
//   7. error = the input of step 1 − the bucket's new content (uncompressed parts included, as in
//      PyTorch), kept for the next step.
// The invariant error feedback keeps (tests/mpi/test_comm_hooks.cpp): for every bucket and step t,
// Σ_{s≤t} applied_s + mean over ranks of error_t = Σ_{s≤t} mean over ranks of gradient_s, nothing of
// the true gradients is lost, only delayed.
//
// Steps 1, 2 (the uncompressed all-reduce) and 4 run in the hook; 5 to 7 when DDP waits on the
// bucket's Work (comm/ddp/grad_bucket.h says why that keeps the collectives in order).
//
// Where this differs from PyTorch (docs/ddp.md): the random Q come from ringdp's philox generator,
// seeded from random_seed and the number of draws so far, so they are the same on every rank but
// are not PyTorch's numbers (PyTorch seeds torch.manual_seed from numpy's RandomState); Gram-Schmidt
// is used at every rank r (PyTorch switches to Householder QR above rank 2 in float32, which spans
// the same columns up to their signs, and P·Qᵀ does not depend on those signs); a zero column stays
// zero instead of becoming NaN; start_powerSGD_iter may be below 2 (PyTorch refuses it because its
// DDP rebuilds the buckets after the first iteration; ringdp's never change); no batching of
// same-shaped matrices; the matrix products are plain host loops, so CUDA buckets are refused.
// Tested by tests/mpi/test_comm_hooks.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include "comm/communicator.h"
#include "comm/ddp/grad_bucket.h"

namespace ringdp::ddp {

struct PowerSgdOptions {
  int matrix_approximation_rank = 1;
  int64_t start_powerSGD_iter = 1000;  ///< PyTorch's default
  double min_compression_rate = 2;
  bool use_error_feedback = true;
  bool warm_start = true;
  double orthogonalization_epsilon = 0;
  uint64_t random_seed = 0;
};

/// The hook's state: options, the step count, and per bucket the error and the P and Q buffers.
struct PowerSgdState {
  PowerSgdState(std::shared_ptr<comm::Communicator> comm, PowerSgdOptions options);

  std::shared_ptr<comm::Communicator> comm;
  PowerSgdOptions options;
  int64_t iteration = 0;  ///< steps completed (counted at each step's last bucket)
  uint64_t draws = 0;  ///< random Q initialisations so far (part of their seed)
  std::map<int, Tensor> errors;  ///< bucket index → this rank's error, shaped as the bucket
  std::map<int, Tensor> p_memory, q_memory;  ///< bucket index → every P (Q) of the bucket, flat
  int64_t elements_before = 0, elements_after = 0;  ///< compression statistics, summed

  /// elements before / after compression so far (PyTorch's compression_stats()[0]).
  double compression_rate() const {
    return elements_after > 0 ? static_cast<double>(elements_before) / elements_after : 0.0;
  }
};

/// register_comm_hook(state, powersgd_hook). Buckets must be float32 or float64.
comm::Work powersgd_hook(PowerSgdState& state, GradBucket& bucket);

}  // namespace ringdp::ddp
