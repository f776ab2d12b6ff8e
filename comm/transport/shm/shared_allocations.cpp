// Implements comm/transport/shm/shared_allocations.h (the contract is documented there). Every MPI call of an
// allocation is here. Tested by tests/mpi/test_shared_allocation.cpp.
#include "comm/transport/shm/shared_allocations.h"

#include <cstring>
#include <exception>

#include "comm/transport/mpi/mpi_transport.h"
#include "comm/transport/shm/shm_space.h"
#include "core/error.h"
#include "core/fnv1a.h"

namespace ringdp::comm {

namespace {

// What each rank asked for, as every rank gathers it: dtype, rank count of dims, a hash of all
// dims, and the first kShownDims of them for the message.
constexpr int kShownDims = 8;
struct Request {
  int64_t dtype, ndim, dims_hash, dims[kShownDims];
};

Request request_of(const Shape& shape, DType dtype) {
  Request request{static_cast<int64_t>(dtype),
                  static_cast<int64_t>(shape.size()),
                  static_cast<int64_t>(fnv1a_words(shape)),
                  {}};
  for (size_t i = 0; i < shape.size() && i < kShownDims; ++i) request.dims[i] = shape[i];
  return request;
}

std::string describe(const Request& request) {
  Shape shown(request.dims, request.dims + std::min<int64_t>(request.ndim, kShownDims));
  return detail::concat("shape ", shape_str(shown), request.ndim > kShownDims ? " (first dims)" : "", " ",
                        dtype_name(static_cast<DType>(request.dtype)));
}

bool same(const Request& a, const Request& b) { return std::memcmp(&a, &b, sizeof(Request)) == 0; }

}  // namespace

#if RINGDP_HAVE_MPI
namespace {

// Every rank learns every rank's request, so all of them report the same difference: none waits
// in the window's allocation for a rank that has already thrown.
void check_same_request(MPI_Comm comm, int size, const Request& mine) {
  std::vector<Request> all(static_cast<size_t>(size));
  RINGDP_MPI_CHECK(
      MPI_Allgather(&mine, sizeof(Request), MPI_BYTE, all.data(), sizeof(Request), MPI_BYTE, comm));
  for (int r = 1; r < size; ++r)
    RINGDP_CHECK(same(all[static_cast<size_t>(r)], all[0]), "allocate_shared: rank ", r, " passed ",
                 describe(all[static_cast<size_t>(r)]), " but rank 0 passed ", describe(all[0]),
                 "; every rank must pass the same shape and dtype");
}

}  // namespace

void* SharedAllocations::allocate(Transport& transport, const Shape& shape, DType dtype) {
  auto* mpi = dynamic_cast<MpiTransport*>(&transport.native_transport());  // over UCX too: its MPI
  RINGDP_CHECK(mpi, "allocate_shared: needs ranks started by an MPI launcher");
  MPI_Comm comm = mpi->comm();
  check_same_request(comm, mpi->size(), request_of(shape, dtype));
  const size_t bytes = static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
  // Each segment on its own pages: each rank first-touches (zeroes) its own, so its pages sit on
  // its NUMA node, and no two ranks' segments share a page.
  check_shm_space(comm, bytes, detail::concat("allocate_shared of ", describe(request_of(shape, dtype))),
                  "allocate plain tensors (ringdp-bench: leave out --buffers shared)");
  MPI_Info info = MPI_INFO_NULL;
  RINGDP_MPI_CHECK(MPI_Info_create(&info));
  RINGDP_MPI_CHECK(MPI_Info_set(info, "alloc_shared_noncontig", "true"));
  void* base = nullptr;
  MPI_Win window = MPI_WIN_NULL;
  const int allocated = MPI_Win_allocate_shared(static_cast<MPI_Aint>(std::max<size_t>(bytes, 1)), 1, info,
                                                comm, &base, &window);
  MPI_Info_free(&info);
  if (allocated != MPI_SUCCESS) mpi_check(allocated, "MPI_Win_allocate_shared", __FILE__, __LINE__);
  int* model = nullptr;
  int found = 0;
  RINGDP_MPI_CHECK(MPI_Win_get_attr(window, MPI_WIN_MODEL, &model, &found));
  if (!found || *model != MPI_WIN_UNIFIED) {
    RINGDP_MPI_CHECK(MPI_Win_free(&window));  // every rank asks the same MPI: all come here
    RINGDP_FAIL(
        "allocate_shared: this MPI's shared windows are not in the unified memory model, so ranks "
        "would not see each other's stores; use plain tensors");
  }
  Window made{.segments = std::vector<char*>(static_cast<size_t>(mpi->size())),
              .mine = static_cast<char*>(base),
              .bytes = bytes,
              .free = {}};
  for (int r = 0; r < mpi->size(); ++r) {
    MPI_Aint segment_bytes = 0;
    int unit = 0;
    RINGDP_MPI_CHECK(
        MPI_Win_shared_query(window, r, &segment_bytes, &unit, &made.segments[static_cast<size_t>(r)]));
  }
  // A passive-target epoch for the window's whole life: MPI's condition for direct access.
  RINGDP_MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, window));
  made.free = [window]() mutable {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    MPI_Win_unlock_all(window);
    MPI_Win_free(&window);
  };
  std::memset(base, 0, bytes);
  windows_.push_back(std::move(made));
  return base;
}
#else
void* SharedAllocations::allocate(Transport&, const Shape&, DType) {
  RINGDP_FAIL("allocate_shared: ringdp was built without MPI, which makes the shared windows");
}
#endif

std::optional<SharedPlace> SharedAllocations::find(const void* data, size_t bytes) const {
  const auto address = reinterpret_cast<uintptr_t>(data);
  for (size_t a = 0; a < windows_.size(); ++a) {
    const auto begin = reinterpret_cast<uintptr_t>(windows_[a].mine);
    if (address >= begin && address - begin <= windows_[a].bytes &&
        bytes <= windows_[a].bytes - (address - begin))
      return SharedPlace{.allocation = static_cast<int64_t>(a),
                         .offset = static_cast<int64_t>(address - begin)};
  }
  return std::nullopt;
}

void SharedAllocations::release(bool free) {
  // Unwinding from an error, this rank is on its way to MPI_Abort (fail_job) and the others may
  // never come to the collective free: leave the windows to the abort.
  if (free && std::uncaught_exceptions() == 0)
    for (Window& window : windows_)
      if (window.free) window.free();
  windows_.clear();
}

}  // namespace ringdp::comm
