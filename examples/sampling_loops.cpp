// lutkit sampling example: the two decoding loops an engine runs around its model, driving the
// sampling kernels on a toy logits generator (a deterministic stand-in for the model).
//   1. Diffusion LLM (LLaDA-style blocked denoising): the answer starts fully masked; each block
//      of `block` positions is denoised in `steps` steps, each step unmasking the most confident
//      positions (LLaDA's low-confidence remasking, top-k per step from unmask_schedule), then
//      again with Fast-dLLM's threshold mode.
//   2. Autoregressive decoding with Best-of-N: N rows sample continuations of the same prompt
//      (each row its own seed; top-k 40, top-p 0.95, T 0.8), scored by their log-probability.
#include <cmath>
#include <cstdio>
#include <vector>

#include <lutkit/lutkit.hpp>

using namespace lutkit;

namespace {
constexpr std::size_t V = 4096;
constexpr int32_t kMask = V - 1;

uint64_t mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7FB5D329728EA185ull;
  x ^= x >> 27;
  x *= 0x81DADEF4BC2DD44Dull;
  return x ^ (x >> 33);
}
float noise(uint64_t a, uint64_t b) { return float(mix(a * 0x9E3779B97F4A7C15ull + b) >> 40) * 0x1p-24f * 2.f - 1.f; }

// the "true" answer the toy model knows: token of position l in batch row b
int32_t answer(std::size_t b, std::size_t l) { return int32_t((b * 131 + l * 17 + 5) % (V - 1)); }

// Toy dLLM: every position's logits favour its answer token, the more so the more of its row is
// already unmasked (context makes the model sure); noise elsewhere.
void dllm_model(const std::vector<int32_t>& x, std::size_t B, std::size_t L, int step, std::vector<float>& logits) {
  for (std::size_t b = 0; b < B; ++b) {
    std::size_t known = 0;
    for (std::size_t l = 0; l < L; ++l) known += x[b * L + l] != kMask;
    for (std::size_t l = 0; l < L; ++l) {
      float* row = logits.data() + (b * L + l) * V;
      for (std::size_t v = 0; v < V; ++v) row[v] = 2.f * noise(uint64_t(step) * 1000003 + b * L + l, v);
      row[answer(b, l)] += 4.f + 10.f * float(known) / float(L) + noise(b * L + l, 77);
    }
  }
}

std::size_t denoise(std::size_t B, std::size_t L, std::size_t block, std::size_t steps, bool threshold,
                    thread_pool& pool, std::size_t& correct) {
  std::vector<int32_t> x(B * L, kMask);
  std::vector<float> logits(B * L * V);
  dllm_params p;
  p.mask_id = kMask;
  p.suppress_mask_token = true;
  p.threshold_mode = threshold;
  p.threshold = 0.9f;
  std::size_t model_calls = 0;
  for (std::size_t blk = 0; blk * block < L; ++blk) {
    p.block_begin = blk * block;
    p.block_end = std::min(L, p.block_begin + block);
    const auto sched = unmask_schedule(p.block_end - p.block_begin, steps);  // every row starts fully masked
    for (std::size_t s = 0;; ++s) {
      bool masked = false;
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t l = p.block_begin; l < p.block_end; ++l) masked |= x[b * L + l] == kMask;
      if (!masked || (!threshold && s == steps)) break;
      dllm_model(x, B, L, int(model_calls++), logits);
      const std::vector<std::size_t> k(B, threshold ? 0 : sched[s]);
      dllm_step(logits_view::f32(logits.data(), B * L, V), B, L, x.data(), k.data(), p, &pool);
    }
  }
  correct = 0;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t l = 0; l < L; ++l) correct += x[b * L + l] == answer(b, l);
  return model_calls;
}

// Toy AR model: the next token's logits depend on the previous token (a bigram table made of noise
// plus a few strong continuations).
void ar_model(int32_t prev, float* row) {
  for (std::size_t v = 0; v < V; ++v) row[v] = 3.f * noise(uint64_t(prev), v);
  for (int j = 0; j < 4; ++j) row[mix(uint64_t(prev) * 4 + uint64_t(j)) % V] += 6.f - float(j);
}
}  // namespace

int main() {
  thread_pool pool(2);
  // 1. diffusion LLM: B = 4 answers of L = 64 tokens, blocks of 16, 8 steps per block
  const std::size_t B = 4, L = 64;
  std::size_t ok = 0;
  const std::size_t calls = denoise(B, L, 16, 8, false, pool, ok);
  std::printf("dLLM top-k schedule:   %zu model calls, %zu / %zu tokens right\n", calls, ok, B * L);
  std::size_t ok2 = 0;
  const std::size_t calls2 = denoise(B, L, 16, 8, true, pool, ok2);
  std::printf("dLLM threshold 0.9:    %zu model calls, %zu / %zu tokens right\n", calls2, ok2, B * L);

  // 2. autoregressive Best-of-N: N = 8 rows, 24 tokens each
  const std::size_t N = 8, T = 24;
  std::vector<std::vector<int32_t>> seq(N, std::vector<int32_t>{42});
  std::vector<double> score(N, 0.0);
  std::vector<float> logits(N * V);
  std::vector<ar_params> ps(N);
  std::vector<int32_t> tok(N);
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t r = 0; r < N; ++r) {
      ar_model(seq[r].back(), logits.data() + r * V);
      ps[r].top_k = 40;
      ps[r].top_p = 0.95f;
      ps[r].temperature = 0.8f;
      ps[r].repetition_penalty = 1.1f;
      ps[r].history = seq[r].data();
      ps[r].history_len = seq[r].size();
      ps[r].seed = 1000 * t + r * 7919;  // per row and step
    }
    ar_sample(logits_view::f32(logits.data(), N, V), ps.data(), tok.data(), &pool);
    for (std::size_t r = 0; r < N; ++r) {  // the candidate's log-probability under the model
      const float* row = logits.data() + r * V;
      double m = row[0], s = 0;
      for (std::size_t v = 0; v < V; ++v) m = std::max(m, double(row[v]));
      for (std::size_t v = 0; v < V; ++v) s += std::exp(double(row[v]) - m);
      score[r] += double(row[tok[r]]) - m - std::log(s);
      seq[r].push_back(tok[r]);
    }
  }
  std::size_t best = 0;
  for (std::size_t r = 0; r < N; ++r) {
    std::printf("Best-of-%zu candidate %zu: log p = %8.3f\n", N, r, score[r]);
    if (score[r] > score[best]) best = r;
  }
  std::printf("chosen: candidate %zu\n", best);
  const bool good = ok >= B * L * 95 / 100 && ok2 >= B * L * 95 / 100;
  std::printf("%s\n", good ? "sampling loops: OK" : "sampling loops: UNEXPECTED RESULT");
  return good ? 0 : 1;
}
