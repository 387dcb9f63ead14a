// lutkit — the dequant-GEMM's reference: the product of the dequantized weights with N activation
// rows, in double (the same contract as ref::gemv for any N).
#pragma once
#include <cstddef>
#include <vector>

#include "../quant/reference.hpp"

namespace lutkit::ref {

// Float GEMM on dequantized weights: the same contract for any N.
template <class P>
std::vector<double> gemm(const quantized<P>& q, const float* x, std::size_t N, std::size_t ldx = 0) {
  return gemv(q, x, N, ldx);
}

}  // namespace lutkit::ref
