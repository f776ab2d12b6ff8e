// ringdp-train --comm-hook none|fp16|bf16|powersgd:RANK[:START]: parsing the choice and registering
// the hook on the trainer's DDP (comm/ddp/default_hooks.h, comm/ddp/powersgd_hook.h). Tested by
// tests/cli/train.sh (cases comm-hook, comm-hook-torch, explain-hook).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "comm/communicator.h"
#include "comm/ddp/distributed_data_parallel.h"
#include "comm/ddp/powersgd_hook.h"

namespace ringdp::train {

struct CommHookChoice {
  enum class Kind { none, fp16, bf16, powersgd };
  Kind kind = Kind::none;
  int rank = 1;  ///< powersgd: matrix_approximation_rank
  /// powersgd: steps of plain averaging first. Not PyTorch's default of 1000, which a short run
  /// never reaches: 2, the smallest PyTorch accepts with error feedback and warm start.
  int64_t start = 2;
};

inline constexpr const char* kCommHookForms =
    "expected none, fp16, bf16, powersgd:RANK or powersgd:RANK:START (RANK from 1 to 1024, START >= 0)";

/// Parses --comm-hook's value; an Error naming the accepted forms when it is none of them.
CommHookChoice parse_comm_hook(const std::string& text);

/// The hook of `choice` with its state bound, or an empty one for none; `powersgd` receives
/// PowerSGD's state when it is chosen.
ddp::CommHook make_comm_hook(const CommHookChoice& choice, const std::shared_ptr<comm::Communicator>& comm,
                             std::shared_ptr<ddp::PowerSgdState>* powersgd = nullptr);

/// Registers `choice` on ddp (nothing for none); returns PowerSGD's state (null otherwise), which
/// the caller may read for its compression statistics.
std::shared_ptr<ddp::PowerSgdState> install_comm_hook(const CommHookChoice& choice,
                                                      ddp::DistributedDataParallel& ddp,
                                                      const std::shared_ptr<comm::Communicator>& comm);

/// The hook choice's plain-language name: "fp16 compression", "PowerSGD rank 2 (from step 2)".
std::string describe(const CommHookChoice& choice);

}  // namespace ringdp::train
