// Implements apps/train/csv.h (the contract is documented there). Tested by tests/unit/test_csv.cpp,
// tests/cli/train.sh errors and the fuzz corpus replay (tests/fuzz/csv_fuzz.cpp).
#include "apps/train/csv.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string_view>
#include <vector>

#include "core/whole_file.h"

namespace ringdp::train {

namespace {
// A cell as an error quotes it: bytes that are not printable as \xNN, and no more than the first
// 40, so that a 20 MB cell does not become 40 MB of stderr.
std::string quoted(const std::string& cell) {
  constexpr size_t kShown = 40;
  std::string out = "'";
  for (size_t i = 0; i < std::min(cell.size(), kShown); ++i) {
    const auto byte = static_cast<unsigned char>(cell[i]);
    if (byte >= 0x20 && byte < 0x7f) {
      out += cell[i];
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += {'\\', 'x', kHex[byte >> 4], kHex[byte & 15]};
    }
  }
  if (cell.size() > kShown) return out + "...' of " + std::to_string(cell.size()) + " bytes";
  return out + "'";
}

// One cell: a number with optional blanks around it, or false with `why` set. strtod stops at a
// NUL, so the end it reports is compared with the cell's own end, not with a terminator.
bool parse_cell(const std::string& cell, int column, double& value, std::string& why) {
  const std::string where = "column " + std::to_string(column) + " (" + quoted(cell) + ")";
  if (cell.find('\0') != std::string::npos) {
    why = where + " holds a NUL byte";
    return false;
  }
  const char* begin = cell.c_str();
  const char* const stop = begin + cell.size();
  while (*begin == ' ' || *begin == '\t') ++begin;
  char* end = nullptr;
  value = std::strtod(begin, &end);
  while (end < stop && (*end == ' ' || *end == '\t' || *end == '\r')) ++end;
  if (end == begin || end != stop) {
    why = where + " is not a number";
    return false;
  }
  // strtod's ERANGE is not the test: it also flags underflow, and a subnormal (1e-310) or a
  // number that rounds to zero is as much a number as any. Overflow gives an infinity.
  if (!std::isfinite(value)) {
    why = where + " is not a finite number";
    return false;
  }
  return true;
}

// One row; false with `why` set when it is not all finite numbers.
bool parse_row(const std::string& line, std::vector<double>& values, std::string& why) {
  values.clear();
  std::stringstream cells(line);
  std::string cell;
  int column = 0;
  double value = 0;
  while (std::getline(cells, cell, ',')) {
    if (!parse_cell(cell, ++column, value, why)) return false;
    values.push_back(value);
  }
  if (!line.empty() && line.back() == ',') {
    why = "empty last column";
    return false;
  }
  return true;
}

Dataset to_dataset(const std::vector<double>& all, int64_t rows, int64_t columns) {
  Dataset data;
  data.features = empty({rows, columns - 1}, DType::float64);
  data.targets = empty({rows, 1}, DType::float64);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < columns - 1; ++c)
      data.features.data<double>()[r * (columns - 1) + c] = all[r * columns + c];
    data.targets.data<double>()[r] = all[r * columns + columns - 1];
  }
  return data;
}
}  // namespace

Dataset parse_csv(const std::string& text, const std::string& source) {
  // A spreadsheet's UTF-8 byte order mark would make the first row unparseable, so "a header".
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  std::string body = text.compare(0, kBom.size(), kBom) == 0 ? text.substr(kBom.size()) : text;
  // Lines that end in CR alone (old Mac files): with no LF anywhere, CR ends each line.
  if (body.find('\n') == std::string::npos) std::replace(body.begin(), body.end(), '\r', '\n');
  std::istringstream in(body);
  std::vector<double> all, row;
  std::string line, why;
  int64_t columns = -1, rows = 0, line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank lines are skipped
    if (!parse_row(line, row, why)) {
      // A first line that is not numbers is a header, but one with a NUL byte is not text at all.
      const bool header =
          rows == 0 && columns < 0 && line_number == 1 && line.find('\0') == std::string::npos;
      if (header) continue;
      RINGDP_FAIL("data file '", source, "' line ", line_number, ": ", why);
    }
    if (columns < 0) columns = static_cast<int64_t>(row.size());
    RINGDP_CHECK(static_cast<int64_t>(row.size()) == columns, "data file '", source, "' line ", line_number,
                 ": ", row.size(), " columns, expected ", columns, " like the first row");
    all.insert(all.end(), row.begin(), row.end());
    ++rows;
  }
  RINGDP_CHECK(rows > 0, "data file '", source, "' has no data rows");
  RINGDP_CHECK(columns >= 2, "data file '", source, "' has ", columns,
               " column(s); need features and a target");
  return to_dataset(all, rows, columns);
}

Dataset load_csv(const std::string& path) {
  // A folder opens as a stream that reads nothing, which would pass for an empty file.
  std::error_code ec;
  RINGDP_CHECK(!std::filesystem::is_directory(path, ec), "data file '", path,
               "' is a directory; --data expects a CSV file");
  return parse_csv(read_whole_file(path, "data file"), path);
}

}  // namespace ringdp::train
