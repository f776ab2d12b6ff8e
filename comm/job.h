// The job as a program built on ringdp sees it: one call that ends every rank, for an error a
// rank cannot recover from (an exception escaping main). Defined with MPI's life in this process
// (comm/bootstrap/mpi_runtime.cpp), which is not installed; this header is.
#pragma once

#include <string>

namespace ringdp::comm {

/// Prints "<prefix>: error: <message>" (rank-prefixed when the job has several ranks) on stderr
/// and ends the whole job with `code`: what each app's main does with an escaped exception.
[[noreturn]] void fail_job(const std::string& prefix, const std::string& message, int code);

}  // namespace ringdp::comm
