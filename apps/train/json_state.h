// The --init/--export format: a JSON object mapping state-dict names to
// {"shape": [...], "data": [... row-major ...]}.
#pragma once

#include <string>

#include "autograd/module.h"

namespace ringdp::train {

void write_state_json(const std::string& path, const autograd::StateDict& state);
autograd::StateDict read_state_json(const std::string& path);

}  // namespace ringdp::train
