// core/file_identity.h: two spellings of one file are one file (relative and absolute, "./",
// "..", a symbolic or a hard link, a file not yet made), two files are two; an output that is
// another path of the run is refused naming both flags, inputs may be one file.
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

TEST_CASE("one file under several spellings is one file", "[file_identity]") {
  InScratch scratch;
  CHECK(same_file("d.csv", "d.csv"));
  CHECK(same_file("d.csv", "./d.csv"));
  CHECK(same_file("d.csv", (scratch.folder / "d.csv").string()));
  CHECK(same_file("d.csv", "sub/../d.csv"));
  fs::create_symlink("d.csv", "link.csv");
  CHECK(same_file("link.csv", "d.csv"));
  fs::create_hard_link("d.csv", "hard.csv");
  CHECK(same_file("hard.csv", "d.csv"));
  // Not made yet: compared by where they would be.
  CHECK(same_file("new.json", "./sub/../new.json"));
  CHECK(same_file("new.json", (scratch.folder / "new.json").string()));
}

TEST_CASE("two files are two", "[file_identity]") {
  InScratch scratch;
  CHECK_FALSE(same_file("d.csv", "other.csv"));
  CHECK_FALSE(same_file("d.csv", "sub/d.csv"));
  CHECK_FALSE(same_file("new.json", "new2.json"));
}

TEST_CASE("an output that is another path of the run is refused, naming both", "[file_identity]") {
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
