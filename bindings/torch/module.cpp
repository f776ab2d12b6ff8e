// The Python module ringdp_torch: importing it registers the torch.distributed backend "ringdp",
// whose creator starts a ringdp Communicator: under an MPI launcher (mpirun, mpiexec, srun) over
// the MPI world, checking that torch's rank and world size are MPI's; under any other launcher
// (torchrun, mp.spawn, a framework's own) through the store torch hands it, with UCX carrying the
// messages and no MPI at all. new_group's groups are communicators over some of the world's ranks
// (docs/torch.md, docs/launching.md).
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/utils/pybind.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bindings/torch/completions.h"
#include "bindings/torch/process_group.h"
#include "bindings/torch/terminate_report.h"
#include "bindings/torch/torch_store.h"
#include "comm/bootstrap/exit_hooks.h"
#include "comm/bootstrap/mpi_runtime.h"
#include "core/error.h"

namespace py = pybind11;

namespace ringdp_torch {
namespace {

// The default group's communicator, which new_group's groups are made from (torch numbers a
// group's ranks in the default group: the MPI world, ordered by torch's ranks).
std::mutex g_world_mutex;
std::weak_ptr<ringdp::comm::Communicator> g_world;

// Whether the ranks meet through torch's store rather than MPI: no MPI launcher started them, or
// one did but torch's world is not its tasks (torchrun or mp.spawn inside an srun or mpirun task,
// as in `srun -N 2 torchrun --nproc_per_node 4 ...`, whose processes inherit the task's variables).
bool meets_through_store(int rank, int size) {
  if (size <= 1) return false;
  if (!ringdp::comm::launched_by_mpi_launcher()) return true;
  if (!std::getenv("TORCHELASTIC_RUN_ID") && ringdp::comm::launcher_world_size() == size) return false;
  if (rank == 0 && ringdp::comm::launcher_world_size() != size)
    std::fprintf(
        stderr,
        "ringdp: torch's world of %d ranks is not the %d task(s) of the MPI launcher that started this "
        "process: its ranks meet through torch's store (torchrun or mp.spawn inside the launcher's "
        "tasks). Should world_size simply be wrong, the ranks wait for ranks that never come until "
        "torch's timeout.\n",
        size, ringdp::comm::launcher_world_size());
  return true;
}

std::shared_ptr<ringdp::comm::Communicator> create_world(int rank, int size,
                                                         const std::chrono::duration<float>& timeout,
                                                         const c10::intrusive_ptr<::c10d::Store>& store) {
  ringdp::comm::CommOptions options;
  // torch's timeout (init_process_group(timeout=...), 30 min by default) is the watchdog's, unless
  // RINGDP_TIMEOUT says otherwise.
  options.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  // As gloo: a call past it raises the watchdog's report, catchable, and the group is broken.
  options.timeout_raises = true;
  // torch may number the ranks in another order than MPI (node-major numbering under --map-by
  // node, or any permutation a launch script computes), as gloo allows.
  options.rank = rank;
  if (options.timeout > ringdp::comm::kMaxTimeout) options.timeout = ringdp::comm::kMaxTimeout;
  if (meets_through_store(rank, size))
    return ringdp::comm::Communicator::init(options, std::make_shared<TorchStore>(store), rank, size);
  auto communicator = ringdp::comm::Communicator::init(options);
  RINGDP_CHECK(communicator->size() == size, "torch.distributed asks for world_size ", size, " but MPI has ",
               communicator->size(), " rank", communicator->size() == 1 ? "" : "s",
               "; pass world_size from OMPI_COMM_WORLD_SIZE, PMI_SIZE or SLURM_NTASKS (docs/torch.md)");
  // Under a launcher the world is ordered by torch's ranks (CommOptions::rank), so this holds
  // there; a world of one has only rank 0.
  RINGDP_CHECK(communicator->rank() == rank, "torch.distributed says this is rank ", rank, " of ", size,
               ", but this process runs alone (no MPI launcher started it)");
  return communicator;
}

std::shared_ptr<ringdp::comm::Communicator> create_group(const std::vector<int64_t>& global_ranks, int rank,
                                                         int size,
                                                         const std::chrono::duration<float>& timeout) {
  std::shared_ptr<ringdp::comm::Communicator> world;
  {
    std::lock_guard lock(g_world_mutex);
    world = g_world.lock();
  }
  RINGDP_CHECK(world,
               "new_group: the default process group is not a ringdp one (init_process_group('ringdp') "
               "first); ringdp makes its groups from it");
  const std::vector<int> ranks(global_ranks.begin(), global_ranks.end());
  // new_group(timeout=...) is the group's watchdog timeout (RINGDP_TIMEOUT still wins).
  auto limit = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  if (limit > ringdp::comm::kMaxTimeout) limit = ringdp::comm::kMaxTimeout;
  auto group = world->group(ranks, limit);
  RINGDP_CHECK(group->size() == size && group->rank() == rank, "new_group: torch says this is rank ", rank,
               " of ", size, " but ringdp's group has it as rank ", group->rank(), " of ", group->size());
  return group;
}

// The creator, as torch calls a backend registered with extended_api=True: the default group
// has no global_ranks_in_group; new_group's have the ranks, in the default group, of its members
// (only members are called).
c10::intrusive_ptr<BackendBase> create(const ::c10d::DistributedBackendOptions& o, const py::object&) {
  if (o.global_ranks_in_group.empty()) {
    auto world = create_world(o.group_rank, o.group_size, o.timeout, o.store);
    {
      std::lock_guard lock(g_world_mutex);
      g_world = world;
    }
    return c10::make_intrusive<ProcessGroupRingdp>(std::move(world));
  }
  return c10::make_intrusive<ProcessGroupRingdp>(
      create_group(o.global_ranks_in_group, o.group_rank, o.group_size, o.timeout));
}

// Why this process leaves, as its peers are told (comm/world/departures.h): an uncaught exception's type
// and message, recorded by the sys.excepthook below, which runs before Python's exit hooks.
std::mutex g_why_mutex;
constexpr const char* kExiting = "its Python process is exiting";
ringdp::comm::Leaving g_why{.why = kExiting};

void record_uncaught(const py::object& type, const py::object& value) {
  std::string text = py::str(type.attr("__name__"));
  const std::string message = py::str(value);
  if (!message.empty()) text += ": " + message;
  std::lock_guard lock(g_why_mutex);
  g_why = {.why = "its Python process is exiting after an uncaught " + text, .failed = true};
}

// Python's exit, before the interpreter finalizes: completes what the completion threads hold and
// stops them (they may drop the last reference to a tensor Python owns, which needs a working
// interpreter), then leaves every ringdp communicator alive, so that peers waiting for this rank
// learn within seconds why it went. It does not wait for them to leave: Python gives an exit hook
// no exit status, so a rank that failed by sys.exit(1) is not known to have failed until
// MPI_Finalize's hook (comm/bootstrap/mpi_runtime.h), which waits for them, with a bound then.
void at_exit() {
  // A child forked from a rank has no completion threads and is no rank (comm/bootstrap/mpi_runtime.h).
  if (ringdp::comm::in_forked_child()) return;
  ringdp::comm::Leaving why;
  {
    std::lock_guard lock(g_why_mutex);
    why = g_why;
  }
  // The interpreter sets sys.last_value for the exception that ended the script: a program that
  // called sys.excepthook itself, to log an error, and went on has not failed.
  if (why.failed && !py::hasattr(py::module::import("sys"), "last_value")) why = {.why = kExiting};
  why.process_exit = true;
  set_exit_phase("in ringdp's exit hook (stopping the completion threads)");
  py::gil_scoped_release no_gil;
  Completions::stop_all();
  set_exit_phase("in ringdp's exit hook (leaving the job)");
  ringdp::comm::leave_job(why);
  set_exit_phase("past ringdp's exit hook (Python's later exit hooks, finalization, MPI_Finalize)");
}

// Chains a hook that records the uncaught exception to the one in place (torch's, a user's).
void install_exit_hooks(py::module& m) {
  py::module sys = py::module::import("sys");
  py::object previous = sys.attr("excepthook");
  sys.attr("excepthook") =
      py::cpp_function([previous](py::object type, py::object value, py::object traceback) {
        try {
          record_uncaught(type, value);
        } catch (const std::exception&) {  // a str() that raised: the default reason stays
        }
        previous(type, value, traceback);
      });
  m.def("_at_exit", &at_exit, "ringdp's exit hook (atexit): stops the completion threads, leaves the job");
  py::module::import("atexit").attr("register")(m.attr("_at_exit"));
}

}  // namespace
}  // namespace ringdp_torch

PYBIND11_MODULE(_ringdp_torch, m) {
  m.doc() = "torch.distributed backend 'ringdp': import this module, then init_process_group('ringdp')";
  // Registers torch's ProcessGroup and Store with pybind11, which the creator's types need.
  py::module::import("torch.distributed");
  ringdp_torch::install_exit_hooks(m);
  ringdp_torch::install_terminate_report();
  m.def("create_process_group", &ringdp_torch::create, py::arg("options"), py::arg("pg_options"),
        py::call_guard<py::gil_scoped_release>(),
        "The backend's creator, as torch.distributed calls it with extended_api=True: "
        "(_DistributedBackendOptions, pg_options)");
  py::object backend = py::module::import("torch.distributed").attr("Backend");
  // PyTorch 2.x takes the devices a backend serves and warns when they are not given.
  py::object parameters =
      py::module::import("inspect").attr("signature")(backend.attr("register_backend")).attr("parameters");
  // CUDA tensors where the backend carries them (bindings/torch/completions.h); "cpu:ringdp,cuda:nccl"
  // gives them to NCCL instead, as torch documents.
  m.attr("cuda_tensors") = py::bool_(RINGDP_TORCH_CUDA != 0);
  if (parameters.contains("devices"))
    backend.attr("register_backend")("ringdp", m.attr("create_process_group"), py::arg("extended_api") = true,
                                     py::arg("devices") = RINGDP_TORCH_CUDA
                                                              ? py::tuple(py::make_tuple("cpu", "cuda"))
                                                              : py::tuple(py::make_tuple("cpu")));
  else
    backend.attr("register_backend")("ringdp", m.attr("create_process_group"),
                                     py::arg("extended_api") = true);
}
