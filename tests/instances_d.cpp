// The kernels of lut policies 9-11 (LUT-GEMV and dequant entry points) and of dequant-only
// policies 21 and 27, compiled once for the whole test binary (tests/instances.hpp).
#include "instances.hpp"

LUTKIT_TEST_INSTANTIATE_LUT(9) LUTKIT_TEST_INSTANTIATE_DQ(9)
LUTKIT_TEST_INSTANTIATE_LUT(10) LUTKIT_TEST_INSTANTIATE_DQ(10)
LUTKIT_TEST_INSTANTIATE_LUT(11) LUTKIT_TEST_INSTANTIATE_DQ(11)
LUTKIT_TEST_INSTANTIATE_DQ(21)
LUTKIT_TEST_INSTANTIATE_DQ(27)
