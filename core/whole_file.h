// A file's whole contents as bytes, for the readers that parse from memory (the CSV loader,
// --init's JSON, checkpoints): one place that opens and reads, so they fail alike.
#pragma once

#include <string>

namespace ringdp {

/// The bytes of `path`; an Error "cannot open <what> '<path>'" when it cannot be opened (`what`
/// names the file for the user: "data file", "checkpoint"; empty for none).
std::string read_whole_file(const std::string& path, const std::string& what);

}  // namespace ringdp
