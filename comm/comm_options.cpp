// Implements comm/comm_options.h: where the RINGDP_* variables that set a CommOptions field are
// applied (with_environment). Other settings are read where they act (core/settings.h lists all).
#include "comm/comm_options.h"

#include "config.h"
#include "core/error.h"
#include "core/settings.h"

namespace ringdp::comm {

std::array<size_t*, kAgreedFields> agreed_fields(CommOptions& o) {
  return {&o.segment_bytes,           &o.recursive_doubling_max_bytes, &o.chain_broadcast_min_bytes,
          &o.rabenseifner_max_bytes,  &o.shared_memory_max_bytes,      &o.shared_memory_scatter_min_bytes,
          &o.shared_memory_slot_bytes};
}

size_t default_segment_bytes(bool oversubscribed) { return oversubscribed ? 64 * 1024 : 1024 * 1024; }

CommOptions with_environment(CommOptions options) {
  using settings::Id;
  if (auto seconds = settings::number(Id::timeout)) options.timeout = std::chrono::seconds(*seconds);
  if (auto ms = settings::number(Id::timeout_ms)) options.timeout = std::chrono::milliseconds(*ms);
  RINGDP_CHECK(options.timeout.count() > 0 && options.timeout <= kMaxTimeout,
               "the collective timeout must be from 1 ms to ", kMaxTimeout.count(), " s; got ",
               options.timeout.count(), " ms");
  auto bytes = [](Id id, size_t& field) {
    if (auto value = settings::number(id)) field = static_cast<size_t>(*value);
  };
  bytes(Id::segment_bytes, options.segment_bytes);
  bytes(Id::rd_max_bytes, options.recursive_doubling_max_bytes);
  bytes(Id::chain_min_bytes, options.chain_broadcast_min_bytes);
  bytes(Id::rabenseifner_max_bytes, options.rabenseifner_max_bytes);
  bytes(Id::shm_max_bytes, options.shared_memory_max_bytes);
  bytes(Id::shm_scatter_min_bytes, options.shared_memory_scatter_min_bytes);
  bytes(Id::shm_slot_bytes, options.shared_memory_slot_bytes);
  // The caller's value too: the table checks only what comes from the environment.
  RINGDP_CHECK(options.shared_memory_slot_bytes >= 64 && options.shared_memory_slot_bytes % 64 == 0,
               "shared-memory slot of ", options.shared_memory_slot_bytes,
               " bytes (RINGDP_SHM_SLOT_BYTES): expected a positive multiple of 64");
  if (auto blocking = settings::flag(Id::blocking_wait)) options.blocking_wait = *blocking;
  if (auto backend = settings::text(Id::backend)) options.backend = parse_backend(*backend);
  if (auto transport = settings::text(Id::transport))
    options.host_transport = parse_host_transport(*transport);
  RINGDP_CHECK(options.backend != Backend::nccl || RINGDP_HAVE_NCCL,
               "backend nccl: ringdp was built without NCCL "
               "(configure with -Dnccl=enabled on a machine with CUDA and NCCL)");
  return options;
}

}  // namespace ringdp::comm
