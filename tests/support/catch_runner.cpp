// Catch2 v2's implementation, compiled once into the catch_runner library that every test binary
// links: it is the largest translation unit of the tests (35 s here, 4-9 times that under the
// sanitizers), and was compiled again in each binary that defined its own main.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "tests/support/catch_session.h"

namespace ringdp::testing {

namespace {
Catch::Session& session() {
  static Catch::Session one;  // Catch allows a single session per process
  return one;
}
}  // namespace

int catch_parse(int argc, char** argv) { return session().applyCommandLine(argc, argv); }

bool catch_listing_only() {
  const auto& config = session().configData();
  return config.listTests || config.listTestNamesOnly || config.listTags || config.listReporters;
}

void catch_silence_report() { session().configData().outputFilename = "/dev/null"; }

int catch_run() { return session().run(); }

int catch_parse_and_run(int argc, char** argv) {
  if (const int rc = catch_parse(argc, argv)) return rc;
  return catch_run();
}

}  // namespace ringdp::testing
