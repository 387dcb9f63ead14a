// The kernels of lut policies 15, 16, 17 (LUT-GEMV and dequant entry points) and of dequant-only
// policies 25 and 32, compiled once for the whole test binary (tests/instances.hpp).
#include "instances.hpp"

LUTKIT_TEST_INSTANTIATE_LUT(15) LUTKIT_TEST_INSTANTIATE_DQ(15)
LUTKIT_TEST_INSTANTIATE_LUT(16) LUTKIT_TEST_INSTANTIATE_DQ(16)
LUTKIT_TEST_INSTANTIATE_LUT(17) LUTKIT_TEST_INSTANTIATE_DQ(17)
LUTKIT_TEST_INSTANTIATE_DQ(25)
LUTKIT_TEST_INSTANTIATE_DQ(32)
