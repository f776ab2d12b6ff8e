// Implements apps/train/agreement.h. Tested by tests/cli/train.sh, case disagree (MPMD launches
// with a different --lr, --data of 40 and 30 rows, the same rows in a different order).
#include "apps/train/agreement.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "apps/train/csv.h"
#include "core/error.h"
#include "core/fnv1a.h"
#include "tensor/tensor.h"

namespace ringdp::train {

namespace {

// A value is shown up to this many bytes; the comparison uses all of it.
constexpr int64_t kShownBytes = 200;

// The shortest text that reads back as the same double: 0.1, not 0.10000000000000001.
std::string number(double value) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  return std::string(text, end);
}

// Every rank's `shown`, gathered (at most kShownBytes of each).
std::vector<std::string> gather_shown(comm::Communicator& comm, const std::string& shown) {
  const int N = comm.size();
  Tensor mine = zeros({kShownBytes}, DType::uint8);
  std::memcpy(mine.data<uint8_t>(), shown.data(), std::min<size_t>(shown.size(), kShownBytes));
  Tensor all = zeros({N * kShownBytes}, DType::uint8, comm.device());
  comm.all_gather(mine.to(comm.device()), all);
  all = all.to(Device::cpu());
  std::vector<std::string> texts;
  for (int r = 0; r < N; ++r) {
    const char* begin = reinterpret_cast<const char*>(all.data<uint8_t>() + r * kShownBytes);
    texts.emplace_back(begin, strnlen(begin, kShownBytes));
  }
  return texts;
}

uint64_t data_checksum(const Dataset& data) {
  uint64_t hash = fnv1a({});
  for (const Tensor* t : {&data.features, &data.targets}) {
    const Tensor host = t->to(Device::cpu());  // made whole by the loaders: contiguous
    hash = fnv1a({static_cast<const char*>(host.data_ptr()), host.numel() * dtype_size(host.dtype())}, hash);
  }
  return hash;
}

}  // namespace

void require_agreement(comm::Communicator& comm, const std::vector<AgreedItem>& items,
                       const std::string& what) {
  const int N = comm.size();
  const auto n = static_cast<int64_t>(items.size());
  if (N == 1 || n == 0) return;
  Tensor mine = zeros({n}, DType::int64);
  for (int64_t i = 0; i < n; ++i) mine.data<int64_t>()[i] = static_cast<int64_t>(fnv1a(items[i].compared));
  Tensor all = zeros({N * n}, DType::int64, comm.device());
  comm.all_gather(mine.to(comm.device()), all);
  all = all.to(Device::cpu());
  const int64_t* hashes = all.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int> differing;
    for (int r = 1; r < N; ++r)
      if (hashes[r * n + i] != hashes[i]) differing.push_back(r);
    if (differing.empty()) continue;
    // Every rank saw the same hashes, so all reach this gather for the same item.
    const std::vector<std::string> shown = gather_shown(comm, items[i].shown);
    const int r = differing.front();
    RINGDP_FAIL("the ranks were given different ", what, ": ", items[i].name, " is ", shown[0],
                " on rank 0 but ", shown[r], " on rank ", r,
                differing.size() > 1
                    ? detail::concat(" (and differs on ", differing.size() - 1, " more rank(s))")
                    : "",
                "; every rank must be started with the same flags and data (an MPMD launch line, a per-rank "
                "script or a file that differs between hosts?)");
  }
}

std::vector<AgreedItem> config_items(const TrainConfig& c) {
  std::string hidden;
  for (int64_t h : c.hidden) {
    if (!hidden.empty()) hidden += ',';
    hidden += std::to_string(h);
  }
  const std::vector<std::pair<std::string, std::string>> flags = {
      {"--model", c.model},
      {"--hidden", hidden},
      {"--samples", std::to_string(c.samples)},
      {"--features", std::to_string(c.features)},
      {"--batch-size", std::to_string(c.batch_size)},
      {"--epochs", std::to_string(c.epochs)},
      {"--optimizer", c.optimizer},
      {"--lr", number(c.lr)},
      {"--momentum", number(c.momentum)},
      {"--weight-decay", number(c.weight_decay)},
      {"--betas", number(c.beta1) + "," + number(c.beta2)},
      {"--eps", number(c.eps)},
      {"--zero", c.zero ? "on" : "off"},
      {"--seed", std::to_string(c.seed)},
      {"--no-shuffle", c.shuffle ? "off" : "on"},
      {"--device", c.device},
      {"--backend", c.backend},
      {"--algo", comm::algorithm_name(c.algorithm)},
      {"--bucket-mb", number(c.bucket_mb)},
      {"--first-bucket-mb", number(c.first_bucket_mb)},
      {"--save-every", std::to_string(c.save_every)},
      {"--resume", std::to_string(static_cast<int>(c.resume))},
      {"--uneven", c.uneven},
      {"--find-unused-parameters", c.find_unused_parameters ? "on" : "off"},
      {"--comm-hook", c.comm_hook},
      {"--no-overlap", c.overlap ? "off" : "on"},
      {"--explain", c.explain ? "on" : "off"},
      {"--data (given or not)", c.data_path.empty() ? "not given: synthetic data" : "given"},
  };
  std::vector<AgreedItem> items;
  for (const auto& [name, value] : flags) items.push_back({name, value, value});
  return items;
}

Dataset agreed_dataset(const TrainConfig& config, comm::Communicator& comm) {
  const bool synthetic = config.data_path.empty();
  Dataset data = synthetic ? synthetic_dataset(config.samples * comm.size(), config.features, config.seed)
                           : load_csv(config.data_path);
  const std::string source = synthetic ? "synthetic data" : "'" + config.data_path + "'";
  const int64_t rows = data.features.size(0), columns = data.features.size(1) + 1;
  const std::string shape = detail::concat(rows, " rows of ", columns, " columns");
  std::vector<AgreedItem> items = {{"the data's size", shape, detail::concat(shape, " (", source, ")")}};
  // Not the values of synthetic data: they come from settings already compared, through libm,
  // which may round differently on another CPU (and each rank trains on its own shard).
  if (!synthetic) {
    char checksum[24];
    std::snprintf(checksum, sizeof checksum, "%016llx", static_cast<unsigned long long>(data_checksum(data)));
    items.push_back({"the data's checksum", checksum, detail::concat(checksum, " (", source, ")")});
  }
  require_agreement(comm, items, "data");  // one collective either way: collective numbers do not move
  return data;
}

}  // namespace ringdp::train
