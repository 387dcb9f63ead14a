// xsimd backend vs the reference and the Highway backend, policies [0, 6) of the policy list.
#include "xsimd_check.hpp"

TEST_CASE("xsimd backend matches the reference and the Highway backend (a)", "[xsimd]") {
  lutkit_test::xsimd_slice<0, 6>();
}
