// Bounds, race and init checks of emulated shared memory (see shared.h).
#include "tests/doubles/cuda/shared.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "tests/doubles/cuda/cuda_emu.h"

namespace ringdp::doubles {
namespace {

constexpr int kSeveralReaders = -2;

bool& racecheck_flag() {
  static bool on = [] {
    const char* env = std::getenv("RINGDP_EMU_RACECHECK");
    return !(env && std::strcmp(env, "0") == 0);
  }();
  return on;
}

// A GPU gives shared memory no initial value; all-ones bytes read as NaN in every float type,
// so a read the init check is not there to catch still spoils the result visibly.
constexpr unsigned char kPoison = 0xFF;

}  // namespace

void set_racecheck(bool on) { racecheck_flag() = on; }
bool racecheck() { return racecheck_flag(); }

SharedBase::SharedBase(const char* name, void* data, size_t count, size_t element_bytes,
                       std::vector<size_t> extents)
    : name_(name),
      data_(data),
      count_(count),
      element_bytes_(element_bytes),
      extents_(std::move(extents)),
      records_(count) {}

void SharedBase::rebind(void* data, size_t count, size_t element_bytes, const char* name) {
  if (name) name_ = name;
  if (data == data_ && count == count_ && element_bytes == element_bytes_) return;
  data_ = data;
  count_ = count;
  element_bytes_ = element_bytes;
  if (extents_.size() == 1) extents_[0] = count;
  records_.assign(count, AccessRecord{});
  block_serial_ = 0;
}

std::string SharedBase::element_name(size_t flat) const {
  std::ostringstream out;
  out << name_;
  size_t stride = count_;
  for (size_t extent : extents_) {
    stride /= extent ? extent : 1;
    out << "[" << flat / stride << "]";
    flat %= stride;
  }
  return out.str();
}

void SharedBase::check_index(int level, long long i) const {
  const size_t extent = extents_[static_cast<size_t>(level)];
  if (i >= 0 && static_cast<size_t>(i) < extent) return;
  std::ostringstream shape;
  for (size_t e : extents_) shape << "[" << e << "]";
  const BlockRun& run = block_run();
  fail_thread(detail::concat("shared-memory index ", i, " out of bounds in dimension ", level + 1, " of ",
                             name_, shape.str(), " (valid: 0 to ", static_cast<long long>(extent) - 1,
                             "): ", describe_where(run.current->linear)));
}

void SharedBase::start_block() {
  std::memset(data_, kPoison, count_ * element_bytes_);
  block_serial_ = block_run().block_serial;
}

void SharedBase::access(size_t flat, bool write) {
  BlockRun& run = block_run();
  if (block_serial_ != run.block_serial) start_block();
  if (!racecheck_flag()) return;
  AccessRecord& r = records_[flat];
  const int t = run.current->linear;
  const int warp = t / 32;
  // A conflicting access by another thread in this barrier interval is a race, unless both are
  // in one warp and that warp has synchronised since.
  auto unordered = [&](int other, uint64_t other_warp_sync) {
    if (other == t) return false;
    if (other >= 0 && other / 32 == warp && run.warp_sync[static_cast<size_t>(warp)] != other_warp_sync)
      return false;
    return true;
  };
  auto race = [&](const char* kind, int first, const char* first_did, const char* then_did) {
    const std::string first_thread = first == kSeveralReaders ? "several threads" : describe_thread(first);
    fail_thread(detail::concat("shared-memory race (", kind, ") on ", element_name(flat), " in ",
                               describe_block(), ": ", first_thread, " ", first_did, " it and ",
                               describe_thread(t), " ", then_did, " it with no __syncthreads() between"));
  };
  if (write) {
    if (r.write_interval == run.interval && unordered(r.writer, r.writer_warp_sync))
      race("write after write", r.writer, "wrote", "writes");
    if (r.read_interval == run.interval && unordered(r.reader, r.reader_warp_sync))
      race("write after read", r.reader, "read", "writes");
    r.write_interval = run.interval;
    r.writer = t;
    r.writer_warp_sync = run.warp_sync[static_cast<size_t>(warp)];
    return;
  }
  if (r.write_interval < run.block_first_interval)
    fail_thread(detail::concat("read of uninitialised shared memory ", element_name(flat),
                               " (no thread of this block has written it): ", describe_where(t)));
  if (r.write_interval == run.interval && unordered(r.writer, r.writer_warp_sync))
    race("read after write", r.writer, "wrote", "reads");
  if (r.read_interval != run.interval) {
    r.read_interval = run.interval;
    r.reader = t;
    r.reader_warp_sync = run.warp_sync[static_cast<size_t>(warp)];
  } else if (r.reader != t) {
    r.reader = kSeveralReaders;
  }
}

}  // namespace ringdp::doubles
