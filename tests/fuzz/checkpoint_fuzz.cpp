// libFuzzer target for the checkpoint reader: any bytes must parse or raise ringdp::Error,
// never crash, hang or read out of bounds. scripts/fuzz-checkpoint builds and runs it with
// clang's libFuzzer, ASan and UBSan; tests/fuzz/replay_main.cpp replays the committed corpus
// in every test run.
#include <cstddef>
#include <cstdint>
#include <string>

#include <zlib.h>

#include <cstring>

#include "autograd/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  for (int pass = 0; pass < 2; ++pass) {
    try {
      ringdp::autograd::parse_checkpoint(bytes, "fuzz input");
    } catch (const ringdp::Error&) {
      // Rejected with a message: what bad input should get.
    }
    // Second pass: the same bytes with a valid checksum, so mutations reach the entry parser
    // instead of all stopping at the crc check.
    if (bytes.size() < 4) break;
    const auto crc =
        static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size() - 4));
    std::memcpy(bytes.data() + bytes.size() - 4, &crc, 4);
  }
  return 0;
}
