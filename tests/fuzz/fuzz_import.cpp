// Fuzz target: the llama.cpp block importers (Q4_0, Q8_0, IQ4_NL, Q5_0, Q5_1, Q2_K ... Q6_K), the GPTQ importer and from_codes
// on fuzzed shapes and bytes (NaN, Inf, subnormal and negative scales, truncated buffers). Byte 0
// picks the importer, then M and K, then the tensor bytes. What an importer accepts must decode to
// exactly the value the source format defines (recomputed here from the raw bytes), and pack and
// run through the dequant-GEMM within its error bound. The direct packers (pack_q4_0 ...) must
// accept exactly what the importers accept and give the bytes of pack(import).
#include <cstring>

#include <lutkit/lutkit.hpp>

#include "fuzz_support.hpp"

namespace {
using namespace lutkit;
using Q40 = policy<fmt::uint_sym<4>, group<32>, table::lut4<int8_t, false>>;
using Q80 = policy<fmt::uint_sym<8>, group<32>, table::lut4<int8_t, false>>;
using NL = policy<fmt::codebook4<book::iq4_nl>, group<32>, table::lut4<int8_t, false>>;
using GP = policy<fmt::uint_asym<4>, group<32>, table::lut4<int8_t, false>>;
using Q50 = policy<fmt::uint_sym<5>, group<32>>;
using K4 = policy<fmt::q4_k, group<32>>;
using K6 = policy<fmt::q6_k, group<16>>;
using K3 = policy<fmt::q3_k, group<16>>;
using K5 = policy<fmt::q5_k, group<32>>;
using K2 = policy<fmt::q2_k, group<16>>;
using Q51 = policy<fmt::q5_1, group<32>>;
constexpr const char* kTarget = "import";

template <class P>
void run_kernel(const quantized<P>& q, uint64_t seed) {
  if (q.M * q.K > (std::size_t(1) << 16)) return;  // keep each execution fast
  lutkit_fuzz::trace(kTarget, P::name().c_str());
  const auto w = pack<P>(q);
  const std::size_t N = 1 + seed % 2;
  const auto x = lutkit_fuzz::activations(N * q.K, seed);
  std::vector<double> want, bound;
  lutkit_fuzz::reference(q, x, N, want, bound);
  std::vector<float> y(N * q.M);
  dequant_gemm<P>(w, x.data(), N, q.K, y.data(), act_type::fp32);
  lutkit_fuzz::check_close(kTarget, "dequant_gemm fp32", y.data(), want.data(), bound.data(), N * q.M);
}

// llama.cpp's own definition of a block's weights, from the raw bytes
float ggml_value(int which, const uint8_t* blk, int j) {
  uint16_t d16 = uint16_t(blk[0] | (unsigned(blk[1]) << 8));
  const float d = f16_to_f32(d16);
  static constexpr int8_t kv[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  if (which == 1) return d * float(int8_t(blk[2 + j]));
  if (which == 3) {  // Q5_0: 4 bytes of fifth bits (bit j of the little-endian word), then nibbles
    const int lo = j < 16 ? (blk[6 + j] & 15) : (blk[6 + j - 16] >> 4);
    return d * float((lo | (((blk[2 + j / 8] >> (j % 8)) & 1) << 4)) - 16);
  }
  const int nib = j < 16 ? (blk[2 + j] & 15) : (blk[2 + j - 16] >> 4);
  return which == 0 ? d * float(nib - 8) : d * float(kv[nib]);
}

template <class P>
void ggml_case(int which, const uint8_t* d, std::size_t n, std::size_t M, std::size_t K, uint64_t seed) {
  const std::size_t bb = which == 1 ? 34 : which == 3 ? 22 : 18;
  quantized<P> q;
  packed_weights<P> direct;
  bool direct_ok = true;
  try {
    direct = which == 0   ? pack_q4_0<P>(d, M, K, n)
             : which == 1 ? pack_q8_0<P>(d, M, K, n)
             : which == 3 ? pack_q5_0<P>(d, M, K, n)
                          : pack_iq4_nl<P>(d, M, K, n);
  } catch (const lutkit::error&) {
    direct_ok = false;
  }
  try {
    q = which == 0   ? import_q4_0<P>(d, M, K, n)
        : which == 1 ? import_q8_0<P>(d, M, K, n)
        : which == 3 ? import_q5_0<P>(d, M, K, n)
                     : import_iq4_nl<P>(d, M, K, n);
  } catch (const lutkit::error&) {
    if (direct_ok) lutkit_fuzz::fail(kTarget, "a direct packer accepted blocks the importer refuses", double(M), double(K));
    return;
  }
  if (!direct_ok) lutkit_fuzz::fail(kTarget, "a direct packer refused blocks the importer accepts", double(M), double(K));
  {
    const auto want = pack<P>(q);
    if (direct.size_bytes() != want.size_bytes() || std::memcmp(direct.bytes(), want.bytes(), want.size_bytes()) != 0)
      lutkit_fuzz::fail(kTarget, "a direct packer's blob differs from pack(import)", double(M), double(K));
  }
  if (n < M * (K / 32) * bb) lutkit_fuzz::fail(kTarget, "accepted a truncated block buffer", double(n));
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t k = 0; k < K; ++k) {
      const uint8_t* blk = d + (m * (K / 32) + k / 32) * bb;
      const float want = ggml_value(which, blk, int(k % 32));
      const float got = float(q.weight(m, k));
      if (!(got == want)) lutkit_fuzz::fail(kTarget, "imported weight differs from llama.cpp's value", got, want);
    }
  run_kernel(q, seed);
}

// the K-quants and Q5_1: the importer against ggml::dequantize_row (llama.cpp's definition,
// io/ggml_blocks.hpp), the in-place packer against pack(import)
template <class P>
struct block_type;
#define LUTKIT_FUZZ_BLOCK(P, t, e, bytes)                                                                  \
  template <>                                                                                          \
  struct block_type<P> {                                                                               \
    static constexpr ggml_type type = ggml_type::t;                                                    \
    static constexpr std::size_t E = e, bb = bytes;                                                    \
    static quantized<P> import(const uint8_t* d, std::size_t M, std::size_t K, std::size_t n) {        \
      return import_##t<P>(d, M, K, n);                                                                \
    }                                                                                                  \
    static packed_weights<P> pack(const uint8_t* d, std::size_t M, std::size_t K, std::size_t n) {     \
      return pack_##t<P>(d, M, K, n);                                                                  \
    }                                                                                                  \
  };
LUTKIT_FUZZ_BLOCK(K2, q2_k, 256, 84)
LUTKIT_FUZZ_BLOCK(K3, q3_k, 256, 110)
LUTKIT_FUZZ_BLOCK(K4, q4_k, 256, 144)
LUTKIT_FUZZ_BLOCK(K5, q5_k, 256, 176)
LUTKIT_FUZZ_BLOCK(K6, q6_k, 256, 210)
LUTKIT_FUZZ_BLOCK(Q51, q5_1, 32, 24)
#undef LUTKIT_FUZZ_BLOCK

template <class P>
void kquant_case(const uint8_t* d, std::size_t n, std::size_t M, std::size_t K, uint64_t seed) {
  using B = block_type<P>;
  quantized<P> q;
  packed_weights<P> direct;
  bool direct_ok = true;
  try {
    direct = B::pack(d, M, K, n);
  } catch (const lutkit::error&) {
    direct_ok = false;
  }
  try {
    q = B::import(d, M, K, n);
  } catch (const lutkit::error&) {
    if (direct_ok) lutkit_fuzz::fail(kTarget, "a K-quant packer accepted blocks the importer refuses", double(M), double(K));
    return;
  }
  if (!direct_ok) lutkit_fuzz::fail(kTarget, "a K-quant packer refused blocks the importer accepts", double(M), double(K));
  {
    const auto want = pack<P>(q);
    if (direct.size_bytes() != want.size_bytes() || std::memcmp(direct.bytes(), want.bytes(), want.size_bytes()) != 0)
      lutkit_fuzz::fail(kTarget, "a K-quant packer's blob differs from pack(import)", double(M), double(K));
  }
  if (n < M * (K / B::E) * B::bb) lutkit_fuzz::fail(kTarget, "accepted a truncated K-quant buffer", double(n));
  std::vector<float> y(K);
  for (std::size_t m = 0; m < M; ++m) {
    ggml::dequantize_row(B::type, d + m * (K / B::E) * B::bb, K / B::E * B::bb, y.data(), K);
    for (std::size_t k = 0; k < K; ++k) {
      const float got = float(q.weight(m, k));
      if (!(got == y[k])) lutkit_fuzz::fail(kTarget, "imported K-quant weight differs from llama.cpp's value", got, y[k]);
    }
  }
  run_kernel(q, seed);
}

void gptq_case(lutkit_fuzz::reader& r, uint64_t seed) {
  // shapes the caller's buffers hold (a GPTQ tensor has no length field: its size is the caller's promise)
  const std::size_t M = 8 * (1 + r.u8() % 12), K = 32 * (1 + r.u8() % 6);
  std::vector<int32_t> qw(K / 8 * M), qz(K / 32 * (M / 8));
  std::vector<uint16_t> sc(K / 32 * M);
  for (auto& v : qw) v = int32_t(r.u32());
  for (auto& v : sc) v = r.u16();
  for (auto& v : qz) v = int32_t(r.u32());
  const bool minus_one = r.u8() & 1;
  quantized<GP> q;
  try {
    q = import_gptq<GP>(qw.data(), sc.data(), qz.data(), M, K, minus_one);
  } catch (const lutkit::error&) {
    return;
  }
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t k = 0; k < K; ++k) {
      const uint32_t code = (uint32_t(qw[(k / 8) * M + m]) >> ((k % 8) * 4)) & 15u;
      const uint32_t z = (uint32_t(qz[(k / 32) * (M / 8) + m / 8]) >> ((m % 8) * 4)) & 15u;
      const double s = f16_to_f32(sc[(k / 32) * M + m]);
      const double want = s * (double(code) - (double(z) + (minus_one ? 1.0 : 0.0)));
      if (!(q.weight(m, k) == want)) lutkit_fuzz::fail(kTarget, "GPTQ weight differs", q.weight(m, k), want);
    }
  run_kernel(q, seed);
}

void codes_case(lutkit_fuzz::reader& r, uint64_t seed) {
  const std::size_t M = 1 + r.u8() % 70, K = 32 * (1 + r.u8() % 8);
  std::vector<uint8_t> codes(M * K);
  std::vector<float> s(M * K / 32), z(M * K / 32);
  for (auto& v : codes) v = r.u8() & 0x1F;  // codes up to 31: some exceed 15
  for (auto& v : s) v = r.f32();
  for (auto& v : z) v = r.f32();
  quantized<GP> q;
  try {
    q = from_codes<GP>(codes.data(), s.data(), z.data(), M, K);
  } catch (const lutkit::error&) {
    return;
  }
  for (float v : q.scales)
    if (!std::isfinite(v)) lutkit_fuzz::fail(kTarget, "from_codes accepted a scale that rounds to non-finite", v);
  run_kernel(q, seed);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  lutkit_fuzz::reader r{data, size};
  const int which = r.u8() % 12;
  const uint64_t seed = uint64_t(size) * 0x9E3779B97F4A7C15ull + uint64_t(which);
  if (which == 5 || which == 6 || which >= 8) {  // K-quants (and Q5_1): M small, K a few super-blocks or not a multiple of 256
    const std::size_t M = r.u8() % 40, K = r.u8() & 0x80 ? std::size_t(r.u16()) : 256 * std::size_t(r.u8() % 4);
    if (which == 5) kquant_case<K4>(r.p, r.n, M, K, seed);
    else if (which == 6) kquant_case<K6>(r.p, r.n, M, K, seed);
    else if (which == 8) kquant_case<K3>(r.p, r.n, M, K, seed);
    else if (which == 9) kquant_case<K5>(r.p, r.n, M, K, seed);
    else if (which == 10) kquant_case<K2>(r.p, r.n, M, K, seed);
    else kquant_case<Q51>(r.p, r.n, M, K, seed);
  } else if (which <= 2 || which == 7) {
    // M and K straight from the input: zero, huge, not a multiple of 32, products that wrap
    const std::size_t M = r.u8() & 0x80 ? std::size_t(r.u64()) : std::size_t(r.u8()),
                      K = r.u8() & 0x80 ? std::size_t(r.u64()) : std::size_t(r.u16());
    if (which == 0) ggml_case<Q40>(0, r.p, r.n, M, K, seed);
    if (which == 1) ggml_case<Q80>(1, r.p, r.n, M, K, seed);
    if (which == 2) ggml_case<NL>(2, r.p, r.n, M, K, seed);
    if (which == 7) ggml_case<Q50>(3, r.p, r.n, M, K, seed);
  } else if (which == 3) {
    gptq_case(r, seed);
  } else {
    codes_case(r, seed);
  }
  return 0;
}
