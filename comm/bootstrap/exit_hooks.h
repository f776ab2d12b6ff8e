// The process's leaving of the job: what each communicator does when its process leaves (the
// exit hooks, run by leave_job or at exit), and MPI's own exit hook where ringdp initialised MPI. That
// one waits at a last barrier for every rank before MPI_Finalize: without bound for a rank that
// finished (saying so past the collective timeout), RINGDP_EXIT_GRACE for one that exits non-zero,
// which then exits without MPI_Finalize for its launcher to end the job (docs/errors.md, "A rank
// that leaves").
#pragma once

#include <chrono>
#include <functional>

#include "comm/leaving.h"
#include "config.h"

namespace ringdp::comm {

/// Registers what a communicator does when its process leaves the job (Communicator::leave): run
/// by leave_job, or at exit just before MPI_Finalize, so that no rank reaches MPI_Finalize (which
/// waits for every rank) while a peer waits for it in a collective. Returns the handle
/// drop_exit_hook takes.
int add_exit_hook(std::function<void(const Leaving&)> leave);
/// Forgets a hook (the communicator's destructor); waits for a leave_job running it.
void drop_exit_hook(int handle);
/// Runs every hook still registered, the newest first (a world's groups before it), and forgets
/// them: what a Python process does at exit (bindings/torch), before torch's objects go.
void leave_job(const Leaving& leaving);
/// Registers a step that runs at exit after leave_job and before MPI_Finalize (never in a forked
/// child, nor where the program finalized MPI itself, nor in a rank that skips MPI_Finalize: one
/// that exits non-zero without its peers at the exit barrier, or whose barrier failed): what must complete
/// while every peer is still inside MPI, such as the departure notices this rank sent (MPI_Finalize with a
/// send not complete is erroneous; over TCP it killed a rank with SIGPIPE when a peer closed its connection
/// first).
void before_finalize(std::function<void()> step);

/// Notes a communicator's collective timeout: a rank that finished says that it still waits at
/// exit once the wait outlasts the longest one noted.
void note_collective_timeout(std::chrono::milliseconds timeout);

#if RINGDP_HAVE_MPI
/// For mpi_ensure_initialized, where ringdp initialises MPI: reads how long MPI's exit hook waits
/// for a failed rank's peers (RINGDP_EXIT_GRACE) before MPI_Init, so a bad value is an error at
/// start-up; then registers the hook after MPI_Init, so it runs before MPI's own exit handlers.
/// Where a program initialised MPI itself, neither runs: it finalizes MPI itself.
void read_exit_settings();
void install_mpi_exit_hook();
#endif

}  // namespace ringdp::comm
