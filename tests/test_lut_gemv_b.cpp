// Differential fuzz of the portable LUT-GEMV against the double reference, every compiled
// Highway target, policies [6, 12) of the policy list.
#include "randomized_lut_gemv.hpp"

TEST_CASE("lut_gemv matches the reference within the error bound (b)", "[lut_gemv][fuzz]") {
  lutkit_test::fuzz_slice<6, 12>();
}
