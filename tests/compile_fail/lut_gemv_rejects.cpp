// Must NOT compile: the LUT-GEMV entry points reject formats that are not linear in their code
// bits (codebooks) or would overflow its int16 accumulators (8 bits). Built by the ctest
// lutkit_compile_fail_* tests, which pass when the compiler prints the static_assert message.
#include <lutkit/lutkit.hpp>

#if defined(LUTKIT_CF_CODEBOOK)
using P = lutkit::policy<lutkit::fmt::codebook4<lutkit::book::nf4>, lutkit::group<64>,
                         lutkit::table::lut4<int8_t, false>>;
#else
using P = lutkit::policy<lutkit::fmt::uint_sym<8>, lutkit::group<32>, lutkit::table::lut4<int8_t, false>>;
#endif

void f(const lutkit::packed_weights<P>& w, const float* x, float* y) {
  auto t = lutkit::build_tables<P>(x, 1, w.K());
  lutkit::lut_gemv(w, t, y);
}
