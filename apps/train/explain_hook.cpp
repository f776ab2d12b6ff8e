// ringdp-train --explain --comm-hook HOOK (apps/train/explain.h): one DDP step with the hook, and
// the first elements of bucket 0 rank by rank as the hook changed them: for fp16 and bf16 the cast,
// the division by N in the compressed dtype and the sum, cast back; for PowerSGD (started at once,
// so the step shows it) the applied approximation and the error this rank keeps. Each against the
// exact average of the float32 gradients. Every function runs on every rank; rank 0 prints.
// Tested by tests/cli/train.sh (case explain-hook).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "apps/train/agreement.h"
#include "apps/train/comm_hook_setup.h"
#include "apps/train/csv.h"
#include "apps/train/dataset.h"
#include "apps/train/explain.h"
#include "autograd/functions.h"
#include "comm/ddp/distributed_data_parallel.h"
#include "comm/ddp/distributed_sampler.h"
#include "tensor/ops.h"

namespace ringdp::train {

namespace {
constexpr size_t kShown = 4;  // parameters of bucket 0 whose element 0 is told rank by rank

// Bucket 0 as the hook saw it on this rank.
struct BucketRecord {
  std::vector<double> before, after;  // the whole bucket, float32 values as float64
  std::vector<std::string> names;
  std::vector<int64_t> sizes;  // elements per parameter, in bucket order
  int64_t bytes_communicated = 0;
  size_t bytes = 0;
};

// Every rank's values, rank-major. Every rank must call it.
std::vector<double> gather_all(comm::Communicator& comm, const std::vector<double>& mine) {
  const auto n = static_cast<int64_t>(mine.size());
  Tensor out = zeros({n * comm.size()}, DType::float64);
  comm.all_gather(from_vector(mine, {n}, DType::float64), out);
  return out.to_vector();
}

// The offsets of element 0 of the bucket's first kShown parameters: a matrix among them when the
// bucket holds one, so PowerSGD's compression shows.
std::vector<int64_t> shown_offsets(const BucketRecord& record) {
  std::vector<int64_t> offsets;
  int64_t at = 0;
  for (size_t p = 0; p < record.sizes.size() && offsets.size() < kShown; ++p) {
    offsets.push_back(at);
    at += record.sizes[p];
  }
  return offsets;
}

std::vector<double> pick(const std::vector<double>& values, const std::vector<int64_t>& offsets) {
  std::vector<double> out;
  for (int64_t o : offsets) out.push_back(values[o]);
  return out;
}

// What rank 0 tells, gathered from every rank (collective).
struct Told {
  std::vector<int64_t> offsets;
  std::vector<double> before, after, error;  // rank-major, offsets.size() per rank
  std::vector<double> exact;  // the average of the float32 gradients, the whole bucket
  double worst = 0, largest = 0;  // max |after - exact| over ranks and elements; max |exact|
};

Told gather_told(comm::Communicator& comm, const BucketRecord& record, const ddp::PowerSgdState* state) {
  Told told;
  told.offsets = shown_offsets(record);
  const auto n = static_cast<int64_t>(record.before.size());
  Tensor exact = from_vector(record.before, {n}, DType::float64);
  comm.all_reduce(exact, ReduceOp::avg);
  told.exact = exact.to_vector();
  told.before = gather_all(comm, pick(record.before, told.offsets));
  told.after = gather_all(comm, pick(record.after, told.offsets));
  if (state) told.error = gather_all(comm, pick(state->errors.at(0).to_vector(), told.offsets));
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    worst = std::max(worst, std::fabs(record.after[i] - told.exact[i]));
    told.largest = std::max(told.largest, std::fabs(told.exact[i]));
  }
  Tensor worst_all = full({1}, worst, DType::float64);
  comm.all_reduce(worst_all, ReduceOp::max);
  told.worst = worst_all.item();
  return told;
}

void print_row(const char* label, const std::vector<double>& values, int64_t element, int64_t shown, int N) {
  std::printf("     %-30s", label);
  for (int r = 0; r < N; ++r) std::printf(" %14.8g", values[r * shown + element]);
  std::printf("\n");
}

// The hook wrapped so bucket 0's values are kept before it runs and once its Work is done.
ddp::CommHook recording(ddp::CommHook inner, BucketRecord& record) {
  return [inner, &record](ddp::GradBucket& bucket) {
    if (bucket.index != 0) return inner(bucket);
    record.before = bucket.buffer.to_vector();
    record.names = bucket.names;
    for (const Tensor& g : bucket.gradients) record.sizes.push_back(g.numel());
    record.bytes = bucket.buffer.nbytes();
    comm::Work work = inner(bucket);
    record.bytes_communicated = bucket.bytes_communicated;
    Tensor buffer = bucket.buffer;
    return comm::Work::then(
        work, [buffer, &record] { record.after = buffer.to_vector(); }, [] { return true; });
  };
}

// The compressed dtype's rows: each rank's value cast, then divided by N, as the hook computed them.
void print_cast_rows(const CommHookChoice& choice, const std::vector<double>& before_all, int64_t e,
                     int64_t shown, int N) {
  const DType dtype = choice.kind == CommHookChoice::Kind::fp16 ? DType::float16 : DType::bfloat16;
  std::vector<double> cast(before_all.size()), divided(before_all.size());
  for (size_t i = 0; i < before_all.size(); ++i) {
    Tensor value = full({1}, static_cast<float>(before_all[i])).to(dtype);
    cast[i] = value.item();
    ops::scale_(value, 1.0 / N);
    divided[i] = value.item();
  }
  const std::string name = dtype_name(dtype);
  print_row(("cast to " + name).c_str(), cast, e, shown, N);
  print_row(("/ " + std::to_string(N) + " in " + name).c_str(), divided, e, shown, N);
}
void print_told(const TrainConfig& config, const CommHookChoice& choice, const BucketRecord& record,
                const Told& told, int N) {
  const bool powersgd = choice.kind == CommHookChoice::Kind::powersgd;
  const auto shown = static_cast<int64_t>(told.offsets.size());
  std::printf(
      "ringdp-train --explain --comm-hook %s: one DDP step of the %s model on %d rank%s, told by rank 0.\n\n",
      config.comm_hook.c_str(), config.model.c_str(), N, N == 1 ? "" : "s");
  std::printf("1. Each bucket goes through %s instead of the plain all-reduce (avg)%s.\n",
              describe(choice).c_str(),
              powersgd ? "; from step 0 here, so that this one step is compressed" : "");
  std::printf(
      "   bucket 0 holds %zu parameter(s), %zu float32 gradients (%zu B); the hook's collectives carried "
      "%lld B.\n\n",
      record.names.size(), record.before.size(), record.bytes,
      static_cast<long long>(record.bytes_communicated));
  std::printf("2. Element 0 of its first %lld parameter(s), rank by rank:\n", static_cast<long long>(shown));
  std::printf("     %-30s", "");
  for (int r = 0; r < N; ++r) std::printf(" %14s", ("rank " + std::to_string(r)).c_str());
  std::printf("\n");
  for (int64_t e = 0; e < shown; ++e) {
    const int64_t offset = told.offsets[e];
    std::printf("   %s[0], element %lld of bucket 0\n", record.names[e].c_str(),
                static_cast<long long>(offset));
    print_row("float32 gradient", told.before, e, shown, N);
    if (!powersgd) print_cast_rows(choice, told.before, e, shown, N);
    print_row(powersgd ? "after PowerSGD (applied)" : "summed, back in float32", told.after, e, shown, N);
    if (powersgd) print_row("error kept for the next step", told.error, e, shown, N);
    std::printf("     %-30s %14.8g\n", "exact average (float64)", told.exact[offset]);
    std::printf("     %-30s %14.3g\n", "difference", told.after[e] - told.exact[offset]);
  }
  std::printf(
      "\n3. Over the whole bucket, on every rank: the largest |result - exact average| is %.3g "
      "(the largest |average| is %.3g).\n",
      told.worst, told.largest);
}
}  // namespace

int run_explain_hook(const TrainConfig& config, const std::shared_ptr<comm::Communicator>& communicator) {
  comm::Communicator& comm = *communicator;
  const int N = comm.size();
  RINGDP_CHECK(config.device != "cuda", "--explain reads the values from host memory; use --device cpu");
  CommHookChoice choice = parse_comm_hook(config.comm_hook);
  const bool powersgd = choice.kind == CommHookChoice::Kind::powersgd;
  if (powersgd) choice.start = 0;  // one step: compress it
  const Dataset data = agreed_dataset(config, comm);
  auto model = build_model(config, data.features.size(1), Device::cpu());
  ddp::DistributedDataParallel ddp(model, communicator,
                                   {.bucket_cap_mb = config.bucket_mb,
                                    .first_bucket_mb = config.first_bucket_mb,
                                    .overlap = config.overlap});
  BucketRecord record;
  std::shared_ptr<ddp::PowerSgdState> state;
  ddp.register_comm_hook(recording(make_comm_hook(choice, communicator, &state), record));
  ddp::DistributedSampler sampler(data.features.size(0), comm.rank(), N, config.shuffle, config.seed);
  sampler.set_epoch(0);
  const std::vector<int64_t> mine = sampler.indices();
  const int64_t batch =
      config.batch_size > 0 ? std::min(config.batch_size, sampler.shard_size()) : sampler.shard_size();
  Tensor x, y;
  gather_batch(data, std::vector<int64_t>(mine.begin(), mine.begin() + batch), DType::float32, Device::cpu(),
               x, y);
  ddp.backward(autograd::mse_loss(ddp(x), y));

  const Told told = gather_told(comm, record, state.get());
  if (comm.rank() == 0) print_told(config, choice, record, told, N);
  return 0;
}

}  // namespace ringdp::train
