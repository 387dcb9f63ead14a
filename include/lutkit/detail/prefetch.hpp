// lutkit — a software prefetch the optimizer keeps.
//
// GCC's interprocedural pure/const analysis counts __builtin_prefetch as free of side effects: a
// function whose only work is prefetching is marked const, and every call to it is deleted at
// -O2 (lut_weight_source::prefetch compiled to nothing that way until session 7). The empty
// volatile asm makes the prefetch a side effect the analysis must keep.
#pragma once

namespace lutkit::detail {

// request the cache line holding p into L2 (a hint: never faults, may be dropped)
inline void prefetch_l2(const void* p) {
  __builtin_prefetch(p, 0, 2);
#if defined(__GNUC__) || defined(__clang__)
  asm volatile("" : : "r"(p));
#endif
}

}  // namespace lutkit::detail
