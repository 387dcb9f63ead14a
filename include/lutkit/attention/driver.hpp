// lutkit — the attention driver: chunk sizes from the target descriptor, the prefill sweep
// (query blocks x KV chunks over packed bf16 panels, blocks outside the mask skipped) and the
// split-KV decode (flash-decoding: key splits in parallel, partial (max, sum, output) merged by
// log-sum-exp in a fixed order). Arguments are checked by attention/attention.hpp.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "../core/bf16.hpp"
#include "../core/memory.hpp"
#include "../core/target.hpp"
#include "../core/thread_pool.hpp"
#include "exp.hpp"
#include "microkernel.hpp"
#include "targets.hpp"

namespace lutkit {

// A KV cache of one layer as an engine holds it: element (position i, head h, channel c) of K at
// k[i * row_stride + h * head_stride + c] (V likewise, same strides), in elements of `type`.
// Head-major ([head][position][d]: row_stride = d, head_stride = capacity * d) and token-major
// ([position][head][d]: row_stride = heads * d, head_stride = d) caches are both views.
struct kv_cache_view {
  const void* k = nullptr;
  const void* v = nullptr;
  kv_type type = kv_type::f16;
  std::size_t len = 0;  // positions 0 .. len - 1
  std::ptrdiff_t row_stride = 0;
  std::ptrdiff_t head_stride = 0;
};

struct attention_options {
  std::size_t heads_q = 0, heads_kv = 0, head_dim = 0;
  float scale = 0.f;    // softmax scale (logit = scale * q.k), given by the caller
  float softcap = 0.f;  // 0: none; else logit = softcap * tanh(logit / softcap)
  mask_kind mask = mask_kind::causal;
  std::size_t window = 0;  // mask_kind::window: a query at p sees keys p - window < k <= p
  exp_kind exp = exp_kind::poly;
  attention_backend backend = attention_backend::best;
  // the prefill tile's arithmetic (attention/microkernel.hpp); bf16 runs as fp32 on kernel sets
  // without a bf16 tile (AVX2, portable)
  attention_precision precision = attention_precision::fp32;
};

namespace detail {

enum class att_slot { rows, scratch, panels, decode_rows, partials, decode_qb, tile_scratch, count };

// Which packed tile a call runs: the bf16 one if asked for and the set has it, else the fp32 one
// if the set has it; none: the step over chunks.
enum class att_tile_kind { none, bf16, fp32 };
inline att_tile_kind tile_kind(const att_kernel_set& ks, const attention_options& o) {
  if (!ks.tile_supports || !ks.tile_supports(o.head_dim)) return att_tile_kind::none;
  if (o.precision == attention_precision::bf16 && ks.pack && ks.tile) return att_tile_kind::bf16;
  return ks.pack_f32 && ks.tile_f32 ? att_tile_kind::fp32 : att_tile_kind::none;
}
// bytes of one KV head's packed K and V panels of `keys` keys (its V flags, one byte per 16 keys,
// are placed after every head's panels)
inline std::size_t panel_bytes(att_tile_kind t, std::size_t keys, std::size_t d) {
  return keys * d * 2 * (t == att_tile_kind::fp32 ? 4 : 2);
}

// Chunk lengths from the target's L1 (docs/attention.md, "Chunk sizes"):
//   decode: the chunk's K and V rows (K read by the score stage, V once per 64 output channels
//           and row group) together in half of L1: L1 / 4 / (d * element bytes), a multiple of
//           16 in [16, 256];
//   prefill: the bf16 K and V chunks of the tile (2 * 2 * d bytes per key) in half of L1, a
//           multiple of 64 in [64, 128].
inline std::size_t decode_chunk(std::size_t d, kv_type t, const target_descriptor& td = target::host::desc) {
  const std::size_t l1 = td.l1_bytes ? td.l1_bytes : (std::size_t(32) << 10);
  std::size_t c = (l1 / 4) / (d * kv_type_bytes(t));
  c = c / 16 * 16;
  return std::clamp<std::size_t>(c, 16, 256);
}
inline std::size_t prefill_chunk(std::size_t d, const target_descriptor& td = target::host::desc) {
  const std::size_t l1 = td.l1_bytes ? td.l1_bytes : (std::size_t(32) << 10);
  std::size_t c = (l1 / 2) / (4 * d);
  c = c / 64 * 64;
  return std::clamp<std::size_t>(c, 64, 128);
}

// the logit-to-weight part of every kernel's arguments (microkernel.hpp, att_logit_args)
inline att_logit_args logit_args(const attention_options& o) {
  att_logit_args a;
  a.d = o.head_dim;
  a.softcap = o.softcap;
  a.mask = o.mask;
  a.window = int64_t(o.window);
  a.exp = o.exp;
  a.exp_table = o.exp == exp_kind::table ? exp_table() : nullptr;
  return a;
}

template <class F>
inline void att_parallel(thread_pool* pool, std::size_t tasks, const F& fn) {
  if (pool && pool->size() > 1 && tasks > 1) {
    pool->run(tasks, [&](std::size_t i) { fn(i); });
  } else {
    for (std::size_t i = 0; i < tasks; ++i) fn(i);
  }
}

// out = acc / l, lse = m + log l (0 and -inf for a row that saw no key; NaN for a row that
// reached a non-finite value)
inline void att_finish(std::size_t d, float m, float l, const float* acc, float* out, float* lse) {
  if (l != l) {
    std::fill(out, out + d, std::numeric_limits<float>::quiet_NaN());
    if (lse) *lse = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  if (!(l > 0.f)) {
    std::fill(out, out + d, 0.f);
    if (lse) *lse = -std::numeric_limits<float>::infinity();
    return;
  }
  const float inv = 1.f / l;
  for (std::size_t c = 0; c < d; ++c) out[c] = acc[c] * inv;
  if (lse) *lse = m + std::log(l);
}

// ---------------------------------------------------------------------------------- prefill
// q: [n_q][heads_q][d] fp32; out likewise; lse [n_q][heads_q]; mask [n_q][mask_stride] by key.
inline void run_prefill(const attention_options& o, const float* q, std::size_t n_q, int64_t q_pos0,
                        const kv_cache_view& kv, float* out, float* lse, const float* add_mask,
                        std::size_t mask_stride, thread_pool* pool) {
  const att_kernel_set& ks = att_kernels_for(o.backend);
  const std::size_t d = o.head_dim, hq = o.heads_q, hkv = o.heads_kv, G = hq / hkv;
  const att_tile_kind tk = kv.len > 0 ? tile_kind(ks, o) : att_tile_kind::none;
  const bool packed = tk != att_tile_kind::none;
  const bool use_step = ks.step_supports(d);
  const att_kernel_set& sk = use_step ? ks : portable_att_kernels();
  const std::size_t Bq = std::max<std::size_t>(1, 64 / G);  // queries per block: ~64 rows
  const std::size_t nblk = (n_q + Bq - 1) / Bq;
  const att_logit_args lg = logit_args(o);
  const int64_t win = lg.window;

  // keys any query sees: [klo, khi)
  int64_t klo, khi, t0, t1;
  visible_keys(o.mask, win, q_pos0, 0, kv.len, klo, t0);
  visible_keys(o.mask, win, q_pos0 + int64_t(n_q) - 1, 0, kv.len, t1, khi);
  (void)t0;
  (void)t1;
  const std::size_t chunk = packed ? prefill_chunk(d) : decode_chunk(d, kv.type);
  const std::size_t kbase = khi > klo ? std::size_t(klo) / chunk * chunk : 0;
  const std::size_t kend = khi > klo ? (std::size_t(khi) + chunk - 1) / chunk * chunk : 0;
  const std::size_t plen = kend - kbase;  // panel keys per head

  reusable_bytes<att_slot> panels;
  uint8_t* pan = nullptr;
  uint8_t* vbad = nullptr;  // per KV head: plen / 16 flags
  const std::size_t hbytes = panel_bytes(tk, plen, d);  // one head's K and V panels
  if (packed && plen > 0) {
    panels = reusable_bytes<att_slot>(att_slot::panels, hkv * (hbytes + plen / 16) + 64);
    pan = panels.get();
    vbad = pan + hkv * hbytes;
    const std::size_t per = 256;  // keys per packing task
    const std::size_t pt = (plen + per - 1) / per;
    att_parallel(pool, hkv * pt, [&](std::size_t t) {
      const std::size_t g = t / pt, k0 = kbase + (t % pt) * per, k1 = std::min(k0 + per, kend);
      att_pack_args pa;
      pa.type = kv.type;
      pa.k = static_cast<const uint8_t*>(kv.k) + std::ptrdiff_t(g) * kv.head_stride * std::ptrdiff_t(kv_type_bytes(kv.type));
      pa.v = static_cast<const uint8_t*>(kv.v) + std::ptrdiff_t(g) * kv.head_stride * std::ptrdiff_t(kv_type_bytes(kv.type));
      pa.row_stride = kv.row_stride;
      pa.k0 = k0;
      pa.k1 = k1;
      pa.n_kv = kv.len;
      pa.d = d;
      pa.vbad = vbad + g * (plen / 16) + (k0 - kbase) / 16;
      if (tk == att_tile_kind::bf16) {
        uint16_t* h = reinterpret_cast<uint16_t*>(pan + g * hbytes);
        pa.kp = h + (k0 - kbase) * d;
        pa.vp = h + plen * d + (k0 - kbase) * d;
        ks.pack(pa);
      } else {
        float* h = reinterpret_cast<float*>(pan + g * hbytes);
        pa.kpf = h + (k0 - kbase) * d;
        pa.vpf = h + plen * d + (k0 - kbase) * d;
        ks.pack_f32(pa);
      }
    });
  }

  att_parallel(pool, hkv * nblk, [&](std::size_t t) {
    const std::size_t g = t % hkv, blk = t / hkv;
    const std::size_t i0 = blk * Bq, nq = std::min(Bq, n_q - i0), R = nq * G;
    // per-row arrays: q (fp32), acc, bf16 q, m, l, pos, mask pointers
    const std::size_t bytes = R * d * 4 * 2 + R * d * 2 + R * 8 + R * 8 + R * 8 + 256;
    reusable_bytes<att_slot> rb(att_slot::rows, bytes);
    float* qs = reinterpret_cast<float*>(rb.get());
    float* acc = qs + R * d;
    uint16_t* qb = reinterpret_cast<uint16_t*>(acc + R * d);
    float* m = reinterpret_cast<float*>(qb + R * d + 32);
    m = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(m) + 63) & ~uintptr_t(63));
    float* l = m + R;
    int64_t* pos = reinterpret_cast<int64_t*>(l + R);  // m is 64-byte aligned: m + 2R floats is 8-byte aligned
    const float** mrows = reinterpret_cast<const float**>(pos + R);
    for (std::size_t i = 0; i < nq; ++i)
      for (std::size_t h = 0; h < G; ++h) {
        const std::size_t r = i * G + h;
        const float* src = q + ((i0 + i) * hq + g * G + h) * d;
        for (std::size_t c = 0; c < d; ++c) qs[r * d + c] = src[c] * o.scale;
        pos[r] = q_pos0 + int64_t(i0 + i);
        mrows[r] = add_mask ? add_mask + (i0 + i) * mask_stride : nullptr;
        m[r] = -std::numeric_limits<float>::infinity();
        l[r] = 0.f;
      }
    std::fill(acc, acc + R * d, 0.f);
    att_rows rows;
    rows.R = R;
    rows.q = qs;
    rows.pos = pos;
    rows.mask = add_mask ? mrows : nullptr;
    rows.m = m;
    rows.l = l;
    rows.acc = acc;
    // this block's keys: from the first query's window start to the last query's position
    int64_t lo, hi, x0, x1;
    visible_keys(o.mask, win, pos[0], 0, kv.len, lo, x0);
    visible_keys(o.mask, win, pos[R - 1], 0, kv.len, x1, hi);
    (void)x0;
    (void)x1;
    if (hi > lo) {
      if (packed) {
        reusable_bytes<att_slot> sc(att_slot::scratch, R * chunk * 2 * sizeof(float) + 64);
        att_tile_args ta;
        ta.rows = rows;
        if (tk == att_tile_kind::bf16) {
          for (std::size_t j = 0; j < R * d; ++j) qb[j] = f32_to_bf16(qs[j]);
          ta.qb = qb;
          ta.kp = reinterpret_cast<const uint16_t*>(pan + g * hbytes);
          ta.vp = ta.kp + plen * d;
        } else {
          ta.kpf = reinterpret_cast<const float*>(pan + g * hbytes);
          ta.vpf = ta.kpf + plen * d;
        }
        ta.vbad = vbad + g * (plen / 16);
        ta.pos0 = 0;
        ta.n_kv = kv.len;
        ta.kbase = kbase;
        ta.k0 = std::size_t(lo) / chunk * chunk;  // blocks wholly outside [lo, hi) are skipped
        ta.k1 = (std::size_t(hi) + chunk - 1) / chunk * chunk;
        ta.chunk = chunk;
        ta.type = kv.type;
        static_cast<att_logit_args&>(ta) = lg;
        ta.scratch = reinterpret_cast<float*>(sc.get());
        (tk == att_tile_kind::bf16 ? ks.tile : ks.tile_f32)(ta);
      } else {
        reusable_bytes<att_slot> sc(att_slot::scratch, (R + 2) * chunk * sizeof(float) + 64);
        att_step_args sa;
        sa.rows = rows;
        const std::ptrdiff_t hoff = std::ptrdiff_t(g) * kv.head_stride * std::ptrdiff_t(kv_type_bytes(kv.type));
        sa.k = static_cast<const uint8_t*>(kv.k) + hoff;
        sa.v = static_cast<const uint8_t*>(kv.v) + hoff;
        sa.type = kv.type;
        sa.row_stride = kv.row_stride;
        sa.pos0 = 0;
        sa.n_kv = kv.len;
        static_cast<att_logit_args&>(sa) = lg;
        sa.scratch = reinterpret_cast<float*>(sc.get());
        for (std::size_t k0 = std::size_t(lo) / chunk * chunk; k0 < std::size_t(hi); k0 += chunk) {
          sa.k0 = k0;
          sa.k1 = std::min(k0 + chunk, std::size_t(hi));
          sk.step(sa);
        }
      }
    }
    for (std::size_t i = 0; i < nq; ++i)
      for (std::size_t h = 0; h < G; ++h) {
        const std::size_t r = i * G + h, oi = (i0 + i) * hq + g * G + h;
        att_finish(d, m[r], l[r], acc + r * d, out + oi * d, lse ? lse + oi : nullptr);
      }
  });
}

// ---------------------------------------------------------------------------------- decode
}  // namespace detail

// One sequence of a batched decode step: its query (heads_q x d fp32), the K/V it does not share
// with the batch (its own tokens after the shared prefix, the one just appended included), its
// output (heads_q x d) and optional log-sum-exp (heads_q), and an optional additive mask over its
// keys (prefix keys first, then its own: prefix.len + own.len floats). The query's position is
// prefix.len + own.len - 1.
struct decode_sequence {
  const float* q = nullptr;
  kv_cache_view own;
  float* out = nullptr;
  float* lse = nullptr;
  const float* add_mask = nullptr;
};

namespace detail {

struct att_partial {  // per row: m, l, acc[d]
  float* base;
  std::size_t d;
  float& m(std::size_t r) { return base[r * (d + 2)]; }
  float& l(std::size_t r) { return base[r * (d + 2) + 1]; }
  float* acc(std::size_t r) { return base + r * (d + 2) + 2; }
};

// merge (m2, l2, a2) into (m1, l1, a1) by log-sum-exp; a side with m = -inf saw no key
inline void att_merge(std::size_t d, float& m1, float& l1, float* a1, float m2, float l2, const float* a2) {
  if (m2 == -std::numeric_limits<float>::infinity() || l1 != l1) return;
  if (l2 != l2) {  // the part reached a non-finite value: so does the row
    m1 = l1 = std::numeric_limits<float>::quiet_NaN();
    std::fill(a1, a1 + d, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  if (m1 == -std::numeric_limits<float>::infinity()) {
    m1 = m2;
    l1 = l2;
    std::copy(a2, a2 + d, a1);
    return;
  }
  const float M = std::max(m1, m2);
  const float f1 = float(std::exp(double(m1) - double(M))), f2 = float(std::exp(double(m2) - double(M)));
  for (std::size_t c = 0; c < d; ++c) a1[c] = a1[c] * f1 + a2[c] * f2;
  l1 = l1 * f1 + l2 * f2;
  m1 = M;
}

// the most splits of a decode's shared prefix (attention.hpp bounds the partials' scratch with it)
inline constexpr std::size_t max_decode_splits = 32;

inline void run_decode(const attention_options& o, const kv_cache_view& prefix, const decode_sequence* seqs,
                       std::size_t n_seq, thread_pool* pool) {
  const att_kernel_set& ks0 = att_kernels_for(o.backend);
  const std::size_t d = o.head_dim, hq = o.heads_q, hkv = o.heads_kv, G = hq / hkv;
  const att_kernel_set& ks = ks0.step_supports(d) ? ks0 : portable_att_kernels();
  const att_logit_args lg = logit_args(o);
  const std::size_t chunk = decode_chunk(d, prefix.type);
  // prefix splits: a function of the length only (same bits for any thread count)
  const std::size_t Lp = prefix.len;
  const std::size_t nsplit = Lp == 0 ? 0 : std::clamp<std::size_t>((Lp + 511) / 512, 1, max_decode_splits);
  // (splits start at multiples of 128: of the decode chunk's 16 and of the packed tile's chunk)
  const std::size_t per = nsplit ? ((Lp + nsplit - 1) / nsplit + 127) / 128 * 128 : 0;
  (void)chunk;
  // many rows per KV head (batched sequences x the group's query heads): the prefix through the
  // packed bf16 tile of the prefill, whose vdpbf16ps does twice the work of an FMA per instruction
  const att_tile_kind tk = tile_kind(ks0, o);
  const bool tile_path = tk != att_tile_kind::none && n_seq * G >= 16;
  const std::size_t pchunk = prefill_chunk(d);
  const std::size_t rows_all = n_seq * hq;  // row (b, head) at b * hq + head
  const std::size_t stride = d + 2;
  // scaled queries, positions, mask rows, grouped per KV head: row (g, b, h) at (g * n_seq + b) * G + h
  // (working buffers reused from call to call: fresh pages of a few hundred KiB cost more page
  // clearing than a short decode step takes)
  reusable_bytes<att_slot> rowbuf(att_slot::decode_rows, rows_all * (d * 4 + 16) + 64);
  float* qs = reinterpret_cast<float*>(rowbuf.get());
  int64_t* pos = reinterpret_cast<int64_t*>(qs + rows_all * d + (rows_all * d) % 2);
  const float** mrows = reinterpret_cast<const float**>(pos + rows_all);
  bool any_mask = false;
  for (std::size_t b = 0; b < n_seq; ++b) {
    any_mask = any_mask || seqs[b].add_mask;
    for (std::size_t g = 0; g < hkv; ++g)
      for (std::size_t h = 0; h < G; ++h) {
        const std::size_t r = (g * n_seq + b) * G + h;
        const float* src = seqs[b].q + (g * G + h) * d;
        for (std::size_t c = 0; c < d; ++c) qs[r * d + c] = src[c] * o.scale;
        pos[r] = int64_t(Lp + seqs[b].own.len) - 1;
        mrows[r] = seqs[b].add_mask;
      }
  }
  reusable_bytes<att_slot> partbuf(att_slot::partials, (nsplit + n_seq) * rows_all * stride * sizeof(float) + 64);
  float* part = reinterpret_cast<float*>(partbuf.get());
  // tasks: each unit (a prefix split or a sequence's own keys) over groups of KV heads. Few
  // units on more threads (a short context: one split) would leave threads idle, so the heads
  // are then divided among twice the threads; a head's arithmetic and the merge order do not
  // depend on the grouping, so the bits do not either.
  const std::size_t units = nsplit + n_seq, threads = pool ? pool->size() : 1;
  const std::size_t hgroups = threads > 1 && units < 2 * threads ? std::min(hkv, 2 * threads) : 1;
  att_parallel(pool, units * hgroups, [&](std::size_t task) {
    const std::size_t t = task / hgroups, gb = hkv * (task % hgroups) / hgroups,
                      ge = hkv * (task % hgroups + 1) / hgroups;  // the unit and its KV heads [gb, ge)
    const bool is_prefix = t < nsplit;
    const std::size_t b = is_prefix ? 0 : t - nsplit;
    const kv_cache_view& src = is_prefix ? prefix : seqs[b].own;
    const std::size_t k0 = is_prefix ? t * per : 0;
    const std::size_t k1 = is_prefix ? std::min(Lp, k0 + per) : src.len;
    // rows of this task per KV head: all sequences (prefix) or sequence b (own keys)
    const std::size_t R = is_prefix ? n_seq * G : G;
    const std::size_t ch = decode_chunk(d, src.type);
    reusable_bytes<att_slot> rb(att_slot::rows, hkv * R * stride * sizeof(float) + 64);
    reusable_bytes<att_slot> sc(att_slot::scratch, (R + 2) * ch * sizeof(float) + 64);
    float* st = reinterpret_cast<float*>(rb.get());  // per g: m[R], l[R], acc[R][d]
    for (std::size_t g = gb; g < ge; ++g) {
      std::fill(st + g * R * stride, st + g * R * stride + R, -std::numeric_limits<float>::infinity());
      std::fill(st + g * R * stride + R, st + (g + 1) * R * stride, 0.f);
    }
    if (k1 > k0) {
      att_step_args sa;
      sa.type = src.type;
      sa.row_stride = src.row_stride;
      sa.pos0 = is_prefix ? 0 : int64_t(Lp);
      sa.n_kv = src.len;
      sa.mask_base = is_prefix ? 0 : Lp;
      static_cast<att_logit_args&>(sa) = lg;
      sa.scratch = reinterpret_cast<float*>(sc.get());
      // one head at a time, its keys in order: one sequential stream per head for the prefetchers
      const bool tiled = is_prefix && tile_path;
      const std::size_t plen = tiled ? (k1 - k0 + pchunk - 1) / pchunk * pchunk : 0;
      reusable_bytes<att_slot> pan, qbb, tsc;
      if (tiled) {
        pan = reusable_bytes<att_slot>(att_slot::panels, panel_bytes(tk, plen, d) + plen / 16 + 64);
        qbb = reusable_bytes<att_slot>(att_slot::decode_qb, R * d * sizeof(uint16_t) + 64);
        tsc = reusable_bytes<att_slot>(att_slot::tile_scratch, R * pchunk * 2 * sizeof(float) + 64);
      }
      for (std::size_t g = gb; g < ge; ++g) {
        const std::ptrdiff_t hoff = std::ptrdiff_t(g) * src.head_stride * std::ptrdiff_t(kv_type_bytes(src.type));
        sa.k = static_cast<const uint8_t*>(src.k) + hoff;
        sa.v = static_cast<const uint8_t*>(src.v) + hoff;
        const std::size_t r0 = is_prefix ? g * n_seq * G : (g * n_seq + b) * G;
        float* sg = st + g * R * stride;
        sa.rows.R = R;
        sa.rows.q = qs + r0 * d;
        sa.rows.pos = pos + r0;
        sa.rows.mask = any_mask ? mrows + r0 : nullptr;
        sa.rows.m = sg;
        sa.rows.l = sg + R;
        sa.rows.acc = sg + 2 * R;
        if (tiled) {
          // this split's keys of head g packed (keys >= k1 zero and invisible), then the tile
          uint8_t* vbad = pan.get() + panel_bytes(tk, plen, d);
          att_pack_args pa;
          pa.k = sa.k;
          pa.v = sa.v;
          pa.type = src.type;
          pa.row_stride = src.row_stride;
          pa.k0 = k0;
          pa.k1 = k0 + plen;
          pa.n_kv = k1;
          pa.d = d;
          pa.vbad = vbad;
          att_tile_args ta;
          ta.rows = sa.rows;
          ta.vbad = vbad;
          if (tk == att_tile_kind::bf16) {
            uint16_t* kp = reinterpret_cast<uint16_t*>(pan.get());
            pa.kp = kp;
            pa.vp = kp + plen * d;
            ks0.pack(pa);
            uint16_t* qb = reinterpret_cast<uint16_t*>(qbb.get());
            for (std::size_t j = 0; j < R * d; ++j) qb[j] = f32_to_bf16(sa.rows.q[j]);
            ta.qb = qb;
            ta.kp = kp;
            ta.vp = kp + plen * d;
          } else {
            float* kp = reinterpret_cast<float*>(pan.get());
            pa.kpf = kp;
            pa.vpf = kp + plen * d;
            ks0.pack_f32(pa);
            ta.kpf = kp;
            ta.vpf = kp + plen * d;
          }
          ta.pos0 = 0;
          ta.n_kv = k1;
          ta.mask_base = 0;
          ta.kbase = k0;
          ta.k0 = k0;
          ta.k1 = k0 + plen;
          ta.chunk = pchunk;
          ta.type = src.type;
          static_cast<att_logit_args&>(ta) = lg;
          ta.scratch = reinterpret_cast<float*>(tsc.get());
          (tk == att_tile_kind::bf16 ? ks0.tile : ks0.tile_f32)(ta);
          continue;
        }
        for (std::size_t c0 = k0; c0 < k1; c0 += ch) {
          sa.k0 = c0;
          sa.k1 = std::min(k1, c0 + ch);
          ks.step(sa);
        }
      }
    }
    // to the partial array, in (b, head) row order
    att_partial P{part + t * rows_all * stride, d};
    for (std::size_t g = gb; g < ge; ++g) {
      const float* sg = st + g * R * stride;
      for (std::size_t rr = 0; rr < R; ++rr) {
        const std::size_t bb = is_prefix ? rr / G : b, h = g * G + rr % G, row = bb * hq + h;
        P.m(row) = sg[rr];
        P.l(row) = sg[R + rr];
        std::copy(sg + 2 * R + rr * d, sg + 2 * R + (rr + 1) * d, P.acc(row));
      }
    }
  });
  // merge in a fixed order: prefix splits, then the sequence's own keys
  std::vector<float> acc(d);
  for (std::size_t b = 0; b < n_seq; ++b)
    for (std::size_t h = 0; h < hq; ++h) {
      const std::size_t row = b * hq + h;
      float m = -std::numeric_limits<float>::infinity(), l = 0.f;
      std::fill(acc.begin(), acc.end(), 0.f);
      for (std::size_t s = 0; s < nsplit; ++s) {
        att_partial P{part + s * rows_all * stride, d};
        att_merge(d, m, l, acc.data(), P.m(row), P.l(row), P.acc(row));
      }
      att_partial P{part + (nsplit + b) * rows_all * stride, d};
      att_merge(d, m, l, acc.data(), P.m(row), P.l(row), P.acc(row));
      att_finish(d, m, l, acc.data(), seqs[b].out + h * d, seqs[b].lse ? seqs[b].lse + h : nullptr);
    }
}

}  // namespace detail
}  // namespace lutkit
