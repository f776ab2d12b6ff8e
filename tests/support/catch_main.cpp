// Catch2 main for the single-process suites (Catch's implementation is in catch_runner.cpp).
#include "tests/support/catch_session.h"

int main(int argc, char** argv) { return ringdp::testing::catch_parse_and_run(argc, argv); }
