// lutkit — target tags and their constexpr descriptors: what the tiling spec and the drivers read
// of a target (its on-chip memory sizes, rows per tile, lookup order).
#pragma once
#include <cstddef>
#include <cstdint>

namespace lutkit {

// How a target's table-lookup instruction orders its results, which fixes where the tiling spec puts
// a row's index inside a chunk: `pshufb` (x86 / NEON byte lookups, pmaddubs plane pairing) or
// `vlut16` (Hexagon: byte 2i's result lands in lane i of the low output vector, byte 2i+1's in lane
// i of the high one, so row r sits in byte 2 (r mod 64) + r / 64) or `sve` (SVE / streaming-SVE
// TBL: lane i of the result is byte i of the index vector, so row r sits in byte r and any
// vector-length slice of a chunk holds whole rows) or `mmul` (AMD AIE: no register lookup feeds the
// matrix unit, whose int8 x int4 `mmul` reads its B operand as whole 4-bit codes, 8 k x 8 rows per
// 32-byte atom, element (k, n) at nibble 8 k + n: every non-ternary format is stored as whole codes
// in those atoms, tiling_spec.hpp).
enum class lookup_order : int { pshufb = 0, vlut16 = 1, sve = 2, mmul = 3 };

struct target_descriptor {
  const char* name;
  std::size_t onchip_bytes = 0;  // per-core on-chip memory a kernel's working set targets (L2, VTCM, AIE data memory)
  std::size_t l1_bytes = 0;      // per-core L1 data cache vector loads hit (0: vector loads bypass L1)
  // ---- what the tiling spec takes from the target: rows per tile (= bytes per chunk) and order
  int tile_rows = 64;
  lookup_order order = lookup_order::pshufb;
};

namespace target {
// The host CPU: Highway with dynamic dispatch (x86 SSE4/AVX2/AVX-512, Arm NEON/SVE) plus lutkit's
// own x86 kernel sets (targets/host/), or the xsimd backend. The packed layout is defined on a
// 64-byte register tile so that every vector width reads the same blob (narrower vectors process
// a register tile in 2 or 4 pieces).
struct host {
  static constexpr target_descriptor desc{"host", std::size_t(1) << 20, std::size_t(48) << 10};
};
// Qualcomm Hexagon HVX: 128-byte vectors whose loads bypass the L1D, vlut16 lookups, 8 MiB VTCM
// ([T-MAN] §2, docs/references.md). Its packed layout: 128-row tiles, 128-byte chunks in vlut16
// order (docs/tiling.md).
struct hvx {
  static constexpr target_descriptor desc{"hvx", std::size_t(8) << 20, 0, 128, lookup_order::vlut16};
};
// Arm SME: streaming SVE and ZA tiles. Its packed layout: 64-row tiles, 64-byte chunks in sve
// order (docs/tiling.md): a streaming vector of any length from 128 bits reads whole rows of a chunk.
struct sme {
  static constexpr target_descriptor desc{"sme", std::size_t(2) << 20, std::size_t(64) << 10, 64, lookup_order::sve};
};
// AMD AIE-ML compute tile (XDNA): 64 KiB data memory per tile ([Gemma3-XDNA] §3), no data cache
// (vector loads read the data memory directly). Its packed layout: 64-row tiles of whole codes in
// the mmul order (docs/targets/aie.md): one blob serves the int8 x int4 mmul GEMV, the
// parallel_lookup LUT-GEMV and the INT4 -> bf16 dequant-GEMM of targets/aie/.
struct aie {
  static constexpr target_descriptor desc{"aie", std::size_t(64) << 10, 0, 64, lookup_order::mmul};
};
}  // namespace target

}  // namespace lutkit
