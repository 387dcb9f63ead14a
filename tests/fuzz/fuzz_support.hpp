// Shared by the fuzz targets (tests/fuzz/*.cpp): reading fuzzer bytes, deterministic activations,
// and the check that a kernel's result on accepted input agrees with the double reference.
// A fuzz target returns normally on lutkit::error (the documented refusal) and aborts, with a
// message, on anything else: a crash, a sanitizer report, another exception, or a wrong result.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <lutkit/core/error.hpp>
#include <lutkit/quant/reference.hpp>

namespace lutkit_fuzz {

[[noreturn]] inline void fail(const char* target, const char* what, double a = 0, double b = 0, double c = 0) {
  std::fprintf(stderr, "fuzz %s: %s (%g, %g, %g)\n", target, what, a, b, c);
  std::abort();
}

// With LUTKIT_FUZZ_TRACE set, reports which inputs reached a kernel (to check that seeds are accepted).
inline void trace(const char* target, const char* what) {
  static const bool on = std::getenv("LUTKIT_FUZZ_TRACE") != nullptr;
  if (on) std::fprintf(stderr, "fuzz %s: %s\n", target, what);
}

// Consumes the fuzzer's bytes front to back; reads past the end yield zeros.
struct reader {
  const uint8_t* p;
  std::size_t n;
  uint8_t u8() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  uint16_t u16() { return uint16_t(u8() | (unsigned(u8()) << 8)); }
  uint32_t u32() { return uint32_t(u16()) | (uint32_t(u16()) << 16); }
  uint64_t u64() { return uint64_t(u32()) | (uint64_t(u32()) << 32); }
  float f32() {
    const uint32_t b = u32();
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
};

// Activations in [-1, 1) from a 64-bit seed (splitmix64): the same values on every run.
inline std::vector<float> activations(std::size_t n, uint64_t seed) {
  std::vector<float> x(n);
  for (auto& v : x) {
    seed += 0x9E3779B97F4A7C15ull;
    uint64_t z = seed;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    v = float(int64_t(z >> 40) - (int64_t(1) << 23)) * 0x1p-23f;
  }
  return x;
}

// |got - want| <= bound for every output; a reference beyond 1e30 is not compared (float overflow of a
// product the caller asked for is not a library error), but `got` must then not be a finite small lie.
inline void check_close(const char* target, const char* kernel, const float* got, const double* want,
                        const double* bound, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    if (!std::isfinite(want[i]) || std::fabs(want[i]) > 1e30) continue;
    const double err = std::fabs(double(got[i]) - want[i]);
    if (!(err <= bound[i])) {
      std::fprintf(stderr, "fuzz %s: %s output %zu differs from the reference\n", target, kernel, i);
      fail(target, "result outside the error bound (got, want, bound)", got[i], want[i], bound[i]);
    }
  }
}
// The dequant kernels' fp32 contract on quantized weights q: the double reference, and the bound of
// fp32 dequantization (every weight within an ulp of its value) plus K products accumulated in fp32.
template <class P>
void reference(const lutkit::quantized<P>& q, const std::vector<float>& x, std::size_t N, std::vector<double>& want,
               std::vector<double>& bound) {
  using FT = lutkit::format_traits<typename P::format>;
  want = lutkit::ref::gemv(q, x.data(), N);
  bound.assign(N * q.M, 0.0);
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t m = 0; m < q.M; ++m) {
      double mag = 0;
      for (std::size_t k = 0; k < q.K; ++k) {
        const std::size_t g = k / q.group_k();
        const double s = std::fabs(q.scale(m, g)), l = std::fabs(FT::level(q.codes[m * q.K + k])),
                     z = std::fabs(q.zero(m, g));
        mag += (P::spec.min_form ? s * l + z : s * (l + z)) * std::fabs(x[n * q.K + k]);
      }
      bound[n * q.M + m] = (double(q.K) + 64.0) * 0x1p-23 * mag + 1e-30;
    }
}

}  // namespace lutkit_fuzz
