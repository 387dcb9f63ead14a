// lutkit — every run-time CPU check of the host target, and its micro-architecture switches, in
// one place. Each kernel set of targets/host/ names the feature set it needs here; the
// registration points (<family>/targets.hpp) ask these functions, never __builtin_cpu_supports.
// On a non-x86 host every x86 set is absent (the Highway LUT-GEMV dispatches by its own table).
#pragma once
#include <algorithm>
#include <cstddef>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define LUTKIT_HOST_X86 1
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#endif

namespace lutkit::detail::host_features {

#if defined(LUTKIT_HOST_X86)
// one answer per process: the checks run once, at the first call
#define LUTKIT_CPU_SET(...)                \
  static const bool ok = [] {              \
    __builtin_cpu_init();                  \
    return __VA_ARGS__;                    \
  }();                                     \
  return ok
#define LUTKIT_CPU(f) __builtin_cpu_supports(f)

// AVX2 with FMA and F16C: every AVX2 kernel set (dequant-GEMM, attention step, sampling, packer)
inline bool avx2() { LUTKIT_CPU_SET(LUTKIT_CPU("avx2") && LUTKIT_CPU("fma") && LUTKIT_CPU("f16c")); }
// AVX-512 F/BW/DQ/VL (FMA and F16C with them): the sampling kernels
inline bool avx512() {
  LUTKIT_CPU_SET(avx2() && LUTKIT_CPU("avx512f") && LUTKIT_CPU("avx512bw") && LUTKIT_CPU("avx512dq") &&
                 LUTKIT_CPU("avx512vl"));
}
// and BF16 dot products: the attention kernels
inline bool avx512_bf16() { LUTKIT_CPU_SET(avx512() && LUTKIT_CPU("avx512bf16")); }
// and VBMI byte permutes with VNNI dots: the LUT-GEMV's own AVX-512 Ops
inline bool avx512_vbmi_vnni() { LUTKIT_CPU_SET(avx512() && LUTKIT_CPU("avx512vbmi") && LUTKIT_CPU("avx512vnni")); }
// both: the dequant-GEMM's AVX-512 kernel set
inline bool avx512_vnni_bf16_vbmi() { LUTKIT_CPU_SET(avx512_vbmi_vnni() && LUTKIT_CPU("avx512bf16")); }
// GF(2) affine transforms: the bit transposes of level 1 and of the packer
inline bool gfni() { LUTKIT_CPU_SET(LUTKIT_CPU("gfni")); }
// AVX-512 F/BW with GFNI: the packer's AVX-512 kernels
inline bool avx512_gfni_pack() { LUTKIT_CPU_SET(LUTKIT_CPU("avx512f") && LUTKIT_CPU("avx512bw") && gfni()); }

// Zen 4: AMD family 19h with AVX-512F (Zen 3, the same family, has none). A tuning switch, not a
// capability: there the LUT-GEMV skips its software prefetch and looks up paired chunks by
// vpermb (docs/design_measurements.md, "LUT-GEMV at one thread").
inline bool zen4() {
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
}
// An Intel CPU ("GenuineIntel"). A tuning switch, not a capability: there the LUT-GEMV prefetches
// its weight stream 2 KiB ahead instead of the tiling spec's 8 KiB (gemv_prefetch_bytes).
inline bool intel() {
  static const bool i = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
    return b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu;  // "Genu" "ineI" "ntel"
  }();
  return i;
}
// AMX tiles with int8 and bf16 dot products (Sapphire Rapids and later), with the operating system's
// leave to use them: Linux enables the 8 KiB tile state per process only on request
// (arch_prctl ARCH_REQ_XCOMP_PERM, XTILEDATA), made here once; without it a tile instruction
// faults. The dequant-GEMM's AMX micro-kernels (targets/host/gemm/microkernels_amx.hpp).
inline bool amx() {
  static const bool ok = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    if (((d >> 24) & 1u) == 0 || ((d >> 25) & 1u) == 0 || ((d >> 22) & 1u) == 0)
      return false;  // AMX-TILE, AMX-INT8, AMX-BF16
    if (!avx512_vnni_bf16_vbmi()) return false;  // (the set it extends)
#if defined(__linux__) && defined(SYS_arch_prctl)
    constexpr long arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
    return syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0;
#else
    return false;
#endif
  }();
  return ok;
}
#undef LUTKIT_CPU
#undef LUTKIT_CPU_SET
#else
inline bool avx2() { return false; }
inline bool avx512() { return false; }
inline bool avx512_bf16() { return false; }
inline bool avx512_vbmi_vnni() { return false; }
inline bool avx512_vnni_bf16_vbmi() { return false; }
inline bool gfni() { return false; }
inline bool avx512_gfni_pack() { return false; }
inline bool zen4() { return false; }
inline bool intel() { return false; }
inline bool amx() { return false; }
#endif

// The distance (bytes) the LUT-GEMV prefetches its weight stream ahead: the tiling spec's; 0 where
// the prefetch costs more than it saves (Zen 4); at most 2 KiB on Intel, where a prefetch 8 KiB
// ahead held every LUT-GEMV at 11-12 GB/s a core (its prefetches waiting for fill buffers:
// docs/design_measurements.md, "LUT-GEMV at one thread: Intel").
inline std::size_t gemv_prefetch_bytes(int spec_bytes) {
  if (zen4()) return 0;
  return intel() ? std::min<std::size_t>(std::size_t(spec_bytes), 2048) : std::size_t(spec_bytes);
}
// The distance (bytes) the fused int8 decode of bit-plane codes (GFNI, mk_int8_fused) prefetches
// its weight stream ahead: 4 KiB, the best on bands elsewhere; 2 KiB on Intel, where 4 KiB held
// the Q4_0-shaped decode at 0.86-0.88 of the plain read against 0.95-0.96 (docs/llama_formats.md,
// "Decode": Intel).
inline long int8_fused_prefetch_bytes() { return intel() ? 2048 : 4096; }

}  // namespace lutkit::detail::host_features
