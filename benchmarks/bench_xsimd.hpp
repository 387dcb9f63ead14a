#pragma once
#include <cstddef>
namespace lutkit_bench {
// Registers the xsimd-backend LUT-GEMV benchmarks of one configuration; *dram_bps is read when
// the benchmark runs (the DRAM benchmark of the same thread count has run by then).
void register_xsimd(std::size_t M, std::size_t K, std::size_t N, int T, bool cold, const double* dram_bps);
}  // namespace lutkit_bench
