// CommOptions (what a communicator is created with) and CollectiveOptions (what one call asks
// for), and the RINGDP_* variables that override the caller's options (core/settings.h).
// Tested by tests/unit/test_settings.cpp and, under mpirun, tests/mpi/test_collectives.cpp.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <limits>
#include <string>

#include "comm/types.h"

namespace ringdp::comm {

struct CommOptions {
  /// Deadline of each collective; RINGDP_TIMEOUT (seconds) overrides the default.
  std::chrono::milliseconds timeout = std::chrono::seconds(300);
  /// What a collective past its timeout does: false (ringdp's programs) prints the watchdog's
  /// report and ends the job; true (the torch backend, as gloo) throws the report as an Error
  /// from the waiting call and breaks the communicator: every later call fails naming it.
  bool timeout_raises = false;
  /// The rank this process asks for in the world (torch's rank), -1 for MPI's own. The ranks asked
  /// for must be a permutation of 0..size-1, else every rank throws the same Error naming the
  /// first rank asked for twice or out of range; the world is MPI's, ordered by them.
  int rank = -1;
  /// Ring pipelining unit; 0 = automatic: 1 MiB when this node's ranks each have a core,
  /// 64 KiB when they share cores (measured: docs/benchmarks.md). RINGDP_SEGMENT_BYTES overrides.
  /// Under MPI this and every threshold below are agreed at init: the minimum over ranks
  /// (comm/world/discovery.cpp).
  size_t segment_bytes = 0;
  /// all_reduce with `auto` uses recursive doubling up to this many bytes, Rabenseifner's or the
  /// ring above (measured: docs/collectives.md); RINGDP_RD_MAX_BYTES overrides.
  size_t recursive_doubling_max_bytes = 32 * 1024;
  /// Above that, with 4 ranks or more, `auto` uses Rabenseifner's all-reduce (recursive halving
  /// and doubling) up to this many bytes, the ring above (host tensors; measured on 3 and 4
  /// ranks: docs/lab/benchmarks.md, "Rabenseifner"); RINGDP_RABENSEIFNER_MAX_BYTES overrides, 0 = never.
  size_t rabenseifner_max_bytes = 2 * 1024 * 1024;
  /// Before all of those: with every rank on one host, `auto` reduces out of shared memory
  /// (comm/transport/shm/shared_slots.h) up to this many bytes (host tensors): by default at every size,
  /// where it beat the others from 8 B to 64 MiB on 2 and 4 ranks (docs/benchmarks.md, "Shared memory for
  /// large messages"). RINGDP_SHM_MAX_BYTES overrides, 0 = never.
  size_t shared_memory_max_bytes = std::numeric_limits<size_t>::max();
  /// A shared-memory round (up to shared_memory_slot_bytes) of at least this many bytes is scattered: each
  /// rank reduces one chunk and copies the others' (comm/algorithms/all_reduce_shared.cpp); smaller rounds
  /// have every rank reduce everything. RINGDP_SHM_SCATTER_MIN_BYTES overrides.
  size_t shared_memory_scatter_min_bytes = 16 * 1024;
  /// The most one rank's part holds in one shared-memory round (each rank maps two such slots);
  /// a multiple of 64. RINGDP_SHM_SLOT_BYTES overrides.
  size_t shared_memory_slot_bytes = 256 * 1024;
  /// broadcast with `auto` uses the binomial tree up to this many bytes, the pipelined chain
  /// (`ring`) above; RINGDP_CHAIN_MIN_BYTES overrides.
  size_t chain_broadcast_min_bytes = 8 * 1024 * 1024;
  /// A world of one even under mpirun (tests of the local path).
  bool force_local = false;
  /// Transport for CUDA tensors: "auto" (NCCL when built in, else MPI through host staging),
  /// "mpi" or "nccl". Host tensors always travel over MPI.
  Backend backend = Backend::automatic;
  /// Host tensors' messages under an MPI launcher: MPI, or UCX with MPI only starting the job
  /// (ringdp-bench and ringdp-train --backend ucx). RINGDP_TRANSPORT overrides.
  HostTransport host_transport = HostTransport::mpi;
  /// CUDA tensors: a collective returns once its work is enqueued and the caller's stream waits
  /// for it (the host does not), and a watchdog thread enforces the timeout. true (or
  /// RINGDP_BLOCKING_WAIT=1) makes every collective block the host until the GPU is done.
  bool blocking_wait = false;
  /// The thread level ringdp asks for when it initialises MPI (a program that initialised MPI
  /// itself keeps its own). multiple gives each communicator its own worker and lets independent
  /// groups progress independently (comm/execution/call_queue.h); an MPI that provides only serialized is
  /// taken, with one queue for all. serialized asks for no more than that. single is for programs
  /// that issue no asynchronous call: Open MPI then takes no locks, about 0.45 us less per small
  /// call on 2 ranks here (docs/benchmarks.md), and every call, an async one too, runs on the
  /// caller's thread. RINGDP_MPI_THREAD=multiple|serialized|single overrides.
  MpiThread mpi_thread = MpiThread::multiple;
};

struct CollectiveOptions {
  Algorithm algorithm = Algorithm::automatic;
  bool async = false;  ///< return at once; the Work completes when the collective has run
  /// CUDA tensors: the caller's stream (a cudaStream_t; null: the legacy default stream). The
  /// collective waits for what is already enqueued there, and work enqueued there after the
  /// call's Work completes runs after the collective (as torch's current stream with NCCL).
  /// Ignored for host tensors.
  void* stream = nullptr;
  /// CUDA tensors: an event (a cudaEvent_t) the caller recorded on `stream` when it issued the
  /// call; the collective waits for it instead of for the stream. An asynchronous call starts on
  /// ringdp's worker later, when the stream may hold later work (a later collective of another
  /// communicator's, whose peers may run them in the other order: a cycle on the GPU).
  void* ready = nullptr;
};

/// The longest collective timeout: a deadline is now + timeout on a steady clock of 64-bit
/// nanoseconds, which a longer one (RINGDP_TIMEOUT=9999999999) overflowed into the past, ending the
/// job at its first collective.
inline constexpr std::chrono::seconds kMaxTimeout{100'000'000};  // a little over 3 years

/// How many fields every rank must agree on (agreed_fields).
inline constexpr size_t kAgreedFields = 7;
/// The fields that shape messages or pick algorithms yet come from each rank's environment and
/// node (a sender's 1 MiB segment into a receiver's 64 KiB receive fails every ring), in one order
/// for every bootstrap: each takes the minimum over ranks (MPI's agreement, the store's
/// introduction). The last sets every shared-memory round's length.
std::array<size_t*, kAgreedFields> agreed_fields(CommOptions& options);
/// segment_bytes where it is unset (0): ranks that share cores progress only while scheduled, so
/// small segments keep each time slice useful (64 KiB); ranks with a core each do better with
/// fewer, larger messages (1 MiB).
size_t default_segment_bytes(bool oversubscribed);

/// `options` with the RINGDP_* variables that are set applied over them (the environment wins: it
/// is how a user changes a deadline without a rebuild), each checked; an Error names the first bad one.
CommOptions with_environment(CommOptions options);

}  // namespace ringdp::comm
