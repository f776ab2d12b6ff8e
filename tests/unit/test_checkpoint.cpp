// The checkpoint reader validates every field, not only the checksum: a file can carry a valid
// crc32 and still say nonsense (crafted, or written by a buggy writer), and a negative epoch
// trained "epoch -2/2".
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <string>

#include "autograd/checkpoint.h"
#include "autograd/layers.h"
#include "autograd/optim/sgd.h"

using namespace ringdp;
using Catch::Contains;

namespace {
// What save_checkpoint writes for `checkpoint` (it writes whatever it is given), read back.
autograd::Checkpoint round_trip(const autograd::Checkpoint& checkpoint) {
  const std::string path = "/tmp/ringdp-checkpoint-test-" + std::to_string(::getpid()) + ".bin";
  autograd::save_checkpoint(path, checkpoint);
  try {
    autograd::Checkpoint back = autograd::load_checkpoint(path);
    std::remove(path.c_str());
    return back;
  } catch (...) {
    std::remove(path.c_str());
    throw;
  }
}

autograd::Checkpoint valid() {
  return {.next_epoch = 3,
          .seed = 7,
          .world_size = 2,
          .shuffle = true,
          .model = {{"weight", zeros({1, 2})}, {"bias", zeros({1})}},
          .optimizer = {{"momentum_buffer.0", zeros({1, 2})}}};
}
}  // namespace

TEST_CASE("a valid checkpoint reads back", "[checkpoint]") {
  const autograd::Checkpoint back = round_trip(valid());
  CHECK(back.next_epoch == 3);
  CHECK(back.seed == 7);
  CHECK(back.world_size == 2);
  CHECK(back.model.size() == 2);
}

TEST_CASE("every field of a checkpoint is validated", "[checkpoint]") {
  autograd::Checkpoint ck = valid();
  ck.next_epoch = -2;
  CHECK_THROWS_WITH(round_trip(ck), Contains("has epoch -2 (expected 0 or more)"));
  ck = valid();
  ck.world_size = 0;
  CHECK_THROWS_WITH(round_trip(ck), Contains("has world size 0 (expected 1 or more)"));
  ck = valid();
  ck.model.emplace_back("weight", ones({1, 2}));
  CHECK_THROWS_WITH(round_trip(ck), Contains("model entry 'weight' appears twice"));
  ck = valid();
  ck.optimizer.emplace_back("", zeros({1}));
  CHECK_THROWS_WITH(round_trip(ck), Contains("an optimizer entry has an empty name"));
}

TEST_CASE("SGD state names a parameter by its whole index", "[checkpoint]") {
  autograd::Linear layer(autograd::LinearOptions(2, 1), 0);
  optim::SGD sgd(layer.parameters(), optim::SGDOptions(0.1).momentum(0.9));
  // stoul read "1abc" as 1, and "x" escaped as std::invalid_argument.
  CHECK_THROWS_WITH(sgd.load_state_dict({{"momentum_buffer.1abc", zeros({1})}}),
                    Contains("SGD state: unexpected entry 'momentum_buffer.1abc'"));
  CHECK_THROWS_WITH(sgd.load_state_dict({{"momentum_buffer.x", zeros({1})}}),
                    Contains("SGD state: unexpected entry 'momentum_buffer.x'"));
  CHECK_THROWS_WITH(
      sgd.load_state_dict({{"momentum_buffer.1", zeros({1})}, {"momentum_buffer.1", zeros({1})}}),
      Contains("SGD state: 'momentum_buffer.1' appears twice"));
}
