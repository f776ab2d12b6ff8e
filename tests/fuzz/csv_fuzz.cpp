// libFuzzer target for the --data CSV reader. Any bytes must load as a data set the trainer can
// use (rectangular, finite, at least one feature) or raise ringdp::Error naming the source in a
// message of bounded size; never crash, hang, read out of bounds or throw anything else. A file
// with a NUL byte is not text and must be refused (it once read as the number before the NUL).
// A broken rule aborts, which libFuzzer and the replay both report. scripts/fuzz builds and runs
// it with clang's libFuzzer, ASan and UBSan (the fuzz suite, for a fixed time);
// tests/fuzz/replay_main.cpp replays the committed corpus in every test run.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "apps/train/csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const ringdp::train::Dataset set = ringdp::train::parse_csv(text, "fuzz input");
    if (text.find('\0') != std::string::npos) std::abort();
    if (set.features.size(0) != set.targets.size(0) || set.features.size(1) < 1) std::abort();
    for (const double v : set.features.to_vector())
      if (!std::isfinite(v)) std::abort();
    for (const double v : set.targets.to_vector())
      if (!std::isfinite(v)) std::abort();
  } catch (const ringdp::Error& e) {
    // Quoting whole cells once put 40 MB of a 20 MB cell on stderr.
    const std::string message = e.what();
    if (message.find("'fuzz input'") == std::string::npos || message.size() > 1024) std::abort();
  }
  return 0;
}
