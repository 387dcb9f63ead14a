// lutkit example engine — kernels from a plan (lutkit/plan/, docs/plan.md): per class of weight
// matrices (one tensor type, one shape: e.g. every layer's attn_q), the decode method and thread
// count plan::plan_decode chooses for one activation row, and the dequant-GEMM's activation
// paradigm and thread count plan::plan_prefill chooses for a prompt chunk, by modelled time
// within an error budget. Each budget is the error of the default (decode_method::best,
// default_act) on the same calibration activations, so a plan is never less accurate than the
// defaults, which are at least as accurate as llama.cpp's CPU path (docs/llama_formats.md,
// "Accuracy"). The plan is printed as a table and can be saved and loaded (one line per class).
#pragma once
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <lutkit/plan/calibrate_decode.hpp>
#include <lutkit/plan/calibrate_ops.hpp>

#include "model.hpp"

namespace llm {

struct plan_row {
  std::string type;  // the ggml type's name
  std::size_t M = 0, K = 0, count = 0;
  std::string first;  // the first matrix of the class
  lutkit::decode_method method = lutkit::decode_method::best, default_method = lutkit::decode_method::best;
  int threads = 0;
  double error = 0, default_error = 0, modelled_s = 0, default_modelled_s = 0;
  // a prompt chunk (prefill_rows activation rows): the dequant-GEMM's paradigm and threads
  lutkit::act_type act = lutkit::act_type::int8_group, default_act = lutkit::act_type::int8_group;
  int prefill_threads = 0;
  double prefill_error = 0, default_prefill_error = 0, prefill_modelled_s = 0, default_prefill_modelled_s = 0;
};

// every weight matrix of the model, in load order, with the stage of the pass that applies it
inline std::vector<std::pair<matrix*, stage>> staged_matrices(model& m) {
  std::vector<std::pair<matrix*, stage>> v;
  for (auto& l : m.layers)
    for (const auto& x : {std::pair{&l.wq, stage::qkv}, {&l.wk, stage::qkv}, {&l.wv, stage::qkv}, {&l.wo, stage::o},
                          {&l.w_gate, stage::gate_up}, {&l.w_up, stage::gate_up}, {&l.w_down, stage::down}})
      v.push_back(x);
  v.push_back({&m.output, stage::output});
  return v;
}
inline std::vector<matrix*> all_matrices(model& m) {
  std::vector<matrix*> v;
  for (const auto& [x, st] : staged_matrices(m)) v.push_back(x);
  return v;
}

namespace detail {
using class_key = std::tuple<std::string, std::size_t, std::size_t>;  // type, M, K
inline class_key key_of(const matrix& m) { return {std::string(lutkit::ggml_info(m.type).name), m.M, m.K}; }

inline lutkit::decode_method parse_method(const std::string& s) {
  for (auto m : {lutkit::decode_method::lut_gemv, lutkit::decode_method::fused_dq, lutkit::decode_method::int8,
                 lutkit::decode_method::bf16})
    if (s == lutkit::decode_method_name(m)) return m;
  llm::require(false, "llm: plan: unknown decode method '", s, "'");
  return lutkit::decode_method::best;
}
inline lutkit::act_type parse_act(const std::string& s) {
  for (auto a : {lutkit::act_type::fp32, lutkit::act_type::bf16, lutkit::act_type::int8, lutkit::act_type::int8_group})
    if (s == lutkit::act_name(a)) return a;
  llm::require(false, "llm: plan: unknown activation paradigm '", s, "' (fp32, bf16, int8, int8g)");
  return lutkit::act_type::fp32;
}
}  // namespace detail

// The plan of every matrix class: costs from `cal` (each policy's decode kernels, about a second,
// and prefill paradigms, a fraction of one each, calibrated here if `cal` has no rates for them
// and calibrate_kernels is set), errors on normal activations with a few outlier channels (fixed
// seed: the same file and calibration give the same plan; one row for the decode, prefill_cal
// rows for a prompt chunk) over the class's first matrix, its first sample_rows rows; the times
// modelled at its whole shape, the prefill's at a chunk of prefill_rows (plan::plan_decode,
// plan::plan_prefill). Each budget is the default's own error on the same activations. Sets
// each matrix's method, act and thread counts.
inline std::vector<plan_row> plan_model(model& mdl, lutkit::plan::calibration& cal, bool calibrate_kernels = true,
                                        std::size_t sample_rows = 512, std::size_t prefill_rows = 512) {
  constexpr std::size_t prefill_cal = 8;
  std::map<detail::class_key, std::vector<matrix*>> classes;
  std::vector<detail::class_key> order;
  for (matrix* m : all_matrices(mdl)) {
    auto& v = classes[detail::key_of(*m)];
    if (v.empty()) order.push_back(detail::key_of(*m));
    v.push_back(m);
  }
  std::vector<plan_row> rows;
  for (const auto& key : order) {
    const auto& ms = classes[key];
    const matrix& first = *ms.front();
    plan_row r;
    std::tie(r.type, r.M, r.K) = key;
    r.count = ms.size();
    r.first = first.name;
    std::vector<float> x(first.K * prefill_cal);  // row 0: the decode's
    std::mt19937_64 rng(0x5eed + first.K);
    std::normal_distribution<float> nd;
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = nd(rng) * ((i % first.K) % 97 == 0 ? 20.f : 1.f);
    std::visit(
        [&](const auto& pw) {
          using T = std::decay_t<decltype(pw)>;
          if constexpr (!std::is_same_v<T, std::monostate>) {
            using P = typename policy_of<T>::type;
            namespace lp = lutkit::plan;
            const auto valid = lp::valid_decode_methods<P>(1);
            if (calibrate_kernels && !cal.costs.kernels.count(lp::kernel_key(valid.front(), P::name())))
              lp::calibrate_decode<P>(cal.costs);
            // errors on the first sample_rows rows of the matrix (packed again from the file: the
            // relative error is a per-row statistic), times modelled at the matrix's own shape
            const T* sample = &pw;
            matrix part;
            if (first.M > sample_rows) {
              lutkit::gguf::tensor t = mdl.file.get_tensor(first.name);
              t.ne[1] = sample_rows;
              t.n_bytes = t.row_bytes() * sample_rows;
              part = pack_matrix(t, nullptr);
              sample = &std::get<T>(part.w);
            }
            const lp::matmul_op op = lp::describe_matmul<P>(first.M, first.K, 1);
            r.default_method = lutkit::best_decode_method<P>(1);
            r.default_error = lp::measure_decode_error<P>(*sample, x.data(), 1, r.default_method);
            r.default_modelled_s = lp::model_decode(cal.costs, op, r.default_method, cal.costs.cores).total_s;
            const auto p = lp::plan_decode<P>(cal.costs, op, *sample, x.data(), 1, r.default_error);
            r.method = p.chosen.method;
            r.threads = p.chosen.threads;
            r.error = p.chosen.error;
            r.modelled_s = p.chosen.modelled_s;
            // a prompt chunk: the dequant-GEMM's paradigms
            const auto acts = lp::valid_prefill_acts<P>();
            for (lutkit::act_type a : acts)
              if (calibrate_kernels && !cal.costs.kernels.count(lp::prefill_kernel_key(a, P::name())))
                lp::calibrate_prefill<P>(cal.costs, a);
            const lp::matmul_op pop = lp::describe_matmul<P>(first.M, first.K, prefill_rows);
            r.default_act = lutkit::default_act<P>();
            r.default_prefill_error = lp::measure_prefill_error<P>(*sample, x.data(), prefill_cal, r.default_act);
            r.default_prefill_modelled_s = lp::model_prefill(cal.costs, pop, r.default_act, cal.costs.cores).total_s;
            const auto pp = lp::plan_prefill<P>(cal.costs, pop, *sample, x.data(), prefill_cal, r.default_prefill_error);
            r.act = pp.chosen.act;
            r.prefill_threads = pp.chosen.threads;
            r.prefill_error = pp.chosen.error;
            r.prefill_modelled_s = pp.chosen.modelled_s;
          }
        },
        first.w);
    for (matrix* m : ms) {
      m->method = r.method;
      m->threads = r.threads;
      m->prefill_planned = true;
      m->act = r.act;
      m->prefill_threads = r.prefill_threads;
    }
    rows.push_back(r);
  }
  return rows;
}

inline void print_plan(const std::vector<plan_row>& rows, std::FILE* f, std::size_t prefill_rows = 512) {
  std::fprintf(f, "llm: plan (modelled time; relative RMS error against the double reference)\n");
  std::fprintf(f, "  decode, one activation row:\n");
  std::fprintf(f, "  %-28s %-7s %13s %3s | %-8s %3s %9s %8s | %-8s %9s %8s\n", "class (first matrix)", "type", "M x K", "n",
               "plan", "thr", "us", "error", "default", "us", "error");
  for (const auto& r : rows)
    std::fprintf(f, "  %-28s %-7s %6zu x %-6zu %3zu | %-8s %3d %9.1f %8.2e | %-8s %9.1f %8.2e\n", r.first.c_str(),
                 r.type.c_str(), r.M, r.K, r.count, lutkit::decode_method_name(r.method), r.threads, r.modelled_s * 1e6,
                 r.error, lutkit::decode_method_name(r.default_method), r.default_modelled_s * 1e6, r.default_error);
  std::fprintf(f, "  prefill, a chunk of %zu rows (activation paradigm of the dequant-GEMM):\n", prefill_rows);
  std::fprintf(f, "  %-28s %-7s %13s %3s | %-8s %3s %9s %8s | %-8s %9s %8s\n", "class (first matrix)", "type", "M x K", "n",
               "plan", "thr", "us", "error", "default", "us", "error");
  for (const auto& r : rows)
    std::fprintf(f, "  %-28s %-7s %6zu x %-6zu %3zu | %-8s %3d %9.1f %8.2e | %-8s %9.1f %8.2e\n", r.first.c_str(),
                 r.type.c_str(), r.M, r.K, r.count, lutkit::act_name(r.act), r.prefill_threads,
                 r.prefill_modelled_s * 1e6, r.prefill_error, lutkit::act_name(r.default_act),
                 r.default_prefill_modelled_s * 1e6, r.default_prefill_error);
}

// A plan as text: `# comment` lines, then per class `<type> <M> <K> <method> <threads> <act>
// <prefill threads>` (a line of the first five: the prefill's defaults).
inline void save_plan(const std::vector<plan_row>& rows, const std::string& path) {
  std::ofstream f(path);
  llm::require(bool(f), "llm: cannot open '", path, "' to write the plan");
  f << "# lutkit_llm plan: type M K decode-method decode-threads prefill-act prefill-threads\n";
  for (const auto& r : rows)
    f << r.type << ' ' << r.M << ' ' << r.K << ' ' << lutkit::decode_method_name(r.method) << ' ' << r.threads << ' '
      << lutkit::act_name(r.act) << ' ' << r.prefill_threads << '\n';
  llm::require(bool(f), "llm: writing the plan '", path, "' failed");
}

// Loads a saved plan onto the model's matrices: every class of the model needs its line; a line
// naming a class the model lacks, a bad method or thread count is an error naming the line.
inline void load_plan(model& mdl, const std::string& path, std::size_t max_threads) {
  std::ifstream f(path);
  llm::require(bool(f), "llm: cannot open the plan '", path, "'");
  struct entry {
    lutkit::decode_method method;
    int threads;
    bool prefill;  // the line names the prefill's paradigm and threads
    lutkit::act_type act;
    int prefill_threads;
  };
  std::map<detail::class_key, entry> lines;
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    std::string type, method, act, extra;
    std::size_t M = 0, K = 0;
    int threads = 0, pthreads = 0;
    llm::require(bool(is >> type >> M >> K >> method >> threads), "llm: plan '", path, "' line ", n,
                 ": expected <type> <M> <K> <method> <threads> [<act> <prefill threads>]");
    const bool prefill = bool(is >> act);
    llm::require(!prefill || (bool(is >> pthreads) && !(is >> extra)), "llm: plan '", path, "' line ", n,
                 ": expected <type> <M> <K> <method> <threads> [<act> <prefill threads>]");
    const int tmax = int(max_threads);
    for (int t : {threads, prefill ? pthreads : threads})
      llm::require(t >= 1 && t <= tmax, "llm: plan '", path, "' line ", n, ": ", t, " threads (1 to ", max_threads, ")");
    const entry e{detail::parse_method(method), threads, prefill,
                  prefill ? detail::parse_act(act) : lutkit::act_type::int8_group, pthreads};
    llm::require(lines.emplace(detail::class_key{type, M, K}, e).second, "llm: plan '", path, "' line ", n, ": ", type,
                 " ", M, " x ", K, " given twice");
  }
  std::set<detail::class_key> used;
  for (matrix* m : all_matrices(mdl)) {
    const auto k = detail::key_of(*m);
    const auto it = lines.find(k);
    llm::require(it != lines.end(), "llm: plan '", path, "' has no line for ", std::get<0>(k), " ", m->M, " x ", m->K, " (",
                 m->name, ")");
    const entry& e = it->second;
    llm::require(m->method_valid(e.method), "llm: plan '", path, "': ", lutkit::decode_method_name(e.method),
                 " cannot decode ", m->name, " (", std::get<0>(k), ")");
    llm::require(!e.prefill || m->act_valid(e.act), "llm: plan '", path, "': the dequant-GEMM has no ",
                 lutkit::act_name(e.act), " paradigm for ", m->name, " (", std::get<0>(k), ")");
    m->method = e.method;
    m->threads = e.threads;
    m->prefill_planned = e.prefill;
    m->act = e.act;
    m->prefill_threads = e.prefill_threads;
    used.insert(k);
  }
  for (const auto& [k, v] : lines)
    llm::require(used.count(k), "llm: plan '", path, "' names ", std::get<0>(k), " ", std::get<1>(k), " x ", std::get<2>(k),
                 ", which this model does not have");
}

// The modelled time of one decode step (one token) at a context of `context` positions: every
// weight matrix by the method and threads it runs with (its plan, else decode_method::best on
// the pool's threads), each layer's attention over the context, and, given the step's sampling
// parameters, ar_sample's draw of the token from one row of fp32 logits on the pool (its pass by
// describe_ar_sampling). (Norms, RoPE and the residual adds, n_embd-sized vectors, are not
// modelled.) Calibrates the kernels the costs lack (calibrate_kernels false: none, the kernels
// without an entry modelled from the target's rates alone, as plan_model's).
struct step_model {
  double matrices_s = 0, attention_s = 0, sampling_s = 0;
  double stage_s[stages] = {};  // the matrices and the attention by the pass's stage
  double total_s() const { return matrices_s + attention_s + sampling_s; }
};
inline step_model model_decode_step(model& mdl, lutkit::plan::calibration& cal, std::size_t context,
                                    const lutkit::ar_params* sampling = nullptr, bool calibrate_kernels = true) {
  namespace lp = lutkit::plan;
  step_model sm;
  const int cores = std::max(1, cal.costs.cores);
  for (const auto& [m, st] : staged_matrices(mdl))
    std::visit(
        [&](const auto& pw) {
          using T = std::decay_t<decltype(pw)>;
          if constexpr (!std::is_same_v<T, std::monostate>) {
            using P = typename policy_of<T>::type;
            const auto method = m->method == lutkit::decode_method::best ? lutkit::best_decode_method<P>(1) : m->method;
            if (calibrate_kernels && !cal.costs.kernels.count(lp::kernel_key(method, P::name())))
              lp::calibrate_decode<P>(cal.costs);
            const int t = m->threads > 0 ? std::min(m->threads, cores) : cores;
            const double s = lp::model_decode(cal.costs, lp::describe_matmul<P>(m->M, m->K, 1), method, t).total_s;
            sm.matrices_s += s;
            sm.stage_s[std::size_t(st)] += s;
          }
        },
        m->w);
  if (calibrate_kernels && !cal.costs.kernels.count("attention.decode")) lp::calibrate_attention(cal.costs);
  lp::attention_op a;
  a.heads = mdl.hp.n_head, a.kv_heads = mdl.hp.n_head_kv, a.head_dim = mdl.hp.head_dim;
  a.context = std::max<std::size_t>(1, context), a.queries = 1;
  sm.attention_s = double(mdl.hp.n_layer) * lp::model_attention(cal.costs, a, cores).total_s;
  sm.stage_s[std::size_t(stage::attention)] = sm.attention_s;
  if (sampling) {
    const lp::sampling_op s = lp::describe_ar_sampling(*sampling, mdl.hp.n_vocab);
    if (calibrate_kernels && !cal.costs.kernels.count(lp::sampling_kernel_key(s.pass, s.type)))
      lp::calibrate_sampling(cal.costs);
    sm.sampling_s = lp::model_sampling(cal.costs, s, cores).total_s;
  }
  return sm;
}

}  // namespace llm
