// Open MPI's plugins loaded for good before MPI_Init, for ThreadSanitizer's sake (the .cpp says
// why).
#pragma once

namespace ringdp::testing {

/// In a ThreadSanitizer build against Open MPI, loads the plugins tests/tsan.supp names
/// (RINGDP_TEST_KEEP_PLUGINS, from tests/mpi/meson.build) so that they are never unloaded; in any
/// other build it does nothing. Call it before MPI_Init.
void keep_mpi_plugins_loaded();

}  // namespace ringdp::testing
