// What the algorithms share: the chunk layout, segment size and step bookkeeping.
#include <cstdio>

#include "comm/algorithms/algorithms.h"

#include "kernels/elementwise.h"

namespace ringdp::comm {

int64_t ChunkLayout::offset(int chunk) const {
  const int64_t base = count / chunks, extra = count % chunks;
  return chunk * base + std::min<int64_t>(chunk, extra);
}

int64_t ChunkLayout::length(int chunk) const {
  const int64_t base = count / chunks, extra = count % chunks;
  return base + (chunk < extra ? 1 : 0);
}

void CollectiveContext::close_step(timeline::Clock::time_point now) {
  std::string args;
  if (step_send >= 0) args += "\"send_to\": " + std::to_string(step_send);
  if (position.waiting_for_rank >= 0)
    args +=
        std::string(args.empty() ? "" : ", ") + "\"recv_from\": " + std::to_string(position.waiting_for_rank);
  if (position.chunk >= 0)
    args += std::string(args.empty() ? "" : ", ") + "\"chunk\": " + std::to_string(position.chunk);
  timeline::complete(
      "step", detail::concat("step ", position.step, "/", position.steps, " ", phase_name(position.phase)),
      step_begin, now, timeline::thread_row(), std::move(args));
  step_begin = {};
}

void CollectiveContext::scale_completed(void* data, int64_t count) const {
  if (scale == 1.0 || count == 0) return;
  RINGDP_CHECK(!transport.device_memory(),
               "avg's division folded into a collective runs on host memory only");
  kernels::scale_cpu(data, count, dtype, scale);
}

void CollectiveContext::report_end_of_steps() {
  if (step_begin != timeline::Clock::time_point{}) close_step(timeline::Clock::now());
  if (observer) {
    Position done = position;
    done.step = position.steps + 1;
    done.phase = Phase::done;
    (*observer)(done);
  }
}

void exchange_blocks(CollectiveContext& ctx, int send_peer, const void* send, int64_t send_count,
                     int recv_peer, void* recv, int64_t recv_count) {
  const int64_t seg = ctx.segment_elements();
  const size_t eb = ctx.element_bytes();
  auto& requests = ctx.requests;
  requests.clear();
  int64_t off = 0;
  do {  // at least once: an empty block is a message of no bytes
    const int64_t len = std::min(seg, recv_count - off);
    requests.push_back(ctx.transport.irecv(recv_peer, ctx.at(recv, off), len * eb, ctx.tag));
    off += len;
  } while (off < recv_count);
  off = 0;
  do {
    const int64_t len = std::min(seg, send_count - off);
    requests.push_back(ctx.transport.isend(send_peer, ctx.at(send, off), len * eb, ctx.tag));
    off += len;
  } while (off < send_count);
  ctx.transport.wait_all(requests);
  if (ctx.corrupt_next_receive && recv_count > 0) {
    ctx.corrupt_next_receive = false;
    ctx.transport.corrupt_byte(recv);
  }
}

int64_t CollectiveContext::segment_elements() const {
  return std::max<int64_t>(1, static_cast<int64_t>(segment_bytes / element_bytes()));
}

void CollectiveContext::enter_step(int step, int steps, Phase phase, int send_peer, int send_chunk,
                                   int recv_peer, int recv_chunk, const char* action) {
  // The previous step ends where this one begins; its event reads the position before it moves.
  if (step_begin != timeline::Clock::time_point{}) close_step(timeline::Clock::now());
  position.step = step;
  position.steps = steps;
  position.phase = phase;
  position.waiting_for_rank = recv_peer;
  position.chunk = recv_chunk;
  if (observer) (*observer)(position);
  if (timeline::enabled()) {
    step_begin = timeline::Clock::now();
    step_send = send_peer;
  }
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
               algorithm_name(position.algorithm), step, steps, phase_name(phase), sent,
               (*sent && *received) ? "; " : "", received);
}

void CollectiveContext::trace_detail(const std::string& text) const {
  // The same prefix as the step's own line, so a reader (or scripts/draw-mechanics) files it there.
  std::fprintf(stderr, "ringdp trace: rank %d %s #%llu %s step %d/%d %-14s %s\n", rank(),
               kind_name(position.kind), static_cast<unsigned long long>(position.sequence),
               algorithm_name(position.algorithm), position.step, position.steps, phase_name(position.phase),
               text.c_str());
}

}  // namespace ringdp::comm
