// What std::terminate knows when it ends a rank: a rare abort at exit printed only "terminate
// called without an active exception" (issue #47 item 2), which names neither the thread nor how
// far the exit had got. The report names both, with the stack, then hands over to the handler
// that was in place.
#pragma once

namespace ringdp_torch {

/// Installs the report before the terminate handler in place; once per process.
void install_terminate_report();

/// Where the process's exit is, for the report: a string literal, kept (not copied).
void set_exit_phase(const char* phase);

}  // namespace ringdp_torch
