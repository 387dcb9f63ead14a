// Baselines of the benchmark (implemented in baselines.cpp with Highway dynamic dispatch).
#pragma once
#include <cstddef>
#include <cstdint>

namespace lutkit_bench {
void float_gemv(const float* W, const float* x, float* y, std::size_t M, std::size_t K, std::size_t N,
                std::size_t r0, std::size_t r1);
// bits 2 or 4; codes/sz in the ConvertDQ layout (see baselines-inl.h)
void convert_dq_gemv(int bits, const uint8_t* codes, const uint16_t* sz, const float* x, float* y, std::size_t M,
                     std::size_t K, std::size_t G, std::size_t N, std::size_t r0, std::size_t r1);
uint64_t read_bandwidth(const uint64_t* p, std::size_t n, std::size_t prefetch_bytes);
}  // namespace lutkit_bench
