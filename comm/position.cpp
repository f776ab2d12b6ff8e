// Implements comm/position.h (the contract is documented there). Tested by the watchdog report in
// tests/cli/bench.sh hang.
#include "comm/position.h"

#include <sstream>

namespace ringdp::comm {

std::string Position::describe() const {
  std::ostringstream out;
  out << kind_name(kind) << " #" << sequence << " (" << algorithm_name(algorithm) << ", " << count << " x "
      << dtype_name(dtype);
  if (steps > 0) out << ", step " << step << "/" << steps;
  if (*phase) out << " " << phase;
  if (waiting_for_rank >= 0) {
    out << ", waiting for ";
    if (chunk >= 0) out << "chunk " << chunk << " from ";
    out << "rank " << waiting_for_rank;
  }
  out << ")";
  return out.str();
}

}  // namespace ringdp::comm
