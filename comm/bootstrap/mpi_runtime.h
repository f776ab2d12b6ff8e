// Folder comm/bootstrap/: the job's runtime, the lowest layer of comm/ above its public words.
// What every transport and the call queue consult about the process (MPI's life, its thread
// level, fork) and, in time, the out-of-band exchange a transport is built from. Nothing here
// knows a transport, an algorithm or a communicator (tests/lint/layers.py).
//
// The process-wide MPI state: initialised once (MPI_THREAD_MULTIPLE, so that each communicator's
// worker thread calls MPI beside the others; MPI_THREAD_SERIALIZED or SINGLE when
// RINGDP_MPI_THREAD asks), finalised once at exit, and the one place that can end the whole job.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "comm/job.h"
#include "comm/types.h"

namespace ringdp::comm {

/// True when a launcher (mpirun/mpiexec, srun with or without PMI) started this process.
bool launched_by_mpi_launcher();
/// True when Slurm's srun started this process as a task of a job step (not mpirun inside an
/// allocation, whose ranks carry the MPI launcher's variables, and not a batch script itself).
bool launched_by_srun();
/// Ranks the launcher says the job has, or 1 (srun's SLURM_STEP_NUM_TASKS when no MPI launcher's
/// variable is set).
int launcher_world_size();
/// This process's rank as the launcher says (0 without one): usable before MPI is initialised,
/// e.g. so that only rank 0 prints a command-line error every rank hits alike.
int launcher_rank();

/// Whether this MPI moves device memory itself: RINGDP_MPI_CUDA_AWARE=0/1 decides when set,
/// else MPIX_Query_cuda_support() where the MPI has it (Open MPI), else false.
bool mpi_cuda_aware();

/// Initialises MPI if it is not yet, asking for `level` (RINGDP_MPI_THREAD overrides; multiple
/// accepts an MPI that provides serialized only); no-op without MPI built in.
/// Throws when the launcher's variables name more ranks than MPI sees (a launcher of another MPI,
/// docs/errors.md).
void mpi_ensure_initialized(MpiThread level = MpiThread::multiple);
bool mpi_is_initialized();
/// The thread level MPI provides (MPI_THREAD_SINGLE ... MPI_THREAD_MULTIPLE), -1 before MPI is
/// initialised or without MPI.
int mpi_thread_level();
/// That level's name ("single" ... "multiple"); null before MPI is initialised or without MPI.
const char* mpi_thread_level_name();
/// Whether another thread may call MPI while the caller's thread is not: MPI provides
/// MPI_THREAD_SERIALIZED or more, or is not in use. False when a program initialised MPI itself
/// at a lower level, or with RINGDP_MPI_THREAD=single: then every communicator runs all its calls,
/// asynchronous ones too, on the caller's thread (comm/execution/call_queue.h).
bool mpi_allows_worker_thread();
/// Whether threads may call MPI at once and ringdp asked for that: MPI provides
/// MPI_THREAD_MULTIPLE (and RINGDP_MPI_THREAD did not ask for less), or is not in use. Then each
/// communicator has a call queue of its own (comm/execution/call_queue.h).
bool mpi_allows_independent_threads();

/// Prints nothing; ends every rank of the job with `code` (MPI_Abort), or this process alone
/// when there is no MPI job.
[[noreturn]] void abort_job(int code);

/// abort_job for a thread that may run while another is inside MPI (the CUDA transports'
/// watchdog): under MPI_THREAD_SERIALIZED it must not call MPI at all, so unless MPI provides
/// MPI_THREAD_MULTIPLE it ends this process alone with `code`, and the launcher ends the rest
/// of the job, as Open MPI's mpirun and MPICH's hydra do for a rank that exits without
/// MPI_Finalize.
[[noreturn]] void abort_job_from_thread(int code);

/// Records that this process owns the job's state (MPI, the communicators' threads): the first
/// call wins. Communicator creation calls it.
void mark_owner_process();
namespace forking {
/// Set in the child by a pthread_atfork handler (mark_owner_process): a flag read inline, not a
/// getpid() comparison, since every blocking call asks (a system call or even a function call is
/// a visible part of a small collective's cost, docs/benchmarks.md).
inline std::atomic<bool> g_forked{false};
}  // namespace forking
/// True in a process forked from the owner after mark_owner_process() (os.fork(), a DataLoader's
/// worker): MPI and the communicators' threads are the parent's, and the child must touch
/// neither. Its communicators refuse every call, naming the fork, and are let go unfreed.
inline bool in_forked_child() { return forking::g_forked.load(std::memory_order_relaxed); }

/// Installs a std::terminate handler that reports the exception and calls abort_job, so an
/// exception escaping on any thread (a communicator worker included) cannot leave peers waiting.
void install_terminate_handler(const std::string& prefix);

}  // namespace ringdp::comm
