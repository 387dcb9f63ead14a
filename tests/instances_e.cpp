// The kernels of lut policies 12, 13, 14 (LUT-GEMV and dequant entry points) and of dequant-only
// policies 24 and 31, compiled once for the whole test binary (tests/instances.hpp).
#include "instances.hpp"

LUTKIT_TEST_INSTANTIATE_LUT(12) LUTKIT_TEST_INSTANTIATE_DQ(12)
LUTKIT_TEST_INSTANTIATE_LUT(13) LUTKIT_TEST_INSTANTIATE_DQ(13)
LUTKIT_TEST_INSTANTIATE_LUT(14) LUTKIT_TEST_INSTANTIATE_DQ(14)
LUTKIT_TEST_INSTANTIATE_DQ(24)
LUTKIT_TEST_INSTANTIATE_DQ(31)
