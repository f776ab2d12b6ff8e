// Two ranks send each other BYTES at the same time, as every step of a two-rank all-reduce does,
// once as one message each way and once as PIECES messages: raw MPI, no ringdp. Across hosts this
// shows what a single large message costs on Open MPI's TCP BTL, and (MODE) which of the habits
// of ringdp's transport costs the link's rate (docs/lab/benchmarks.md, "The link's rate across hosts").
// Ranks beyond the first two wait at the barriers.
// Usage: mpirun -np 2 ringdp-mpi-duplex [BYTES [PIECES [ITERS [MODE]]]] (defaults 16 MiB, 16, 5,
// waitall). MODE:
//   waitall   every receive posted, then every send, one MPI_Waitall
//   in-order  the same posts; the receives waited for one by one in order (MPI_Test and a yield
//             per poll, as ringdp's wait loop), then the sends
//   early     a 16-byte envelope ahead of each piece on a second communicator (as ringdp's
//             transport sends a message over 1 KiB), every receive still posted up front; waited
//             for in order as in-order
//   envelope  as ringdp's transport sends a message over 1 KiB: a 16-byte envelope ahead of each
//             piece, the piece on a second communicator, its receive posted only once its
//             envelope has arrived; waited for in order as in-order
// Prints, per way of sending, the mean time per exchange (after one warm-up) and MB/s each way.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>
#include <thread>
#include <vector>

namespace {
enum class Mode { waitall, in_order, envelope, early };

// One exchange's requests and buffers; the envelope mode's receives are posted as envelopes land.
struct Exchange {
  int peer = 0;
  Mode mode = Mode::waitall;
  std::vector<char>* in = nullptr;
  MPI_Comm envelopes = MPI_COMM_NULL, payloads = MPI_COMM_NULL;
  long piece = 1;
  std::vector<MPI_Request> receives{}, sends{}, envelope_in{}, envelope_out{};
  std::vector<long> envelope_words{}, arrived_words{};
  std::deque<size_t> pending{};  // pieces whose envelope has not arrived, in order

  int length(size_t k) const {
    const long at = static_cast<long>(k) * piece, bytes = static_cast<long>(in->size());
    return static_cast<int>(bytes - at < piece ? bytes - at : piece);
  }
  // Posts the payload receives whose envelopes have arrived, in order (ringdp's TwoPartMessages::advance).
  void advance() {
    while (!pending.empty()) {
      const size_t k = pending.front();
      int arrived = 0;
      MPI_Test(&envelope_in[k], &arrived, MPI_STATUS_IGNORE);
      if (!arrived) return;
      MPI_Irecv(in->data() + k * piece, length(k), MPI_BYTE, peer, 1, payloads, &receives[k]);
      pending.pop_front();
    }
  }
  // Waits for receive k the way ringdp's transport does: test, else yield, and post what arrived.
  void poll(size_t k) {
    for (;;) {
      if (mode == Mode::envelope) advance();
      const bool posted = pending.empty() || pending.front() > k;
      int done = 0;
      if (posted) MPI_Test(&receives[k], &done, MPI_STATUS_IGNORE);
      if (done) return;
      std::this_thread::yield();
    }
  }
};

// One exchange of `bytes` each way in `pieces` messages (the last takes the remainder); seconds.
double exchange(Exchange& x, std::vector<char>& out, long pieces) {
  const long bytes = static_cast<long>(out.size());
  x.piece = (bytes + pieces - 1) / pieces;
  const size_t n = static_cast<size_t>((bytes + x.piece - 1) / x.piece);
  for (auto* v : {&x.receives, &x.sends, &x.envelope_in, &x.envelope_out}) v->assign(n, MPI_REQUEST_NULL);
  x.envelope_words.assign(2 * n, 0);
  x.arrived_words.assign(2 * n, 0);
  x.pending.clear();
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (size_t k = 0; k < n; ++k) {
    if (x.mode == Mode::envelope || x.mode == Mode::early)
      MPI_Irecv(&x.arrived_words[2 * k], 2, MPI_LONG, x.peer, 0, x.envelopes, &x.envelope_in[k]);
    if (x.mode == Mode::envelope) {
      x.pending.push_back(k);
    } else {
      MPI_Irecv(x.in->data() + k * x.piece, x.length(k), MPI_BYTE, x.peer, 1, x.payloads, &x.receives[k]);
    }
  }
  for (size_t k = 0; k < n; ++k) {
    if (x.mode == Mode::envelope || x.mode == Mode::early) {
      x.envelope_words[2 * k] = x.length(k);
      MPI_Isend(&x.envelope_words[2 * k], 2, MPI_LONG, x.peer, 0, x.envelopes, &x.envelope_out[k]);
    }
    MPI_Isend(out.data() + k * x.piece, x.length(k), MPI_BYTE, x.peer, 1, x.payloads, &x.sends[k]);
  }
  if (x.mode == Mode::waitall) {
    MPI_Waitall(static_cast<int>(n), x.receives.data(), MPI_STATUSES_IGNORE);
  } else {
    for (size_t k = 0; k < n; ++k) x.poll(k);
  }
  MPI_Waitall(static_cast<int>(n), x.sends.data(), MPI_STATUSES_IGNORE);
  MPI_Waitall(static_cast<int>(n), x.envelope_out.data(), MPI_STATUSES_IGNORE);
  MPI_Waitall(static_cast<int>(n), x.envelope_in.data(), MPI_STATUSES_IGNORE);
  return MPI_Wtime() - start;
}

bool parse_mode(const char* text, Mode& mode) {
  const std::string name = text;
  if (name == "waitall")
    mode = Mode::waitall;
  else if (name == "in-order")
    mode = Mode::in_order;
  else if (name == "envelope")
    mode = Mode::envelope;
  else if (name == "early")
    mode = Mode::early;
  else
    return false;
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long bytes = argc > 1 ? std::atol(argv[1]) : 16L << 20;
  const long pieces = argc > 2 ? std::atol(argv[2]) : 16;
  const int iters = argc > 3 ? std::atoi(argv[3]) : 5;
  Mode mode = Mode::waitall;
  const bool mode_ok = argc <= 4 || parse_mode(argv[4], mode);
  if (size < 2 || bytes <= 0 || bytes > (1L << 30) || pieces < 1 || pieces > bytes || iters < 1 || !mode_ok) {
    if (rank == 0)
      std::fprintf(
          stderr,
          "ringdp-mpi-duplex: expected 2+ ranks (got %d), BYTES 1 to 1 GiB (got %ld), PIECES 1 to "
          "BYTES (got %ld), ITERS 1+ (got %d), MODE waitall, in-order, early or envelope (got '%s')\n",
          size, bytes, pieces, iters, argc > 4 ? argv[4] : "waitall");
    MPI_Finalize();
    return 2;
  }
  std::vector<char> out(static_cast<size_t>(bytes), 1), in(static_cast<size_t>(bytes));
  Exchange x{.peer = 1 - rank, .mode = mode, .in = &in};
  MPI_Comm_dup(MPI_COMM_WORLD, &x.envelopes);
  MPI_Comm_dup(MPI_COMM_WORLD, &x.payloads);
  for (long split : {1L, pieces}) {
    double total = 0;
    for (int i = 0; i <= iters; ++i) {
      if (rank >= 2) {
        MPI_Barrier(MPI_COMM_WORLD);
        continue;
      }
      const double t = exchange(x, out, split);
      if (i > 0) total += t;
    }
    if (rank == 0)
      std::printf("%s: %ld bytes each way as %ld message(s): %.1f ms, %.1f MB/s each way\n",
                  argc > 4 ? argv[4] : "waitall", bytes, split, 1e3 * total / iters,
                  bytes / (total / iters) / 1e6);
  }
  MPI_Comm_free(&x.envelopes);
  MPI_Comm_free(&x.payloads);
  MPI_Finalize();
  return 0;
}
