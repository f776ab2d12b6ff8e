// The Open MPI settings ringdp chooses before MPI_Init (comm/bootstrap/open_mpi_defaults.h), read back from
// the library itself through MPI_T: what matters is the value Open MPI runs with, not what the
// environment says. Registered in tests/mpi/meson.build twice, once as users launch (ringdp's
// value) and once with OMPI_MCA_btl_tcp_flags set by the launch (the user's value must win);
// RINGDP_TEST_USER_TCP_FLAGS says which. Built only against Open MPI.
#include <catch2/catch.hpp>

#include <mpi.h>

#include <cstdlib>
#include <string>

#include "tests/support/mpi_test.h"

using namespace ringdp::testing;

namespace {
// Open MPI's MCA_BTL_FLAGS_* (opal/mca/btl/btl.h), the same bits since Open MPI 1.x: ringdp's
// value (send, inplace, need-ack, need-csum) and the launch's in the second registration (the
// same with put).
constexpr unsigned kRingdpFlags = 0x1 | 0x8 | 0x10 | 0x20;
constexpr unsigned kLaunchFlags = kRingdpFlags | 0x2;

// The btl_tcp_flags this process runs with; the TCP BTL registers it when MPI_Init opens it.
unsigned tcp_flags() {
  int provided = 0;
  REQUIRE(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS);
  int index = -1;
  // Not found: the TCP transport was not loaded (an OMPI_MCA_btl that leaves it out), and this
  // test has nothing to read; the mpi suite's environment loads it.
  REQUIRE(MPI_T_cvar_get_index("btl_tcp_flags", &index) == MPI_SUCCESS);
  char name[64];
  char about[16];
  int name_length = sizeof name, about_length = sizeof about, verbosity = 0, bind = 0, scope = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_T_enum values = MPI_T_ENUM_NULL;
  REQUIRE(MPI_T_cvar_get_info(index, name, &name_length, &verbosity, &type, &values, about, &about_length,
                              &bind, &scope) == MPI_SUCCESS);
  REQUIRE((type == MPI_UNSIGNED || type == MPI_INT));
  MPI_T_cvar_handle handle;
  int count = 0;
  REQUIRE(MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) == MPI_SUCCESS);
  REQUIRE(count == 1);
  unsigned value = 0;
  REQUIRE(MPI_T_cvar_read(handle, &value) == MPI_SUCCESS);
  MPI_T_cvar_handle_free(&handle);
  MPI_T_finalize();
  return value;
}
}  // namespace

TEST_CASE("Open MPI's TCP transport runs without emulated RDMA unless the user asks for it", "[tcp_flags]") {
  world();  // ringdp initialises MPI here
  const bool user_set = std::getenv("RINGDP_TEST_USER_TCP_FLAGS") != nullptr;
  const unsigned flags = tcp_flags();
  INFO("btl_tcp_flags = " << flags << (user_set ? " (the launch set it)" : " (ringdp's default)"));
  // With put, a rank's requests for its peer's data queue behind its own outgoing data and one
  // side of a two-way exchange stalls (docs/lab/benchmarks.md, "The link's rate across hosts").
  CHECK(flags == (user_set ? kLaunchFlags : kRingdpFlags));
}
