// Baselines for the benchmark, written by us with Highway (per-target, dynamic dispatch):
//   FloatGemv     y = W x on fp32 weights (the dequantized matrix)
//   ConvertDQGemv T-MAN's "ConvertDQ": a conventional low-bit layout (codes packed along K,
//                 fp16 scale + zero per group) converted to float element by element, then FMA.
//   ReadBandwidth streams a buffer (the DRAM roofline)
//   ReadDot       streams a buffer doing the least a decode kernel does with its bytes: per vector
//                 a mask (the codes) and one widening int16 multiply-add into 32-bit sums
#if defined(LUTKIT_BENCH_BASELINES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LUTKIT_BENCH_BASELINES_INL_H_
#undef LUTKIT_BENCH_BASELINES_INL_H_
#else
#define LUTKIT_BENCH_BASELINES_INL_H_
#endif
#include <cstddef>
#include <cstdint>

#include <hwy/highway.h>

#include "lutkit/core/half.hpp"

HWY_BEFORE_NAMESPACE();
namespace lutkit_bench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// rows [r0, r1) of y[n*M + m] = sum_k W[m*K + k] x[n*K + k], N <= 16
void FloatGemv(const float* W, const float* x, float* y, std::size_t M, std::size_t K, std::size_t N,
               std::size_t r0, std::size_t r1) {
  const hn::ScalableTag<float> d;
  const std::size_t L = hn::Lanes(d);
  for (std::size_t m = r0; m < r1; ++m) {
    const float* w = W + m * K;
    for (std::size_t n = 0; n < N; ++n) {
      auto a0 = hn::Zero(d), a1 = hn::Zero(d);
      std::size_t k = 0;
      for (; k + 2 * L <= K; k += 2 * L) {
        a0 = hn::MulAdd(hn::LoadU(d, w + k), hn::LoadU(d, x + n * K + k), a0);
        a1 = hn::MulAdd(hn::LoadU(d, w + k + L), hn::LoadU(d, x + n * K + k + L), a1);
      }
      float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, a1)));
      for (; k < K; ++k) s += w[k] * x[n * K + k];
      y[n * M + m] = s;
    }
  }
}

// codes: bits B in {2,4}, row-major; every 16 bytes hold 16*(8/B) consecutive weights, code j of
// byte i being weight 16*j + i (so unpacking yields contiguous weights). Per (row, group of G):
// fp16 scale, fp16 zero. Each element: shift, mask, int->float, (q - z) * s, FMA with x.
template <int B>
void ConvertDQGemvT(const uint8_t* codes, const uint16_t* sz, const float* x, float* y, std::size_t M,
                    std::size_t K, std::size_t G, std::size_t N, std::size_t r0, std::size_t r1) {
  const hn::CappedTag<float, 16> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(df)> du8;
  const std::size_t L = hn::Lanes(df);
  constexpr int per_byte = 8 / B;
  const std::size_t row_bytes = K / per_byte;
  for (std::size_t m = r0; m < r1; ++m) {
    const uint8_t* c = codes + m * row_bytes;
    for (std::size_t n = 0; n < N; ++n) {
      const float* xn = x + n * K;
      auto acc = hn::Zero(df);
      for (std::size_t g = 0; g < K / G; ++g) {
        const float s = lutkit::f16_to_f32(sz[(m * (K / G) + g) * 2]);
        const float z = lutkit::f16_to_f32(sz[(m * (K / G) + g) * 2 + 1]);
        const auto vs = hn::Set(df, s), vz = hn::Set(df, z);
        auto gacc = hn::Zero(df);
        for (std::size_t k = g * G; k < (g + 1) * G; k += 16 * per_byte) {
          for (std::size_t sub = 0; sub < 16; sub += L) {
            const auto bytes = hn::BitCast(di, hn::PromoteTo(hn::RebindToUnsigned<decltype(di)>(), hn::LoadU(du8, c + k / per_byte + sub)));
            for (int j = 0; j < per_byte; ++j) {
              const auto q = hn::And(hn::ShiftRightSame(bytes, j * B), hn::Set(di, (1 << B) - 1));
              const auto wv = hn::Mul(hn::Sub(hn::ConvertTo(df, q), vz), vs);
              gacc = hn::MulAdd(wv, hn::LoadU(df, xn + k + 16 * j + sub), gacc);
            }
          }
        }
        acc = hn::Add(acc, gacc);
      }
      y[n * M + m] = hn::GetLane(hn::SumOfLanes(df, acc));
    }
  }
}
void ConvertDQGemv2(const uint8_t* c, const uint16_t* sz, const float* x, float* y, std::size_t M, std::size_t K,
                    std::size_t G, std::size_t N, std::size_t r0, std::size_t r1) {
  ConvertDQGemvT<2>(c, sz, x, y, M, K, G, N, r0, r1);
}
void ConvertDQGemv4(const uint8_t* c, const uint16_t* sz, const float* x, float* y, std::size_t M, std::size_t K,
                    std::size_t G, std::size_t N, std::size_t r0, std::size_t r1) {
  ConvertDQGemvT<4>(c, sz, x, y, M, K, G, N, r0, r1);
}

// ConvertDQ dequantization alone (the prefill comparison, T-MAN Fig. 16): rows [m0, m0 + rows),
// k in [k0, k1) of the ConvertDQ layout above into out[r * ldo + (k - k0)], every element
// converted with shift, mask, int->float, (q - z) * s. k0, k1 multiples of 16 * (8 / B).
template <int B, class Out>  // Out: float, or uint16_t holding bf16 (rounded to nearest even)
void ConvertDQRowsT(const uint8_t* codes, const uint16_t* sz, std::size_t K, std::size_t G, std::size_t m0,
                    std::size_t rows, std::size_t k0, std::size_t k1, Out* out, std::size_t ldo) {
  const hn::CappedTag<float, 16> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::Rebind<uint8_t, decltype(df)> du8;
  const hn::Rebind<uint16_t, decltype(df)> du16;
  const std::size_t L = hn::Lanes(df);
  constexpr int per_byte = 8 / B;
  const std::size_t row_bytes = K / per_byte;
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t m = m0 + r;
    const uint8_t* c = codes + m * row_bytes;
    Out* o = out + r * ldo - k0;
    for (std::size_t k = k0; k < k1; k += 16 * per_byte) {
      const std::size_t g = k / G;
      const auto vs = hn::Set(df, lutkit::f16_to_f32(sz[(m * (K / G) + g) * 2]));
      const auto vz = hn::Set(df, lutkit::f16_to_f32(sz[(m * (K / G) + g) * 2 + 1]));
      for (std::size_t sub = 0; sub < 16; sub += L) {
        const auto bytes = hn::BitCast(di, hn::PromoteTo(hn::RebindToUnsigned<decltype(di)>(), hn::LoadU(du8, c + k / per_byte + sub)));
        for (int j = 0; j < per_byte; ++j) {
          const auto q = hn::And(hn::ShiftRightSame(bytes, j * B), hn::Set(di, (1 << B) - 1));
          const auto v = hn::Mul(hn::Sub(hn::ConvertTo(df, q), vz), vs);
          if constexpr (sizeof(Out) == 4) {
            hn::StoreU(v, df, o + k + 16 * j + sub);
          } else {  // round to nearest even, keep the top 16 bits
            const auto f = hn::BitCast(du, v);
            const auto rnd = hn::Add(hn::Set(du, 0x7FFFu), hn::And(hn::ShiftRight<16>(f), hn::Set(du, 1u)));
            hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di, hn::ShiftRight<16>(hn::Add(f, rnd)))), du16, o + k + 16 * j + sub);
          }
        }
      }
    }
  }
}
// codes only (int8 paradigm): shift and mask every element into a byte, written in the
// step-major layout of the int8 micro-kernel (k4 step s, row r at out[s * 256 + 4 * r]; rows == 64)
template <int B>
void ConvertDQRowsCodesT(const uint8_t* codes, std::size_t K, std::size_t m0, std::size_t rows, std::size_t k0,
                         std::size_t k1, uint8_t* out) {
  constexpr int per_byte = 8 / B;
  const std::size_t row_bytes = K / per_byte;
  for (std::size_t r = 0; r < rows; ++r) {
    const uint8_t* c = codes + (m0 + r) * row_bytes;
    uint8_t* o = out + 4 * r;
    for (std::size_t k = k0; k < k1; k += 16 * per_byte)
      for (int j = 0; j < per_byte; ++j)
        for (int i = 0; i < 16; ++i) {
          const std::size_t kk = k - k0 + 16 * j + i;
          o[(kk / 4) * 256 + kk % 4] = uint8_t((c[k / per_byte + i] >> (j * B)) & ((1 << B) - 1));
        }
  }
}
void ConvertDQRows(int bits, const uint8_t* codes, const uint16_t* sz, std::size_t K, std::size_t G, std::size_t m0,
                   std::size_t rows, std::size_t k0, std::size_t k1, float* out, std::size_t ldo) {
  if (bits == 2) ConvertDQRowsT<2, float>(codes, sz, K, G, m0, rows, k0, k1, out, ldo);
  else ConvertDQRowsT<4, float>(codes, sz, K, G, m0, rows, k0, k1, out, ldo);
}
void ConvertDQRowsBF16(int bits, const uint8_t* codes, const uint16_t* sz, std::size_t K, std::size_t G, std::size_t m0,
                       std::size_t rows, std::size_t k0, std::size_t k1, uint16_t* out, std::size_t ldo) {
  if (bits == 2) ConvertDQRowsT<2, uint16_t>(codes, sz, K, G, m0, rows, k0, k1, out, ldo);
  else ConvertDQRowsT<4, uint16_t>(codes, sz, K, G, m0, rows, k0, k1, out, ldo);
}
void ConvertDQRowsCodes(int bits, const uint8_t* codes, std::size_t K, std::size_t m0, std::size_t rows, std::size_t k0,
                        std::size_t k1, uint8_t* out) {
  if (bits == 2) ConvertDQRowsCodesT<2>(codes, K, m0, rows, k0, k1, out);
  else ConvertDQRowsCodesT<4>(codes, K, m0, rows, k0, k1, out);
}

uint64_t ReadBandwidth(const uint64_t* p, std::size_t n, std::size_t prefetch) {
  const hn::ScalableTag<uint64_t> d;
  const std::size_t L = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  for (std::size_t i = 0; i + 4 * L <= n; i += 4 * L) {
    if (prefetch)
      for (std::size_t c = 0; c < 4 * L * 8; c += 64) __builtin_prefetch(p + i + (prefetch + c) / 8, 0, 0);
    a0 = hn::Xor(a0, hn::Load(d, p + i));
    a1 = hn::Xor(a1, hn::Load(d, p + i + L));
    a2 = hn::Xor(a2, hn::Load(d, p + i + 2 * L));
    a3 = hn::Xor(a3, hn::Load(d, p + i + 3 * L));
  }
  return hn::GetLane(hn::Xor(hn::Xor(a0, a1), hn::Xor(a2, a3)));
}

uint64_t ReadDot(const uint64_t* p, std::size_t n) {
  const hn::ScalableTag<int16_t> d16;
  const hn::RepartitionToWide<decltype(d16)> d32;
  const std::size_t L = hn::Lanes(d16);
  const int16_t* q = reinterpret_cast<const int16_t*>(p);
  const std::size_t m = n * 4;  // int16 lanes
  const auto mask = hn::Set(d16, 0x0F0F), x = hn::Set(d16, 3);
  auto s0 = hn::Zero(d32), s1 = hn::Zero(d32), s2 = hn::Zero(d32), s3 = hn::Zero(d32), c = hn::Zero(d32);
  for (std::size_t i = 0; i + 4 * L <= m; i += 4 * L) {
    s0 = hn::ReorderWidenMulAccumulate(d32, hn::And(hn::Load(d16, q + i), mask), x, s0, c);
    s1 = hn::ReorderWidenMulAccumulate(d32, hn::And(hn::Load(d16, q + i + L), mask), x, s1, c);
    s2 = hn::ReorderWidenMulAccumulate(d32, hn::And(hn::Load(d16, q + i + 2 * L), mask), x, s2, c);
    s3 = hn::ReorderWidenMulAccumulate(d32, hn::And(hn::Load(d16, q + i + 3 * L), mask), x, s3, c);
  }
  const auto s = hn::Add(hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)), c);
  return uint64_t(uint32_t(hn::GetLane(hn::SumOfLanes(d32, s))));
}

}  // namespace HWY_NAMESPACE
}  // namespace lutkit_bench
HWY_AFTER_NAMESPACE();
#endif
