// Implements comm/native_mpi.h (the contract is documented there). Tested by tests/mpi/test_collectives.cpp
// (algorithm native).
#include "comm/native_mpi.h"

#if RINGDP_HAVE_MPI
#include <climits>
#include <cstddef>
#include <cstring>
#include <vector>

#include "comm/mpi_transport.h"

namespace ringdp::comm::native {
namespace {

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::float32: return MPI_FLOAT;
    case DType::float64: return MPI_DOUBLE;
    case DType::int32: return MPI_INT32_T;
    case DType::int64: return MPI_INT64_T;
    case DType::bfloat16: return MPI_UINT16_T;
  }
  return MPI_DATATYPE_NULL;
}

template <ReduceOp kOp>
void bf16_op(void* in, void* inout, int* len, MPI_Datatype*) {
  kernels::reduce_into_cpu(inout, in, *len, DType::bfloat16, kOp);
}

MPI_Op bf16_mpi_op(ReduceOp op) {
  static MPI_Op ops[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
  static MPI_User_function* fns[4] = {bf16_op<ReduceOp::sum>, bf16_op<ReduceOp::prod>, bf16_op<ReduceOp::min>,
                                      bf16_op<ReduceOp::max>};
  const int index = op == ReduceOp::avg ? 0 : static_cast<int>(op);
  if (ops[index] == MPI_OP_NULL) RINGDP_MPI_CHECK(MPI_Op_create(fns[index], /*commute=*/1, &ops[index]));
  return ops[index];
}

MPI_Op mpi_op(ReduceOp op, DType dtype) {
  if (dtype == DType::bfloat16) return bf16_mpi_op(op);
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

int mpi_count(int64_t count) {
  RINGDP_CHECK(count <= INT_MAX, "native MPI collectives take at most ", INT_MAX, " elements, got ", count);
  return static_cast<int>(count);
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

}  // namespace ringdp::comm::native
#endif
