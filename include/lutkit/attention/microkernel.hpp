// lutkit — the attention family's micro-kernel interface: the element types of a KV cache, the
// exp policies, the argument block of one online-softmax step (a group of query rows sharing one
// KV head against a range of keys) and of the packed bf16 prefill tile, and the function-pointer
// set a target provides (registered in attention/targets.hpp).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cmath>
#include <limits>
#include <vector>

#include "../core/bf16.hpp"
#include "../core/half.hpp"

namespace lutkit {

// element type of the K and V caches
enum class kv_type { f16, bf16, f32 };
// which keys a query sees (docs/attention.md, "Masks"): causal: key positions <= the query's;
// window: causal and the last `window` positions only (p - window < k <= p); none: every key.
enum class mask_kind { causal, window, none };
// exp of the online softmax (its arguments are always <= 0): a polynomial (a few ulp) or the
// 32768-entry table of fp16 inputs ([TTS-NPU] §5.2.1, docs/references.md; error in docs/attention.md, "exp").
enum class exp_kind { poly, table };
// the arithmetic of the prefill tile (and of the batched decode's shared prefix, which runs it):
// fp32: q, K, V and the softmax weights P in fp32, FMA dots (the default; the error of a plain
// fp32 online softmax); bf16: q, K, V and P rounded to bf16, vdpbf16ps dots with fp32
// accumulation (an opt-in, faster where the CPU has AVX-512 BF16; errors in docs/attention.md)
enum class attention_precision { fp32, bf16 };

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

// element i of a K/V row of type t, as fp32 (exact)
inline float kv_load(const void* base, kv_type t, std::ptrdiff_t i) {
  switch (t) {
    case kv_type::f16: return f16_to_f32(static_cast<const uint16_t*>(base)[i]);
    case kv_type::bf16: return bf16_to_f32(static_cast<const uint16_t*>(base)[i]);
    default: return static_cast<const float*>(base)[i];
  }
}

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

// Packed panels of one KV head for the prefill tile (written by pack, bf16, or pack_f32):
//   bf16 K: per block of 16 keys, d/2 steps of 16 x (2 bf16) words: word (step s, key j) holds
//      K[16 b + j][2 s .. 2 s + 1]   (the vdpbf16ps operand of 16 keys)
//   bf16 V: per pair of keys t, d x (2 bf16): V[2 t][c], V[2 t + 1][c] at 2 c, 2 c + 1
//   fp32 K: per block of 16 keys, d x 16 floats: K[16 b + j][c] at c * 16 + j
//   fp32 V: d floats per key, in key order
// All zero-padded to a multiple of the chunk length. vbad (optional): one byte per block of 16
// keys, 1 where the block's V holds a non-finite value (the tile then adds V row by row, so that
// it reaches only the rows that see that key).
struct att_pack_args {
  const void* k = nullptr;
  const void* v = nullptr;
  kv_type type = kv_type::f16;
  std::ptrdiff_t row_stride = 0;
  std::size_t k0 = 0, k1 = 0, n_kv = 0;  // pack keys [k0, k1) (keys >= n_kv: zeros); k0 % 16 == 0
  std::size_t d = 0;
  uint16_t* kp = nullptr;  // bf16 panel base (key k0)
  uint16_t* vp = nullptr;
  float* kpf = nullptr;  // fp32 panel base (key k0)
  float* vpf = nullptr;
  uint8_t* vbad = nullptr;  // block (k0 .. k0 + 15) at vbad[0]
};

// One prefill tile: R rows (queries already scaled: fp32 in rows.q; for the bf16 tile also as
// bf16 pairs in qb, row r at qb + r * d) against packed keys [k0, k1) (k0, k1 multiples of chunk).
struct att_tile_args : att_logit_args {
  att_rows rows;
  const uint16_t* qb = nullptr;
  const uint16_t* kp = nullptr;  // bf16 panels
  const uint16_t* vp = nullptr;
  const float* kpf = nullptr;  // fp32 panels
  const float* vpf = nullptr;
  const uint8_t* vbad = nullptr;  // per block of 16 keys from kbase (optional)
  int64_t pos0 = 0;
  std::size_t n_kv = 0, mask_base = 0;
  std::size_t kbase = 0;  // key index of the panels' first key (a multiple of chunk)
  std::size_t k0 = 0, k1 = 0, chunk = 64;
  kv_type type = kv_type::f16;  // the KV cache's element type (the packed panels' source)
  float* scratch = nullptr;     // >= R * chunk * 2 floats
};

// Does chunk [k0, k0 + n) of a tile hold a key whose V is non-finite?
inline bool att_chunk_vbad(const att_tile_args& a, std::size_t k0, std::size_t n) {
  if (!a.vbad) return false;
  for (std::size_t b = (k0 - a.kbase) / 16; b < (k0 - a.kbase + n + 15) / 16; ++b)
    if (a.vbad[b]) return true;
  return false;
}

// A chunk whose V holds a non-finite value: the fast value stages add p v for every key of the
// chunk, and 0 x NaN would reach rows that never see that key. So they run on a copy of the
// chunk's V with those elements set to 0 (every row that does not reach them keeps the bits of a
// clean run), and then each row that reaches key j (visible, and not masked by -inf) adds
// p(r, j) v to channel c: NaN, or +-inf.
struct att_bad_v {
  std::size_t j, c;  // key (from the chunk's first), channel
  float v;
};
template <class PF>
inline void att_add_nonfinite(const att_logit_args& lg, const att_rows& rows, std::size_t d, int64_t pos0,
                              std::size_t n_kv, std::size_t mask_base, std::size_t k0, const std::vector<att_bad_v>& bad,
                              PF p) {
  for (std::size_t r = 0; r < rows.R; ++r) {
    int64_t lo, hi;
    visible_keys(lg.mask, lg.window, rows.pos[r], pos0, n_kv, lo, hi);
    const float* mrow = rows.mask ? rows.mask[r] : nullptr;
    for (const att_bad_v& b : bad) {
      const int64_t key = int64_t(k0 + b.j);
      if (key < lo || key >= hi) continue;
      if (mrow && mrow[mask_base + std::size_t(key)] == -std::numeric_limits<float>::infinity()) continue;
      float& o = rows.acc[r * d + b.c];
      o = std::fma(p(r, b.j), b.v, o);
    }
  }
}

// A target's kernels. step: the fp32 online-softmax step (decode; any d it accepts); pack / tile:
// the packed bf16 prefill, pack_f32 / tile_f32 the packed fp32 one (null: the driver runs step
// over chunks).
struct att_kernel_set {
  const char* name;
  bool (*step_supports)(std::size_t d);
  void (*step)(const att_step_args&);
  bool (*tile_supports)(std::size_t d);  // null: no packed prefill
  void (*pack)(const att_pack_args&);
  void (*tile)(const att_tile_args&);
  void (*pack_f32)(const att_pack_args&) = nullptr;
  void (*tile_f32)(const att_tile_args&) = nullptr;
};

}  // namespace detail
}  // namespace lutkit
