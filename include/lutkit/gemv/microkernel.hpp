// lutkit — the LUT-GEMV's micro-kernel interface: the type-erased argument block the driver
// passes to a target's entry (one function pointer per policy and target), and the precompute
// entry that builds one activation row's tables.
#pragma once
#include <cstddef>
#include <cstdint>

#include "../core/prefetch.hpp"
#include "../core/tiling.hpp"

namespace lutkit::detail {

struct gemv_args {
  const uint8_t* data = nullptr;        // packed tiles (after the header)
  const packed_layout* layout = nullptr;
  const int8_t* entries = nullptr;      // tables of activation row 0
  std::size_t entries_stride = 0;       // bytes between activation rows' tables
  const float* tscale = nullptr;        // [n][block]
  const float* xsum = nullptr;          // [n][block]
  std::size_t blocks = 0;               // blocks per activation row
  std::size_t N = 0;
  float* y = nullptr;                   // y[n * ldy + m]
  std::size_t ldy = 0;
  std::size_t row_begin = 0, row_end = 0;  // rows written: [row_begin, row_end)
};

using gemv_entry = void (*)(const gemv_args&);
// tables of one activation row x[0, K): entries, tscale[blocks], xsum[blocks] (gemv/tables.hpp)
using tables_entry = void (*)(const float* x, std::size_t K, int8_t* entries, float* tscale, float* xsum,
                              std::size_t blocks);

}  // namespace lutkit::detail
