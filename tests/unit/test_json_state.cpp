// The trainer's JSON state (apps/train/json_state.h): what is exported reads back bit for bit as
// --init; a value JSON cannot hold is refused at export, naming the parameter and element.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>

#include "apps/train/json_state.h"

using namespace ringdp;
using Catch::Contains;

namespace {
std::string temp_path() { return "/tmp/ringdp-json-state-" + std::to_string(getpid()) + ".json"; }
}  // namespace

TEST_CASE("an exported state reads back exactly", "[json]") {
  const autograd::StateDict state{{"0.weight", randn({3, 4}, 5, 0.0, 1.0, DType::float64)},
                                  {"0.bias", full({3}, -0.1, DType::float64)}};
  const std::string path = temp_path();
  train::write_state_json(path, state);
  const autograd::StateDict back = train::read_state_json(path);
  std::remove(path.c_str());
  REQUIRE(back.size() == state.size());
  for (size_t i = 0; i < state.size(); ++i) {
    CHECK(back[i].first == state[i].first);
    CHECK(back[i].second.to_vector() == state[i].second.to_vector());
  }
}

TEST_CASE("NaN or Inf is refused at export, naming where it is", "[json]") {
  for (const double bad :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    Tensor weight = zeros({2, 2}, DType::float64);
    weight.data<double>()[3] = bad;
    const std::string path = temp_path();
    std::remove(path.c_str());
    REQUIRE_THROWS_WITH(train::write_state_json(path, {{"0.weight", weight}}),
                        Contains("0.weight[3] is") && Contains("JSON has no NaN or Inf"));
    CHECK_FALSE(std::ifstream(path).good());  // nothing half-written is left behind
  }
}

namespace {
// Reads `text` as an --init file.
autograd::StateDict read_text(const std::string& text) {
  const std::string path = temp_path();
  std::ofstream(path) << text;
  autograd::StateDict state;
  try {
    state = train::read_state_json(path);
  } catch (...) {
    std::remove(path.c_str());
    throw;
  }
  std::remove(path.c_str());
  return state;
}
}  // namespace

TEST_CASE("--init refuses what it would have to guess at", "[json]") {
  const std::string ten = "[0,1,2,3,4,5,6,7,8,9]";
  CHECK(read_text(R"({"w": {"shape": [1, 10], "data": )" + ten + "}}")[0].second.shape() == Shape{1, 10});
  // A fractional extent was truncated to 1 and loaded.
  REQUIRE_THROWS_WITH(read_text(R"({"w": {"shape": [1.5, 10], "data": )" + ten + "}}"),
                      Contains("entry 'w': shape [1.5,10] is not a list of whole numbers from 0"));
  REQUIRE_THROWS_WITH(read_text(R"({"w": {"shape": [-1, -10], "data": )" + ten + "}}"),
                      Contains("entry 'w': shape [-1,-10] is not a list of whole numbers from 0"));
  // JSON leaves duplicate keys to the reader; nlohmann kept one of them without a word.
  REQUIRE_THROWS_WITH(read_text(R"({"w": {"shape": [1], "data": [1]}, "w": {"shape": [1], "data": [2]}})"),
                      Contains("key 'w' appears twice in one object"));
  REQUIRE_THROWS_WITH(read_text(R"({"w": {"shape": [1], "shape": [2], "data": [1]}})"),
                      Contains("key 'shape' appears twice in one object"));
  REQUIRE_THROWS_WITH(read_text(R"({"w": {"shape": [2], "data": [1, true]}})"),
                      Contains("entry 'w': data[1] is true, not a finite number"));
  REQUIRE_THROWS_WITH(read_text(R"({"w": {"shape": [1], "data": [1], "dtype": "float32"}})"),
                      Contains("entry 'w' has key 'dtype'; expected only \"shape\" and \"data\""));
  REQUIRE_THROWS_WITH(read_text(R"({"w": {"shape": [4294967296, 4294967296], "data": []}})"),
                      Contains("is not a list of whole numbers from 0"));
}

TEST_CASE("--init errors quote long names and values in part", "[json]") {
  // The fuzz target found a 3000-byte key echoed whole; a 20 MB one would be 20 MB of stderr.
  const std::string key(3000, 'k');
  try {
    read_text(R"({")" + key + R"(": {"shape": [1.5], "data": [1]}})");
    FAIL("a fractional shape was accepted");
  } catch (const Error& e) {
    const std::string message = e.what();
    CHECK(message.size() < 400);
    CHECK_THAT(message, Contains("entry 'kkkkkkkkkk") && Contains("... (3000 bytes)': shape [1.5]"));
  }
}

TEST_CASE("deep nesting is refused by depth, and a nested value is described, not dumped", "[json]") {
  // 100,000 levels overflowed the stack (SIGSEGV) when the error quoted the value whole.
  const std::string deep(100000, '[');
  const std::string text = R"({"w": {"shape": [1], "data": )" + deep + std::string(100000, ']') + "}}";
  CHECK_THROWS_WITH(
      train::parse_state_json(text, "deep.json"),
      Contains("'deep.json' nests lists or objects more than 64 deep; an --init file is an object"));
  CHECK_THROWS_WITH(train::parse_state_json(deep, "open.json"), Contains("more than 64 deep"));
  CHECK_THROWS_WITH(train::parse_state_json(R"({"w": {"shape": [1], "data": [[[1, 2]]]}})", "n.json"),
                    Contains("entry 'w': data[0] is a nested list of 1 item, not a finite number"));
  CHECK_THROWS_WITH(train::parse_state_json(R"({"w": {"shape": [[1], [2]], "data": [1]}})", "s.json"),
                    Contains("shape a nested list of 2 items is not a list of whole numbers"));
  // 63 levels inside the root are read (and refused for what they are, not for their depth).
  const std::string text63 =
      R"({"w": {"shape": [1], "data": )" + std::string(61, '[') + std::string(61, ']') + "}}";
  CHECK_THROWS_WITH(train::parse_state_json(text63, "ok.json"),
                    Contains("data[0] is a nested list of 1 item"));
}
