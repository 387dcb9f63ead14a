// lutkit — LUT-GEMV (decode), public entry points: the precompute (build_tables) and the lookup
// GEMV over a thread pool or a row range. The kernel body is gemv/body.inl, written once against
// the register-tile Ops interface; targets instantiate it and register their entries in
// gemv/targets.hpp.
#pragma once
#include <cstddef>
#include <cstdint>

#include "../core/error.hpp"
#include "../core/thread_pool.hpp"
#include "../quant/packed_weights.hpp"
#include "driver.hpp"
#include "tables.hpp"
#include "targets.hpp"

namespace lutkit {
// Precompute: the tables of N activation rows (row-major N x K, row stride ldx >= K), built
// once per input and shared by every GEMV reading that input (Q/K/V, gate/up).
template <class P>
lut_tables<P> build_tables(const float* x, std::size_t N, std::size_t K, std::size_t ldx = 0) {
  detail::require_lut_gemv_capable<P>();
  if (ldx == 0) ldx = K;
  detail::check_table_args(x, N, K, ldx);
  lut_tables<P> t(N, K);
  const auto fn = detail::best_tables_entry<P>();
  for (std::size_t n = 0; n < N; ++n) fn(x + n * ldx, K, t.entries(n), t.tscale(n), t.xsum(n), t.layout().blocks());
  return t;
}

// y[n * ldy + m] = sum_k W[m][k] x[n][k] for every row m, with tables built from x.
// target = 0 picks the best compiled target the CPU supports.
template <class P>
void lut_gemv(const packed_weights<P>& w, const lut_tables<P>& t, float* y, std::size_t ldy = 0,
              thread_pool* pool = nullptr, int64_t target = 0) {
  detail::require_lut_gemv_capable<P>();
  const auto a = detail::make_gemv_args(w, t, y, ldy, 0, w.M());
  detail::run_gemv(detail::gemv_entry_for<P>(target), a, pool);
}

// Rows [r0, r1) only: an engine splits a GEMV over its own threads with this. Rows outside the
// range are not written.
template <class P>
void lut_gemv_rows(const packed_weights<P>& w, const lut_tables<P>& t, float* y, std::size_t r0,
                   std::size_t r1, std::size_t ldy = 0, int64_t target = 0) {
  detail::require_lut_gemv_capable<P>();
  const auto a = detail::make_gemv_args(w, t, y, ldy, r0, r1);
  detail::run_gemv(detail::gemv_entry_for<P>(target), a, nullptr);
}

}  // namespace lutkit
