// lutkit — umbrella header: policies, tiling spec, quantization, packing, tables, references,
// and the portable (Highway) LUT-GEMV. The xsimd backend is opt-in: lutkit/xsimd/lut_gemv.hpp.
#pragma once
#include "lutkit/core/concepts.hpp"
#include "lutkit/core/error.hpp"
#include "lutkit/core/half.hpp"
#include "lutkit/core/policy.hpp"
#include "lutkit/core/target.hpp"
#include "lutkit/core/tiling.hpp"
#include "lutkit/pack.hpp"
#include "lutkit/dequant.hpp"
#include "lutkit/portable/dequant_gemm.hpp"
#include "lutkit/portable/fused_dq_gemv.hpp"
#include "lutkit/portable/lut_gemv.hpp"
#include "lutkit/quant.hpp"
#include "lutkit/ref/ref.hpp"
#include "lutkit/tables.hpp"
#include "lutkit/thread_pool.hpp"
