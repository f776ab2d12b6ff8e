// What the algorithms share: the chunk layout, segment size and step bookkeeping.
#include <cstdio>

#include "comm/algorithms.h"

namespace ringdp::comm {

int64_t ChunkLayout::offset(int chunk) const {
  const int64_t base = count / chunks, extra = count % chunks;
  return chunk * base + std::min<int64_t>(chunk, extra);
}

int64_t ChunkLayout::length(int chunk) const {
  const int64_t base = count / chunks, extra = count % chunks;
  return base + (chunk < extra ? 1 : 0);
}

int64_t CollectiveContext::segment_elements() const {
  return std::max<int64_t>(1, static_cast<int64_t>(segment_bytes / element_bytes()));
}

void CollectiveContext::enter_step(int step, int steps, const char* phase, int send_peer, int send_chunk,
                                   int recv_peer, int recv_chunk, const char* action) {
  position.step = step;
  position.steps = steps;
  position.phase = phase;
  position.waiting_for_rank = recv_peer;
  position.chunk = recv_chunk;
  if (!trace) return;
  char sent[48] = "", received[64] = "";
  if (send_peer >= 0) {
    if (send_chunk >= 0)
      std::snprintf(sent, sizeof sent, "send chunk %d -> rank %d", send_chunk, send_peer);
    else
      std::snprintf(sent, sizeof sent, "send -> rank %d", send_peer);
  }
  if (recv_peer >= 0) {
    if (recv_chunk >= 0)
      std::snprintf(received, sizeof received, "recv chunk %d <- rank %d, %s", recv_chunk, recv_peer, action);
    else
      std::snprintf(received, sizeof received, "recv <- rank %d, %s", recv_peer, action);
  }
  std::fprintf(stderr, "ringdp trace: rank %d %s #%llu %s step %d/%d %-14s %s%s%s\n", rank(),
               kind_name(position.kind), static_cast<unsigned long long>(position.sequence),
               algorithm_name(position.algorithm), step, steps, phase, sent, (*sent && *received) ? "; " : "",
               received);
}

}  // namespace ringdp::comm
