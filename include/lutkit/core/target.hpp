// lutkit — target tags and their constexpr descriptors. `portable` is measured on the host; the
// NPU descriptors carry the figures from the papers and feed the planner's model only.
#pragma once
#include <cstddef>
#include <cstdint>

namespace lutkit {

// How a target's table-lookup instruction orders its results, which fixes where the tiling spec puts
// a row's index inside a chunk: `pshufb` (x86 / NEON byte lookups, pmaddubs plane pairing) or
// `vlut16` (Hexagon: byte 2i's result lands in lane i of the low output vector, byte 2i+1's in lane
// i of the high one, so row r sits in byte 2 (r mod 64) + r / 64) or `sve` (SVE / streaming-SVE
// TBL: lane i of the result is byte i of the index vector, so row r sits in byte r and any
// vector-length slice of a chunk holds whole rows).
enum class lookup_order : int { pshufb = 0, vlut16 = 1, sve = 2 };

struct target_descriptor {
  const char* name;
  int vector_bytes;            // native vector width the tiling spec is laid out for
  int vector_registers;
  int lut_entries;             // table-lookup instruction: entries x entry bits, lookups/instr
  int lut_entry_bits;
  int lookups_per_instr;
  int mma_m, mma_n, mma_k;     // matrix-unit tile (0 if none)
  std::size_t onchip_bytes;    // VTCM / AIE data memory / L2 per core
  std::size_t onchip2_bytes;   // AIE memory tile / L3
  double dram_gbps;            // nominal DRAM bandwidth (model only; the host measures its own)
  double vector_gops;          // nominal peak int8 Gop/s (model only; 0: unknown)
  std::size_t l1_bytes;        // per-core L1 data cache vector loads hit (0: vector loads bypass L1)
  // ---- what the tiling spec takes from the target: rows per tile (= bytes per chunk) and order
  int tile_rows = 64;
  lookup_order order = lookup_order::pshufb;
};

namespace target {
// Portable: Highway with dynamic dispatch (x86 SSE4/AVX2/AVX-512, Arm NEON/SVE, RVV) or the
// xsimd backend. The packed layout is defined on a 64-byte register tile so that every vector
// width reads the same blob (narrower targets process a register tile in 2 or 4 pieces).
struct host {
  static constexpr target_descriptor desc{"host", 64, 32, 16, 8, 64, 0, 0, 0,
                                          std::size_t(1) << 20, std::size_t(32) << 20, 46.0, 0.0,
                                          std::size_t(48) << 10};
};
// Qualcomm Hexagon HVX (v73-class): 128-byte vectors (HVX loads bypass the L1D), vlut16
// (16 entries x 16 bit,
// 64 lookups/instr), HMX 32x32 fp16 tiles, 8 MiB VTCM ([T-MAN] §2, [TTS-NPU] §5; docs/references.md); DDR -> TCM
// by DMA 59 GB/s (T-MAN Table 2); 45 TOPS NPU peak (T-MAN §1).
// Its packed layout: 128-row tiles, 128-byte chunks in vlut16 order (docs/tiling.md).
struct hvx {
  static constexpr target_descriptor desc{"hvx", 128, 32, 16, 16, 64, 32, 32, 32,
                                          std::size_t(8) << 20, 0, 59.0, 45000.0, 0,
                                          128, lookup_order::vlut16};
};
// Arm SME: streaming SVE (SVL 512 assumed for the model) + ZA tiles; LUTI4 on SME2.
// (No paper gives its figures: the memory numbers are placeholders until measured.)
// Its packed layout: 64-row tiles, 64-byte chunks in sve order (docs/tiling.md): a streaming vector
// of any length from 128 bits reads whole rows of a chunk.
struct sme {
  static constexpr target_descriptor desc{"sme", 64, 32, 16, 8, 64, 16, 16, 1,
                                          std::size_t(2) << 20, 0, 100.0, 0.0,
                                          std::size_t(64) << 10, 64, lookup_order::sve};
};
// AMD AIE-ML compute tile (XDNA): 64 KiB data memory, 512 KiB memory tile, bf16 MAC 4x8x4;
// sustained DRAM read capped below 40 GB/s (Gemma3-on-XDNA §3, §5).
struct aie {
  static constexpr target_descriptor desc{"aie", 64, 16, 0, 0, 0, 4, 8, 4,
                                          std::size_t(64) << 10, std::size_t(512) << 10, 40.0, 0.0,
                                          std::size_t(64) << 10};
};
}  // namespace target

}  // namespace lutkit
