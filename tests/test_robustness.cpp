// Hostile input (docs/robustness.md): header fields that wrap or disagree, shapes and strides past
// the documented maximum, non-finite or unstorable parameters. Each case names what it sends and
// the message it must get; docs/robustness.md's table lists the same cases.
#include <lutkit/quant/q4nx.hpp>
#include <lutkit/quant/tile_group.hpp>
#include <lutkit/gemm/tile_group_gemm.hpp>

#include "common.hpp"

using namespace lutkit;
using namespace lutkit_test;

using W2 = policy<fmt::uint_asym<2>, group<64>, table::lut4<int8_t, false>>;
using T3 = policy<fmt::ternary, per_channel, table::lut4<int8_t, false>>;
using Q40 = policy<fmt::uint_sym<4>, group<32>, table::lut4<int8_t, false>>;
using NX = policy<fmt::q4nx, group<32>, table::lut4<int8_t, false>>;

namespace {
template <class P>
std::vector<uint8_t> blob_bytes(std::size_t M, std::size_t K) {
  std::mt19937_64 rng(11);
  const auto w = random_weights(rng, M * K);
  const auto wp = pack<P>(quantize<P>(w.data(), M, K));
  return {wp.bytes(), wp.bytes() + wp.size_bytes()};
}
blob_header& header_of(std::vector<uint8_t>& b) { return *reinterpret_cast<blob_header*>(b.data()); }
template <class P>
void refuse(const std::vector<uint8_t>& b, const char* words) {
  CHECK_THROWS_WITH(packed_weights<P>::from_bytes(b.data(), b.size()), Catch::Contains(words));
}
}  // namespace

TEST_CASE("blob headers whose shape arithmetic would wrap are refused, naming the field", "[robustness]") {
  const auto good = blob_bytes<W2>(70, 128);
  auto b = good;
  header_of(b).M = ~uint64_t(0);  // 2^64 - 1 rows: padding to 64 wraps to 0
  refuse<W2>(b, "header field M = 18446744073709551615");
  b = good;
  header_of(b).M = (uint64_t(1) << 58) + 1;  // M x group bytes wraps
  refuse<W2>(b, "exceeds the largest dimension");
  b = good;
  header_of(b).K = uint64_t(1) << 63;
  refuse<W2>(b, "header field K");
  b = good;
  header_of(b).M = uint64_t(1) << 31;  // each within max_dim, the product past max_elements
  header_of(b).K = uint64_t(1) << 30;
  refuse<W2>(b, "2^40 elements");
  b = good;
  header_of(b).K = 100;  // not a multiple of the group
  refuse<W2>(b, "not a multiple of the policy's group size 64");
  b = good;
  header_of(b).M = 0;
  refuse<W2>(b, "empty shape");
}

TEST_CASE("blob header fields that disagree with each other are refused, naming the field", "[robustness]") {
  const auto good = blob_bytes<W2>(70, 128);
  auto b = good;
  header_of(b).data_bytes += 64;
  refuse<W2>(b, "header field data_bytes");
  b = good;
  header_of(b).header_bytes = 1 << 30;
  refuse<W2>(b, "header field header_bytes");
  b = good;
  header_of(b).M = 200;  // a self-consistent header for more rows than the bytes hold
  header_of(b).data_bytes = packed_layout(W2::spec, 200, 128).total_bytes;
  refuse<W2>(b, "needs");
  b = good;
  b.resize(b.size() + 64);  // trailing bytes
  refuse<W2>(b, "size is");
  b = good;
  header_of(b).policy_hash ^= 1;
  std::memset(header_of(b).policy_name, 'A', sizeof(blob_header::policy_name));  // not NUL-terminated
  refuse<W2>(b, "packed for policy 'AAAA");
}

TEST_CASE("blob contents the kernels cannot run are refused at from_bytes", "[robustness]") {
  const auto good = blob_bytes<W2>(70, 128);
  const packed_layout L(W2::spec, 70, 128);
  auto b = good;
  const uint16_t nan16 = 0x7E00, inf16 = 0x7C00, big = 0x7BFF;  // fp16 NaN, +Inf, 65504
  std::memcpy(b.data() + sizeof(blob_header) + L.scale_offset(0, 1) + 2 * 5, &nan16, 2);
  refuse<W2>(b, "scale of row 5, group 1 is not finite");
  b = good;
  std::memcpy(b.data() + sizeof(blob_header) + L.zero_offset(1, 0) + 2 * 3, &inf16, 2);
  refuse<W2>(b, "zero of row 67, group 0 is not finite");
  b = good;  // a padded row (M = 70 pads to 128) with NaN is refused too
  std::memcpy(b.data() + sizeof(blob_header) + L.scale_offset(1, 0) + 2 * 63, &nan16, 2);
  refuse<W2>(b, "row 127");
  b = good;  // finite but huge: 65504 is a valid fp16, the weights stay finite: accepted
  std::memcpy(b.data() + sizeof(blob_header) + L.scale_offset(0, 0), &big, 2);
  CHECK_NOTHROW(packed_weights<W2>::from_bytes(b.data(), b.size()));

  // a ternary index the packer never writes (14, 15) would read a table entry no triple has
  auto t = blob_bytes<T3>(65, 100);
  const packed_layout LT(T3::spec, 65, 100);
  t[sizeof(blob_header) + LT.lone_chunk_offset(0, 1) + 7] = 0xE0;
  refuse<T3>(t, "not a valid mirrored index");

  // bf16 parameters (Q4NX): a finite scale whose weights overflow float
  auto nx = blob_bytes<NX>(32, 64);
  const packed_layout LN(NX::spec, 32, 64);
  const uint16_t huge_bf16 = 0x7F00;  // 1.7e38: x 15 overflows float
  std::memcpy(nx.data() + sizeof(blob_header) + LN.scale_offset(0, 0), &huge_bf16, 2);
  refuse<NX>(nx, "overflow float weights");

  // super-group parameters (the K-quants): a non-finite super-scale or super-minimum in the super
  // table reaches every group of its super-group; a finite one whose weights overflow float too
  using Q6K = policy<fmt::q6_k, group<16>>;
  using Q4K = policy<fmt::q4_k, group<32>>;
  auto k6 = blob_bytes<Q6K>(70, 512);
  const packed_layout L6(Q6K::spec, 70, 512);
  const float fnan = std::numeric_limits<float>::quiet_NaN(), finf = std::numeric_limits<float>::infinity();
  std::memcpy(k6.data() + sizeof(blob_header) + L6.super_offset(1, 16) + 4 * 2, &fnan, 4);
  refuse<Q6K>(k6, "scale of row 66, group 16 is not finite");
  auto k4 = blob_bytes<Q4K>(64, 512);
  const packed_layout L4(Q4K::spec, 64, 512);
  std::memcpy(k4.data() + sizeof(blob_header) + L4.super_min_offset(0, 8) + 4 * 9, &finf, 4);
  refuse<Q4K>(k4, "zero of row 9, group 8 is not finite");
  k4 = blob_bytes<Q4K>(64, 512);
  const float huge = 3e36f;  // x an int8 code x 15: past float
  std::memcpy(k4.data() + sizeof(blob_header) + L4.super_offset(0, 0) + 4 * 4, &huge, 4);
  k4[sizeof(blob_header) + L4.scale_offset(0, 0) + 4] = 100;
  refuse<Q4K>(k4, "overflow float weights");
}

TEST_CASE("kernel shapes and strides past the documented maximum are refused", "[robustness]") {
  std::mt19937_64 rng(5);
  const std::size_t M = 64, K = 128;
  const auto w = random_weights(rng, M * K);
  const auto wp = pack<W2>(quantize<W2>(w.data(), M, K));
  std::vector<float> x(2 * K), y(2 * M);
  // the strides are checked before any byte is read, so these small buffers are never overrun
  CHECK_THROWS_WITH(dequant_gemm<W2>(wp, x.data(), std::size_t(1) << 32, K, y.data()), Catch::Contains("exceeds the largest dimension"));
  CHECK_THROWS_WITH(dequant_gemm<W2>(wp, x.data(), 2, K, y.data(), act_type::fp32, ~std::size_t(0) / 2),
                    Catch::Contains("ldx"));
  CHECK_THROWS_WITH(dequant_gemm<W2>(wp, x.data(), std::size_t(1) << 30, K, y.data(), act_type::fp32, std::size_t(1) << 20),
                    Catch::Contains("2^40 elements"));
  CHECK_THROWS_WITH(build_tables<W2>(x.data(), 3, K, std::size_t(1) << 40), Catch::Contains("ldx"));
  const auto t = build_tables<W2>(x.data(), 2, K);
  CHECK_THROWS_WITH(lut_gemv<W2>(wp, t, y.data(), std::size_t(1) << 40), Catch::Contains("ldy"));
  CHECK_THROWS_WITH(fused_dq_gemv<W2>(wp, x.data(), 2, K, y.data(), 0, std::size_t(1) << 41), Catch::Contains("ldy"));
  std::vector<float> out(M * K);
  CHECK_THROWS_WITH(dequantize<W2>(wp, out.data(), dq_type::f32, std::size_t(1) << 35), Catch::Contains("ldo"));
}

TEST_CASE("importers refuse wrapping shapes, short buffers and unstorable parameters", "[robustness]") {
  std::vector<uint8_t> blocks(18 * 8, 0);
  // M x K wraps 64 bits: refused before any allocation or read
  CHECK_THROWS_WITH(import_q4_0<Q40>(blocks.data(), std::size_t(1) << 40, std::size_t(1) << 40, blocks.size()),
                    Catch::Contains("exceeds the largest dimension"));
  CHECK_THROWS_WITH(import_q4_0<Q40>(blocks.data(), std::size_t(1) << 30, std::size_t(1) << 30, blocks.size()),
                    Catch::Contains("2^40 elements"));
  // an explicit size of 0 is a buffer of 0 bytes, not "unchecked"
  CHECK_THROWS_WITH(import_q4_0<Q40>(blocks.data(), 4, 64, 0), Catch::Contains("buffer of 0 bytes"));
  // a NaN scale names its block and row
  blocks[2 * 18 + 0] = 0x00;
  blocks[2 * 18 + 1] = 0x7E;
  CHECK_THROWS_WITH(import_q4_0<Q40>(blocks.data(), 4, 64, blocks.size()), Catch::Contains("block 2 (row 1)"));
  // negative and subnormal fp16 scales are llama.cpp's own and stay exact
  blocks[2 * 18 + 1] = 0x80;  // -0 + subnormal bits below
  blocks[2 * 18 + 0] = 0x01;
  const auto q = import_q4_0<Q40>(blocks.data(), 4, 64, blocks.size());
  CHECK(q.scale(1, 0) == -0x1p-24f);

  // Q4NX: the byte count is checked against the shape before anything is allocated
  std::vector<uint8_t> nx(5120, 0);
  CHECK_THROWS_WITH(import_q4nx(nx.data(), nx.size(), std::size_t(1) << 31, std::size_t(1) << 9), Catch::Contains("bytes, expected"));
  CHECK_THROWS_WITH(import_q4nx(nx.data(), nx.size(), 32, std::size_t(1) << 41), Catch::Contains("exceeds the largest dimension"));

  // from_codes: a finite float scale that fp16 cannot store
  std::vector<uint8_t> codes(128, 1);
  std::vector<float> s(2, 1e6f), z(2, 1.f);
  CHECK_THROWS_WITH(from_codes<W2>(codes.data(), s.data(), z.data(), 1, 128), Catch::Contains("overflows the blob's fp16"));
  s.assign(2, 0.5f);
  z[1] = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH(from_codes<W2>(codes.data(), s.data(), z.data(), 1, 128), Catch::Contains("zero is not finite at row 0, group 1"));

  // tile-group stream: shape past the maximum, then a size that disagrees
  std::vector<uint8_t> tg(1024, 0);
  CHECK_THROWS_AS(tile_group_weights<fmt::uint_asym<4>>::from_bytes(tg.data(), tg.size(), std::size_t(1) << 40, 32),
                  lutkit::error);
  CHECK_THROWS_WITH(tile_group_weights<fmt::uint_asym<4>>::from_bytes(tg.data(), tg.size(), 64, 64), Catch::Contains("bytes, expected"));
}

TEST_CASE("a policy for another target never runs host code", "[robustness][targets]") {
  using S = policy<fmt::uint_asym<2>, group<64>, table::lut4<int8_t, false>, target::sme>;
  using H = policy<fmt::uint_asym<2>, group<64>, table::lut4<int8_t, false>, target::hvx>;
  std::mt19937_64 rng(9);
  const std::size_t M = 64, K = 128;
  const auto w = random_weights(rng, M * K);
  const auto x = random_activations(rng, K, act_kind::gaussian);
  std::vector<float> y(M);
  const auto ws = pack<S>(quantize<S>(w.data(), M, K));  // packing is the shared tiling spec: fine anywhere
#if !defined(LUTKIT_HAVE_SME_GEMV)
  CHECK_THROWS_WITH(lut_gemv<S>(ws, build_tables<S>(x.data(), 1, K), y.data()), Catch::Contains("targets sme"));
#else
  // an aarch64 build with the SME kernels: the SME LUT-GEMV runs where the CPU has SME, and a host
  // target cannot be named for it
  if (detail::sme_gemv::cpu_supported()) {
    const auto ts = build_tables<S>(x.data(), 1, K);
    CHECK_NOTHROW(lut_gemv<S>(ws, ts, y.data()));
    CHECK_THROWS_WITH(lut_gemv<S>(ws, ts, y.data(), 0, nullptr, hwy_backend::available_targets().front()),
                      Catch::Contains("cannot be named"));
  } else {
    CHECK_THROWS_WITH(build_tables<S>(x.data(), 1, K), Catch::Contains("lacks"));
  }
#endif
  CHECK_THROWS_WITH(build_tables<H>(x.data(), 1, K), Catch::Contains("targets hvx"));
  // the hvx blob (128-row tiles, vlut16 order) packs on the host; no host kernel runs it
  const auto wh = pack<H>(quantize<H>(w.data(), M, K));
  CHECK_THROWS_WITH(dequant_gemm<H>(wh, x.data(), 1, K, y.data(), act_type::fp32), Catch::Contains("targets hvx"));
  CHECK_THROWS_WITH(dequant_gemm<H>(wh, x.data(), 1, K, y.data(), act_type::int8), Catch::Contains("targets hvx"));
  CHECK_THROWS_WITH(fused_dq_gemv<H>(wh, x.data(), 1, K, y.data()), Catch::Contains("targets hvx"));
  CHECK_THROWS_WITH(decode_gemv<H>(wh, x.data(), 1, K, y.data()), Catch::Contains("targets hvx"));
#if !defined(LUTKIT_HAVE_SME_DQ)
  CHECK_THROWS_WITH(dequant_gemm<S>(ws, x.data(), 1, K, y.data(), act_type::fp32), Catch::Contains("targets sme"));
  CHECK_THROWS_WITH(fused_dq_gemv<S>(ws, x.data(), 1, K, y.data()), Catch::Contains("targets sme"));
#else
  // an aarch64 build with the SME kernels: they run where the CPU has SME, and refuse the rest
  if (detail::sme::cpu_supported()) {
    CHECK_NOTHROW(dequant_gemm<S>(ws, x.data(), 1, K, y.data(), act_type::fp32));
    CHECK_THROWS_WITH(fused_dq_gemv<S>(ws, x.data(), 1, K, y.data()), Catch::Contains("no FusedDQP"));
  } else {
    CHECK_THROWS_WITH(dequant_gemm<S>(ws, x.data(), 1, K, y.data(), act_type::fp32), Catch::Contains("lacks"));
  }
#endif
  // and a blob packed for one target is refused by another's policy
  CHECK_THROWS_WITH(packed_weights<H>::from_bytes(ws.bytes(), ws.size_bytes()), Catch::Contains("packed for policy"));
}

TEST_CASE("thread pools: back-to-back jobs of uneven tasks on two pools, every task run once", "[robustness][threads]") {
  // The retirement of a job races with workers that saw it: a worker counted after the caller's
  // check could read the retired job from the caller's frame (before its sequentially consistent
  // handshake, a two-pool run like this one crashed or hung in about 3% of runs on x86). More
  // threads than this machine's cores, so workers are preempted inside the handshake.
  thread_pool a(3), b(2);
  std::atomic<long> sum{0};
  long expect = 0;
  const int jobs = scaled_cases(20000);
  for (int it = 0; it < jobs; ++it) {
    const std::size_t n = 1 + std::size_t(it % 7);
    a.run(n, [&](std::size_t i) {
      long x = 0;
      for (long k = 0; k < long(i) * 500; ++k) {
        x += k;
        __asm__ volatile("" : "+r"(x));  // a task of i * 500 steps the compiler keeps
      }
      sum += long(i) + 1;
    });
    b.run(n, [&](std::size_t i) { sum += long(i) + 1; });
    expect += 2 * long(n) * long(n + 1) / 2;
  }
  CHECK(sum.load() == expect);
}
