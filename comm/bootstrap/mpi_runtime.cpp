// Implements comm/bootstrap/mpi_runtime.h (the contract is documented there). Tested by tests/cli (error
// exits, rank failure).
#include "comm/bootstrap/mpi_runtime.h"

#include <pthread.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "comm/bootstrap/exit_hooks.h"
#include "comm/bootstrap/open_mpi_defaults.h"
#include "config.h"
#include "core/error.h"
#include "core/settings.h"
#if RINGDP_HAVE_MPI
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's MPIX_Query_cuda_support
#endif
#endif

namespace ringdp::comm {

namespace {
std::string g_terminate_prefix = "ringdp";
std::atomic<int> g_thread_level{-1};  // what MPI provides, known once it is initialised
// Whether communicators may each have a queue: MPI provides MPI_THREAD_MULTIPLE and nobody asked
// for less (RINGDP_MPI_THREAD=serialized shares one even where MPI gives more than asked).
std::atomic<bool> g_independent_threads{false};

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value && *value ? std::atoi(value) : fallback;
}
}  // namespace

bool mpi_cuda_aware() {
  if (const auto forced = settings::flag(settings::Id::mpi_cuda_aware)) return *forced;
#if RINGDP_HAVE_MPI && defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

// A step of one task is not a launch: programs run from `srun --pty bash` or `srun -n 1 ...` see
// SLURM_STEP_NUM_TASKS=1 and must go on running alone, as outside Slurm.
bool launched_by_srun() {
  return env_int("SLURM_STEP_NUM_TASKS", 0) > 1 && !std::getenv("OMPI_COMM_WORLD_SIZE") &&
         !std::getenv("PMI_SIZE");
}

// srun counts even with --mpi=none, where no PMI variable is set: its tasks must still reach MPI,
// so that a library that cannot see the job (each task a world of one) is caught, not run N times.
bool launched_by_mpi_launcher() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK") ||
         launched_by_srun();
}

// Open MPI's mpirun sets OMPI_COMM_WORLD_*; MPICH's hydra (and srun --mpi=pmi2) PMI_SIZE and
// PMI_RANK; a PMIx launcher PMIX_RANK but no size; srun always SLURM_STEP_NUM_TASKS and
// SLURM_PROCID (a batch script has neither the step's count nor a task of its own).
int launcher_world_size() {
  return env_int("OMPI_COMM_WORLD_SIZE",
                 env_int("PMI_SIZE", launched_by_srun() ? env_int("SLURM_STEP_NUM_TASKS", 1) : 1));
}

int launcher_rank() {
  return env_int(
      "OMPI_COMM_WORLD_RANK",
      env_int("PMI_RANK", env_int("PMIX_RANK", launched_by_srun() ? env_int("SLURM_PROCID", 0) : 0)));
}

#if RINGDP_HAVE_MPI
namespace {
std::string library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);
  // The first line, its runs of blanks made one ("MPICH Version:\t4.0.2", "Open MPI v4.1.4, ...").
  std::string line;
  for (const char* c = text; *c && *c != '\n' && *c != ','; ++c) {
    const bool blank = *c == ' ' || *c == '\t';
    if (!blank || (!line.empty() && line.back() != ' ')) line += blank ? ' ' : *c;
  }
  return line;
}

// A program built against one MPI and started by the other's launcher initialises as a job of
// one rank in every process (the library does not understand that launcher): N trainings that
// each believe they are alone, finishing "successfully". The launcher's own variables say how
// many ranks it started; MPI must agree.
// Which srun --mpi plugin this build's MPI needs: Open MPI 4.1 here has only a PMIx client
// (pmi2 and none fail inside MPI_Init); MPICH here speaks PMI-2 (with pmix it sees N worlds of one).
#ifdef OPEN_MPI
constexpr const char* kSrunMpi = "pmix";
#else
constexpr const char* kSrunMpi = "pmi2";
#endif

// Before MPI_Init: Open MPI started by srun without PMIx dies inside MPI_Init with a page about
// building PMI support, which is not the fix; say the one that is.
void check_srun_plugin_before_init() {
#ifdef OPEN_MPI
  // srun --mpi=pmi2 sets PMI_SIZE (so launched_by_srun() is false) and PMI_JOBID; MPICH's hydra,
  // which the mixed-launcher check after MPI_Init names, sets no PMI_JOBID.
  const bool srun_pmi2 =
      std::getenv("PMI_JOBID") && std::getenv("PMI_SIZE") && env_int("SLURM_STEP_NUM_TASKS", 0) > 1;
  if ((!launched_by_srun() && !srun_pmi2) || std::getenv("PMIX_RANK") || std::getenv("OMPI_COMM_WORLD_SIZE"))
    return;
  RINGDP_FAIL(
      "this process is task ", launcher_rank(), " of ", launcher_world_size(), " started by srun ",
      std::getenv("PMI_FD") ? "with --mpi=pmi2" : "without a PMI plugin (--mpi=none)", ", but ringdp's MPI (",
      "Open MPI) joins a Slurm job only through PMIx: run srun --mpi=pmix (or set MpiDefault=pmix in ",
      "slurm.conf; docs/launching.md)");
#endif
}

void check_launcher_matches_library() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const bool open_mpi_launcher = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
  if (launched_by_srun()) {  // srun --mpi=pmix or none: no PMI_SIZE to go by
    if (launcher_world_size() == size) return;
    RINGDP_FAIL("this process is task ", launcher_rank(), " of ", launcher_world_size(),
                " started by srun (SLURM_STEP_NUM_TASKS=", launcher_world_size(),
                "), but the MPI library ringdp ", "was built with (", library_version(), ") sees a job of ",
                size,
                " rank(s): srun's --mpi plugin is not one this MPI speaks, and every task would run alone. "
                "Run srun --mpi=",
                kSrunMpi, " (docs/launching.md)");
  }
  const char* variable = open_mpi_launcher ? "OMPI_COMM_WORLD_SIZE" : "PMI_SIZE";
  if (!std::getenv(variable) || launcher_world_size() == size) return;
  RINGDP_FAIL("this process was started as rank ", launcher_rank(), " of ", launcher_world_size(), " by ",
              open_mpi_launcher ? "Open MPI's mpirun/mpiexec" : "a PMI launcher (MPICH's mpiexec, srun)",
              " (", variable, "=", launcher_world_size(), "), but the MPI library ringdp was built with (",
              library_version(), ") sees a job of ", size,
              " rank(s): the launcher belongs to a different MPI, and every process would run alone. "
              "Launch with this build's launcher, ",
              RINGDP_MPI_LAUNCHER, " -n ", launcher_world_size(),
              " ..., or rebuild ringdp against the launcher's MPI (meson setup -Dmpi_impl=",
              open_mpi_launcher ? "openmpi" : "mpich", ")");
}
}  // namespace

namespace {
// RINGDP_MPI_THREAD: multiple (the default) gives each communicator its own worker thread;
// serialized shares one between them (comm/execution/call_queue.h); single skips Open MPI's locking on
// every call (any level above single turns it on) at the price of running every collective on the
// caller's thread.
int requested_thread_level(MpiThread level) {
  if (const auto value = settings::text(settings::Id::mpi_thread))
    level = *value == "single"       ? MpiThread::single
            : *value == "serialized" ? MpiThread::serialized
                                     : MpiThread::multiple;
  switch (level) {
    case MpiThread::single: return MPI_THREAD_SINGLE;
    case MpiThread::serialized: return MPI_THREAD_SERIALIZED;
    case MpiThread::multiple: break;
  }
  return MPI_THREAD_MULTIPLE;
}

}  // namespace

int mpi_thread_level() { return g_thread_level; }

const char* mpi_thread_level_name() {
  switch (g_thread_level) {
    case MPI_THREAD_SINGLE: return "single";
    case MPI_THREAD_FUNNELED: return "funneled";
    case MPI_THREAD_SERIALIZED: return "serialized";
    case MPI_THREAD_MULTIPLE: return "multiple";
    default: return nullptr;
  }
}

void mpi_ensure_initialized(MpiThread level) {
  static std::once_flag once;
  std::call_once(once, [level] {
    int already = 0;
    MPI_Initialized(&already);
    if (already) {  // by the program itself, at whatever level it asked for
      int provided = 0;
      MPI_Query_thread(&provided);
      g_thread_level = provided;
      g_independent_threads = provided == MPI_THREAD_MULTIPLE;
      return;
    }
    check_srun_plugin_before_init();
    read_exit_settings();
    apply_open_mpi_defaults();
    const int requested = requested_thread_level(level);
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, requested, &provided);
    g_thread_level = provided;
    // Without MPI_THREAD_MULTIPLE, the communicators share one queue (comm/execution/call_queue.h).
    g_independent_threads = requested == MPI_THREAD_MULTIPLE && provided == MPI_THREAD_MULTIPLE;
    const int needed = std::min(requested, static_cast<int>(MPI_THREAD_SERIALIZED));
    RINGDP_CHECK(provided >= needed, "the MPI library provides thread level ", provided, "; ringdp needs ",
                 needed,
                 " (MPI_THREAD_SERIALIZED) for its worker threads; RINGDP_MPI_THREAD=single asks for ",
                 "MPI_THREAD_SINGLE and runs every call on the caller's thread");
    // Return codes instead of MPI's default abort, so failures become ringdp::Errors.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    install_mpi_exit_hook();
  });
  check_launcher_matches_library();
}

bool mpi_is_initialized() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

[[noreturn]] void abort_job(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  if (mpi_is_initialized() && !in_forked_child()) {  // a forked child's MPI_Abort would be its parent's
    // Open MPI 4.1's mpirun can crash (SIGSEGV in its PMIx log handler, exit 139 instead of the
    // code) when several ranks call MPI_Abort at once, as they do for an error every rank hits
    // alike (a bad flag). Rank 0 aborts at once and ends the others; they abort themselves
    // only if it has not within 250 ms (their error may be theirs alone).
    if (launcher_rank() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(250));
#if defined(MPICH_VERSION)
    // MPICH's hydra drops what a rank has written but its proxy has not yet forwarded when
    // MPI_Abort tears the job down: the error lines of other ranks went missing in 1 run of 8
    // (tests/cli/bench.sh envelope). A moment first lets the proxy forward them.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
#endif
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  _exit(code);
}

[[noreturn]] void abort_job_from_thread(int code) {
  if (g_thread_level == MPI_THREAD_MULTIPLE) abort_job(code);
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(code);
}
bool mpi_allows_worker_thread() { return !mpi_is_initialized() || g_thread_level >= MPI_THREAD_SERIALIZED; }
bool mpi_allows_independent_threads() { return !mpi_is_initialized() || g_independent_threads; }
#else
int mpi_thread_level() { return -1; }
const char* mpi_thread_level_name() { return nullptr; }
bool mpi_allows_worker_thread() { return true; }
bool mpi_allows_independent_threads() { return true; }
void mpi_ensure_initialized(MpiThread) {}
bool mpi_is_initialized() { return false; }
[[noreturn]] void abort_job(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(code);
}
[[noreturn]] void abort_job_from_thread(int code) { abort_job(code); }
#endif

void mark_owner_process() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, [] { forking::g_forked.store(true); }); });
}

[[noreturn]] void fail_job(const std::string& prefix, const std::string& message, int code) {
  const int world = launcher_world_size();
  if (world > 1) {
    std::fprintf(stderr, "%s: rank %d: error: %s\n", prefix.c_str(), launcher_rank(), message.c_str());
  } else {
    std::fprintf(stderr, "%s: error: %s\n", prefix.c_str(), message.c_str());
  }
  abort_job(code);
}

void install_terminate_handler(const std::string& prefix) {
  g_terminate_prefix = prefix;
  std::set_terminate([] {
    std::string message = "terminated without an exception";
    if (auto current = std::current_exception()) {
      try {
        std::rethrow_exception(current);
      } catch (const std::exception& e) {
        message = e.what();
      } catch (...) {
        message = "unknown exception";
      }
    }
    fail_job(g_terminate_prefix, message, 1);
  });
}

}  // namespace ringdp::comm
