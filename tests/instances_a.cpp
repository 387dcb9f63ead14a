// The kernels of lut policies 0, 1, 2 (LUT-GEMV and dequant entry points) and of dequant-only
// policies 20, 26 and 30, compiled once for the whole test binary (tests/instances.hpp).
#include "instances.hpp"

LUTKIT_TEST_INSTANTIATE_LUT(0) LUTKIT_TEST_INSTANTIATE_DQ(0)
LUTKIT_TEST_INSTANTIATE_LUT(1) LUTKIT_TEST_INSTANTIATE_DQ(1)
LUTKIT_TEST_INSTANTIATE_LUT(2) LUTKIT_TEST_INSTANTIATE_DQ(2)
LUTKIT_TEST_INSTANTIATE_DQ(20)
LUTKIT_TEST_INSTANTIATE_DQ(26)
LUTKIT_TEST_INSTANTIATE_DQ(30)
