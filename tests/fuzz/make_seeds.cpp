// Writes each fuzz target's seed corpus, made by lutkit's own packers and quantizers:
//   make_seeds <dir>   ->  <dir>/blob/*, <dir>/import/*, <dir>/streams/*, <dir>/gguf/* ...
// Every seed is a valid input of its target (the fuzzers mutate from there); the same files are
// committed in tests/fuzz/corpus/ and replayed by the normal test suite.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <lutkit/io/gguf_writer.hpp>
#include <lutkit/lutkit.hpp>
#include <lutkit/quant/q4nx.hpp>
#include <lutkit/quant/tile_group.hpp>

namespace {
using namespace lutkit;
namespace fs = std::filesystem;
using W2 = policy<fmt::uint_asym<2>, group<64>, table::lut4<int8_t, true>>;
using T3 = policy<fmt::ternary, per_channel, table::lut4<int8_t, false>>;
using NL = policy<fmt::codebook4<book::iq4_nl>, group<32>, table::lut4<int8_t, false>>;
using NX = policy<fmt::q4nx, group<32>, table::lut4<int8_t, false>>;
using K4 = policy<fmt::q4_k, group<32>>;
using K6 = policy<fmt::q6_k, group<16>>;

std::vector<float> weights(std::size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.f, 0.05f);
  std::vector<float> w(n);
  for (auto& v : w) v = d(rng);
  return w;
}

void write(const fs::path& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}
void put(std::vector<uint8_t>& b, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(uint8_t(v >> (8 * i)));
}
// the fuzz targets' shape encoding: a flag byte (< 0x80: a short form follows), M as u8, K as u16
std::vector<uint8_t> shape_prefix(int which, std::size_t M, std::size_t K) {
  std::vector<uint8_t> b{uint8_t(which), 0};
  put(b, M, 1);
  b.push_back(0);
  put(b, K, 2);
  return b;
}

template <class P>
void blob_seed(const fs::path& dir, int pick, std::size_t M, std::size_t K) {
  const auto w = weights(M * K, M * 131 + K);
  const auto wp = pack<P>(quantize<P>(w.data(), M, K));
  std::vector<uint8_t> b{uint8_t(pick)};
  b.insert(b.end(), wp.bytes(), wp.bytes() + wp.size_bytes());
  write(dir, "seed_" + P::name() + "_" + std::to_string(M) + "x" + std::to_string(K), b);
}

// llama.cpp blocks written from lutkit's quantized codes (code = q for q4_0 / iq4_nl / q5_0, q + 128
// for q8_0); `which` 7 is q5_0 (the fifth bits in qh before the nibbles)
template <class P>
void ggml_seed(const fs::path& dir, int which, std::size_t M, std::size_t K) {
  const auto w = weights(M * K, 7 + which);
  const auto q = quantize<P>(w.data(), M, K);
  auto b = shape_prefix(which, M, K);
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t g = 0; g < K / 32; ++g) {
      put(b, f32_to_f16(q.scale(m, g)), 2);
      const uint8_t* c = q.codes.data() + m * K + g * 32;
      if (which == 1) {
        for (int j = 0; j < 32; ++j) b.push_back(uint8_t(c[j] ^ 0x80));
      } else if (which == 7) {
        uint32_t qh = 0;
        for (int j = 0; j < 32; ++j) qh |= uint32_t(c[j] >> 4) << j;
        put(b, qh, 4);
        for (int j = 0; j < 16; ++j) b.push_back(uint8_t((c[j] & 15) | ((c[j + 16] & 15) << 4)));
      } else {
        for (int j = 0; j < 16; ++j) b.push_back(uint8_t(c[j] | (c[j + 16] << 4)));
      }
    }
  write(dir, "seed_ggml" + std::to_string(which) + "_" + std::to_string(M) + "x" + std::to_string(K), b);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds <dir>\n");
    return 2;
  }
  const fs::path root(argv[1]);
  // blob: byte 0 picks the policy (0 W2, 1 ternary, 2 IQ4_NL, 3 Q4NX, 4 Q4_K, 5 Q6_K), then a packed blob
  blob_seed<W2>(root / "blob", 0, 70, 128);
  blob_seed<W2>(root / "blob", 0, 1, 64);
  blob_seed<T3>(root / "blob", 1, 65, 100);
  blob_seed<NL>(root / "blob", 2, 33, 96);
  blob_seed<NX>(root / "blob", 3, 64, 64);
  blob_seed<K4>(root / "blob", 4, 40, 256);
  blob_seed<K6>(root / "blob", 5, 70, 48);
  // import: 0 q4_0, 1 q8_0, 2 iq4_nl (shape prefix + blocks), 3 GPTQ, 4 from_codes (raw bytes),
  // 5 q4_k, 6 q6_k, 8 q3_k, 9 q5_k, 10 q2_k, 11 q5_1 (below), 7 q5_0
  ggml_seed<policy<fmt::uint_sym<5>, group<32>>>(root / "import", 7, 6, 96);
  ggml_seed<policy<fmt::uint_sym<4>, group<32>, table::lut4<int8_t, false>>>(root / "import", 0, 5, 64);
  ggml_seed<policy<fmt::uint_sym<8>, group<32>, table::lut4<int8_t, false>>>(root / "import", 1, 3, 96);
  ggml_seed<NL>(root / "import", 2, 4, 32);
  {
    std::vector<uint8_t> b{3, 1, 1};
    std::mt19937_64 rng(3);
    for (int i = 0; i < 16 * 64 / 8 * 4; ++i) b.push_back(uint8_t(rng()));
    for (int i = 0; i < 2 * 16; ++i) put(b, f32_to_f16(0.01f * float(i + 1)), 2);
    for (int i = 0; i < 2 * 2 * 4; ++i) b.push_back(uint8_t(rng()));
    write(root / "import", "seed_gptq", b);
  }
  {
    std::vector<uint8_t> b{4, 5, 1};
    std::mt19937_64 rng(4);
    for (int i = 0; i < 6 * 64; ++i) b.push_back(uint8_t(rng() & 15));
    for (int i = 0; i < 6 * 2; ++i) {
      const float s = 0.02f;
      uint32_t u;
      std::memcpy(&u, &s, 4);
      put(b, u, 4);
    }
    for (int i = 0; i < 6 * 2; ++i) {
      const float z = 8.f;
      uint32_t u;
      std::memcpy(&u, &z, 4);
      put(b, u, 4);
    }
    write(root / "import", "seed_from_codes", b);
  }
  // import: 5 Q4_K, 6 Q6_K, 8 Q3_K, 9 Q5_K, 10 Q2_K, 11 Q5_1 (which, M, a flag byte < 0x80,
  // K / 256, then random_blocks' blocks)
  const std::pair<ggml_type, const char*> kq[] = {{ggml_type::q4_k, "seed_q4_k"}, {ggml_type::q6_k, "seed_q6_k"},
                                                  {ggml_type::q3_k, "seed_q3_k"}, {ggml_type::q5_k, "seed_q5_k"},
                                                  {ggml_type::q2_k, "seed_q2_k"}, {ggml_type::q5_1, "seed_q5_1"}};
  for (int i = 0; i < 6; ++i) {
    const int which = i < 2 ? 5 + i : 6 + i;
    std::vector<uint8_t> b{uint8_t(which), 3, 0, 2};
    const auto blocks = ggml::random_blocks(kq[i].first, 3 * 512, uint64_t(which));
    b.insert(b.end(), blocks.begin(), blocks.end());
    write(root / "import", kq[i].second, b);
  }
  // streams: 0 Q4NX, 1 tile-group super-groups
  {
    const auto w = weights(32 * 256, 11);
    const auto bytes = export_q4nx(quantize_q4nx(w.data(), 32, 256));
    auto b = shape_prefix(0, 32, 256);
    b.insert(b.end(), bytes.begin(), bytes.end());
    write(root / "streams", "seed_q4nx_32x256", b);
  }
  {
    const auto w = weights(64 * 64, 12);
    const auto bytes = pack_super_groups(quantize_tile_group<fmt::uint_asym<4>>(w.data(), 64, 64));
    auto b = shape_prefix(1, 64, 64);
    b.insert(b.end(), bytes.begin(), bytes.end());
    write(root / "streams", "seed_tile_group_64x64", b);
  }
  // attention and sampling: parameter bytes (the targets read a fixed sequence of fields, zeros
  // past the end), a few valid settings each; the harness builds the tensors from the rest
  {
    std::mt19937_64 rng(21);
    for (int i = 0; i < 6; ++i) {
      // byte 0: prefill (odd) or decode; then heads_kv, group ratio, GQA tweak, head dim index,
      // scale, softcap, mask, window, exp, K/V type, length, layout, then values
      std::vector<uint8_t> b{uint8_t(i % 2), uint8_t(1 + i % 3), uint8_t(i % 4), 1, uint8_t(i % 3), 1, 7, 1, 1,
                             uint8_t(i % 3), 0, uint8_t(i % 3 == 1 ? 5 + i : 0), uint8_t(i % 2), uint8_t(i % 3), uint8_t(9 + 5 * i), uint8_t(i)};
      for (int j = 0; j < 3000; ++j) b.push_back(uint8_t(rng()));
      write(root / "attention", "seed_" + std::to_string(i), b);
    }
    for (int i = 0; i < 8; ++i) {
      // byte 0: logit type (bits 0-1) and dLLM / AR (bit 2); then the parameters and logits
      std::vector<uint8_t> b{uint8_t(i)};
      for (int j = 0; j < 4000; ++j) b.push_back(uint8_t(rng() % (j < 40 ? 4 : 256)));
      write(root / "sampling", "seed_" + std::to_string(i), b);
    }
  }
  // gguf: files written by lutkit's GGUF writer
  {
    // every value type, nested arrays, and a small tensor of each type lutkit dequantizes
    for (uint32_t version : {2u, 3u}) {
      gguf::writer w(version);
      if (version == 2) w.set_alignment(64);
      w.add_u8("t.u8", 200).add_i8("t.i8", -100).add_u16("t.u16", 65535).add_i16("t.i16", -32768);
      w.add_u32("t.u32", 7).add_i32("t.i32", -7).add_u64("t.u64", ~uint64_t(0)).add_i64("t.i64", INT64_MIN);
      w.add_f32("t.f32", 1e-5f).add_f64("t.f64", -2.5).add_bool("t.bool", true).add_string("t.str", "llama");
      w.add_array("t.scores", std::vector<float>{0.f, -1.f, 2.5f});
      w.add_array("t.tokens", std::vector<std::string>{"<unk>", "<s>", "</s>", "<0x0A>"});
      w.add_array("t.types", std::vector<int32_t>{2, 3, 3, 6});
      w.add_array("t.flags", gguf::array_builder(gguf::value_type::boolean).push(true).push(false));
      gguf::array_builder inner(gguf::value_type::array);
      inner.push(gguf::array_builder(gguf::value_type::u16).push(uint16_t(1)).push(uint16_t(2)));
      inner.push(gguf::array_builder(gguf::value_type::string).push("x"));
      w.add_array("t.nested", gguf::array_builder(gguf::value_type::array).push(inner).push(gguf::array_builder(gguf::value_type::array)));
      const ggml_type types[] = {ggml_type::q4_0, ggml_type::q4_1, ggml_type::q5_0, ggml_type::q5_1, ggml_type::q8_0,
                                 ggml_type::iq4_nl, ggml_type::q2_k, ggml_type::q3_k, ggml_type::q4_k, ggml_type::q5_k,
                                 ggml_type::q6_k, ggml_type::tq1_0, ggml_type::tq2_0, ggml_type::f16, ggml_type::bf16,
                                 ggml_type::f32};
      uint64_t seed = version;
      for (ggml_type t : types) {
        const uint64_t ne0 = ggml_info(t).block_elems == 1 ? 16 : ggml_info(t).block_elems;
        const uint64_t rows = 1 + seed % 2;
        w.add_tensor("w." + std::string(ggml_type_name(t)), t, {ne0, rows},
                     ggml::random_blocks(t, std::size_t(ne0 * rows), seed++));
      }
      w.add_tensor("w.empty", ggml_type::f32, {4, 0}, std::vector<uint8_t>{});
      write(root / "gguf", "seed_values_v" + std::to_string(version), w.to_bytes());
    }
    // a tiny llama model (every key and tensor llama.cpp loads)
    gguf::tiny_llama_options o;
    o.n_vocab = 259;
    o.n_embd = 32;
    o.n_ff = 64;
    o.n_layer = 1;
    o.n_head = 2;
    o.n_head_kv = 1;
    o.embedding_type = ggml_type::q8_0;
    write(root / "gguf", "seed_tiny_llama_q4_0", gguf::tiny_llama(o).to_bytes());
  }
  std::printf("seeds written to %s\n", root.c_str());
  return 0;
}
