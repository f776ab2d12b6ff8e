// core/file_identity.h: an output written over one of the run's paths is found under every
// spelling (relative and absolute, "./", "..", a file not made yet, an input that is a link to
// it, an output that is a symbolic link to it: written through); an output that is a hard link is
// replaced by the write, so it overwrites nothing; a file that is not a regular one is written in
// place. An output that
// would overwrite another path is refused naming both flags; inputs may be one file.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/file_identity.h"

using namespace ringdp;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {
// A scratch folder of its own, made the current one for the relative spellings; restored after.
struct InScratch {
  fs::path before = fs::current_path();
  fs::path folder = fs::temp_directory_path() / ("ringdp-identity-" + std::to_string(::getpid()));
  InScratch() {
    fs::remove_all(folder);
    fs::create_directories(folder / "sub");
    fs::current_path(folder);
    std::ofstream("d.csv") << "1,2\n";
    std::ofstream("other.csv") << "1,2\n";
  }
  ~InScratch() {
    fs::current_path(before);
    fs::remove_all(folder);
  }
};
}  // namespace

TEST_CASE("an output over one of the run's files is found under every spelling", "[file_identity]") {
  InScratch scratch;
  CHECK(overwrites("d.csv", "d.csv", false));
  CHECK(overwrites("./d.csv", "d.csv", false));
  CHECK(overwrites((scratch.folder / "d.csv").string(), "d.csv", false));
  CHECK(overwrites("sub/../d.csv", "d.csv", false));
  fs::create_symlink("d.csv", "link.csv");
  CHECK(overwrites("d.csv", "link.csv", false));  // the input is read through the link
  CHECK(overwrites("link.csv", "d.csv", false));  // and the output written through it
  fs::create_symlink("link.csv", "link2.csv");
  CHECK(overwrites("link2.csv", "./d.csv", false));  // through a chain of links
  fs::create_symlink("out.json", "to_out.json");  // dangling: the write makes out.json
  CHECK(overwrites("to_out.json", "out.json", true));
  // Not made yet: compared by where they would be.
  CHECK(overwrites("new.json", "./sub/../new.json", true));
  CHECK(overwrites("new.json", (scratch.folder / "new.json").string(), true));
}

TEST_CASE("an output that replaces only itself, or is written in place, overwrites nothing",
          "[file_identity]") {
  InScratch scratch;
  CHECK_FALSE(overwrites("d.csv", "other.csv", false));
  CHECK_FALSE(overwrites("sub/d.csv", "d.csv", false));
  CHECK_FALSE(overwrites("new.json", "new2.json", true));
  fs::create_hard_link("d.csv", "hard.csv");
  CHECK_FALSE(overwrites("hard.csv", "d.csv", false));  // and a hard link's entry, not d.csv's
  CHECK_FALSE(overwrites("/dev/null", "/dev/null", true));
}

TEST_CASE("an output that would overwrite another path of the run is refused, naming both",
          "[file_identity]") {
  InScratch scratch;
  REQUIRE_THROWS_WITH(
      require_distinct_outputs({{"--data", "d.csv", false}, {"--checkpoint", "./d.csv", true}}),
      Contains("--checkpoint './d.csv' is the same file as --data 'd.csv': it would be "
               "overwritten by this run's output"));
  REQUIRE_THROWS_WITH(
      require_distinct_outputs({{"--checkpoint", "ck.bin", true}, {"--export", "ck.bin", true}}),
      Contains("--checkpoint 'ck.bin' is the same file as --export 'ck.bin'"));
  // Inputs may be one file; empty paths are not files; distinct outputs pass.
  REQUIRE_NOTHROW(require_distinct_outputs({{"--data", "d.csv", false}, {"--init", "./d.csv", false}}));
  REQUIRE_NOTHROW(require_distinct_outputs({{"--data", "", false}, {"--export", "", true}}));
  REQUIRE_NOTHROW(require_distinct_outputs(
      {{"--data", "d.csv", false}, {"--checkpoint", "ck.bin", true}, {"--export", "out.json", true}}));
}
