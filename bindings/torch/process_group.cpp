// Implements bindings/torch/process_group.h (the contract is documented there).
#include "bindings/torch/process_group.h"

#include <c10/util/Exception.h>

#include "bindings/torch/arguments.h"
#include "bindings/torch/reduce_op.h"
#include "bindings/torch/tensor_view.h"
#include "core/error.h"

namespace ringdp_torch {

ProcessGroupRingdp::ProcessGroupRingdp(std::shared_ptr<ringdp::comm::Communicator> communicator)
    : BackendBase(communicator->rank(), communicator->size()), comm_(std::move(communicator)) {}

template <typename F>
c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::issue(const char* name, std::vector<at::Tensor> outputs,
                                                           F&& body, Completions& to) {
  auto call = c10::make_intrusive<Call>(rank_, name, std::move(outputs));
  std::lock_guard lock(issue_);
  {
    std::lock_guard ended(ended_mutex_);
    TORCH_CHECK(ended_.empty(), "ringdp: ", name, ": this process group was ", ended_,
                "; make a new one (init_process_group or new_group)");
  }
  try {
    body(*call);
    call->check_outputs();
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
  if (&to == &completions_) ++sequence_;
  return call;
}

uint64_t ProcessGroupRingdp::getSequenceNumberForGroup() { return sequence_.load(); }

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6)
void ProcessGroupRingdp::setTimeout(std::chrono::milliseconds timeout) {
  TORCH_CHECK(timeout.count() > 0, "ringdp: set_timeout: the timeout must be positive; got ", timeout.count(),
              " ms");
  std::lock_guard lock(issue_);
  try {
    comm_->set_timeout(std::min(timeout, std::chrono::milliseconds(ringdp::comm::kMaxTimeout)));
  } catch (const ringdp::Error& e) {
    TORCH_CHECK(false, "ringdp: set_timeout: ", e.what());
  }
}

void ProcessGroupRingdp::shutdown() {
  {
    std::lock_guard lock(ended_mutex_);
    if (ended_.empty()) ended_ = "shut down (destroy_process_group)";
  }
  completions_.finish();
  point_to_point_.finish();
}

void ProcessGroupRingdp::abort() {
  std::lock_guard lock(ended_mutex_);
  ended_ = "aborted (_abort_process_group)";
}
#endif

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::broadcast(std::vector<at::Tensor>& tensors,
                                                               const ::c10d::BroadcastOptions& opts) {
  return issue("broadcast", tensors, [&](Call& call) {
    TensorView& t = call.view(only(tensors, "broadcast"), "broadcast's tensor", true);
    call.add(comm_->broadcast(t.ringdp(), static_cast<int>(opts.rootRank), call.options()));
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::allreduce(std::vector<at::Tensor>& tensors,
                                                               const ::c10d::AllreduceOptions& opts) {
  return issue("allreduce", tensors, [&](Call& call) {
    const Reduction reduction = to_reduction(opts.reduceOp);
    const at::Tensor& tensor = only(tensors, "allreduce");
    TensorView& t = call.view(tensor, "allreduce's tensor", true);
    if (reduction.factor) {
      check_premultipliable(tensor, "allreduce's tensor");
      t.premultiply(*reduction.factor);
    }
    call.add(comm_->all_reduce(t.ringdp(), reduction.op, call.options()));
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const ::c10d::AllreduceCoalescedOptions& opts) {
  return issue("allreduce_coalesced", tensors, [&](Call& call) {
    const Reduction reduction = to_reduction(opts.reduceOp);
    std::vector<TensorView*> views;  // every argument checked before the first collective is posted
    for (const at::Tensor& tensor : tensors) {
      views.push_back(&call.view(tensor, "allreduce_coalesced's tensor", true));
      if (reduction.factor) check_premultipliable(tensor, "allreduce_coalesced's tensor");
    }
    for (TensorView* t : views) {
      if (reduction.factor) t->premultiply(*reduction.factor);
      call.add(comm_->all_reduce(t->ringdp(), reduction.op, call.options()));
    }
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::reduce(std::vector<at::Tensor>& tensors,
                                                            const ::c10d::ReduceOptions& opts) {
  return issue("reduce", tensors, [&](Call& call) {
    TensorView& t = call.view(only(tensors, "reduce"), "reduce's tensor", true);
    call.add(comm_->reduce(t.ringdp(), static_cast<int>(opts.rootRank), to_ringdp(opts.reduceOp, "reduce"),
                           call.options()));
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
    // Outputs of different sizes gather uneven contributions: rank r's output r is its input's size.
    std::vector<int64_t> counts;
    bool even = true;
    for (const at::Tensor& out : outputs[0]) {
      check_like(out, input, out.numel(), "an allgather output");
      counts.push_back(out.numel());
      even = even && out.numel() == input.numel();
    }
    check_like(outputs[0][static_cast<size_t>(rank_)], input, input.numel(), "this rank's allgather output");
    int64_t total = 0;
    for (const int64_t c : counts) total += c;
    // ringdp gathers into one buffer; torch's outputs are separate tensors, filled from it.
    at::Tensor gathered = at::empty({total}, input.options());
    TensorView& in = call.view(input, "allgather's input", false);
    TensorView& all = call.view(gathered, "allgather's buffer", false);
    if (even)
      call.add(comm_->all_gather(in.ringdp(), all.ringdp(), call.options()));
    else
      call.add(comm_->all_gather(in.ringdp(), all.ringdp(), counts, call.options()));
    call.then([gathered, targets = outputs[0]] { unpack(gathered, targets); });
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                     const ::c10d::AllgatherOptions&) {
  return issue("all_gather_into_tensor", {output}, [&](Call& call) {
    check_like(output, input, size_ * input.numel(), "all_gather_into_tensor's output");
    TensorView& in = call.view(input, "all_gather_into_tensor's input", false);
    TensorView& out = call.view(output, "all_gather_into_tensor's output", true);
    call.add(comm_->all_gather(in.ringdp(), out.ringdp(), call.options()));
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const ::c10d::ReduceScatterOptions& opts) {
  return issue("reduce_scatter", outputs, [&](Call& call) {
    const at::Tensor& output = only(outputs, "reduce_scatter");
    RINGDP_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_,
                 "reduce_scatter needs one list of ", size_, " input tensors (one per rank)");
    const Reduction reduction = to_reduction(opts.reduceOp);
    std::vector<at::Tensor> flat;
    for (const at::Tensor& in : inputs[0]) {
      check_like(in, output, output.numel(), "a reduce_scatter input");
      flat.push_back(in.reshape({-1}));
    }
    // ringdp scatters chunks of one buffer; torch's inputs are separate tensors, joined into it.
    TensorView& in = call.view(premultiplied(at::cat(flat), reduction, "reduce_scatter's input"),
                               "reduce_scatter's buffer", false);
    TensorView& out = call.view(output, "reduce_scatter's output", true);
    call.add(comm_->reduce_scatter(in.ringdp(), out.ringdp(), reduction.op, call.options()));
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const ::c10d::ReduceScatterOptions& opts) {
  return issue("reduce_scatter_tensor", {output}, [&](Call& call) {
    check_like(input, output, size_ * output.numel(), "reduce_scatter_tensor's input");
    const Reduction reduction = to_reduction(opts.reduceOp);
    TensorView& in = call.view(premultiplied(input, reduction, "reduce_scatter_tensor's input"),
                               "reduce_scatter_tensor's input", false);
    TensorView& out = call.view(output, "reduce_scatter_tensor's output", true);
    call.add(comm_->reduce_scatter(in.ringdp(), out.ringdp(), reduction.op, call.options()));
  });
}

#if TORCH_VERSION_MAJOR >= 2
c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const ::c10d::AllgatherOptions& opts) {
  if (inputs.size() == 1 && outputs.size() == 1) return _allgather_base(outputs[0], inputs[0], opts);
  return issue("all_gather_into_tensor_coalesced", outputs, [&](Call& call) {
    check_coalesced(outputs, inputs, size_, "all_gather_into_tensor_coalesced");
    std::vector<at::Tensor> flat;
    for (const at::Tensor& input : inputs) flat.push_back(input.reshape({-1}));
    // One all-gather of the inputs packed: rank r's block of the result is its inputs one after the
    // other, so output i takes its column of blocks.
    const at::Tensor packed = at::cat(flat);
    at::Tensor gathered = at::empty({size_, packed.numel()}, packed.options());
    TensorView& in = call.view(packed, "all_gather_into_tensor_coalesced's buffer", false);
    TensorView& all = call.view(gathered, "all_gather_into_tensor_coalesced's output buffer", false);
    call.add(comm_->all_gather(in.ringdp(), all.ringdp(), call.options()));
    call.then([gathered, targets = outputs, flat] {
      int64_t at = 0;
      for (size_t i = 0; i < targets.size(); ++i) {
        targets[i].copy_(gathered.narrow(1, at, flat[i].numel()).reshape(targets[i].sizes()));
        at += flat[i].numel();
      }
    });
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const ::c10d::ReduceScatterOptions& opts) {
  if (inputs.size() == 1 && outputs.size() == 1) return _reduce_scatter_base(outputs[0], inputs[0], opts);
  return issue("reduce_scatter_tensor_coalesced", outputs, [&](Call& call) {
    check_coalesced(inputs, outputs, size_, "reduce_scatter_tensor_coalesced");
    const Reduction reduction = to_reduction(opts.reduceOp);
    std::vector<at::Tensor> columns;
    for (size_t i = 0; i < inputs.size(); ++i)
      columns.push_back(inputs[i].reshape({size_, outputs[i].numel()}));
    // Rank r's chunk of every input side by side: one reduce-scatter hands rank r its chunks.
    const at::Tensor packed =
        premultiplied(at::cat(columns, 1), reduction, "reduce_scatter_tensor_coalesced's input")
            .reshape({-1});
    at::Tensor reduced = at::empty({packed.numel() / size_}, packed.options());
    TensorView& in = call.view(packed, "reduce_scatter_tensor_coalesced's buffer", false);
    TensorView& out = call.view(reduced, "reduce_scatter_tensor_coalesced's output buffer", false);
    call.add(comm_->reduce_scatter(in.ringdp(), out.ringdp(), reduction.op, call.options()));
    call.then([reduced, targets = outputs] { unpack(reduced, targets); });
  });
}
#endif

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::send(std::vector<at::Tensor>& tensors, int dst_rank,
                                                          int tag) {
  return issue(
      "send", tensors,
      [&](Call& call) {
        TensorView& t = call.view(only(tensors, "send"), "send's tensor", false);
        call.add(comm_->send(t.ringdp(), dst_rank, tag, call.options()));
      },
      point_to_point_);
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::recv(std::vector<at::Tensor>& tensors, int src_rank,
                                                          int tag) {
  return issue(
      "recv", tensors,
      [&](Call& call) {
        TensorView& t = call.view(only(tensors, "recv"), "recv's tensor", true);
        call.add(comm_->recv(t.ringdp(), src_rank, tag, call.options()));
      },
      point_to_point_);
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::barrier(const ::c10d::BarrierOptions&) {
  return issue("barrier", {}, [&](Call& call) { call.add(comm_->barrier(call.options())); });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const ::c10d::AllgatherOptions&) {
  std::vector<at::Tensor> flat_outputs;
  for (const auto& list : outputs) flat_outputs.insert(flat_outputs.end(), list.begin(), list.end());
  return issue("allgather_coalesced", flat_outputs, [&](Call& call) {
    RINGDP_CHECK(!inputs.empty(), "allgather_coalesced got no input tensors");
    RINGDP_CHECK(static_cast<int>(outputs.size()) == size_, "allgather_coalesced needs ", size_,
                 " output lists (one per rank); got ", outputs.size());
    for (const auto& list : outputs) {
      RINGDP_CHECK(list.size() == inputs.size(), "allgather_coalesced: an output list has ", list.size(),
                   " tensors; expected ", inputs.size(), " (one per input)");
      for (size_t i = 0; i < list.size(); ++i)
        check_like(list[i], inputs[i], inputs[i].numel(), "an allgather_coalesced output");
    }
    // The inputs travel as one buffer (every rank's the same length): one all-gather, unpacked after.
    std::vector<at::Tensor> flat;
    for (const at::Tensor& in : inputs) {
      RINGDP_CHECK(in.scalar_type() == inputs[0].scalar_type(),
                   "allgather_coalesced's inputs differ in dtype (", c10::toString(in.scalar_type()), " and ",
                   c10::toString(inputs[0].scalar_type()), ")");
      flat.push_back(in.reshape({-1}));
    }
    const at::Tensor packed = at::cat(flat);
    at::Tensor gathered = at::empty({size_ * packed.numel()}, packed.options());
    TensorView& in = call.view(packed, "allgather_coalesced's buffer", false);
    TensorView& all = call.view(gathered, "allgather_coalesced's output buffer", false);
    call.add(comm_->all_gather(in.ringdp(), all.ringdp(), call.options()));
    call.then([gathered, targets = flat_outputs] { unpack(gathered, targets); });
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const ::c10d::GatherOptions& opts) {
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> flat_outputs = outputs.size() == 1 ? outputs[0] : std::vector<at::Tensor>{};
  return issue("gather", flat_outputs, [&](Call& call) {
    const at::Tensor& input = only(inputs, "gather");
    RINGDP_CHECK(root >= 0 && root < size_, "gather: root ", root, " out of range for ", size_, " ranks");
    at::Tensor gathered = at::empty({rank_ == root ? size_ * input.numel() : 0}, input.options());
    if (rank_ == root) {
      RINGDP_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_,
                   "gather needs, on root ", root, ", one list of ", size_, " output tensors (one per rank)");
      for (const at::Tensor& out : outputs[0]) check_like(out, input, input.numel(), "a gather output");
    } else {
      RINGDP_CHECK(outputs.empty(), "gather takes output tensors on root ", root, " only; rank ", rank_,
                   " passed ", outputs.size(), " lists");
    }
    TensorView& in = call.view(input, "gather's input", false);
    TensorView& all = call.view(gathered, "gather's buffer", false);
    call.add(comm_->gather(in.ringdp(), all.ringdp(), root, call.options()));
    if (rank_ == root) call.then([gathered, targets = outputs[0]] { unpack(gathered, targets); });
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::scatter(std::vector<at::Tensor>& outputs,
                                                             std::vector<std::vector<at::Tensor>>& inputs,
                                                             const ::c10d::ScatterOptions& opts) {
  const int root = static_cast<int>(opts.rootRank);
  return issue("scatter", outputs, [&](Call& call) {
    const at::Tensor& output = only(outputs, "scatter");
    RINGDP_CHECK(root >= 0 && root < size_, "scatter: root ", root, " out of range for ", size_, " ranks");
    at::Tensor packed = at::empty({0}, output.options());
    if (rank_ == root) {
      RINGDP_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_,
                   "scatter needs, on root ", root, ", one list of ", size_, " input tensors (one per rank)");
      std::vector<at::Tensor> flat;
      for (const at::Tensor& in : inputs[0]) {
        check_like(in, output, output.numel(), "a scatter input");
        flat.push_back(in.reshape({-1}));
      }
      packed = at::cat(flat);
    } else {
      RINGDP_CHECK(inputs.empty(), "scatter takes input tensors on root ", root, " only; rank ", rank_,
                   " passed ", inputs.size(), " lists");
    }
    TensorView& in = call.view(packed, "scatter's buffer", false);
    TensorView& out = call.view(output, "scatter's output", true);
    call.add(comm_->scatter(in.ringdp(), out.ringdp(), root, call.options()));
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                                   std::vector<int64_t>& output_splits,
                                                                   std::vector<int64_t>& input_splits,
                                                                   const ::c10d::AllToAllOptions&) {
  return issue("all_to_all_single", {output}, [&](Call& call) {
    RINGDP_CHECK(output.scalar_type() == input.scalar_type(), "all_to_all_single's output has dtype ",
                 c10::toString(output.scalar_type()), " but the input has ",
                 c10::toString(input.scalar_type()));
    const std::vector<int64_t> send = split_counts(input_splits, input, size_, "all_to_all_single's input");
    const std::vector<int64_t> recv =
        split_counts(output_splits, output, size_, "all_to_all_single's output");
    TensorView& in = call.view(input, "all_to_all_single's input", false);
    TensorView& out = call.view(output, "all_to_all_single's output", true);
    if (input_splits.empty() && output_splits.empty())
      call.add(comm_->all_to_all(in.ringdp(), out.ringdp(), call.options()));
    else
      call.add(comm_->all_to_all(in.ringdp(), send, out.ringdp(), recv, call.options()));
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::alltoall(std::vector<at::Tensor>& outputs,
                                                              std::vector<at::Tensor>& inputs,
                                                              const ::c10d::AllToAllOptions&) {
  return issue("all_to_all", outputs, [&](Call& call) {
    RINGDP_CHECK(static_cast<int>(inputs.size()) == size_ && static_cast<int>(outputs.size()) == size_,
                 "all_to_all needs ", size_, " input and ", size_, " output tensors (one per rank); got ",
                 inputs.size(), " and ", outputs.size());
    std::vector<int64_t> send, recv;
    std::vector<at::Tensor> flat;
    for (const at::Tensor& in : inputs) {
      RINGDP_CHECK(in.scalar_type() == inputs[0].scalar_type(), "all_to_all's inputs differ in dtype (",
                   c10::toString(in.scalar_type()), " and ", c10::toString(inputs[0].scalar_type()), ")");
      flat.push_back(in.reshape({-1}));
      send.push_back(in.numel());
    }
    int64_t total = 0;
    for (const at::Tensor& out : outputs) {
      RINGDP_CHECK(out.scalar_type() == inputs[0].scalar_type(), "an all_to_all output has dtype ",
                   c10::toString(out.scalar_type()), " but the inputs have ",
                   c10::toString(inputs[0].scalar_type()));
      recv.push_back(out.numel());
      total += out.numel();
    }
    // Torch's lists travel as one buffer each way: joined before, split into the outputs after.
    at::Tensor received = at::empty({total}, inputs[0].options());
    TensorView& in = call.view(at::cat(flat), "all_to_all's buffer", false);
    TensorView& out = call.view(received, "all_to_all's output buffer", false);
    call.add(comm_->all_to_all(in.ringdp(), send, out.ringdp(), recv, call.options()));
    call.then([received, targets = outputs] { unpack(received, targets); });
  });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupRingdp::recvAnysource(std::vector<at::Tensor>& tensors,
                                                                   int tag) {
  return issue(
      "recv from any source", tensors,
      [&](Call& call) {
        TensorView& t = call.view(only(tensors, "recv"), "recv's tensor", true);
        call.add(comm_->recv_any(t.ringdp(), call.source_slot(), tag, call.options()));
      },
      point_to_point_);
}

}  // namespace ringdp_torch
