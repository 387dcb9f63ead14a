// lutkit — the AVX2 (+ FMA, F16C) kernel of the attention family: the fp32 online-softmax step of
// attention/body.inl in 8 lanes (targets/host/ops_avx2.hpp), 2 keys per pass of the score tile
// (8 accumulators, 4 query and 2 key vectors: 14 of the 16 registers), 4 rows x 16 channels
// value tiles; and the fp32 prefill tile of attention/body.inl (6 rows x 16 keys score tiles,
// 6 rows x 16 channels value tiles). No bf16 tile: the bf16 prefill runs the fp32 one here. Chosen at run time; registered in attention/targets.hpp.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "../../../attention/exp.hpp"
#include "../../../attention/microkernel.hpp"
#include "../ops_avx2.hpp"

#if defined(LUTKIT_HAVE_AVX2_OPS)
#include "../features.hpp"
#include "../intrinsics_begin.hpp"
#define LUTKIT_HAVE_AVX2_ATT 1

namespace lutkit::detail::avx2_att {

struct Ops : avx2_ops {
  static constexpr int KP = 2, VT = 2, QV = 2, PV = 2;
  using Fold = __m128;
  // a key's 4 row sums by horizontal adds (lane i: row i)
  LUTKIT_AVX2_OP Fold fold_key(const F* x) {
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(x[0], x[1]), _mm256_hadd_ps(x[2], x[3]));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  }
  LUTKIT_AVX2_OP void store_scores(Fold* u, float* s, std::size_t ld, std::size_t rows) {
    _MM_TRANSPOSE4_PS(u[0], u[1], u[2], u[3]);
    for (int i = 0; i < 4; ++i)
      if (std::size_t(i) < rows) _mm_storeu_ps(s + i * ld, u[i]);
  }
};
#define LUTKIT_OPS_FN LUTKIT_AVX2
#include "../../../attention/body.inl"
#undef LUTKIT_OPS_FN

inline bool cpu_supported() { return host_features::avx2(); }
inline const att_kernel_set& kernels() {
  static const att_kernel_set ks{"avx2",  &dims_supported, &step_entry,     &dims_supported,
                                 nullptr, nullptr,         &pack_f32_entry, &tile_f32_entry};
  return ks;
}

}  // namespace lutkit::detail::avx2_att

#include "../intrinsics_end.hpp"
#endif
