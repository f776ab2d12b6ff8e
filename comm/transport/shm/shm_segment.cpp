// Implements comm/transport/shm/shm_segment.h (the design is described there).
#include "comm/transport/shm/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "comm/transport/shm/shm_space.h"
#include "core/debug_level.h"
#include "core/error.h"

namespace ringdp::comm {

namespace {

constexpr size_t kPage = 4096;

std::string errno_text(const char* call) { return detail::concat(call, ": ", std::strerror(errno)); }

// Rank 0's part: the segment created and sized, or why not. "ok:NAME" or "error:TEXT".
std::string create_segment(int ranks, size_t region, size_t slot_bytes) {
  const std::string problem = shm_space_problem(
      shm_free_bytes(), ranks, region, SharedSlots::space_text(slot_bytes, ranks),
      "lower RINGDP_SHM_SLOT_BYTES, or set RINGDP_SHM_MAX_BYTES=0 for no slots (all-reduces then run over "
      "UCX's messages)");
  if (!problem.empty()) return "error:" + problem;
  // A random part: containers that share /dev/shm (--ipc=host) but not PIDs may have the same pid.
  std::random_device random;
  std::string name;
  int fd = -1;
  for (int tries = 0; fd < 0 && tries < 8; ++tries) {
    char part[20];
    std::snprintf(part, sizeof part, "%08x%08x", random(), random());
    name = detail::concat("/ringdp-", getpid(), "-", part);
    fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) return "error:" + errno_text("shm_open") + " (" + name + ")";
  // Its pages taken now: tmpfs gives them on first touch otherwise, and a /dev/shm that DataLoader
  // workers fill later would end a rank with SIGBUS in the middle of an all-reduce.
  const int placed = posix_fallocate(fd, 0, static_cast<off_t>(region * static_cast<size_t>(ranks)));
  close(fd);
  if (placed != 0) {
    shm_unlink(name.c_str());
    return detail::concat("error:posix_fallocate of ", shm_bytes_text(region * static_cast<size_t>(ranks)),
                          " in ", name, ": ", std::strerror(placed),
                          " (/dev/shm is full: set RINGDP_SHM_MAX_BYTES=0 for no slots, or make it larger)");
  }
  return "ok:" + name;
}

// This rank's view of the segment, or null (and `why`).
void* map_segment(const std::string& name, size_t bytes, std::string& why) {
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) {
    why = errno_text("shm_open");
    return nullptr;
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) why = errno_text("mmap");
  close(fd);
  return base == MAP_FAILED ? nullptr : base;
}

// Whether every rank said it mapped the segment; under RINGDP_DEBUG=INFO a rank that could not says
// why.
bool every_rank_mapped(const std::vector<std::vector<char>>& said, int rank, const std::string& name,
                       const std::string& why) {
  if (!why.empty() && debug_level() != DebugLevel::off)
    std::fprintf(stderr, "ringdp: rank %d: no shared-memory slots: could not map %s: %s\n", rank,
                 name.c_str(), why.c_str());
  for (const auto& s : said)
    if (s.size() != 1 || s[0] != 1) return false;  // the slots' destructor unmaps this rank's view
  return true;
}

}  // namespace

std::unique_ptr<SharedSlots> segment_slots(OutOfBand& oob, size_t slot_bytes, bool yield_while_waiting) {
  const int rank = oob.rank(), ranks = oob.size();
  // Page-aligned regions, as MPI's windows give: each header then sits at the same offset everywhere.
  const size_t region = (SharedSlots::region_bytes(slot_bytes, ranks) + kPage - 1) / kPage * kPage;
  const size_t bytes = region * static_cast<size_t>(ranks);
  const std::string made = rank == 0 ? create_segment(ranks, region, slot_bytes) : std::string();
  std::string name = made.rfind("ok:", 0) == 0 ? made.substr(3) : "";  // rank 0's, until the exchange
  std::string why;
  std::unique_ptr<SharedSlots> slots;
  try {
    const auto from_zero = oob.all_gather(std::span(made.data(), made.size()))[0];
    const std::string told(from_zero.begin(), from_zero.end());
    RINGDP_CHECK(told.rfind("ok:", 0) == 0, "rank ", rank, ": ", told.substr(told.find(':') + 1));
    name = told.substr(3);
    void* base = map_segment(name, bytes, why);
    if (base) {
      std::vector<void*> regions;
      for (int r = 0; r < ranks; ++r)
        regions.push_back(static_cast<char*>(base) + region * static_cast<size_t>(r));
      // Zeroes this rank's header; the exchange below orders that before any peer reads it.
      slots = std::make_unique<SharedSlots>(
          rank, std::move(regions), slot_bytes, yield_while_waiting, [base, bytes] { munmap(base, bytes); },
          false);
    }
    const char mapped = slots ? 1 : 0;
    const auto all = oob.all_gather(std::span(&mapped, 1));
    if (rank == 0) shm_unlink(name.c_str());  // every rank has it mapped, or never will
    return every_rank_mapped(all, rank, name, why) ? std::move(slots) : nullptr;
  } catch (...) {
    if (rank == 0 && !name.empty()) shm_unlink(name.c_str());  // never left in /dev/shm
    throw;
  }
}

}  // namespace ringdp::comm
