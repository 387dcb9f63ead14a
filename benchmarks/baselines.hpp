// Baselines of the benchmark (implemented in baselines.cpp with Highway dynamic dispatch).
#pragma once
#include <cstddef>
#include <cstdint>

#include <lutkit/core/thread_pool.hpp>

namespace lutkit_bench {
void float_gemv(const float* W, const float* x, float* y, std::size_t M, std::size_t K, std::size_t N,
                std::size_t r0, std::size_t r1);
// bits 2 or 4; codes/sz in the ConvertDQ layout (see baselines-inl.h)
void convert_dq_gemv(int bits, const uint8_t* codes, const uint16_t* sz, const float* x, float* y, std::size_t M,
                     std::size_t K, std::size_t G, std::size_t N, std::size_t r0, std::size_t r1);
// ConvertDQ dequantization of rows [m0, m0 + rows), k in [k0, k1), to fp32 / bf16 / codes
void convert_dq_rows(int bits, const uint8_t* codes, const uint16_t* sz, std::size_t K, std::size_t G, std::size_t m0,
                     std::size_t rows, std::size_t k0, std::size_t k1, float* out, std::size_t ldo);
void convert_dq_rows_bf16(int bits, const uint8_t* codes, const uint16_t* sz, std::size_t K, std::size_t G,
                          std::size_t m0, std::size_t rows, std::size_t k0, std::size_t k1, uint16_t* out,
                          std::size_t ldo);
void convert_dq_rows_codes(int bits, const uint8_t* codes, std::size_t K, std::size_t m0, std::size_t rows,
                           std::size_t k0, std::size_t k1, uint8_t* out);
uint64_t read_bandwidth(const uint64_t* p, std::size_t n, std::size_t prefetch_bytes);
// A plain read of `bytes` bytes at p (a multiple of 8), split in T equal parts over the pool (the
// calling thread alone when pool is null): the roofline rows of every benchmark family. With dot,
// the read does per vector the least a decode kernel does with its bytes (a mask and one widening
// int16 multiply-add, ~0.1 instruction per byte): the rate a stream keeps with work beside it.
void pooled_read(const void* p, std::size_t bytes, lutkit::thread_pool* pool, int T, bool dot = false);
}  // namespace lutkit_bench
