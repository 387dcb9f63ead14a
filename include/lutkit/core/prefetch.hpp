// lutkit — a software prefetch the optimizer keeps.
//
// GCC's interprocedural pure/const analysis counts __builtin_prefetch as free of side effects: a
// function whose only work is prefetching is marked const, and every call to it is deleted at
// -O2 (a prefetch-only helper of the GEMM's weight source compiled to nothing that way). The
// empty volatile asm makes the prefetch a side effect the analysis must keep.
#pragma once
#include <cstddef>

namespace lutkit::detail {

// Request the cache line holding p (a hint: never faults, may be dropped), into L1 and L2
// (prefetcht0) or into L2 (prefetcht1). The GEMM's chunk prefetch, a few lines per micro-kernel
// call, wants T0; a whole chunk requested at once (dequantize()) wants T1, which does not evict
// what L1 is working on (docs/design_measurements.md, "Prefetch of the next chunk").
enum class prefetch_to { l1, l2 };
template <prefetch_to To = prefetch_to::l1>
inline void prefetch_line(const void* p) {
  __builtin_prefetch(p, 0, To == prefetch_to::l1 ? 3 : 2);
#if defined(__GNUC__) || defined(__clang__)
  asm volatile("" : : "r"(p));
#endif
}

// every line of [p, p + bytes)
template <prefetch_to To = prefetch_to::l1>
inline void prefetch_span(const void* p, std::size_t bytes) {
  if (bytes == 0) return;
  const char* c = static_cast<const char*>(p);
  for (std::size_t j = 0; j < bytes; j += 64) prefetch_line<To>(c + j);
  prefetch_line<To>(c + bytes - 1);
}

}  // namespace lutkit::detail
