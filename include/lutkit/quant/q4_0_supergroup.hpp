// lutkit — llama.cpp Q4_0 blocks -> the Q4_0 super-group layout the HVX dequantizer reads
// (tiling_spec.hpp: q4_0_supergroup; [TTS-NPU] §5.1.2 in docs/references.md). Scales are copied bit for bit; the
// dequantized weights are those of import_q4_0 (w = d * (q - 8)).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../core/error.hpp"
#include "../core/limits.hpp"
#include "../core/tiling_spec.hpp"
#include "quant.hpp"

namespace lutkit {

inline std::vector<uint8_t> pack_q4_0_supergroups(const void* blocks, std::size_t M, std::size_t K,
                                                  std::size_t nbytes = unknown_size) {
  using SG = q4_0_supergroup;
  detail::require(blocks != nullptr, "pack_q4_0_supergroups: null block pointer");
  detail::check_matrix_shape(M, K, "pack_q4_0_supergroups");
  detail::require(K % SG::group_k == 0, "pack_q4_0_supergroups: K (", K, ") is not a multiple of 32");
  const std::size_t need = M * (K / SG::group_k) * 18;
  detail::require(nbytes == unknown_size || nbytes >= need, "pack_q4_0_supergroups: ", nbytes,
                  " bytes of blocks, the ", M, " x ", K, " shape needs ", need);
  std::vector<uint8_t> out(M * SG::row_bytes(K), 0);
  const auto* src = static_cast<const unsigned char*>(blocks);
  uint8_t codes[32];
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t g = 0; g < K / SG::group_k; ++g) {
      const unsigned char* b = src + (m * (K / SG::group_k) + g) * 18;
      const std::size_t k0 = g * SG::group_k;
      uint8_t* rec = out.data() + SG::record_offset(K, m, k0);
      const int gi = int((k0 % SG::weights) / SG::group_k);
      uint16_t d;
      std::memcpy(&d, b, 2);
      detail::require((d & 0x7C00u) != 0x7C00u, "pack_q4_0_supergroups: the scale of row ", m, ", block ", g,
                      " is not finite");
      std::memcpy(rec + SG::scale_offset(gi), &d, 2);
      for (unsigned j0 = 0; j0 < 32; j0 += 8) {
        const uint64_t x = detail::ggml_q4_0::codes8(b + 2, j0);
        std::memcpy(codes + j0, &x, 8);
      }
      for (int j = 0; j < SG::group_k; ++j) {
        const int w = gi * SG::group_k + j;
        rec[SG::byte_of(w)] |= uint8_t(codes[j] << SG::shift_of(w));
      }
    }
  return out;
}

}  // namespace lutkit
