// The CSV reader under hostile input (a fuzzing pass with fixed seeds): random bytes, NaN/Inf,
// huge numbers, empty lines, ragged rows, a header only, a 16 MB line. Every input must load or
// raise ringdp::Error with a message naming the file; nothing may crash.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "apps/train/csv.h"

using namespace ringdp;
using Catch::Contains;

namespace {
// Every file written here, removed when the program ends (each run left 18 files, one of 20 MB).
struct TempFiles {
  std::vector<std::string> paths;
  ~TempFiles() {
    for (const std::string& path : paths) std::remove(path.c_str());
  }
};

std::string write_temp(const std::string& text) {
  static TempFiles files;
  const std::string path = "/tmp/ringdp-csv-test-" + std::to_string(::getpid()) + "-" +
                           std::to_string(files.paths.size()) + ".csv";
  files.paths.push_back(path);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}
}  // namespace

TEST_CASE("well-formed CSV loads, with or without a header", "[csv]") {
  const std::string path = write_temp("x1,x2,y\n1,2,3\n\n4, 5 ,6\r\n");
  const auto data = train::load_csv(path);
  CHECK(data.features.shape() == Shape{2, 2});
  CHECK(data.targets.to_vector() == std::vector<double>{3, 6});
  CHECK(train::load_csv(write_temp("1e308,-0.5,2\n")).features.item(0) == 1e308);
  std::remove(path.c_str());
}

TEST_CASE("malformed CSV is an error that names the file and the line", "[csv]") {
  REQUIRE_THROWS_WITH(train::load_csv(write_temp("1,2,3\n4,nan,6\n")),
                      Contains("line 2: column 2 ('nan') is not a finite number"));
  REQUIRE_THROWS_WITH(train::load_csv(write_temp("1,2,3\ninf,5,6\n")),
                      Contains("line 2: column 1 ('inf') is not a finite number"));
  REQUIRE_THROWS_WITH(train::load_csv(write_temp("1,2,3\n1e400,5,6\n")), Contains("is not a finite number"));
  REQUIRE_THROWS_WITH(train::load_csv(write_temp("1,2,3\n4,5\n")), Contains("line 2: 2 columns, expected 3"));
  REQUIRE_THROWS_WITH(train::load_csv(write_temp("a,b,y\n")), Contains("has no data rows"));
  REQUIRE_THROWS_WITH(train::load_csv(write_temp("")), Contains("has no data rows"));
  REQUIRE_THROWS_WITH(train::load_csv(write_temp("1\n2\n")), Contains("need features and a target"));
  REQUIRE_THROWS_WITH(train::load_csv(write_temp("1,2,3\n1,2,\n")), Contains("line 2: empty last column"));
  REQUIRE_THROWS_WITH(train::load_csv("/nonexistent/data.csv"),
                      Contains("cannot open data file '/nonexistent/data.csv'"));
}

TEST_CASE("lines that end in CR alone are lines", "[csv]") {
  // Issue #48 item 10: a CR-only file of 40 rows was one line, taken for a header: "no data rows".
  const auto data = train::load_csv(write_temp("a,b,y\r1,2,3\r4,5,6\r"));
  CHECK(data.features.to_vector() == std::vector<double>{1, 2, 4, 5});
  CHECK(data.targets.to_vector() == std::vector<double>{3, 6});
  CHECK(train::load_csv(write_temp("1,2,3\r\n4,5,6\r\n")).targets.to_vector() == std::vector<double>{3, 6});
}

TEST_CASE("a file that cannot be read is named with the reason", "[csv]") {
  CHECK_THROWS_WITH(train::load_csv("/nonexistent/data.csv"),
                    Contains("'/nonexistent/data.csv': No such file or directory"));
}

TEST_CASE("a UTF-8 byte order mark is not taken for a header", "[csv]") {
  // Spreadsheets write one; before, it made the first row "a header" and dropped it unsaid.
  const auto data =
      train::load_csv(write_temp("\xEF\xBB\xBF"
                                 "1,2,3\n4,5,6\n"));
  CHECK(data.features.to_vector() == std::vector<double>{1, 2, 4, 5});
  CHECK(train::load_csv(write_temp("\xEF\xBB\xBF"
                                   "1,2,3\n"))
            .targets.to_vector() == std::vector<double>{3});
  CHECK(train::load_csv(write_temp("\xEF\xBB\xBF"
                                   "x,y\n7,8\n"))
            .targets.to_vector() == std::vector<double>{8});
}

TEST_CASE("subnormal and underflowing numbers are numbers", "[csv]") {
  const auto data = train::load_csv(write_temp("1e-310,-4.9e-324,1e-400\n"));
  CHECK(data.features.to_vector() == std::vector<double>{1e-310, -4.9e-324});
  CHECK(data.targets.to_vector() == std::vector<double>{0});
}

TEST_CASE("a NUL inside a cell is an error, not the number before it", "[csv]") {
  const std::string text(
      "1,2,3\n4,5\0"
      "9,6\n",
      14);
  REQUIRE_THROWS_WITH(train::load_csv(write_temp(text)),
                      Contains("line 2: column 2 ('5\\x009') holds a NUL byte"));
  // Not in a header either: the fuzz target found a first line of NULs taken for one.
  REQUIRE_THROWS_WITH(train::load_csv(write_temp(std::string("\0\0\n5,6\n", 7))),
                      Contains("line 1: column 1 ('\\x00\\x00') holds a NUL byte"));
}

TEST_CASE("a huge cell is cut in the error, and a folder is named as one", "[csv]") {
  const std::string cell(20 << 20, 'x');
  try {
    train::load_csv(write_temp("1,2,3\n4," + cell + ",6\n"));
    FAIL("a 20 MB non-numeric cell was accepted");
  } catch (const Error& e) {
    // Judged by size first: Catch would take minutes to print a 20 MB message.
    const std::string message = e.what();
    REQUIRE(message.size() < 1000);
    CHECK_THAT(message, Contains("line 2: column 2 ('xxxxxxxx") &&
                            Contains("...' of 20971520 bytes) is not a number"));
  }
  REQUIRE_THROWS_WITH(train::load_csv("/tmp"), Contains("data file '/tmp' is a directory"));
}

TEST_CASE("random bytes never crash the CSV reader", "[csv][fuzz]") {
  std::mt19937_64 rng(20261129);
  // Spelled with its length: a plain literal would end at the embedded NUL, and neither '\0' nor
  // '\xff' would ever be drawn.
  static constexpr char kAlphabet[] = "0123456789.,-+eE \t\r\nnaNinfx\0\xff";
  const std::string alphabet(kAlphabet, sizeof kAlphabet - 1);
  REQUIRE(alphabet.back() == '\xff');
  int loaded = 0, rejected = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string text;
    if (i % 4 == 3) {
      // A well-formed file (2 to 5 columns, 1 to 10 rows), then one byte replaced half the time.
      const int columns = 2 + static_cast<int>(rng() % 4), rows = 1 + static_cast<int>(rng() % 10);
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < columns; ++c)
          text += std::to_string(static_cast<int>(rng() % 2001) - 1000) + (c + 1 < columns ? "," : "\n");
      if (rng() % 2) text[rng() % text.size()] = alphabet[rng() % alphabet.size()];
    } else {
      text.assign(rng() % 512, '\0');
      const bool from_alphabet = i % 2 == 0;
      for (char& c : text)
        c = from_alphabet ? alphabet[rng() % alphabet.size()] : static_cast<char>(rng() & 0xff);
    }
    const std::string path = write_temp(text);
    try {
      const auto data = train::load_csv(path);
      // What loads is a rectangular, finite data set with at least one feature.
      CHECK(data.features.size(0) == data.targets.size(0));
      CHECK(data.features.size(1) >= 1);
      for (double v : data.features.to_vector()) CHECK(std::isfinite(v));
      for (double v : data.targets.to_vector()) CHECK(std::isfinite(v));
      ++loaded;
    } catch (const Error& e) {
      // What does not is refused naming the file.
      CHECK(std::string(e.what()).find(path) != std::string::npos);
      ++rejected;
    }
    std::remove(path.c_str());
  }
  // Both outcomes happen, or the generator is not exercising the reader.
  CHECK(loaded > 0);
  CHECK(rejected > 0);
}

TEST_CASE("a 16 MB line is handled", "[csv][fuzz]") {
  std::string line;
  line.reserve(16 << 20);
  while (line.size() < (16u << 20)) line += "1.5,";
  line += "2\n";
  const std::string path = write_temp(line);
  const auto data = train::load_csv(path);
  CHECK(data.features.size(0) == 1);
  CHECK(data.features.size(1) > 1000000);
  std::remove(path.c_str());
}
