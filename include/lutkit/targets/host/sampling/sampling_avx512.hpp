// lutkit — the AVX-512 (F/BW/DQ/VL + FMA, F16C) kernel set of the sampling family:
// sampling/body.inl compiled in 16 lanes (targets/host/ops_avx512.hpp: mask registers, vscalefps,
// vgetmantps / vgetexpps, compress stores of the selection). Chosen at run time and registered
// in sampling/targets.hpp.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "../../../sampling/logits.hpp"
#include "../../../sampling/microkernel.hpp"
#include "../ops_avx512.hpp"

#if defined(LUTKIT_HAVE_AVX512_OPS)
#include "../features.hpp"
#include "../intrinsics_begin.hpp"
#define LUTKIT_HAVE_AVX512_SAMPLING 1

namespace lutkit::detail::avx512_sampling {

using Ops = avx512_ops;
#define LUTKIT_OPS_FN LUTKIT_AVX512
#include "../../../sampling/body.inl"
#undef LUTKIT_OPS_FN

inline bool cpu_supported() { return host_features::avx512(); }
inline const sampling_kernel_set& kernels() {
  static const sampling_kernel_set ks = kernel_set("avx512");
  return ks;
}

}  // namespace lutkit::detail::avx512_sampling

#include "../intrinsics_end.hpp"
#endif
