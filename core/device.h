// Where a tensor's storage lives: the host ("cpu") or one CUDA device ("cuda:N").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ringdp {

struct Device {
  enum class Kind : uint8_t { cpu, cuda };
  Kind kind = Kind::cpu;
  int index = 0;

  static Device cpu() { return {}; }
  static Device cuda(int index = 0) { return {Kind::cuda, index}; }
  /// Parses "cpu", "cuda" (device 0) and "cuda:N"; anything else is a ringdp::Error.
  static Device parse(std::string_view text);

  bool is_cpu() const { return kind == Kind::cpu; }
  bool is_cuda() const { return kind == Kind::cuda; }
  std::string str() const;
  bool operator==(const Device&) const = default;
};

}  // namespace ringdp
