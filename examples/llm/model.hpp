// lutkit example engine — the model: hyperparameters read from a GGUF file's metadata, and its
// weights: every matrix packed into a lutkit blob (in parallel), norms and biases as float
// vectors, the token embedding kept in the file and dequantized a row at a time.
//
// Architectures: `llama` (Llama 2 / 3.x, Mistral, TinyLlama), `qwen2` (biases on Q, K, V),
// `qwen3` (per-head RMSNorm of q and k), `gemma3` (5 local : 1 global layers, the local ones a
// sliding window with their own RoPE base, q / k norms, post-attention and post-FFN norms,
// GELU-tanh gated MLP, the embedding scaled by sqrt(n_embd)). Matrix types: Q4_0, Q4_1, Q5_0,
// Q5_1, Q8_0, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, TQ2_0, TQ1_0 (the llama.cpp blocks lutkit packs in place; Q4_K_M files mix
// Q4_K and Q6_K); norms, biases and the embedding in
// any type lutkit dequantizes. Any other architecture or matrix type is an error naming it.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <lutkit/instances.hpp>
#include <lutkit/lutkit.hpp>
#include <lutkit/plan/chooser.hpp>

namespace llm {

// the engine's own argument check: throws std::runtime_error with the parts of the message
template <class... A>
void require(bool ok, const A&... parts) {
  if (ok) return;
  std::ostringstream os;
  (os << ... << parts);
  throw std::runtime_error(os.str());
}

// the policies of the three block types (group<32>: one llama.cpp block per group)
using q4_0_policy = lutkit::policy<lutkit::fmt::uint_sym<4>, lutkit::group<32>>;
using q8_0_policy = lutkit::policy<lutkit::fmt::uint_sym<8>, lutkit::group<32>>;
using iq4_nl_policy = lutkit::policy<lutkit::fmt::codebook4<lutkit::book::iq4_nl>, lutkit::group<32>>;
using q4_1_policy = lutkit::policy<lutkit::fmt::q4_1, lutkit::group<32>>;
using q5_0_policy = lutkit::policy<lutkit::fmt::uint_sym<5>, lutkit::group<32>>;
// the K-quants: one group a sub-block, int8 codes times fp32 super-scales (quant/kquant.hpp)
using q4_k_policy = lutkit::policy<lutkit::fmt::q4_k, lutkit::group<32>>;
using q6_k_policy = lutkit::policy<lutkit::fmt::q6_k, lutkit::group<16>>;
using q3_k_policy = lutkit::policy<lutkit::fmt::q3_k, lutkit::group<16>>;
using q5_k_policy = lutkit::policy<lutkit::fmt::q5_k, lutkit::group<32>>;
using q2_k_policy = lutkit::policy<lutkit::fmt::q2_k, lutkit::group<16>>;
using q5_1_policy = lutkit::policy<lutkit::fmt::q5_1, lutkit::group<32>>;
// TQ2_0 and TQ1_0 (BitNet b1.58): codes 0..2 with zero 1 and one scale per 256
using tq_policy = lutkit::policy<lutkit::fmt::uint_asym<2>, lutkit::group<256>>;
}  // namespace llm

// Each policy's kernels (decode_gemv, dequant_gemm and what they call) are compiled once, in
// kernels_a.cpp and kernels_b.cpp; every other translation unit sees them extern
// (lutkit/instances.hpp). An engine that includes this header from many files compiles them once.
#define LLM_EACH_POLICY(X)                                                                        \
  X(llm::q4_0_policy) X(llm::q8_0_policy) X(llm::iq4_nl_policy) X(llm::q4_1_policy) X(llm::q5_0_policy) \
  X(llm::q5_1_policy) X(llm::q4_k_policy) X(llm::q6_k_policy) X(llm::q3_k_policy) X(llm::q5_k_policy)   \
  X(llm::q2_k_policy) X(llm::tq_policy)
LLM_EACH_POLICY(LUTKIT_EXTERN_DQ)
// the policies the LUT-GEMV serves (linear in their bits): their tables are shared by the
// matrices that read one input (apply_same_input below)
#define LLM_EACH_LUT_POLICY(X)                                                                      \
  X(llm::q4_0_policy) X(llm::q5_0_policy) X(llm::q5_1_policy) X(llm::q6_k_policy) X(llm::q3_k_policy) \
  X(llm::q5_k_policy) X(llm::q2_k_policy) X(llm::tq_policy)
LLM_EACH_LUT_POLICY(LUTKIT_EXTERN_LUT)

namespace llm {

enum class arch { llama, qwen2, qwen3, gemma3 };
enum class rope_style { pairs, halves };  // llama: adjacent pairs (2i, 2i+1); neox: (i, i + d/2)

struct hparams {
  arch a = arch::llama;
  std::string arch_name;
  std::size_t n_vocab = 0, n_embd = 0, n_layer = 0, n_ff = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_rot = 0;
  std::size_t n_ctx_train = 0;
  float rms_eps = 1e-5f, rope_base = 10000.f;
  rope_style rope = rope_style::pairs;
  bool qkv_bias = false, qk_norm = false;
  // gemma3: post-attention / post-FFN norms, GELU-tanh instead of SiLU, embedding scale, local
  // layers (il % swa_pattern < swa_pattern - 1) with a window and their own RoPE base; the
  // global layers' positions divided by rope_scale (linear RoPE scaling)
  bool post_norms = false, gelu = false;
  float emb_scale = 1.f;
  std::size_t swa_pattern = 0, window = 0;
  float rope_base_local = 10000.f, rope_scale = 1.f;
  bool local(std::size_t il) const { return swa_pattern > 0 && il % swa_pattern < swa_pattern - 1; }
  std::size_t q_dim() const { return n_head * head_dim; }
  std::size_t kv_dim() const { return n_head_kv * head_dim; }
};

inline hparams read_hparams(const lutkit::gguf::file& f) {
  hparams h;
  h.arch_name = std::string(f.get_string("general.architecture"));
  if (h.arch_name == "llama") {
    h.a = arch::llama;
  } else if (h.arch_name == "qwen2") {
    h.a = arch::qwen2;
    h.rope = rope_style::halves;
    h.qkv_bias = true;
  } else if (h.arch_name == "qwen3") {
    h.a = arch::qwen3;
    h.rope = rope_style::halves;
    h.qk_norm = true;
  } else if (h.arch_name == "gemma3") {
    h.a = arch::gemma3;
    h.rope = rope_style::halves;
    h.qk_norm = h.post_norms = h.gelu = true;
    h.swa_pattern = 6;
  } else {
    require(false, "llm: architecture '", h.arch_name, "' is not supported (llama, qwen2, qwen3, gemma3)");
  }
  const std::string p = h.arch_name + ".";
  auto u = [&](const std::string& k) { return std::size_t(f.get(p + k).to_uint()); };
  auto uo = [&](const std::string& k, std::size_t dflt) {
    const auto v = f.find(p + k);
    return v ? std::size_t(v->to_uint()) : dflt;
  };
  auto fo = [&](const std::string& k, float dflt) {
    const auto v = f.find(p + k);
    return v ? float(v->to_double()) : dflt;
  };
  h.n_embd = u("embedding_length");
  h.n_layer = u("block_count");
  h.n_ff = u("feed_forward_length");
  h.n_head = u("attention.head_count");
  h.n_head_kv = uo("attention.head_count_kv", h.n_head);
  h.n_ctx_train = uo("context_length", 0);
  require(h.n_head > 0 && h.n_head_kv > 0 && h.n_head % h.n_head_kv == 0, "llm: head counts ", h.n_head, " / ",
          h.n_head_kv, " are not a multiple of each other");
  h.head_dim = uo("attention.key_length", h.n_embd / h.n_head);
  require(uo("attention.value_length", h.head_dim) == h.head_dim, "llm: key and value head sizes differ");
  h.n_rot = uo("rope.dimension_count", h.head_dim);
  require(h.n_rot <= h.head_dim && h.n_rot % 2 == 0, "llm: rope.dimension_count ", h.n_rot, " does not fit the head");
  h.rms_eps = fo("attention.layer_norm_rms_epsilon", 1e-5f);
  h.rope_base = fo("rope.freq_base", 10000.f);
  if (h.a == arch::gemma3) {
    h.emb_scale = float(std::sqrt(double(h.n_embd)));
    h.window = u("attention.sliding_window");
    require(h.window > 0, "llm: gemma3.attention.sliding_window is 0");
    const float factor = fo("rope.scaling.factor", 1.f);
    require(factor > 0.f, "llm: rope.scaling.factor must be > 0");
    h.rope_scale = factor;
  }
  const lutkit::gguf::tensor& emb = f.get_tensor("token_embd.weight");
  h.n_vocab = std::size_t(emb.ne[1]);
  require(emb.ne[0] == h.n_embd, "llm: token_embd.weight rows are ", emb.ne[0], " wide, n_embd is ", h.n_embd);
  return h;
}

template <class T>
struct policy_of;
template <class P>
struct policy_of<lutkit::packed_weights<P>> {
  using type = P;
};

// A weight matrix of M output rows x K inputs as a lutkit blob, applied to N activation rows:
// decode_gemv (the method decode_method::best picks for the policy, or its plan's) for a few rows,
// the dequant-GEMM (its default activation paradigm, or its plan's) for a prompt chunk.
struct matrix {
  std::string name;
  std::size_t M = 0, K = 0;
  lutkit::ggml_type type = lutkit::ggml_type::f32;
  std::variant<std::monostate, lutkit::packed_weights<q4_0_policy>, lutkit::packed_weights<q8_0_policy>,
               lutkit::packed_weights<iq4_nl_policy>, lutkit::packed_weights<q4_1_policy>,
               lutkit::packed_weights<tq_policy>, lutkit::packed_weights<q4_k_policy>,
               lutkit::packed_weights<q6_k_policy>, lutkit::packed_weights<q5_0_policy>,
               lutkit::packed_weights<q3_k_policy>, lutkit::packed_weights<q5_k_policy>,
               lutkit::packed_weights<q2_k_policy>, lutkit::packed_weights<q5_1_policy>>
      w;

  // one activation row's decode: the method and threads of a plan (examples/llm/plan.hpp), or
  // decode_method::best over the engine's pool (threads 0)
  lutkit::decode_method method = lutkit::decode_method::best;
  int threads = 0;
  // a prompt chunk's dequant-GEMM: the activation paradigm and threads of a plan, or the policy's
  // default_act over the engine's pool (prefill_planned false)
  bool prefill_planned = false;
  lutkit::act_type act = lutkit::act_type::int8_group;
  int prefill_threads = 0;

  static constexpr std::size_t gemv_rows = 4;  // N above this: the dequant-GEMM

  // the method and pool one decode of N rows runs with
  lutkit::decode_method method_for(std::size_t N) const { return N == 1 ? method : lutkit::decode_method::best; }
  lutkit::thread_pool* pool_for(std::size_t N, lutkit::thread_pool* pool) const {
    return N == 1 && threads == 1 ? nullptr : pool;
  }
  // f.template operator()<P>() for the matrix's policy P (false for no matrix)
  template <class F>
  bool on_policy(F&& f) const {
    return std::visit(
        [&](const auto& pw) -> bool {
          using T = std::decay_t<decltype(pw)>;
          if constexpr (std::is_same_v<T, std::monostate>)
            return false;
          else
            return f.template operator()<typename policy_of<T>::type>();
        },
        w);
  }
  // whether decode_gemv serves this matrix's policy by method m at one row on this CPU
  bool method_valid(lutkit::decode_method m) const {
    return on_policy([&]<class P>() {
      const auto v = lutkit::plan::valid_decode_methods<P>(1);
      return std::find(v.begin(), v.end(), m) != v.end();
    });
  }
  // whether dequant_gemm serves this matrix's policy by paradigm a on this CPU
  bool act_valid(lutkit::act_type a) const {
    return on_policy([&]<class P>() {
      const auto v = lutkit::plan::valid_prefill_acts<P>();
      return std::find(v.begin(), v.end(), a) != v.end();
    });
  }

  void apply(const float* x, std::size_t N, float* y, lutkit::thread_pool* pool) const {
    std::visit(
        [&](const auto& pw) {
          using T = std::decay_t<decltype(pw)>;
          if constexpr (!std::is_same_v<T, std::monostate>) {
            using P = typename policy_of<T>::type;
            if (N <= gemv_rows)
              lutkit::decode_gemv(pw, x, N, K, y, method_for(N), 0, 0, pool_for(N, pool));
            else
              lutkit::dequant_gemm(pw, x, N, K, y, prefill_planned ? act : lutkit::default_act<P>(), 0, 0,
                                   prefill_planned && prefill_threads == 1 ? nullptr : pool);
          }
        },
        w);
  }
  std::size_t bytes() const {
    return std::visit(
        [](const auto& pw) -> std::size_t {
          if constexpr (std::is_same_v<std::decay_t<decltype(pw)>, std::monostate>)
            return 0;
          else
            return pw.size_bytes();
        },
        w);
  }
};

// y[i] = ms[i] x for matrices that read the same N activation rows (Q, K and V; gate and up).
// Where they hold one policy and each one's method for N rows (its plan's, else decode_gemv's
// best) is the LUT-GEMV on the same threads, the activations' tables are built once and every
// matrix reads them (the bits of apply: the same tables, the same kernel); otherwise each matrix
// runs apply.
inline void apply_same_input(std::initializer_list<std::pair<const matrix*, float*>> ms, const float* x,
                             std::size_t N, lutkit::thread_pool* pool) {
  const matrix& first = *ms.begin()->first;
  bool one_policy = N <= matrix::gemv_rows;
  for (const auto& [m, y] : ms) one_policy = one_policy && m->w.index() == first.w.index() && m->K == first.K;
  const bool shared = one_policy && std::visit(
                                        [&](const auto& pw0) -> bool {
                                          using T = std::decay_t<decltype(pw0)>;
                                          if constexpr (std::is_same_v<T, std::monostate>) {
                                            return false;
                                          } else {
                                            using P = typename policy_of<T>::type;
                                            if constexpr (!P::lut_gemv_capable) {
                                              return false;
                                            } else {
                                              for (const auto& [m, y] : ms) {
                                                const auto mm = m->method_for(N);
                                                if ((mm == lutkit::decode_method::best ? lutkit::best_decode_method<P>(N) : mm) !=
                                                        lutkit::decode_method::lut_gemv ||
                                                    m->pool_for(N, pool) != first.pool_for(N, pool))
                                                  return false;
                                              }
                                              const auto t = lutkit::build_tables<P>(x, N, first.K);
                                              for (const auto& [m, y] : ms)
                                                lutkit::lut_gemv(std::get<T>(m->w), t, y, 0, first.pool_for(N, pool));
                                              return true;
                                            }
                                          }
                                        },
                                        first.w);
  if (!shared)
    for (const auto& [m, y] : ms) m->apply(x, N, y, pool);
}

// the blocks of tensor t packed as a matrix (M = ne[1] rows of K = ne[0])
inline matrix pack_matrix(const lutkit::gguf::tensor& t, lutkit::thread_pool* pool) {
  using lutkit::ggml_type;
  matrix m;
  m.name = std::string(t.name);
  m.type = t.type;
  llm::require(t.n_dims == 2, "llm: tensor '", t.name, "' is not a matrix");
  m.K = std::size_t(t.ne[0]);
  m.M = std::size_t(t.ne[1]);
  const void* b = t.data;
  const std::size_t nb = std::size_t(t.n_bytes);
  switch (t.type) {
    case ggml_type::q4_0: m.w = lutkit::pack_q4_0<q4_0_policy>(b, m.M, m.K, nb, pool); break;
    case ggml_type::q8_0: m.w = lutkit::pack_q8_0<q8_0_policy>(b, m.M, m.K, nb, pool); break;
    case ggml_type::iq4_nl: m.w = lutkit::pack_iq4_nl<iq4_nl_policy>(b, m.M, m.K, nb, pool); break;
    case ggml_type::q4_1: m.w = lutkit::pack_q4_1<q4_1_policy>(b, m.M, m.K, nb, pool); break;
    case ggml_type::q5_0: m.w = lutkit::pack_q5_0<q5_0_policy>(b, m.M, m.K, nb, pool); break;
    case ggml_type::tq2_0: m.w = lutkit::pack_tq2_0<tq_policy>(b, m.M, m.K, nb, pool); break;
    case ggml_type::tq1_0: m.w = lutkit::pack_tq1_0<tq_policy>(b, m.M, m.K, nb, pool); break;
    case ggml_type::q4_k: m.w = lutkit::pack_q4_k<q4_k_policy>(b, m.M, m.K, nb, pool); break;
    case ggml_type::q6_k: m.w = lutkit::pack_q6_k<q6_k_policy>(b, m.M, m.K, nb, pool); break;
    case ggml_type::q3_k: m.w = lutkit::pack_q3_k<q3_k_policy>(b, m.M, m.K, nb, pool); break;
    case ggml_type::q5_k: m.w = lutkit::pack_q5_k<q5_k_policy>(b, m.M, m.K, nb, pool); break;
    case ggml_type::q2_k: m.w = lutkit::pack_q2_k<q2_k_policy>(b, m.M, m.K, nb, pool); break;
    case ggml_type::q5_1: m.w = lutkit::pack_q5_1<q5_1_policy>(b, m.M, m.K, nb, pool); break;
    default:
      llm::require(false, "llm: tensor '", t.name, "' has type ", t.info().name,
                   "; the engine packs Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, TQ2_0 and TQ1_0 matrices");
  }
  return m;
}

// a vector tensor (norm weight, bias) as floats, checked to hold n values
inline std::vector<float> load_vector(const lutkit::gguf::tensor& t, std::size_t n) {
  llm::require(t.n_elements() == n, "llm: tensor '", t.name, "' holds ", t.n_elements(), " values, expected ", n);
  std::vector<float> v(n);
  lutkit::ggml::dequantize_row(t.type, t.data, std::size_t(t.n_bytes), v.data(), n);
  return v;
}

struct layer {
  std::vector<float> attn_norm, ffn_norm, bq, bk, bv, q_norm, k_norm, post_attn_norm, post_ffn_norm;
  matrix wq, wk, wv, wo, w_gate, w_up, w_down;
};

// The stages of a forward pass that the profile times and the step's model costs (lutkit_llm
// --profile): the matrices by the call that applies them (Q, K, V and gate, up share their input's
// LUT tables), the attention; what the pass does besides (norms, RoPE, residual adds, SiLU, the
// KV append, the embedding) is the pass's time less these.
enum class stage { qkv, o, gate_up, down, output, attention, count };
inline const char* stage_name(stage s) {
  switch (s) {
    case stage::qkv: return "Q, K, V";
    case stage::o: return "attention output";
    case stage::gate_up: return "FFN gate, up";
    case stage::down: return "FFN down";
    case stage::output: return "output (logits)";
    case stage::attention: return "attention";
    case stage::count: break;
  }
  return "?";
}
inline constexpr std::size_t stages = std::size_t(stage::count);

struct model {
  lutkit::gguf::file file;
  hparams hp;
  const lutkit::gguf::tensor* tok_embd = nullptr;
  std::vector<layer> layers;
  std::vector<float> out_norm;
  matrix output;

  explicit model(lutkit::gguf::file f) : file(std::move(f)), hp(read_hparams(file)) {}

  // the embedding of token id into x (n_embd floats)
  void embed(int32_t id, float* x) const {
    llm::require(id >= 0 && std::size_t(id) < hp.n_vocab, "llm: token ", id, " outside the vocabulary (",
                            hp.n_vocab, ")");
    const auto row = tok_embd->row(uint64_t(id));
    lutkit::ggml::dequantize_row(tok_embd->type, row.data(), row.size(), x, hp.n_embd);
    if (hp.emb_scale != 1.f)
      for (std::size_t i = 0; i < hp.n_embd; ++i) x[i] *= hp.emb_scale;
  }
  // packed bytes of every matrix (what a decode step reads once)
  std::size_t matrix_bytes() const {
    std::size_t b = output.bytes();
    for (const auto& l : layers)
      for (const matrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) b += m->bytes();
    return b;
  }
};

// Loads every tensor the architecture needs: matrices packed over the pool (several at a time),
// a progress line on stderr when `progress`.
inline std::unique_ptr<model> load_model(lutkit::gguf::file f, lutkit::thread_pool* pool, bool progress) {
  auto m = std::make_unique<model>(std::move(f));
  const hparams& h = m->hp;
  const auto& F = m->file;
  m->tok_embd = &F.get_tensor("token_embd.weight");
  llm::require(lutkit::ggml::can_dequantize(m->tok_embd->type), "llm: token_embd.weight has type ",
                          m->tok_embd->info().name, ", which lutkit does not dequantize");
  m->layers.resize(h.n_layer);
  // the matrices to pack, with where each goes and its expected shape
  struct job {
    const lutkit::gguf::tensor* t;
    matrix* dst;
    std::size_t M, K;
  };
  std::vector<job> jobs;
  auto want = [&](const std::string& name, matrix& dst, std::size_t M, std::size_t K) {
    const auto& t = F.get_tensor(name);
    llm::require(t.ne[0] == K && t.ne[1] == M, "llm: tensor '", name, "' is ", t.ne[0], " x ", t.ne[1],
                            ", expected ", K, " x ", M, " (ggml order)");
    jobs.push_back({&t, &dst, M, K});
  };
  for (std::size_t l = 0; l < h.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    layer& L = m->layers[l];
    L.attn_norm = load_vector(F.get_tensor(p + "attn_norm.weight"), h.n_embd);
    L.ffn_norm = load_vector(F.get_tensor(p + "ffn_norm.weight"), h.n_embd);
    if (h.qkv_bias) {
      L.bq = load_vector(F.get_tensor(p + "attn_q.bias"), h.q_dim());
      L.bk = load_vector(F.get_tensor(p + "attn_k.bias"), h.kv_dim());
      L.bv = load_vector(F.get_tensor(p + "attn_v.bias"), h.kv_dim());
    }
    if (h.qk_norm) {
      L.q_norm = load_vector(F.get_tensor(p + "attn_q_norm.weight"), h.head_dim);
      L.k_norm = load_vector(F.get_tensor(p + "attn_k_norm.weight"), h.head_dim);
    }
    if (h.post_norms) {
      L.post_attn_norm = load_vector(F.get_tensor(p + "post_attention_norm.weight"), h.n_embd);
      L.post_ffn_norm = load_vector(F.get_tensor(p + "post_ffw_norm.weight"), h.n_embd);
    }
    want(p + "attn_q.weight", L.wq, h.q_dim(), h.n_embd);
    want(p + "attn_k.weight", L.wk, h.kv_dim(), h.n_embd);
    want(p + "attn_v.weight", L.wv, h.kv_dim(), h.n_embd);
    want(p + "attn_output.weight", L.wo, h.n_embd, h.q_dim());
    want(p + "ffn_gate.weight", L.w_gate, h.n_ff, h.n_embd);
    want(p + "ffn_up.weight", L.w_up, h.n_ff, h.n_embd);
    want(p + "ffn_down.weight", L.w_down, h.n_embd, h.n_ff);
  }
  m->out_norm = load_vector(F.get_tensor("output_norm.weight"), h.n_embd);
  // tied embeddings: the output projection is token_embd.weight
  want(F.find_tensor("output.weight") ? "output.weight" : "token_embd.weight", m->output, h.n_vocab, h.n_embd);
  // each matrix packed by the pool's threads (the packers split rows over it)
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    *jobs[i].dst = pack_matrix(*jobs[i].t, pool);
    if (progress) std::fprintf(stderr, "\rllm: packed %zu / %zu matrices", i + 1, jobs.size());
  }
  if (progress) std::fprintf(stderr, "\n");
  return m;
}

}  // namespace llm
