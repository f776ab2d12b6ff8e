// Implements bindings/torch/process_group.h (the contract is documented there).
#include "bindings/torch/process_group.h"

#include <c10/util/Exception.h>

#include "bindings/torch/reduce_op.h"
#include "bindings/torch/tensor_view.h"
#include "core/error.h"

namespace ringdp_torch {

namespace {
const at::Tensor& only(const std::vector<at::Tensor>& tensors, const char* name) {
  RINGDP_CHECK(tensors.size() == 1, name, " got ", tensors.size(),
               " tensors; the ringdp backend takes one per call (one device per process)");
  return tensors[0];
}

// The same dtype and element count as `like`, or an Error naming the argument.
void check_like(const at::Tensor& t, const at::Tensor& like, int64_t numel, const char* what) {
  RINGDP_CHECK(t.scalar_type() == like.scalar_type(), what, " has dtype ", c10::toString(t.scalar_type()),
               " but the input has ", c10::toString(like.scalar_type()));
  RINGDP_CHECK(t.numel() == numel, what, " has ", t.numel(), " elements; expected ", numel);
}

const ringdp::comm::CollectiveOptions kAsync{.algorithm = ringdp::comm::Algorithm::automatic, .async = true};
}  // namespace

ProcessGroupRingdp::ProcessGroupRingdp(std::shared_ptr<ringdp::comm::Communicator> communicator)
    : BackendBase(communicator->rank(), communicator->size()), comm_(std::move(communicator)) {}

template <typename F>
c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::issue(const char* name, std::vector<at::Tensor> outputs,
                                                           F&& body, Completions& to) {
  auto call = c10::make_intrusive<Call>(rank_, name, std::move(outputs));
  std::lock_guard lock(issue_);
  try {
    body(*call);
  } catch (const ringdp::Error& e) {
    // What was posted before the error still runs on the call's memory: complete it first.
    if (call->posted()) {
      to.push(call);
      try {
        call->wait();
      } catch (const std::exception&) {
        // The argument error below is what the caller must hear of.
      }
    }
    TORCH_CHECK(false, "ringdp: ", name, ": ", e.what());
  }
  to.push(call);  // under the lock: calls are taken in the order they were issued
  return call;
}

void ProcessGroupRingdp::refuse(const char* name) const {
  TORCH_CHECK(false, name, " is not supported by ringdp (docs/torch.md lists what is)");
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::broadcast(std::vector<at::Tensor>& tensors,
                                                               const ::c10d::BroadcastOptions& opts) {
  return issue("broadcast", tensors, [&](Call& call) {
    TensorView& t = call.view(only(tensors, "broadcast"), "broadcast's tensor", true);
    call.add(comm_->broadcast(t.ringdp(), static_cast<int>(opts.rootRank), kAsync));
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::allreduce(std::vector<at::Tensor>& tensors,
                                                               const ::c10d::AllreduceOptions& opts) {
  return issue("allreduce", tensors, [&](Call& call) {
    TensorView& t = call.view(only(tensors, "allreduce"), "allreduce's tensor", true);
    call.add(comm_->all_reduce(t.ringdp(), to_ringdp(opts.reduceOp), kAsync));
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const ::c10d::AllreduceCoalescedOptions& opts) {
  return issue("allreduce_coalesced", tensors, [&](Call& call) {
    const ringdp::ReduceOp op = to_ringdp(opts.reduceOp);
    std::vector<TensorView*> views;  // every argument checked before the first collective is posted
    for (const at::Tensor& tensor : tensors)
      views.push_back(&call.view(tensor, "allreduce_coalesced's tensor", true));
    for (TensorView* t : views) call.add(comm_->all_reduce(t->ringdp(), op, kAsync));
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::reduce(std::vector<at::Tensor>& tensors,
                                                            const ::c10d::ReduceOptions& opts) {
  return issue("reduce", tensors, [&](Call& call) {
    TensorView& t = call.view(only(tensors, "reduce"), "reduce's tensor", true);
    call.add(comm_->reduce(t.ringdp(), static_cast<int>(opts.rootRank), to_ringdp(opts.reduceOp), kAsync));
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                               std::vector<at::Tensor>& inputs,
                                                               const ::c10d::AllgatherOptions&) {
  std::vector<at::Tensor> flat_outputs = outputs.size() == 1 ? outputs[0] : std::vector<at::Tensor>{};
  return issue("allgather", flat_outputs, [&](Call& call) {
    const at::Tensor& input = only(inputs, "allgather");
    RINGDP_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_,
                 "allgather needs one list of ", size_, " output tensors (one per rank)");
    for (const at::Tensor& out : outputs[0]) check_like(out, input, input.numel(), "an allgather output");
    // ringdp gathers into one buffer; torch's outputs are separate tensors, filled from it.
    at::Tensor gathered = at::empty({size_ * input.numel()}, input.options());
    TensorView& in = call.view(input, "allgather's input", false);
    TensorView& all = call.view(gathered, "allgather's buffer", false);
    call.add(comm_->all_gather(in.ringdp(), all.ringdp(), kAsync));
    call.then([gathered, targets = outputs[0], n = input.numel()] {
      for (size_t r = 0; r < targets.size(); ++r)
        targets[r].copy_(gathered.narrow(0, static_cast<int64_t>(r) * n, n).view(targets[r].sizes()));
    });
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                     const ::c10d::AllgatherOptions&) {
  return issue("all_gather_into_tensor", {output}, [&](Call& call) {
    check_like(output, input, size_ * input.numel(), "all_gather_into_tensor's output");
    TensorView& in = call.view(input, "all_gather_into_tensor's input", false);
    TensorView& out = call.view(output, "all_gather_into_tensor's output", true);
    call.add(comm_->all_gather(in.ringdp(), out.ringdp(), kAsync));
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const ::c10d::ReduceScatterOptions& opts) {
  return issue("reduce_scatter", outputs, [&](Call& call) {
    const at::Tensor& output = only(outputs, "reduce_scatter");
    RINGDP_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_,
                 "reduce_scatter needs one list of ", size_, " input tensors (one per rank)");
    std::vector<at::Tensor> flat;
    for (const at::Tensor& in : inputs[0]) {
      check_like(in, output, output.numel(), "a reduce_scatter input");
      flat.push_back(in.reshape({-1}));
    }
    // ringdp scatters chunks of one buffer; torch's inputs are separate tensors, joined into it.
    TensorView& in = call.view(at::cat(flat), "reduce_scatter's buffer", false);
    TensorView& out = call.view(output, "reduce_scatter's output", true);
    call.add(comm_->reduce_scatter(in.ringdp(), out.ringdp(), to_ringdp(opts.reduceOp), kAsync));
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const ::c10d::ReduceScatterOptions& opts) {
  return issue("reduce_scatter_tensor", {output}, [&](Call& call) {
    check_like(input, output, size_ * output.numel(), "reduce_scatter_tensor's input");
    TensorView& in = call.view(input, "reduce_scatter_tensor's input", false);
    TensorView& out = call.view(output, "reduce_scatter_tensor's output", true);
    call.add(comm_->reduce_scatter(in.ringdp(), out.ringdp(), to_ringdp(opts.reduceOp), kAsync));
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::send(std::vector<at::Tensor>& tensors, int dst_rank,
                                                          int tag) {
  return issue(
      "send", tensors,
      [&](Call& call) {
        TensorView& t = call.view(only(tensors, "send"), "send's tensor", false);
        call.add(comm_->send(t.ringdp(), dst_rank, tag, kAsync));
      },
      point_to_point_);
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::recv(std::vector<at::Tensor>& tensors, int src_rank,
                                                          int tag) {
  return issue(
      "recv", tensors,
      [&](Call& call) {
        TensorView& t = call.view(only(tensors, "recv"), "recv's tensor", true);
        call.add(comm_->recv(t.ringdp(), src_rank, tag, kAsync));
      },
      point_to_point_);
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::barrier(const ::c10d::BarrierOptions&) {
  return issue("barrier", {}, [&](Call& call) { call.add(comm_->barrier(kAsync)); });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>&, std::vector<at::Tensor>&, const ::c10d::AllgatherOptions&) {
  refuse("allgather_coalesced");
}
c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::gather(std::vector<std::vector<at::Tensor>>&,
                                                            std::vector<at::Tensor>&,
                                                            const ::c10d::GatherOptions&) {
  refuse("gather");
}
c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::scatter(std::vector<at::Tensor>&,
                                                             std::vector<std::vector<at::Tensor>>&,
                                                             const ::c10d::ScatterOptions&) {
  refuse("scatter");
}
c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::alltoall_base(at::Tensor&, at::Tensor&,
                                                                   std::vector<int64_t>&,
                                                                   std::vector<int64_t>&,
                                                                   const ::c10d::AllToAllOptions&) {
  refuse("all_to_all_single");
}
c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::alltoall(std::vector<at::Tensor>&,
                                                              std::vector<at::Tensor>&,
                                                              const ::c10d::AllToAllOptions&) {
  refuse("all_to_all");
}
c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::recvAnysource(std::vector<at::Tensor>&, int) {
  refuse("recv from any source");
}

}  // namespace ringdp_torch
