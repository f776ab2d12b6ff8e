// Reading the trainer's --data: a numeric CSV, optional header line, last column the target.
#pragma once

#include <string>

#include "apps/train/dataset.h"

namespace ringdp::train {

/// Errors name the file and the line: a missing file or a folder, a malformed or ragged row,
/// NaN/Inf, a NUL byte, an empty data set. A UTF-8 byte order mark is skipped; numbers too small
/// for a normal double (1e-310) are read as their subnormal (or zero).
Dataset load_csv(const std::string& path);

/// The same from the file's bytes (the fuzz target's entry point); `source` names them in errors.
Dataset parse_csv(const std::string& text, const std::string& source);

}  // namespace ringdp::train
