// Implements apps/train/explain.h (the contract is documented there). The step runs once
// (take_step, which tells chapter 1 as DDP's constructor broadcasts); chapters 2 to 4 are told
// from what it recorded. Every function here runs on every rank, so the collectives match, and
// prints on rank 0 only. Tested by tests/cli/train.sh (case explain).
#include "apps/train/explain.h"
#include "apps/train/agreement.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "apps/train/csv.h"
#include "autograd/functions.h"
#include "autograd/optim/sgd.h"
#include "comm/ddp/distributed_data_parallel.h"
#include "comm/ddp/distributed_sampler.h"

namespace ringdp::train {

namespace {
using NamedParameters = std::vector<std::pair<std::string, Tensor>>;

// Every rank's values, rank-major: rank r's `mine` at [r·n, (r+1)·n). Every rank must call it.
std::vector<double> gather(comm::Communicator& comm, const std::vector<double>& mine) {
  const auto n = static_cast<int64_t>(mine.size());
  Tensor out = zeros({n * comm.size()}, DType::float64);
  comm.all_gather(from_vector(mine, {n}, DType::float64), out);
  return out.to_vector();
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

// One row of values per rank, right-aligned under "rank r" headings.
std::string row(const std::vector<double>& values, int first, int N) {
  std::string out;
  for (int r = 0; r < N; ++r) {
    char cell[24];
    std::snprintf(cell, sizeof cell, "%12s", number(values[first + r]).c_str());
    out += cell;
  }
  return out;
}

// What the step observer saw of one element, on this rank: its value as each step began.
struct Observed {
  std::mutex mutex;
  int64_t all_reduces = 0;  // seen since the observer was set
  int64_t current = -1;  // sequence of the all-reduce running now
  int64_t collective = -1;  // sequence of the all-reduce being followed
  int steps = 0;
  std::vector<double> before_step;  // [k]: value as step k+1 began; [steps]: after the last
  std::vector<comm::Phase> phases;  // [k]: phase of step k+1
  std::vector<bool> took_part;
  std::vector<float> bucket_before;  // the followed bucket before its all-reduce: this rank's part
};

// What this rank recorded of the step, for the chapters told after it. The followed element is
// element 0 of the last layer's bias: bucket 0 holds it.
struct StepRecord {
  std::string followed;
  int bucket = 0;
  int64_t offset = 0;  // elements into the bucket
  size_t bucket_bytes = 0;
  std::vector<ddp::DdpEvent> events;  // rank 0's hooks and launches, as they happened
  int64_t batch = 0;
  double loss = 0;
  double real_gradient = 0;  // before make_gradient_legible replaced it
  double averaged = 0;  // after the all-reduce
  double param_before = 0, param_after = 0;  // around sgd.step()
  Tensor bucket_after;  // the followed bucket after the all-reduce, a copy
};

// Each rank starts from its own initial weights (seed + rank), as if it had initialized them
// independently, so the broadcast visibly makes rank 0's the ones everybody trains.
std::shared_ptr<autograd::Module> build_own_model(const TrainConfig& config, int rank, int64_t features) {
  TrainConfig own = config;
  own.seed = config.seed + static_cast<uint64_t>(rank);
  return build_model(own, features, Device::cpu());
}

void print_broadcasts(const TrainConfig& config, comm::Communicator& comm, const NamedParameters& named) {
  const int N = comm.size();
  std::printf("ringdp-train --explain: one real DDP step of the %s model on %d rank%s, told by rank 0.\n\n",
              config.model.c_str(), N, N == 1 ? "" : "s");
  std::printf(
      "1. The same start. Each rank built its own initial weights (seed + rank); DDP's constructor\n"
      "   broadcasts rank 0's to every rank before the first forward:\n");
  for (const auto& [name, p] : named)
    std::printf(
        "     %-10s %-10s %6lld B  %s\n", name.c_str(), shape_str(p.shape()).c_str(),
        static_cast<long long>(p.nbytes()),
        comm.explain_choice(comm::CollectiveKind::broadcast, p.nbytes(), comm::Algorithm::automatic).c_str());
}

// A hook registered before DDP's runs first: it keeps the real gradient value and puts 10^r
// there instead, so the sums in the table read digit by digit (1 + 10 + 100 = 111).
uint64_t make_gradient_legible(Tensor& param, int rank, int N, double& real_gradient) {
  const double legible = N <= 7 ? std::pow(10.0, rank) : static_cast<double>(rank + 1);
  return param.register_hook([legible, &real_gradient](Tensor& p) {
    Tensor grad = p.grad();
    real_gradient = grad.to_vector()[0];
    grad.data<float>()[0] = static_cast<float>(legible);
  });
}

// The observer runs on the communicator's worker: it follows the bucket-th all-reduce after
// backward begins (DDP launches buckets in index order, and nothing else all-reduces then).
void observe_bucket(comm::Communicator& comm, int bucket, const Tensor& buffer, int64_t offset,
                    Observed& seen) {
  const float* watched = buffer.data<float>() + offset;
  const float* first = buffer.data<float>();
  const int64_t count = buffer.numel();
  comm.set_step_observer([bucket, watched, first, count, &seen](const comm::Position& where) {
    if (where.kind != comm::CollectiveKind::all_reduce) return;
    std::lock_guard lock(seen.mutex);
    if (static_cast<int64_t>(where.sequence) != seen.current) {
      seen.current = static_cast<int64_t>(where.sequence);
      if (seen.all_reduces++ == bucket) {
        seen.collective = seen.current;
        seen.steps = where.steps;
        seen.before_step.assign(where.steps + 1, std::nan(""));
        seen.phases.assign(where.steps, comm::Phase::none);
        seen.took_part.assign(where.steps, false);
        // The first call for this collective on this rank: a rank that sits out the first steps
        // is first called later, its part still untouched.
        seen.bucket_before.assign(first, first + count);
      }
    }
    if (seen.current != seen.collective || where.step < 1 || where.step > seen.steps + 1) return;
    seen.before_step[where.step - 1] = *watched;
    if (where.step <= seen.steps) {
      seen.phases[where.step - 1] = where.phase;
      seen.took_part[where.step - 1] = true;
    }
  });
}

// Forward and DDP's backward on this rank's first batch of epoch 0; returns the batch size.
int64_t forward_backward(const TrainConfig& config, const Dataset& data, const comm::Communicator& comm,
                         ddp::DistributedDataParallel& ddp, optim::SGD& sgd, Tensor& loss) {
  ddp::DistributedSampler sampler(data.features.size(0), comm.rank(), comm.size(), config.shuffle,
                                  config.seed);
  sampler.set_epoch(0);
  const std::vector<int64_t> mine = sampler.indices();
  const int64_t batch =
      config.batch_size > 0 ? std::min(config.batch_size, sampler.shard_size()) : sampler.shard_size();
  Tensor x, y;
  gather_batch(data, std::vector<int64_t>(mine.begin(), mine.begin() + batch), DType::float32, Device::cpu(),
               x, y);
  sgd.zero_grad();
  loss = autograd::mse_loss(ddp(x), y);
  ddp.backward(loss);
  return batch;
}

// The step itself, and chapter 1 told as DDP's constructor broadcasts; `seen` gets the followed
// element's value as each step of its all-reduce began.
StepRecord take_step(const TrainConfig& config, const std::shared_ptr<comm::Communicator>& communicator,
                     const Dataset& data, Observed& seen) {
  comm::Communicator& comm = *communicator;
  const int N = comm.size(), rank = comm.rank();
  auto model = build_own_model(config, rank, data.features.size(1));
  const NamedParameters named = model->named_parameters();
  Tensor first_param = named.front().second;
  Tensor followed_param = named.back().second;
  StepRecord step;
  step.followed = named.back().first;
  if (rank == 0) print_broadcasts(config, comm, named);
  const std::vector<double> before_broadcast = gather(comm, {first_param.to_vector()[0]});
  const uint64_t legible_hook = make_gradient_legible(followed_param, rank, N, step.real_gradient);
  ddp::DistributedDataParallel ddp(model, communicator,
                                   {.bucket_cap_mb = config.bucket_mb,
                                    .first_bucket_mb = config.first_bucket_mb,
                                    .algorithm = config.algorithm,
                                    .overlap = config.overlap,
                                    .on_event = [&](const ddp::DdpEvent& e) { step.events.push_back(e); }});
  const std::vector<double> after_broadcast = gather(comm, {first_param.to_vector()[0]});
  if (rank == 0) {
    std::printf(
        "   element 0 of %s, rank by rank:\n     before the broadcast %s\n     after the broadcast  %s\n\n",
        named.front().first.c_str(), row(before_broadcast, 0, N).c_str(), row(after_broadcast, 0, N).c_str());
  }
  std::tie(step.bucket, step.offset) = ddp.locate(step.followed);
  step.bucket_bytes = ddp.bucket_buffer(step.bucket).nbytes();
  observe_bucket(comm, step.bucket, ddp.bucket_buffer(step.bucket), step.offset, seen);
  optim::SGD sgd(model->parameters(),
                 optim::SGDOptions(config.lr).momentum(config.momentum).weight_decay(config.weight_decay));
  Tensor loss;
  step.batch = forward_backward(config, data, comm, ddp, sgd, loss);
  comm.set_step_observer({});
  followed_param.remove_hook(legible_hook);
  step.loss = loss.item();
  step.averaged = followed_param.grad().to_vector()[0];
  step.bucket_after = ddp.bucket_buffer(step.bucket).clone();
  step.param_before = followed_param.to_vector()[0];
  sgd.step();
  step.param_after = followed_param.to_vector()[0];
  return step;
}

void print_events(const TrainConfig& config, comm::Communicator& comm,
                  const std::vector<ddp::DdpEvent>& events) {
  for (const ddp::DdpEvent& e : events) {
    if (e.kind == ddp::DdpEvent::Kind::hook) {
      std::printf("     %8.3f ms  hook %-10s -> bucket %d at offset %lld (%lld element%s)\n", e.seconds * 1e3,
                  e.parameter.c_str(), e.bucket, static_cast<long long>(e.offset),
                  static_cast<long long>(e.elements), e.elements == 1 ? "" : "s");
    } else if (e.kind == ddp::DdpEvent::Kind::launch) {
      std::printf("     %8.3f ms  bucket %d full: all-reduce (avg) of %lld float32 launched; %s\n",
                  e.seconds * 1e3, e.bucket, static_cast<long long>(e.elements),
                  comm.explain_choice(comm::CollectiveKind::all_reduce, static_cast<size_t>(e.bytes),
                                      config.algorithm)
                      .c_str());
    }
  }
}

// Chapter 2 (the losses, the hooks and launches) and the opening of chapter 3.
void tell_backward(const TrainConfig& config, comm::Communicator& comm, const StepRecord& step) {
  const int N = comm.size();
  const std::vector<double> losses = gather(comm, {step.loss});
  const std::vector<double> reals = gather(comm, {step.real_gradient});
  if (comm.rank() != 0) return;
  std::printf("2. Forward and backward, each rank on its own %lld samples. Loss per rank:\n     %s\n",
              static_cast<long long>(step.batch), row(losses, 0, N).c_str());
  std::printf(
      "   Rank 0's gradient hooks and bucket launches, in the order they happened\n"
      "   (milliseconds since backward began):\n");
  print_events(config, comm, step.events);
  std::printf(
      "\n3. One gradient through the all-reduce: element 0 of %s's gradient, bucket %d offset %lld.\n",
      step.followed.c_str(), step.bucket, static_cast<long long>(step.offset));
  std::printf(
      "   Its real values %s; --explain puts 10^rank there\n"
      "   instead so the partial sums read digit by digit.\n",
      row(reals, 0, N).c_str());
}

// Every rank's column of the step table, gathered rank-major: `values` holds steps + 1 per rank,
// `took_part` steps per rank (1 or 0).
struct StepTable {
  int steps = 0;
  std::vector<double> values;
  std::vector<double> took_part;
};

// Each rank's column: its value as each step began, then after the last. A rank that sits
// steps out (recursive doubling's fold on N not a power of two) is not observed as they begin;
// its buffer does not change until the next step it takes part in, where it is observed again.
StepTable gather_step_table(comm::Communicator& comm, const Observed& seen) {
  const int steps = seen.steps;
  const std::vector<double> all_steps = gather(comm, {static_cast<double>(steps)});
  for (double s : all_steps)
    RINGDP_CHECK(static_cast<int>(s) == steps, "--explain: rank 0 counted ", steps, " steps, another rank ",
                 s);
  std::vector<double> column(seen.before_step.begin(), seen.before_step.end());
  for (size_t k = column.size() - 1; k-- > 0;)
    if (std::isnan(column[k])) column[k] = column[k + 1];
  std::vector<double> part(seen.took_part.begin(), seen.took_part.end());
  StepTable table;
  table.steps = steps;
  table.values = gather(comm, column);
  table.took_part = gather(comm, part);
  return table;
}

void print_step_table(const StepTable& table, const std::vector<comm::Phase>& phases,
                      const std::vector<double>& finals, int N, const std::string& final_label) {
  const int steps = table.steps;
  const auto at = [&](int r, int k) { return table.values[r * (steps + 1) + k]; };
  std::printf("\n   %-28s", "");
  for (int r = 0; r < N; ++r) std::printf("%12s", ("rank " + std::to_string(r)).c_str());
  std::printf("\n   %-28s", "before the all-reduce");
  for (int r = 0; r < N; ++r) std::printf("%12s", number(at(r, 0)).c_str());
  for (int k = 0; k < steps; ++k) {
    char label[64];
    std::snprintf(label, sizeof label, "after step %d/%d %s", k + 1, steps, comm::phase_name(phases[k]));
    std::printf("\n   %-28s", label);
    for (int r = 0; r < N; ++r) {
      const bool idle = table.took_part[r * steps + k] == 0;
      std::printf("%12s", (number(at(r, k + 1)) + (idle ? "*" : "")).c_str());
    }
  }
  std::printf("\n   %-28s%s\n", final_label.c_str(), row(finals, 0, N).c_str());
  bool any_idle = false;
  for (double p : table.took_part) any_idle = any_idle || p == 0;
  if (any_idle) std::printf("   (* this rank sat the step out and kept its value)\n");
}

// Why the values moved as they did, for the algorithms whose table alone does not say.
void print_algorithm_notes(comm::Algorithm used, const std::vector<comm::Phase>& phases, int N) {
  if (used == comm::Algorithm::ring || used == comm::Algorithm::rabenseifner)
    std::printf(
        "   (%s divides by %d where a sum completes: the rank that finishes a chunk divides it\n"
        "   before the all-gather copies it on, so the others receive the average)\n",
        comm::algorithm_name(used), N);
  if (used != comm::Algorithm::shared_memory) return;
  // Which rounds ran is read off the steps observed, not worked out again from the sizes:
  // rounds of at least RINGDP_SHM_SCATTER_MIN_BYTES are scattered, smaller ones whole, and a
  // bucket over one slot whose last round is short has both.
  bool whole_round = false, scattered_round = false;
  for (comm::Phase phase : phases) {
    whole_round = whole_round || phase == comm::Phase::shared_memory;
    scattered_round = scattered_round || phase == comm::Phase::reduce_scatter;
  }
  if (!scattered_round)
    std::printf(
        "   (shared_memory: the ranks share one host, so each copies its part into its slot in a\n"
        "   shared-memory window and reads all %d parts straight from the others' slots, summing\n"
        "   them in rank order: one step, no message, the same bits on every rank;\n"
        "   --algo recursive_doubling shows the exchanges instead)\n",
        N);
  else
    std::printf(
        "   (shared_memory, scattered: the ranks share one host, so each copies its part into its\n"
        "   slot in a shared-memory window; rank r sums chunk r of all %d parts in rank order and\n"
        "   writes it back into its own slot, and every rank copies the others' sums: no message,\n"
        "   the same bits on every rank)\n",
        N);
  if (scattered_round && whole_round)
    std::printf(
        "   (the bucket takes more than one slot's round; its last round is under\n"
        "   RINGDP_SHM_SCATTER_MIN_BYTES, so every rank reads all %d parts of it whole)\n",
        N);
}

// Whether every rank's result is the average of the "before" row, the ranks' own values: the
// reference is computed here, not by the all-reduce it checks.
bool averages_agree(const StepTable& table, const std::vector<double>& finals, int N) {
  double sum = 0;
  for (int r = 0; r < N; ++r) sum += table.values[r * (table.steps + 1)];
  bool agree = true;
  for (double v : finals) agree = agree && std::abs(v - sum / N) <= 1e-6 * std::max(1.0, std::abs(sum / N));
  return agree;
}

// Chapter 3's table: the followed element before the all-reduce, after each step, averaged.
// Returns whether the result is the average (every rank gets the same answer).
bool tell_all_reduce(const TrainConfig& config, comm::Communicator& comm, const StepRecord& step,
                     const Observed& seen) {
  // A world of one exchanges nothing: no step to tabulate (the table's loops assumed one, and
  // --explain on one rank crashed).
  if (seen.steps == 0) {
    if (comm.rank() == 0)
      std::printf(
          "\n   one rank, so the all-reduce has nothing to exchange: the average is %s, this rank's own\n",
          number(step.averaged).c_str());
    return true;
  }
  const StepTable table = gather_step_table(comm, seen);
  const std::vector<double> finals = gather(comm, {step.averaged});
  const int N = comm.size();
  const bool agree = averages_agree(table, finals, N);
  if (comm.rank() != 0) return agree;
  // The label says what the row is, so a sum left undivided is not called an average.
  print_step_table(table, seen.phases, finals, N,
                   agree ? "averaged (sum / " + std::to_string(N) + ")" : "after the all-reduce");
  if (!agree)
    std::printf("   WRONG: that is not the average of the row \"before the all-reduce\" on every rank\n");
  print_algorithm_notes(comm.resolve(comm::CollectiveKind::all_reduce, step.bucket_bytes, config.algorithm),
                        seen.phases, N);
  return agree;
}

// Elements of the followed bucket that differ from MPI's own all-reduce (native) of the same
// inputs, counted on this rank; `first` gets the first one. An independent reference: identical
// results on every rank prove only that the ranks agree, and a wrong schedule agrees with itself.
int64_t bucket_mismatches(comm::Communicator& comm, const StepRecord& step, const Observed& seen,
                          std::string& first) {
  const int64_t n = step.bucket_after.numel();
  std::vector<double> mine(seen.bucket_before.begin(), seen.bucket_before.end());
  mine.resize(n, std::nan(""));  // an observer that missed the first step makes every element wrong
  // The average of the magnitudes sizes the tolerance: float32 sums in another order differ by a
  // few units of rounding of the terms, not of a result that cancelled to near zero.
  std::vector<double> magnitudes(n);
  std::transform(mine.begin(), mine.end(), magnitudes.begin(), [](double v) { return std::abs(v); });
  Tensor reference = from_vector(mine, {n}, DType::float64),
         scale = from_vector(magnitudes, {n}, DType::float64);
  comm.all_reduce(reference, ReduceOp::avg, {.algorithm = comm::Algorithm::native});
  comm.all_reduce(scale, ReduceOp::avg, {.algorithm = comm::Algorithm::native});
  const std::vector<double> want = reference.to_vector(), got = step.bucket_after.to_vector();
  const std::vector<double> size = scale.to_vector();
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (std::abs(got[i] - want[i]) <= 1e-6 * size[i] + 1e-30) continue;
    if (wrong++ == 0)
      first = "element " + std::to_string(i) + " is " + number(got[i]) + ", MPI_Allreduce gives " +
              number(want[i]);
  }
  return wrong;
}

// Chapter 4: the update, and the checks that it left every rank with the same parameter and that
// the all-reduce it used was right.
void tell_update(const TrainConfig& config, comm::Communicator& comm, const StepRecord& step,
                 const Observed& seen, bool averages_right) {
  if (comm.rank() == 0)
    std::printf("\n4. SGD, the same on every rank: %s[0] = %s - lr %s x %s = %s\n", step.followed.c_str(),
                number(step.param_before).c_str(), number(config.lr).c_str(), number(step.averaged).c_str(),
                number(step.param_after).c_str());
  const std::vector<double> params = gather(comm, {step.param_after});
  bool same = true;
  for (double v : params) same = same && v == params[0];
  std::string first;
  const int64_t mine = comm.size() > 1 && seen.steps > 0 ? bucket_mismatches(comm, step, seen, first) : 0;
  const std::vector<double> wrong = gather(comm, {static_cast<double>(mine)});
  const double wrong_total = std::accumulate(wrong.begin(), wrong.end(), 0.0);
  if (comm.rank() == 0) {
    std::printf("   after the step, %s[0] on every rank: %s (%s)\n", step.followed.c_str(),
                row(params, 0, comm.size()).c_str(),
                !same                                  ? "DIFFERENT"
                : (averages_right && wrong_total == 0) ? "identical"
                                                       : "identical, but wrong");
    if (wrong_total > 0)
      std::printf("   bucket %d against MPI_Allreduce of the same inputs, wrong elements per rank: %s\n",
                  step.bucket, row(wrong, 0, comm.size()).c_str());
  }
  RINGDP_CHECK(same, "--explain: the ranks' parameters differ after the step");
  RINGDP_CHECK(averages_right, "--explain: the all-reduce did not leave the average of the ranks' values");
  RINGDP_CHECK(mine == 0, "--explain: ", mine, " elements of bucket ", step.bucket,
               " differ from MPI_Allreduce's average of the same inputs (", first, ")");
}
}  // namespace

int run_explain(const TrainConfig& config, const std::shared_ptr<comm::Communicator>& communicator) {
  comm::Communicator& comm = *communicator;
  RINGDP_CHECK(config.device != "cuda",
               "--explain reads the values from host memory as each step begins; use --device cpu");
  const Dataset data = agreed_dataset(config, comm);
  Observed seen;
  const StepRecord step = take_step(config, communicator, data, seen);
  tell_backward(config, comm, step);
  const bool averages_right = tell_all_reduce(config, comm, step, seen);
  tell_update(config, comm, step, seen, averages_right);
  comm.barrier();
  return 0;
}

}  // namespace ringdp::train
