// Implements core/whole_file.h (the contract is documented there). Tested through its readers: unit
// csv, json_state, checkpoint; cli train errors.
#include "core/whole_file.h"

#include <fstream>
#include <sstream>

#include "core/error.h"

namespace ringdp {

std::string read_whole_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  RINGDP_CHECK(in.good(), "cannot open ", what, what.empty() ? "" : " ", "'", path, "'");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace ringdp
