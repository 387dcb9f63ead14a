// lutkit — a software prefetch the optimizer keeps.
//
// GCC's interprocedural pure/const analysis counts __builtin_prefetch as free of side effects: a
// function whose only work is prefetching is marked const, and every call to it is deleted at
// -O2 (a prefetch-only helper of the GEMM's weight source compiled to nothing that way). The
// empty volatile asm makes the prefetch a side effect the analysis must keep.
#pragma once
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

namespace lutkit::detail {

// Zen 4: AMD family 19h with AVX-512F (Zen 3, the same family, has no AVX-512). There the
// LUT-GEMV's software prefetch of its weight stream costs more than it saves; on Zen 5 it is what
// makes the 1-thread LUT-GEMV reach the read (docs/benchmarks.md, "LUT-GEMV at one thread"). The
// int8 decode kernels keep theirs on Zen 4, where it still pays (W4 g64, 1 thread, vs the plain
// read: 0.66-0.68 with it, 0.49-0.58 without).
inline bool host_is_zen4() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool z4 = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
    const bool amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u;  // "AuthenticAMD"
    if (!amd || !__get_cpuid(1, &a, &b, &c, &d)) return false;
    const unsigned family = ((a >> 8) & 0xF) == 0xF ? 0xF + ((a >> 20) & 0xFF) : (a >> 8) & 0xF;
    if (family != 0x19) return false;
    unsigned eax7 = 0, ebx7 = 0, ecx7 = 0, edx7 = 0;
    if (!__get_cpuid_count(7, 0, &eax7, &ebx7, &ecx7, &edx7)) return false;
    return ((ebx7 >> 16) & 1u) != 0;  // AVX-512F
  }();
  return z4;
#else
  return false;
#endif
}

// The distance (bytes) the LUT-GEMV prefetches its weight stream ahead on this host: the tiling
// spec's distance, or 0 where the prefetch costs more than it saves (host_is_zen4).
inline int gemv_prefetch_bytes(int spec_bytes) { return host_is_zen4() ? 0 : spec_bytes; }

// Request the cache line holding p (a hint: never faults, may be dropped), into L1 and L2
// (prefetcht0) or into L2 (prefetcht1). Which one, on the Zen 4 host (docs/benchmarks.md,
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
