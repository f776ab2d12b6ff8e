// Implements apps/train/dataset.h (the contract is documented there). Tested by tests/unit/test_csv.cpp and
// tests/cli/train.sh errors.
#include "apps/train/dataset.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tensor/ops.h"

namespace ringdp::train {

Dataset synthetic_dataset(int64_t samples, int64_t features, uint64_t seed) {
  Dataset data;
  data.features = randn({samples, features}, seed * 4 + 0, 0.0, 1.0, DType::float64);
  const Tensor w_true = randn({1, features}, seed * 4 + 1, 0.0, 1.0, DType::float64);
  data.targets = ops::linear_forward(data.features, w_true, full({1}, 0.5, DType::float64));
  ops::add_(data.targets, randn({samples, 1}, seed * 4 + 2, 0.0, 0.1, DType::float64));
  return data;
}

namespace {
// Parses one CSV row; false with `why` set when the row is not all finite numbers.
bool parse_row(const std::string& line, std::vector<double>& values, std::string& why) {
  values.clear();
  std::stringstream cells(line);
  std::string cell;
  int column = 0;
  while (std::getline(cells, cell, ',')) {
    ++column;
    const char* begin = cell.c_str();
    while (*begin == ' ' || *begin == '\t') ++begin;
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(begin, &end);
    while (end && (*end == ' ' || *end == '\t' || *end == '\r')) ++end;
    if (end == begin || (end && *end != '\0')) {
      why = "column " + std::to_string(column) + " ('" + cell + "') is not a number";
      return false;
    }
    if (!std::isfinite(v) || errno == ERANGE) {
      why = "column " + std::to_string(column) + " ('" + cell + "') is not a finite number";
      return false;
    }
    values.push_back(v);
  }
  if (!line.empty() && line.back() == ',') {
    why = "empty last column";
    return false;
  }
  return true;
}
}  // namespace

Dataset load_csv(const std::string& path) {
  std::ifstream in(path);
  RINGDP_CHECK(in.good(), "cannot open data file '", path, "'");
  std::vector<double> all, row;
  std::string line, why;
  int64_t columns = -1, rows = 0, line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank lines are skipped
    if (!parse_row(line, row, why)) {
      if (rows == 0 && columns < 0 && line_number == 1) continue;  // a header line
      RINGDP_FAIL("data file '", path, "' line ", line_number, ": ", why);
    }
    if (columns < 0) columns = static_cast<int64_t>(row.size());
    RINGDP_CHECK(static_cast<int64_t>(row.size()) == columns, "data file '", path, "' line ", line_number,
                 ": ", row.size(), " columns, expected ", columns, " like the first row");
    all.insert(all.end(), row.begin(), row.end());
    ++rows;
  }
  RINGDP_CHECK(rows > 0, "data file '", path, "' has no data rows");
  RINGDP_CHECK(columns >= 2, "data file '", path, "' has ", columns,
               " column(s); need features and a target");
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

void gather_batch(const Dataset& data, const std::vector<int64_t>& indices, DType dtype, Device device,
                  Tensor& x, Tensor& y) {
  const int64_t F = data.features.size(1), B = static_cast<int64_t>(indices.size());
  Tensor hx = empty({B, F}, DType::float64), hy = empty({B, 1}, DType::float64);
  const double* fx = data.features.data<double>();
  const double* fy = data.targets.data<double>();
  for (int64_t i = 0; i < B; ++i) {
    std::copy(fx + indices[i] * F, fx + (indices[i] + 1) * F, hx.data<double>() + i * F);
    hy.data<double>()[i] = fy[indices[i]];
  }
  x = hx.to(dtype).to(device);
  y = hy.to(dtype).to(device);
}

}  // namespace ringdp::train
