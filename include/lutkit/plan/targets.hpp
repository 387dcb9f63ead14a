// lutkit — plan/'s registration point: the calibration loops of each compiled target and the
// choice among them on this CPU. The loops measure the instruction the host's kernels use for
// each unit: the int8 dot and fp32 FMA of the dequant-GEMM kernel set decode_gemv runs
// (AVX-512 VNNI on CPUs with the AVX-512 set, else AVX2's vpmaddubsw / 256-bit FMA), the byte
// lookup of the LUT-GEMV Ops (vpermb where it has VBMI + VNNI, else vpshufb). On other hosts,
// portable loops (the compiler's vectorization) stand in; the model's shape is the same.
#pragma once
#include <cstddef>
#include <cstdint>

#include "../targets/host/features.hpp"
#include "../targets/host/plan/calibrate_x86.hpp"

namespace lutkit::plan::detail {

// one measured loop: runs `iters` iterations, returns the operations done, folds a result into sink
using int_loop = double (*)(std::size_t iters, int64_t* sink);
using float_loop = double (*)(std::size_t iters, double* sink);
using read_loop = void (*)(const uint8_t* p, std::size_t n, int64_t* sink);

struct calibration_loops {
  int_loop int8_dot;
  const char* int8_dot_isa;
  float_loop fp32_fma;
  const char* fp32_fma_isa;
  float_loop bf16_dot;  // nullptr: no native bf16 dot (the kernels widen bf16 to fp32 and use FMA)
  int_loop lookup;
  const char* lookup_isa;
  read_loop read;
};

namespace portable {
inline double int8_dot(std::size_t iters, int64_t* sink) {
  int8_t a[64], b[64];
  uint32_t c[16] = {};  // (unsigned: the sums wrap, as the vector units' do)
  for (int i = 0; i < 64; ++i) {
    a[i] = int8_t(i & 7);
    b[i] = int8_t(1 - (i & 3));
  }
  for (std::size_t it = 0; it < iters; ++it) {
    for (int l = 0; l < 16; ++l)
      for (int j = 0; j < 4; ++j) c[l] += uint32_t(int32_t(a[4 * l + j]) * int32_t(b[4 * l + j]));
    a[it & 63] = int8_t(c[it & 15] & 0x3F);
  }
  for (uint32_t v : c) *sink += int64_t(v);
  return double(iters) * 64;
}
inline double fp32_fma(std::size_t iters, double* sink) {
  float c[16];
  for (int l = 0; l < 16; ++l) c[l] = float(l);
  const float a = 0.999f, b = 1e-7f;
  for (std::size_t it = 0; it < iters; ++it)
    for (int l = 0; l < 16; ++l) c[l] = c[l] * a + b;
  for (float v : c) *sink += double(v);
  return double(iters) * 16;
}
inline double lookup(std::size_t iters, int64_t* sink) {
  uint8_t t[16], c[16];
  for (int i = 0; i < 16; ++i) {
    t[i] = uint8_t((i * 7 + 3) & 15);
    c[i] = uint8_t(i);
  }
  for (std::size_t it = 0; it < iters; ++it)
    for (int l = 0; l < 16; ++l) c[l] = t[c[l] & 15];
  for (uint8_t v : c) *sink += v;
  return double(iters) * 16;
}
inline void read(const uint8_t* p, std::size_t n, int64_t* sink) {
  uint64_t a[8] = {};
  for (std::size_t i = 0; i + 64 <= n; i += 64)
    for (int j = 0; j < 8; ++j) {
      uint64_t v;
      __builtin_memcpy(&v, p + i + 8 * j, 8);
      a[j] ^= v;
    }
  for (uint64_t v : a) *sink ^= int64_t(v);
}
}  // namespace portable

inline calibration_loops host_calibration_loops() {
  calibration_loops l{portable::int8_dot, "portable", portable::fp32_fma, "portable", nullptr,
                      portable::lookup,   "portable", portable::read};
#if defined(LUTKIT_HOST_X86)
  namespace hf = lutkit::detail::host_features;
  namespace hp = lutkit::detail::host_plan;
  if (hf::avx2()) {
    l.int8_dot = hp::int8_dot_avx2;
    l.int8_dot_isa = "avx2";
    l.fp32_fma = hp::fp32_fma_avx2;
    l.fp32_fma_isa = "avx2";
    l.lookup = hp::lookup_avx2;
    l.lookup_isa = "avx2";
    l.read = hp::read_avx2;
  }
  // the AVX-512 dequant-GEMM kernel sets (gemm/targets.hpp): int8 and fp32 at 512 bits on VNNI +
  // VBMI CPUs (dq_backend::avx512_vnni), bf16 too where the CPU has AVX-512 BF16
  if (hf::avx512_vbmi_vnni()) {
    l.int8_dot = hp::int8_dot_vnni;
    l.int8_dot_isa = "avx512vnni";
    l.fp32_fma = hp::fp32_fma_avx512;
    l.fp32_fma_isa = "avx512";
    l.lookup = hp::lookup_vbmi;  // the LUT-GEMV's vpermb Ops (gemv/targets.hpp)
    l.lookup_isa = "avx512vbmi";
  }
  if (hf::avx512_vnni_bf16_vbmi()) l.bf16_dot = hp::bf16_dot_avx512;
  // the AMX set's bf16 prefill runs on tiles (gemm/targets.hpp: dq_backend::avx512_amx first)
  if (hf::amx() && hf::avx512_vnni_bf16_vbmi()) l.bf16_dot = hp::bf16_dot_amx;
#endif
  return l;
}

}  // namespace lutkit::plan::detail
