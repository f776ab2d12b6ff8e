// Implements apps/train/json_state.h (the contract is documented there). Tested by tests/cli/train.sh
// (errors, checkpoint).
#include "apps/train/json_state.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/atomic_file.h"

namespace ringdp::train {

void write_state_json(const std::string& path, const autograd::StateDict& state) {
  nlohmann::ordered_json root = nlohmann::ordered_json::object();
  for (const auto& [name, tensor] : state) {
    const std::vector<double> values = tensor.to_vector();
    // JSON has no NaN or Inf (nlohmann writes null, which --init then rejects): refuse here,
    // before the file exists, rather than write what cannot be read back.
    for (size_t i = 0; i < values.size(); ++i)
      RINGDP_CHECK(std::isfinite(values[i]), "cannot export '", path, "': ", name, "[", i, "] is ", values[i],
                   " and JSON has no NaN or Inf");
    root[name] = {{"shape", tensor.shape()}, {"data", values}};
  }
  write_file_atomically(path, root.dump(1) + "\n", "--export");
}

autograd::StateDict read_state_json(const std::string& path) {
  std::ifstream in(path);
  RINGDP_CHECK(in.good(), "cannot open '", path, "'");
  nlohmann::ordered_json root;
  try {
    root = nlohmann::ordered_json::parse(in);
  } catch (const std::exception& e) {
    RINGDP_FAIL("'", path, "' is not valid JSON: ", e.what());
  }
  RINGDP_CHECK(root.is_object(), "'", path, "' must hold a JSON object of name -> {shape, data}");
  autograd::StateDict state;
  for (const auto& [name, entry] : root.items()) {
    RINGDP_CHECK(entry.is_object() && entry.contains("shape") && entry.contains("data"), "'", path,
                 "': entry '", name, "' needs \"shape\" and \"data\"");
    Shape shape;
    std::vector<double> data;
    try {
      shape = entry["shape"].get<Shape>();
      data = entry["data"].get<std::vector<double>>();
    } catch (const std::exception& e) {
      RINGDP_FAIL("'", path, "': entry '", name, "': ", e.what());
    }
    RINGDP_CHECK(shape_numel(shape) == static_cast<int64_t>(data.size()), "'", path, "': entry '", name,
                 "' has shape ", shape_str(shape), " but ", data.size(), " values");
    state.emplace_back(name, from_vector(data, shape, DType::float64));
  }
  return state;
}

}  // namespace ringdp::train
