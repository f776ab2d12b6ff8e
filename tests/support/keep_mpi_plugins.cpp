// tests/tsan.supp ignores what some of Open MPI's plugins do through intercepted calls (one
// called_from_lib line each: they copy message data on whichever thread drives progress, ordered
// by means TSan cannot see). TSan ends the process with an error when a library such a line
// matched is unloaded, and Open MPI unloads plugins both in MPI_Init (those it does not select,
// e.g. the shared-memory one with one rank) and in MPI_Finalize; 4.1 has no setting to keep them.
// A reference of our own, taken before MPI_Init with RTLD_NODELETE, keeps each mapped until exit.
#include "tests/support/keep_mpi_plugins.h"

#include <dlfcn.h>

#include <cstdio>
#include <sstream>
#include <string>

namespace ringdp::testing {

void keep_mpi_plugins_loaded() {
  std::istringstream paths(RINGDP_TEST_KEEP_PLUGINS);
  std::string path;
  while (std::getline(paths, path, ':')) {
    if (path.empty()) continue;
    // The handle is never closed: that is the point. A plugin missing here only costs TSan's
    // error at its unload, so say which and go on.
    if (!dlopen(path.c_str(), RTLD_LAZY | RTLD_NODELETE))
      std::fprintf(stderr, "ringdp-test: could not keep %s loaded: %s\n", path.c_str(), dlerror());
  }
}

}  // namespace ringdp::testing
