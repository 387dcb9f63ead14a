// lutkit — the int8 decode (decode_method::int8): the dequant-GEMM's int8 paradigm for a few
// activation rows, quantized per scale group of at most 32 k (llama.cpp's q8_0 grid, the geometry's
// decode flag); for 1 or 2 rows level 1 runs fused into the micro-kernel where the kernel set has
// it, and float codebooks (NF4) run there with split levels. Built from gemm/'s blocks: the
// geometry, the activation panel, the weight source and run_dq_gemm, whose band walk
// (dq_gemm_bands) reads a banded blob as one stream for every N <= 16.
#pragma once
#include <cstddef>

#include "../core/error.hpp"
#include "../core/thread_pool.hpp"
#include "../gemm/dequant.hpp"
#include "../gemm/dequant_gemm.hpp"
#include "../gemm/geometry.hpp"
#include "../gemm/targets.hpp"
#include "../quant/packed_weights.hpp"

namespace lutkit::detail {

// Float codebooks with split levels (gemm/dequant.hpp) run the int8 decode for N = 1, 2 where
// the kernel set fuses level 1 into the int8 micro-kernel (AVX-512 VNNI + GFNI, AVX2); they have no
// buffered int8 route.
template <class P>
bool split_int8_decode_available(std::size_t N, const dq_kernel_set& ks) {
  if constexpr (!split_levels<P>()) {
    return false;
  } else {
    const dq_level1_fns<P> l1 = dq_level1_for<P>(ks);
    return N >= 1 && N <= 2 && l1.int8_fused[N - 1] != nullptr;
  }
}

// Rows [r0, r1) of the int8 decode, over the pool's threads (checks first: a float codebook
// without the fused kernel is refused before the arguments).
template <class P>
void run_int8_decode(const packed_weights<P>& w, const float* x, std::size_t N, std::size_t K, float* y,
                     std::size_t r0, std::size_t r1, std::size_t ldx, std::size_t ldy, thread_pool* pool) {
  require(format_traits<typename P::format>::integer_levels ||
              split_int8_decode_available<P>(N, dq_kernels_for_policy<P>(dq_backend::best)),
          "decode_gemv: policy ", P::name(),
          " has a float codebook; decode_method::int8 needs integer levels, or for N <= 2 a CPU with "
          "AVX-512 VNNI and GFNI, or AVX2 (use bf16, fused_dq or best)");
  if (ldx == 0) ldx = K;
  if (ldy == 0) ldy = w.M();
  check_dq_args(w, x, N, K, ldx, y, ldy, r0, r1);
  const auto& ks = dq_kernels_for_policy<P>(dq_backend::best);
  require(ks.int8[0] != nullptr, "decode_gemv: the ", ks.name,
          " kernels have no int8 paradigm (use decode_method::bf16 or best)");
  constexpr act_type act = act_type::int8_group;
  run_dq_gemm_blob<P>(w, x, ldx, act, make_dq_geometry<P>(w.layout(), N, act, /*decode=*/true), ks, r0, r1, y,
                      ldy, pool, /*fold=*/false);
}

}  // namespace lutkit::detail
