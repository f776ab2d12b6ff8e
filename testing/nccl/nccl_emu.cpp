// The NCCL stand-in (see nccl.h): each group of sends and receives becomes one item on the CPU
// emulator's stream queue, which posts them all to MPI and waits for them, as a group's kernel
// moves its transfers together on the GPU; the collectives gather every rank's input with MPI
// and reduce it in rank order with ringdp's CPU reduction. Tests only.
#include "nccl.h"

#include <mpi.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/reduce_into.h"
#include "testing/cuda/cuda_emu.h"

struct ncclComm {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
};

namespace {

struct Transfer {
  bool send;
  void* buffer;
  size_t bytes;
  int peer;
  ncclComm_t comm;
};

int g_group_depth = 0;
std::string g_last_error;
cudaStream_t g_group_stream = nullptr;  // the stream of the group's transfers (one stream per group)
std::vector<Transfer> g_group;

size_t type_bytes(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    default: return 8;
  }
}

ringdp::DType to_dtype(ncclDataType_t t) {
  switch (t) {
    case ncclFloat32: return ringdp::DType::float32;
    case ncclFloat64: return ringdp::DType::float64;
    case ncclInt32: return ringdp::DType::int32;
    case ncclInt64: return ringdp::DType::int64;
    default: return ringdp::DType::bfloat16;
  }
}

ringdp::ReduceOp to_op(ncclRedOp_t op) {
  switch (op) {
    case ncclProd: return ringdp::ReduceOp::prod;
    case ncclMax: return ringdp::ReduceOp::max;
    case ncclMin: return ringdp::ReduceOp::min;
    default: return ringdp::ReduceOp::sum;
  }
}

void run_group(const std::vector<Transfer>& transfers) {
  std::vector<MPI_Request> requests(transfers.size());
  for (size_t i = 0; i < transfers.size(); ++i) {
    const Transfer& t = transfers[i];
    if (t.send) {
      MPI_Isend(t.buffer, static_cast<int>(t.bytes), MPI_BYTE, t.peer, 0, t.comm->comm, &requests[i]);
    } else {
      MPI_Irecv(t.buffer, static_cast<int>(t.bytes), MPI_BYTE, t.peer, 0, t.comm->comm, &requests[i]);
    }
  }
  MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
}

ncclResult_t add(Transfer t, cudaStream_t stream) {
  g_group_stream = stream;
  // NCCL moves device memory (host buffers need registering, which ringdp never does).
  if (t.bytes > 0 && !ringdp::emu::is_device_memory(t.buffer, t.bytes)) {
    g_last_error = std::string(t.send ? "ncclSend" : "ncclRecv") + ": the buffer is not device memory";
    return ncclInvalidArgument;
  }
  g_group.push_back(t);
  if (g_group_depth == 0) ncclGroupEnd();
  return ncclSuccess;
}

/// Every rank's `bytes` from `send`, in rank order (a copy first: send may alias the result).
std::vector<char> gather_all(const void* send, size_t bytes, ncclComm_t comm) {
  std::vector<char> mine(bytes + 1);
  if (bytes) std::memcpy(mine.data(), send, bytes);
  std::vector<char> all(bytes * static_cast<size_t>(comm->size) + 1);
  MPI_Allgather(mine.data(), static_cast<int>(bytes), MPI_BYTE, all.data(), static_cast<int>(bytes), MPI_BYTE,
                comm->comm);
  return all;
}

/// The reduction over ranks, in rank order, of count elements at `offset` of each rank's block.
std::vector<char> reduce_blocks(const std::vector<char>& all, size_t block_bytes, size_t offset, size_t count,
                                ncclDataType_t type, ncclRedOp_t op, int size) {
  const size_t bytes = count * type_bytes(type);
  std::vector<char> acc(all.begin() + static_cast<long>(offset),
                        all.begin() + static_cast<long>(offset + bytes));
  for (int r = 1; r < size; ++r)
    ringdp::kernels::reduce_into_cpu(acc.data(), all.data() + r * block_bytes + offset,
                                     static_cast<int64_t>(count), to_dtype(type), to_op(op));
  return acc;
}

}  // namespace

ncclResult_t ncclGetVersion(int* version) {
  *version = NCCL_MAJOR * 10000 + NCCL_MINOR * 100 + NCCL_PATCH;
  return ncclSuccess;
}
ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::memset(id->internal, 0x2a, sizeof id->internal);
  return ncclSuccess;
}
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId, int rank, ncclConfig_t*) {
  auto* c = new ncclComm;
  MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &c->comm);
  c->rank = rank;
  c->size = nranks;
  *comm = c;
  return ncclSuccess;
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t* state) {
  *state = ncclSuccess;
  return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t comm) {
  delete comm;
  return ncclSuccess;
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm->comm);
  delete comm;
  return ncclSuccess;
}
const char* ncclGetErrorString(ncclResult_t result) {
  return result == ncclSuccess ? "no error" : "emulated NCCL error";
}
const char* ncclGetLastError(ncclComm_t) { return g_last_error.c_str(); }

ncclResult_t ncclGroupStart() {
  ++g_group_depth;
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd() {
  if (g_group_depth > 0) --g_group_depth;
  if (g_group_depth == 0 && !g_group.empty()) {
    std::vector<Transfer> transfers;
    transfers.swap(g_group);
    ringdp::emu::enqueue(g_group_stream, [transfers] { run_group(transfers); });
  }
  return ncclSuccess;
}
ncclResult_t ncclSend(const void* buf, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return add({true, const_cast<void*>(buf), count * type_bytes(type), peer, comm}, stream);
}
ncclResult_t ncclRecv(void* buf, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return add({false, buf, count * type_bytes(type), peer, comm}, stream);
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  ringdp::emu::enqueue(stream, [=] {
    const size_t bytes = count * type_bytes(type);
    const std::vector<char> result =
        reduce_blocks(gather_all(send, bytes, comm), bytes, 0, count, type, op, comm->size);
    if (bytes) std::memcpy(recv, result.data(), bytes);
  });
  return ncclSuccess;
}
ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream) {
  ringdp::emu::enqueue(stream, [=] {
    const size_t bytes = count * type_bytes(type);
    const std::vector<char> result =
        reduce_blocks(gather_all(send, bytes, comm), bytes, 0, count, type, op, comm->size);
    if (comm->rank == root && bytes) std::memcpy(recv, result.data(), bytes);
  });
  return ncclSuccess;
}
ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  ringdp::emu::enqueue(stream, [=] {
    const size_t bytes = count * type_bytes(type);
    if (comm->rank == root && bytes) std::memmove(recv, send, bytes);
    MPI_Bcast(recv, static_cast<int>(bytes), MPI_BYTE, root, comm->comm);
  });
  return ncclSuccess;
}
ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream) {
  ringdp::emu::enqueue(stream, [=] {
    const size_t bytes = count * type_bytes(type);
    const std::vector<char> all = gather_all(send, bytes, comm);
    if (bytes) std::memcpy(recv, all.data(), bytes * static_cast<size_t>(comm->size));
  });
  return ncclSuccess;
}
ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t type,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  ringdp::emu::enqueue(stream, [=] {
    const size_t bytes = count * type_bytes(type), block = bytes * static_cast<size_t>(comm->size);
    const std::vector<char> result =
        reduce_blocks(gather_all(send, block, comm), block, bytes * static_cast<size_t>(comm->rank), count,
                      type, op, comm->size);
    if (bytes) std::memcpy(recv, result.data(), bytes);
  });
  return ncclSuccess;
}
