// Differential fuzz of the portable LUT-GEMV against the double reference, every compiled
// Highway target, policies [12, policy_count) of the policy list.
#include "randomized_lut_gemv.hpp"

TEST_CASE("lut_gemv matches the reference within the error bound (c)", "[lut_gemv][fuzz]") {
  lutkit_test::fuzz_slice<12, lutkit_test::policy_count>();
}
