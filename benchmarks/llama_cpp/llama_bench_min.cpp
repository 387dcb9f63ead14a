// llama_bench_min: the smallest llama.cpp timing harness for the lutkit comparison.
//
//   llama_bench_min MODEL.gguf T [fa=0|1|auto] [n_prompt=512] [n_gen=64] [-v]
//
// Loads the model on the CPU backend, creates a context (n_ctx 1024, n_batch = n_ubatch = 512,
// n_threads = n_threads_batch = T), then
//   pp: one warm-up llama_decode of an n_prompt-token batch of random ids, memory cleared, then a
//       timed llama_decode of another n_prompt random ids (positions 0..n_prompt-1)
//   tg: memory cleared, an (untimed) n_prompt-token prompt, then n_gen timed single-token
//       llama_decode calls at positions n_prompt .. n_prompt+n_gen-1 (context ~n_prompt)
// and prints `pp512 <tok/s> tg <tok/s>`. Random ids as in llama-bench; no sampling.
#include "llama.h"

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

static bool g_verbose = false;
static void log_cb(ggml_log_level level, const char* text, void*) {
  if (g_verbose || level >= GGML_LOG_LEVEL_WARN) std::fputs(text, stderr);
}

// CPU seconds (user + sys) of the whole process so far: with the wall time of a phase, the share
// of T cores the process actually got (the machine is shared)
static double cpu_s() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return double(r.ru_utime.tv_sec + r.ru_stime.tv_sec) + 1e-6 * double(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

static double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL.gguf THREADS [fa=0|1|auto] [n_prompt=512] [n_gen=64] [-v]\n", argv[0]);
    return 2;
  }
  const char* path = argv[1];
  const int T = std::atoi(argv[2]);
  std::string fa = argc > 3 ? argv[3] : "0";
  const int n_prompt = argc > 4 ? std::atoi(argv[4]) : 512;
  const int n_gen = argc > 5 ? std::atoi(argv[5]) : 64;
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "-v")) g_verbose = true;

  llama_log_set(log_cb, nullptr);
  llama_backend_init();

  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(path, mp);
  if (!model) {
    std::fprintf(stderr, "llama_model_load_from_file failed for %s\n", path);
    return 1;
  }

  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 1024;
  cp.n_batch = 512;
  cp.n_ubatch = 512;
  cp.n_threads = T;
  cp.n_threads_batch = T;
  cp.flash_attn_type = fa == "1"      ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                       : fa == "auto" ? LLAMA_FLASH_ATTN_TYPE_AUTO
                                      : LLAMA_FLASH_ATTN_TYPE_DISABLED;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) {
    std::fprintf(stderr, "llama_init_from_model failed\n");
    return 1;
  }

  char desc[256];
  llama_model_desc(model, desc, sizeof desc);
  std::fprintf(stderr, "model: %s, %.1f MiB, %.3f B params; threads %d; fa %s\n", desc,
               double(llama_model_size(model)) / (1 << 20), double(llama_model_n_params(model)) / 1e9, T,
               fa.c_str());
  std::fprintf(stderr, "system_info: %s\n", llama_print_system_info());

  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int n_vocab = llama_vocab_n_tokens(vocab);
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int> pick(0, n_vocab - 1);
  auto random_tokens = [&](int n) {
    std::vector<llama_token> v(n);
    for (auto& t : v) t = pick(rng);
    return v;
  };
  llama_memory_t mem = llama_get_memory(ctx);

  auto decode_prompt = [&](std::vector<llama_token>& toks) {
    // one ubatch of n_prompt <= 512 tokens; llama_batch_get_one outputs the last token's logits
    if (llama_decode(ctx, llama_batch_get_one(toks.data(), (int32_t)toks.size())) != 0) {
      std::fprintf(stderr, "llama_decode (prompt) failed\n");
      std::exit(1);
    }
    llama_synchronize(ctx);
  };

  // pp: warm-up, then timed
  {
    auto w = random_tokens(n_prompt);
    decode_prompt(w);
    llama_memory_clear(mem, true);
  }
  auto p = random_tokens(n_prompt);
  const double t0 = now_s(), c0 = cpu_s();
  decode_prompt(p);
  const double t_pp = now_s() - t0, c_pp = cpu_s() - c0;

  // tg at context ~n_prompt
  llama_memory_clear(mem, true);
  auto p2 = random_tokens(n_prompt);
  decode_prompt(p2);
  std::vector<llama_token> g = random_tokens(n_gen);
  const double t1 = now_s(), c1 = cpu_s();
  for (int i = 0; i < n_gen; ++i) {
    if (llama_decode(ctx, llama_batch_get_one(&g[i], 1)) != 0) {
      std::fprintf(stderr, "llama_decode (gen) failed\n");
      return 1;
    }
    llama_synchronize(ctx);
  }
  const double t_tg = now_s() - t1, c_tg = cpu_s() - c1;

  std::fprintf(stderr, "cores used (cpu s / wall s): pp %.2f of %d, tg %.2f of %d\n", c_pp / t_pp, T, c_tg / t_tg, T);
  std::printf("pp%d %.2f tg %.2f\n", n_prompt, n_prompt / t_pp, n_gen / t_tg);

  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
