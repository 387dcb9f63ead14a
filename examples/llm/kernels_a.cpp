// lutkit example engine — the kernels of the first six matrix policies (model.hpp; the LUT-GEMV's
// too for those it serves), compiled once for the whole program; kernels_b.cpp holds the other
// six (two files: they build in parallel).
#include "model.hpp"

LUTKIT_INSTANTIATE_DQ(llm::q4_0_policy)
LUTKIT_INSTANTIATE_DQ(llm::q8_0_policy)
LUTKIT_INSTANTIATE_DQ(llm::iq4_nl_policy)
LUTKIT_INSTANTIATE_DQ(llm::q4_1_policy)
LUTKIT_INSTANTIATE_DQ(llm::q5_0_policy)
LUTKIT_INSTANTIATE_DQ(llm::q5_1_policy)
LUTKIT_INSTANTIATE_LUT(llm::q4_0_policy)
LUTKIT_INSTANTIATE_LUT(llm::q5_0_policy)
LUTKIT_INSTANTIATE_LUT(llm::q5_1_policy)
