// lutkit — a software prefetch the optimizer keeps.
//
// GCC's interprocedural pure/const analysis counts __builtin_prefetch as free of side effects: a
// function whose only work is prefetching is marked const, and every call to it is deleted at
// -O2 (lut_weight_source::prefetch compiled to nothing that way until session 7). The empty
// volatile asm makes the prefetch a side effect the analysis must keep.
#pragma once

namespace lutkit::detail {

// request the cache line holding p into the caches (a hint: never faults, may be dropped).
// prefetcht0: on the Zen 4 host, the prefill's level 1 (which reads each prefetched chunk once,
// about one chunk's compute time later) spent 7.7% of the int8 micro-kernel's time with
// prefetcht1 and 3.7% with prefetcht0 (perf, W4 4096 x 14336, N = 128, 1 thread; bf16 the same
// with both). docs/benchmarks.md, session 8.
inline void prefetch_line(const void* p) {
  __builtin_prefetch(p, 0, 3);
#if defined(__GNUC__) || defined(__clang__)
  asm volatile("" : : "r"(p));
#endif
}

}  // namespace lutkit::detail
