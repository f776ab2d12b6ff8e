// Implements bindings/torch/process_group.h (the contract is documented there).
#include "bindings/torch/process_group.h"

#include <ATen/core/ivalue.h>
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

c10::intrusive_ptr<::c10d::Work> completed(std::vector<at::Tensor> outputs) {
  auto future = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
  future->markCompleted(c10::IValue(std::move(outputs)));
  return ::c10d::Work::create_from_future(future);
}
}  // namespace

ProcessGroupRingdp::ProcessGroupRingdp(std::shared_ptr<ringdp::comm::Communicator> communicator)
    : BackendBase(communicator->rank(), communicator->size()), comm_(std::move(communicator)) {}

template <typename F>
c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::run(const char* name, std::vector<at::Tensor> outputs,
                                                         F&& body) {
  try {
    std::lock_guard lock(issue_);
    body();
  } catch (const ringdp::Error& e) {
    TORCH_CHECK(false, "ringdp: ", name, ": ", e.what());
  }
  return completed(std::move(outputs));
}

void ProcessGroupRingdp::refuse(const char* name) const {
  TORCH_CHECK(false, name, " is not supported by ringdp (docs/torch.md lists what is)");
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::broadcast(std::vector<at::Tensor>& tensors,
                                                               const ::c10d::BroadcastOptions& opts) {
  return run("broadcast", tensors, [&] {
    TensorView t(only(tensors, "broadcast"), "broadcast's tensor");
    comm_->broadcast(t.ringdp(), static_cast<int>(opts.rootRank)).wait();
    t.write_back();
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::allreduce(std::vector<at::Tensor>& tensors,
                                                               const ::c10d::AllreduceOptions& opts) {
  return run("allreduce", tensors, [&] {
    TensorView t(only(tensors, "allreduce"), "allreduce's tensor");
    comm_->all_reduce(t.ringdp(), to_ringdp(opts.reduceOp)).wait();
    t.write_back();
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const ::c10d::AllreduceCoalescedOptions& opts) {
  return run("allreduce_coalesced", tensors, [&] {
    const ringdp::ReduceOp op = to_ringdp(opts.reduceOp);
    for (const at::Tensor& tensor : tensors) {
      TensorView t(tensor, "allreduce_coalesced's tensor");
      comm_->all_reduce(t.ringdp(), op).wait();
      t.write_back();
    }
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::reduce(std::vector<at::Tensor>& tensors,
                                                            const ::c10d::ReduceOptions& opts) {
  return run("reduce", tensors, [&] {
    TensorView t(only(tensors, "reduce"), "reduce's tensor");
    comm_->reduce(t.ringdp(), static_cast<int>(opts.rootRank), to_ringdp(opts.reduceOp)).wait();
    t.write_back();
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                               std::vector<at::Tensor>& inputs,
                                                               const ::c10d::AllgatherOptions&) {
  std::vector<at::Tensor> flat_outputs = outputs.size() == 1 ? outputs[0] : std::vector<at::Tensor>{};
  return run("allgather", flat_outputs, [&] {
    const at::Tensor& input = only(inputs, "allgather");
    RINGDP_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_,
                 "allgather needs one list of ", size_, " output tensors (one per rank)");
    for (const at::Tensor& out : outputs[0]) check_like(out, input, input.numel(), "an allgather output");
    // ringdp gathers into one buffer; torch's outputs are separate tensors, filled from it.
    at::Tensor gathered = at::empty({size_ * input.numel()}, input.options());
    TensorView in(input, "allgather's input"), all(gathered, "allgather's buffer");
    comm_->all_gather(in.ringdp(), all.ringdp()).wait();
    for (int r = 0; r < size_; ++r)
      outputs[0][r].copy_(gathered.narrow(0, r * input.numel(), input.numel()).view(outputs[0][r].sizes()));
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                     const ::c10d::AllgatherOptions&) {
  return run("all_gather_into_tensor", {output}, [&] {
    check_like(output, input, size_ * input.numel(), "all_gather_into_tensor's output");
    TensorView in(input, "all_gather_into_tensor's input"), out(output, "all_gather_into_tensor's output");
    comm_->all_gather(in.ringdp(), out.ringdp()).wait();
    out.write_back();
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const ::c10d::ReduceScatterOptions& opts) {
  return run("reduce_scatter", outputs, [&] {
    const at::Tensor& output = only(outputs, "reduce_scatter");
    RINGDP_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_,
                 "reduce_scatter needs one list of ", size_, " input tensors (one per rank)");
    std::vector<at::Tensor> flat;
    for (const at::Tensor& in : inputs[0]) {
      check_like(in, output, output.numel(), "a reduce_scatter input");
      flat.push_back(in.reshape({-1}));
    }
    // ringdp scatters chunks of one buffer; torch's inputs are separate tensors, joined into it.
    at::Tensor joined = at::cat(flat);
    TensorView in(joined, "reduce_scatter's buffer"), out(output, "reduce_scatter's output");
    comm_->reduce_scatter(in.ringdp(), out.ringdp(), to_ringdp(opts.reduceOp)).wait();
    out.write_back();
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const ::c10d::ReduceScatterOptions& opts) {
  return run("reduce_scatter_tensor", {output}, [&] {
    check_like(input, output, size_ * output.numel(), "reduce_scatter_tensor's input");
    TensorView in(input, "reduce_scatter_tensor's input"), out(output, "reduce_scatter_tensor's output");
    comm_->reduce_scatter(in.ringdp(), out.ringdp(), to_ringdp(opts.reduceOp)).wait();
    out.write_back();
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::send(std::vector<at::Tensor>& tensors, int dst_rank,
                                                          int tag) {
  return run("send", tensors, [&] {
    TensorView t(only(tensors, "send"), "send's tensor");
    comm_->send(t.ringdp(), dst_rank, tag).wait();
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::recv(std::vector<at::Tensor>& tensors, int src_rank,
                                                          int tag) {
  return run("recv", tensors, [&] {
    TensorView t(only(tensors, "recv"), "recv's tensor");
    comm_->recv(t.ringdp(), src_rank, tag).wait();
    t.write_back();
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::barrier(const ::c10d::BarrierOptions&) {
  return run("barrier", {}, [&] { comm_->barrier().wait(); });
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
