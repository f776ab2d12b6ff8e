// Host copies of CUDA tensors, for a transport that reads and writes host memory only (an MPI
// without CUDA support: the library's own collectives, send and recv), ordered with the caller's
// stream as the device transports are (CollectiveOptions::stream and ready). A synchronous CUDA
// copy waits for the legacy default stream only, which torch's side streams and ringdp's do not
// synchronise with, and from pageable memory to the device it may land after it returns.
#pragma once

#include "comm/comm_options.h"
#include "tensor/tensor.h"

namespace ringdp::comm {

/// A host copy of `t` (a CUDA tensor), taken once what the caller enqueued before the call has
/// run: the host waits for `requested.ready`, else for `requested.stream` (with neither, the
/// copy's own wait for the legacy stream is the caller's order).
Tensor host_copy(const Tensor& t, const CollectiveOptions& requested);

/// `host`'s bytes into `target` (nothing when they are one tensor): into device memory on the
/// caller's `stream`, so that work enqueued there after the call's Work completes reads them;
/// without one, on the legacy default stream (work queued there afterwards reads them). With
/// `host_waits` (CommOptions::blocking_wait) the host also waits for them to land, as it waits for
/// the device transports' work.
void write_back(Tensor& target, const Tensor& host, void* stream, bool host_waits);

}  // namespace ringdp::comm
