// Checkpoints: model and optimizer state, the next epoch and the seed, in one binary file with
// a format version and a crc32 over everything before it. Written atomically (temporary file,
// fsync, rename, fsync of the directory), so a failed save never destroys the previous one.
// Format (little-endian): "RINGDPCK" | u32 version (2) | u64 epoch | u64 seed | u32 world size |
//   u8 shuffle | u32 entries |
//   per entry: u32 name length, name, u8 dtype, u32 ndim, i64 dims[ndim], raw data |
//   u32 crc32 of all preceding bytes.
#pragma once

#include <string>

#include "autograd/module.h"

namespace ringdp::autograd {

struct Checkpoint {
  int64_t next_epoch = 0;
  uint64_t seed = 0;
  /// The run's -np and --shuffle: together with the seed they decide which samples each rank
  /// sees, so a resume with others would silently train on other data.
  uint32_t world_size = 1;
  bool shuffle = true;
  StateDict model;
  StateDict optimizer;
};

void save_checkpoint(const std::string& path, const Checkpoint& checkpoint);
/// Throws naming the file and what is wrong: missing, truncated, bad magic/version/checksum.
Checkpoint load_checkpoint(const std::string& path);
/// Parses checkpoint bytes (the fuzz target's entry point); `source` names them in errors.
Checkpoint parse_checkpoint(const std::string& bytes, const std::string& source);

}  // namespace ringdp::autograd
