// Implements apps/train/json_state.h (the contract is documented there). Tested by
// tests/unit/test_json_state.cpp, tests/cli/train.sh (errors, checkpoint) and the fuzz corpus replay.
#include "apps/train/json_state.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/whole_file.h"

namespace ringdp::train {

void write_state_json(const std::string& path, const autograd::StateDict& state) {
  nlohmann::ordered_json root = nlohmann::ordered_json::object();
  // Not a structured binding: clang 14 cannot capture one in RINGDP_CHECK's lambda (scripts/fuzz).
  for (const auto& entry : state) {
    const std::string& name = entry.first;
    const Tensor& tensor = entry.second;
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

// Names and values as errors quote them: whole when short, else their start and their length, so
// that a 20 MB key is not echoed to stderr in full.
std::string shown(const std::string& text, size_t most = 60) {
  if (text.size() <= most) return text;
  return text.substr(0, most) + "... (" + std::to_string(text.size()) + " bytes)";
}

// A value as errors quote it: a list or object only when small and flat, else what it is. Dumping
// a nested value whole recursed once per level and overflowed the stack (a 100,000-deep "data").
std::string shown(const Json& json) {
  bool flat = json.size() <= 16;
  if (json.is_structured())
    for (auto it = json.begin(); flat && it != json.end(); ++it) flat = !it->is_structured();
  if (flat) return shown(json.dump());
  return std::string(json.is_array() ? "a nested list of " : "a nested object of ") +
         std::to_string(json.size()) + (json.is_array() ? " item" : " key") + (json.size() == 1 ? "" : "s");
}

// The deepest nesting read: a state file is 3 deep ({name: {"shape": [...], "data": [...]}}); a
// bound keeps a hostile file from building a value every later recursion must descend.
constexpr int kMaxDepth = 64;

// JSON leaves a repeated key to the reader, and nlohmann keeps one of the values without a word:
// which one a file meant cannot be known, so it is refused.
Json parse_unique_keys(const std::string& text, const std::string& source) {
  std::vector<std::set<std::string>> open_objects;
  std::string repeated;
  const Json::parser_callback_t callback = [&](int depth, Json::parse_event_t event, Json& parsed) {
    RINGDP_CHECK(depth < kMaxDepth, "'", source, "' nests lists or objects more than ", kMaxDepth,
                 " deep; an --init file is an object of name -> {\"shape\": [...], \"data\": [...]}, 3 deep");
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
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    RINGDP_FAIL("'", source, "' is not valid JSON: ", shown(e.what(), 300));
  }
  RINGDP_CHECK(repeated.empty(), "'", source, "': key '", shown(repeated),
               "' appears twice in one object; which value is meant cannot be known");
  return root;
}

// Whole numbers only: get<Shape>() would truncate 1.5 to 1. The product is bounded as the
// checkpoint reader bounds it, dividing so that it cannot overflow. `entry` names it in errors.
Shape shape_of(const Json& json, const std::string& entry) {
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
  RINGDP_CHECK(whole, entry, ": shape ", shown(json),
               " is not a list of whole numbers from 0 (at most 8 of them, at most 2^40 elements in all)");
  return shape;
}

std::vector<double> data_of(const Json& json, const std::string& entry) {
  RINGDP_CHECK(json.is_array(), entry, ": data ", shown(json), " is not a list of numbers");
  std::vector<double> data;
  data.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    // get<double>() would read true as 1.
    RINGDP_CHECK(json[i].is_number() && std::isfinite(json[i].get<double>()), entry, ": data[", i, "] is ",
                 shown(json[i]), ", not a finite number");
    // The parameters are float32: 1e300 became inf there, and training then "diverged".
    RINGDP_CHECK(std::fabs(json[i].get<double>()) <= std::numeric_limits<float>::max(), entry, ": data[", i,
                 "] is ", shown(json[i].dump()), ", beyond float32's range (magnitude at most ",
                 std::numeric_limits<float>::max(), "), which the model's parameters use");
    data.push_back(json[i].get<double>());
  }
  return data;
}
}  // namespace

autograd::StateDict parse_state_json(const std::string& text, const std::string& source) {
  const Json root = parse_unique_keys(text, source);
  RINGDP_CHECK(root.is_object(), "'", source, "' must hold a JSON object of name -> {shape, data}");
  autograd::StateDict state;
  for (const auto& item : root.items()) {
    const std::string entry = "'" + source + "': entry '" + shown(item.key()) + "'";
    const Json& value = item.value();
    RINGDP_CHECK(value.is_object() && value.contains("shape") && value.contains("data"), entry,
                 " needs \"shape\" and \"data\"");
    for (const auto& field : value.items())
      RINGDP_CHECK(field.key() == "shape" || field.key() == "data", entry, " has key '", shown(field.key()),
                   "'; expected only \"shape\" and \"data\"");
    const Shape shape = shape_of(value["shape"], entry);
    const std::vector<double> data = data_of(value["data"], entry);
    RINGDP_CHECK(shape_numel(shape) == static_cast<int64_t>(data.size()), entry, " has shape ",
                 shape_str(shape), " but ", data.size(), " values");
    state.emplace_back(item.key(), from_vector(data, shape, DType::float64));
  }
  return state;
}

autograd::StateDict read_state_json(const std::string& path) {
  return parse_state_json(read_whole_file(path, ""), path);
}

}  // namespace ringdp::train
