#include "comm/mpi_transport.h"

#if RINGDP_HAVE_MPI
#include <climits>
#include <cstring>

namespace ringdp::comm {

static_assert(sizeof(MPI_Request) <= sizeof(uintptr_t), "MPI_Request must fit in a Request handle");

namespace {
MPI_Request to_mpi(Request r) {
  MPI_Request m;
  std::memcpy(&m, &r.handle, sizeof m);
  return m;
}
Request from_mpi(MPI_Request m) {
  Request r;
  std::memcpy(&r.handle, &m, sizeof m);
  return r;
}
}  // namespace

void mpi_check(int rc, const char* call, const char* file, int line) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  MPI_Get_processor_name(host, &length);
  detail::throw_check_failure(file, line, nullptr,
                              detail::concat("MPI call `", call, "` failed on rank ", rank, " (",
                                             host, "): ", text));
}

MpiTransport::MpiTransport(MPI_Comm comm) {
  MPI_CHECK(MPI_Comm_dup(comm, &comm_));
  MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_, &size_));
}

MpiTransport::~MpiTransport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm_);
}

Request MpiTransport::isend(int peer, const void* data, size_t bytes, int tag) {
  RINGDP_CHECK(bytes <= INT_MAX, "one message of ", bytes, " bytes exceeds MPI's int count");
  MPI_Request request;
  MPI_CHECK(MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm_, &request));
  return from_mpi(request);
}

Request MpiTransport::irecv(int peer, void* data, size_t bytes, int tag) {
  RINGDP_CHECK(bytes <= INT_MAX, "one message of ", bytes, " bytes exceeds MPI's int count");
  MPI_Request request;
  MPI_CHECK(MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm_, &request));
  return from_mpi(request);
}

void MpiTransport::wait_all(std::span<Request> requests) {
  if (requests.empty()) return;
  waiting_.clear();
  for (Request r : requests) waiting_.push_back(to_mpi(r));
  int done = 0;
  for (uint32_t polls = 0;; ++polls) {
    MPI_CHECK(MPI_Testall(static_cast<int>(waiting_.size()), waiting_.data(), &done,
                          MPI_STATUSES_IGNORE));
    if (done) break;
    // Reading the clock costs ~20 ns; every 256th poll keeps it off the fast path.
    if ((polls & 255u) == 255u && deadline_passed()) expire();
  }
  for (Request& r : requests) r = from_mpi(MPI_REQUEST_NULL);
}

bool MpiTransport::test(Request& request) {
  MPI_Request m = to_mpi(request);
  int done = 0;
  MPI_CHECK(MPI_Test(&m, &done, MPI_STATUS_IGNORE));
  request = from_mpi(m);
  return done != 0;
}

void MpiTransport::reduce_into(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op) {
  kernels::reduce_into_cpu(dst, src, count, dtype, op);
}

void MpiTransport::copy(void* dst, const void* src, size_t bytes) {
  if (bytes && dst != src) std::memmove(dst, src, bytes);
}

}  // namespace ringdp::comm
#endif
