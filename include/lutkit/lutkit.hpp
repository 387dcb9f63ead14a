// lutkit — umbrella header: the core (policies, tiling spec, thread pool), quantization and
// packing, and the kernel families on the host target with run-time dispatch: LUT-GEMV, the
// LUT dequant-GEMM (prefill), decode (decode_gemv over both, FusedDQP), attention (prefill and
// decode), sampling (autoregressive and diffusion-LLM), their references; GGUF model files (io/:
// reader, writer, llama.cpp block dequantizers). The xsimd backend is opt-in:
// lutkit/targets/xsimd/lut_gemv_xsimd.hpp; so is the planner (host calibration, timing loops):
// lutkit/plan/calibrate_decode.hpp with calibrate.hpp and chooser.hpp (docs/plan.md).
#pragma once
#include "lutkit/core/concepts.hpp"
#include "lutkit/core/error.hpp"
#include "lutkit/core/half.hpp"
#include "lutkit/core/policy.hpp"
#include "lutkit/core/target.hpp"
#include "lutkit/core/thread_pool.hpp"
#include "lutkit/core/tiling.hpp"
#include "lutkit/quant/packed_weights.hpp"
#include "lutkit/packing/pack.hpp"
#include "lutkit/quant/kquant.hpp"
#include "lutkit/quant/q4nx.hpp"
#include "lutkit/quant/q4_0_supergroup.hpp"
#include "lutkit/quant/quant.hpp"
#include "lutkit/quant/reference.hpp"
#include "lutkit/quant/tile_group.hpp"
#include "lutkit/gemv/lut_gemv.hpp"
#include "lutkit/gemv/reference.hpp"
#include "lutkit/gemv/tables.hpp"
#include "lutkit/gemm/dequant.hpp"
#include "lutkit/gemm/dequant_gemm.hpp"
#include "lutkit/gemm/reference.hpp"
#include "lutkit/gemm/tile_group_gemm.hpp"
#include "lutkit/decode/decode_gemv.hpp"
#include "lutkit/decode/tile_group_gemv.hpp"
#include "lutkit/attention/attention.hpp"
#include "lutkit/attention/reference.hpp"
#include "lutkit/sampling/autoregressive.hpp"
#include "lutkit/sampling/dllm.hpp"
#include "lutkit/sampling/logits.hpp"
#include "lutkit/sampling/reference.hpp"
#include "lutkit/io/ggml_blocks.hpp"
#include "lutkit/io/gguf.hpp"
#include "lutkit/io/gguf_writer.hpp"
