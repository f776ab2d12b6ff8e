// A check linked into tests/mpi/rank_leaves through MPI's profiling interface: it wraps the calls
// that start and complete ringdp's departure notices (the sends under MPI_TAG_UB,
// comm/world/mpi_departures.h) and, at MPI_Finalize, fails the rank if one of them is not known to have
// completed. The MPI standard requires every send to complete before MPI_Finalize; a send let go
// with MPI_Request_free can never be shown to have completed, so it counts as not complete. Over
// TCP such a send killed a rank with SIGPIPE when a peer closed its connection first (the net
// suite): a race this machine cannot make happen on demand, while this rule fails every time.
//
// Strict as MPI is: only the completion calls ringdp uses for these sends are modelled (MPI_Test,
// MPI_Testall, MPI_Wait, MPI_Waitall); a notice completed any other way would be reported.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <vector>

namespace {
struct Notices {
  std::mutex mutex;
  std::set<MPI_Request> pending;
  int freed = 0;  // let go before completing: never known complete
  int tag = -1;  // MPI_TAG_UB, read at the first send
};
Notices& notices() {
  static auto* state = new Notices;
  return *state;
}

void forget(const std::vector<MPI_Request>& done) {
  std::lock_guard lock(notices().mutex);
  for (MPI_Request request : done) notices().pending.erase(request);
}
}  // namespace

extern "C" {

int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request* request) {
  const int rc = PMPI_Isend(buf, count, type, dest, tag, comm, request);
  Notices& state = notices();
  std::lock_guard lock(state.mutex);
  if (state.tag < 0) {
    int* ub = nullptr;
    int found = 0;
    PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
    state.tag = found ? *ub : 0;
  }
  if (rc == MPI_SUCCESS && tag == state.tag) state.pending.insert(*request);
  return rc;
}

int MPI_Request_free(MPI_Request* request) {
  {
    std::lock_guard lock(notices().mutex);
    if (notices().pending.erase(*request) > 0) ++notices().freed;
  }
  return PMPI_Request_free(request);
}

int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  const MPI_Request before = *request;
  const int rc = PMPI_Test(request, flag, status);
  if (rc == MPI_SUCCESS && *flag) forget({before});
  return rc;
}

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  const MPI_Request before = *request;
  const int rc = PMPI_Wait(request, status);
  if (rc == MPI_SUCCESS) forget({before});
  return rc;
}

int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  const std::vector<MPI_Request> before(requests, requests + count);
  const int rc = PMPI_Testall(count, requests, flag, statuses);
  if (rc == MPI_SUCCESS && *flag) forget(before);
  return rc;
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  const std::vector<MPI_Request> before(requests, requests + count);
  const int rc = PMPI_Waitall(count, requests, statuses);
  if (rc == MPI_SUCCESS) forget(before);
  return rc;
}

int MPI_Finalize() {
  int rank = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  size_t open = 0;
  int freed = 0;
  {
    std::lock_guard lock(notices().mutex);
    open = notices().pending.size();
    freed = notices().freed;
  }
  const int rc = PMPI_Finalize();
  if (open + static_cast<size_t>(freed) > 0) {
    std::fprintf(
        stderr,
        "rank %d: error: MPI_Finalize with %zu departure notice send(s) not complete and %d let go "
        "(MPI_Request_free) before completing: MPI requires every send complete before MPI_Finalize\n",
        rank, open, freed);
    std::fflush(nullptr);
    std::_Exit(3);
  }
  return rc;
}

}  // extern "C"
