// lutkit — LUT-GEMV precompute: activation tables, built once per input and shared by every
// GEMV that reads the same input (Q/K/V, gate/up). Layout per activation row n:
//   entries  [step][16] int8 (int16 policies: [step][16 low bytes (u8)][16 high bytes (s8)])
//   tscale   [block] float: entry = round(exact / tscale)
//   xsum     [block] float: sum of the block's activations (zero-point and mirror bias)
// Non-finite activations make their block's tscale and xsum NaN: every output of that
// activation row is then NaN (defined, never a crash or a silent wrong value).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "../core/error.hpp"
#include "../core/policy.hpp"
#include "../core/tiling.hpp"
#include "../quant/packed_weights.hpp"

namespace lutkit {

template <class P>
class lut_tables {
  static_assert((detail::require_lut_gemv_capable<P>(), true));

 public:
  lut_tables() = default;
  lut_tables(std::size_t N, std::size_t K) : N_(N), layout_(P::spec, 1, K) {
    entries_per_row_ = layout_.steps() * P::spec.table_bytes_per_step();
    entries_ = detail::alloc_aligned(N * entries_per_row_);
    tscale_.assign(N * layout_.blocks(), 0.f);
    xsum_.assign(N * layout_.blocks(), 0.f);
  }
  std::size_t N() const { return N_; }
  std::size_t K() const { return layout_.K; }
  const packed_layout& layout() const { return layout_; }  // K-direction view (M = 1)
  const int8_t* entries(std::size_t n) const {
    return reinterpret_cast<const int8_t*>(entries_.get()) + n * entries_per_row_;
  }
  int8_t* entries(std::size_t n) { return reinterpret_cast<int8_t*>(entries_.get()) + n * entries_per_row_; }
  const float* tscale(std::size_t n) const { return tscale_.data() + n * layout_.blocks(); }
  float* tscale(std::size_t n) { return tscale_.data() + n * layout_.blocks(); }
  const float* xsum(std::size_t n) const { return xsum_.data() + n * layout_.blocks(); }
  float* xsum(std::size_t n) { return xsum_.data() + n * layout_.blocks(); }
  bool empty() const { return N_ == 0; }

 private:
  std::size_t N_ = 0;
  packed_layout layout_{};
  std::size_t entries_per_row_ = 0;
  detail::aligned_bytes entries_;
  std::vector<float> tscale_, xsum_;
};

namespace detail {
// exact (float) table of one step; `x` holds k_per_step activations
template <class P>
void step_table(const float* x, float* T) {
  constexpr auto& S = P::spec;
  if constexpr (S.ternary) {
    for (int i = 0; i < 14; ++i) {
      const int d0 = i / 9, d1 = (i / 3) % 3, d2 = i % 3;
      T[i] = float(d0 - 1) * x[0] + float(d1 - 1) * x[1] + float(d2 - 1) * x[2];
    }
    T[14] = T[15] = 0.f;
  } else {
    T[0] = 0.f;
    for (int i = 1; i < 16; ++i) {
      const int low = i & -i;  // lowest set bit
      int b = 0;
      while ((1 << b) != low) ++b;
      T[i] = T[i ^ low] + x[b];
    }
    if (S.mirror) {
      const float h = 0.5f * (x[0] + x[1] + x[2] + x[3]);
      for (int i = 0; i < 16; ++i) T[i] -= h;
    }
  }
}
}  // namespace detail

namespace detail {
inline void check_table_args(const void* x, std::size_t N, std::size_t K, std::size_t ldx) {
  require(x != nullptr, "build_tables: null activation pointer");
  require(N >= 1, "build_tables: N must be at least 1");
  require(K >= 1, "build_tables: K must be positive");
  require(ldx >= K, "build_tables: activation stride smaller than K");
  check_strided(N, K, ldx, "build_tables", "ldx");
}

// The scalar table builder: the specification of what the vectorized builder
// (lutkit::build_tables, gemv/lut_gemv.hpp) produces; tests compare the two.
template <class P>
lut_tables<P> build_tables_scalar(const float* x, std::size_t N, std::size_t K, std::size_t ldx = 0) {
  if (ldx == 0) ldx = K;
  check_table_args(x, N, K, ldx);
  constexpr auto& S = P::spec;
  lut_tables<P> t(N, K);
  const packed_layout& L = t.layout();
  const std::size_t bk = std::size_t(S.block_k), kps = std::size_t(S.k_per_step);
  constexpr float qmax = float(S.table_qmax());
  std::vector<float> xb(bk), T(std::size_t(S.steps_per_block) * 16);
  for (std::size_t n = 0; n < N; ++n) {
    const float* xr = x + n * ldx;
    int8_t* E = t.entries(n);
    for (std::size_t blk = 0; blk < L.blocks(); ++blk) {
      bool finite = true;
      double sum = 0;
      for (std::size_t i = 0; i < bk; ++i) {
        const std::size_t k = blk * bk + i;
        xb[i] = k < K ? xr[k] : 0.f;
        finite = finite && std::isfinite(xb[i]);
        sum += xb[i];
      }
      const std::size_t step0 = blk * std::size_t(S.steps_per_block);
      int8_t* Eb = E + step0 * S.table_bytes_per_step();
      if (!finite) {
        t.tscale(n)[blk] = std::numeric_limits<float>::quiet_NaN();
        t.xsum(n)[blk] = std::numeric_limits<float>::quiet_NaN();
        std::memset(Eb, 0, std::size_t(S.steps_per_block) * S.table_bytes_per_step());
        continue;
      }
      float amax = 0.f;
      for (int s = 0; s < S.steps_per_block; ++s) {
        detail::step_table<P>(xb.data() + s * kps, T.data() + s * 16);
        for (int i = 0; i < 16; ++i) amax = std::fmax(amax, std::fabs(T[s * 16 + i]));
      }
      const float ts = amax / qmax;
      const float inv = amax > 0.f ? qmax / amax : 0.f;
      t.tscale(n)[blk] = ts;
      t.xsum(n)[blk] = float(sum);
      for (int s = 0; s < S.steps_per_block; ++s) {
        int8_t* e = Eb + s * S.table_bytes_per_step();
        for (int i = 0; i < 16; ++i) {
          float v = std::nearbyint(T[s * 16 + i] * inv);  // round half to even
          v = v > qmax ? qmax : (v < -qmax ? -qmax : v);
          const int iv = int(v);
          if constexpr (S.entry_bits == 8) {
            e[i] = int8_t(iv);
          } else {
            const int hi = (iv + 128) >> 8;  // iv = 256 hi + lo, both signed bytes (tiling_spec::table_qmax)
            e[i] = int8_t(iv - 256 * hi);
            e[16 + i] = int8_t(hi);
          }
        }
      }
    }
  }
  return t;
}
}  // namespace detail

}  // namespace lutkit
