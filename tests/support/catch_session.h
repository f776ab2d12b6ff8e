// The Catch2 session for test binaries with a main of their own (MPI ranks, device checks).
// Catch2 v2 declares Catch::Session only where its implementation is compiled, and that is done
// once, in catch_runner.cpp: these calls are the session's parts the mains use.
#pragma once

namespace ringdp::testing {

// Parses Catch's command line; non-zero is Catch's own status for a bad one (it said why).
int catch_parse(int argc, char** argv);
// Whether the command line asks only for a listing (tests, names, tags or reporters).
bool catch_listing_only();
// Sends this process's report to /dev/null: ranks other than 0, so a test case counts once.
void catch_silence_report();
// Runs the selected test cases; the number that failed, as Catch counts it.
int catch_run();
// catch_parse, then catch_run if the command line was good: a plain main's whole body.
int catch_parse_and_run(int argc, char** argv);

}  // namespace ringdp::testing
