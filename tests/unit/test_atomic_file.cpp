// core/atomic_file.h: a file is replaced whole or not at all, a failed write is an error with the
// OS's reason, temporaries of dead writers are removed and a live writer's kept, and a missing
// output folder is named before anything is written.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/atomic_file.h"
#include "core/error.h"

using namespace ringdp;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {
std::string scratch_folder() {
  const fs::path folder = fs::temp_directory_path() / ("ringdp-atomic-" + std::to_string(::getpid()));
  fs::create_directories(folder);
  return folder.string();
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int files_in(const std::string& folder) {
  return static_cast<int>(std::distance(fs::directory_iterator(folder), fs::directory_iterator()));
}

// A process id that no process has now: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  return child;
}

// Writes past `bytes` fail with EFBIG while this lives, as on a full disk, instead of killing
// the process with SIGXFSZ.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    previous_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, previous_);
  }

 private:
  rlimit saved_{};
  void (*previous_)(int) = nullptr;
};
}  // namespace

TEST_CASE("a file is replaced whole, leaving no temporary", "[atomic_file]") {
  const std::string folder = scratch_folder(), path = folder + "/out.json";
  write_file_atomically(path, "old", "--test");
  write_file_atomically(path, std::string(100000, 'x'), "--test");
  CHECK(read(path) == std::string(100000, 'x'));
  CHECK(files_in(folder) == 1);
  fs::remove_all(folder);
}

TEST_CASE("a write that fails is an error with the OS's reason and keeps the old file", "[atomic_file]") {
  const std::string folder = scratch_folder(), path = folder + "/out.csv";
  write_file_atomically(path, "the previous results\n", "--csv");
  {
    const FileSizeLimit limit(8192);
    REQUIRE_THROWS_WITH(
        write_file_atomically(path, std::string(20000, 'x'), "--csv"),
        Contains("cannot write --csv '" + path + "': File too large (after 8192 of 20000 bytes"));
  }
  CHECK(read(path) == "the previous results\n");
  CHECK(files_in(folder) == 1);  // the temporary is gone too
  // A device is written in place, and its error reported the same way.
  REQUIRE_THROWS_WITH(write_file_atomically("/dev/full", "x", "--json"),
                      Contains("cannot write --json '/dev/full': No space left on device"));
  REQUIRE_THROWS_WITH(write_file_atomically(folder, "x", "--json"), Contains("it is a folder"));
  REQUIRE_THROWS_WITH(write_file_atomically(folder + "/none/out.csv", "x", "--csv"),
                      Contains("No such file or directory"));
  fs::remove_all(folder);
}

TEST_CASE("temporaries of dead writers are removed, a live writer's kept", "[atomic_file]") {
  const std::string folder = scratch_folder(), path = folder + "/ck.bin";
  const std::string orphan = path + ".tmp." + std::to_string(dead_pid());
  const std::string live = path + ".tmp." + std::to_string(::getppid());
  const std::string other = folder + "/other.bin.tmp.1";  // another file's: not ours to judge
  for (const std::string& p : {orphan, live, other}) std::ofstream(p) << "partial";
  write_file_atomically(path, "checkpoint", "checkpoint");
  CHECK_FALSE(fs::exists(orphan));
  CHECK(fs::exists(live));
  CHECK(fs::exists(other));
  CHECK(read(path) == "checkpoint");
  fs::remove_all(folder);
}

TEST_CASE("a missing output folder is named before anything is written", "[atomic_file]") {
  const std::string folder = scratch_folder();
  require_output_folder(folder + "/out.csv", "--csv");
  require_output_folder("relative.csv", "--csv");  // the working folder
  REQUIRE_THROWS_WITH(
      require_output_folder(folder + "/missing/out.csv", "--csv"),
      Contains("--csv '" + folder + "/missing/out.csv': the folder '" + folder + "/missing' does not exist"));
  std::ofstream(folder + "/file") << "x";
  REQUIRE_THROWS_WITH(require_output_folder(folder + "/file/out.json", "--export"),
                      Contains("'" + folder + "/file' is not a folder"));
  fs::remove_all(folder);
}

TEST_CASE("a link is written through and stays a link; a replaced file keeps its mode", "[atomic_file]") {
  // Before: ck.bin became a plain file, real/ck.bin kept its old bytes, and 0600 came back 0644.
  const std::string folder = scratch_folder();
  fs::create_directories(folder + "/real");
  const std::string target = folder + "/real/ck.bin", link = folder + "/ck.bin",
                    chain = folder + "/chain.bin";
  write_file_atomically(target, "old", "checkpoint");
  fs::create_symlink("real/ck.bin", link);  // relative: read from the link's folder
  fs::create_symlink(link, chain);
  ::chmod(target.c_str(), 0600);
  write_file_atomically(chain, "new", "checkpoint");
  CHECK(fs::is_symlink(link));
  CHECK(fs::is_symlink(chain));
  CHECK(read(target) == "new");
  CHECK((fs::status(target).permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write));
  CHECK(files_in(folder + "/real") == 1);  // no temporary left beside the target
  CHECK(written_path(chain) == folder + "/real/ck.bin");
  // A dangling link makes its target; a new file gets 0666 less the umask.
  const mode_t mask = ::umask(027);
  fs::create_symlink("made.json", folder + "/to_made.json");
  write_file_atomically(folder + "/to_made.json", "{}", "--export");
  ::umask(mask);
  CHECK(fs::is_symlink(folder + "/to_made.json"));
  CHECK(read(folder + "/made.json") == "{}");
  CHECK((fs::status(folder + "/made.json").permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
  // A loop is named, not followed for ever.
  fs::create_symlink("b.loop", folder + "/a.loop");
  fs::create_symlink("a.loop", folder + "/b.loop");
  CHECK_THROWS_WITH(write_file_atomically(folder + "/a.loop", "x", "--csv"),
                    Contains("a.loop': more than 40 symbolic links in a chain"));
  fs::remove_all(folder);
}
