// The NCCL stand-in (see nccl.h): each group of sends and receives becomes one item on the CPU
// emulator's stream queue, which posts them all to MPI and waits for them, as a group's kernel
// moves its transfers together on the GPU; the collectives gather every rank's input with MPI
// and reduce it in rank order with ringdp's CPU reduction. Tests only.
#include "nccl.h"

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kernels/reduce_into.h"
#include "tests/doubles/cuda/cuda_emu.h"

// A communicator, with the thread that hands a non-blocking communicator's operations to the
// stream: it enqueues them once the host polls ncclCommGetAsyncError (never earlier), then the
// state becomes ncclSuccess.
struct ncclComm {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  int device = 0;  // current at init, as NCCL binds a communicator to it
  bool blocking = true;
  bool finalized = false;
  std::atomic<ncclResult_t> state{ncclSuccess};
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::function<void()>> handed_over;  // what the thread still has to enqueue
  bool polled = false, stop = false;
  std::thread thread;

  void run() {
    std::unique_lock lock(mutex);
    for (;;) {
      wake.wait(lock, [this] { return stop || (polled && state == ncclInProgress); });
      if (stop) return;
      while (!handed_over.empty()) {
        handed_over.front()();
        handed_over.pop_front();
      }
      polled = false;
      state = ncclSuccess;
    }
  }
  /// Hands `work` to the thread (non-blocking), or does it now (blocking). The return value.
  ncclResult_t hand_over(std::function<void()> work) {
    if (blocking) {
      work();
      return ncclSuccess;
    }
    {
      std::lock_guard lock(mutex);
      handed_over.push_back(std::move(work));
      state = ncclInProgress;
    }
    return ncclInProgress;
  }
  void stop_thread() {
    {
      std::lock_guard lock(mutex);
      stop = true;
    }
    wake.notify_all();
    if (thread.joinable()) thread.join();
  }
};

namespace {

int g_unfinalized_destroys = 0;
std::mutex g_log_mutex;  // appended by a communicator's thread
bool g_log_on = false;
std::vector<std::string> g_group_log;

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
ncclResult_t g_group_error = ncclSuccess;  // a refused call inside the group fails its ncclGroupEnd

ncclResult_t fail(ncclResult_t code, std::string why) {
  g_last_error = std::move(why);
  return code;
}

/// NCCL refuses any call on a non-blocking communicator whose last operation has not settled.
ncclResult_t check_settled(const char* call, ncclComm_t comm) {
  if (!comm) return fail(ncclInvalidArgument, std::string(call) + ": the communicator is null");
  if (comm->state == ncclInProgress)
    return fail(ncclInvalidArgument,
                std::string(call) +
                    " on a non-blocking communicator whose previous operation is still in progress: poll "
                    "ncclCommGetAsyncError until it stops reporting ncclInProgress first");
  return ncclSuccess;
}

/// The buffer (when it is device memory of some device) and the stream must be the communicator's device's.
ncclResult_t check_device(const char* call, ncclComm_t comm, const void* buffer, size_t bytes,
                          cudaStream_t stream) {
  const int stream_device = ringdp::doubles::stream_device(stream);
  if (stream_device != comm->device)
    return fail(ncclInvalidArgument, ringdp::detail::concat(call, ": stream of cuda:", stream_device,
                                                            ", communicator of cuda:", comm->device));
  const int owner = bytes ? ringdp::doubles::device_of(buffer, bytes) : comm->device;
  if (owner >= 0 && owner != comm->device)
    return fail(ncclInvalidArgument, ringdp::detail::concat(call, ": buffer in memory of cuda:", owner,
                                                            ", communicator of cuda:", comm->device));
  return ncclSuccess;
}

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
    case ncclFloat16: return ringdp::DType::float16;
    case ncclInt8: return ringdp::DType::int8;
    case ncclUint8: return ringdp::DType::uint8;
    case ncclBfloat16: return ringdp::DType::bfloat16;
    default: break;
  }
  // Real NCCL reduces uint32 and uint64 too; ringdp never passes them, so reaching here means
  // native_nccl.cpp mapped a dtype wrongly: stop loudly rather than reduce the wrong type.
  std::fprintf(stderr, "NCCL stand-in: ncclDataType_t %d is not modelled\n", static_cast<int>(t));
  std::abort();
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
  const char* call = t.send ? "ncclSend" : "ncclRecv";
  ncclResult_t result = check_settled(call, t.comm);
  // NCCL moves device memory (host buffers need registering, which ringdp never does).
  if (result == ncclSuccess && t.bytes > 0 && !ringdp::doubles::is_device_memory(t.buffer, t.bytes))
    result = fail(ncclInvalidArgument, std::string(call) + ": the buffer is not device memory");
  if (result == ncclSuccess) result = check_device(call, t.comm, t.buffer, t.bytes, stream);
  if (result == ncclSuccess && !g_group.empty() && g_group_stream != stream)
    result = fail(ncclInvalidUsage, std::string(call) + ": the stand-in takes one stream per group");
  if (result != ncclSuccess) {
    if (g_group_depth > 0) g_group_error = result;
    return result;
  }
  g_group_stream = stream;
  g_group.push_back(t);
  if (g_group_depth == 0) return ncclGroupEnd();
  return ncclSuccess;
}

/// A collective: refused, or handed to the communicator for the stream.
ncclResult_t collective(const char* call, ncclComm_t comm, const void* send, const void* recv, size_t bytes,
                        cudaStream_t stream, std::function<void()> work) {
  if (const ncclResult_t r = check_settled(call, comm)) return r;
  if (const ncclResult_t r = check_device(call, comm, send, bytes, stream)) return r;
  if (const ncclResult_t r = check_device(call, comm, recv, bytes, stream)) return r;
  return comm->hand_over([stream, work = std::move(work)] { ringdp::doubles::enqueue(stream, work); });
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

int ringdp::doubles::nccl_unfinalized_destroys() { return g_unfinalized_destroys; }
void ringdp::doubles::nccl_log_groups(bool on) {
  std::lock_guard lock(g_log_mutex);
  g_log_on = on;
  if (on) g_group_log.clear();
}
const std::vector<std::string>& ringdp::doubles::nccl_group_log() { return g_group_log; }

ncclResult_t ncclGetVersion(int* version) {
  *version = NCCL_MAJOR * 10000 + NCCL_MINOR * 100 + NCCL_PATCH;
  return ncclSuccess;
}
ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::memset(id->internal, 0x2a, sizeof id->internal);
  return ncclSuccess;
}
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId, int rank,
                                    ncclConfig_t* config) {
  auto* c = new ncclComm;
  MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &c->comm);
  c->rank = rank;
  c->size = nranks;
  c->device = ringdp::doubles::current_device();
  c->blocking = !config || config->blocking != 0;
  c->thread = std::thread([c] { c->run(); });
  *comm = c;
  return c->hand_over([] {});  // a non-blocking init finishes later too
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* state) {
  if (!comm) return fail(ncclInvalidArgument, "ncclCommGetAsyncError: the communicator is null");
  if (comm->state == ncclInProgress && !ringdp::doubles::deferred_streams()) {
    // Synchronous streams would run the work on the communicator's thread, MPI included: the
    // host does that thread's part here instead (still never before this poll).
    std::lock_guard lock(comm->mutex);
    while (!comm->handed_over.empty()) {
      comm->handed_over.front()();
      comm->handed_over.pop_front();
    }
    comm->state = ncclSuccess;
  }
  *state = comm->state;
  if (*state == ncclInProgress) {
    {
      std::lock_guard lock(comm->mutex);
      comm->polled = true;
    }
    comm->wake.notify_all();
  }
  return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  comm->stop_thread();
  delete comm;
  return ncclSuccess;
}
ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  if (const ncclResult_t r = check_settled("ncclCommFinalize", comm)) return r;
  if (comm->finalized)
    return fail(ncclInvalidUsage, "ncclCommFinalize: the communicator is already finalized");
  comm->finalized = true;
  return comm->hand_over([] {});
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  if (const ncclResult_t r = check_settled("ncclCommDestroy", comm)) return r;
  if (!comm->finalized) ++g_unfinalized_destroys;
  comm->stop_thread();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm->comm);
  delete comm;
  return ncclSuccess;
}
const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclInvalidArgument: return "invalid argument (the NCCL stand-in)";
    case ncclInvalidUsage: return "invalid usage (the NCCL stand-in)";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "emulated NCCL error";
  }
}
const char* ncclGetLastError(ncclComm_t) { return g_last_error.c_str(); }

ncclResult_t ncclGroupStart() {
  ++g_group_depth;
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd() {
  if (g_group_depth > 0) --g_group_depth;
  if (g_group_depth > 0) return ncclSuccess;
  if (const ncclResult_t error = g_group_error) {  // NCCL drops a group with a refused call in it
    g_group_error = ncclSuccess;
    g_group.clear();
    return error;
  }
  if (g_group.empty()) return ncclSuccess;
  std::vector<Transfer> transfers;
  transfers.swap(g_group);
  ncclComm_t comm = transfers.front().comm;
  if (const ncclResult_t r = check_settled("ncclGroupEnd", comm)) return r;
  cudaStream_t stream = g_group_stream;
  return comm->hand_over([stream, transfers] {
    {
      std::lock_guard lock(g_log_mutex);
      if (g_log_on) {
        std::string line;
        for (const Transfer& t : transfers)
          line += (line.empty() ? "" : ", ") + std::string(t.send ? "send " : "recv ") +
                  std::to_string(t.peer) + " " + std::to_string(t.bytes);
        g_group_log.push_back(line);
      }
    }
    ringdp::doubles::enqueue(stream, [transfers] { run_group(transfers); });
  });
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
  const size_t n = count * type_bytes(type);
  return collective("ncclAllReduce", comm, send, recv, n, stream, [=] {
    const size_t bytes = count * type_bytes(type);
    const std::vector<char> result =
        reduce_blocks(gather_all(send, bytes, comm), bytes, 0, count, type, op, comm->size);
    if (bytes) std::memcpy(recv, result.data(), bytes);
  });
}
ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream) {
  const size_t n = count * type_bytes(type);
  return collective("ncclReduce", comm, send, comm->rank == root ? recv : send, n, stream, [=] {
    const size_t bytes = count * type_bytes(type);
    const std::vector<char> result =
        reduce_blocks(gather_all(send, bytes, comm), bytes, 0, count, type, op, comm->size);
    if (comm->rank == root && bytes) std::memcpy(recv, result.data(), bytes);
  });
}
ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  const size_t n = count * type_bytes(type);
  return collective("ncclBroadcast", comm, comm->rank == root ? send : recv, recv, n, stream, [=] {
    const size_t bytes = count * type_bytes(type);
    if (comm->rank == root && bytes) std::memmove(recv, send, bytes);
    MPI_Bcast(recv, static_cast<int>(bytes), MPI_BYTE, root, comm->comm);
  });
}
ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream) {
  const size_t n = count * type_bytes(type);
  return collective("ncclAllGather", comm, send, recv, n, stream, [=] {
    const size_t bytes = count * type_bytes(type);
    const std::vector<char> all = gather_all(send, bytes, comm);
    if (bytes) std::memcpy(recv, all.data(), bytes * static_cast<size_t>(comm->size));
  });
}
ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t type,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  const size_t n = count * type_bytes(type);
  return collective("ncclReduceScatter", comm, send, recv, n, stream, [=] {
    const size_t bytes = count * type_bytes(type), block = bytes * static_cast<size_t>(comm->size);
    const std::vector<char> result =
        reduce_blocks(gather_all(send, block, comm), block, bytes * static_cast<size_t>(comm->rank), count,
                      type, op, comm->size);
    if (bytes) std::memcpy(recv, result.data(), bytes);
  });
}
