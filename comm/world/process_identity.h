// ProcessIdentity: what names a rank's process to a peer on the same machine well enough to tell
// that it has ended, for a job whose ranks no MPI launcher watches (comm/world/ucx_departures.h):
// the kernel's boot id and PID namespace (another container or machine sees other processes under
// the same numbers), the PID, and the process's start time (a PID reused after the process ended
// names another process); and its IPC namespace, for whether two processes may share memory.
// Linux's /proc; elsewhere nothing is ever known to have ended, nor to share memory.
#pragma once

#include <cstdint>

namespace ringdp::comm {

struct ProcessIdentity {
  char boot_id[40] = {};
  uint64_t pid_namespace = 0;  ///< the inode of /proc/self/ns/pid
  int32_t pid = 0;
  int32_t padding = 0;
  uint64_t start_ticks = 0;  ///< /proc/PID/stat's starttime
  uint64_t ipc_namespace = 0;  ///< the inode of /proc/self/ns/ipc: who may share its memory
};

/// This process's identity.
ProcessIdentity this_process();
/// True when `other` is a process this one can watch: the same kernel and PID namespace.
bool can_watch(const ProcessIdentity& other);
/// True when `other` (one can_watch accepts) has ended: gone, a zombie, or its PID reused.
bool has_ended(const ProcessIdentity& other);
/// True when `a` and `b` are known to share memory: the same kernel and IPC namespace (another
/// IPC namespace is another container's, as UCX's shared-memory transports also take it).
bool share_memory(const ProcessIdentity& a, const ProcessIdentity& b);
/// True when `a` and `b` are known not to: both identities read, and another kernel or IPC
/// namespace (another machine, or a host of tests/net/cluster.sh).
bool apart(const ProcessIdentity& a, const ProcessIdentity& b);

}  // namespace ringdp::comm
