// lutkit — a software prefetch the optimizer keeps.
//
// GCC's interprocedural pure/const analysis counts __builtin_prefetch as free of side effects: a
// function whose only work is prefetching is marked const, and every call to it is deleted at
// -O2 (a prefetch-only helper of the GEMM's weight source compiled to nothing that way). The
// empty volatile asm makes the prefetch a side effect the analysis must keep.
#pragma once

namespace lutkit::detail {

// Request the cache line holding p (a hint: never faults, may be dropped), into L1 and L2
// (prefetcht0) or into L2 (prefetcht1). Which one, on the Zen 4 host (docs/design_measurements.md,
// "prefetch"): the GEMM's chunk prefetch, a few lines per micro-kernel call, needs T0 (level 1
// then took 2.4% of the int8 micro-kernel's time with T0, 5.7% with T1); a whole chunk requested
// at once (dequantize()) needs T1 (T0 lost a third of its throughput).
enum class prefetch_to { l1, l2 };
template <prefetch_to To = prefetch_to::l1>
inline void prefetch_line(const void* p) {
  __builtin_prefetch(p, 0, To == prefetch_to::l1 ? 3 : 2);
#if defined(__GNUC__) || defined(__clang__)
  asm volatile("" : : "r"(p));
#endif
}

}  // namespace lutkit::detail
