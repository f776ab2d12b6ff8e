// A collective on CUDA tensors through the shipped communicator, on a stream of the caller's
// (CollectiveOptions::stream, what the torch backend passes: torch's current stream): the input is
// written on that stream, the result read there, and nothing else orders them. The CPU emulator's
// deferred streams run each order that breaks a missing join every time: the newest stream first
// (the caller's: its read runs before the collective unless the stream waits for it) and the
// oldest first (the legacy stream and the transports' before the caller's: a collective that waits
// on the legacy stream sends the input unwritten, and AVG's division queued there divides before
// the input arrives). With an event recorded at the issue (CollectiveOptions::ready, the torch
// backend's), the collective waits for that event instead. The library's own all-reduce over an
// MPI without CUDA support, and send and recv, go through host copies (comm/execution/
// host_staging.h): the emulator's synchronous copies wait for the default stream only, and one
// from pageable memory to the device lands later on that stream, as in CUDA, so a host copy that
// does not wait for the caller's stream, or a copy back that is not on it, is caught the same way.
// Run by tests/mpi/meson.build under mpirun, 2 ranks on 2 emulated GPUs, with RINGDP_BACKEND=mpi
// and =nccl.
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <vector>

#include "tests/doubles/cuda/cuda_emu.h"
#include "tests/support/mpi_test.h"

using namespace ringdp;
using ringdp::testing::world;

namespace {
// This rank's world, its (emulated) GPU made current: every case's set-up.
comm::Communicator& world_on_device() {
  auto& w = world();
  REQUIRE(w.device().is_cuda());
  REQUIRE(cudaSetDevice(w.device().index) == cudaSuccess);
  return w;
}

cudaStream_t non_blocking_stream() {
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  return stream;
}

// Between the two ranks, `sent` goes one way and comes back into `received` the other (tags `tag`
// and `tag` + 1). Rank 0 sends first, rank 1 receives first: blocking calls pair up.
void exchange(comm::Communicator& w, Tensor& sent, Tensor& received, int tag,
              const comm::CollectiveOptions& options) {
  const int peer = 1 - w.rank();
  if (w.rank() == 0) {
    w.send(sent, peer, tag, options).wait();
    w.recv(received, peer, tag + 1, options).wait();
  } else {
    w.recv(received, peer, tag, options).wait();
    w.send(sent, peer, tag + 1, options).wait();
  }
}

// One call without a caller's stream: an all-reduce by ringdp's algorithm (what 0) or the
// library's (1), or send/recv (2), blocking or `async`; then `reader` (the legacy default stream
// when null) copies the result into pageable memory, a copy that waits for that stream's earlier
// work and no other. How many elements were wrong, over both ranks. A reader of its own first
// waits for the input's copy, which lands in the default stream's order.
int64_t wrong_without_stream(comm::Communicator& w, int what, bool async, cudaStream_t reader, int tag) {
  const int64_t count = 2 * w.size() + 1031;
  std::vector<float> in(static_cast<size_t>(count)), out(in.size(), -1.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>((w.rank() + 1) * (i % 7 + 1));
  Tensor t = empty({count}, DType::float32, w.device());
  Tensor received = what < 2 ? t : empty({count}, DType::float32, w.device());  // in place, or the peer's
  REQUIRE(cudaMemcpy(t.data_ptr(), in.data(), in.size() * sizeof(float), cudaMemcpyHostToDevice) ==
          cudaSuccess);
  if (reader) REQUIRE(cudaStreamSynchronize(nullptr) == cudaSuccess);
  double expected = w.size() * (w.size() + 1) / 2.0;
  if (what < 2) {
    const comm::Algorithm algorithm = what == 0 ? comm::Algorithm::automatic : comm::Algorithm::native;
    w.all_reduce(t, ReduceOp::sum, {.algorithm = algorithm, .async = async}).wait();
  } else {
    exchange(w, t, received, tag, {.async = async});
    expected = (1 - w.rank()) + 1;  // the peer's values
  }
  REQUIRE(cudaMemcpyAsync(out.data(), received.data_ptr(), out.size() * sizeof(float), cudaMemcpyDeviceToHost,
                          reader) == cudaSuccess);
  int64_t wrong = 0;
  for (size_t i = 0; i < out.size(); ++i) wrong += out[i] != static_cast<float>(expected * (i % 7 + 1));
  return testing::global_sum(wrong);
}
}  // namespace

TEST_CASE("a collective on the caller's stream waits for it and is waited for there, AVG included",
          "[stream]") {
  auto& w = world_on_device();
  const Device mine = w.device();
  cudaStream_t caller = non_blocking_stream();
  cudaEvent_t issued = nullptr;
  REQUIRE(cudaEventCreateWithFlags(&issued, cudaEventDisableTiming) == cudaSuccess);
  const int64_t count = 2 * w.size() + 1031;
  using doubles::StreamOrder;
  for (StreamOrder order : {StreamOrder::newest_first, StreamOrder::oldest_first})
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg})
      for (int how = 0; how < 6; ++how) {  // blocking, asynchronous, asynchronous after an event; each
                                           // by ringdp's algorithm and by the library's own
        const bool async = how % 3 > 0, event = how % 3 == 2;
        const comm::Algorithm algorithm = how < 3 ? comm::Algorithm::automatic : comm::Algorithm::native;
        CAPTURE(order == StreamOrder::newest_first ? "newest first" : "oldest first", reduce_op_name(op),
                async, event, comm::algorithm_name(algorithm));
        doubles::set_stream_order(order);
        std::vector<float> in(static_cast<size_t>(count)), out(in.size(), -1.0f);
        for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>((w.rank() + 1) * (i % 7 + 1));
        Tensor t = empty({count}, DType::float32, mine);
        REQUIRE(cudaMemcpyAsync(t.data_ptr(), in.data(), in.size() * sizeof(float), cudaMemcpyHostToDevice,
                                caller) == cudaSuccess);
        if (event) REQUIRE(cudaEventRecord(issued, caller) == cudaSuccess);
        w.all_reduce(
             t, op,
             {.algorithm = algorithm, .async = async, .stream = caller, .ready = event ? issued : nullptr})
            .wait();
        REQUIRE(cudaMemcpyAsync(out.data(), t.data_ptr(), out.size() * sizeof(float), cudaMemcpyDeviceToHost,
                                caller) == cudaSuccess);
        REQUIRE(cudaStreamSynchronize(caller) == cudaSuccess);
        const double ranks = w.size() * (w.size() + 1) / 2.0;
        int64_t wrong = 0;
        for (size_t i = 0; i < out.size(); ++i) {
          const double sum = ranks * static_cast<double>(i % 7 + 1);
          wrong += out[i] != static_cast<float>(op == ReduceOp::avg ? sum * (1.0 / w.size()) : sum);
        }
        CHECK(testing::global_sum(wrong) == 0);
      }
  doubles::set_stream_order(StreamOrder::round_robin);
  REQUIRE(cudaEventDestroy(issued) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(caller) == cudaSuccess);
}

TEST_CASE("a send and a receive of CUDA tensors, through host copies, keep the caller's stream order",
          "[stream]") {
  auto& w = world_on_device();
  REQUIRE(w.size() == 2);
  const Device mine = w.device();
  cudaStream_t caller = non_blocking_stream();
  cudaEvent_t issued = nullptr;
  REQUIRE(cudaEventCreateWithFlags(&issued, cudaEventDisableTiming) == cudaSuccess);
  const int64_t count = 1031;
  const int peer = 1 - w.rank();
  using doubles::StreamOrder;
  for (StreamOrder order : {StreamOrder::newest_first, StreamOrder::oldest_first})
    for (int how = 0; how < 3; ++how) {  // blocking, asynchronous, asynchronous after an event
      const bool async = how > 0, event = how == 2;
      CAPTURE(order == StreamOrder::newest_first ? "newest first" : "oldest first", async, event);
      doubles::set_stream_order(order);
      std::vector<float> in(static_cast<size_t>(count)), out(in.size(), -1.0f);
      for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>((w.rank() + 1) * (i % 7 + 1));
      Tensor sent = empty({count}, DType::float32, mine), received = empty({count}, DType::float32, mine);
      REQUIRE(cudaMemcpyAsync(sent.data_ptr(), in.data(), in.size() * sizeof(float), cudaMemcpyHostToDevice,
                              caller) == cudaSuccess);
      if (event) REQUIRE(cudaEventRecord(issued, caller) == cudaSuccess);
      const comm::CollectiveOptions options{
          .async = async, .stream = caller, .ready = event ? issued : nullptr};
      exchange(w, sent, received, 5, options);
      REQUIRE(cudaMemcpyAsync(out.data(), received.data_ptr(), out.size() * sizeof(float),
                              cudaMemcpyDeviceToHost, caller) == cudaSuccess);
      REQUIRE(cudaStreamSynchronize(caller) == cudaSuccess);
      int64_t wrong = 0;
      for (size_t i = 0; i < out.size(); ++i) wrong += out[i] != static_cast<float>((peer + 1) * (i % 7 + 1));
      CHECK(testing::global_sum(wrong) == 0);
    }
  doubles::set_stream_order(StreamOrder::round_robin);
  REQUIRE(cudaEventDestroy(issued) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(caller) == cudaSuccess);
}

// Without a caller's stream (a C++ program's call, ringdp's own trainer, whose kernels run there)
// the legacy default stream is the caller's (CollectiveOptions::stream): work queued there once the
// call completes reads the result, as with NCCL on stream 0. A reader on a non-blocking stream of
// its own orders itself after the default stream, as CUDA asks of any such reader. Under both
// extreme stream orders: a missing join of the default stream reads the input.
TEST_CASE("without a caller's stream, work on the default stream reads the result once the call completes",
          "[stream]") {
  auto& w = world_on_device();
  REQUIRE(w.size() == 2);
  using doubles::StreamOrder;
  for (StreamOrder order : {StreamOrder::newest_first, StreamOrder::oldest_first})
    for (int how = 0; how < 6; ++how) {  // each call, blocking and asynchronous
      CAPTURE(order == StreamOrder::newest_first ? "newest first" : "oldest first", how / 2, how % 2);
      doubles::set_stream_order(order);
      CHECK(wrong_without_stream(w, how / 2, how % 2 == 1, nullptr, 7) == 0);
    }
  doubles::set_stream_order(StreamOrder::round_robin);
}

// With RINGDP_BLOCKING_WAIT=1 (CommOptions::blocking_wait) the host waits for the device before a
// call completes, so a reader on any stream sees the result, through host copies too (a copy back
// from pageable memory may land after it returns). Run by tests/mpi/meson.build with that setting.
TEST_CASE("with blocking_wait, a CUDA tensor holds the result once the call completes", "[.blocking]") {
  auto& w = world_on_device();
  REQUIRE(w.size() == 2);
  cudaStream_t reader = non_blocking_stream();
  for (int how = 0; how < 6; ++how) {  // as the case above
    CAPTURE(how / 2, how % 2);
    CHECK(wrong_without_stream(w, how / 2, how % 2 == 1, reader, 9) == 0);
  }
  REQUIRE(cudaStreamDestroy(reader) == cudaSuccess);
}
