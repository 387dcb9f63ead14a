// lutkit example engine — the kernels of the K-quant and ternary matrix policies (model.hpp),
// compiled once for the whole program.
#include "model.hpp"

LUTKIT_INSTANTIATE_DQ(llm::q4_k_policy)
LUTKIT_INSTANTIATE_DQ(llm::q6_k_policy)
LUTKIT_INSTANTIATE_DQ(llm::q3_k_policy)
LUTKIT_INSTANTIATE_DQ(llm::q5_k_policy)
LUTKIT_INSTANTIATE_DQ(llm::q2_k_policy)
LUTKIT_INSTANTIATE_DQ(llm::tq_policy)
LUTKIT_INSTANTIATE_LUT(llm::q6_k_policy)
LUTKIT_INSTANTIATE_LUT(llm::q3_k_policy)
LUTKIT_INSTANTIATE_LUT(llm::q5_k_policy)
LUTKIT_INSTANTIATE_LUT(llm::q2_k_policy)
LUTKIT_INSTANTIATE_LUT(llm::tq_policy)
