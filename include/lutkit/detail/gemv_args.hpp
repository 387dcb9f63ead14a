// lutkit — the type-erased argument block passed from the driver to a backend's LUT-GEMV
// entry (one function pointer per policy and target).
#pragma once
#include <cstddef>
#include <cstdint>

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

}  // namespace lutkit::detail
