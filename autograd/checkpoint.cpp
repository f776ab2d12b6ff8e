// Implements autograd/checkpoint.h (the contract is documented there). Tested by tests/cli/train.sh
// checkpoint and the fuzz corpus replay (tests/fuzz/).
#include "autograd/checkpoint.h"

#include <zlib.h>

#include <cstring>
#include <set>

#include "core/atomic_file.h"
#include "core/whole_file.h"

namespace ringdp::autograd {

namespace {
constexpr char kMagic[8] = {'R', 'I', 'N', 'G', 'D', 'P', 'C', 'K'};
constexpr uint32_t kVersion = 2;  // 2: world size and shuffle after the seed

template <typename T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

class Reader {
 public:
  Reader(const std::string& bytes, const std::string& source) : bytes_(bytes), source_(source) {}
  template <typename T>
  T get(const char* what) {
    T value;
    need(sizeof value, what);
    std::memcpy(&value, bytes_.data() + at_, sizeof value);
    at_ += sizeof value;
    return value;
  }
  std::string take(size_t n, const char* what) {
    need(n, what);
    std::string out = bytes_.substr(at_, n);
    at_ += n;
    return out;
  }
  size_t position() const { return at_; }

 private:
  void need(size_t n, const char* what) {
    RINGDP_CHECK(n <= bytes_.size() - std::min(at_, bytes_.size()), "checkpoint '", source_,
                 "' is truncated: it ends while reading ", what, " at byte ", at_);
  }
  const std::string& bytes_;
  const std::string& source_;
  size_t at_ = 0;
};

void write_dict(std::string& out, const StateDict& dict) {
  put<uint32_t>(out, static_cast<uint32_t>(dict.size()));
  for (const auto& [name, tensor] : dict) {
    put<uint32_t>(out, static_cast<uint32_t>(name.size()));
    out += name;
    put<uint8_t>(out, static_cast<uint8_t>(tensor.dtype()));
    put<uint32_t>(out, static_cast<uint32_t>(tensor.dim()));
    for (int64_t d : tensor.shape()) put<int64_t>(out, d);
    const Tensor host = tensor.to(Device::cpu());
    out.append(static_cast<const char*>(host.data_ptr()), host.nbytes());
  }
}

// `part` ("model", "optimizer") names the dictionary in errors. Names are keys: one that is empty
// or repeated would be matched to a parameter by whichever entry a loader happens to look at.
StateDict read_dict(Reader& in, const std::string& source, const char* part) {
  StateDict dict;
  std::set<std::string> names;
  const uint32_t entries = in.get<uint32_t>("the entry count");
  for (uint32_t e = 0; e < entries; ++e) {
    const uint32_t name_length = in.get<uint32_t>("a name length");
    RINGDP_CHECK(name_length < 4096, "checkpoint '", source, "' is corrupt: a name of ", name_length,
                 " bytes");
    std::string name = in.take(name_length, "a name");
    RINGDP_CHECK(!name.empty(), "checkpoint '", source, "' is corrupt: an ", part,
                 " entry has an empty name");
    RINGDP_CHECK(names.insert(name).second, "checkpoint '", source, "' is corrupt: ", part, " entry '", name,
                 "' appears twice");
    const uint8_t dtype = in.get<uint8_t>("a dtype");
    RINGDP_CHECK(is_dtype_code(dtype), "checkpoint '", source, "' is corrupt: dtype code ", int(dtype),
                 " for '", name, "'");
    const uint32_t ndim = in.get<uint32_t>("a rank");
    RINGDP_CHECK(ndim <= 8, "checkpoint '", source, "' is corrupt: ", ndim, " dimensions for '", name, "'");
    Shape shape;
    int64_t numel = 1;
    for (uint32_t d = 0; d < ndim; ++d) {
      const int64_t extent = in.get<int64_t>("a dimension");
      // Divide rather than multiply: the product of corrupt extents would overflow.
      constexpr int64_t kMaxElements = int64_t{1} << 40;
      RINGDP_CHECK(extent >= 0 && (extent == 0 || numel <= kMaxElements / extent), "checkpoint '", source,
                   "' is corrupt: dimension ", extent, " for '", name, "'");
      shape.push_back(extent);
      numel *= extent;
    }
    const size_t bytes = static_cast<size_t>(numel) * dtype_size(static_cast<DType>(dtype));
    const std::string data = in.take(bytes, "tensor data");
    Tensor t(shape, static_cast<DType>(dtype));
    std::memcpy(t.data_ptr(), data.data(), bytes);
    dict.emplace_back(std::move(name), t);
  }
  return dict;
}
}  // namespace

void save_checkpoint(const std::string& path, const Checkpoint& checkpoint) {
  std::string out(kMagic, sizeof kMagic);
  put<uint32_t>(out, kVersion);
  put<int64_t>(out, checkpoint.next_epoch);
  put<uint64_t>(out, checkpoint.seed);
  put<uint32_t>(out, checkpoint.world_size);
  put<uint8_t>(out, checkpoint.shuffle ? 1 : 0);
  write_dict(out, checkpoint.model);
  write_dict(out, checkpoint.optimizer);
  put<uint32_t>(out,
                static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(out.data()), out.size())));

  write_file_atomically(path, out, "checkpoint");
}

Checkpoint parse_checkpoint(const std::string& bytes, const std::string& source) {
  RINGDP_CHECK(bytes.size() >= sizeof kMagic + 4 && std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0,
               "'", source, "' is not a ringdp checkpoint (bad magic)");
  RINGDP_CHECK(bytes.size() >= sizeof kMagic + 8, "checkpoint '", source, "' is truncated");
  uint32_t stored_crc;
  std::memcpy(&stored_crc, bytes.data() + bytes.size() - 4, 4);
  const auto actual_crc =
      static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size() - 4));
  Reader in(bytes, source);
  in.take(sizeof kMagic, "the magic");
  const uint32_t version = in.get<uint32_t>("the version");
  RINGDP_CHECK(version == kVersion, "checkpoint '", source, "' has format version ", version,
               "; this ringdp reads version ", kVersion);
  RINGDP_CHECK(stored_crc == actual_crc, "checkpoint '", source,
               "' is corrupt or truncated: checksum mismatch (stored ", stored_crc, ", computed ", actual_crc,
               ")");
  Checkpoint checkpoint;
  // A valid checksum says the bytes are as written, not that what was written makes sense.
  checkpoint.next_epoch = in.get<int64_t>("the epoch");
  RINGDP_CHECK(checkpoint.next_epoch >= 0, "checkpoint '", source, "' has epoch ", checkpoint.next_epoch,
               " (expected 0 or more)");
  checkpoint.seed = in.get<uint64_t>("the seed");  // every value is a seed
  checkpoint.world_size = in.get<uint32_t>("the world size");
  RINGDP_CHECK(checkpoint.world_size >= 1, "checkpoint '", source, "' has world size ", checkpoint.world_size,
               " (expected 1 or more)");
  const uint8_t shuffle = in.get<uint8_t>("the shuffle setting");
  RINGDP_CHECK(shuffle <= 1, "checkpoint '", source, "' has shuffle setting ", int{shuffle},
               " (expected 0 or 1)");
  checkpoint.shuffle = shuffle == 1;
  checkpoint.model = read_dict(in, source, "model");
  checkpoint.optimizer = read_dict(in, source, "optimizer");
  RINGDP_CHECK(in.position() + 4 == bytes.size(), "checkpoint '", source, "' has ",
               bytes.size() - 4 - in.position(), " unexpected trailing bytes");
  return checkpoint;
}

Checkpoint load_checkpoint(const std::string& path) {
  return parse_checkpoint(read_whole_file(path, "checkpoint"), path);
}

}  // namespace ringdp::autograd
