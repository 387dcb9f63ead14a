// The kernels of lut policies 6-8 (LUT-GEMV and dequant entry points) and of dequant-only
// policy 20, compiled once for the whole test binary (tests/instances.hpp).
#include "instances.hpp"

LUTKIT_TEST_INSTANTIATE_LUT(6) LUTKIT_TEST_INSTANTIATE_DQ(6)
LUTKIT_TEST_INSTANTIATE_LUT(7) LUTKIT_TEST_INSTANTIATE_DQ(7)
LUTKIT_TEST_INSTANTIATE_LUT(8) LUTKIT_TEST_INSTANTIATE_DQ(8)
LUTKIT_TEST_INSTANTIATE_DQ(20)
LUTKIT_TEST_INSTANTIATE_DQ(26)
