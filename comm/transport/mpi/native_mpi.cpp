// Implements comm/transport/mpi/native_mpi.h (the contract is documented there). Tested by
// tests/mpi/test_collectives.cpp (algorithm native).
#include "comm/transport/mpi/native_mpi.h"

#if RINGDP_HAVE_MPI
#include <climits>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <vector>

#include "comm/transport/mpi/mpi_transport.h"

namespace ringdp::comm::native {
namespace {

// bfloat16, float16 and bool travel as raw 16- and 8-bit words and reduce through ringdp's CPU
// kernel in a user-defined op: MPI has no 16-bit float type, and MPI_LOR on bytes would accept
// bool's sum but not give PyTorch's meaning to all of bool's ops (kernels/reduce_into.h).
MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::float32: return MPI_FLOAT;
    case DType::float64: return MPI_DOUBLE;
    case DType::int32: return MPI_INT32_T;
    case DType::int64: return MPI_INT64_T;
    case DType::bfloat16: return MPI_UINT16_T;
    case DType::float16: return MPI_UINT16_T;
    case DType::int8: return MPI_INT8_T;
    case DType::uint8: return MPI_UINT8_T;
    case DType::boolean: return MPI_UINT8_T;
  }
  return MPI_DATATYPE_NULL;
}

template <DType kDType, ReduceOp kOp>
void kernel_op(void* in, void* inout, int* len, MPI_Datatype*) {
  kernels::reduce_into_cpu(inout, in, *len, kDType, kOp);
}

// One MPI_Op per (dtype, op), created on first use, indexed by ReduceOp's value; avg reduces as
// sum (it is divided afterwards).
template <DType kDType>
MPI_Op user_op(ReduceOp op) {
  // Communicators' worker threads may ask at once for the first time.
  static std::mutex mutex;
  const std::lock_guard lock(mutex);
  static MPI_Op ops[8] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL,
                          MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
  static MPI_User_function* const fns[8] = {
      kernel_op<kDType, ReduceOp::sum>, kernel_op<kDType, ReduceOp::prod>, kernel_op<kDType, ReduceOp::min>,
      kernel_op<kDType, ReduceOp::max>, kernel_op<kDType, ReduceOp::sum>,  kernel_op<kDType, ReduceOp::band>,
      kernel_op<kDType, ReduceOp::bor>, kernel_op<kDType, ReduceOp::bxor>};
  static_assert(static_cast<int>(ReduceOp::bxor) == 7 && static_cast<int>(ReduceOp::avg) == 4,
                "the table above follows ReduceOp's order");
  const auto index = static_cast<size_t>(op);
  if (ops[index] == MPI_OP_NULL) RINGDP_MPI_CHECK(MPI_Op_create(fns[index], /*commute=*/1, &ops[index]));
  return ops[index];
}

MPI_Op builtin_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return MPI_SUM;
    case ReduceOp::prod: return MPI_PROD;
    case ReduceOp::min: return MPI_MIN;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::band: return MPI_BAND;
    case ReduceOp::bor: return MPI_BOR;
    case ReduceOp::bxor: return MPI_BXOR;
  }
  return MPI_OP_NULL;
}

// 8-bit integers always reduce through ringdp's kernel: two MPIs here get them wrong (both found
// by the mpi suite, Debian 12): Open MPI 4.1.4's op/avx component saturates 8- and 16-bit sums
// from 16 elements up (255 + 1 gives 255 for MPI_UINT8_T), and MPICH 4.0.2 compares MPI_UINT8_T
// as signed in MPI_MIN and MPI_MAX (min(248, 5) gives 248). A probe of the library at run time
// would decide per process, and ranks must pass the same op to a collective: the choice is fixed.
MPI_Op mpi_op(ReduceOp op, DType dtype) {
  switch (dtype) {
    case DType::bfloat16: return user_op<DType::bfloat16>(op);
    case DType::float16: return user_op<DType::float16>(op);
    case DType::boolean: return user_op<DType::boolean>(op);
    case DType::float32:
    case DType::float64: return builtin_op(op);
    case DType::int8: return user_op<DType::int8>(op);
    case DType::uint8: return user_op<DType::uint8>(op);
    case DType::int32:
    case DType::int64: return builtin_op(op);
  }
  return MPI_OP_NULL;
}

int mpi_count(int64_t count) {
  RINGDP_CHECK(count <= INT_MAX, "native MPI collectives take at most ", INT_MAX, " elements, got ", count);
  return static_cast<int>(count);
}

// The v-forms' int arrays: a count or a displacement past INT_MAX is named, never truncated.
std::vector<int> mpi_counts(std::span<const int64_t> values, const char* what) {
  std::vector<int> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    RINGDP_CHECK(values[i] <= INT_MAX, "native MPI collectives take counts and displacements up to ", INT_MAX,
                 " elements; ", what, "[", i, "] is ", values[i]);
    out[i] = static_cast<int>(values[i]);
  }
  return out;
}

// Whether `in` already is block `index` of `out` (in place): MPI then takes MPI_IN_PLACE.
bool is_block(const void* in, const void* out, std::span<const int64_t> offsets, int index, DType dtype) {
  return in == static_cast<const char*>(out) + offsets[index] * dtype_size(dtype);
}

void gather(MPI_Comm comm, int rank, const BlockExchange& e) {
  const MPI_Datatype type = mpi_type(e.dtype);
  const bool root = rank == e.root;
  const void* send =
      root && is_block(e.input, e.output, e.recv_offsets, rank, e.dtype) ? MPI_IN_PLACE : e.input;
  const int count = mpi_count(e.send_counts[e.root]);
  if (e.block >= 0) {
    RINGDP_MPI_CHECK(MPI_Gather(send, count, type, e.output, count, type, e.root, comm));
    return;
  }
  std::vector<int> counts, offsets;
  if (root)
    counts = mpi_counts(e.recv_counts, "recv_counts"), offsets = mpi_counts(e.recv_offsets, "offsets");
  RINGDP_MPI_CHECK(
      MPI_Gatherv(send, count, type, e.output, counts.data(), offsets.data(), type, e.root, comm));
}

void scatter(MPI_Comm comm, int rank, const BlockExchange& e) {
  const MPI_Datatype type = mpi_type(e.dtype);
  const bool root = rank == e.root;
  void* recv = root && is_block(e.output, e.input, e.send_offsets, rank, e.dtype) ? MPI_IN_PLACE : e.output;
  const int count = mpi_count(e.recv_counts[e.root]);
  if (e.block >= 0) {
    RINGDP_MPI_CHECK(MPI_Scatter(e.input, count, type, recv, count, type, e.root, comm));
    return;
  }
  std::vector<int> counts, offsets;
  if (root)
    counts = mpi_counts(e.send_counts, "send_counts"), offsets = mpi_counts(e.send_offsets, "offsets");
  RINGDP_MPI_CHECK(
      MPI_Scatterv(e.input, counts.data(), offsets.data(), type, recv, count, type, e.root, comm));
}

}  // namespace

void all_reduce(MPI_Comm comm, const void* input, void* out, int64_t count, DType dtype, ReduceOp op) {
  const void* send = input == out ? MPI_IN_PLACE : input;
  RINGDP_MPI_CHECK(MPI_Allreduce(send, out, mpi_count(count), mpi_type(dtype), mpi_op(op, dtype), comm));
}

void reduce(MPI_Comm comm, const void* input, void* out, int64_t count, DType dtype, ReduceOp op, int root) {
  int rank = 0;
  RINGDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  const void* send = (input == out && rank == root) ? MPI_IN_PLACE : input;
#if defined(MPICH_VERSION)
  // MPICH 4.0.2 (Debian's, ch4:ucx) segfaults in MPI_Reduce with MPI_IN_PLACE at any root but 0
  // from about 600 floats up: it copies from MPI_IN_PLACE's sentinel address. The root reduces
  // out of place from a copy of its input instead (the MPICH run of the mpi suite found it).
  std::vector<std::byte> copy;
  if (send == MPI_IN_PLACE && root != 0) {
    copy.resize(static_cast<size_t>(count) * dtype_size(dtype));
    std::memcpy(copy.data(), out, copy.size());
    send = copy.data();
  }
#endif
  RINGDP_MPI_CHECK(MPI_Reduce(send, out, mpi_count(count), mpi_type(dtype), mpi_op(op, dtype), root, comm));
}

void broadcast(MPI_Comm comm, void* buf, int64_t count, DType dtype, int root) {
  RINGDP_MPI_CHECK(MPI_Bcast(buf, mpi_count(count), mpi_type(dtype), root, comm));
}

void all_gather(MPI_Comm comm, const void* input, void* out, int64_t chunk_count, DType dtype) {
  int rank = 0;
  RINGDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  const char* own = static_cast<const char*>(out) + rank * chunk_count * dtype_size(dtype);
  const void* send = input == own ? MPI_IN_PLACE : input;
  RINGDP_MPI_CHECK(MPI_Allgather(send, mpi_count(chunk_count), mpi_type(dtype), out, mpi_count(chunk_count),
                                 mpi_type(dtype), comm));
}

void reduce_scatter(MPI_Comm comm, const void* input, void* out, int64_t chunk_count, DType dtype,
                    ReduceOp op) {
  RINGDP_MPI_CHECK(
      MPI_Reduce_scatter_block(input, out, mpi_count(chunk_count), mpi_type(dtype), mpi_op(op, dtype), comm));
}

void barrier(MPI_Comm comm) { RINGDP_MPI_CHECK(MPI_Barrier(comm)); }

void exchange(MPI_Comm comm, const BlockExchange& e) {
  int rank = 0;
  RINGDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  const MPI_Datatype type = mpi_type(e.dtype);
  switch (e.pattern) {
    case BlockExchange::Pattern::gather: return gather(comm, rank, e);
    case BlockExchange::Pattern::scatter: return scatter(comm, rank, e);
    case BlockExchange::Pattern::all_to_all:
      if (e.block >= 0) {
        const int count = mpi_count(e.block);
        RINGDP_MPI_CHECK(MPI_Alltoall(e.input, count, type, e.output, count, type, comm));
        return;
      }
      RINGDP_MPI_CHECK(MPI_Alltoallv(e.input, mpi_counts(e.send_counts, "send_counts").data(),
                                     mpi_counts(e.send_offsets, "send offsets").data(), type, e.output,
                                     mpi_counts(e.recv_counts, "recv_counts").data(),
                                     mpi_counts(e.recv_offsets, "recv offsets").data(), type, comm));
      return;
    case BlockExchange::Pattern::all_gather: {
      const void* send = is_block(e.input, e.output, e.recv_offsets, rank, e.dtype) ? MPI_IN_PLACE : e.input;
      RINGDP_MPI_CHECK(MPI_Allgatherv(send, mpi_count(e.send_counts[rank]), type, e.output,
                                      mpi_counts(e.recv_counts, "counts").data(),
                                      mpi_counts(e.recv_offsets, "offsets").data(), type, comm));
      return;
    }
  }
}

}  // namespace ringdp::comm::native
#endif
