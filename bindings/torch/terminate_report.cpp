// Implements bindings/torch/terminate_report.h.
#include "bindings/torch/terminate_report.h"

#include <Python.h>
#include <execinfo.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>

namespace ringdp_torch {

namespace {

std::atomic<const char*> g_phase{"running (ringdp's exit hook has not run)"};
std::terminate_handler g_previous = nullptr;

[[noreturn]] void report_and_terminate() {
  char name[32] = "?";
  pthread_getname_np(pthread_self(), name, sizeof name);
  const long thread = syscall(SYS_gettid);
  // A flag read, no lock: safe while the interpreter finalizes.
  std::fprintf(stderr,
               "ringdp_torch: std::terminate on thread %ld ('%s'%s), %s an exception; exit: %s; the "
               "interpreter %s\n",
               thread, name, thread == static_cast<long>(getpid()) ? ", the main thread" : "",
               std::current_exception() ? "with" : "without", g_phase.load(),
               Py_IsInitialized() ? "is initialized" : "has finalized (or is finalizing)");
  void* frames[48];
  backtrace_symbols_fd(frames, backtrace(frames, 48), STDERR_FILENO);
  if (g_previous) g_previous();
  std::abort();
}

}  // namespace

void install_terminate_report() {
  static const bool installed = [] {
    g_previous = std::set_terminate(report_and_terminate);
    return true;
  }();
  (void)installed;
}

void set_exit_phase(const char* phase) { g_phase.store(phase); }

}  // namespace ringdp_torch
