// Implements comm/transport/shm/shm_space.h. Tested by tests/mpi/small_shm.sh (a 1 MiB /dev/shm in a mount
// namespace of its own).
#include "comm/transport/shm/shm_space.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"

#if RINGDP_HAVE_MPI
#include "comm/transport/mpi/mpi_transport.h"
#endif

namespace ringdp::comm {

namespace {

constexpr const char* kShmFolder = "/dev/shm";

// MPI rounds each rank's part up to pages and adds its own bookkeeping (Open MPI asked 1,053,192
// B for two 524,480 B regions): a page per rank and 64 KiB in all cover it.
// Saturating: an absurd request must read as too large, not wrap to a small one.
size_t needed_bytes(size_t bytes_per_rank, int ranks) {
  const long page = sysconf(_SC_PAGESIZE);
  const size_t p = page > 0 ? static_cast<size_t>(page) : 4096;
  // Each part rounded up to pages, and a page more: (bytes + 2p - 1) / p * p.
  size_t padded = 0, all = 0, needed = 0;
  if (__builtin_add_overflow(bytes_per_rank, 2 * p - 1, &padded) ||
      __builtin_mul_overflow(padded / p * p, static_cast<size_t>(ranks), &all) ||
      __builtin_add_overflow(all, size_t{64 * 1024}, &needed))
    return SIZE_MAX;
  return needed;
}

}  // namespace

// UINT64_MAX where /dev/shm cannot be read, or where Open MPI was told to put its windows
// elsewhere (osc_sm_backing_directory, a container's usual way round a small /dev/shm): that rank
// has nothing to say about the space.
uint64_t shm_free_bytes() {
  const char* elsewhere = std::getenv("OMPI_MCA_osc_sm_backing_directory");
  if (elsewhere && std::string(elsewhere) != kShmFolder) return UINT64_MAX;
  struct statvfs info {};
  if (statvfs(kShmFolder, &info) != 0) return UINT64_MAX;
  return static_cast<uint64_t>(info.f_bavail) * static_cast<uint64_t>(info.f_frsize);
}

namespace {
std::string with_commas(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

std::string shm_bytes_text(size_t bytes) {
  char scaled[32];
  if (bytes >= (size_t{1} << 30))
    std::snprintf(scaled, sizeof scaled, "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
  else if (bytes >= (size_t{1} << 20))
    std::snprintf(scaled, sizeof scaled, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  else
    std::snprintf(scaled, sizeof scaled, "%.1f KiB", static_cast<double>(bytes) / 1024);
  return detail::concat(scaled, " (", with_commas(bytes), " B)");
}

std::string shm_space_problem(uint64_t available, int ranks, size_t bytes_per_rank, const std::string& what,
                              const std::string& remedy) {
  const size_t needed = needed_bytes(bytes_per_rank, ranks);
  if (available == UINT64_MAX || available >= needed) return {};
  return detail::concat(
      kShmFolder, " has ", shm_bytes_text(available), " free, but ", what, " for the ", ranks,
      " rank(s) on this host need about ", shm_bytes_text(needed), " there (", shm_bytes_text(bytes_per_rank),
      " per rank, and the pages around them): make ", kShmFolder,
      " larger (a container: docker run --shm-size=1g; or mount -o remount,size=1G /dev/shm), or ", remedy);
}

#if RINGDP_HAVE_MPI
void check_shm_space(MPI_Comm node, size_t bytes_per_rank, const std::string& what,
                     const std::string& remedy) {
  int ranks = 1;
  RINGDP_MPI_CHECK(MPI_Comm_size(node, &ranks));
  // The least any rank sees, so that every rank decides alike (the space can change between reads).
  uint64_t available = shm_free_bytes();
  RINGDP_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &available, 1, MPI_UINT64_T, MPI_MIN, node));
  const std::string problem = shm_space_problem(available, ranks, bytes_per_rank, what, remedy);
  RINGDP_CHECK(problem.empty(), problem);
}
#endif

}  // namespace ringdp::comm
