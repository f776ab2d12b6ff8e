// Hierarchical all-reduce (Horovod's and NCCL's two-level scheme): the links inside a host are
// fast and those between hosts slow, so only 1/L of the data (L ranks per host) crosses them,
// and each inter-host link carries one all-reduce of a shard instead of the flat ring's 2(N−1)
// latency-bound steps around every rank.
//
//   host A: a0 a1      1. ring reduce-scatter inside each host: a_i holds chunk c_i of A's sum
//   host B: b0 b1      2. all-reduce across hosts, per local index: a0+b0 on c_0, a1+b1 on c_1
//                      3. ring all-gather inside each host: every rank has every complete chunk
//
// Every host must cut the buffer alike for step 2 to pair equal ranges, so equal host sizes are
// required; with uneven hosts it is reduce (tree) to each host's first rank, an all-reduce among
// those first ranks, and a broadcast (tree) back inside each host.
#include "comm/algorithms/algorithms.h"

namespace ringdp::comm {
namespace {
void all_reduce_by_size(CollectiveContext& ctx, void* buf, int64_t count, size_t rd_max_bytes) {
  if (static_cast<size_t>(count) * ctx.element_bytes() <= rd_max_bytes)
    all_reduce_recursive_doubling(ctx, buf, count);
  else
    all_reduce_ring(ctx, buf, buf, count);
}
}  // namespace

void all_reduce_hierarchical(CollectiveContext& host, CollectiveContext& cross, void* buf, int64_t count,
                             bool uniform_hosts, size_t rd_max_bytes) {
  if (count == 0) return;
  const int L = host.size();
  if (!uniform_hosts) {
    reduce_tree(host, buf, buf, count, 0);
    if (host.rank() == 0) all_reduce_by_size(cross, buf, count, rd_max_bytes);
    broadcast_tree(host, buf, count, 0);
    return;
  }
  if (L == 1) {
    all_reduce_by_size(cross, buf, count, rd_max_bytes);
    return;
  }
  const ChunkLayout layout{count, L};
  const int steps = 2 * (L - 1) + 1;
  const int mine = ring_owned_chunk(host.rank(), L);
  ring_reduce_scatter_phase(host, buf, buf, RingOut::whole_buffer, layout, mine, 1, steps);
  if (cross.size() > 1) {
    // Every rank of this cross group has the same local index, hence the same chunk.
    host.enter_step(L, steps, Phase::across_hosts, -1, mine, -1, mine, "all-reduce");
    all_reduce_by_size(cross, host.at(buf, layout.offset(mine)), layout.length(mine), rd_max_bytes);
  }
  ring_all_gather_phase(host, buf, layout, mine, L + 1, steps);
}

}  // namespace ringdp::comm
