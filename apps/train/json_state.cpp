// Implements apps/train/json_state.h (the contract is documented there). Tested by
// tests/unit/test_json_state.cpp, tests/cli/train.sh (errors, checkpoint) and the fuzz corpus replay.
#include "apps/train/json_state.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
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

namespace {
using Json = nlohmann::ordered_json;

// JSON leaves a repeated key to the reader, and nlohmann keeps one of the values without a word:
// which one a file meant cannot be known, so it is refused.
Json parse_unique_keys(const std::string& text, const std::string& source) {
  std::vector<std::set<std::string>> open_objects;
  std::string repeated;
  const Json::parser_callback_t callback = [&](int, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) open_objects.emplace_back();
    if (event == Json::parse_event_t::object_end) open_objects.pop_back();
    if (event == Json::parse_event_t::key && !open_objects.back().insert(parsed.get<std::string>()).second &&
        repeated.empty())
      repeated = parsed.get<std::string>();
    return true;
  };
  Json root;
  try {
    root = Json::parse(text, callback);
  } catch (const std::exception& e) {
    RINGDP_FAIL("'", source, "' is not valid JSON: ", e.what());
  }
  RINGDP_CHECK(repeated.empty(), "'", source, "': key '", repeated,
               "' appears twice in one object; which value is meant cannot be known");
  return root;
}

// Whole numbers only: get<Shape>() would truncate 1.5 to 1. The product is bounded as the
// checkpoint reader bounds it, dividing so that it cannot overflow.
Shape shape_of(const Json& json, const std::string& source, const std::string& name) {
  constexpr int64_t kMaxElements = int64_t{1} << 40;
  Shape shape;
  int64_t numel = 1;
  bool whole = json.is_array() && json.size() <= 8;
  for (size_t d = 0; whole && d < json.size(); ++d) {
    whole = json[d].is_number_integer() && json[d].get<int64_t>() >= 0 &&
            (json[d].get<int64_t>() == 0 || numel <= kMaxElements / json[d].get<int64_t>());
    if (whole) shape.push_back(json[d].get<int64_t>());
    if (whole) numel *= shape.back();
  }
  RINGDP_CHECK(whole, "'", source, "': entry '", name, "': shape ", json.dump(),
               " is not a list of whole numbers from 0 (at most 8 of them, at most 2^40 elements in all)");
  return shape;
}

std::vector<double> data_of(const Json& json, const std::string& source, const std::string& name) {
  RINGDP_CHECK(json.is_array(), "'", source, "': entry '", name, "': data ", json.dump().substr(0, 40),
               " is not a list of numbers");
  std::vector<double> data;
  data.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    // get<double>() would read true as 1.
    RINGDP_CHECK(json[i].is_number() && std::isfinite(json[i].get<double>()), "'", source, "': entry '", name,
                 "': data[", i, "] is ", json[i].dump().substr(0, 40), ", not a finite number");
    data.push_back(json[i].get<double>());
  }
  return data;
}
}  // namespace

autograd::StateDict parse_state_json(const std::string& text, const std::string& source) {
  const Json root = parse_unique_keys(text, source);
  RINGDP_CHECK(root.is_object(), "'", source, "' must hold a JSON object of name -> {shape, data}");
  autograd::StateDict state;
  for (const auto& [name, entry] : root.items()) {
    RINGDP_CHECK(entry.is_object() && entry.contains("shape") && entry.contains("data"), "'", source,
                 "': entry '", name, "' needs \"shape\" and \"data\"");
    for (const auto& [key, value] : entry.items())
      RINGDP_CHECK(key == "shape" || key == "data", "'", source, "': entry '", name, "' has key '", key,
                   "'; expected only \"shape\" and \"data\"");
    const Shape shape = shape_of(entry["shape"], source, name);
    const std::vector<double> data = data_of(entry["data"], source, name);
    RINGDP_CHECK(shape_numel(shape) == static_cast<int64_t>(data.size()), "'", source, "': entry '", name,
                 "' has shape ", shape_str(shape), " but ", data.size(), " values");
    state.emplace_back(name, from_vector(data, shape, DType::float64));
  }
  return state;
}

autograd::StateDict read_state_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  RINGDP_CHECK(in.good(), "cannot open '", path, "'");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_state_json(text.str(), path);
}

}  // namespace ringdp::train
