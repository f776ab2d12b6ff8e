// Implements comm/algorithms/fingerprint.h (the contract is documented there). Tested by tests/cli/bench.sh
// mismatch and tests/unit/test_fingerprint.cpp.
#include "comm/algorithms/fingerprint.h"

#include <cstring>
#include <sstream>

#include "core/fnv1a.h"

namespace ringdp::comm {

std::string Fingerprint::describe() const {
  std::ostringstream out;
  out << kind_name(static_cast<CollectiveKind>(kind)) << " #" << sequence << " (";
  if (kind == static_cast<int64_t>(CollectiveKind::barrier))
    return out.str() + algorithm_name(static_cast<Algorithm>(algorithm)) + ")";
  if (kind == static_cast<int64_t>(CollectiveKind::all_reduce) ||
      kind == static_cast<int64_t>(CollectiveKind::reduce) ||
      kind == static_cast<int64_t>(CollectiveKind::reduce_scatter))
    out << reduce_op_name(static_cast<ReduceOp>(op)) << ", ";
  if (count == kPerRankCount)
    out << "uneven counts x " << dtype_name(static_cast<DType>(dtype));
  else
    out << count << " x " << dtype_name(static_cast<DType>(dtype));
  if (layout != 0) out << ", counts hash " << std::hex << static_cast<uint64_t>(layout) << std::dec;
  if (root >= 0) out << ", root " << root;
  out << ", " << algorithm_name(static_cast<Algorithm>(algorithm)) << ")";
  return out.str();
}

std::string compare_fingerprints(CollectiveContext& ctx, const Fingerprint& mine) {
  const int N = ctx.size();
  constexpr int kWords = 8;
  int64_t words[kWords] = {mine.kind, mine.op,       mine.dtype,     mine.count,
                           mine.root, mine.sequence, mine.algorithm, mine.layout};
  auto* all = static_cast<int64_t*>(ctx.transport.scratch(3, sizeof(words) * N));
  // The exchange itself must not be disturbed by an injected fault meant for the collective.
  CollectiveContext exchange = ctx;
  exchange.dtype = DType::int64;
  exchange.corrupt_next_receive = false;
  all_gather_ring(exchange, words, all, kWords);
  for (int r = 0; r < N; ++r) {
    if (std::memcmp(all + kWords * r, all, sizeof(words)) == 0) continue;
    const Fingerprint first{all[0], all[1], all[2], all[3], all[4], all[5], all[6], all[7]};
    const int64_t* w = all + kWords * r;
    const Fingerprint other{w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]};
    std::ostringstream out;
    out << "collective mismatch (RINGDP_DEBUG=DETAIL): rank 0 called " << first.describe() << ", rank " << r
        << " called " << other.describe();
    return out.str();
  }
  return {};
}

std::string compare_pairwise_counts(CollectiveContext& ctx, std::span<const int64_t> send_counts,
                                    std::span<const int64_t> recv_counts) {
  const int N = ctx.size(), me = ctx.rank();
  auto* all = static_cast<int64_t*>(ctx.transport.scratch(3, sizeof(int64_t) * N * N));
  CollectiveContext exchange = ctx;
  exchange.dtype = DType::int64;
  exchange.corrupt_next_receive = false;
  all_gather_ring(exchange, send_counts.data(), all, N);
  for (int i = 0; i < N; ++i) {
    const int64_t sent = all[static_cast<size_t>(i) * N + me];
    if (recv_counts[i] == sent) continue;
    std::ostringstream out;
    out << "all_to_all counts mismatch (RINGDP_DEBUG=DETAIL): rank " << me << " expects " << recv_counts[i]
        << " elements from rank " << i << " (its recv_counts[" << i << "]), but rank " << i << " sends it "
        << sent << " (its send_counts[" << me << "])";
    return out.str();
  }
  return {};
}

uint64_t counts_hash(std::span<const int64_t> counts) { return fnv1a_words(counts); }

}  // namespace ringdp::comm
