// Host generator of the HVX suite's test vectors (tests/hvx/hvx_cases.hpp has the format): blobs
// packed by the host's packer for target::hvx, activations, the double reference and its bound
// (LUT-GEMV); Q4_0 super-groups and the host's dequantization rounded to fp16; the host's table
// exp rounded to fp16. The Hexagon runner checks its kernels against these.
//   make_hvx_vectors <out file> [cases per kernel = 120]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <lutkit/attention/exp.hpp>
#include <lutkit/lutkit.hpp>
#include <lutkit/quant/q4_0_supergroup.hpp>

#include "hvx_cases.hpp"

using namespace lutkit;
using namespace lutkit_hvx_test;

namespace {

struct writer {
  std::vector<uint8_t> bytes;
  record* begin(uint32_t kind) {
    at = bytes.size();
    bytes.resize(at + sizeof(record), 0);
    rec()->kind = kind;
    sections = 0;
    return rec();
  }
  record* rec() { return reinterpret_cast<record*>(bytes.data() + at); }
  void section(const void* p, std::size_t n) {
    rec()->section[sections++] = uint32_t(n);
    const std::size_t o = bytes.size();
    bytes.resize(o + pad128(uint32_t(n)), 0);
    std::memcpy(bytes.data() + o, p, n);
  }
  void end() { rec()->total = uint32_t(bytes.size() - at); }
  std::size_t at = 0;
  int sections = 0;
};

// Bound on |hvx::lut_gemv - ref::gemv| for output (n, m) (targets/hvx/lut_gemv_hvx.hpp): per table
// entry 0.5625 table steps (rounding to the step, plus the int16 fixed point of the activations);
// float rounding of the scalar epilogue; the float sum of a granule's activations; the reference
// stored as float.
template <class P>
double hvx_bound(const quantized<P>& q, const float* x, std::size_t K, std::size_t m, double ref) {
  constexpr auto& S = P::spec;
  const std::size_t kps = S.k_per_step;
  const std::size_t granule = S.group_k > 0 ? std::size_t(S.group_k) : 4 * std::size_t(S.block_k);
  const packed_layout L(S, 1, K);
  const double pws = S.ternary ? 1.0 : S.plane_weight_sum, cm = S.mirror && !S.ternary ? 0.5 * pws : 0.0;
  double err = 0, mag = 0;
  std::size_t granules = 0;
  for (std::size_t k0 = 0; k0 < L.K_pad; k0 += granule, ++granules) {
    const std::size_t k1 = std::min(L.K_pad, k0 + granule);
    float amax = 0;
    double xabs = 0;
    for (std::size_t k = k0; k < k1; k += kps) {
      float s[4] = {0, 0, 0, 0}, pos = 0, neg = 0, sabs = 0;
      for (std::size_t b = 0; b < kps; ++b) {
        s[b] = k + b < K ? x[k + b] : 0.f;
        (s[b] > 0 ? pos : neg) += std::fabs(s[b]);
        sabs += std::fabs(s[b]);
        xabs += std::fabs(s[b]);
      }
      const float a = S.ternary ? sabs : (S.mirror ? 0.5f * sabs : std::max(pos, neg));
      amax = std::max(amax, a);
    }
    const double ts = double(amax) / 127.0, steps = double((k1 - k0) / kps);
    const std::size_t g = S.group_k > 0 ? k0 / S.group_k : 0;
    const double s = std::fabs(q.scale(m, g)), z = S.ternary ? 0.0 : std::fabs(cm - q.zero(m, g));
    err += s * steps * pws * ts * 0.5625 + s * z * xabs * double(granule) * 0x1p-24;
    mag += s * (ts * 127.0 * steps * pws + z * xabs);
  }
  return err + mag * double(granules + 16) * 0x1p-22 + std::fabs(ref) * 0x1p-23 + 1e-30;
}

// An exact model of what hvx::lut_gemv computes: the table entries by the same integer and float
// steps as hvx::build_tables (so bit-identical), the integer lookup sums in full, the scalar
// epilogue in double. Its bound covers only the epilogue's float rounding, so a kernel that gets a
// table entry, an index or a plane weight wrong by a little fails it where the reference's
// worst-case bound would not notice.
template <class P>
void hvx_model(const quantized<P>& q, const float* x, std::size_t K, std::vector<double>& y, std::vector<double>& bound) {
  constexpr auto& S = P::spec;
  const int kps = S.k_per_step;
  const std::size_t granule = S.group_k > 0 ? std::size_t(S.group_k) : 4 * std::size_t(S.block_k);
  const packed_layout L(S, 1, K);
  const float cm = S.mirror && !S.ternary ? 0.5f * float(S.plane_weight_sum) : 0.f;
  const std::size_t M = q.M, steps = L.steps();
  std::vector<int> ent(steps * 16), neg(steps * 16);
  std::vector<float> ts, xs;
  auto act = [&](std::size_t k) { return k < K ? x[k] : 0.f; };
  for (std::size_t k0 = 0; k0 < L.K_pad; k0 += granule) {
    const std::size_t k1 = std::min(L.K_pad, k0 + granule);
    float amax = 0.f, sum = 0.f;
    bool fin = true;
    for (std::size_t k = k0; k < k1; k += kps) {
      float v[4] = {0, 0, 0, 0}, pos = 0, ng = 0, sabs = 0;
      for (int b = 0; b < kps; ++b) {
        v[b] = act(k + b);
        fin = fin && std::isfinite(v[b]);
        sum += v[b];
        (v[b] > 0.f ? pos : ng) += std::fabs(v[b]);
      }
      if (S.ternary) sabs = std::fabs(v[0]) + std::fabs(v[1]) + std::fabs(v[2]);
      else sabs = std::fabs(v[0]) + std::fabs(v[1]) + std::fabs(v[2]) + std::fabs(v[3]);
      const float a = S.ternary ? sabs : (S.mirror ? 0.5f * sabs : (pos > ng ? pos : ng));
      amax = a > amax ? a : amax;
    }
    ts.push_back(amax / 127.f);
    xs.push_back(sum);
    const float inv64 = fin && amax > 0.f ? 127.f / amax * 64.f : 0.f;
    for (std::size_t st = k0 / kps; st < k1 / kps; ++st) {
      int xf[4] = {0, 0, 0, 0};
      for (int b = 0; b < kps; ++b) {
        const float v = act(st * kps + b) * inv64;
        xf[b] = int(v < 0.f ? v - 0.5f : v + 0.5f);
      }
      auto clamp = [](int e) { return e < -127 ? -127 : (e > 127 ? 127 : e); };
      for (int i = 0; i < 16; ++i) {
        if (S.ternary) {
          const int d[3] = {i / 9, (i / 3) % 3, i % 3};
          int t = 0;
          for (int b = 0; b < 3; ++b) t += i < 14 ? (d[b] - 1) * xf[b] : 0;
          ent[st * 16 + i] = clamp((t + 32) >> 6);
          neg[st * 16 + i] = clamp((-t + 32) >> 6);
        } else {
          int sum_i = 0, all = 0;
          for (int b = 0; b < 4; ++b) {
            sum_i += ((i >> b) & 1) * xf[b];
            all += xf[b];
          }
          ent[st * 16 + i] = clamp(S.mirror ? (2 * sum_i - all + 64) >> 7 : (sum_i + 32) >> 6);
        }
      }
    }
  }
  y.assign(M, 0.0);
  bound.assign(M, 0.0);
  for (std::size_t m = 0; m < M; ++m) {
    double mag = 0;
    for (std::size_t g = 0; g < ts.size(); ++g) {
      const std::size_t k0 = g * granule, k1 = std::min(L.K_pad, k0 + granule);
      long acc = 0;
      for (std::size_t st = k0 / kps; st < k1 / kps; ++st) {
        if (S.ternary) {
          int c[3];
          for (int b = 0; b < 3; ++b) c[b] = st * 3 + b < K ? q.codes[m * K + st * 3 + b] : 1;
          int index, sign;
          detail::ternary_encode(c[0], c[1], c[2], index, sign);
          acc += sign ? neg[st * 16 + index] : ent[st * 16 + index];
        } else {
          for (int p = 0; p < S.planes; ++p) {
            int idx = 0;
            for (int b = 0; b < 4; ++b) {
              const std::size_t k = st * 4 + b;
              idx |= (k < K ? (q.codes[m * K + k] >> p) & 1 : 0) << b;
            }
            acc += long(ent[st * 16 + idx]) << p;
          }
        }
      }
      const std::size_t grp = S.group_k > 0 ? g : 0;
      const float sc = f16_to_f32(f32_to_f16(q.scale(m, grp)));
      const float z = S.ternary ? 0.f : (S.asymmetric ? cm - f16_to_f32(f32_to_f16(q.zero(m, grp))) : cm - S.sym_zero);
      const double term = double(sc) * (double(ts[g]) * double(acc) + double(z) * double(xs[g]));
      y[m] += term;
      mag += std::fabs(double(sc)) * (std::fabs(double(ts[g]) * double(acc)) + std::fabs(double(z) * double(xs[g]))) +
             std::fabs(y[m]);
    }
    bound[m] = mag * 4 * 0x1p-24 + 1e-30;
  }
}

template <class E>
void gemv_case(writer& w, std::mt19937& rng, int policy) {
  using P = lutkit::policy<typename E::fmt, typename E::group, typename E::table, target::hvx>;
  constexpr auto& S = P::spec;
  const std::size_t M = std::uniform_int_distribution<std::size_t>(1, 300)(rng);
  std::size_t K;
  if (S.group_k > 0) K = std::size_t(S.group_k) * std::uniform_int_distribution<std::size_t>(1, 512 / S.group_k + 1)(rng);
  else K = std::uniform_int_distribution<std::size_t>(1, 700)(rng);
  const std::size_t N = std::uniform_int_distribution<std::size_t>(1, 16)(rng);
  const std::size_t ldx = K + std::uniform_int_distribution<std::size_t>(0, 3)(rng);
  std::size_t r0 = 0, r1 = M;
  if (rng() % 3 == 0) {
    r0 = std::uniform_int_distribution<std::size_t>(0, M - 1)(rng);
    r1 = std::uniform_int_distribution<std::size_t>(r0 + 1, M)(rng);
  }
  std::normal_distribution<float> nd;
  std::vector<float> wt(M * K), x(N * ldx);
  for (auto& v : wt) v = nd(rng);
  const float xscale = std::ldexp(1.f, int(rng() % 9) - 4);
  for (auto& v : x) v = (rng() % 8 == 0 ? 0.f : nd(rng)) * xscale;
  const auto q = quantize<P>(wt.data(), M, K);
  const auto wp = pack<P>(q);
  const auto ref = ref::gemv(q, x.data(), N, ldx);
  std::vector<float> rf(N * M), bd(N * M), md(N * M), mb(N * M);
  std::vector<double> ym, yb;
  for (std::size_t n = 0; n < N; ++n) {
    hvx_model(q, x.data() + n * ldx, K, ym, yb);
    for (std::size_t m = 0; m < M; ++m) {
      rf[n * M + m] = float(ref[n * M + m]);
      bd[n * M + m] = float(hvx_bound(q, x.data() + n * ldx, K, m, ref[n * M + m]) * (1 + 0x1p-20));
      md[n * M + m] = float(ym[m]);
      mb[n * M + m] = float((yb[m] + std::fabs(ym[m]) * 0x1p-23) * (1 + 0x1p-20));
    }
  }
  record* r = w.begin(k_gemv);
  r->policy = uint32_t(policy);
  r->M = uint32_t(M);
  r->K = uint32_t(K);
  r->N = uint32_t(N);
  r->row_begin = uint32_t(r0);
  r->row_end = uint32_t(r1);
  r->ldx = uint32_t(ldx);
  w.section(wp.data(), wp.layout().total_bytes);
  w.section(x.data(), x.size() * 4);
  w.section(rf.data(), rf.size() * 4);
  w.section(bd.data(), bd.size() * 4);
  w.section(md.data(), md.size() * 4);
  w.section(mb.data(), mb.size() * 4);
  w.end();
}

template <class E>
void tman_case(writer& w, std::mt19937& rng, int policy) {
  using P = lutkit::policy<typename E::fmt, typename E::group, typename E::table, target::hvx>;
  constexpr auto& S = P::spec;
  const std::size_t M = std::uniform_int_distribution<std::size_t>(1, 300)(rng);
  const std::size_t K = S.group_k > 0 ? std::size_t(S.group_k) * std::uniform_int_distribution<std::size_t>(1, 4)(rng)
                                      : std::uniform_int_distribution<std::size_t>(1, 300)(rng);
  std::vector<float> wt(M * K);
  std::normal_distribution<float> nd;
  const float scale = std::ldexp(1.f, int(rng() % 30) - 20);  // fp16 scales from subnormal to ~2^9
  for (auto& v : wt) v = nd(rng) * scale;
  const auto q = quantize<P>(wt.data(), M, K);
  const auto wp = pack<P>(q);
  const auto deq = ref::dequantize(q);
  std::vector<uint16_t> expect(K * M);
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t k = 0; k < K; ++k) expect[k * M + m] = f32_to_f16(float(deq[m * K + k]));
  record* r = w.begin(k_tman);
  r->policy = uint32_t(policy);
  r->M = uint32_t(M);
  r->K = uint32_t(K);
  w.section(wp.data(), wp.layout().total_bytes);
  w.section(expect.data(), expect.size() * 2);
  w.end();
}

void q4_0_case(writer& w, std::mt19937& rng) {
  using P = lutkit::policy<fmt::uint_sym<4>, group<32>, table::lut4<int8_t, false>>;
  const std::size_t M = std::uniform_int_distribution<std::size_t>(1, 24)(rng);
  const std::size_t K = 32 * std::uniform_int_distribution<std::size_t>(1, 40)(rng);
  std::vector<uint8_t> blocks(M * K / 32 * 18);
  for (std::size_t b = 0; b < M * K / 32; ++b) {
    // scales over the whole fp16 range: subnormal, tiny, typical, huge (d * 8 may overflow to inf)
    const int kind = int(rng() % 8);
    uint16_t d;
    if (kind == 0) d = uint16_t(rng() % 0x400);                          // zero and subnormals
    else if (kind == 1) d = uint16_t(0x7800 + rng() % 0x3FF);           // >= 32768
    else d = f32_to_f16(std::ldexp(float(1 + rng() % 1000) / 1000.f, int(rng() % 20) - 14));
    if (rng() % 2) d |= 0x8000u;
    std::memcpy(&blocks[b * 18], &d, 2);
    for (int j = 0; j < 16; ++j) blocks[b * 18 + 2 + j] = uint8_t(rng());
  }
  const auto sg = pack_q4_0_supergroups(blocks.data(), M, K, blocks.size());
  const auto deq = ref::dequantize(import_q4_0<P>(blocks.data(), M, K, blocks.size()));
  std::vector<uint16_t> expect(M * K);
  for (std::size_t i = 0; i < M * K; ++i) expect[i] = f32_to_f16(float(deq[i]));
  record* r = w.begin(k_q4_0);
  r->M = uint32_t(M);
  r->K = uint32_t(K);
  w.section(sg.data(), sg.size());
  w.section(expect.data(), expect.size() * 2);
  w.end();
}

void exp_case(writer& w, std::mt19937& rng, const std::vector<uint16_t>& table, bool exhaustive) {
  // the table travels once, with the exhaustive case; later records reuse it (empty section)
  std::vector<uint16_t> in, expect;
  if (exhaustive) {
    for (uint32_t c = 0; c < 65536; ++c)
      if ((c & 0x7FFF) <= 0x7C00) in.push_back(uint16_t(c));  // every non-NaN code, both signs
  } else {
    const std::size_t n = std::uniform_int_distribution<std::size_t>(1, 700)(rng);
    std::normal_distribution<float> nd;
    for (std::size_t i = 0; i < n; ++i) in.push_back(f32_to_f16(-std::fabs(nd(rng)) * float(1 + rng() % 30)));
  }
  const float* host = detail::exp_table();
  for (uint16_t c : in) expect.push_back(f32_to_f16(detail::exp_by_table(host, f16_to_f32(c))));
  record* r = w.begin(k_exp);
  r->N = uint32_t(in.size());
  w.section(table.data(), exhaustive ? table.size() * 2 : 0);
  w.section(in.data(), in.size() * 2);
  w.section(expect.data(), expect.size() * 2);
  w.end();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: make_hvx_vectors <out file> [cases per kernel]\n");
    return 2;
  }
  const int cases = argc > 2 ? std::atoi(argv[2]) : 120;
  std::mt19937 rng(20261124);
  writer w;
  for (int c = 0; c < cases; ++c) {
    const int p = c % gemv_policies::size;
    with_entry(gemv_policies{}, p, [&]<class E>() { gemv_case<E>(w, rng, p); });
  }
  for (int c = 0; c < cases; ++c) q4_0_case(w, rng);
  for (int c = 0, p = 0; c < cases; ++p) {
    with_entry(gemv_policies{}, p % gemv_policies::size, [&]<class E>() {
      if constexpr (tman_dequant_entry<E>) {
        tman_case<E>(w, rng, p % gemv_policies::size);
        ++c;
      }
    });
  }
  std::vector<uint16_t> table(32768);
  const float* host = detail::exp_table();
  for (std::size_t i = 0; i < table.size(); ++i) table[i] = f32_to_f16(host[i]);
  exp_case(w, rng, table, true);
  for (int c = 1; c < cases; ++c) exp_case(w, rng, table, false);
  w.begin(k_end);
  w.end();
  std::FILE* f = std::fopen(argv[1], "wb");
  if (!f || std::fwrite(w.bytes.data(), 1, w.bytes.size(), f) != w.bytes.size()) {
    std::fprintf(stderr, "make_hvx_vectors: cannot write %s\n", argv[1]);
    return 1;
  }
  std::fclose(f);
  std::printf("make_hvx_vectors: %d cases per kernel, %zu bytes -> %s\n", cases, w.bytes.size(), argv[1]);
  return 0;
}
