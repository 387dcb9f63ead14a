// The kernels of lut policies 3, 4, 5 (LUT-GEMV and dequant entry points) and of dequant-only
// policies 21, 27 and 33, compiled once for the whole test binary (tests/instances.hpp).
#include "instances.hpp"

LUTKIT_TEST_INSTANTIATE_LUT(3) LUTKIT_TEST_INSTANTIATE_DQ(3)
LUTKIT_TEST_INSTANTIATE_LUT(4) LUTKIT_TEST_INSTANTIATE_DQ(4)
LUTKIT_TEST_INSTANTIATE_LUT(5) LUTKIT_TEST_INSTANTIATE_DQ(5)
LUTKIT_TEST_INSTANTIATE_DQ(21)
LUTKIT_TEST_INSTANTIATE_DQ(27)
LUTKIT_TEST_INSTANTIATE_DQ(33)
