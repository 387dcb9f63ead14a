// xsimd backend vs the reference and the Highway backend, policies [6, 12) of the policy list.
#include "xsimd_check.hpp"

TEST_CASE("xsimd backend matches the reference and the Highway backend (b)", "[xsimd]") {
  lutkit_test::xsimd_slice<6, 12>();
}
