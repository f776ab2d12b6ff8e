// A stand-in for NCCL's header, for tests only: the calls comm/transport/cuda/nccl_transport.cpp and
// comm/transport/cuda/native_nccl.cpp make, carried out over MPI on the CPU emulator's streams
// (nccl_emu.cpp). It lets the mpi suite run NcclTransport with several real ranks, which the one-GPU machine
// cannot (NCCL before 2.30 refuses two ranks on one device). It says nothing about NCCL's
// speed or its own protocols; it checks how ringdp drives NCCL: groups, ordering on the stream,
// device-memory buffers, the barrier's one-byte signals, and, as NCCL documents them:
//   - non-blocking communicators (config.blocking = 0): init, ncclGroupEnd with sends or
//     receives, every collective, and ncclCommFinalize return ncclInProgress; the operation
//     reaches the stream later, from the communicator's own thread, and any call on that
//     communicator before ncclCommGetAsyncError reports ncclSuccess fails with
//     ncclInvalidArgument. Here the thread enqueues only once the host has polled, so an event
//     recorded right after ncclGroupEnd precedes the transfers every time, not now and then;
//   - one device per communicator: the device current at init; a buffer or stream of another
//     device is refused, naming both;
//   - ncclCommDestroy before the communicator's operations have settled is refused, and one
//     without ncclCommFinalize is counted (ringdp::doubles::nccl_unfinalized_destroys()).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 0

enum ncclResult_t {
  ncclSuccess = 0,
  ncclUnhandledCudaError,
  ncclSystemError,
  ncclInternalError,
  ncclInvalidArgument,
  ncclInvalidUsage,
  ncclRemoteError,
  ncclInProgress
};
enum ncclDataType_t {
  ncclInt8,
  ncclUint8,
  ncclInt32,
  ncclUint32,
  ncclInt64,
  ncclUint64,
  ncclFloat16,
  ncclFloat32,
  ncclFloat64,
  ncclBfloat16
};
enum ncclRedOp_t { ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg };

struct ncclUniqueId {
  char internal[128];
};
using ncclComm_t = struct ncclComm*;
struct ncclConfig_t {
  int blocking;
};
#define NCCL_CONFIG_INITIALIZER \
  { 1 }

namespace ringdp::doubles {
/// Communicators destroyed without ncclCommFinalize since the process started.
int nccl_unfinalized_destroys();
/// Every group of sends and receives in the order it reached a stream, one line each, e.g.
/// "recv 0 4096, send 2 4096" (peer, bytes), when logging is on; cleared when turned on.
void nccl_log_groups(bool on);
const std::vector<std::string>& nccl_group_log();
}  // namespace ringdp::doubles

ncclResult_t ncclGetVersion(int* version);
ncclResult_t ncclGetUniqueId(ncclUniqueId* id);
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t* config);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* state);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommFinalize(ncclComm_t comm);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
const char* ncclGetErrorString(ncclResult_t result);
const char* ncclGetLastError(ncclComm_t comm);
ncclResult_t ncclGroupStart();
ncclResult_t ncclGroupEnd();
ncclResult_t ncclSend(const void* buf, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t ncclRecv(void* buf, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type, int root,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t type,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
