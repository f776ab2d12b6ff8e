// Implements comm/position.h (the contract is documented there). Tested by the watchdog report in
// tests/cli/bench.sh hang.
#include "comm/position.h"

#include <sstream>

namespace ringdp::comm {

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::none: return "";
    case Phase::reduce_scatter: return "reduce-scatter";
    case Phase::all_gather: return "all-gather";
    case Phase::exchange: return "exchange";
    case Phase::shared_memory: return "shared memory";
    case Phase::across_hosts: return "across hosts";
    case Phase::signal: return "signal";
    case Phase::chain: return "chain";
    case Phase::receive: return "receive";
    case Phase::forward: return "forward";
    case Phase::fold_in: return "fold-in";
    case Phase::unfold: return "unfold";
    case Phase::send_up: return "send-up";
    case Phase::gather: return "gather";
    case Phase::done: return "done";
  }
  return "";
}

std::string Position::describe() const {
  std::ostringstream out;
  out << kind_name(kind) << " #" << sequence << " (" << algorithm_name(kind, algorithm) << ", " << count
      << " x " << dtype_name(dtype);
  if (steps > 0) out << ", step " << step << "/" << steps;
  if (phase != Phase::none) out << " " << phase_name(phase);
  if (waiting_for_rank >= 0) {
    out << ", waiting for ";
    if (chunk >= 0) out << "chunk " << chunk << " from ";
    out << "rank " << waiting_for_rank;
  }
  out << ")";
  return out.str();
}

}  // namespace ringdp::comm
