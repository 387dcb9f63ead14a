// lutkit example engine — the command line and the generation loop:
//
//   lutkit_llm --model M.gguf [--prompt-ids 1,15043,3186 | --random-prompt N | --fill N] [-n 64] [--threads 2]
//              [--ctx 4096] [--chunk 512] [--temp 0] [--top-k 40] [--top-p 0.95] [--seed 1]
//              [--kv bf16] [--batch B] [--plan auto|default|PLAN] [--save-plan PLAN] [--calibration FILE] [--profile]
//              [--quiet]
//   lutkit_llm --model M.gguf --load-rounds R [--threads 2]
//   lutkit_llm --write-model M.gguf --shape llama-3.2-1b|bitnet-2b|tiny [--type q4_0|q4_1|q5_0|q8_0|q5_1|iq4_nl|q2_k|q3_k|q4_k|q4_k_m|q5_k|q6_k|tq2_0|tq1_0]
//              (a random-weight model of that shape, for benchmarks)
//
// --batch B: Best-of-N, B sequences continue the prompt, each with its own sampler seed (give a
// temperature > 0); the prompt's K/V is read once per step for all of them (llm::batch).
// --plan: the decode kernels of one activation row and the prompt chunks' dequant-GEMM paradigm
// from a plan (examples/llm/plan.hpp): `auto` plans at load (a calibration of this machine, a few
// seconds, kept in --calibration FILE when given and read from it when it exists), `default`
// (the default) runs decode_method::best and default_act on every matrix, any other value is a
// plan saved by --save-plan. The plan is printed unless --quiet.
// --profile: each decode pass's stages timed (llm::step_profile: the matrices by the call that
// applies them, the attention, the rest of the pass) and printed after the summary as ms a step,
// beside the step's model per stage with --plan auto.
// --load-rounds R: the load alone, beside a memcpy of the file's bytes into a touched buffer and
// one into a new buffer, R rounds alternating the three (each round a new mapping and new blobs);
// prints the medians and memcpy / load, then exits.
// --fill N: a context of N positions whose K/V cache holds random values (no prefill), then the
// decode from one token: decode's speed at a long context without the prompt's time.
// Prints the generated token ids (and their text where the file has a vocabulary), then the
// timings: load (file mapped -> every matrix packed), time to first token, prefill and decode
// tokens/s, and decode's fraction of the memory roofline: (packed weight bytes + K/V bytes read
// per token) / the time a plain read of as many bytes takes, measured at start.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "forward.hpp"
#include "plan.hpp"
#include "vocab.hpp"

namespace {
using clk = std::chrono::steady_clock;
double secs(clk::time_point a, clk::time_point b) { return std::chrono::duration<double>(b - a).count(); }

std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> out;
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    out.push_back(int32_t(std::stol(s.substr(i, j - i))));
    i = j + 1;
  }
  return out;
}

// --load-rounds: load (map + pack every matrix) against two memcpys of the file's bytes (from its
// mapping, pages mapped first): into a buffer touched before the timing, and into a new buffer
// (whose pages the kernel zeroes at first touch, as it does the blobs'); rounds alternate the three
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}
int load_rounds_main(const std::string& path, std::size_t rounds, lutkit::thread_pool* tp, std::size_t threads) {
  std::vector<double> load, copy, fresh;
  std::size_t bytes = 0;
  std::vector<uint8_t> dst;
  for (std::size_t r = 0; r < rounds; ++r) {
    {
      const auto t0 = clk::now();
      auto mdl = llm::load_model(lutkit::gguf::file(path), tp, false);
      load.push_back(secs(t0, clk::now()));
    }
    const lutkit::gguf::file f(path);
    const auto src = f.bytes();
    bytes = src.size();
    if (dst.size() != bytes) dst.assign(bytes, 1);  // touched once, before the first timing
    uint64_t sink = 0;
    for (std::size_t i = 0; i < bytes; i += 4096) sink += src[i];
    auto t0 = clk::now();
    std::memcpy(dst.data(), src.data(), bytes);
    copy.push_back(secs(t0, clk::now()));
    {
      t0 = clk::now();
      const auto buf = lutkit::detail::alloc_aligned(bytes);  // (huge pages, as the blobs)
      std::memcpy(buf.get(), src.data(), bytes);
      fresh.push_back(secs(t0, clk::now()));
      sink += buf[bytes / 2];
    }
    if (sink == 1) std::printf(" ");
  }
  const double l = median(load), c = median(copy), n = median(fresh);
  std::printf("load %.1f ms; memcpy of the file's %.1f MB: %.1f ms into a touched buffer, %.1f ms into a new one "
              "(medians of %zu alternating rounds, %zu threads): memcpy / load %.3f (touched), %.3f (new)\n",
              l * 1e3, double(bytes) * 1e-6, c * 1e3, n * 1e3, rounds, threads, c / l, n / l);
  return 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: lutkit_llm --model M.gguf [--prompt-ids a,b,c | --random-prompt N | --fill N] [-n N] [--threads T] "
               "[--ctx N] [--chunk N] [--temp T] [--top-k K] [--top-p P] [--seed S] [--kv bf16] [--batch B]\n"
               "                  [--plan auto|default|PLAN] [--save-plan PLAN] [--calibration FILE] [--profile]\n"
               "                  [--quiet]\n"
               "       lutkit_llm --model M.gguf --load-rounds R [--threads T]\n"
               "       lutkit_llm --write-model M.gguf --shape llama-3.2-1b|bitnet-2b|tiny "
               "[--type q4_0|q4_1|q5_0|q8_0|q5_1|iq4_nl|q2_k|q3_k|q4_k|q4_k_m|q5_k|q6_k|tq2_0|tq1_0]\n");
  return 2;
}
}  // namespace

int main(int argc, char** argv) try {
  std::string path, ids, write_path, shape = "tiny", type = "q4_0", plan = "default", save_plan, cal_path;
  std::size_t n_gen = 32, threads = 2, ctx = 4096, chunk = 512, random_prompt = 0, fill = 0, n_batch = 1, load_rounds = 0;
  float temp = 0.f, top_p = 1.f;
  int32_t top_k = 0;
  uint64_t seed = 1;
  bool quiet = false, bf16_kv = false, profile = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      llm::require(i + 1 < argc, "lutkit_llm: ", a, " needs a value");
      return argv[++i];
    };
    if (a == "--model") path = next();
    else if (a == "--prompt-ids") ids = next();
    else if (a == "--random-prompt") random_prompt = std::stoul(next());
    else if (a == "--fill") fill = std::stoul(next());
    else if (a == "--batch") n_batch = std::stoul(next());
    else if (a == "-n") n_gen = std::stoul(next());
    else if (a == "--threads") threads = std::stoul(next());
    else if (a == "--ctx") ctx = std::stoul(next());
    else if (a == "--chunk") chunk = std::stoul(next());
    else if (a == "--temp") temp = std::stof(next());
    else if (a == "--top-k") top_k = int32_t(std::stol(next()));
    else if (a == "--top-p") top_p = std::stof(next());
    else if (a == "--seed") seed = std::stoull(next());
    else if (a == "--kv") bf16_kv = next() == "bf16";
    else if (a == "--quiet") quiet = true;
    else if (a == "--profile") profile = true;
    else if (a == "--load-rounds") load_rounds = std::stoul(next());
    else if (a == "--plan") plan = next();
    else if (a == "--save-plan") save_plan = next();
    else if (a == "--calibration") cal_path = next();
    else if (a == "--write-model") write_path = next();
    else if (a == "--shape") shape = next();
    else if (a == "--type") type = next();
    else return usage();
  }
  if (!write_path.empty()) {
    lutkit::gguf::tiny_llama_options o;
    o.matrix_type = type == "q8_0"     ? lutkit::ggml_type::q8_0
                    : type == "q4_1"   ? lutkit::ggml_type::q4_1
                    : type == "q5_0"   ? lutkit::ggml_type::q5_0
                    : type == "iq4_nl" ? lutkit::ggml_type::iq4_nl
                    : type == "tq2_0"  ? lutkit::ggml_type::tq2_0
                    : type == "tq1_0"  ? lutkit::ggml_type::tq1_0
                    : type == "q4_k" || type == "q4_k_m" ? lutkit::ggml_type::q4_k
                    : type == "q6_k"   ? lutkit::ggml_type::q6_k
                    : type == "q3_k"   ? lutkit::ggml_type::q3_k
                    : type == "q2_k"   ? lutkit::ggml_type::q2_k
                    : type == "q5_k"   ? lutkit::ggml_type::q5_k
                    : type == "q5_1"   ? lutkit::ggml_type::q5_1
                                       : lutkit::ggml_type::q4_0;
    o.q4_k_m = type == "q4_k_m";
    llm::require(type == "q4_0" || o.matrix_type != lutkit::ggml_type::q4_0, "lutkit_llm: unknown type ", type);
    o.embedding_type = o.matrix_type;
    if (shape == "llama-3.2-1b") {  // Llama 3.2 1B: 16 layers, 2048 wide, 32 / 8 heads of 64, FFN 8192
      o.n_vocab = 128256, o.n_embd = 2048, o.n_ff = 8192, o.n_layer = 16, o.n_head = 32, o.n_head_kv = 8;
      o.n_ctx = 131072, o.rope_freq_base = 500000.f, o.output_tensor = false;
    } else if (shape == "bitnet-2b") {  // BitNet b1.58 2B: 30 layers, 2560 wide, 20 / 5 heads of 128, FFN 6912
      o.n_vocab = 128256, o.n_embd = 2560, o.n_ff = 6912, o.n_layer = 30, o.n_head = 20, o.n_head_kv = 5;
      o.n_ctx = 4096, o.rope_freq_base = 500000.f, o.output_tensor = true;  // output.weight in the matrix type
      o.embedding_type = lutkit::ggml_type::f16;  // (BitNet keeps its embedding in 16 bits)
    } else {
      llm::require(shape == "tiny", "lutkit_llm: unknown shape ", shape);
    }
    // Q4_K_M with tied embeddings: llama.cpp gives the embedding (the output projection) Q6_K
    if (o.q4_k_m && !o.output_tensor) o.embedding_type = lutkit::ggml_type::q6_k;
    lutkit::gguf::tiny_llama(o).write(write_path);
    std::printf("wrote %s (%s, %s)\n", write_path.c_str(), shape.c_str(), type.c_str());
    return 0;
  }
  if (path.empty()) return usage();
  lutkit::thread_pool pool(threads);
  lutkit::thread_pool* tp = threads > 1 ? &pool : nullptr;
  if (load_rounds > 0) return load_rounds_main(path, load_rounds, tp, threads);
  // the memory roofline's read: a buffer of twice the LLC over the run's threads
  const double gbps = lutkit::plan::measure_read_rates(pool, int(threads)).all * 1e-9;

  const auto t0 = clk::now();
  auto mdl = llm::load_model(lutkit::gguf::file(path), tp, !quiet);
  const auto t1 = clk::now();
  lutkit::plan::calibration cal;  // (--plan auto: also the decode step's modelled time, printed at the end)
  if (plan == "auto") {
    bool loaded = false;
    if (!cal_path.empty() && std::ifstream(cal_path).good()) {
      cal = lutkit::plan::load_calibration(cal_path);
      loaded = true;
      llm::require(cal.costs.cores == int(threads), "lutkit_llm: the calibration '", cal_path, "' is for ",
                   cal.costs.cores, " threads, this run has ", threads);
    } else {
      lutkit::plan::calibration_options co;
      co.threads = int(threads);
      cal = lutkit::plan::calibrate(co);
    }
    const std::size_t rates = cal.costs.kernels.size();
    const auto rows = llm::plan_model(*mdl, cal, true, 512, chunk);
    // (a loaded calibration is saved again when the plan measured kernels it lacked)
    if (!cal_path.empty() && (!loaded || cal.costs.kernels.size() != rates)) lutkit::plan::save_calibration(cal, cal_path);
    if (!quiet) llm::print_plan(rows, stderr, chunk);
    if (!save_plan.empty()) llm::save_plan(rows, save_plan);
  } else if (plan != "default") {
    llm::load_plan(*mdl, plan, threads);
  }
  const auto t1p = clk::now();
  const llm::vocab voc = llm::vocab::from(mdl->file);
  const llm::hparams& hp = mdl->hp;
  std::vector<int32_t> prompt = parse_ids(ids);
  if (random_prompt) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int32_t> pick(0, int32_t(hp.n_vocab) - 1);
    prompt.resize(random_prompt);
    for (auto& t : prompt) t = pick(rng);
  }
  if (prompt.empty()) prompt.push_back(voc.bos >= 0 ? voc.bos : 1);
  ctx = std::max(std::min(ctx, prompt.size() + n_gen), fill + prompt.size() + n_gen);
  llm::session s(*mdl, ctx, bf16_kv ? lutkit::kv_type::bf16 : lutkit::kv_type::f16);
  if (fill) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nd;
    for (std::size_t l = 0; l < hp.n_layer; ++l)
      for (std::size_t h = 0; h < hp.n_head_kv; ++h)
        for (std::size_t i = 0; i < fill * hp.head_dim; ++i) {
          s.kc[l][h * ctx * hp.head_dim + i] = s.to_kv(nd(rng));
          s.vc[l][h * ctx * hp.head_dim + i] = s.to_kv(nd(rng));
        }
    s.pos = fill;
  }

  lutkit::ar_params sp;
  sp.temperature = temp;
  sp.top_k = top_k;
  sp.top_p = top_p;
  sp.seed = seed;
  std::vector<int32_t> out;
  const auto t2 = clk::now();
  s.prefill(prompt, chunk, tp);
  const auto t3 = clk::now();
  if (n_batch > 1) {  // Best-of-N over the shared prompt
    llm::batch bt(s, n_batch, n_gen);
    std::vector<lutkit::ar_params> ps(n_batch, sp);
    std::vector<int32_t> toks(n_batch);
    std::vector<std::vector<int32_t>> seqs(n_batch);
    const float* lg = s.logits.data();
    std::vector<float> first(n_batch * hp.n_vocab);
    for (std::size_t b = 0; b < n_batch; ++b) std::copy(lg, lg + hp.n_vocab, first.begin() + std::ptrdiff_t(b * hp.n_vocab));
    lg = first.data();
    double step_s = 0;
    std::size_t steps = 0;
    for (std::size_t i = 0; i < n_gen; ++i) {
      for (std::size_t b = 0; b < n_batch; ++b) ps[b].seed = seed + 1000003 * b + i;
      lutkit::ar_sample(lutkit::logits_view::f32(lg, n_batch, hp.n_vocab), ps.data(), toks.data(), tp);
      for (std::size_t b = 0; b < n_batch; ++b) seqs[b].push_back(toks[b]);
      if (i + 1 == n_gen) break;
      const auto a = clk::now();
      lg = bt.step(toks.data(), tp).data();
      step_s += secs(a, clk::now());
      ++steps;
    }
    for (std::size_t b = 0; b < n_batch; ++b) {
      std::printf("sequence %zu:", b);
      for (int32_t t : seqs[b]) std::printf(" %d", t);
      std::printf("\n");
    }
    std::printf("model: %s; threads %zu | prompt %zu tokens: %.1f tok/s | batch %zu, %zu steps: %.2f tok/s (%.2f steps/s)\n",
                hp.arch_name.c_str(), threads, prompt.size(), double(prompt.size()) / secs(t2, t3), n_batch, steps,
                steps ? double(steps * n_batch) / step_s : 0.0, steps ? double(steps) / step_s : 0.0);
    return 0;
  }
  int32_t tok = 0;
  double decode_s = 0, sample_s = 0;  // (the forward passes; every draw, the first included)
  llm::step_profile prof;
  if (profile) s.work.prof = &prof;  // (the decode's passes only: the prompt's have run)
  std::size_t decode_bytes = 0;
  for (std::size_t i = 0; i < n_gen; ++i) {
    sp.seed = seed + i;
    const auto a0 = clk::now();
    lutkit::ar_sample(lutkit::logits_view::f32(s.logits.data(), 1, hp.n_vocab), &sp, &tok, tp);
    sample_s += secs(a0, clk::now());
    out.push_back(tok);
    if (i + 1 == n_gen || tok == voc.eos) break;
    const auto a = clk::now();
    s.forward(&tok, 1, tp);
    decode_s += secs(a, clk::now());
    decode_bytes += mdl->matrix_bytes() + s.kv_bytes(s.pos);
  }
  const auto t4 = clk::now();

  std::printf("tokens:");
  for (int32_t t : out) std::printf(" %d", t);
  std::printf("\n");
  if (voc.k != llm::vocab::kind::none) {
    std::string text;
    for (int32_t t : out) text += voc.piece(t);
    std::printf("text: %s\n", text.c_str());
  }
  const std::size_t nd = out.size() > 1 ? out.size() - 1 : 0;
  std::printf("model: %s, %zu layers, %zu wide, %zu / %zu heads, %zu MiB packed; threads %zu\n", hp.arch_name.c_str(),
              hp.n_layer, hp.n_embd, hp.n_head, hp.n_head_kv, mdl->matrix_bytes() >> 20, threads);
  std::printf("load %.2f s", secs(t0, t1));
  if (plan != "default") std::printf(" (plan %s: %.2f s)", plan.c_str(), secs(t1, t1p));
  std::printf(" | prompt %zu tokens: TTFT %.3f s, prefill %.1f tok/s | decode %zu tokens at context %zu: "
              "%.2f tok/s",
              prompt.size(), secs(t2, t3), double(prompt.size()) / secs(t2, t3), nd, fill + prompt.size(),
              nd ? double(nd) / decode_s : 0.0);
  if (nd) {
    const double roof = double(decode_bytes) / (gbps * 1e9);  // seconds a plain read of those bytes takes
    std::printf(", %.2f of the memory roofline (read %.1f GB/s)", roof / decode_s, gbps);
  }
  // the model at the decode's mean context, against the measured mean step: a forward pass and
  // a draw (the mean of every draw's time)
  llm::step_model sm;
  if (nd && plan == "auto") {
    const std::size_t rates = cal.costs.kernels.size();
    sm = llm::model_decode_step(*mdl, cal, fill + prompt.size() + nd / 2, &sp);
    // (the attention's and the draw's rates, measured here when the calibration lacked them, kept too)
    if (!cal_path.empty() && cal.costs.kernels.size() != rates) lutkit::plan::save_calibration(cal, cal_path);
  }
  const double draw_s = sample_s / double(out.size()), step_s = nd ? decode_s / double(nd) + draw_s : 0.0;
  if (nd && plan == "auto") {
    std::printf(" | modelled step %.2f ms (matrices %.2f, attention %.2f, sampling %.3f) / measured %.2f ms "
                "(sampling %.3f): %.2f",
                sm.total_s() * 1e3, sm.matrices_s * 1e3, sm.attention_s * 1e3, sm.sampling_s * 1e3, step_s * 1e3,
                draw_s * 1e3, sm.total_s() / step_s);
  }
  std::printf(" | total %.2f s\n", secs(t0, t4));
  if (profile && prof.passes) {
    const bool modelled = plan == "auto";
    std::printf("decode by stage, ms a step over %zu passes: %s\n", prof.passes,
                modelled ? "modelled / measured (ratio)" : "measured");
    auto row = [&](const char* name, double model_s, double measured_s, bool has_model) {
      if (has_model && modelled)
        std::printf("  %-18s %8.3f / %8.3f (%.2f)\n", name, model_s * 1e3, measured_s * 1e3,
                    measured_s > 0 ? model_s / measured_s : 0.0);
      else
        std::printf("  %-18s %8s   %8.3f\n", name, "", measured_s * 1e3);
    };
    const double n = double(prof.passes);
    double staged = 0;
    for (std::size_t i = 0; i < llm::stages; ++i) {
      row(llm::stage_name(llm::stage(i)), sm.stage_s[i], prof.stage_s[i] / n, true);
      staged += prof.stage_s[i];
    }
    row("rest of the pass", 0, (prof.passes_s - staged) / n, false);
    row("draw", sm.sampling_s, draw_s, true);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "lutkit_llm: %s\n", e.what());
  return 1;
}
