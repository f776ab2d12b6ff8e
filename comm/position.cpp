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

ShapeNote ShapeNote::of(std::span<const int64_t> shape) {
  ShapeNote note;
  note.ndim = static_cast<int>(shape.size());
  for (int i = 0; i < note.ndim && i < kDims; ++i) note.dims[i] = shape[static_cast<size_t>(i)];
  return note;
}

std::string ShapeNote::text() const {
  if (ndim < 0) return "";
  std::ostringstream out;
  out << "[";
  for (int i = 0; i < ndim && i < kDims; ++i) out << (i ? ", " : "") << dims[i];
  if (ndim > kDims) out << ", ...";
  out << "]";
  return out.str();
}

std::string ShapeNote::suffix() const {
  if (ndim < 0 || ndim == 1) return "";
  std::string shown(1, ' ');
  shown += text();
  return shown;
}

std::string Position::describe() const {
  std::ostringstream out;
  out << kind_name(kind) << " #" << sequence << " (" << algorithm_name(algorithm) << ", " << count << " x "
      << dtype_name(dtype);
  out << shape.suffix();
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
