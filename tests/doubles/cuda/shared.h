// Checked shared memory for the CUDA emulator. instrument.py turns `__shared__ T name[A][B];` into
// `static SharedArray<T[A][B]> name("name");`, and RINGDP_DYNAMIC_SHARED gives a SharedSpan, so
// that every element access of an emulated kernel passes through here. Each access is
//   - bounds-checked per dimension (As[9][0] in a [8][128] array is an error, although the flat
//     element exists), in every build, not only under AddressSanitizer;
//   - in checked mode (the default; RINGDP_EMU_RACECHECK=0 turns it off), race-checked like
//     compute-sanitizer's racecheck: two threads of a block touching one element, at least one
//     writing, with no __syncthreads() between them (nor a warp synchronisation, when both are in
//     one warp), and init-checked: a read of an element no thread of the block has written yet.
// A violation ends the launch with a ringdp::Error naming the kernel, the block, the thread(s)
// and the element. The arrays deliberately do not decay to raw pointers: a __device__ helper
// takes the array by reference (a template parameter), so its accesses stay checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace ringdp::doubles {

/// Who last touched one element, and in which barrier interval (see BlockRun::interval).
struct AccessRecord {
  uint64_t write_interval = 0, read_interval = 0;
  uint64_t writer_warp_sync = 0, reader_warp_sync = 0;  // the warp's sync count at the access
  int writer = -1, reader = -1;  // linear thread index; kSeveralReaders
};

/// The untyped part of a shared array: its storage, its access records, its name and shape.
class SharedBase {
 public:
  SharedBase(const char* name, void* data, size_t count, size_t element_bytes, std::vector<size_t> extents);

  /// Checks index i of dimension `level`; a violation ends the calling thread's launch.
  void check_index(int level, long long i) const;
  /// Records a read or write of flat element `flat` (race and init checks) before it happens.
  void access(size_t flat, bool write);
  void* data() const { return data_; }

  /// Points the object at its storage; a no-op when nothing changed (dynamic shared memory is
  /// re-declared by every thread, and its records must survive that).
  void rebind(void* data, size_t count, size_t element_bytes, const char* name = nullptr);

 private:
  std::string element_name(size_t flat) const;
  void start_block();

  const char* name_;
  void* data_;
  size_t count_, element_bytes_;
  std::vector<size_t> extents_;
  std::vector<AccessRecord> records_;
  uint64_t block_serial_ = 0;
};

template <typename T>
class SharedRef {
 public:
  SharedRef(SharedBase* base, size_t flat) : base_(base), flat_(flat) {}
  operator T() const {
    base_->access(flat_, false);
    return slot();
  }
  SharedRef& operator=(const T& v) {
    base_->access(flat_, true);
    slot() = v;
    return *this;
  }
  SharedRef& operator=(const SharedRef& other) { return *this = static_cast<T>(other); }
  SharedRef& operator+=(const T& v) { return *this = static_cast<T>(static_cast<T>(*this) + v); }
  SharedRef& operator-=(const T& v) { return *this = static_cast<T>(static_cast<T>(*this) - v); }
  SharedRef& operator*=(const T& v) { return *this = static_cast<T>(static_cast<T>(*this) * v); }
  SharedRef& operator/=(const T& v) { return *this = static_cast<T>(static_cast<T>(*this) / v); }

 private:
  T& slot() const { return static_cast<T*>(base_->data())[flat_]; }
  SharedBase* base_;
  size_t flat_;
};

/// A partly indexed array: Sub is what is left to index (float[128] after As[k] of float[8][128]).
template <typename Sub>
class SharedIndex {
 public:
  SharedIndex(SharedBase* base, size_t offset, int level) : base_(base), offset_(offset), level_(level) {}
  auto operator[](long long i) const {
    using Next = std::remove_extent_t<Sub>;
    base_->check_index(level_, i);
    const size_t flat =
        offset_ + static_cast<size_t>(i) * (sizeof(Next) / sizeof(std::remove_all_extents_t<Sub>));
    if constexpr (std::is_array_v<Next>) {
      return SharedIndex<Next>(base_, flat, level_ + 1);
    } else {
      return SharedRef<Next>(base_, flat);
    }
  }

 private:
  SharedBase* base_;
  size_t offset_;
  int level_;
};

template <typename A>
std::vector<size_t> extents_of() {
  if constexpr (std::is_array_v<A>) {
    std::vector<size_t> rest = extents_of<std::remove_extent_t<A>>();
    rest.insert(rest.begin(), std::extent_v<A>);
    return rest;
  } else {
    return {};
  }
}

/// A static `__shared__` array of type A (T[N], T[N][M], ...), one per kernel: blocks never overlap.
template <typename A>
class SharedArray : public SharedBase {
  static_assert(std::is_array_v<A>, "a __shared__ declaration the emulator instruments is an array");
  using Element = std::remove_all_extents_t<A>;

 public:
  // The base is built before storage_ exists, so it is pointed at the storage afterwards.
  explicit SharedArray(const char* name) : SharedBase(name, nullptr, 0, sizeof(Element), extents_of<A>()) {
    rebind(storage_.data(), storage_.size(), sizeof(Element));
  }
  auto operator[](long long i) { return SharedIndex<A>(this, 0, 0)[i]; }

 private:
  std::vector<Element> storage_ = std::vector<Element>(sizeof(A) / sizeof(Element));
};

/// The launch's dynamic shared memory as T[bytes / sizeof(T)].
template <typename T>
class SharedSpan {
 public:
  explicit SharedSpan(SharedBase* base) : base_(base) {}
  SharedRef<T> operator[](long long i) const {
    base_->check_index(0, i);
    return SharedRef<T>(base_, static_cast<size_t>(i));
  }

 private:
  SharedBase* base_;
};

/// Turns racecheck/initcheck on or off (RINGDP_EMU_RACECHECK=0 starts with it off).
void set_racecheck(bool on);
bool racecheck();

}  // namespace ringdp::doubles
