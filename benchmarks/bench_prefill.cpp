// Prefill benchmarks (issue: LUT dequant-GEMM). Measured side by side in one run:
//   peak/<vnni_int8|bf16_dot|fp32_fma>/threads:T     the machine's dot/FMA peak (register-only loop)
//   dequant_gemm/<policy>/<MxK>/n:N/threads:T/warm/act:A   lutkit: LUT dequant (level 1 + 2) + GEMM
//   convertdq_gemm/w<b>_g64_asym_rowmajor/...        same GEMM, weights converted element by element
//   loadfull_gemm/<f32|bf16|u8>_dense/...            same GEMM on pre-dequantized weights (no dequant)
//   dequant/<lut|convertdq>/<policy>/<MxK>/threads:T/<f32|bf16|codes>   dequantization alone, into the
//                                                    per-thread (cache-resident) buffer the GEMM reads
// Counters: GFLOPs (2*M*N*K / time), of_peak (GFLOPs / the same run's peak for the paradigm and thread
// count), Gweights (weights dequantized per ns, dequant/*).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <lutkit/lutkit.hpp>

#include "baselines.hpp"
#include "bench_common.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace lutkit_bench {
namespace {
using namespace lutkit;
using i8 = table::lut4<int8_t, false>;
using W2 = policy<fmt::uint_asym<2>, group<64>, i8>;
using W4 = policy<fmt::uint_asym<4>, group<64>, i8>;
using Q4NX = policy<fmt::q4nx, group<32>, i8>;

std::map<std::string, double> g_peak;  // "<paradigm>/<threads>" -> GFLOP/s

// ------------------------------------------------------------------ peak
// The loops are inline assembly: 12 independent accumulators in fixed registers and nothing else
// in the loop but its counter. Written with intrinsics on an array of 12 accumulators, GCC 12
// copied every accumulator twice per iteration (24 vector moves per 12 dot instructions); the loop
// was then bound by the front end, and on the Ice Lake server host (vpdpbusd on two ports) it
// reported 485 GFLOP/s at one thread against 665 for this loop: every ratio divided by it was
// 1.37x too high.
#define LK_PEAK12(op, r)                                                                         \
  op " %%" r "13, %%" r "12, %%" r "0\n\t" op " %%" r "13, %%" r "12, %%" r "1\n\t"              \
  op " %%" r "13, %%" r "12, %%" r "2\n\t" op " %%" r "13, %%" r "12, %%" r "3\n\t"              \
  op " %%" r "13, %%" r "12, %%" r "4\n\t" op " %%" r "13, %%" r "12, %%" r "5\n\t"              \
  op " %%" r "13, %%" r "12, %%" r "6\n\t" op " %%" r "13, %%" r "12, %%" r "7\n\t"              \
  op " %%" r "13, %%" r "12, %%" r "8\n\t" op " %%" r "13, %%" r "12, %%" r "9\n\t"              \
  op " %%" r "13, %%" r "12, %%" r "10\n\t" op " %%" r "13, %%" r "12, %%" r "11\n\t"
#define LK_PEAK_CLOBBERS(r)                                                                      \
  "cc", r "0", r "1", r "2", r "3", r "4", r "5", r "6", r "7", r "8", r "9", r "10", r "11", r "12", r "13"
#if defined(LUTKIT_HAVE_AVX512_DQ)
// Kind 0: vpdpbusd (64 u8 x s8 multiply-adds), 1: vdpbf16ps (32 bf16 pairs), 2: vfmadd231ps (16)
template <int Kind>
LUTKIT_AVX512_DQ double peak_loop(long iters) {
  if (iters <= 0) return 0;
  long n = iters;
  float out = 0;
  const int one = 0x3f800000;  // 1.0f: normal operands for every kind (bytes 0, 0, 128, 63; bf16 0, 1)
#define LK_PEAK_BODY(op)                                                                         \
  asm volatile("vpxord %%zmm0, %%zmm0, %%zmm0\n\t" "vmovdqa64 %%zmm0, %%zmm1\n\t"                \
               "vmovdqa64 %%zmm0, %%zmm2\n\t" "vmovdqa64 %%zmm0, %%zmm3\n\t"                     \
               "vmovdqa64 %%zmm0, %%zmm4\n\t" "vmovdqa64 %%zmm0, %%zmm5\n\t"                     \
               "vmovdqa64 %%zmm0, %%zmm6\n\t" "vmovdqa64 %%zmm0, %%zmm7\n\t"                     \
               "vmovdqa64 %%zmm0, %%zmm8\n\t" "vmovdqa64 %%zmm0, %%zmm9\n\t"                     \
               "vmovdqa64 %%zmm0, %%zmm10\n\t" "vmovdqa64 %%zmm0, %%zmm11\n\t"                   \
               "vpbroadcastd %[one], %%zmm12\n\t" "vmovdqa64 %%zmm12, %%zmm13\n\t"                \
               "1:\n\t" LK_PEAK12(op, "zmm") "dec %[n]\n\t" "jnz 1b\n\t"                          \
               "vaddps %%zmm1, %%zmm0, %%zmm0\n\t" "vmovss %%xmm0, %[out]\n\t"                    \
               : [n] "+r"(n), [out] "=m"(out) : [one] "r"(one) : LK_PEAK_CLOBBERS("zmm"))
  if constexpr (Kind == 0) LK_PEAK_BODY("vpdpbusd");
  else if constexpr (Kind == 1) LK_PEAK_BODY("vdpbf16ps");
  else LK_PEAK_BODY("vfmadd231ps");
#undef LK_PEAK_BODY
  return double(out);
}
#endif

#if defined(LUTKIT_HAVE_AVX2_DQ)
// The same on AVX2 CPUs, with the instructions the AVX2 kernel set computes with: vpmaddwd +
// vpaddd (its exact int8 micro-kernel; 16 multiply-adds per pair) and FMA (its bf16 and fp32
// micro-kernels, bf16 widened to fp32: 8 multiply-adds)
template <int Kind>
LUTKIT_AVX2_DQ double peak_loop_avx2(long iters) {
  if (iters <= 0) return 0;
  long n = iters;
  float out = 0;
  if constexpr (Kind == 0) {
    // 12 (vpmaddwd into a temporary, vpaddd into the accumulator) pairs, twice 6: ymm0..5
    // accumulate, ymm6..11 the products
#define LK_MADD6                                                                                    \
  "vpmaddwd %%ymm13, %%ymm12, %%ymm6\n\t" "vpmaddwd %%ymm13, %%ymm12, %%ymm7\n\t"                     \
  "vpmaddwd %%ymm13, %%ymm12, %%ymm8\n\t" "vpmaddwd %%ymm13, %%ymm12, %%ymm9\n\t"                     \
  "vpmaddwd %%ymm13, %%ymm12, %%ymm10\n\t" "vpmaddwd %%ymm13, %%ymm12, %%ymm11\n\t"                   \
  "vpaddd %%ymm6, %%ymm0, %%ymm0\n\t" "vpaddd %%ymm7, %%ymm1, %%ymm1\n\t"                             \
  "vpaddd %%ymm8, %%ymm2, %%ymm2\n\t" "vpaddd %%ymm9, %%ymm3, %%ymm3\n\t"                             \
  "vpaddd %%ymm10, %%ymm4, %%ymm4\n\t" "vpaddd %%ymm11, %%ymm5, %%ymm5\n\t"
    asm volatile("vpxor %%ymm0, %%ymm0, %%ymm0\n\t" "vmovdqa %%ymm0, %%ymm1\n\t" "vmovdqa %%ymm0, %%ymm2\n\t"
                 "vmovdqa %%ymm0, %%ymm3\n\t" "vmovdqa %%ymm0, %%ymm4\n\t" "vmovdqa %%ymm0, %%ymm5\n\t"
                 "vpcmpeqd %%ymm12, %%ymm12, %%ymm12\n\t" "vpsrlw $15, %%ymm12, %%ymm12\n\t"
                 "vpaddw %%ymm12, %%ymm12, %%ymm13\n\t"
                 "1:\n\t"
                 LK_MADD6 LK_MADD6
                 "dec %[n]\n\t" "jnz 1b\n\t"
                 "vpaddd %%ymm1, %%ymm0, %%ymm0\n\t" "vcvtdq2ps %%ymm0, %%ymm0\n\t" "vmovss %%xmm0, %[out]\n\t"
                 : [n] "+r"(n), [out] "=m"(out) : : LK_PEAK_CLOBBERS("ymm"));
#undef LK_MADD6
  } else {
    const int one = 0x3f800000;  // 1.0f
    asm volatile("vxorps %%ymm0, %%ymm0, %%ymm0\n\t" "vmovaps %%ymm0, %%ymm1\n\t" "vmovaps %%ymm0, %%ymm2\n\t"
                 "vmovaps %%ymm0, %%ymm3\n\t" "vmovaps %%ymm0, %%ymm4\n\t" "vmovaps %%ymm0, %%ymm5\n\t"
                 "vmovaps %%ymm0, %%ymm6\n\t" "vmovaps %%ymm0, %%ymm7\n\t" "vmovaps %%ymm0, %%ymm8\n\t"
                 "vmovaps %%ymm0, %%ymm9\n\t" "vmovaps %%ymm0, %%ymm10\n\t" "vmovaps %%ymm0, %%ymm11\n\t"
                 "vpbroadcastd %[one], %%ymm12\n\t" "vmovaps %%ymm12, %%ymm13\n\t"
                 "1:\n\t" LK_PEAK12("vfmadd231ps", "ymm") "dec %[n]\n\t" "jnz 1b\n\t"
                 "vaddps %%ymm1, %%ymm0, %%ymm0\n\t" "vmovss %%xmm0, %[out]\n\t"
                 : [n] "+r"(n), [out] "=m"(out) : [one] "m"(one) : LK_PEAK_CLOBBERS("ymm"));
  }
  return double(out);
}
#endif
#undef LK_PEAK12
#undef LK_PEAK_CLOBBERS

// The dot-product peaks the prefill rows are read against ("of_peak"): AVX-512 VNNI / BF16 / FMA
// where the CPU has the AVX-512 set; on AVX-512 VNNI CPUs without BF16 (dq_backend::avx512_vnni:
// its int8 and fp32 kernels AVX-512, its bf16 route the AVX2 set's) VNNI and FMA at 512 bits, bf16
// as AVX2 FMA; else the AVX2 set's instructions (int8: vpmaddwd + vpaddd; bf16 and fp32: FMA)
void bm_peak(benchmark::State& st, int kind, int threads) {
  using loop_fn = double (*)(long);
  loop_fn loop = nullptr;
  double ops_per_instr = 0;
  const char* what = "";
#if defined(LUTKIT_HAVE_AVX512_DQ)
  if (detail::avx512::cpu_supported()) {
    loop = kind == 0 ? &peak_loop<0> : kind == 1 ? &peak_loop<1> : &peak_loop<2>;
    ops_per_instr = kind == 0 ? 128.0 : kind == 1 ? 64.0 : 32.0;
    what = "AVX-512";
  } else if (detail::avx512::cpu_supported_vnni() && kind != 1) {  // (only vpdpbusd / vfmadd: no BF16)
    loop = kind == 0 ? &peak_loop<0> : &peak_loop<2>;
    ops_per_instr = kind == 0 ? 128.0 : 32.0;
    what = kind == 0 ? "AVX-512 VNNI" : "AVX-512 FMA";
  }
#endif
#if defined(LUTKIT_HAVE_AVX2_DQ)
  if (loop == nullptr && detail::avx2::cpu_supported()) {
    loop = kind == 0 ? &peak_loop_avx2<0> : &peak_loop_avx2<1>;
    ops_per_instr = kind == 0 ? 32.0 : 16.0;
    what = kind == 0 ? "AVX2 vpmaddwd + vpaddd" : "AVX2 FMA";
  }
#endif
  if (loop == nullptr) {
    st.SkipWithError("no AVX-512 or AVX2 dequant kernels on this CPU");
    return;
  }
  const long iters = 2000000;
  thread_pool& pool = pool_for(threads);
  const double flops = double(iters) * 12 * ops_per_instr * threads;
  double best = 0;
  for (auto _ : st) {
    double sink[8] = {};
    const auto t0 = std::chrono::steady_clock::now();
    pool.run(std::size_t(threads), [&](std::size_t i) { sink[i] = loop(iters); });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, flops / s * 1e-9);
    benchmark::DoNotOptimize(sink);
  }
  static const char* names[3] = {"vnni_int8", "bf16_dot", "fp32_fma"};
  // the best repetition so far: a peak is a ceiling, and with interleaved repetitions the latest one
  // may come from a slow minute (on the Zen 5 VM the repetitions of one run spread 803-901 GFLOP/s,
  // and a GEMM row read against the slowest looked 12 % closer to the peak than against the best)
  double& g = g_peak[std::string(names[kind]) + "/" + std::to_string(threads)];
  g = std::max(g, best);
  st.counters["GFLOPs"] = best;
  st.SetLabel(std::string("best-of-iterations, register-only loop, ") + what);
}

// ------------------------------------------------------------------ weights
template <class P>
struct prefill_case {
  std::size_t M = 0, K = 0;
  std::unique_ptr<packed_weights<P>> packed;
  quantized<P> q;
  // ConvertDQ layout of the same codes (see baselines-inl.h) and the pre-dequantized copies
  std::vector<uint8_t> cdq_codes;
  std::vector<uint16_t> cdq_sz;
  std::vector<uint32_t> full_f32_steps;   // fp32 bits, step-major per 64-row tile ([k][64])
  std::vector<uint32_t> full_bf16_steps;  // bf16 pairs, step-major per 64-row tile ([k/2][64])
  std::vector<uint8_t> full_steps;  // levels, step-major per 64-row tile (the int8 kernel's layout)
};

template <class P>
prefill_case<P>& prefill_data(std::size_t M, std::size_t K, bool need_full) {
  static std::unique_ptr<prefill_case<P>> cache;
  if (!cache || cache->M != M || cache->K != K) {
    cache.reset();
    auto c = std::make_unique<prefill_case<P>>();
    c->M = M;
    c->K = K;
    c->q = random_quantized<P>(M, K, M * 131 + K);
    c->packed = std::make_unique<packed_weights<P>>(pack<P>(c->q));
    // ConvertDQ layout (the baselines' W<bits> g64 asymmetric weights only): per 16 bytes, code j
    // of byte i is weight 16*j + i
    if constexpr (P::spec.asymmetric && P::spec.group_k == 64 && !P::spec.min_form) {
      constexpr int B = P::spec.bits;
      const std::size_t groups = K / 64;
      const std::vector<uint8_t>& codes = c->q.codes;
      constexpr int per_byte = 8 / B;
      c->cdq_codes.assign(M * K / per_byte, 0);
      for (std::size_t m = 0; m < M; ++m)
        for (std::size_t k = 0; k < K; ++k) {
          const std::size_t blk = k / (16 * per_byte), in = k % (16 * per_byte);
          const std::size_t byte = blk * 16 + in % 16, j = in / 16;
          c->cdq_codes[m * (K / per_byte) + byte] |= uint8_t(codes[m * K + k] << (j * B));
        }
      c->cdq_sz.resize(M * groups * 2);
      for (std::size_t i = 0; i < M * groups; ++i) {
        c->cdq_sz[2 * i] = f32_to_f16(c->q.scales[i]);
        c->cdq_sz[2 * i + 1] = f32_to_f16(c->q.zeros[i]);
      }
    }
    cache = std::move(c);
  }
  if (need_full && cache->full_f32_steps.empty()) {
    auto& c = *cache;
    {
      std::vector<float> f32(M * K);
      std::vector<uint16_t> bf(M * K);
      dequantize<P>(*c.packed, f32.data(), dq_type::f32, 0, &pool_for(2));
      dequantize<P>(*c.packed, bf.data(), dq_type::bf16, 0, &pool_for(2));
      c.full_f32_steps.resize(M * K);
      c.full_bf16_steps.resize(M * K / 2);
      for (std::size_t t = 0; t < M / 64; ++t) {
        detail::portable::rows_to_steps(reinterpret_cast<const uint32_t*>(f32.data()) + t * 64 * K, K, K,
                                       c.full_f32_steps.data() + t * 64 * K);
        detail::portable::rows_to_steps(reinterpret_cast<const uint32_t*>(bf.data()) + t * 32 * K, K / 2, K / 2,
                                       c.full_bf16_steps.data() + t * 32 * K);
      }
    }
    c.full_steps.resize(M * K);
    for (std::size_t t = 0; t < M / 64; ++t)
      detail::portable::levels_to_step_major(c.q.codes.data() + t * 64 * K, K, K, c.full_steps.data() + t * 64 * K);
  }
  return *cache;
}

// ConvertDQ weight source: element-by-element conversion of the row-major code layout
struct convertdq_source {
  int bits;
  const uint8_t* codes;
  const uint16_t* sz;
  std::size_t K, G;
  const uint8_t* levels(std::size_t t, std::size_t k0, std::size_t k1, detail::dq_scratch& s) const {
    convert_dq_rows_codes(bits, codes, K, t * 64, 64, k0, k1, s.codes.get());
    return s.codes.get();
  }
  void group_scales(std::size_t t, std::size_t k, float* sw, float* swz) const {
    const std::size_t g = k / G;
    for (std::size_t r = 0; r < 64; ++r) {
      const float sc = f16_to_f32(sz[((t * 64 + r) * (K / G) + g) * 2]);
      sw[r] = sc;
      swz[r] = sc * f16_to_f32(sz[((t * 64 + r) * (K / G) + g) * 2 + 1]);
    }
  }
  template <class T>
  const T* values(std::size_t t, std::size_t k0, std::size_t k1, detail::dq_scratch& s, std::size_t& ld) const {
    ld = s.ldv;
    if constexpr (std::is_same_v<T, float>) {
      convert_dq_rows(bits, codes, sz, K, G, t * 64, 64, k0, k1, reinterpret_cast<float*>(s.values.get()), s.ldv);
    } else {
      convert_dq_rows_bf16(bits, codes, sz, K, G, t * 64, 64, k0, k1, reinterpret_cast<uint16_t*>(s.values.get()),
                           s.ldv);
    }
    return reinterpret_cast<const T*>(s.values.get());
  }
  // the GEMM's prefetch interface, as for the LUT source (a fair baseline: both get their next
  // chunk requested ahead): per row, the chunk's code lines, then the line of its scales / zeros
  struct prefetch_plan_t {
    std::size_t t, k0, per_row, lines;
  };
  prefetch_plan_t prefetch_plan(std::size_t t, std::size_t k0, std::size_t k1) const {
    const std::size_t per_row = (k1 - k0 + 63) / 64 + 1;
    return {t, k0, per_row, 64 * per_row};
  }
  template <detail::prefetch_to To>
  void prefetch_lines(const prefetch_plan_t& p, std::size_t l0, std::size_t l1) const {
    for (std::size_t l = l0; l < l1; ++l) {
      const std::size_t r = p.t * 64 + l / p.per_row, j = l % p.per_row;
      detail::prefetch_line<To>(j + 1 < p.per_row ? static_cast<const void*>(codes + r * K + p.k0 + 64 * j)
                                              : static_cast<const void*>(sz + (r * (K / G) + p.k0 / G) * 2));
    }
  }
  template <class T>
  const uint32_t* value_steps(std::size_t t, std::size_t k0, std::size_t k1, detail::dq_scratch& s) const {
    std::size_t ld = 0;
    const T* v = values<T>(t, k0, k1, s, ld);
    return detail::values_to_steps(v, ld, k1 - k0, s, detail::dq_kernels_for(dq_backend::best));
  }
};
static_assert(detail::prefetching_source<convertdq_source>, "ConvertDQ gets the same chunk prefetch as the LUT source");

// LoadFull weight source: pre-dequantized matrices, read in place
template <class P>
struct loadfull_source {
  const prefill_case<P>* c;
  const uint8_t* levels(std::size_t t, std::size_t k0, std::size_t, detail::dq_scratch&) const {
    return c->full_steps.data() + t * 64 * c->K + (k0 / 4) * 256;
  }
  void group_scales(std::size_t t, std::size_t k, float* sw, float* swz) const {
    const std::size_t g = k / 64, groups = c->K / 64;
    for (std::size_t r = 0; r < 64; ++r) {
      sw[r] = c->q.scales[(t * 64 + r) * groups + g];
      swz[r] = sw[r] * c->q.zeros[(t * 64 + r) * groups + g];
    }
  }
  // pre-dequantized AND pre-arranged in the micro-kernels' step-major layout (no per-call work)
  template <class T>
  const uint32_t* value_steps(std::size_t t, std::size_t k0, std::size_t, detail::dq_scratch&) const {
    if constexpr (std::is_same_v<T, float>)
      return c->full_f32_steps.data() + t * 64 * c->K + k0 * 64;
    else
      return c->full_bf16_steps.data() + t * 32 * c->K + (k0 / 2) * 64;
  }
};

enum class source_kind { lut, convertdq, loadfull };

template <class P>
void bm_gemm(benchmark::State& st, source_kind sk, std::size_t M, std::size_t K, std::size_t N, int threads,
             act_type act, dq_backend be = dq_backend::best) {
  auto& c = prefill_data<P>(M, K, sk == source_kind::loadfull);
  std::mt19937_64 rng(11);
  std::normal_distribution<float> nd;
  std::vector<float> x(N * K), y(N * M);
  for (auto& v : x) v = nd(rng);
  thread_pool* pool = threads > 1 ? &pool_for(threads) : nullptr;
  const auto& ks = detail::dq_kernels_for(be);
  const detail::lut_weight_source<P> lut{c.packed->data(), &c.packed->layout(), &ks};
  const convertdq_source cdq{P::spec.bits, c.cdq_codes.data(), c.cdq_sz.data(), K, 64};
  const loadfull_source<P> full{&c};
  // the fastest iteration too: on a shared VM other tenants slow some iterations down, and the
  // mean alone mixes that into the kernel's figure
  double best_s = 1e30;
  for (auto _ : st) {
    const auto t_start = std::chrono::steady_clock::now();
    detail::dq_activations A;
    A.act = act;
    A.geo = detail::make_dq_geometry<P>(c.packed->layout(), N, act);
    if (sk == source_kind::lut) detail::int8_folds_for<P>(A, ks, true);  // (as dequant_gemm does)
    detail::prepare_activations(A, x.data(), K, pool, ks);
    if (sk == source_kind::lut)
      detail::run_dq_gemm(lut, A, ks, M, 0, M, y.data(), M, pool);
    else if (sk == source_kind::convertdq)
      detail::run_dq_gemm(cdq, A, ks, M, 0, M, y.data(), M, pool);
    else
      detail::run_dq_gemm(full, A, ks, M, 0, M, y.data(), M, pool);
    benchmark::DoNotOptimize(y.data());
    best_s = std::min(best_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count());
  }
  const double flops = 2.0 * double(M) * double(K) * double(N);
  st.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["best_GFLOPs"] = flops * 1e-9 / best_s;
  const std::string pk = std::string(act == act_type::bf16 ? "bf16_dot" : act == act_type::fp32 ? "fp32_fma" : "vnni_int8") +
                         "/" + std::to_string(threads);
  if (g_peak.count(pk) && g_peak[pk] > 0)
    st.counters["of_peak"] = benchmark::Counter(flops * 1e-9 / g_peak[pk], benchmark::Counter::kIsIterationInvariantRate);
  st.SetLabel(ks.name);
}

// dequantization alone: every (tile, chunk) of the matrix into the per-thread buffer
template <class P>
void bm_dequant(benchmark::State& st, source_kind sk, std::size_t M, std::size_t K, int threads, int out) {
  auto& c = prefill_data<P>(M, K, false);
  const auto& ks = detail::dq_kernels_for(dq_backend::best);
  const detail::lut_weight_source<P> lut{c.packed->data(), &c.packed->layout(), &ks};
  const convertdq_source cdq{P::spec.bits, c.cdq_codes.data(), c.cdq_sz.data(), K, 64};
  // out: 0 fp32 rows, 1 bf16 rows, 2 int8 codes (+ group scales), 3 bf16 in the micro-kernel's
  // step-major layout (what the bf16 GEMM consumes: the LUT source's direct level 2, ConvertDQ's
  // rows + transposition)
  const act_type act = out == 0 ? act_type::fp32 : out == 1 || out == 3 ? act_type::bf16 : act_type::int8;
  const auto geo = detail::make_dq_geometry<P>(c.packed->layout(), 16, act);
  thread_pool& pool = pool_for(threads);
  const std::size_t tiles = M / 64;
  for (auto _ : st) {
    pool.run(std::size_t(threads), [&](std::size_t i) {
      detail::dq_scratch s;
      s.init(geo);
      std::size_t ld = 0;
      float sw[64], swz[64];
      const std::size_t t_end = tiles * (i + 1) / threads;
      for (std::size_t t = tiles * i / threads; t < t_end; ++t)
        for (std::size_t k0 = 0; k0 < K; k0 += geo.kc) {
          const std::size_t k1 = std::min(K, k0 + geo.kc);
          // the next chunk requested ahead, as the GEMM does (both sources)
          const auto nc = geo.next_chunk(t, k1, t + 1 < t_end ? t + 1 : detail::dq_geometry::no_tile);
          if (sk == source_kind::lut)
            detail::prefetch_chunk(lut, nc);
          else
            detail::prefetch_chunk(cdq, nc);
          const void* p = nullptr;
          if (sk == source_kind::lut) {
            if (out == 0) p = lut.template values<float>(t, k0, k1, s, ld);
            else if (out == 1) p = lut.template values<uint16_t>(t, k0, k1, s, ld);
            else if (out == 3) p = lut.template value_steps<uint16_t>(t, k0, k1, s);
            else {
              p = lut.levels(t, k0, k1, s);
              for (std::size_t k = k0; k < k1; k += 64) lut.group_scales(t, k, sw, swz);
            }
          } else {
            if (out == 0) p = cdq.template values<float>(t, k0, k1, s, ld);
            else if (out == 1) p = cdq.template values<uint16_t>(t, k0, k1, s, ld);
            else if (out == 3) p = cdq.template value_steps<uint16_t>(t, k0, k1, s);
            else {
              p = cdq.levels(t, k0, k1, s);
              for (std::size_t k = k0; k < k1; k += 64) cdq.group_scales(t, k, sw, swz);
            }
          }
          benchmark::DoNotOptimize(p);
          benchmark::ClobberMemory();
        }
    });
  }
  st.counters["Gweights"] = benchmark::Counter(double(M) * double(K) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// FusedDQP decode on the same blob as the LUT-GEMV (cold: the blob's cold rotation, bench_common.hpp)
template <class P>
void bm_fused_dq(benchmark::State& st, std::size_t M, std::size_t K, std::size_t N, int threads, bool cold) {
  auto& c = prefill_data<P>(M, K, false);
  std::vector<packed_weights<P>>* cold_set = nullptr;
  if (cold)
    cold_set = &lutkit_bench::cold_blobs("fused_dq", *c.packed);
  std::mt19937_64 rng(3);
  std::normal_distribution<float> nd;
  std::vector<float> x(N * K), y(N * M);
  for (auto& v : x) v = nd(rng);
  thread_pool* pool = threads > 1 ? &pool_for(threads) : nullptr;
  std::size_t i = 0;
  for (auto _ : st) {
    fused_dq_gemv<P>(cold_set ? (*cold_set)[i++ % cold_set->size()] : *c.packed, x.data(), N, K, y.data(), 0, 0, pool);
    benchmark::DoNotOptimize(y.data());
  }
  const double bytes = double(c.packed->size_bytes());
  st.counters["weight_GBps"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["GFLOPs"] = benchmark::Counter(2.0 * double(M) * K * N * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

std::string gemm_tail(std::size_t M, std::size_t K, std::size_t N, int T, act_type a) {
  return std::to_string(M) + "x" + std::to_string(K) + "/n:" + std::to_string(N) + "/threads:" + std::to_string(T) +
         "/warm/act:" + act_name(a);
}

// (on CPUs with AMX, dequant_gemm_avx512/... rows of the int8 and bf16 paradigms beside the
// dequant_gemm/... ones: the AVX-512 set's kernels in the same run, dq_backend::avx512)
template <class P>
void register_gemm(std::size_t M, std::size_t K, std::size_t N, int T, act_type a, bool baselines) {
  benchmark::RegisterBenchmark(("dequant_gemm/" + P::name() + "/" + gemm_tail(M, K, N, T, a)).c_str(),
                               [=](benchmark::State& st) { bm_gemm<P>(st, source_kind::lut, M, K, N, T, a); })
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
#if defined(LUTKIT_HAVE_AVX512_DQ)
  if (detail::avx512::cpu_supported_amx() && a != act_type::fp32)
    benchmark::RegisterBenchmark(
        ("dequant_gemm_avx512/" + P::name() + "/" + gemm_tail(M, K, N, T, a)).c_str(),
        [=](benchmark::State& st) { bm_gemm<P>(st, source_kind::lut, M, K, N, T, a, dq_backend::avx512); })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
#endif
  if (!baselines) return;
  const std::string b = "w" + std::to_string(P::spec.bits) + "_g64_asym_rowmajor/";
  benchmark::RegisterBenchmark(("convertdq_gemm/" + b + gemm_tail(M, K, N, T, a)).c_str(),
                               [=](benchmark::State& st) { bm_gemm<P>(st, source_kind::convertdq, M, K, N, T, a); })
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  const std::string d = a == act_type::fp32 ? "f32_dense/" : a == act_type::bf16 ? "bf16_dense/" : "u8_dense/";
  benchmark::RegisterBenchmark(("loadfull_gemm/" + d + gemm_tail(M, K, N, T, a)).c_str(),
                               [=](benchmark::State& st) { bm_gemm<P>(st, source_kind::loadfull, M, K, N, T, a); })
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
}

template <class P>
void register_fused(const std::string& tail, std::size_t N, int T, bool cold) {
  benchmark::RegisterBenchmark(("fused_dq_gemv/" + P::name() + tail).c_str(),
                               [=](benchmark::State& st) { bm_fused_dq<P>(st, 4096, 14336, N, T, cold); })
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}

// dequant/<lut|convertdq>/... rows of one policy
template <class P>
void register_dequant(const std::string& tail, int T, int out) {
  const std::string cdq = "w" + std::to_string(P::spec.bits) + "_g64_asym_rowmajor";
  for (source_kind sk : {source_kind::lut, source_kind::convertdq}) {
    const std::string name =
        sk == source_kind::lut ? "dequant/lut/" + P::name() + tail : "dequant/convertdq/" + cdq + tail;
    benchmark::RegisterBenchmark(name.c_str(),
                                 [=](benchmark::State& st) { bm_dequant<P>(st, sk, 4096, 14336, T, out); })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
}

}  // namespace

// tile-group weights (HMX geometry, W4 asymmetric): the dequant-GEMM reading the super-group
// stream, named like the other GEMMs (w4, groups of 32 = 2 k x 16 rows, asym)
void bm_tile_group_gemm(benchmark::State& st, std::size_t M, std::size_t K, std::size_t N, int threads, act_type act) {
  using F = fmt::uint_asym<4>;
  static std::unique_ptr<tile_group_weights<F>> cache;
  static std::size_t cm = 0, ck = 0;
  if (!cache || cm != M || ck != K) {
    std::mt19937_64 rng(21);
    std::normal_distribution<float> nd(0.f, 0.02f);
    std::vector<float> w(M * K);
    for (auto& v : w) v = nd(rng);
    cache = std::make_unique<tile_group_weights<F>>(quantize_tile_group<F>(w.data(), M, K));
    cm = M;
    ck = K;
  }
  std::mt19937_64 rng(11);
  std::normal_distribution<float> nd;
  std::vector<float> x(N * K), y(N * M);
  for (auto& v : x) v = nd(rng);
  thread_pool* pool = threads > 1 ? &pool_for(threads) : nullptr;
  for (auto _ : st) {
    tile_group_gemm(*cache, x.data(), N, K, y.data(), act, 0, 0, pool);
    benchmark::DoNotOptimize(y.data());
  }
  const double flops = 2.0 * double(M) * double(K) * double(N);
  st.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  const std::string pk = std::string(act == act_type::bf16 ? "bf16_dot" : "fp32_fma") + "/" + std::to_string(threads);
  if (g_peak.count(pk) && g_peak[pk] > 0)
    st.counters["of_peak"] = benchmark::Counter(flops * 1e-9 / g_peak[pk], benchmark::Counter::kIsIterationInvariantRate);
}

double peak_gflops(const std::string& key) {
  auto it = g_peak.find(key);
  return it == g_peak.end() ? 0.0 : it->second;
}

void register_prefill() {
  const char* kinds[3] = {"vnni_int8", "bf16_dot", "fp32_fma"};
  for (int T : {1, 2})
    for (int kind = 0; kind < 3; ++kind)
      benchmark::RegisterBenchmark((std::string("peak/") + kinds[kind] + "/threads:" + std::to_string(T)).c_str(),
                                   [=](benchmark::State& st) { bm_peak(st, kind, T); })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->Iterations(5);
  const act_type acts[3] = {act_type::int8, act_type::bf16, act_type::fp32};
  for (auto [M, K] : {std::pair<std::size_t, std::size_t>{4096, 14336}, {4096, 4096}})
    for (std::size_t N : {128, 16, 512})
      for (int T : {2, 1})
        for (act_type a : acts) {
          register_gemm<W4>(M, K, N, T, a, N == 128);
          register_gemm<W2>(M, K, N, T, a, N == 128);
        }
  // the default paradigm (int8 per scale group) beside per-row int8, at the headline shape
  for (int T : {2, 1}) {
    register_gemm<W4>(4096, 14336, 128, T, act_type::int8_group, false);
    register_gemm<W2>(4096, 14336, 128, T, act_type::int8_group, false);
  }
  // llama.cpp's g32 formats on the default paradigm: Q4_0 (linear levels) and IQ4_NL (a codebook:
  // its codes mapped to u8 levels after level 1), the same bytes
  for (act_type a : {act_type::int8_group, act_type::int8, act_type::bf16}) {
    register_gemm<policy<fmt::uint_sym<4>, group<32>>>(4096, 14336, 128, 2, a, false);
    register_gemm<policy<fmt::codebook4<book::iq4_nl>, group<32>>>(4096, 14336, 128, 2, a, false);
  }
  // the formats outside the W2/W4 sweep, at the headline shape: Q4NX (bf16 scale and min per
  // 32, min form) and tile-group weights
  for (act_type a : {act_type::int8, act_type::bf16}) register_gemm<Q4NX>(4096, 14336, 128, 2, a, false);
  // NF4 (a float codebook: the bf16 and fp32 paradigms only) and Q8_0 (8-bit codes: level 2
  // without a table), on every paradigm they have
  for (act_type a : {act_type::bf16, act_type::fp32}) {
    register_gemm<policy<fmt::codebook4<book::nf4>, group<64>>>(4096, 14336, 128, 2, a, false);
    register_gemm<policy<fmt::uint_sym<8>, group<32>>>(4096, 14336, 128, 2, a, false);
  }
  register_gemm<policy<fmt::uint_sym<8>, group<32>>>(4096, 14336, 128, 2, act_type::int8, false);
  // the other llama.cpp types: Q4_1 (fp16 min form), Q5_0 (5 bit planes, fp16 scale per 32), Q4_K (fp32 min form per 32), Q6_K (6 bit
  // planes, fp32 scale per 16), Q3_K (3 bit planes, fp32 scale per 16), Q5_1 / Q5_K / Q2_K (min-form bit planes), TQ2_0 / TQ1_0's policy (2 bits, zero 1, one scale per 256)
  for (int T : {2, 1})
    for (act_type a : {act_type::int8_group, act_type::int8, act_type::bf16}) {
      register_gemm<policy<fmt::q4_1, group<32>>>(4096, 14336, 128, T, a, false);
      register_gemm<policy<fmt::uint_sym<5>, group<32>>>(4096, 14336, 128, T, a, false);
      register_gemm<policy<fmt::q4_k, group<32>>>(4096, 14336, 128, T, a, false);
      register_gemm<policy<fmt::q6_k, group<16>>>(4096, 14336, 128, T, a, false);
      register_gemm<policy<fmt::q3_k, group<16>>>(4096, 14336, 128, T, a, false);
      register_gemm<policy<fmt::q5_1, group<32>>>(4096, 14336, 128, T, a, false);
      register_gemm<policy<fmt::q5_k, group<32>>>(4096, 14336, 128, T, a, false);
      register_gemm<policy<fmt::q2_k, group<16>>>(4096, 14336, 128, T, a, false);
      register_gemm<policy<fmt::uint_asym<2>, group<256>>>(4096, 14336, 128, T, a, false);
    }
  for (act_type a : {act_type::bf16, act_type::fp32})
    benchmark::RegisterBenchmark(("dequant_gemm/w4_g32_asym_tilegroup_hmx/" + gemm_tail(4096, 14336, 128, 2, a)).c_str(),
                                 [=](benchmark::State& st) { bm_tile_group_gemm(st, 4096, 14336, 128, 2, a); })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  for (std::size_t N : {1, 4})
    for (int T : {1, 2})
      for (bool cold : {true, false}) {
        const std::string t = "/4096x14336/n:" + std::to_string(N) + "/threads:" + std::to_string(T) + (cold ? "/cold" : "/warm");
        register_fused<W4>(t, N, T, cold);
        register_fused<W2>(t, N, T, cold);
      }
  for (int T : {1, 2})
    for (int out = 0; out < 4; ++out) {
      const char* o[4] = {"f32", "bf16", "codes", "bf16steps"};
      const std::string t = "/4096x14336/threads:" + std::to_string(T) + "/" + o[out];
      register_dequant<W4>(t, T, out);
      register_dequant<W2>(t, T, out);
    }
}

}  // namespace lutkit_bench
