// The one place that knows which PyTorch the backend is built against. In 1.13 a backend subclasses
// c10d::ProcessGroup and its creator returns that; from 2.0 it subclasses c10d::Backend (the
// ProcessGroup then dispatches to it per device) and register_backend takes `devices=`
// (ringdp_torch/__init__.py). Everything else the backend uses (Work, the option structs, ReduceOp,
// Store) is spelt the same in both. What 2.x adds (the coalesced all-gather and reduce-scatter, the
// PREMUL_SUM factor's new field) sits behind `#if TORCH_VERSION_MAJOR >= 2` where it is used.
// Tested with Debian's 1.13.1 and PyPI's 2.15.0.
#pragma once

#include <torch/version.h>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

namespace ringdp_torch {
#if TORCH_VERSION_MAJOR >= 2
using BackendBase = ::c10d::Backend;
#else
using BackendBase = ::c10d::ProcessGroup;
#endif
}  // namespace ringdp_torch
