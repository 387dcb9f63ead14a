// Differential fuzz of the portable LUT-GEMV against the double reference, every compiled
// Highway target, policies [0, 6) of the policy list.
#include "randomized_lut_gemv.hpp"

TEST_CASE("lut_gemv matches the reference within the error bound (a)", "[lut_gemv][fuzz]") {
  lutkit_test::fuzz_slice<0, 6>();
}
