// lutkit — the attention family's micro-kernel interface: the element types of a KV cache, the
// exp policies, the argument block of one online-softmax step (a group of query rows sharing one
// KV head against a range of keys) and of the packed bf16 prefill tile, and the function-pointer
// set a target provides (registered in attention/targets.hpp).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace lutkit {

// element type of the K and V caches
enum class kv_type { f16, bf16, f32 };
// which keys a query sees (docs/attention.md, "Masks"): causal: key positions <= the query's;
// window: causal and the last `window` positions only (p - window < k <= p); none: every key.
enum class mask_kind { causal, window, none };
// exp of the online softmax (its arguments are always <= 0): a polynomial (a few ulp) or the
// 32768-entry table of fp16 inputs ([TTS-NPU] §5.2.1, docs/references.md; error in docs/attention.md, "exp").
enum class exp_kind { poly, table };

inline std::size_t kv_type_bytes(kv_type t) { return t == kv_type::f32 ? 4 : 2; }

namespace detail {

// The state of R query rows that share one KV head: their scaled queries (fp32, row r at
// q + r * d), their positions, their additive mask rows (indexed by key index, may be null) and
// their online-softmax state: running max m (-inf: nothing seen), running sum l, unnormalized
// output acc (row r at acc + r * d).
struct att_rows {
  std::size_t R = 0;
  const float* q = nullptr;
  const int64_t* pos = nullptr;
  const float* const* mask = nullptr;  // null, or R row pointers (each may be null)
  float* m = nullptr;
  float* l = nullptr;
  float* acc = nullptr;
};

// How a key's logit becomes its weight, the same for every kernel of one call: head dim, softcap,
// mask kind and window, exp policy (the driver fills it once from attention_options).
struct att_logit_args {
  std::size_t d = 0;
  float softcap = 0.f;  // 0: none
  mask_kind mask = mask_kind::causal;
  int64_t window = 0;
  exp_kind exp = exp_kind::poly;
  const float* exp_table = nullptr;  // 32768 entries, exp of -|fp16 code| (attention/exp.hpp)
};

// One online-softmax step of rows against keys [k0, k1) of a KV source whose key i is at
// position pos0 + i. Element (i, c) of K is at k + i * row_stride + c (V likewise).
struct att_step_args : att_logit_args {
  att_rows rows;
  const void* k = nullptr;
  const void* v = nullptr;
  kv_type type = kv_type::f16;
  std::ptrdiff_t row_stride = 0;
  int64_t pos0 = 0;
  std::size_t n_kv = 0;  // keys of the source (mask rows are indexed by mask_base + key index)
  std::size_t mask_base = 0;
  std::size_t k0 = 0, k1 = 0;
  float* scratch = nullptr;  // >= (R + 2) * (k1 - k0 rounded up to 16) floats
};

// The visible key interval [lo, hi) (key indices of the source) of a query at position p, or an
// empty interval. Integer arithmetic only.
inline void visible_keys(mask_kind mk, int64_t window, int64_t p, int64_t pos0, std::size_t n_kv, int64_t& lo,
                         int64_t& hi) {
  lo = 0;
  hi = int64_t(n_kv);
  if (mk != mask_kind::none) {
    hi = std::min<int64_t>(hi, p - pos0 + 1);
    if (mk == mask_kind::window) lo = std::max<int64_t>(lo, p - window + 1 - pos0);
  }
  if (hi < lo) hi = lo;
}

// Packed bf16 panels of one KV head for the prefill tile (written by pack_kv):
//   K: per block of 16 keys, d/2 steps of 16 x (2 bf16) words: word (step s, key j) holds
//      K[16 b + j][2 s .. 2 s + 1]   (the vdpbf16ps operand of 16 keys)
//   V: per pair of keys t, d x (2 bf16): V[2 t][c], V[2 t + 1][c] at 2 c, 2 c + 1
// Both zero-padded to a multiple of the chunk length.
struct att_pack_args {
  const void* k = nullptr;
  const void* v = nullptr;
  kv_type type = kv_type::f16;
  std::ptrdiff_t row_stride = 0;
  std::size_t k0 = 0, k1 = 0, n_kv = 0;  // pack keys [k0, k1) (keys >= n_kv: zeros); k0 % 16 == 0
  std::size_t d = 0;
  uint16_t* kp = nullptr;  // panel base (key 0)
  uint16_t* vp = nullptr;
};

// One prefill tile: R rows (queries already scaled, as bf16 pairs in qb, row r at qb + r * d)
// against packed keys [k0, k1) (k0, k1 multiples of chunk).
struct att_tile_args : att_logit_args {
  att_rows rows;
  const uint16_t* qb = nullptr;
  const uint16_t* kp = nullptr;
  const uint16_t* vp = nullptr;
  int64_t pos0 = 0;
  std::size_t n_kv = 0, mask_base = 0;
  std::size_t kbase = 0;  // key index of the panels' first key (a multiple of chunk)
  std::size_t k0 = 0, k1 = 0, chunk = 64;
  float* scratch = nullptr;  // >= R * chunk * 2 floats
};

// A target's kernels. step: the fp32 online-softmax step (decode; any d it accepts); pack / tile:
// the packed bf16 prefill (null: the driver runs step over chunks).
struct att_kernel_set {
  const char* name;
  bool (*step_supports)(std::size_t d);
  void (*step)(const att_step_args&);
  bool (*tile_supports)(std::size_t d);  // null: no packed prefill
  void (*pack)(const att_pack_args&);
  void (*tile)(const att_tile_args&);
};

}  // namespace detail
}  // namespace lutkit
