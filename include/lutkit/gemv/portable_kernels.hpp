// lutkit — plain C++ Ops for the shared LUT-GEMV body: 64-byte arrays and loops. Used where a
// target has no byte-lookup instruction Highway can express (HWY_SCALAR); it reads the same
// blob as every other backend.
#pragma once
#include <cstdint>
#include <cstring>

#include "../core/half.hpp"

namespace lutkit::detail {

struct PortableOps {
  struct V {
    uint8_t b[64];
  };
  struct W {
    int16_t h[32];
  };
  static V load(const uint8_t* p) {
    V v;
    std::memcpy(v.b, p, 64);
    return v;
  }
  static V lo_nibbles(V v) {
    for (auto& x : v.b) x &= 0x0F;
    return v;
  }
  static V hi_nibbles(V v) {
    for (auto& x : v.b) x = uint8_t(x >> 4);
    return v;
  }
  static V table1(const int8_t* t) {
    V v;
    for (int i = 0; i < 64; ++i) v.b[i] = uint8_t(t[i % 16]);
    return v;
  }
  static V table2(const int8_t* a, const int8_t* b) {
    V v;
    for (int i = 0; i < 64; ++i) v.b[i] = uint8_t(i < 32 ? a[i % 16] : b[i % 16]);
    return v;
  }
  static V lookup(const V& tb, const V& idx) {
    V v;
    for (int i = 0; i < 64; ++i) v.b[i] = (idx.b[i] & 0x80) ? 0 : tb.b[(i & ~15) + (idx.b[i] & 15)];
    return v;
  }
  static V negate_if(V v, const uint8_t* bits) {
    for (int i = 0; i < 64; ++i)
      if ((bits[i / 8] >> (i % 8)) & 1) v.b[i] = uint8_t(0u - v.b[i]);
    return v;
  }
  static W madd(const V& u, const V& s) {
    W w;
    for (int i = 0; i < 32; ++i) {
      int v = int(u.b[2 * i]) * int(int8_t(s.b[2 * i])) + int(u.b[2 * i + 1]) * int(int8_t(s.b[2 * i + 1]));
      v = v > 32767 ? 32767 : (v < -32768 ? -32768 : v);
      w.h[i] = int16_t(v);
    }
    return w;
  }
  struct F {
    float f[16];
  };
  static F setf(float x) {
    F v;
    for (auto& e : v.f) e = x;
    return v;
  }
  static F loadf(const float* p) {
    F v;
    std::memcpy(v.f, p, 64);
    return v;
  }
  static void storef(float* p, const F& v) { std::memcpy(p, v.f, 64); }
  static F addf(F a, const F& b) {
    for (int i = 0; i < 16; ++i) a.f[i] += b.f[i];
    return a;
  }
  static F mulf(F a, const F& b) {
    for (int i = 0; i < 16; ++i) a.f[i] *= b.f[i];
    return a;
  }
  static F fmaf(const F& a, const F& b, F c) {
    for (int i = 0; i < 16; ++i) c.f[i] = a.f[i] * b.f[i] + c.f[i];
    return c;
  }
  static void widen(const W& w, F& lo, F& hi) {
    for (int i = 0; i < 16; ++i) {
      lo.f[i] = float(w.h[i]);
      hi.f[i] = float(w.h[16 + i]);
    }
  }
  static W zero16() { return W{}; }
  static W add16(W a, const W& b) {
    for (int i = 0; i < 32; ++i) a.h[i] = int16_t(uint16_t(a.h[i]) + uint16_t(b.h[i]));
    return a;
  }
  static void store16(int16_t* dst, const W& w) { std::memcpy(dst, w.h, 64); }
  static void f16_to_f32(const uint16_t* src, float* dst, int n) {
    for (int i = 0; i < n; ++i) dst[i] = ::lutkit::f16_to_f32(src[i]);
  }
};

}  // namespace lutkit::detail
