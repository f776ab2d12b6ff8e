// Catch2 main for the single-process suites (Catch's implementation is in catch_runner.cpp).
#include "tests/support/catch_session.h"

int main(int argc, char** argv) {
  if (const int rc = ringdp::testing::catch_parse(argc, argv)) return rc;
  return ringdp::testing::catch_run();
}
