// lutkit — the backend-independent part of LUT-GEMV: argument checks, the row-range contract
// and the split over a thread pool. A backend supplies only its entry function.
#pragma once
#include <cstddef>
#include <string>

#include "../core/error.hpp"
#include "../quant/packed_weights.hpp"
#include "tables.hpp"
#include "../core/thread_pool.hpp"
#include "microkernel.hpp"

namespace lutkit::detail {

template <class P>
gemv_args make_gemv_args(const packed_weights<P>& w, const lut_tables<P>& t, float* y, std::size_t ldy,
                         std::size_t r0, std::size_t r1) {
  w.validate();
  require(!t.empty(), "lut_gemv: tables are empty (build them with build_tables)");
  require(t.K() == w.K(), "lut_gemv: tables were built for K = ", t.K(), " but the weights have K = ", w.K());
  require(y != nullptr, "lut_gemv: null output pointer");
  if (ldy == 0) ldy = w.M();
  require(ldy >= w.M(), "lut_gemv: output stride ldy is smaller than M");
  require(r0 <= r1 && r1 <= w.M(), "lut_gemv: row range [", r0, ", ", r1, ") is outside [0, M = ", w.M(), ")");
  check_strided(t.N(), w.M(), ldy, "lut_gemv", "ldy");
  gemv_args a;
  a.data = w.data();
  a.layout = &w.layout();
  a.entries = t.entries(0);
  a.entries_stride = t.N() > 1 ? std::size_t(t.entries(1) - t.entries(0)) : 0;
  a.tscale = t.tscale(0);
  a.xsum = t.xsum(0);
  a.blocks = t.layout().blocks();
  a.N = t.N();
  a.y = y;
  a.ldy = ldy;
  a.row_begin = r0;
  a.row_end = r1;
  return a;
}

// Split rows [r0, r1) in tile-aligned pieces over the pool (none: the calling thread).
inline void run_gemv(gemv_entry entry, const gemv_args& a, thread_pool* pool) {
  if (a.row_begin == a.row_end) return;
  const std::size_t R = 64;
  const std::size_t t0 = a.row_begin / R, t1 = (a.row_end + R - 1) / R;
  const std::size_t tiles = t1 - t0;
  const std::size_t parts = pool ? std::min(tiles, pool->size()) : 1;
  if (pool == nullptr || parts <= 1) {
    entry(a);
    return;
  }
  pool->run(parts, [&](std::size_t i) {
    gemv_args b = a;
    const std::size_t ta = t0 + tiles * i / parts, tb = t0 + tiles * (i + 1) / parts;
    b.row_begin = std::max(a.row_begin, ta * R);
    b.row_end = std::min(a.row_end, tb * R);
    entry(b);
  });
}

}  // namespace lutkit::detail
