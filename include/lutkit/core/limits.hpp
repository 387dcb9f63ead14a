// lutkit — the largest shapes lutkit accepts, and size arithmetic that cannot wrap.
//
// Every size computed from numbers that come from outside (a blob header, an importer's M and K,
// a kernel's N and strides) is checked against these limits before it is used, so no product of
// two checked numbers can overflow 64 bits: max_dim^2 = 2^62 and max_elements * 2^16 = 2^56.
// docs/robustness.md lists them with the contract of each entry point.
#pragma once
#include <cstddef>
#include <cstdint>

#include "error.hpp"

namespace lutkit {

// One dimension (M, K, N, a stride, a sequence length, a vocabulary): at most 2^31.
inline constexpr std::size_t max_dim = std::size_t(1) << 31;
// Elements of one tensor (M x K weights, N x ldx activations, N x ldy outputs): at most 2^40.
inline constexpr std::size_t max_elements = std::size_t(1) << 40;

// "The caller does not know the size of this buffer": an optional size argument's default. The
// entry point then relies on the caller's promise that the buffer holds what the shape needs.
inline constexpr std::size_t unknown_size = ~std::size_t(0);

namespace detail {
// who: the entry point ("from_bytes"), name: the argument or header field ("M", "ldx").
inline void check_dim(std::size_t v, const char* who, const char* name) {
  require(v <= max_dim, who, ": ", name, " = ", v, " exceeds the largest dimension lutkit accepts (2^31)");
}
// a x b with both factors first checked as dimensions; the product must stay within max_elements.
inline std::size_t checked_elements(std::size_t a, std::size_t b, const char* who, const char* what) {
  check_dim(a, who, what);
  check_dim(b, who, what);
  const std::size_t n = a * b;  // <= 2^62: cannot wrap
  require(n <= max_elements, who, ": ", what, " = ", a, " x ", b, " = ", n,
          " elements exceeds the largest tensor lutkit accepts (2^40 elements)");
  return n;
}
// A weight matrix shape: M, K positive, each at most max_dim, M x K at most max_elements.
inline void check_matrix_shape(std::size_t M, std::size_t K, const char* who) {
  require(M > 0 && K > 0, who, ": M and K must be positive (M = ", M, ", K = ", K, ")");
  checked_elements(M, K, who, "M x K");
}
// A strided operand of `rows` rows of `cols` elements, `ld` apart: each at most max_dim, ld >= cols,
// the span (rows - 1) x ld + cols at most max_elements.
inline void check_strided(std::size_t rows, std::size_t cols, std::size_t ld, const char* who, const char* ld_name) {
  check_dim(rows, who, "rows");
  check_dim(cols, who, "row length");
  check_dim(ld, who, ld_name);
  require(ld >= cols, who, ": stride ", ld_name, " (", ld, ") is smaller than the row length (", cols, ")");
  const std::size_t span = (rows > 0 ? (rows - 1) * ld : 0) + cols;  // <= 2^62 + 2^31: cannot wrap
  require(span <= max_elements, who, ": ", rows, " rows ", ld_name, " = ", ld, " apart span ", span,
          " elements, more than the largest tensor lutkit accepts (2^40 elements)");
}
// Bytes [p, p + n) of a caller's buffer, for the aliasing checks: an output that overlaps an input
// (or another output) is refused, never computed into.
struct byte_range {
  const void* p;
  std::size_t n;
};
inline bool overlaps(byte_range a, byte_range b) {
  if (!a.p || !b.p || a.n == 0 || b.n == 0) return false;
  const auto x = reinterpret_cast<uintptr_t>(a.p), y = reinterpret_cast<uintptr_t>(b.p);
  return x < y + b.n && y < x + a.n;
}
}  // namespace detail
}  // namespace lutkit
