// lutkit — explicit instantiation of the kernel entry points for one policy, so that a program
// compiles each policy's kernels once. Every kernel is a template on its policy; a program that
// calls it from several translation units otherwise compiles it (all its targets' instances)
// in each of them. In a header every translation unit includes:
//     LUTKIT_EXTERN_LUT(MyPolicy)     // LUT-GEMV: build_tables, lut_gemv, lut_gemv_rows
//     LUTKIT_EXTERN_DQ(MyPolicy)      // dequant-GEMM, dequantize, FusedDQP, decode_gemv(_rows)
// and in ONE translation unit (split a long policy list over several, to build in parallel):
//     LUTKIT_INSTANTIATE_LUT(MyPolicy)
//     LUTKIT_INSTANTIATE_DQ(MyPolicy)
// The LUT-GEMV pair is for policies whose format the LUT-GEMV serves (lut_gemv_capable); the
// dequant pair is for any policy. The macros take the policy type as their argument(s), commas
// included, at namespace scope outside any namespace.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/thread_pool.hpp"
#include "decode/decode_gemv.hpp"
#include "decode/fused_dq.hpp"
#include "gemm/dequant_gemm.hpp"
#include "gemv/lut_gemv.hpp"

#define LUTKIT_LUT_ENTRY_POINTS_(EXT, ...)                                                                 \
  EXT template lutkit::lut_tables<__VA_ARGS__> lutkit::build_tables<__VA_ARGS__>(const float*, std::size_t, \
                                                                                 std::size_t, std::size_t); \
  EXT template void lutkit::lut_gemv<__VA_ARGS__>(const lutkit::packed_weights<__VA_ARGS__>&,               \
                                                  const lutkit::lut_tables<__VA_ARGS__>&, float*, std::size_t, \
                                                  lutkit::thread_pool*, std::int64_t);                     \
  EXT template void lutkit::lut_gemv_rows<__VA_ARGS__>(const lutkit::packed_weights<__VA_ARGS__>&,          \
                                                       const lutkit::lut_tables<__VA_ARGS__>&, float*,      \
                                                       std::size_t, std::size_t, std::size_t, std::int64_t);

#define LUTKIT_DQ_ENTRY_POINTS_(EXT, ...)                                                                     \
  EXT template void lutkit::dequant_gemm<__VA_ARGS__>(const lutkit::packed_weights<__VA_ARGS__>&, const float*, \
                                                      std::size_t, std::size_t, float*, lutkit::act_type,       \
                                                      std::size_t, std::size_t, lutkit::thread_pool*,           \
                                                      lutkit::dq_backend);                                      \
  EXT template void lutkit::dequant_gemm_rows<__VA_ARGS__>(const lutkit::packed_weights<__VA_ARGS__>&,          \
                                                           const float*, std::size_t, std::size_t, float*,      \
                                                           std::size_t, std::size_t, lutkit::act_type,          \
                                                           std::size_t, std::size_t, lutkit::dq_backend);       \
  EXT template void lutkit::dequantize<__VA_ARGS__>(const lutkit::packed_weights<__VA_ARGS__>&, void*,          \
                                                    lutkit::dq_type, std::size_t, lutkit::thread_pool*,         \
                                                    lutkit::dq_backend);                                        \
  EXT template void lutkit::fused_dq_gemv<__VA_ARGS__>(const lutkit::packed_weights<__VA_ARGS__>&, const float*, \
                                                       std::size_t, std::size_t, float*, std::size_t,           \
                                                       std::size_t, lutkit::thread_pool*, lutkit::dq_backend);  \
  EXT template void lutkit::fused_dq_gemv_rows<__VA_ARGS__>(const lutkit::packed_weights<__VA_ARGS__>&,         \
                                                            const float*, std::size_t, std::size_t, float*,     \
                                                            std::size_t, std::size_t, std::size_t, std::size_t, \
                                                            lutkit::dq_backend);                                \
  EXT template void lutkit::decode_gemv<__VA_ARGS__>(const lutkit::packed_weights<__VA_ARGS__>&, const float*,   \
                                                     std::size_t, std::size_t, float*, lutkit::decode_method,    \
                                                     std::size_t, std::size_t, lutkit::thread_pool*);     \
  EXT template void lutkit::decode_gemv_rows<__VA_ARGS__>(const lutkit::packed_weights<__VA_ARGS__>&,           \
                                                          const float*, std::size_t, std::size_t, float*,       \
                                                          std::size_t, std::size_t, lutkit::decode_method,      \
                                                          std::size_t, std::size_t);

#define LUTKIT_EXTERN_LUT(...) LUTKIT_LUT_ENTRY_POINTS_(extern, __VA_ARGS__)
#define LUTKIT_INSTANTIATE_LUT(...) LUTKIT_LUT_ENTRY_POINTS_(, __VA_ARGS__)
#define LUTKIT_EXTERN_DQ(...) LUTKIT_DQ_ENTRY_POINTS_(extern, __VA_ARGS__)
#define LUTKIT_INSTANTIATE_DQ(...) LUTKIT_DQ_ENTRY_POINTS_(, __VA_ARGS__)
