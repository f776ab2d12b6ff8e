// Implements apps/train/comm_hook_setup.h (the contract is documented there).
#include "apps/train/comm_hook_setup.h"

#include <charconv>
#include <optional>
#include <string_view>

#include "comm/ddp/default_hooks.h"
#include "core/error.h"

namespace ringdp::train {

namespace {
// A whole decimal number at least `minimum`, or nullopt.
std::optional<int64_t> parse_count(std::string_view text, int64_t minimum) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value < minimum) return std::nullopt;
  return value;
}
}  // namespace

CommHookChoice parse_comm_hook(const std::string& text) {
  using Kind = CommHookChoice::Kind;
  if (text == "none") return {};
  if (text == "fp16") return {.kind = Kind::fp16};
  if (text == "bf16") return {.kind = Kind::bf16};
  const std::string_view view(text);
  const char* forms = kCommHookForms;
  RINGDP_CHECK(view.starts_with("powersgd:"), "--comm-hook '", text, "': ", forms);
  std::string_view rest = view.substr(9);
  const size_t colon = rest.find(':');
  const auto rank = parse_count(rest.substr(0, colon), 1);
  RINGDP_CHECK(rank && *rank <= 1024, "--comm-hook '", text, "': ", forms);
  CommHookChoice choice{.kind = Kind::powersgd, .rank = static_cast<int>(*rank)};
  if (colon != std::string_view::npos) {
    const auto start = parse_count(rest.substr(colon + 1), 0);
    RINGDP_CHECK(start.has_value(), "--comm-hook '", text, "': ", forms);
    choice.start = *start;
  }
  return choice;
}

ddp::CommHook make_comm_hook(const CommHookChoice& choice, const std::shared_ptr<comm::Communicator>& comm,
                             std::shared_ptr<ddp::PowerSgdState>* powersgd) {
  using Kind = CommHookChoice::Kind;
  switch (choice.kind) {
    case Kind::none: return {};
    case Kind::fp16:
      return [comm](ddp::GradBucket& bucket) { return ddp::fp16_compress_hook(*comm, bucket); };
    case Kind::bf16:
      return [comm](ddp::GradBucket& bucket) { return ddp::bf16_compress_hook(*comm, bucket); };
    case Kind::powersgd: break;
  }
  auto state = std::make_shared<ddp::PowerSgdState>(
      comm,
      ddp::PowerSgdOptions{.matrix_approximation_rank = choice.rank, .start_powerSGD_iter = choice.start});
  if (powersgd) *powersgd = state;
  return [state](ddp::GradBucket& bucket) { return ddp::powersgd_hook(*state, bucket); };
}

std::shared_ptr<ddp::PowerSgdState> install_comm_hook(const CommHookChoice& choice,
                                                      ddp::DistributedDataParallel& ddp,
                                                      const std::shared_ptr<comm::Communicator>& comm) {
  std::shared_ptr<ddp::PowerSgdState> powersgd;
  ddp::CommHook hook = make_comm_hook(choice, comm, &powersgd);
  if (hook) ddp.register_comm_hook(std::move(hook));
  return powersgd;
}

std::string describe(const CommHookChoice& choice) {
  using Kind = CommHookChoice::Kind;
  switch (choice.kind) {
    case Kind::none: return "the default all-reduce (avg)";
    case Kind::fp16: return "fp16 compression";
    case Kind::bf16: return "bf16 compression";
    case Kind::powersgd: break;
  }
  return detail::concat("PowerSGD rank ", choice.rank, " (from step ", choice.start, ")");
}

}  // namespace ringdp::train
