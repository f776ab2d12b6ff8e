// libFuzzer target for the --init JSON reader. Any bytes must load as a state dict whose every
// entry has exactly the shape and values the document gives (a shape of [1.5, 10] once loaded as
// [1, 10]; of a repeated key one value was kept) and finite values, or raise ringdp::Error; never crash,
// hang, read out of bounds or throw anything else (a library exception escaping would end ringdp-train
// without its message). Built and run as tests/fuzz/csv_fuzz.cpp is.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "apps/train/json_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const ringdp::autograd::StateDict state = ringdp::train::parse_state_json(text, "fuzz input");
    const auto document = nlohmann::json::parse(text);  // what loaded is valid JSON
    if (state.size() != document.size()) std::abort();  // no key kept silently from two
    for (const auto& entry : state) {
      // The document's own view of the entry (a plain json keeps the last of repeated keys).
      const auto& expected = document.at(entry.first);
      if (nlohmann::json(entry.second.shape()) != expected.at("shape")) std::abort();
      if (nlohmann::json(entry.second.to_vector()) != expected.at("data")) std::abort();
      for (const double v : entry.second.to_vector())
        if (!std::isfinite(v)) std::abort();
    }
  } catch (const ringdp::Error& e) {
    if (std::string(e.what()).size() > 1024) std::abort();
  }
  return 0;
}
