// xsimd backend vs the reference and the Highway backend, policies [12, lutkit_test::policy_count) of the policy list.
#include "xsimd_check.hpp"

TEST_CASE("xsimd backend matches the reference and the Highway backend (c)", "[xsimd]") {
  lutkit_test::xsimd_slice<12, lutkit_test::policy_count>();
}
