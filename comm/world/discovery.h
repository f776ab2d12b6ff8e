// Folder comm/world/: who the ranks are and what connects them: discovery (below), the routes
// that pick a transport per device, the departure notices. Above the transports and algorithms,
// since it builds the one and agrees the options that pick the other; below execution.
//
// World discovery and option agreement (DiscoveredWorld): where a communicator learns who it is. Under an MPI
// launcher it initialises MPI, finds which ranks share a host (for shared memory, `auto` and the
// hierarchical all-reduce), and makes every rank take the same value of each option that shapes
// messages or picks algorithms; otherwise it is a world of one. Every MPI call a communicator's
// creation makes is here, so comm/communicator.cpp makes none. Tested under mpirun by
// tests/mpi/test_collectives.cpp (hosts, agreement) and tests/cli/bench.sh.
#pragma once

#include <memory>
#include <span>

#include "comm/comm_options.h"
#include "comm/transport/transport.h"

namespace ringdp::comm {

class Departures;  // comm/world/departures.h: not installed, so not included by the installed headers
class KeyValueStore;  // comm/bootstrap/key_value_store.h

struct DiscoveredWorld {
  std::unique_ptr<Transport> transport;  ///< every rank: MpiTransport, or LocalTransport alone
  /// This rank's host, and the ranks holding this rank's index on every host (both null in a world
  /// of one without MPI).
  std::unique_ptr<Transport> host_transport, cross_transport;
  int local_rank = 0, local_size = 1;
  int hosts = 1;
  bool uniform_hosts = true;  ///< every host holds as many ranks
  const char* bootstrap = "local";  ///< "mpi" under an MPI launcher, "store" through a key-value store
  /// What carries host tensors' messages: "mpi", "ucx" (HostTransport::ucx, or a store bootstrap) or "local".
  const char* messages = "local";
  /// How its ranks learn that one has left (comm/world/departures.h); null in a world of one without
  /// a launcher.
  std::unique_ptr<Departures> departures;
};

/// The world this process belongs to. Under MPI, `options` come back agreed: for each value that
/// must match across ranks, the minimum over ranks; segment_bytes 0 resolved.
DiscoveredWorld bootstrap_world(CommOptions& options);
/// Ends the departures' listening (a leave() that failed partway may not have; a second call does
/// nothing: their receive and sends use the world's transport), then destroys the transports, the
/// cross and host ones first. The departures themselves go with the world.
void release_transports(DiscoveredWorld& world);
/// Under RINGDP_DEBUG=INFO or DETAIL, one line on stderr: the ranks, the hosts, what started the job
/// and what carries its messages. Rank 0 calls it for the world.
void report_world(const DiscoveredWorld& world);
/// The world of `ranks` of `parent`'s (rank i of the result is parent rank ranks[i]): collective over
/// exactly those ranks, each passing the same list, already checked to be in range, without
/// duplicates and to hold the caller. `options` are the parent's, agreed again over the group.
DiscoveredWorld bootstrap_group(CommOptions& options, Transport& parent, std::span<const int> ranks);
/// The world of a job no MPI launcher started (comm/world/store_discovery.cpp): rank `rank` of
/// `size`, meeting the others through `store`; UCX carries the messages (an Error naming the
/// launchers that work when ringdp was built without UCX). Collective over the `size` ranks;
/// `options` come back agreed, as under MPI.
DiscoveredWorld bootstrap_store_world(CommOptions& options, std::shared_ptr<KeyValueStore> store, int rank,
                                      int size);
/// bootstrap_group's case for a parent made by bootstrap_store_world; a world without a transport
/// when `parent` is not one.
DiscoveredWorld bootstrap_store_group(CommOptions& options, Transport& parent, std::span<const int> ranks);

}  // namespace ringdp::comm
