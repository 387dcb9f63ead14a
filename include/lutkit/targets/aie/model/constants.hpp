// lutkit — every constant of the AIE cycle and array models, in one table with its source and
// whether it was fitted (docs/targets/aie.md, "Constants"). The profiles' widths and latencies
// (aie.hpp) are listed here too, so this table is the model's whole parameter set.
#pragma once
#include <cstddef>

namespace lutkit::aie::model {

struct constant {
  const char* name;
  double value;
  const char* unit;
  const char* source;
  bool fitted;
};

// DRAM read bandwidth the NPU sees: fitted on one published point (the 512 x 512 x 512 megatile
// GEMM, 13.7 TOPS, by Eq. 5 traffic); the Gemma 3 paper states "capped below 40 GB/s", so the
// fitted value is itself the first inconsistency docs/targets/aie.md reports.
inline constexpr double dram_read_gbs_fitted = 53.5;
inline constexpr double dram_read_gbs_stated = 40.0;
// The per-layer dispatch overhead of a decode step (the NPU kernels of one layer launched and
// synchronized by the host: RMSNorm, QKV, RoPE, attention, O, norm, gate / up, GeLU x MUL, down):
// fitted on Gemma3-1B decode at 1k context (34.3 tok/s, Table 3).
inline constexpr double layer_overhead_ms_fitted = 0.599;
// Prefill's two mechanisms the decode mapping lacks (docs/targets/aie.md, "The array model"), fitted
// together on Gemma3-1B prefill at 1k (1.02 s) and 32k (21 s) (Table 1): the fixed cost per layer
// (the array reconfigured between the whole-array prefill kernels) and the cost of one nonlinear
// element on its one tile (RoPE, RMSNorm, GeLU x MUL; Sec. 3.2.3's one-tile mapping).
inline constexpr double prefill_layer_fixed_ms_fitted = 15.13;
inline constexpr double prefill_nonlinear_cycles_per_elem_fitted = 2.221;
// the floor of that per-element cost: one bf16 element on a 32-bit tile stream channel
inline constexpr double nonlinear_stream_cycles_per_elem = 0.5;

inline constexpr constant constants[] = {
    {"aie2 clock", 1.6, "GHz", "amd/xdna-driver npu1_regs.c power table (FACTS.md; uncertain, 1.0 elsewhere)", false},
    {"aie2p clock", 1.8, "GHz", "amd/xdna-driver npu4_regs.c; Gemma 3 paper Sec. 2.1.1 (FACTS.md)", false},
    {"load ports", 2, "per cycle", "AIE2Slots.td, AM020 (FACTS.md)", false},
    {"load / store width aie2", 256, "bit", "AM020 (FACTS.md)", false},
    {"load / store width aie2p", 512, "bit", "scalable-analyses/xdna isa.rst (FACTS.md)", false},
    {"data memory", 64, "KiB, 8 banks", "AM020, UG1603 (FACTS.md)", false},
    {"bank conflict group aie2p", 2, "banks", "isa.rst: 8 x 8 KiB banks paired into 4 x 16 KiB (FACTS.md)", false},
    {"vector load latency", 7, "cycles", "AIE2Schedule.td (FACTS.md)", false},
    {"integer VMAC latency", 5, "cycles", "AIE2Schedule.td (FACTS.md)", false},
    {"float VMAC latency", 6, "cycles", "AIE2Schedule.td; xdna1_kernel.rst (FACTS.md)", false},
    {"VMAC accumulator read stage", 3, "cycle", "xdna1_kernel.rst: VMAC.F reads its accumulator in its third cycle", false},
    {"SRS / UPS / shuffle / unpack latency", 4, "cycles (3 / 2 / 7)", "AIE2Schedule.td (FACTS.md)", false},
    {"branch latency", 6, "cycles", "AIE2Schedule.td (FACTS.md)", false},
    {"parallel_lookup reads", 4, "per instruction (both load ports)", "UG1603 Lookup Tables; AIE2Schedule.td II_VLDB_4X", false},
    {"fp32 multiply", 3, "vector issues (bf16 emulation)", "UG1603 Floating-Point Operations ('fast' accuracy)", false},
    {"fp32 reciprocal", 4, "vector issues", "model assumption (aie::inv is emulated)", false},
    {"fp16 -> fp32 of a scale vector", 4, "vector issues", "model assumption (AIE-ML has no fp16 unit)", false},
    {"tile DMA S2MM", 4, "B / cycle per channel, 2 channels", "32-bit stream (AM020, FACTS.md)", false},
    {"shim DMA", 4, "B / cycle per channel, 2 channels per column", "FACTS.md (AM020)", false},
    {"memory tile", 512, "KiB, 6 + 6 DMA channels", "FACTS.md", false},
    {"array aie2", 16, "compute tiles (4 columns x 4)", "mlir-aie issues 1964, 2371 (FACTS.md)", false},
    {"array aie2p", 32, "compute tiles (8 columns x 4)", "mlir-aie NPU2 target model (FACTS.md)", false},
    {"DRAM read, stated", dram_read_gbs_stated, "GB/s", "Gemma 3 paper Sec. 5 ('capped below 40 GB/s')", false},
    {"DRAM read, effective", dram_read_gbs_fitted, "GB/s", "FITTED: 2048^3 GEMM, megatile 512x512x512, 13.7 TOPS (Eq. 5)", true},
    {"decode layer dispatch", layer_overhead_ms_fitted, "ms per layer", "FITTED: Gemma3-1B decode at 1k, 34.3 tok/s (Table 3)", true},
    {"FlowKV read requirement", 60, "GB/s at 1.8 GHz (more than)", "Gemma 3 paper Sec. 5: FlowKV's K / V reads use every column's shim DMA, not two columns' 28.8 GB/s", false},
    {"dequantization engine traffic", 2.625, "B per weight (Q4NX read + bf16 written to DDR)", "Gemma 3 paper Sec. 3.1.1", false},
    {"nonlinear tile stream floor", nonlinear_stream_cycles_per_elem, "cycles per bf16 element", "32-bit stream channel (AM020, FACTS.md)", false},
    {"prefill layer fixed cost", prefill_layer_fixed_ms_fitted, "ms per layer", "FITTED (with the next): Gemma3-1B prefill at 1k and 32k (Table 1)", true},
    {"prefill nonlinear element", prefill_nonlinear_cycles_per_elem_fitted, "cycles per element on one tile", "FITTED (with the previous): Gemma3-1B prefill at 1k and 32k (Table 1)", true},
    {"Q4NX bytes per weight", 0.625, "B", "Gemma 3 paper Sec. 3.1.1: 5120 B per 32 x 256 block", false},
};
inline constexpr std::size_t constant_count = sizeof(constants) / sizeof(constants[0]);

}  // namespace lutkit::aie::model
