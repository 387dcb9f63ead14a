// Fuzz target: the sampling entry points with parameters and logits straight from the input —
// k, p, min-p, temperature, penalties, history tokens, mask / EOS ids, active block, threshold,
// NaN / Inf logits in fp32, bf16, fp16, and MXFP8 bytes (codes and exponents, NaN encodings
// included). Byte 0 picks dLLM or AR and the logit type. What is accepted must give tokens inside
// the vocabulary, never a NaN logit's token, an argmax where the parameters ask for one (checked
// against the double reference), and no NaN confidence.
#include <lutkit/sampling/autoregressive.hpp>
#include <lutkit/sampling/dllm.hpp>
#include <lutkit/sampling/reference.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "fuzz_support.hpp"

namespace {
using namespace lutkit;
constexpr const char* kTarget = "sampling";

struct logits_buf {
  std::vector<uint8_t> bytes, scales;
  logits_view view;
};

// rows x V logits of type t from the input (zeros once it runs out)
logits_buf make_logits(lutkit_fuzz::reader& r, logit_type t, std::size_t rows, std::size_t V) {
  logits_buf b;
  const std::size_t eb = t == logit_type::f32 ? 4 : t == logit_type::mxfp8 ? 1 : 2;
  b.bytes.resize(rows * V * eb + 4);
  for (auto& x : b.bytes) x = r.u8();
  if (t == logit_type::mxfp8) {
    b.scales.resize(rows * ((V + 31) / 32));
    for (auto& x : b.scales) x = r.u8();
  }
  switch (t) {
    case logit_type::f32: b.view = logits_view::f32(reinterpret_cast<const float*>(b.bytes.data()), rows, V); break;
    case logit_type::bf16: b.view = logits_view::bf16(reinterpret_cast<const uint16_t*>(b.bytes.data()), rows, V); break;
    case logit_type::f16: b.view = logits_view::f16(reinterpret_cast<const uint16_t*>(b.bytes.data()), rows, V); break;
    case logit_type::mxfp8: b.view = logits_view::mxfp8(b.bytes.data(), b.scales.data(), rows, V); break;
  }
  return b;
}

// the lowest index of the largest non-NaN value (-1: every value NaN)
long argmax_ref(const std::vector<double>& v) {
  long best = -1;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!std::isnan(v[i]) && (best < 0 || v[i] > v[std::size_t(best)])) best = long(i);
  return best;
}

void dllm_case(lutkit_fuzz::reader& r, logit_type t) {
  const std::size_t B = 1 + r.u8() % 3, L = 1 + r.u8() % 6, V = 1 + r.u16() % 300;
  dllm_params p;
  p.mask_id = int32_t(r.u8() & 1 ? r.u32() : r.u8() % (V + 2));
  p.temperature = r.u8() & 1 ? r.f32() : float(r.u8() % 3) * 0.5f;
  p.seed = r.u64();
  p.confidence = dllm_confidence(r.u8() % 3);
  p.block_begin = r.u8() % (L + 1);
  p.block_end = r.u8() & 1 ? std::size_t(-1) : r.u8() % (L + 2);
  p.threshold_mode = r.u8() & 1;
  p.threshold = r.u8() & 1 ? r.f32() : 0.5f;
  p.eos_id = int32_t(r.u8() & 1 ? r.u32() : r.u8() % (V + 1));
  p.eos = dllm_eos(r.u8() % 3);
  p.suppress_mask_token = r.u8() & 1;
  std::vector<int32_t> x(B * L);
  for (auto& v : x) v = r.u8() & 1 ? p.mask_id : int32_t(r.u8() % V);
  std::vector<std::size_t> k(B);
  for (auto& v : k) v = r.u8() & 0x80 ? std::size_t(r.u64()) : r.u8() % (L + 2);
  const auto lg = make_logits(r, t, B * L, V);
  std::vector<int32_t> x0(B * L);
  std::vector<float> conf(B * L);
  try {
    dllm_sample(lg.view, B, L, x.data(), p, x0.data(), conf.data());
  } catch (const lutkit::error&) {
    return;
  }
  lutkit_fuzz::trace(kTarget, "dllm accepted");
  for (std::size_t i = 0; i < B * L; ++i) {
    if (std::isnan(conf[i])) lutkit_fuzz::fail(kTarget, "dllm: NaN confidence", double(i));
    if (conf[i] == -std::numeric_limits<float>::infinity() && x0[i] == x[i]) continue;
    if (x0[i] < 0 || std::size_t(x0[i]) >= V) lutkit_fuzz::fail(kTarget, "dllm: token outside [0, V)", x0[i], double(V));
    const auto row = reference::logits_row(lg.view, i);
    if (std::isnan(row[std::size_t(x0[i])])) lutkit_fuzz::fail(kTarget, "dllm: sampled a NaN logit", x0[i]);
    const bool suppressed = (p.eos == dllm_eos::suppress && x0[i] == p.eos_id) || (p.suppress_mask_token && x0[i] == p.mask_id);
    if (suppressed) lutkit_fuzz::fail(kTarget, "dllm: sampled a suppressed token", x0[i]);
    if (p.temperature == 0.f && p.eos != dllm_eos::suppress && !p.suppress_mask_token) {
      const long a = argmax_ref(row);
      if (a != long(x0[i])) lutkit_fuzz::fail(kTarget, "dllm: temperature 0 is not the first argmax", x0[i], double(a));
    }
  }
  std::vector<uint8_t> tr(B * L);
  try {
    const std::size_t n = dllm_select(conf.data(), B, L, k.data(), p, tr.data());
    std::size_t ones = 0;
    for (std::size_t i = 0; i < B * L; ++i) {
      ones += tr[i];
      if (tr[i] && conf[i] == -std::numeric_limits<float>::infinity())
        lutkit_fuzz::fail(kTarget, "dllm_select: transferred a position that was not sampled", double(i));
    }
    if (ones != n) lutkit_fuzz::fail(kTarget, "dllm_select: count differs from the flags", double(n), double(ones));
    dllm_update(x.data(), x0.data(), tr.data(), B, L, p);
  } catch (const lutkit::error&) {
  }
}

void ar_case(lutkit_fuzz::reader& r, logit_type t) {
  const std::size_t rows = 1 + r.u8() % 3, V = 1 + r.u16() % 300;
  std::vector<ar_params> ps(rows);
  std::vector<std::vector<int32_t>> hist(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    ar_params& p = ps[i];
    p.temperature = r.u8() & 1 ? r.f32() : float(r.u8() % 3) * 0.4f;
    p.top_k = r.u8() & 1 ? int32_t(r.u32()) : int32_t(r.u8() % (V + 2));
    p.top_p = r.u8() & 1 ? r.f32() : float(r.u8()) / 255.f;
    p.min_p = r.u8() & 1 ? r.f32() : float(r.u8() % 8) / 16.f;
    p.repetition_penalty = r.u8() & 1 ? r.f32() : 1.f + float(r.u8() % 4) * 0.1f;
    p.presence_penalty = r.u8() & 1 ? r.f32() : 0.f;
    p.frequency_penalty = r.u8() & 1 ? r.f32() : 0.f;
    hist[i].resize(r.u8() % 8);
    for (auto& h : hist[i]) h = r.u8() & 0x80 ? int32_t(r.u32()) : int32_t(r.u8() % V);
    p.history = hist[i].empty() ? nullptr : hist[i].data();
    p.history_len = hist[i].size();
    p.seed = r.u64();
    if (r.u8() & 1) p.chain = vllm_chain;
    if (r.u8() % 8 == 0) {  // an arbitrary chain: stages as bytes
      p.chain.n = uint8_t(r.u8() % 7);
      for (auto& s : p.chain.s) s = ar_stage(r.u8() % 6);
    }
  }
  const auto lg = make_logits(r, t, rows, V);
  std::vector<int32_t> tok(rows, -7);
  try {
    ar_sample(lg.view, ps.data(), tok.data());
  } catch (const lutkit::error&) {
    return;
  }
  lutkit_fuzz::trace(kTarget, "ar accepted");
  for (std::size_t i = 0; i < rows; ++i) {
    if (tok[i] < 0 || std::size_t(tok[i]) >= V) lutkit_fuzz::fail(kTarget, "ar: token outside [0, V)", tok[i], double(V));
    const auto row = reference::logits_row(lg.view, i);
    if (std::isnan(row[std::size_t(tok[i])])) lutkit_fuzz::fail(kTarget, "ar: sampled a NaN logit", tok[i]);
    const ar_params& p = ps[i];
    const bool greedy = p.temperature == 0.f || (p.top_k == 1 && detail::chain_has(p.chain, ar_stage::top_k));
    if (greedy && p.history_len == 0) {
      const long a = argmax_ref(row);
      if (a != long(tok[i])) lutkit_fuzz::fail(kTarget, "ar: greedy / top-1 is not the first argmax", tok[i], double(a));
    }
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  lutkit_fuzz::reader r{data, size};
  const uint8_t sel = r.u8();
  const logit_type t = logit_type(sel % 4);
  if ((sel >> 2) & 1)
    ar_case(r, t);
  else
    dllm_case(r, t);
  return 0;
}
