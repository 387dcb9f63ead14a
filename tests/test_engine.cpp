// The example engine (examples/llm/) against a double-precision reference forward pass on tiny
// random models written by the GGUF writer, for every architecture and matrix type it serves:
// prefill logits and 16 greedy decode steps within the bound below, the greedy path equal to
// the reference's argmax wherever the reference's top-2 margin exceeds twice the bound, prefill
// of n then decode = prefill of n + 1, 1 and 2 threads the same bits, and clear errors for an
// unsupported architecture or matrix type.
//
// The bound: the engine's matrices take int8 activations (one scale per group of 32: the int8
// decode and the dequant-GEMM's default paradigm), as llama.cpp's CPU kernels do for these block
// types (activations on the q8_0 grid). So the yardstick is llama.cpp's arithmetic: a second
// double reference whose every matrix product first rounds its input to the q8_0 grid
// (d = max|x| / 127 per 32, x = d round(x / d)). The engine's worst logit error against the exact
// reference, over a model's prefill and decode steps, is at most twice that reference's (and
// both are printed). The K/V cache is fp16 in all three (the references round K and V the same way).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "../examples/llm/forward.hpp"
#include "../examples/llm/plan.hpp"
#include "../examples/llm/vocab.hpp"
#include "scaled_cases.hpp"

namespace {

// greedy steps are compared where the reference's top-2 margin exceeds this many logit rms
constexpr double margin_rms = 0.2;

// the weights of a tensor as doubles (llama.cpp's own dequantization)
std::vector<double> deq(const lutkit::gguf::tensor& t) {
  std::vector<float> f(std::size_t(t.n_elements()));
  const std::size_t K = std::size_t(t.ne[0]);
  for (std::size_t r = 0; r < std::size_t(t.n_rows()); ++r) {
    const auto row = t.row(r);
    lutkit::ggml::dequantize_row(t.type, row.data(), row.size(), f.data() + r * K, K);
  }
  return std::vector<double>(f.begin(), f.end());
}

struct ref_model {
  const llm::hparams& hp;
  const lutkit::gguf::file& F;
  std::vector<double> emb, out, out_norm;
  struct L {
    std::vector<double> an, fn, wq, wk, wv, wo, wg, wu, wd, bq, bk, bv, qn, kn, pa, pf;
  };
  std::vector<L> layers;
  std::vector<std::vector<double>> kc, vc;  // per layer [pos][kv_dim], rounded to fp16
  std::size_t pos = 0;
  bool q8 = false;  // matrix inputs rounded to the q8_0 grid (llama.cpp's CPU arithmetic)

  ref_model(const llm::hparams& h, const lutkit::gguf::file& f, bool q8_acts = false) : hp(h), F(f), q8(q8_acts) {
    emb = deq(F.get_tensor("token_embd.weight"));
    out = deq(F.find_tensor("output.weight") ? F.get_tensor("output.weight") : F.get_tensor("token_embd.weight"));
    out_norm = deq(F.get_tensor("output_norm.weight"));
    layers.resize(hp.n_layer);
    for (std::size_t l = 0; l < hp.n_layer; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      L& y = layers[l];
      y.an = deq(F.get_tensor(p + "attn_norm.weight"));
      y.fn = deq(F.get_tensor(p + "ffn_norm.weight"));
      y.wq = deq(F.get_tensor(p + "attn_q.weight"));
      y.wk = deq(F.get_tensor(p + "attn_k.weight"));
      y.wv = deq(F.get_tensor(p + "attn_v.weight"));
      y.wo = deq(F.get_tensor(p + "attn_output.weight"));
      y.wg = deq(F.get_tensor(p + "ffn_gate.weight"));
      y.wu = deq(F.get_tensor(p + "ffn_up.weight"));
      y.wd = deq(F.get_tensor(p + "ffn_down.weight"));
      if (hp.qkv_bias) {
        y.bq = deq(F.get_tensor(p + "attn_q.bias"));
        y.bk = deq(F.get_tensor(p + "attn_k.bias"));
        y.bv = deq(F.get_tensor(p + "attn_v.bias"));
      }
      if (hp.qk_norm) {
        y.qn = deq(F.get_tensor(p + "attn_q_norm.weight"));
        y.kn = deq(F.get_tensor(p + "attn_k_norm.weight"));
      }
      if (hp.post_norms) {
        y.pa = deq(F.get_tensor(p + "post_attention_norm.weight"));
        y.pf = deq(F.get_tensor(p + "post_ffw_norm.weight"));
      }
    }
    kc.resize(hp.n_layer);
    vc.resize(hp.n_layer);
  }
  std::vector<double> matvec(const std::vector<double>& W, std::vector<double> x, std::size_t M) const {
    const std::size_t K = x.size();
    if (q8)
      for (std::size_t g = 0; g < K; g += 32) {
        double amax = 0;
        for (std::size_t i = g; i < g + 32; ++i) amax = std::max(amax, std::fabs(x[i]));
        const double d = double(float(amax / 127));  // llama.cpp keeps d as fp16 ...
        const double dh = double(lutkit::f16_to_f32(lutkit::f32_to_f16(float(d))));  // ... in the block
        for (std::size_t i = g; i < g + 32; ++i) x[i] = d > 0 ? std::nearbyint(x[i] / d) * dh : 0.0;
      }
    std::vector<double> y(M, 0.0);
    for (std::size_t m = 0; m < M; ++m)
      for (std::size_t k = 0; k < K; ++k) y[m] += W[m * K + k] * x[k];
    return y;
  }
  static void rms(std::vector<double>& x, const double* w, std::size_t off, std::size_t n, double eps) {
    double ss = 0;
    for (std::size_t i = 0; i < n; ++i) ss += x[off + i] * x[off + i];
    const double r = 1.0 / std::sqrt(ss / double(n) + eps);
    for (std::size_t i = 0; i < n; ++i) x[off + i] = x[off + i] * r * w[i];
  }
  void rope(std::vector<double>& v, std::size_t off, std::size_t p, bool local) const {
    const std::size_t h = hp.n_rot / 2;
    const double base = local ? double(hp.rope_base_local) : double(hp.rope_base);
    const double scale = local ? 1.0 : double(hp.rope_scale);
    for (std::size_t i = 0; i < h; ++i) {
      const double th = double(p) / scale * std::pow(base, -2.0 * double(i) / double(hp.n_rot));
      const std::size_t a = hp.rope == llm::rope_style::pairs ? off + 2 * i : off + i;
      const std::size_t b = hp.rope == llm::rope_style::pairs ? off + 2 * i + 1 : off + i + h;
      const double x0 = v[a], x1 = v[b];
      v[a] = x0 * std::cos(th) - x1 * std::sin(th);
      v[b] = x0 * std::sin(th) + x1 * std::cos(th);
    }
  }
  // one token at the next position: its logits
  std::vector<double> step(int32_t tok) {
    const std::size_t E = hp.n_embd, hd = hp.head_dim, G = hp.n_head / hp.n_head_kv;
    std::vector<double> x(emb.begin() + std::ptrdiff_t(std::size_t(tok) * E), emb.begin() + std::ptrdiff_t(std::size_t(tok + 1) * E));
    for (auto& e : x) e *= double(hp.emb_scale);
    for (std::size_t l = 0; l < hp.n_layer; ++l) {
      L& y = layers[l];
      const bool local = hp.local(l);
      auto h = x;
      rms(h, y.an.data(), 0, E, hp.rms_eps);
      auto q = matvec(y.wq, h, hp.q_dim()), k = matvec(y.wk, h, hp.kv_dim()), v = matvec(y.wv, h, hp.kv_dim());
      if (hp.qkv_bias) {
        for (std::size_t i = 0; i < q.size(); ++i) q[i] += y.bq[i];
        for (std::size_t i = 0; i < k.size(); ++i) k[i] += y.bk[i], v[i] += y.bv[i];
      }
      for (std::size_t hh = 0; hh < hp.n_head; ++hh) {
        if (hp.qk_norm) rms(q, y.qn.data(), hh * hd, hd, hp.rms_eps);
        rope(q, hh * hd, pos, local);
      }
      for (std::size_t hh = 0; hh < hp.n_head_kv; ++hh) {
        if (hp.qk_norm) rms(k, y.kn.data(), hh * hd, hd, hp.rms_eps);
        rope(k, hh * hd, pos, local);
      }
      for (auto& e : k) e = lutkit::f16_to_f32(lutkit::f32_to_f16(float(e)));  // the fp16 cache
      for (auto& e : v) e = lutkit::f16_to_f32(lutkit::f32_to_f16(float(e)));
      kc[l].insert(kc[l].end(), k.begin(), k.end());
      vc[l].insert(vc[l].end(), v.begin(), v.end());
      std::vector<double> a(hp.q_dim(), 0.0);
      const std::size_t n = pos + 1, KD = hp.kv_dim();
      for (std::size_t hh = 0; hh < hp.n_head; ++hh) {
        const std::size_t g = hh / G;
        std::vector<double> s(n);
        double mx = -1e300;
        for (std::size_t j = 0; j < n; ++j) {
          double d = 0;
          for (std::size_t c = 0; c < hd; ++c) d += q[hh * hd + c] * kc[l][j * KD + g * hd + c];
          s[j] = d / std::sqrt(double(hd));
          if (local && pos - j >= hp.window) s[j] = -INFINITY;  // outside the window: p - w < k <= p
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (auto& e : s) sum += (e = std::exp(e - mx));
        for (std::size_t j = 0; j < n; ++j)
          for (std::size_t c = 0; c < hd; ++c) a[hh * hd + c] += s[j] / sum * vc[l][j * KD + g * hd + c];
      }
      auto o = matvec(y.wo, a, E);
      if (hp.post_norms) rms(o, y.pa.data(), 0, E, hp.rms_eps);
      for (std::size_t i = 0; i < E; ++i) x[i] += o[i];
      h = x;
      rms(h, y.fn.data(), 0, E, hp.rms_eps);
      auto gt = matvec(y.wg, h, hp.n_ff);
      const auto up = matvec(y.wu, h, hp.n_ff);
      for (std::size_t i = 0; i < gt.size(); ++i)
        gt[i] = (hp.gelu ? 0.5 * gt[i] * (1.0 + std::tanh(0.7978845608028654 * (gt[i] + 0.044715 * gt[i] * gt[i] * gt[i])))
                         : gt[i] / (1.0 + std::exp(-gt[i]))) *
                up[i];
      auto dn = matvec(y.wd, gt, E);
      if (hp.post_norms) rms(dn, y.pf.data(), 0, E, hp.rms_eps);
      for (std::size_t i = 0; i < E; ++i) x[i] += dn[i];
    }
    rms(x, out_norm.data(), 0, E, hp.rms_eps);
    ++pos;
    return matvec(out, x, hp.n_vocab);
  }
};

double rms_of(const std::vector<double>& r) {
  double s = 0;
  for (double e : r) s += e * e;
  return std::sqrt(s / double(r.size()));
}
// the worst |engine - reference| over the logits, in units of the reference's rms
double logit_err(const std::vector<float>& e, const std::vector<double>& r) {
  double w = 0;
  for (std::size_t i = 0; i < r.size(); ++i) w = std::max(w, std::fabs(double(e[i]) - r[i]));
  return w / rms_of(r);
}
std::size_t argmax(const std::vector<double>& r) { return std::size_t(std::max_element(r.begin(), r.end()) - r.begin()); }
int32_t argmax(const std::vector<float>& r) { return int32_t(std::max_element(r.begin(), r.end()) - r.begin()); }

std::vector<uint8_t> model_bytes(const std::string& arch, lutkit::ggml_type t, uint64_t seed) {
  lutkit::gguf::tiny_llama_options o;
  o.arch = arch;
  o.matrix_type = t;
  o.embedding_type = t;
  o.q4_k_m = t == lutkit::ggml_type::q4_k;  // Q4_K with Q6_K where llama.cpp's Q4_K_M puts it
  o.seed = seed;
  o.output_tensor = seed % 2 == 0;  // tied embeddings every other model
  if (arch == "gemma3") o.n_layer = 6, o.sliding_window = 8;  // 5 local layers and a global one
  return lutkit::gguf::tiny_llama(o).to_bytes();
}

}  // namespace

TEST_CASE("engine: prefill and greedy decode against the double reference, every architecture and type", "[engine]") {
  lutkit::thread_pool pool(2);
  double worst = 0;
  int steps_checked = 0, steps_margin = 0;
  uint64_t seed = 11;
  // every architecture with every type; a reduced run (LUTKIT_TEST_CASE_DIVISOR: emulated and
  // sanitizer runs) takes the pairs whose indices sum to a multiple of d = min(divisor, 4): each
  // type still meets 4 / d architectures (at least one), each architecture 12 / d types (with the
  // divisor itself, 8 or 12, the pairs with types 0-3 never summed to a multiple: those types were
  // left out of the emulated runs)
  const int d = std::min(lutkit_test::case_divisor(), 4);
  int ai = 0;
  for (const char* arch : {"llama", "qwen2", "qwen3", "gemma3"}) {
    int ti = 0;
    ++ai;
    for (auto t : {lutkit::ggml_type::q4_0, lutkit::ggml_type::q4_1, lutkit::ggml_type::q5_0, lutkit::ggml_type::q8_0, lutkit::ggml_type::iq4_nl,
                   lutkit::ggml_type::q4_k, lutkit::ggml_type::q3_k, lutkit::ggml_type::tq2_0, lutkit::ggml_type::tq1_0,
                   lutkit::ggml_type::q5_1, lutkit::ggml_type::q5_k, lutkit::ggml_type::q2_k}) {
      ++seed;
      if ((ai + ti++) % d != 0) continue;
      const auto bytes = model_bytes(arch, t, seed - 1);
      auto m = llm::load_model(lutkit::gguf::file(std::span<const uint8_t>(bytes)), &pool, false);
      ref_model ref(m->hp, m->file), rq(m->hp, m->file, true);
      llm::session s(*m, 64);
      double worst_here = 0, worst_q8 = 0;
      std::mt19937_64 rng(seed);
      std::vector<int32_t> prompt(12);
      for (auto& e : prompt) e = int32_t(rng() % m->hp.n_vocab);
      s.prefill(prompt, 5, &pool);  // chunks of 5, 5, 2: the dequant-GEMM, and decode_gemv for the last
      std::vector<double> r, r8;
      for (int32_t e : prompt) r = ref.step(e), r8 = rq.step(e);
      INFO("arch " << arch << " type " << lutkit::ggml_info(t).name);
      auto track = [&] {
        const double e = logit_err(s.logits, r);
        std::vector<float> f8(r8.begin(), r8.end());
        worst_here = std::max(worst_here, e);
        worst_q8 = std::max(worst_q8, logit_err(f8, r));
      };
      track();
      // 16 greedy steps (8 in a reduced run: positions to 20, past gemma3's window of 8); the
      // reference follows the engine's tokens (teacher forcing)
      const int greedy_steps = lutkit_test::case_divisor() > 1 ? 8 : 16;
      for (int step = 0; step < greedy_steps; ++step) {
        const int32_t tok = argmax(s.logits);
        const std::size_t rt = argmax(r);
        std::vector<double> sorted = r;
        std::nth_element(sorted.begin(), sorted.begin() + 1, sorted.end(), std::greater<double>());
        if (sorted[0] - sorted[1] > margin_rms * rms_of(r)) {
          INFO("step " << step << " engine token " << tok << " reference argmax " << rt);
          REQUIRE(std::size_t(tok) == rt);
          ++steps_margin;
        }
        ++steps_checked;
        s.forward(&tok, 1, &pool);
        r = ref.step(tok);
        r8 = rq.step(tok);
        track();
      }
      INFO("engine " << worst_here << ", q8_0-activation reference " << worst_q8 << " (of the logits' rms)");
      REQUIRE(worst_here <= 2 * worst_q8);
      worst = std::max(worst, worst_here / worst_q8);
      WARN("engine " << arch << " " << std::string(lutkit::ggml_info(t).name) << ": worst logit error " << worst_here
                     << " of the rms, llama.cpp's arithmetic " << worst_q8);
    }
  }
  WARN("engine: worst error / llama.cpp arithmetic's " << worst << "; " << steps_margin << " of " << steps_checked
                                                        << " greedy steps had a top-2 margin above " << margin_rms
                                                        << " rms and were compared");
}

TEST_CASE("engine: prefill of n then decode equals prefill of n + 1; 1 and 2 threads the same bits", "[engine]") {
  lutkit::thread_pool pool(2);
  const auto bytes = model_bytes("qwen3", lutkit::ggml_type::q4_0, 3);
  auto m = llm::load_model(lutkit::gguf::file(std::span<const uint8_t>(bytes)), &pool, false);
  std::vector<int32_t> prompt{5, 77, 300, 12, 9, 260, 41, 41, 7, 100};
  llm::session a(*m, 32), b(*m, 32);
  a.prefill(std::vector<int32_t>(prompt.begin(), prompt.end() - 1), 16, &pool);
  a.forward(&prompt.back(), 1, &pool);
  b.prefill(prompt, 16, &pool);
  ref_model ref(m->hp, m->file), rq(m->hp, m->file, true);
  std::vector<double> r, r8;
  for (int32_t e : prompt) r = ref.step(e), r8 = rq.step(e);
  const double e8 = logit_err(std::vector<float>(r8.begin(), r8.end()), r);
  const double ea = logit_err(a.logits, r), eb = logit_err(b.logits, r);
  INFO("prefill n + decode: " << ea << ", prefill n + 1: " << eb << ", llama.cpp's arithmetic " << e8);
  REQUIRE(ea <= 2 * e8);
  REQUIRE(eb <= 2 * e8);
  // the two caches hold the same positions: the next decode step of both near the reference
  const int32_t nxt = 17;
  a.forward(&nxt, 1, &pool);
  b.forward(&nxt, 1, &pool);
  r = ref.step(nxt);
  r8 = rq.step(nxt);
  const double f8 = logit_err(std::vector<float>(r8.begin(), r8.end()), r);
  REQUIRE(logit_err(a.logits, r) <= 2 * f8);
  REQUIRE(logit_err(b.logits, r) <= 2 * f8);
  // threads: prefill and 4 decode steps, bit for bit (the 2-thread decode under a profile, which
  // counts its passes and times each stage inside the pass's own time)
  llm::session s1(*m, 32), s2(*m, 32);
  s1.prefill(prompt, 4, nullptr);
  s2.prefill(prompt, 4, &pool);
  llm::step_profile prof;
  s2.work.prof = &prof;
  for (int i = 0; i < 4; ++i) {
    REQUIRE(std::memcmp(s1.logits.data(), s2.logits.data(), s1.logits.size() * 4) == 0);
    const int32_t t = argmax(s1.logits);
    s1.forward(&t, 1, nullptr);
    s2.forward(&t, 1, &pool);
  }
  REQUIRE(std::memcmp(s1.logits.data(), s2.logits.data(), s1.logits.size() * 4) == 0);
  CHECK(prof.passes == 4);
  double staged = 0;
  for (std::size_t i = 0; i < llm::stages; ++i) {
    INFO("stage " << llm::stage_name(llm::stage(i)));
    CHECK(prof.stage_s[i] > 0);
    staged += prof.stage_s[i];
  }
  CHECK(prof.passes_s >= staged);
}

TEST_CASE("engine: Q, K, V (and gate, up) on one set of LUT tables give the bits of separate applies", "[engine]") {
  // Q6_K and Q3_K: the LUT-GEMV is decode_gemv's best, so the tables are shared; Q8_0: the int8
  // decode, each matrix on its own; 1 .. 5 rows (5: the dequant-GEMM); 1 and 2 threads
  STATIC_REQUIRE(lutkit::best_decode_method<llm::q6_k_policy>() == lutkit::decode_method::lut_gemv);
  STATIC_REQUIRE(lutkit::best_decode_method<llm::q3_k_policy>() == lutkit::decode_method::lut_gemv);
  lutkit::thread_pool pool(2);
  for (auto type : {lutkit::ggml_type::q6_k, lutkit::ggml_type::q3_k, lutkit::ggml_type::q8_0}) {
    const auto bytes = model_bytes("llama", type, 8);
    auto m = llm::load_model(lutkit::gguf::file(std::span<const uint8_t>(bytes)), &pool, false);
    const llm::layer& L = m->layers[0];
    const std::size_t E = m->hp.n_embd;
    std::mt19937 rng(4);
    std::normal_distribution<float> nd;
    for (std::size_t n = 1; n <= 5; ++n)
      for (lutkit::thread_pool* p : {static_cast<lutkit::thread_pool*>(nullptr), &pool}) {
        std::vector<float> x(n * E);
        for (auto& v : x) v = nd(rng);
        std::vector<float> q(n * L.wq.M), k(n * L.wk.M), v(n * L.wv.M), q1(q.size()), k1(k.size()), v1(v.size());
        llm::apply_same_input({{&L.wq, q.data()}, {&L.wk, k.data()}, {&L.wv, v.data()}}, x.data(), n, p);
        L.wq.apply(x.data(), n, q1.data(), p);
        L.wk.apply(x.data(), n, k1.data(), p);
        L.wv.apply(x.data(), n, v1.data(), p);
        INFO("type " << int(type) << " rows " << n);
        CHECK(std::memcmp(q.data(), q1.data(), q.size() * 4) == 0);
        CHECK(std::memcmp(k.data(), k1.data(), k.size() * 4) == 0);
        CHECK(std::memcmp(v.data(), v1.data(), v.size() * 4) == 0);
        std::vector<float> g(n * L.w_gate.M), u(n * L.w_up.M), g1(g.size()), u1(u.size());
        llm::apply_same_input({{&L.w_gate, g.data()}, {&L.w_up, u.data()}}, x.data(), n, p);
        L.w_gate.apply(x.data(), n, g1.data(), p);
        L.w_up.apply(x.data(), n, u1.data(), p);
        CHECK(std::memcmp(g.data(), g1.data(), g.size() * 4) == 0);
        CHECK(std::memcmp(u.data(), u1.data(), u.size() * 4) == 0);
      }
  }
}

// prefill of 12 tokens and 8 greedy steps of m against the double reference: the worst logit
// error over the steps, and llama.cpp's arithmetic's (the q8_0-activation reference)
std::pair<double, double> run_against_reference(const llm::model& m, lutkit::thread_pool* pool) {
  ref_model ref(m.hp, m.file), rq(m.hp, m.file, true);
  llm::session s(m, 32);
  std::vector<int32_t> prompt{3, 90, 17, 250, 41, 8, 8, 133, 61, 5, 200, 77};
  s.prefill(prompt, 5, pool);
  std::vector<double> r, r8;
  for (int32_t e : prompt) r = ref.step(e), r8 = rq.step(e);
  double worst = 0, worst8 = 0;
  for (int step = 0;; ++step) {
    worst = std::max(worst, logit_err(s.logits, r));
    worst8 = std::max(worst8, logit_err(std::vector<float>(r8.begin(), r8.end()), r));
    if (step == 8) break;
    const int32_t tok = argmax(s.logits);
    s.forward(&tok, 1, pool);
    r = ref.step(tok);
    r8 = rq.step(tok);
  }
  return {worst, worst8};
}

TEST_CASE("engine: decode kernels and prefill paradigms from a plan: within the defaults' error, deterministic, saved and loaded", "[engine][plan]") {
  lutkit::thread_pool pool(2);
  // fixed costs (the shape of a 2-core host's), no kernel calibration: the plan is a function of
  // the file and these numbers
  lutkit::plan::calibration cal;
  cal.costs.name = "test";
  cal.costs.cores = 2;
  cal.costs.dram_bps = 2e10;
  cal.costs.core_read_bps = 1.2e10;
  cal.costs.l1_bps = 2e11;
  cal.costs.l2_bps = 8e10;
  cal.costs.int8_macs_per_s = 2e11;
  cal.costs.fp32_fmas_per_s = 5e10;
  cal.costs.bf16_macs_per_s = 5e10;
  cal.costs.lookups_per_s = 1e11;
  cal.costs.fork_join_s = 2e-6;
  // Q4_K_M's mix (the int8 decode and the LUT-GEMV), Q4_0, Q3_K; reduced runs (emulated,
  // sanitizers) the first
  int ti = 0;
  for (auto type : {lutkit::ggml_type::q4_k, lutkit::ggml_type::q4_0, lutkit::ggml_type::q3_k}) {
    if (ti++ > 0 && lutkit_test::case_divisor() > 1) break;
    INFO("type " << lutkit::ggml_info(type).name);
    const auto bytes = model_bytes("llama", type, 21);
    auto m = llm::load_model(lutkit::gguf::file(std::span<const uint8_t>(bytes)), &pool, false);
    const auto rows = llm::plan_model(*m, cal, false);
    REQUIRE(!rows.empty());
    std::size_t counted = 0;
    for (const auto& r : rows) {
      INFO("class " << r.first << " " << r.M << " x " << r.K << ": " << lutkit::decode_method_name(r.method));
      CHECK(r.method != lutkit::decode_method::best);
      CHECK(r.error <= r.default_error);
      CHECK((r.threads >= 1 && r.threads <= 2));
      // a prompt chunk's paradigm: within the default's error on the same activations
      INFO("prefill " << lutkit::act_name(r.act) << " " << r.prefill_error << ", default " << lutkit::act_name(r.default_act)
                      << " " << r.default_prefill_error);
      CHECK(r.prefill_error <= r.default_prefill_error);
      CHECK(r.default_prefill_error > 0);
      CHECK((r.prefill_threads >= 1 && r.prefill_threads <= 2));
      CHECK(r.prefill_modelled_s > 0);
      counted += r.count;
    }
    CHECK(counted == llm::all_matrices(*m).size());
    for (const llm::matrix* x : llm::all_matrices(*m)) {
      CHECK(x->method_valid(x->method));
      CHECK(x->prefill_planned);
      CHECK(x->act_valid(x->act));
    }
    // deterministic: planned again, the same choices and errors
    const auto again = llm::plan_model(*m, cal, false);
    REQUIRE(again.size() == rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      CHECK(again[i].method == rows[i].method);
      CHECK(again[i].threads == rows[i].threads);
      CHECK(again[i].error == rows[i].error);
      CHECK(again[i].act == rows[i].act);
      CHECK(again[i].prefill_threads == rows[i].prefill_threads);
      CHECK(again[i].prefill_error == rows[i].prefill_error);
    }
    // the decode step's model: the sampler's draw is ar_sample's pass over one row of the
    // vocabulary on the pool's threads, added to the matrices and attention; nothing calibrated
    {
      const auto kernels = cal.costs.kernels.size();
      const auto bare = llm::model_decode_step(*m, cal, 96, nullptr, false);
      CHECK(bare.sampling_s == 0);
      CHECK(bare.matrices_s > 0);
      CHECK(bare.attention_s > 0);
      lutkit::ar_params greedy, top_p, draw;
      greedy.temperature = 0.f;
      top_p.temperature = 0.8f, top_p.top_p = 0.9f;
      draw.temperature = 0.8f;
      // (at the rates above every pass is read-bound; at a fifth of the fp32 rate the draw's
      // exponential per logit is not, and costs more than greedy's maxima)
      lutkit::plan::calibration slow = cal;
      slow.costs.fp32_fmas_per_s = 1e10;
      for (auto* c : {&cal, &slow})
        for (const lutkit::ar_params* sp : {&greedy, &top_p, &draw}) {
          const auto st = llm::model_decode_step(*m, *c, 96, sp, false), b = llm::model_decode_step(*m, *c, 96, nullptr, false);
          const auto op = lutkit::plan::describe_ar_sampling(*sp, m->hp.n_vocab);
          INFO("pass " << lutkit::plan::sampling_pass_name(op.pass) << ", fp32 rate " << c->costs.fp32_fmas_per_s);
          CHECK(st.matrices_s == b.matrices_s);
          CHECK(st.attention_s == b.attention_s);
          CHECK(st.sampling_s == lutkit::plan::model_sampling(c->costs, op, c->costs.cores).total_s);
          CHECK(st.total_s() == st.matrices_s + st.attention_s + st.sampling_s);
        }
      CHECK(llm::model_decode_step(*m, slow, 96, &draw, false).sampling_s >
            llm::model_decode_step(*m, slow, 96, &greedy, false).sampling_s);
      // by stage: the matrices' stages sum to the matrices, the attention's is the attention;
      // a layer's Q, K, V cost more than its output projection (the same K, more rows)
      double matrices = 0;
      for (std::size_t i = 0; i < llm::stages; ++i)
        if (llm::stage(i) != llm::stage::attention) matrices += bare.stage_s[i];
      CHECK(matrices == Approx(bare.matrices_s).epsilon(1e-12));
      CHECK(bare.stage_s[std::size_t(llm::stage::attention)] == bare.attention_s);
      for (std::size_t i = 0; i < llm::stages; ++i) CHECK(bare.stage_s[i] > 0);
      CHECK(bare.stage_s[std::size_t(llm::stage::qkv)] > bare.stage_s[std::size_t(llm::stage::o)]);
      CHECK(cal.costs.kernels.size() == kernels);
    }
    // the planned model against the reference, as the default one is held
    const auto [e, e8] = run_against_reference(*m, &pool);
    INFO("planned: " << e << ", llama.cpp's arithmetic " << e8);
    CHECK(e <= 2 * e8);
    // saved and loaded onto a fresh load: the same method and threads per matrix
    const std::string path = "lutkit_engine_plan_" + std::string(lutkit::ggml_info(type).name) + ".txt";
    llm::save_plan(rows, path);
    auto m2 = llm::load_model(lutkit::gguf::file(std::span<const uint8_t>(bytes)), &pool, false);
    llm::load_plan(*m2, path, 2);
    const auto a = llm::all_matrices(*m), b = llm::all_matrices(*m2);
    for (std::size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i]->method == b[i]->method);
      CHECK(a[i]->threads == b[i]->threads);
      CHECK(b[i]->prefill_planned);
      CHECK(a[i]->act == b[i]->act);
      CHECK(a[i]->prefill_threads == b[i]->prefill_threads);
    }
    // every matrix forced to a method other than the defaults, on one thread: the forward pass
    // runs them and stays within the bound
    // (and every prompt chunk to a paradigm other than the default, on one thread)
    for (const auto& [forced, forced_act] : {std::pair{"bf16", "fp32"}, std::pair{"fused_dq", "bf16"}}) {
      {
        std::ofstream f(path);
        for (const auto& r : rows) f << r.type << ' ' << r.M << ' ' << r.K << ' ' << forced << " 1 " << forced_act << " 1\n";
      }
      auto m3 = llm::load_model(lutkit::gguf::file(std::span<const uint8_t>(bytes)), &pool, false);
      llm::load_plan(*m3, path, 2);
      for (const llm::matrix* x : llm::all_matrices(*m3)) {
        CHECK(std::string(lutkit::decode_method_name(x->method)) == forced);
        CHECK(std::string(lutkit::act_name(x->act)) == forced_act);
        CHECK(x->prefill_threads == 1);
      }
      {  // the forced kernels run: one-token steps give other bits than the defaults', and a prompt
         // chunk other bits than the same decode methods with the default paradigm
        auto m0 = llm::load_model(lutkit::gguf::file(std::span<const uint8_t>(bytes)), &pool, false);
        llm::session a(*m0, 8), b(*m3, 8);
        const std::vector<int32_t> toks{7, 19, 3};
        a.prefill(toks, 1, &pool);
        b.prefill(toks, 1, &pool);
        CHECK(std::memcmp(a.logits.data(), b.logits.data(), a.logits.size() * 4) != 0);
        auto m4 = llm::load_model(lutkit::gguf::file(std::span<const uint8_t>(bytes)), &pool, false);
        const auto m3s = llm::all_matrices(*m3), m4s = llm::all_matrices(*m4);
        for (std::size_t i = 0; i < m4s.size(); ++i) m4s[i]->method = m3s[i]->method, m4s[i]->threads = 1;
        llm::session c(*m4, 8), d(*m3, 8);
        const std::vector<int32_t> chunk{7, 19, 3, 11, 5, 2};
        c.prefill(chunk, 6, &pool);
        d.prefill(chunk, 6, &pool);
        CHECK(std::memcmp(c.logits.data(), d.logits.data(), c.logits.size() * 4) != 0);
      }
      const auto [ef, ef8] = run_against_reference(*m3, &pool);
      INFO("forced " << forced << ": " << ef << ", llama.cpp's arithmetic " << ef8);
      CHECK(ef <= 2 * ef8);
    }
    // bad plans: each an error naming what is wrong
    auto bad = [&](const std::string& text, const char* says) {
      {
        std::ofstream f(path);
        f << text;
      }
      auto mb = llm::load_model(lutkit::gguf::file(std::span<const uint8_t>(bytes)), &pool, false);
      REQUIRE_THROWS_WITH(llm::load_plan(*mb, path, 2), Catch::Contains(says));
    };
    std::string all;
    for (const auto& r : rows) all += r.type + " " + std::to_string(r.M) + " " + std::to_string(r.K) + " int8 1\n";
    const auto& r0 = rows.front();
    const std::string head = r0.type + " " + std::to_string(r0.M) + " " + std::to_string(r0.K);
    bad(all.substr(all.find('\n') + 1), "has no line for");                    // a class missing
    bad(all + head + " int8 1\n", "given twice");                              // a class twice
    bad(all + "q4_0 7 64 int8 1\n", "which this model does not have");         // a class the model lacks
    bad(head + " fastest 1\n", "unknown decode method");                       // not a method
    bad(head + " int8 3\n", "threads");                                       // more threads than the pool
    bad(head + " int8\n", "expected <type> <M> <K> <method> <threads>");      // a short line
    bad(head + " int8 1 int4 1\n", "unknown activation paradigm");           // not a paradigm
    bad(head + " int8 1 fp32\n", "expected <type> <M> <K> <method> <threads>");  // no prefill threads
    bad(head + " int8 1 fp32 3\n", "threads");                               // more threads than the pool
    bad(head + " int8 1 fp32 1 x\n", "expected");                             // a field too many
    {  // a line of five fields: the prefill keeps its default paradigm over the pool
      {
        std::ofstream f(path);
        f << all;
      }
      auto m5 = llm::load_model(lutkit::gguf::file(std::span<const uint8_t>(bytes)), &pool, false);
      llm::load_plan(*m5, path, 2);
      for (const llm::matrix* x : llm::all_matrices(*m5)) CHECK(!x->prefill_planned);
    }
    std::remove(path.c_str());
  }
}

TEST_CASE("engine: unsupported architectures and matrix types are errors naming them", "[engine]") {
  {
    const auto bytes = model_bytes("gemma7", lutkit::ggml_type::q4_0, 1);  // not an architecture
    CHECK_THROWS_WITH(llm::load_model(lutkit::gguf::file(std::span<const uint8_t>(bytes)), nullptr, false),
                      Catch::Contains("gemma7"));
  }
  {
    lutkit::gguf::tiny_llama_options o;
    o.matrix_type = lutkit::ggml_type::f16;  // (every block type is packed; float matrices are not)
    const auto bytes = lutkit::gguf::tiny_llama(o).to_bytes();
    CHECK_THROWS_WITH(llm::load_model(lutkit::gguf::file(std::span<const uint8_t>(bytes)), nullptr, false),
                      Catch::Contains("f16") && Catch::Contains("attn_q"));
  }
  {
    const auto bytes = model_bytes("llama", lutkit::ggml_type::q8_0, 2);
    auto m = llm::load_model(lutkit::gguf::file(std::span<const uint8_t>(bytes)), nullptr, false);
    llm::session s(*m, 8);
    const int32_t bad = int32_t(m->hp.n_vocab);
    CHECK_THROWS_WITH(s.forward(&bad, 1, nullptr), Catch::Contains("outside the vocabulary"));
    std::vector<int32_t> many(9, 1);
    CHECK_THROWS_WITH(s.prefill(many, 4, nullptr), Catch::Contains("exceed the context"));
  }
}

TEST_CASE("engine: the pass's SiLU / GELU-tanh gate and RMSNorm against double", "[engine]") {
  // every 1/256 over [-100, 100] (both tails of the exponent's clamp), odd lengths (vector tails),
  // the up projection's factor random
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uu(-2.f, 2.f);
  for (const bool gelu : {false, true}) {
    const std::size_t n = 51201;
    std::vector<float> g(n), u(n), g0;
    for (std::size_t i = 0; i < n; ++i) g[i] = float(int(i) - int(n / 2)) / 256.f, u[i] = uu(rng);
    g0 = g;
    llm::gated_activation(g.data(), u.data(), n, gelu);
    double worst = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double x = g0[i];
      const double a = gelu ? 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
                            : x / (1.0 + std::exp(-x));
      const double r = a * double(u[i]);
      // relative to the value, or to 1e-3 * |u| where the value is smaller (the negative tail)
      worst = std::max(worst, std::abs(double(g[i]) - r) / std::max(std::abs(r), 1e-3 * std::abs(double(u[i]))));
    }
    INFO((gelu ? "GELU-tanh" : "SiLU") << ": worst relative error " << worst);
    CHECK(worst < 4e-6);
  }
  float nan_in[3] = {NAN, 1.f, -1.f}, ones[3] = {1.f, NAN, 1.f};
  llm::gated_activation(nan_in, ones, 3, false);
  CHECK(std::isnan(nan_in[0]));
  CHECK(std::isnan(nan_in[1]));
  CHECK(nan_in[2] == Approx(-1.0 / (1.0 + std::exp(1.0))).epsilon(1e-6));

  for (const std::size_t n : {1, 3, 64, 2049}) {
    std::vector<float> x(n), w(n), y(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = uu(rng) * 100.f, w[i] = uu(rng);
    llm::rms_norm(x.data(), w.data(), y.data(), n, 1e-5f);
    double ss = 0;
    for (float v : x) ss += double(v) * double(v);
    const double r = 1.0 / std::sqrt(ss / double(n) + 1e-5);
    for (std::size_t i = 0; i < n; ++i) CHECK(y[i] == Approx(double(x[i]) * r * double(w[i])).epsilon(1e-6));
  }
}

TEST_CASE("engine: detokenization of SentencePiece and byte-level BPE pieces", "[engine]") {
  for (const char* arch : {"llama", "qwen2"}) {
    const auto bytes = model_bytes(arch, lutkit::ggml_type::q8_0, 4);
    lutkit::gguf::file f{std::span<const uint8_t>(bytes)};
    const llm::vocab v = llm::vocab::from(f);
    INFO(arch);
    if (std::string(arch) == "llama") {
      REQUIRE(v.k == llm::vocab::kind::spm);
      REQUIRE(v.piece(3 + 'A') == "A");    // <0x41>
      REQUIRE(v.piece(3 + 10) == "\n");    // <0x0A>
      REQUIRE(v.piece(300) == " w300");    // "▁w300"
      REQUIRE(v.piece(1).empty());         // <s>, control
    } else {
      REQUIRE(v.k == llm::vocab::kind::bpe);
      for (int b = 0; b < 256; ++b) REQUIRE(v.piece(3 + b) == std::string(1, char(b)));
      REQUIRE(v.piece(300) == " w300");    // "Ġw300"
    }
  }
}

TEST_CASE("engine: Best-of-N batch over a shared prompt against the reference per sequence", "[engine]") {
  lutkit::thread_pool pool(2);
  for (const char* arch : {"llama", "gemma3"}) {
    const auto bytes = model_bytes(arch, lutkit::ggml_type::q4_0, 21);
    auto m = llm::load_model(lutkit::gguf::file(std::span<const uint8_t>(bytes)), &pool, false);
    const std::vector<int32_t> prompt{9, 33, 270, 5, 5, 101, 64, 12, 300, 7, 2, 88};
    llm::session s(*m, prompt.size());
    s.prefill(prompt, 8, &pool);
    const std::size_t B = 3, steps = 10;
    llm::batch bt(s, B, steps);
    // sequence b's tokens: a fixed pseudo-random walk of its own
    std::vector<std::vector<int32_t>> toks(B);
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t i = 0; i < steps; ++i) toks[b].push_back(int32_t((b * 97 + i * 31 + 5) % m->hp.n_vocab));
    std::vector<ref_model> ref, rq;
    for (std::size_t b = 0; b < B; ++b) {
      ref.emplace_back(m->hp, m->file);
      rq.emplace_back(m->hp, m->file, true);
      for (int32_t e : prompt) ref[b].step(e), rq[b].step(e);
    }
    std::vector<double> worst(B, 0.0), worst8(B, 0.0);
    for (std::size_t i = 0; i < steps; ++i) {
      std::vector<int32_t> step_toks(B);
      for (std::size_t b = 0; b < B; ++b) step_toks[b] = toks[b][i];
      const auto& lg = bt.step(step_toks.data(), &pool);
      for (std::size_t b = 0; b < B; ++b) {
        const auto r = ref[b].step(step_toks[b]), r8 = rq[b].step(step_toks[b]);
        const std::vector<float> mine(lg.begin() + std::ptrdiff_t(b * m->hp.n_vocab),
                                      lg.begin() + std::ptrdiff_t((b + 1) * m->hp.n_vocab));
        worst[b] = std::max(worst[b], logit_err(mine, r));
        worst8[b] = std::max(worst8[b], logit_err(std::vector<float>(r8.begin(), r8.end()), r));
      }
    }
    for (std::size_t b = 0; b < B; ++b) {
      INFO(arch << " sequence " << b << ": engine " << worst[b] << ", llama.cpp's arithmetic " << worst8[b]);
      REQUIRE(worst[b] <= 2 * worst8[b]);
    }
  }
}
