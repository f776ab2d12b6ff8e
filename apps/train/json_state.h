// The --init/--export format: a JSON object mapping state-dict names to
// {"shape": [...], "data": [... row-major ...]}.
#pragma once

#include <string>

#include "autograd/module.h"

namespace ringdp::train {

void write_state_json(const std::string& path, const autograd::StateDict& state);
/// Refuses what it would have to guess at: a repeated key, a shape that is not whole numbers, a
/// value that is not a number (true is not 1), a key besides "shape" and "data".
autograd::StateDict read_state_json(const std::string& path);
/// The same from the file's bytes (the fuzz target's entry point); `source` names them in errors.
autograd::StateDict parse_state_json(const std::string& text, const std::string& source);

}  // namespace ringdp::train
