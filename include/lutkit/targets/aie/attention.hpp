// lutkit — chunked attention on the AIE model (aie2: bf16 4 x 8 x 4 mmul): FlowKV for decode (the
// query rows of one GQA group at the newest position) and FlowQKV's chunk for prefill (a chunk
// of query positions), one kernel. Per block of 4 query rows the keys stream through the data
// memory in sub-chunks (ping-pong, the DMA re-laying K into the score mmul's 8 d x 4 key blocks
// and V into the value mmul's 8 key x 4 d blocks):
//   score stage  S = scale Q K^T (fp32), masked to -inf; the running row max m; F = exp(S - m)
//                (exp.hpp, bf16), C = exp(m_old - m); l = C l + sum F          (Eq. 6-10)
//   value stage  Y = C Y + F V (fp32 accumulators in the data memory)           (Eq. 11)
//   end          O = Y / l (a fully masked row gives 0)                          (Eq. 12)
// The array model puts the two stages on two tiles (FlowKV's CT pair); here they run in turn on
// one core, each in its own trace regions.
#pragma once
#include "exp.hpp"

namespace lutkit::aie {

enum class att_mask : int { causal, window, none };

struct att_args {
  const uint16_t* q = nullptr;  // n_q rows of d bf16, row stride ldq
  const uint16_t* k = nullptr;  // L rows (positions 0 .. L - 1) of d bf16
  const uint16_t* v = nullptr;
  const int64_t* qpos = nullptr;  // each query row's position
  std::size_t n_q = 0, d = 0, L = 0, ldq = 0, ldk = 0, ldv = 0;
  float scale = 0.f;
  att_mask mask = att_mask::causal;
  std::size_t window = 0;  // window: a query at p sees keys p - window < j <= p
  float* out = nullptr;    // n_q rows of d fp32, row stride ldo
  std::size_t ldo = 0;
};

namespace detail {
inline bool visible(const att_args& a, int64_t p, int64_t j, bool fault_causal) {
  if (a.mask == att_mask::none) return true;
  const int64_t hi = p + (fault_causal ? 1 : 0);
  if (j > hi) return false;
  return a.mask != att_mask::window || j > p - int64_t(a.window);
}
}  // namespace detail

template <class P>
status attention(core<P>& c, const att_args& a) {
  if constexpr (!std::is_same_v<P, aie2>) {
    (void)c, (void)a;
    return status::unsupported;  // bf16 mmul is emulated (bfp16) on aie2p: not modelled for this kernel
  } else {
    if (a.q == nullptr || a.out == nullptr || a.qpos == nullptr || (a.L > 0 && (a.k == nullptr || a.v == nullptr)))
      return status::null_pointer;
    const std::size_t d = a.d;
    if (a.n_q == 0 || d == 0 || d % 8 != 0 || d > 256 || (a.mask == att_mask::window && a.window == 0))
      return status::bad_shape;
    const std::size_t ldq = a.ldq ? a.ldq : d, ldk = a.ldk ? a.ldk : d, ldv = a.ldv ? a.ldv : d, ldo = a.ldo ? a.ldo : d;
    if (ldq < d || ldk < d || ldv < d || ldo < d) return status::bad_stride;
    c.reset_memory();
    const exp_lut E = make_exp_lut(c);
    // keys per sub-chunk: 16 or 32 (K and V ping-pong buffers within 32 KiB)
    const std::size_t sub = d * 2 * 32 * 4 <= 32768 ? 32 : 16;
    // bank placement: the score loop reads Q (bank 0) and two key blocks from each half of the K
    // sub-chunk (banks 1 and 2); the value loop reads Y (bank 0) and V (bank 3 or 4)
    const uint32_t qbuf = c.alloc(8 * d, 64, 0);   // [d / 8] blocks of 4 x 8
    const uint32_t ybuf = c.alloc(16 * d, 64, 0);  // [d / 4] blocks of 4 x 4 fp32
    const std::size_t kh = sub * d;                 // bytes of half a K sub-chunk: key blocks of one parity
    const uint32_t kbuf[2][2] = {{c.alloc(kh, 64, 1), c.alloc(kh, 64, 2)}, {c.alloc(kh, 64, 1), c.alloc(kh, 64, 2)}};
    const uint32_t vbuf[2] = {c.alloc(sub * d * 2, 64, 3), c.alloc(sub * d * 2, 64, 4)};  // [key / 8][d / 4] of 8 x 4
    if (c.st != status::ok) return c.st;
    const bool fc = c.faulty(fault::att_causal);
    const float ninf = -__builtin_inff();
    uint16_t stage[32 * 256];
    for (std::size_t q0 = 0; q0 < a.n_q; q0 += 4) {
      const int rows = int(a.n_q - q0 < 4 ? a.n_q - q0 : 4);
      // the query block, re-laid into A blocks
      for (std::size_t db = 0; db < d / 8; ++db)
        for (int i = 0; i < 4; ++i)
          for (int k = 0; k < 8; ++k) stage[db * 32 + std::size_t(i * 8 + k)] = i < rows ? a.q[(q0 + std::size_t(i)) * ldq + db * 8 + std::size_t(k)] : uint16_t(0);
      c.dma_in(qbuf, stage, 8 * d);
      int64_t pos[4];
      int64_t jlo = int64_t(a.L), jhi = -1;
      for (int i = 0; i < 4; ++i) {
        pos[i] = a.qpos[q0 + std::size_t(i < rows ? i : 0)];
        const int64_t lo = a.mask == att_mask::window ? pos[i] - int64_t(a.window) + 1 : 0;
        const int64_t hi = a.mask == att_mask::none ? int64_t(a.L) - 1 : pos[i] + (fc ? 1 : 0);
        jlo = lo < jlo ? lo : jlo;
        jhi = hi > jhi ? hi : jhi;
      }
      jlo = jlo < 0 ? 0 : jlo;
      jhi = jhi >= int64_t(a.L) ? int64_t(a.L) - 1 : jhi;
      // running max m, sum l and the value accumulators, in the 4 x 4 lane layout (lane 4 i + j: row i)
      accum<acc_kind::accfloat, 16> m = acc_broadcast<acc_kind::accfloat, 16>(c, ninf);
      accum<acc_kind::accfloat, 16> l = acc_broadcast<acc_kind::accfloat, 16>(c, 0.f);
      for (std::size_t db = 0; db < d / 4; ++db) store_acc(c, ybuf + uint32_t(db * 64), l);
      std::size_t chunk = 0;
      for (int64_t j0 = jlo - jlo % int64_t(sub); j0 <= jhi; j0 += int64_t(sub), ++chunk) {
        const uint32_t* kb = kbuf[chunk % 2];
        const uint32_t vb = vbuf[chunk % 2];
        // DMA: K sub-chunk as [key block of 4][d / 8] blocks (element (dd, key) at dd * 4 + key), the
        // even key blocks in one bank, the odd in the other
        for (int h = 0; h < 2; ++h) {
          for (std::size_t kk = 0; kk < sub; ++kk) {
            if (int(kk / 4) % 2 != h) continue;
            for (std::size_t dd = 0; dd < d; ++dd) {
              const std::size_t j = std::size_t(j0) + kk;
              stage[((kk / 8) * (d / 8) + dd / 8) * 32 + (dd % 8) * 4 + kk % 4] = j < a.L ? a.k[j * ldk + dd] : uint16_t(0);
            }
          }
          c.dma_in(kb[h], stage, kh);
        }
        // V sub-chunk as [key block of 8][d / 4] blocks (element (key, dd) at key * 4 + dd)
        for (std::size_t kk = 0; kk < sub; ++kk)
          for (std::size_t dd = 0; dd < d; ++dd) {
            const std::size_t j = std::size_t(j0) + kk;
            stage[((kk / 8) * (d / 4) + dd / 4) * 32 + (kk % 8) * 4 + dd % 4] = j < a.L ? a.v[j * ldv + dd] : uint16_t(0);
          }
        c.dma_in(vb, stage, sub * d * 2);
        // ---- score stage: 4 key blocks per pass in 4 accumulators, A reused
        accum<acc_kind::accfloat, 16> S[32 / 4];
        for (std::size_t g4 = 0; g4 < sub / 16; ++g4) {
          accum<acc_kind::accfloat, 16> acc[4];
          c.loop_begin("att.score");
          for (std::size_t db = 0; db < d / 8; ++db) {
            c.iteration();
            const auto A = load<bf16, 32>(c, qbuf + uint32_t(db * 64));
            for (int b = 0; b < 4; ++b) {
              const std::size_t blk = g4 * 4 + std::size_t(b);  // in half blk % 2, its (blk / 2)-th block
              const auto B = load<bf16, 32>(c, kb[blk % 2] + uint32_t(((blk / 2) * (d / 8) + db) * 64));
              mmul_mac<4, 8, 4, bf16, bf16>(c, acc[b], A, B);
            }
          }
          c.loop_end();
          for (int b = 0; b < 4; ++b) S[g4 * 4 + std::size_t(b)] = acc[b];
        }
        c.loop_begin("att.softmax");
        c.iteration();
        const auto sc = acc_broadcast<acc_kind::accfloat, 16>(c, a.scale);
        accum<acc_kind::accfloat, 16> rmax = acc_broadcast<acc_kind::accfloat, 16>(c, ninf);
        for (std::size_t b = 0; b < sub / 4; ++b) {
          S[b] = fmul(c, S[b], sc);
          c.issue(slot::vec, 2);  // the mask: key positions against the rows' positions, a select
          for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) {
              const int64_t key = j0 + int64_t(b * 4) + j;
              if (i >= rows || key >= int64_t(a.L) || !detail::visible(a, pos[i], key, fc)) S[b].v[4 * i + j] = ninf;
            }
          rmax = fmax(c, rmax, S[b]);
        }
        // the row max across each row's 4 lanes (two shuffle + max steps)
        c.issue(slot::vec, 4);
        for (int i = 0; i < 4; ++i) {
          float mx = rmax.v[4 * i];
          for (int j = 1; j < 4; ++j) mx = rmax.v[4 * i + j] > mx ? rmax.v[4 * i + j] : mx;
          for (int j = 0; j < 4; ++j) rmax.v[4 * i + j] = mx;
        }
        const auto mnew = fmax(c, m, rmax);
        // the subtrahend: m_new, or 0 while a row has seen no key (then every exp below is of -inf)
        accum<acc_kind::accfloat, 16> msub, dm;
        c.issue(slot::vec, 2);
        for (int i = 0; i < 16; ++i) {
          msub.v[i] = mnew.v[i] == ninf ? 0.f : -mnew.v[i];
          dm.v[i] = m.v[i] == ninf ? ninf : m.v[i] - mnew.v[i];
        }
        const auto C = from_bf16(c, exp_bf16(c, E, dm));
        vec<bf16, 16> F[32 / 4];
        accum<acc_kind::accfloat, 16> fsum = acc_broadcast<acc_kind::accfloat, 16>(c, 0.f);
        for (std::size_t b = 0; b < sub / 4; ++b) {
          F[b] = exp_bf16(c, E, fadd(c, S[b], msub));
          fsum = fadd(c, fsum, from_bf16(c, F[b]));
        }
        c.issue(slot::vec, 4);  // the row sums across each row's 4 lanes
        for (int i = 0; i < 4; ++i) {
          float t = 0.f;
          for (int j = 0; j < 4; ++j) t += fsum.v[4 * i + j];
          for (int j = 0; j < 4; ++j) fsum.v[4 * i + j] = t;
        }
        l = fadd(c, fmul(c, C, l), fsum);
        m = mnew;
        // F as the value mmul's A blocks (4 rows x 8 keys): two 4 x 4 blocks zipped by rows
        vec<bf16, 32> FA[32 / 8];
        for (std::size_t kb8 = 0; kb8 < sub / 8; ++kb8) {
          const auto x = as<uint64_t, 4>(F[2 * kb8]), y = as<uint64_t, 4>(F[2 * kb8 + 1]);
          FA[kb8] = as<bf16, 32>(concat(shuffle(c, x, y, shuffle_mode::zip_lo), shuffle(c, x, y, shuffle_mode::zip_hi)));
        }
        c.loop_end();
        // ---- value stage: Y = C Y + F V, per 4 output channels
        // (two channel blocks per iteration: two accumulator chains, the mmul recurrence hidden)
        c.loop_begin("att.value");
        for (std::size_t db = 0; db < d / 4; db += 2) {
          c.iteration();
          accum<acc_kind::accfloat, 16> Y[2];
          for (int h = 0; h < 2; ++h) {
            Y[h] = load_acc<acc_kind::accfloat, 16>(c, ybuf + uint32_t((db + std::size_t(h)) * 64));
            if (!c.faulty(fault::att_rescale)) Y[h] = fmul(c, Y[h], C);
          }
          for (std::size_t kb8 = 0; kb8 < sub / 8; ++kb8)
            for (int h = 0; h < 2; ++h) {
              const auto B = load<bf16, 32>(c, vb + uint32_t((kb8 * (d / 4) + db + std::size_t(h)) * 64));
              mmul_mac<4, 8, 4, bf16, bf16>(c, Y[h], FA[kb8], B);
            }
          for (int h = 0; h < 2; ++h) store_acc(c, ybuf + uint32_t((db + std::size_t(h)) * 64), Y[h]);
        }
        c.loop_end();
      }
      // ---- O = Y / l (rows that saw no key: l = 0, Y = 0 -> 0)
      c.loop_begin("att.out");
      accum<acc_kind::accfloat, 16> linv = finv(c, l);
      for (int i = 0; i < 16; ++i)
        if (l.v[i] == 0.f) linv.v[i] = 0.f;
      for (std::size_t db = 0; db < d / 4; ++db) {
        c.iteration();
        const auto o = fmul(c, load_acc<acc_kind::accfloat, 16>(c, ybuf + uint32_t(db * 64)), linv);
        for (int i = 0; i < rows; ++i)
          for (int j = 0; j < 4; ++j) a.out[(q0 + std::size_t(i)) * ldo + db * 4 + std::size_t(j)] = o.v[4 * i + j];
        c.issue(slot::st, 1);
      }
      c.loop_end();
    }
    return c.st;
  }
}

}  // namespace lutkit::aie
