// The emulator's scheduler and runtime shims (see cuda_emu.h).
#include "tests/doubles/cuda/cuda_emu.h"

#include <cstdlib>
#include <sstream>

namespace ringdp::doubles {

dim3 g_block_idx, g_block_dim, g_grid_dim;

BlockRun& block_run() {
  static BlockRun run;
  return run;
}

namespace {

size_t stack_bytes() {
  const char* env = std::getenv("RINGDP_EMU_STACK_KB");
  return (env ? static_cast<size_t>(std::atoi(env)) : 256) * 1024;
}

// Switching: swapcontext saves and restores the signal mask with a system call on every switch,
// which made it most of the emulator's run time. A fiber is entered once with swapcontext (to get
// onto its own stack); every later switch is _setjmp/_longjmp, which touch registers only. Under
// AddressSanitizer, which tracks stacks through swapcontext, all switches use swapcontext.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kFastSwitch = false;
#else
constexpr bool kFastSwitch = true;
#endif

void fiber_entry() {
  BlockRun& run = block_run();
  run.body();
  run.current->done = true;
  if (kFastSwitch) _longjmp(run.scheduler_resume, 1);
  // Otherwise returning resumes uc_link: the scheduler.
}

// Not inlined: _setjmp must not share a frame with the scheduler's loop variables (-Wclobbered).
[[gnu::noinline]] void resume(BlockRun& run, Fiber& f) {
  run.current = &f;
  if (!kFastSwitch) {
    swapcontext(&run.scheduler, &f.context);
    return;
  }
  if (_setjmp(run.scheduler_resume) == 0) {
    if (!f.started) {
      f.started = true;
      swapcontext(&run.scheduler, &f.context);
    } else {
      _longjmp(f.resume, 1);
    }
  }
}

// Never-repeating values for BlockRun::interval and warp_sync.
uint64_t next_interval() {
  static uint64_t counter = 0;
  return ++counter;
}

void run_block(BlockRun& run) {
  const int threads = static_cast<int>(run.fibers.size());
  run.block_first_interval = run.interval = next_interval();
  run.block_serial = run.interval;
  for (uint64_t& w : run.warp_sync) w = next_interval();
  for (int t = 0; t < threads; ++t) {
    Fiber& f = run.fibers[t];
    f.done = false;
    f.started = false;
    f.wait = Fiber::Wait::none;
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = run.stacks[t].data();
    f.context.uc_stack.ss_size = run.stacks[t].size();
    f.context.uc_link = &run.scheduler;
    makecontext(&f.context, fiber_entry, 0);
  }
  for (;;) {
    for (Fiber& f : run.fibers) {
      if (f.done || f.wait != Fiber::Wait::none) continue;
      resume(run, f);
      if (!run.error.empty()) return;
    }
    int waiting_block = 0, done = 0;
    for (const Fiber& f : run.fibers) {
      waiting_block += f.wait == Fiber::Wait::block;
      done += f.done;
    }
    if (done == threads) return;
    bool released = false;
    // Warps whose live threads all wait at a warp operation go on together.
    for (int w = 0; w * 32 < threads; ++w) {
      const int end = std::min(threads, (w + 1) * 32);
      int live = 0, at_warp = 0;
      for (int t = w * 32; t < end; ++t) {
        live += !run.fibers[t].done;
        at_warp += run.fibers[t].wait == Fiber::Wait::warp;
      }
      if (at_warp > 0 && at_warp == live) {
        for (int t = w * 32; t < end; ++t) run.fibers[t].wait = Fiber::Wait::none;
        run.warp_sync[static_cast<size_t>(w)] = next_interval();
        released = true;
      }
    }
    if (released) continue;
    if (waiting_block + done == threads && waiting_block > 0) {
      if (done > 0) {
        const Fiber* gone = nullptr;
        const Fiber* waiting = nullptr;
        for (const Fiber& f : run.fibers) {
          if (f.done && !gone) gone = &f;
          if (f.wait == Fiber::Wait::block && !waiting) waiting = &f;
        }
        run.error = "divergent __syncthreads(): " + describe_where(gone->linear) + " returned while " +
                    describe_where(waiting->linear) + " waits at the barrier";
        return;
      }
      for (Fiber& f : run.fibers) f.wait = Fiber::Wait::none;
      run.interval = next_interval();
      continue;
    }
    // Some wait at a warp operation that part of their warp never reaches.
    for (const Fiber& f : run.fibers) {
      if (f.wait == Fiber::Wait::warp) {
        run.error = "warp operation not reached by the whole warp: " + describe_where(f.linear) +
                    " waits for its warp";
        return;
      }
    }
    run.error = "emulator deadlock in kernel " + std::string(run.kernel);
    return;
  }
}

}  // namespace

std::string describe_block() {
  std::ostringstream out;
  out << "kernel " << block_run().kernel << ", block (" << g_block_idx.x << "," << g_block_idx.y << ","
      << g_block_idx.z << ")";
  return out.str();
}

std::string describe_thread(int linear) {
  const dim3& t = block_run().fibers[static_cast<size_t>(linear)].thread_idx;
  std::ostringstream out;
  out << "thread (" << t.x << "," << t.y << "," << t.z << ")";
  return out.str();
}

std::string describe_where(int linear) { return describe_block() + ", " + describe_thread(linear); }

void fail_thread(std::string message) {
  BlockRun& run = block_run();
  if (run.error.empty()) run.error = std::move(message);
  Fiber& f = *run.current;
  f.done = true;
  // Back to the scheduler for good: it sees the error and ends the launch. The fiber's frames
  // are abandoned, not unwound (an exception cannot cross a fiber boundary).
  if (!kFastSwitch) {
    swapcontext(&f.context, &run.scheduler);
  } else {
    _longjmp(run.scheduler_resume, 1);
  }
  std::abort();  // a failed fiber is never resumed
}

void check_launch_bounds(long long bound, const char* bound_text) {
  const BlockRun& run = block_run();
  const long long threads = static_cast<long long>(run.fibers.size());
  if (threads <= bound) return;
  fail_thread(detail::concat(
      "launch with ", threads, " threads per block exceeds the kernel's __launch_bounds__(", bound_text,
      ") = ", bound, " (a GPU refuses it too): ", describe_where(run.current->linear)));
}

void wait_at(Fiber::Wait scope) {
  BlockRun& run = block_run();
  Fiber& f = *run.current;
  f.wait = scope;
  if (!kFastSwitch) {
    swapcontext(&f.context, &run.scheduler);
  } else if (_setjmp(f.resume) == 0) {
    _longjmp(run.scheduler_resume, 1);
  }
}

void run_launch(const char* kernel, dim3 grid, dim3 block, size_t shared_bytes,
                const std::function<void()>& body) {
  const unsigned long long threads = 1ull * block.x * block.y * block.z;
  RINGDP_CHECK(threads >= 1 && threads <= 1024, "emulated launch of ", kernel, " with ", threads,
               " threads per block (CUDA allows 1 to 1024)");
  RINGDP_CHECK(grid.x >= 1 && grid.y >= 1 && grid.z >= 1 && grid.y <= 65535 && grid.z <= 65535,
               "emulated launch of ", kernel, " with grid (", grid.x, ",", grid.y, ",", grid.z, ")");
  BlockRun& run = block_run();
  run.kernel = kernel;
  run.body = body;
  run.error.clear();
  run.fibers.assign(threads, Fiber{});
  const size_t stack = stack_bytes();
  if (run.stacks.size() < threads) run.stacks.resize(threads);
  for (auto& s : run.stacks)
    if (s.size() != stack) s.assign(stack, 0);
  run.warp_slots.assign((threads + 31) / 32, {});
  run.warp_sync.assign((threads + 31) / 32, 0);
  RINGDP_CHECK(shared_bytes <= 228 * 1024, "emulated launch of ", kernel, " asks for ", shared_bytes,
               " bytes of dynamic shared memory (at most 227 KiB on sm_90)");
  run.dynamic_shared.assign(shared_bytes, 0xFF);  // not zero: a GPU gives no initial value either
  for (unsigned z = 0, t = 0; z < block.z; ++z)
    for (unsigned y = 0; y < block.y; ++y)
      for (unsigned x = 0; x < block.x; ++x, ++t) {
        run.fibers[t].thread_idx = dim3(x, y, z);
        run.fibers[t].linear = static_cast<int>(t);
      }
  g_block_dim = block;
  g_grid_dim = grid;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        g_block_idx = dim3(bx, by, bz);
        run_block(run);
        if (!run.error.empty()) {
          run.body = nullptr;
          RINGDP_FAIL("CUDA emulator: ", run.error);
        }
      }
  run.body = nullptr;
}

}  // namespace ringdp::doubles
