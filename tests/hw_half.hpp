// The machine's own fp16 conversion instructions (x86 F16C, aarch64 FCVT), so the tests compare
// lutkit's software converters with hardware rather than with themselves.
#pragma once
#include <cstdint>
#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace lutkit_test {
#if defined(__x86_64__)
inline bool hw_half_available() { return __builtin_cpu_supports("f16c"); }
__attribute__((target("f16c"))) inline float hw_h2f(uint16_t h) { return _cvtsh_ss(h); }
__attribute__((target("f16c"))) inline uint16_t hw_f2h(float f) { return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT); }
#elif defined(__aarch64__)
inline bool hw_half_available() { return true; }
inline float hw_h2f(uint16_t h) {
  __fp16 v;
  std::memcpy(&v, &h, 2);
  return float(v);
}
inline uint16_t hw_f2h(float f) {
  const __fp16 v = __fp16(f);  // FCVT, round to nearest even
  uint16_t h;
  std::memcpy(&h, &v, 2);
  return h;
}
#else
inline bool hw_half_available() { return false; }
inline float hw_h2f(uint16_t) { return 0; }
inline uint16_t hw_f2h(float) { return 0; }
#endif
}  // namespace lutkit_test
