// Implements comm/world/process_identity.h.
#include "comm/world/process_identity.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace ringdp::comm {

namespace {
// /proc/PID/stat's state and starttime; false when the process is gone. Its second field, the
// command, is in parentheses and may hold spaces: the fields are counted from the last ')'.
// `pid` the process's number in this process's PID namespace: where /proc/self says another, /proc
// is another namespace's, and nothing read there is this one's.
bool read_stat(const std::string& which, int pid, char& state, uint64_t& start_ticks) {
  std::ifstream file("/proc/" + which + "/stat");
  std::string text;
  if (!file || !std::getline(file, text)) return false;
  if (std::atoi(text.c_str()) != pid) return false;
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(text.substr(close + 1));
  std::string field;
  rest >> state;
  for (int i = 4; i < 22 && rest >> field; ++i) {
  }
  return static_cast<bool>(rest >> start_ticks);
}
}  // namespace

ProcessIdentity this_process() {
  ProcessIdentity me;
  if (std::FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
    if (!std::fgets(me.boot_id, sizeof me.boot_id, f)) me.boot_id[0] = 0;
    std::fclose(f);
  }
  struct stat ns {};
  if (stat("/proc/self/ns/pid", &ns) == 0) me.pid_namespace = static_cast<uint64_t>(ns.st_ino);
  if (stat("/proc/self/ns/ipc", &ns) == 0) me.ipc_namespace = static_cast<uint64_t>(ns.st_ino);
  me.pid = static_cast<int32_t>(getpid());
  char state = 0;
  if (!read_stat("self", me.pid, state, me.start_ticks)) me.boot_id[0] = 0;  // no /proc of ours: watch nobody
  return me;
}

bool can_watch(const ProcessIdentity& other) {
  static const ProcessIdentity me = this_process();
  return me.boot_id[0] && me.pid_namespace != 0 &&
         std::strncmp(me.boot_id, other.boot_id, sizeof me.boot_id) == 0 &&
         me.pid_namespace == other.pid_namespace && other.pid > 0;
}

bool has_ended(const ProcessIdentity& other) {
  char state = 0;
  uint64_t start = 0;
  const std::string folder = "/proc/" + std::to_string(other.pid);
  struct stat info {};
  // Only a process that is not there has ended: a /proc this process cannot read (hidepid, no
  // file descriptor left) proves nothing.
  if (stat(folder.c_str(), &info) != 0) return errno == ENOENT || errno == ESRCH;
  if (!read_stat(std::to_string(other.pid), other.pid, state, start)) return false;
  return state == 'Z' || state == 'X' || start != other.start_ticks;
}

bool share_memory(const ProcessIdentity& a, const ProcessIdentity& b) {
  return a.boot_id[0] && a.ipc_namespace != 0 && std::strncmp(a.boot_id, b.boot_id, sizeof a.boot_id) == 0 &&
         a.ipc_namespace == b.ipc_namespace;
}

bool apart(const ProcessIdentity& a, const ProcessIdentity& b) {
  return a.boot_id[0] && b.boot_id[0] && a.ipc_namespace != 0 && b.ipc_namespace != 0 && !share_memory(a, b);
}

}  // namespace ringdp::comm
