// Open MPI settings ringdp chooses for its ranks before MPI_Init, each only where the launch has
// not set it (in the environment, which is where mpirun's --mca and -x put it too), so a choice made
// at launch wins; one in an MCA parameter file does not, since Open MPI ranks the environment above
// the files (docs/launching.md). Tested by tests/mpi/test_open_mpi_defaults.cpp; measured in
// docs/lab/benchmarks.md, "The link's rate across hosts".
#pragma once

namespace ringdp::comm {

/// The value ringdp gives btl_tcp_flags (Open MPI's default less `put` and `hetero-rdma`).
inline constexpr const char* kTcpFlags = "send,inplace,need-ack,need-csum";

/// Sets OMPI_MCA_btl_tcp_flags to kTcpFlags where it is unset; call before MPI_Init. A no-op
/// when this build's MPI is not Open MPI.
///
/// Why: with `put` on, Open MPI's TCP BTL moves a large message by the receiver asking for each
/// piece (an emulated RDMA write per fragment), and those requests travel on the same TCP
/// connection as the receiver's own outgoing data. When both ranks send at once (every step of a
/// ring or recursive-doubling all-reduce), one rank's requests queue behind megabytes of its own
/// data and its peer's side of the exchange stalls: 60-79 MB/s each way instead of 119 on a
/// 1 Gbit/s link, in every run of ringdp's exchange and in some of a plain MPI_Irecv/MPI_Isend
/// pair. Without `put` the sender streams a message once the receiver has answered its first
/// fragment, and both ways run at the link's rate.
void apply_open_mpi_defaults();

}  // namespace ringdp::comm
