// Implements core/atomic_file.h (the contract is documented there). Tested by
// tests/unit/test_atomic_file.cpp, and through the apps by tests/cli/bench.sh and train.sh (writes
// that fail under a file-size limit).
#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/error.h"

namespace ringdp {

namespace {
namespace fs = std::filesystem;

std::string folder_of(const std::string& path) {
  const std::string folder = fs::path(path).parent_path().string();
  return folder.empty() ? "." : folder;
}

// The whole buffer or the errno that stopped it: write() may write less than asked (a signal, a
// nearly full disk), and only the next call reports why.
int write_all(int fd, const std::string& bytes, size_t& written) {
  written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    written += static_cast<size_t>(n);
  }
  return 0;
}

[[noreturn]] void fail_write(const std::string& what, const std::string& path, int err, size_t written,
                             size_t total) {
  RINGDP_FAIL("cannot write ", what, " '", path, "': ", std::strerror(err), " (after ", written, " of ",
              total, " bytes; the previous file, if any, is unchanged)");
}

// Pipes and devices (/dev/stdout) cannot be renamed over: their bytes go straight in, checked the
// same way; fsync means nothing for them.
void write_in_place(const std::string& path, const std::string& bytes, const std::string& what) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  RINGDP_CHECK(fd >= 0, "cannot write ", what, " '", path, "': ", std::strerror(errno));
  size_t written = 0;
  const int err = write_all(fd, bytes, written);
  const bool closed = ::close(fd) == 0;
  if (err != 0 || !closed)
    RINGDP_FAIL("cannot write ", what, " '", path, "': ", std::strerror(err != 0 ? err : errno), " (after ",
                written, " of ", bytes.size(), " bytes)");
}

// A crash between these steps leaves at most the temporary, which the next writer removes; the
// target is only ever the old file or the new one.
void write_and_rename(const std::string& path, const std::string& bytes, const std::string& what) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  RINGDP_CHECK(fd >= 0, "cannot write ", what, " '", path, "': cannot create '", temporary,
               "': ", std::strerror(errno));
  size_t written = 0;
  int err = 0;
  // The file replaced keeps its mode: a 0600 checkpoint must not come back readable by all.
  struct stat old {};
  if (::stat(path.c_str(), &old) == 0 && ::fchmod(fd, old.st_mode & 07777) != 0) err = errno;
  if (err == 0) err = write_all(fd, bytes, written);
  // Delayed allocation can report a full disk only at fsync or close: both are part of the write.
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && std::rename(temporary.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(temporary.c_str());
    fail_write(what, path, err, written, bytes.size());
  }
  // The rename is durable only once the folder's entry is on disk.
  const int dfd = ::open(folder_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}
}  // namespace

int remove_orphaned_temporaries(const std::string& path) {
  const std::string prefix = fs::path(path).filename().string() + ".tmp.";
  std::error_code ec;
  fs::directory_iterator entries(folder_of(path), ec);
  if (ec) return 0;  // no folder, no orphans: the write itself will say what is wrong
  int removed = 0;
  for (const fs::directory_entry& entry : entries) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto pid = static_cast<pid_t>(std::stol(digits));
    // EPERM means the process exists under another user: a live writer, whose file stays.
    const bool gone = pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
    if (gone && ::unlink(entry.path().c_str()) == 0) ++removed;
  }
  return removed;
}

std::string written_path(const std::string& path) {
  std::string current = path;
  for (int links = 0; links <= 40; ++links) {
    struct stat st {};
    if (::lstat(current.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return current;
    std::error_code error;
    const fs::path target = fs::read_symlink(current, error);
    if (error) return current;  // the write itself will say what is wrong
    current = target.is_absolute() ? target.string() : (fs::path(folder_of(current)) / target).string();
  }
  RINGDP_FAIL("'", path, "': more than 40 symbolic links in a chain (a loop?); name the file itself");
}

void write_file_atomically(const std::string& path, const std::string& bytes, const std::string& what) {
  // Renaming over a link would replace the link with a plain file and leave its target old.
  const std::string target = written_path(path);
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    RINGDP_CHECK(!S_ISDIR(st.st_mode), "cannot write ", what, " '", path, "': it is a folder");
    write_in_place(target, bytes, what);
    return;
  }
  remove_orphaned_temporaries(target);
  write_and_rename(target, bytes, what);
}

std::string output_folder_problem(const std::string& path) {
  std::string landing = path;
  try {
    landing = written_path(path);
  } catch (const Error&) {
    // A loop of links: the write says so, under its own flag.
  }
  const std::string folder = folder_of(landing);
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0)
    return "the folder '" + folder + "' does not exist (" + std::strerror(errno) + "); create it first";
  if (!S_ISDIR(st.st_mode)) return "'" + folder + "' is not a folder";
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    return "cannot write into the folder '" + folder + "' (" + std::strerror(errno) + ")";
  return {};
}

std::string output_file_problem(const std::string& path) {
  struct stat own {};
  if (::stat(path.c_str(), &own) == 0 && S_ISDIR(own.st_mode)) return "it is a folder; name a file in it";
  return output_folder_problem(path);
}

void require_output_folder(const std::string& path, const std::string& what) {
  const std::string problem = output_folder_problem(path);
  RINGDP_CHECK(problem.empty(), what, " '", path, "': ", problem);
}

}  // namespace ringdp
