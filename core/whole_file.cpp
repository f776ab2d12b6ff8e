// Implements core/whole_file.h (the contract is documented there). Tested through its readers: unit
// csv, json_state, checkpoint; cli train errors.
#include "core/whole_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <new>
#include <vector>

#include "core/error.h"

namespace ringdp {

std::string read_whole_file(const std::string& path, const std::string& what) {
  const std::string named = what + (what.empty() ? "" : " ") + "'" + path + "'";
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  RINGDP_CHECK(in.good(), "cannot open ", named, ": ", errno != 0 ? std::strerror(errno) : "unknown reason");
  // Read in pieces, so that a file larger than memory (or endless, as /dev/zero) is named with
  // how much was read, not reported as a bare std::bad_alloc.
  std::string bytes;
  std::vector<char> piece(1 << 20);
  try {
    while (in.read(piece.data(), static_cast<std::streamsize>(piece.size())) || in.gcount() > 0)
      bytes.append(piece.data(), static_cast<size_t>(in.gcount()));
  } catch (const std::bad_alloc&) {
    const size_t read = bytes.size();
    std::string().swap(bytes);
    RINGDP_FAIL("cannot read ", named, ": out of memory after ", read,
                " bytes (is it a file of rows, or a device "
                "that never ends?)");
  }
  RINGDP_CHECK(!in.bad(), "cannot read ", named, ": ", errno != 0 ? std::strerror(errno) : "read error");
  return bytes;
}

}  // namespace ringdp
