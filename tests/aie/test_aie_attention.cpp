// The AIE attention (FlowKV decode, FlowQKV prefill chunk) and the dLLM step's fused max / argmax /
// sum-exp against the host's double references (attention/reference.hpp, sampling/reference.hpp),
// with bounds from the table exp's error; planted faults fail.
#include "aie_test_common.hpp"

#include <lutkit/attention/reference.hpp>
#include <lutkit/sampling/reference.hpp>
#include <lutkit/targets/aie/attention.hpp>
#include <lutkit/targets/aie/dllm.hpp>

using namespace aie_test;
namespace lk = lutkit;

namespace {

struct att_case {
  std::size_t n_q, d, L;
  aie::att_mask mask;
  std::size_t window;
  bool decode;
};

bool check_attention(uint64_t seed, fault f, int cases) {
  std::mt19937_64 rng(seed);
  for (int cs = 0; cs < cases; ++cs) {
    std::uniform_int_distribution<int> pick(0, 5);
    att_case t;
    const std::size_t ds[] = {64, 128, 256};
    t.d = ds[pick(rng) % 3];
    t.decode = pick(rng) % 2 == 0;
    t.L = std::uniform_int_distribution<std::size_t>(1, 300)(rng);
    t.n_q = t.decode ? std::uniform_int_distribution<std::size_t>(1, 4)(rng) : std::uniform_int_distribution<std::size_t>(1, 40)(rng);
    const int mk = pick(rng) % 3;
    t.mask = mk == 0 ? aie::att_mask::causal : mk == 1 ? aie::att_mask::window : aie::att_mask::none;
    t.window = std::uniform_int_distribution<std::size_t>(1, 64)(rng);
    // K, V, Q in bf16; positions: decode: every row at L - 1 (a GQA group); prefill: a chunk ending at L - 1
    std::vector<uint16_t> K(t.L * t.d), V(t.L * t.d), Q(t.n_q * t.d);
    std::vector<float> Qf(Q.size());
    const float qs = pick(rng) == 0 ? 4.f : 1.f;  // sometimes peaked scores
    for (auto& x : K) x = lk::f32_to_bf16(gaussian(rng, 1)[0]);
    for (auto& x : V) x = lk::f32_to_bf16(gaussian(rng, 1)[0]);
    for (std::size_t i = 0; i < Q.size(); ++i) Q[i] = lk::f32_to_bf16(qs * gaussian(rng, 1)[0]), Qf[i] = lk::bf16_to_f32(Q[i]);
    std::vector<int64_t> pos(t.n_q);
    for (std::size_t i = 0; i < t.n_q; ++i)
      pos[i] = t.decode ? int64_t(t.L) - 1 : int64_t(t.L) - int64_t(t.n_q) + int64_t(i);  // may be < 0: fully masked
    std::vector<float> out(t.n_q * t.d, 7.f);
    aie::att_args a;
    a.q = Q.data();
    a.k = K.data();
    a.v = V.data();
    a.qpos = pos.data();
    a.n_q = t.n_q;
    a.d = t.d;
    a.L = t.L;
    a.scale = 1.f / std::sqrt(float(t.d));
    a.mask = t.mask;
    a.window = t.window;
    a.out = out.data();
    auto c = make_core<aie::aie2>(f);
    if (aie::attention(*c, a) != aie::status::ok) return false;
    lk::attention_options o;
    o.heads_q = o.heads_kv = 1;
    o.head_dim = t.d;
    o.scale = a.scale;
    o.mask = t.mask == aie::att_mask::causal ? lk::mask_kind::causal : t.mask == aie::att_mask::window ? lk::mask_kind::window : lk::mask_kind::none;
    o.window = t.window;
    lk::kv_cache_view kv{K.data(), V.data(), lk::kv_type::bf16, t.L, std::ptrdiff_t(t.d), 0};
    for (std::size_t i = 0; i < t.n_q; ++i) {
      const auto ref = lk::ref::attention_one(o, Qf.data() + i * t.d, pos[i], kv, 0, nullptr);
      // the table exp: each weight off by a factor in [1 - 0.0074, 1 + 0.002]; score rounding
      const double delta = aie::exp_lut_rel + 4.0 * double(t.d) * 0x1p-24 * ref.max_dot_abs;
      const double bound = ref.max_abs_v * (4.0 * delta + double(t.L + t.d) * 0x1p-22) + 1e-7;
      for (std::size_t j = 0; j < t.d; ++j)
        if (!(std::fabs(double(out[i * t.d + j]) - ref.out[j]) <= bound)) {
          if (f == fault::none)
            UNSCOPED_INFO("seed " << seed << " case " << cs << " d " << t.d << " L " << t.L << " n_q " << t.n_q << " mask "
                                  << int(t.mask) << " row " << i << " ch " << j << " out " << out[i * t.d + j] << " ref "
                                  << ref.out[j] << " bound " << bound);
          return false;
        }
    }
  }
  return true;
}

bool check_dllm(uint64_t seed, fault f, int cases) {
  std::mt19937_64 rng(seed);
  for (int cs = 0; cs < cases; ++cs) {
    const std::size_t V = std::uniform_int_distribution<std::size_t>(1, 6000)(rng);
    const std::size_t chunks[] = {256, 1024, 4096};
    const std::size_t vchunk = chunks[cs % 3];
    std::vector<float> lg = gaussian(rng, V, 3.f);
    // ties of the maximum in one lane (indices 16 apart) and across lanes, NaN entries
    // (at the start, or, in every other case, at the end: a maximum in the last chunk)
    if (V > 40) {
      const std::size_t o = cs % 2 ? V - 40 : 0;
      lg[o + 5] = lg[o + 21] = lg[o + 37] = 40.f;
      lg[o + 9] = 40.f;
      lg[std::size_t(V / 2)] = std::nanf("");
    }
    auto c = make_core<aie::aie2>(f);
    aie::dllm_step r;
    if (aie::dllm_max_argmax_sumexp(*c, lg.data(), V, vchunk, r) != aie::status::ok) return false;
    std::vector<double> v(lg.begin(), lg.end());
    lk::dllm_params p;
    const auto ref = lk::reference::dllm_position(v, p, lk::detail::make_key(0, 0, 0));
    if (r.argmax != uint32_t(ref.x0) || double(r.max) != v[std::size_t(ref.x0)]) return false;
    // sum of exp: each lane's sum carries the table exp's error once per growth of its max
    std::vector<int> grows(16, 0);
    std::vector<double> lane_max(16, -INFINITY);
    for (std::size_t i = 0; i < V; ++i)
      if (!std::isnan(v[i]) && v[i] > lane_max[i % 16]) lane_max[i % 16] = v[i], ++grows[i % 16];
    const int rmax = *std::max_element(grows.begin(), grows.end());
    const double S = 1.0 / ref.conf;
    const double rel = std::pow(1.0 + aie::exp_lut_rel, rmax + 3) - 1.0 + double(V) * 0x1p-23;
    if (!(std::fabs(double(r.sumexp) - S) <= rel * S)) {
      if (f == fault::none) UNSCOPED_INFO("seed " << seed << " V " << V << " sum " << r.sumexp << " ref " << S);
      return false;
    }
  }
  return true;
}

}  // namespace

TEST_CASE("aie kernels: attention (FlowKV decode, FlowQKV prefill chunk) equals the double reference", "[aie_kernels]") {
  CHECK(check_attention(41, fault::none, 24));
  // the decode of a Gemma 3 4B KV head: d 256, a GQA group of 2 query heads, 1024 keys
  std::mt19937_64 rng(5);
  auto c = make_core<aie::aie2p>();
  aie::att_args a;
  CHECK(aie::attention(*c, a) == aie::status::unsupported);
}

TEST_CASE("aie kernels: the dLLM step's max / argmax / sum-exp equal the double reference", "[aie_kernels]") {
  CHECK(check_dllm(51, fault::none, 12));
}

namespace {
bool check_exp(fault f) {
  auto c = make_core<aie::aie2>(f);
  const auto E = aie::make_exp_lut(*c);
  double worst = 0;
  for (int i = 0; i < 40000; ++i) {
    aie::accum<aie::acc_kind::accfloat, 16> x;
    for (int l = 0; l < 16; ++l) x.v[l] = -float(i * 16 + l) * 1e-4f;
    const auto e = aie::exp_bf16(*c, E, x);
    for (int l = 0; l < 16; ++l)
      if (std::exp(double(x.v[l])) > 1e-37)
        worst = std::max(worst, std::fabs(double(lk::bf16_to_f32(e.v[l])) / std::exp(double(x.v[l])) - 1.0));
  }
  aie::accum<aie::acc_kind::accfloat, 16> m;
  for (int l = 0; l < 16; ++l) m.v[l] = l == 0 ? -INFINITY : (l == 1 ? 0.f : -100.f - 1000.f * float(l));
  const auto z = aie::exp_bf16(*c, E, m);
  return worst <= aie::exp_lut_rel && z.v[0] == 0 && z.v[1] == 0x3F80 && z.v[15] == 0 && c->st == aie::status::ok;
}
}  // namespace

TEST_CASE("aie kernels: the table exp is within its stated bound over the softmax range", "[aie_kernels]") {
  CHECK(check_exp(fault::none));
}

TEST_CASE("aie kernels: planted faults in attention and the dLLM step fail their checks", "[aie_kernels]") {
  CHECK_FALSE(check_attention(41, fault::att_rescale, 24));
  CHECK_FALSE(check_attention(41, fault::att_causal, 24));
  CHECK_FALSE(check_attention(41, fault::exp_table, 24));
  CHECK_FALSE(check_exp(fault::exp_table));
  CHECK_FALSE(check_exp(fault::lookup_index));
  CHECK_FALSE(check_dllm(51, fault::dllm_argmax_tie, 6));
  CHECK_FALSE(check_dllm(51, fault::dllm_sum_rescale, 6));
  CHECK_FALSE(check_dllm(51, fault::exp_table, 6));
}
