// The RINGDP_DEBUG=DETAIL call check (comm/algorithms/fingerprint.h): how a call is described, and what
// compare_fingerprints reports, run as rank 0 of two against a peer whose words are scripted
// (ScriptedPeer below), so the exchange needs no MPI.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "comm/algorithms/fingerprint.h"
#include "core/error.h"

using namespace ringdp;
using comm::Algorithm;
using comm::CollectiveKind;
using comm::Fingerprint;

namespace {
int64_t code(CollectiveKind kind) { return static_cast<int64_t>(kind); }
int64_t code(ReduceOp op) { return static_cast<int64_t>(op); }
int64_t code(DType dtype) { return static_cast<int64_t>(dtype); }
int64_t code(Algorithm algorithm) { return static_cast<int64_t>(algorithm); }

// Rank 0 of a world of two. Rank 1 is a script: each receive takes the next bytes of the words
// rank 1 "sent"; sends go nowhere. Every request completes at once.
class ScriptedPeer final : public comm::Transport {
 public:
  explicit ScriptedPeer(const Fingerprint& peer)
      : words_{peer.kind, peer.op,       peer.dtype,     peer.count,
               peer.root, peer.sequence, peer.algorithm, peer.layout} {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  comm::Request isend(int peer, const void*, size_t bytes, int tag) override {
    return {0, peer, tag, bytes, false};
  }
  comm::Request irecv(int peer, void* data, size_t bytes, int tag) override {
    REQUIRE(received_ + bytes <= sizeof words_);
    std::memcpy(data, reinterpret_cast<const char*>(words_) + received_, bytes);
    received_ += bytes;
    return {0, peer, tag, bytes, true};
  }
  void wait_all(std::span<comm::Request>) override {}
  bool test(comm::Request&) override { return true; }
  void reduce_into(void*, const void*, int64_t, DType, ReduceOp) override {
    FAIL("an all-gather reduces nothing");
  }
  void copy(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  size_t received() const { return received_; }

 private:
  int64_t words_[8];
  size_t received_ = 0;
};

// Runs the check as rank 0 with `mine` against a peer that called `theirs`. The context is that
// of the collective being checked: float32 and a corrupt fault pending, which the exchange must
// not inherit.
std::string compare(const Fingerprint& mine, const Fingerprint& theirs, size_t* received = nullptr) {
  ScriptedPeer transport(theirs);
  comm::Position position;
  std::vector<comm::Request> requests;
  comm::CollectiveContext ctx{transport, DType::float32, ReduceOp::sum, position, 1 << 20, false,
                              1,         requests};
  ctx.corrupt_next_receive = true;
  std::string report = comm::compare_fingerprints(ctx, mine);
  if (received) *received = transport.received();
  return report;
}

const Fingerprint kAllReduce{code(CollectiveKind::all_reduce),
                             code(ReduceOp::sum),
                             code(DType::float32),
                             1000,
                             -1,
                             7,
                             code(Algorithm::ring)};
}  // namespace

TEST_CASE("a fingerprint describes the call as the user wrote it", "[fingerprint]") {
  REQUIRE(kAllReduce.describe() == "all_reduce #7 (sum, 1000 x float32, ring)");
  const Fingerprint reduce{code(CollectiveKind::reduce), code(ReduceOp::max), code(DType::int64), 3, 2, 0,
                           code(Algorithm::tree)};
  REQUIRE(reduce.describe() == "reduce #0 (max, 3 x int64, root 2, tree)");
  const Fingerprint scatter{code(CollectiveKind::reduce_scatter),
                            code(ReduceOp::avg),
                            code(DType::bfloat16),
                            8,
                            -1,
                            1,
                            code(Algorithm::native)};
  REQUIRE(scatter.describe() == "reduce_scatter #1 (avg, 8 x bfloat16, native)");
  // Collectives without a reduction carry an op field that means nothing: it is not shown.
  const Fingerprint broadcast{code(CollectiveKind::broadcast),
                              code(ReduceOp::prod),
                              code(DType::float64),
                              5,
                              0,
                              4,
                              code(Algorithm::tree)};
  REQUIRE(broadcast.describe() == "broadcast #4 (5 x float64, root 0, tree)");
  const Fingerprint gather{code(CollectiveKind::all_gather),
                           code(ReduceOp::prod),
                           code(DType::int32),
                           2,
                           -1,
                           9,
                           code(Algorithm::ring)};
  REQUIRE(gather.describe() == "all_gather #9 (2 x int32, ring)");
  // A barrier moves no data: count and dtype would only mislead.
  const Fingerprint barrier{code(CollectiveKind::barrier), 0, 0, 0, -1, 12, code(Algorithm::native)};
  REQUIRE(barrier.describe() == "barrier #12 (native)");
  // The uneven forms: all_gather's counts by their hash; all_to_all's own count differs by rank.
  const Fingerprint uneven{
      code(CollectiveKind::all_gather), 0, code(DType::int8), 10, -1, 3, code(Algorithm::ring), 0xabc};
  REQUIRE(uneven.describe() == "all_gather #3 (10 x int8, counts hash abc, ring)");
  const Fingerprint a2a{code(CollectiveKind::all_to_all), 0,  code(DType::float16),
                        Fingerprint::kPerRankCount,       -1, 5,
                        code(Algorithm::pairwise),        1};
  REQUIRE(a2a.describe() == "all_to_all #5 (uneven counts x float16, counts hash 1, pairwise)");
  const Fingerprint rooted{code(CollectiveKind::gather), 0, code(DType::uint8), 4, 2, 6,
                           code(Algorithm::tree)};
  REQUIRE(rooted.describe() == "gather #6 (4 x uint8, root 2, tree)");
}

TEST_CASE("the uneven all_to_all's counts are compared pair by pair", "[fingerprint]") {
  // As rank 0 of two: rank 1's send_counts are {7, 2}, so rank 0 must expect 7 from it.
  const Fingerprint peer_sends{7, 2, 0, 0, 0, 0, 0, 0};  // only the first two words are read
  for (int64_t expected : {int64_t{7}, int64_t{6}}) {
    ScriptedPeer transport(peer_sends);
    comm::Position position;
    std::vector<comm::Request> requests;
    comm::CollectiveContext ctx{transport, DType::float32, ReduceOp::sum, position, 1 << 20, false,
                                1,         requests};
    const int64_t send[2] = {3, 4}, recv[2] = {3, expected};
    const std::string report = comm::compare_pairwise_counts(ctx, send, recv);
    CAPTURE(report);
    if (expected == 7)
      REQUIRE(report.empty());
    else
      REQUIRE(report ==
              "all_to_all counts mismatch (RINGDP_DEBUG=DETAIL): rank 0 expects 6 elements from rank 1 (its "
              "recv_counts[1]), but rank 1 sends it 7 (its send_counts[0])");
  }
}

TEST_CASE("identical calls on both ranks report nothing", "[fingerprint]") {
  size_t received = 0;
  REQUIRE(compare(kAllReduce, kAllReduce, &received) == "");
  // All eight words came across: the exchange runs on int64 whatever the collective's dtype.
  REQUIRE(received == 8 * sizeof(int64_t));
}

TEST_CASE("a call that differs in any one field is reported with both ranks' calls", "[fingerprint]") {
  Fingerprint other = kAllReduce;
  SECTION("kind") { other.kind = code(CollectiveKind::reduce_scatter); }
  SECTION("op") { other.op = code(ReduceOp::max); }
  SECTION("dtype") { other.dtype = code(DType::float64); }
  SECTION("count") { other.count = 999; }
  SECTION("root") { other.root = 1; }
  SECTION("sequence") { other.sequence = 8; }
  SECTION("algorithm") { other.algorithm = code(Algorithm::shared_memory); }
  SECTION("layout: the counts of an uneven all_gather") { other.layout = 12345; }
  const std::string report = compare(kAllReduce, other);
  CAPTURE(report);
  REQUIRE(report == "collective mismatch (RINGDP_DEBUG=DETAIL): rank 0 called " + kAllReduce.describe() +
                        ", rank 1 called " + other.describe());
}
