// lutkit — the sampling family's counter-based random numbers: every uniform is a pure function
// of (seed, batch row, position, token), so a result never depends on the thread count or on
// the order work is done in.
#pragma once
#include <cmath>
#include <cstdint>

namespace lutkit {
namespace detail {

inline uint64_t mix64(uint64_t x) {  // SplitMix64's finalizer: a bijection with full avalanche
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}
inline uint32_t hash32(uint32_t x) {  // a 32-bit bijection (xorshift-multiply, two rounds)
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  x ^= x >> 16;
  return x;
}

// The key of one (seed, batch row, position): two 32-bit words the per-token hash uses.
struct rng_key {
  uint32_t lo, hi;
};
inline rng_key make_key(uint64_t seed, uint64_t row, uint64_t pos) {
  const uint64_t k = mix64(mix64(seed ^ 0x5A4D504C45ull) ^ mix64((row << 32) ^ pos ^ 0x9E3779B97F4A7C15ull));
  return {uint32_t(k), uint32_t(k >> 32)};
}
// The 32 random bits of token t under key k; the SIMD kernels compute the same function.
inline uint32_t token_bits(rng_key k, uint32_t t) { return hash32(hash32(t * 0x9E3779B9u ^ k.lo) + k.hi); }
// Uniform in (0, 1) from the top 23 bits: (b + 1/2) 2^-23, exact in float (24 significant bits).
inline float token_uniform(rng_key k, uint32_t t) { return (float(token_bits(k, t) >> 9) + 0.5f) * 0x1p-23f; }
inline double token_uniform_d(rng_key k, uint32_t t) { return (double(token_bits(k, t) >> 9) + 0.5) * 0x1p-23; }
// A double uniform in (0, 1) with 53 bits (categorical sampling: one per row and call)
inline double row_uniform(uint64_t seed, uint64_t row) {
  return (double(mix64(mix64(seed ^ 0xA5A5F00Dull) + row) >> 11) + 0.5) * 0x1p-53;
}
// The j-th of a row's uniforms (j = 0: row_uniform): top-p's rejection draw takes two an attempt
inline double row_uniform_n(uint64_t seed, uint64_t row, uint64_t j) {
  if (j == 0) return row_uniform(seed, row);
  return (double(mix64(mix64(seed ^ 0xA5A5F00Dull ^ mix64(j * 0x9E3779B97F4A7C15ull)) + row) >> 11) + 0.5) * 0x1p-53;
}

}  // namespace detail
}  // namespace lutkit
