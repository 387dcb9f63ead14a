// Which table layout and activation paradigm to choose: the error of each lutkit decode and prefill
// route on llama.cpp tensors (Q4_0, Q8_0 imported from blocks; IQ4_NL), measured against the exact
// product of the dequantized weights (ref::gemv, double), beside llama.cpp's own error (its
// activations rounded to q8_0 per 32: ref::gemv_q8_0_activations). Prints the table
// docs/llama_formats.md ("Accuracy") records, then decode_gemv's default at one activation row for
// every imported type against llama.cpp's arithmetic, with and without outlier channels in the
// activations. Errors are relative RMS over all outputs.
//   lutkit_accuracy [M K N seeds]   (default 1024 4096 8 3)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <lutkit/lutkit.hpp>

using namespace lutkit;

namespace {

struct tensor {
  std::vector<float> w, x;  // M x K weights, N x K activations
};

// Weights with row-to-row scale spread and rare outliers; activations with a few outlier
// channels (as LLM hidden states have), or without them (outliers false: plain Gaussian).
tensor make_tensor(std::size_t M, std::size_t K, std::size_t N, unsigned seed, bool outliers = true) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::uniform_real_distribution<float> ud(0.25f, 2.f);
  tensor t;
  t.w.resize(M * K);
  for (std::size_t m = 0; m < M; ++m) {
    const float rs = ud(rng);
    for (std::size_t k = 0; k < K; ++k) t.w[m * K + k] = nd(rng) * rs * (rng() % 500 == 0 ? 8.f : 1.f);
  }
  std::vector<float> ch(K);
  for (auto& c : ch) c = rng() % 100 == 0 && outliers ? 20.f : 1.f;
  t.x.resize(N * K);
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t k = 0; k < K; ++k) t.x[n * K + k] = nd(rng) * ch[k];
  return t;
}

// llama.cpp's block quantizers, from their definition: Q4_0 d = (the value of largest |w|) / -8,
// q = min(15, trunc(w / d + 8.5)); Q8_0 d = amax / 127, q = round(w / d); d stored as fp16.
std::vector<uint8_t> q4_0_blocks(const std::vector<float>& w, std::size_t M, std::size_t K) {
  std::vector<uint8_t> out(M * K / 32 * 18);
  for (std::size_t b = 0; b < M * K / 32; ++b) {
    const float* v = &w[b * 32];
    const float d = detail::signed_absmax(v, 32, 1) / -8.f, id = d != 0.f ? 1.f / d : 0.f;
    const uint16_t dh = f32_to_f16(d);
    std::memcpy(&out[b * 18], &dh, 2);
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::min(15, int(v[j] * id + 8.5f)), q1 = std::min(15, int(v[j + 16] * id + 8.5f));
      out[b * 18 + 2 + j] = uint8_t(q0 | (q1 << 4));
    }
  }
  return out;
}
std::vector<uint8_t> q8_0_blocks(const std::vector<float>& w, std::size_t M, std::size_t K) {
  std::vector<uint8_t> out(M * K / 32 * 34);
  for (std::size_t b = 0; b < M * K / 32; ++b) {
    const float* v = &w[b * 32];
    float amax = 0.f;
    for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(v[j]));
    const float d = amax / 127.f, id = d != 0.f ? 1.f / d : 0.f;
    const uint16_t dh = f32_to_f16(d);
    std::memcpy(&out[b * 34], &dh, 2);
    for (int j = 0; j < 32; ++j) out[b * 34 + 2 + j] = uint8_t(int8_t(std::lround(v[j] * id)));
  }
  return out;
}

struct err_acc {
  double e2 = 0, r2 = 0;
  void add(const std::vector<float>& y, const std::vector<double>& ref) {
    for (std::size_t i = 0; i < y.size(); ++i) {
      e2 += (double(y[i]) - ref[i]) * (double(y[i]) - ref[i]);
      r2 += ref[i] * ref[i];
    }
  }
  void add(const std::vector<double>& y, const std::vector<double>& ref) {
    for (std::size_t i = 0; i < y.size(); ++i) {
      e2 += (y[i] - ref[i]) * (y[i] - ref[i]);
      r2 += ref[i] * ref[i];
    }
  }
  double rel() const { return std::sqrt(e2 / r2); }
};

struct row {
  std::string format, route;
  err_acc err;
};

template <class P>
quantized<P> import_for(const tensor& t, std::size_t M, std::size_t K) {
  using F = typename P::format;
  if constexpr (std::is_same_v<F, fmt::uint_sym<4>>) {
    const auto b = q4_0_blocks(t.w, M, K);
    return import_q4_0<P>(b.data(), M, K, b.size());
  } else if constexpr (std::is_same_v<F, fmt::uint_sym<8>>) {
    const auto b = q8_0_blocks(t.w, M, K);
    return import_q8_0<P>(b.data(), M, K, b.size());
  } else {
    return quantize<P>(t.w.data(), M, K);  // IQ4_NL: lutkit's RTN quantizer into the same format
  }
}

template <class P>
void lut_row(std::vector<row>& rows, const char* format, const char* route, const tensor& t, std::size_t M,
             std::size_t K, std::size_t N, const std::vector<double>& exact, std::size_t slot, thread_pool& pool) {
  const auto q = import_for<P>(t, M, K);
  const auto wp = pack<P>(q);
  std::vector<float> y(N * M);
  lut_gemv(wp, build_tables<P>(t.x.data(), N, K), y.data(), 0, &pool);
  if (rows.size() <= slot) rows.resize(slot + 1);
  rows[slot].format = format;
  rows[slot].route = route;
  rows[slot].err.add(y, exact);
}

template <class P>
std::size_t dq_rows(std::vector<row>& rows, const char* format, const tensor& t, std::size_t M, std::size_t K,
                    std::size_t N, std::size_t slot, thread_pool& pool, std::vector<double>& exact) {
  const auto q = import_for<P>(t, M, K);
  const auto wp = pack<P>(q);
  exact = ref::gemv(q, t.x.data(), N);
  std::vector<float> y(N * M);
  const struct {
    act_type a;
    const char* name;
  } acts[] = {{act_type::int8, "dequant_gemm act_type::int8 (per activation row)"},
              {act_type::int8_group, "dequant_gemm act_type::int8_group (per scale group)"},
              {act_type::bf16, "dequant_gemm act_type::bf16"},
              {act_type::fp32, "dequant_gemm act_type::fp32"}};
  if (rows.size() < slot + 6) rows.resize(slot + 6);
  for (std::size_t i = 0; i < 4; ++i) {
    dequant_gemm(wp, t.x.data(), N, K, y.data(), acts[i].a, 0, 0, &pool);
    rows[slot + i].format = format;
    rows[slot + i].route = acts[i].name;
    rows[slot + i].err.add(y, exact);
  }
  decode_gemv(wp, t.x.data(), N, K, y.data(), decode_method::best, 0, 0, &pool);
  rows[slot + 4].format = format;
  rows[slot + 4].route = "decode_gemv (decode_method::best)";
  rows[slot + 4].err.add(y, exact);
  rows[slot + 5].format = format;
  rows[slot + 5].route = "llama.cpp: activations as q8_0";
  rows[slot + 5].err.add(ref::gemv_llama_activations(q, t.x.data(), N), exact);
  return slot + 6;
}

// A float codebook (NF4, g64; no llama.cpp format): the bf16 route, and the int8 decode with
// split levels (decode_gemv, two activation rows per call: the N it serves)
template <class P>
std::size_t float_book_rows(std::vector<row>& rows, const char* format, const tensor& t, std::size_t M, std::size_t K,
                            std::size_t N, std::size_t slot, thread_pool& pool) {
  const auto q = quantize<P>(t.w.data(), M, K);
  const auto wp = pack<P>(q);
  const auto exact = ref::gemv(q, t.x.data(), N);
  if (rows.size() < slot + 3) rows.resize(slot + 3);
  std::vector<float> y(N * M);
  dequant_gemm(wp, t.x.data(), N, K, y.data(), act_type::bf16, 0, 0, &pool);
  rows[slot].format = format;
  rows[slot].route = "dequant_gemm act_type::bf16 (decode_gemv best, N >= 3)";
  rows[slot].err.add(y, exact);
  rows[slot + 1].format = format;
  rows[slot + 1].route = "decode_gemv decode_method::int8, split levels (best, N <= 2)";
  if (best_decode_method<P>(2) == decode_method::int8) {
    for (std::size_t n = 0; n < N; n += 2)
      decode_gemv(wp, t.x.data() + n * K, std::min<std::size_t>(2, N - n), K, y.data() + n * M, decode_method::int8, 0,
                  0, &pool);
    rows[slot + 1].err.add(y, exact);
  } else {
    rows[slot + 1].route += " (not on this CPU: bf16)";
    rows[slot + 1].err.add(std::vector<double>(exact), exact);
  }
  rows[slot + 2].format = format;
  rows[slot + 2].route = "llama.cpp: activations as q8_0";
  rows[slot + 2].err.add(ref::gemv_llama_activations(q, t.x.data(), N), exact);
  return slot + 3;
}

}  // namespace

// decode_gemv's default for one activation row (best_decode_method<P>(1) on this CPU, the policy's
// default tables) against llama.cpp's arithmetic for the format (activations per `block`: 32 =
// q8_0, 256 = q8_K), with and without outlier channels; beside it, for the formats the LUT-GEMV
// runs, the LUT-GEMV with mirrored int8 tables (the faster opt-in) and with int16 tables summed
// whole for every plane (lut4i16m), without outlier channels.
// Ternary: codes 0, 1, 2 for -1, 0, 1 (TQ2_0 / TQ1_0)
template <class P, bool Ternary = false>
void one_row(const char* format, std::size_t block, std::size_t M, std::size_t K, int seeds) {
  using P8 = policy<typename P::format, typename P::group_shape, table::lut4<int8_t, true>>;
  using P16 = policy<typename P::format, typename P::group_shape, table::lut4<int16_t, true>>;
  err_acc e[2], l[2], e8, e16;
  for (int o = 0; o < 2; ++o)
    for (int s = 0; s < seeds; ++s) {
      const tensor t = make_tensor(M, K, 1, 2000u + unsigned(s), o == 0);
      quantized<P> q = import_for<P>(t, M, K);
      if constexpr (Ternary) {
        std::mt19937 rng(7u + unsigned(s));
        for (auto& c : q.codes) c = uint8_t(rng() % 3);
        for (auto& z : q.zeros) z = 1.f;
      }
      const auto wp = pack<P>(q);
      const auto exact = ref::gemv(q, t.x.data(), 1);
      std::vector<float> y(M);
      decode_gemv(wp, t.x.data(), 1, K, y.data());
      e[o].add(y, exact);
      l[o].add(ref::gemv_llama_activations(q, t.x.data(), 1, 0, block), exact);
      if constexpr (P::lut_gemv_capable)
        if (o == 1) {
          lut_gemv(pack<P8>(with_policy<P8>(q)), build_tables<P8>(t.x.data(), 1, K), y.data());
          e8.add(y, exact);
          if constexpr (!Ternary) {
            lut_gemv(pack<P16>(with_policy<P16>(q)), build_tables<P16>(t.x.data(), 1, K), y.data());
            e16.add(y, exact);
          }
        }
    }
  const std::string name = P::name();
  const std::string tables =
      P::lut_gemv_capable ? name.substr(name.find("_lut4") + 1, name.find("_host") - name.find("_lut4") - 1) : "-";
  std::printf("| %s | `%s` | %s | %.2f | %.2f |", format, decode_method_name(best_decode_method<P>(1)), tables.c_str(),
              e[0].rel() / l[0].rel(), e[1].rel() / l[1].rel());
  if constexpr (P::lut_gemv_capable && !Ternary)
    std::printf(" %.2f | %.3f |\n", e8.rel() / l[1].rel(), e16.rel() / l[1].rel());
  else if constexpr (P::lut_gemv_capable)
    std::printf(" %.2f | - |\n", e8.rel() / l[1].rel());
  else
    std::printf(" - | - |\n");
}

int main(int argc, char** argv) {
  const std::size_t M = argc > 4 ? std::strtoul(argv[1], nullptr, 10) : 1024;
  const std::size_t K = argc > 4 ? std::strtoul(argv[2], nullptr, 10) : 4096;
  const std::size_t N = argc > 4 ? std::strtoul(argv[3], nullptr, 10) : 8;
  const int seeds = argc > 4 ? std::atoi(argv[4]) : 3;
  using i8 = table::lut4<int8_t, false>;
  using i8m = table::lut4<int8_t, true>;
  using i16 = table::lut4<int16_t, false>;
  using i16m = table::lut4<int16_t, true>;
  thread_pool pool(2);
  std::vector<row> rows;
  for (int s = 0; s < seeds; ++s) {
    const tensor t = make_tensor(M, K, N, 1000u + unsigned(s));
    std::vector<double> exact;
    std::size_t slot = dq_rows<policy<fmt::uint_sym<4>, group<32>, i8>>(rows, "Q4_0", t, M, K, N, 0, pool, exact);
    lut_row<policy<fmt::uint_sym<4>, group<32>, i8>>(rows, "Q4_0", "lut_gemv, table lut4<int8_t, false>", t, M, K, N, exact, slot++, pool);
    lut_row<policy<fmt::uint_sym<4>, group<32>, i8m>>(rows, "Q4_0", "lut_gemv, table lut4<int8_t, true> (mirrored)", t, M, K, N, exact, slot++, pool);
    lut_row<policy<fmt::uint_sym<4>, group<32>, i16>>(rows, "Q4_0", "lut_gemv, table lut4<int16_t, false>", t, M, K, N, exact, slot++, pool);
    lut_row<policy<fmt::uint_sym<4>, group<32>, i16m>>(rows, "Q4_0", "lut_gemv, table lut4<int16_t, true>", t, M, K, N, exact, slot++, pool);
    lut_row<policy<fmt::uint_sym<4>, group<32>>>(rows, "Q4_0", "lut_gemv, default table lut4<int16_t, true, 2>", t, M,
                                                 K, N, exact, slot++, pool);
    slot = dq_rows<policy<fmt::uint_sym<8>, group<32>, i8>>(rows, "Q8_0", t, M, K, N, slot, pool, exact);
    slot = dq_rows<policy<fmt::codebook4<book::iq4_nl>, group<32>, i8>>(rows, "IQ4_NL", t, M, K, N, slot, pool, exact);
    // a wider group (no llama.cpp format; its K-quants take q8_K activations, one scale per 256)
    using W4 = policy<fmt::uint_asym<4>, group<64>, i8>;
    slot = dq_rows<W4>(rows, "W4 g64 asym", t, M, K, N, slot, pool, exact);
    if (rows.size() <= slot) rows.resize(slot + 1);
    rows[slot].format = "W4 g64 asym";
    rows[slot].route = "llama.cpp K-quant style: activations as q8_K (per 256)";
    rows[slot++].err.add(ref::gemv_llama_activations(quantize<W4>(t.w.data(), M, K), t.x.data(), N, 0, 256), exact);
    lut_row<policy<fmt::uint_asym<4>, group<64>, i8>>(rows, "W4 g64 asym", "lut_gemv, table lut4<int8_t, false>", t, M, K, N, exact, slot++, pool);
    lut_row<policy<fmt::uint_asym<4>, group<64>, i8m>>(rows, "W4 g64 asym", "lut_gemv, table lut4<int8_t, true> (mirrored)", t, M, K, N, exact, slot++, pool);
    slot = float_book_rows<policy<fmt::codebook4<book::nf4>, group<64>>>(rows, "NF4 g64", t, M, K, N, slot, pool);
  }
  std::printf("Relative RMS error against the exact product of the dequantized weights (%zu x %zu, N = %zu, "
              "%d seeds)\n\n",
              M, K, N, seeds);
  std::printf("| format | route | error | / llama.cpp's (q8_0 activations) |\n| --- | --- | --- | --- |\n");
  double llama = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    // ratios against each format's q8_0 row
    if (i == 0 || rows[i].format != rows[i - 1].format)
      for (std::size_t j = i; j < rows.size() && rows[j].format == rows[i].format; ++j)
        if (rows[j].route == "llama.cpp: activations as q8_0") llama = rows[j].err.rel();
    std::printf("| %s | %s | %.2e | %.2f |\n", rows[i].format.c_str(), rows[i].route.c_str(), rows[i].err.rel(),
                rows[i].err.rel() / llama);
  }
  std::printf(
      "\nOne activation row: decode_gemv's default on this CPU with the policy's default tables, its error / "
      "llama.cpp's (q8_0 activations for the g32 formats, q8_K for the K-quants, TQ and W4 g64), activations with "
      "and without outlier channels; and the LUT-GEMV with mirrored int8 tables (opt-in) and with int16 tables summed "
      "whole for every plane (lut4i16m) without them (%zu x %zu, %d seeds)\n\n| format | method | default tables | "
      "with outliers | without | lut4i8m, without | lut4i16m, without |\n| --- | --- | --- | --- | --- | --- | --- |\n",
      M, K, seeds);
  one_row<policy<fmt::uint_sym<4>, group<32>>>("Q4_0", 32, M, K, seeds);
  one_row<policy<fmt::uint_sym<8>, group<32>>>("Q8_0", 32, M, K, seeds);
  one_row<policy<fmt::codebook4<book::iq4_nl>, group<32>>>("IQ4_NL", 32, M, K, seeds);
  one_row<policy<fmt::q4_1, group<32>>>("Q4_1", 32, M, K, seeds);
  one_row<policy<fmt::uint_sym<5>, group<32>>>("Q5_0", 32, M, K, seeds);
  one_row<policy<fmt::q5_1, group<32>>>("Q5_1", 32, M, K, seeds);
  one_row<policy<fmt::q2_k, group<16>>>("Q2_K", 256, M, K, seeds);
  one_row<policy<fmt::q3_k, group<16>>>("Q3_K", 256, M, K, seeds);
  one_row<policy<fmt::q4_k, group<32>>>("Q4_K", 256, M, K, seeds);
  one_row<policy<fmt::q5_k, group<32>>>("Q5_K", 256, M, K, seeds);
  one_row<policy<fmt::q6_k, group<16>>>("Q6_K", 256, M, K, seeds);
  one_row<policy<fmt::uint_asym<2>, group<256>>, true>("TQ2_0 / TQ1_0 (ternary)", 256, M, K, seeds);
  one_row<policy<fmt::uint_asym<4>, group<64>>>("W4 g64 asym", 256, M, K, seeds);
  return 0;
}
