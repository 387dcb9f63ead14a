// lutkit — the AVX2 (+ FMA, F16C) kernel set of the sampling family: sampling/body.inl compiled in
// 8 lanes (targets/host/ops_avx2.hpp), for CPUs without AVX-512. Tails are read by masked loads
// (vmaskmovps), their lanes past the end filled as the AVX-512 set's mask registers fill them.
// Chosen at run time and registered in sampling/targets.hpp.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "../../../sampling/logits.hpp"
#include "../../../sampling/microkernel.hpp"
#include "../ops_avx2.hpp"

#if defined(LUTKIT_HAVE_AVX2_OPS)
#include "../features.hpp"
#include "../intrinsics_begin.hpp"
#define LUTKIT_HAVE_AVX2_SAMPLING 1

namespace lutkit::detail::avx2_sampling {

using Ops = avx2_ops;
#define LUTKIT_OPS_FN LUTKIT_AVX2
#include "../../../sampling/body.inl"
#undef LUTKIT_OPS_FN

inline bool cpu_supported() { return host_features::avx2(); }
inline const sampling_kernel_set& kernels() {
  static const sampling_kernel_set ks = kernel_set("avx2");
  return ks;
}

}  // namespace lutkit::detail::avx2_sampling

#include "../intrinsics_end.hpp"
#endif
