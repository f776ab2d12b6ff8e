// DistributedDataParallel's side of communication hooks (comm/ddp/grad_bucket.h): registering one
// and calling it for a bucket in place of the all-reduce. Kept out of
// distributed_data_parallel.cpp so that file only says where the hook is called. Tested by
// tests/mpi/test_comm_hooks.cpp.
#include "comm/ddp/distributed_data_parallel.h"
#include "core/error.h"

namespace ringdp::ddp {

void DistributedDataParallel::register_comm_hook(CommHook hook) {
  RINGDP_CHECK(hook != nullptr, "DDP: register_comm_hook: the hook is empty");
  RINGDP_CHECK(!comm_hook_, "DDP: register_comm_hook can only be called once (as in PyTorch)");
  // A hook with state (PowerSGD's error feedback) must see every synchronised step from the first.
  RINGDP_CHECK(!backward_ran_, "DDP: register_comm_hook must be called before the first backward");
  RINGDP_CHECK(join_ == nullptr,
               "DDP: register_comm_hook while a Join is live: a joined rank shadows only "
               "the default all-reduce");
  comm_hook_ = std::move(hook);
}

comm::Work DistributedDataParallel::run_comm_hook(int index) {
  const Bucket& b = buckets_[index];
  GradBucket bucket{.index = index,
                    .last = index + 1 == static_cast<int>(buckets_.size()),
                    .buffer = b.buffer,
                    .algorithm = options_.algorithm};
  for (int s : b.slots) {
    bucket.gradients.push_back(slots_[s].grad_view);
    bucket.parameters.push_back(slots_[s].param);
    bucket.names.push_back(slots_[s].name);
  }
  comm::Work work = comm_hook_(bucket);
  stats_.bytes_reduced += bucket.bytes_communicated;
  return work;
}

}  // namespace ringdp::ddp
