// GGUF files (docs/gguf.md): the writer -> reader round trip (every value type, nested arrays,
// versions 2 and 3, alignments, every tensor byte), the reader's refusals (one case per hostile
// input, each naming its field and offset), and the llama.cpp block dequantizers against a reading
// of the published block layouts in double precision, written here independently.
// (No kernel header: this suite compiles in seconds.)
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <lutkit/io/ggml_blocks.hpp>
#include <lutkit/io/gguf.hpp>
#include <lutkit/io/gguf_writer.hpp>

using lutkit::ggml_type;
namespace gguf = lutkit::gguf;
namespace ggml = lutkit::ggml;
using gguf::value_type;

namespace {

// ------------------------------------------------------------------ metadata trees
// A value the test means to write: scalars as their little-endian bytes, strings, arrays.
struct node {
  value_type type = value_type::u8;
  std::vector<uint8_t> raw = {};  // scalar bytes
  std::string str = {};
  value_type elem = value_type::u8;
  std::vector<node> kids = {};
};

template <class T>
std::vector<uint8_t> le_bytes(T v) {
  std::vector<uint8_t> b(sizeof(T));
  std::memcpy(b.data(), &v, sizeof(T));
  return b;
}

node random_scalar(value_type t, std::mt19937_64& rng) {
  node n{t, {}, {}};
  const uint64_t r = rng();
  // a third of the values are edges: 0, all ones, the sign bit alone
  const uint64_t bits = r % 3 == 0 ? 0 : r % 3 == 1 ? ~uint64_t(0) : (rng() % 2 ? rng() : uint64_t(1) << 63);
  const uint32_t sb = gguf::scalar_bytes(t);
  for (uint32_t i = 0; i < sb; ++i) n.raw.push_back(uint8_t(bits >> (8 * i)));
  if (t == value_type::boolean) n.raw[0] = uint8_t(r & 1);
  // the sign bit alone must land on the top byte of the type
  if (r % 3 == 2 && sb > 0 && t != value_type::boolean && (rng() & 1)) {
    std::fill(n.raw.begin(), n.raw.end(), 0);
    n.raw.back() = 0x80;
  }
  return n;
}
std::string random_string(std::mt19937_64& rng) {
  static const char* pool[] = {"", "a", "llama", "\xE2\x96\x81the", "<0x0A>", "tab\there", "nul\0inside"};
  const int pick = int(rng() % 8);
  if (pick < 6) return pool[pick];
  if (pick == 6) return std::string("nul\0inside", 10);
  std::string s(rng() % 40, 'x');
  for (auto& c : s) c = char(rng());
  return s;
}
node random_node(value_type t, std::mt19937_64& rng, int depth) {
  if (t == value_type::string) return node{t, {}, random_string(rng)};
  if (t != value_type::array) return random_scalar(t, rng);
  node n{t, {}, {}};
  // element type: any, arrays while the depth allows
  do n.elem = value_type(rng() % 13);
  while (n.elem == value_type::array && depth >= 4);
  const std::size_t len = rng() % 6;
  for (std::size_t i = 0; i < len; ++i) n.kids.push_back(random_node(n.elem, rng, depth + 1));
  return n;
}

gguf::array_builder to_builder(const node& n) {
  gguf::array_builder a(n.elem);
  for (const auto& k : n.kids) {
    switch (k.type) {
#define LUTKIT_PUSH(tag, T)                  \
  case value_type::tag: {                    \
    T v;                                     \
    std::memcpy(&v, k.raw.data(), sizeof v); \
    a.push(v);                               \
    break;                                   \
  }
      LUTKIT_PUSH(u8, uint8_t)
      LUTKIT_PUSH(i8, int8_t)
      LUTKIT_PUSH(u16, uint16_t)
      LUTKIT_PUSH(i16, int16_t)
      LUTKIT_PUSH(u32, uint32_t)
      LUTKIT_PUSH(i32, int32_t)
      LUTKIT_PUSH(u64, uint64_t)
      LUTKIT_PUSH(i64, int64_t)
      LUTKIT_PUSH(f32, float)
      LUTKIT_PUSH(f64, double)
#undef LUTKIT_PUSH
      case value_type::boolean: a.push(k.raw[0] != 0); break;
      case value_type::string: a.push(std::string_view(k.str)); break;
      case value_type::array: a.push(to_builder(k)); break;
    }
  }
  return a;
}

void add_to(gguf::writer& w, const std::string& key, const node& n) {
  const auto get = [&](auto v) {
    std::memcpy(&v, n.raw.data(), sizeof v);
    return v;
  };
  switch (n.type) {
    case value_type::u8: w.add_u8(key, get(uint8_t())); break;
    case value_type::i8: w.add_i8(key, get(int8_t())); break;
    case value_type::u16: w.add_u16(key, get(uint16_t())); break;
    case value_type::i16: w.add_i16(key, get(int16_t())); break;
    case value_type::u32: w.add_u32(key, get(uint32_t())); break;
    case value_type::i32: w.add_i32(key, get(int32_t())); break;
    case value_type::u64: w.add_u64(key, get(uint64_t())); break;
    case value_type::i64: w.add_i64(key, get(int64_t())); break;
    case value_type::f32: w.add_f32(key, get(float())); break;
    case value_type::f64: w.add_f64(key, get(double())); break;
    case value_type::boolean: w.add_bool(key, n.raw[0] != 0); break;
    case value_type::string: w.add_string(key, n.str); break;
    case value_type::array: w.add_array(key, to_builder(n)); break;
  }
}

template <class T>
bool same_bits(T got, const std::vector<uint8_t>& raw) {
  return raw.size() == sizeof(T) && std::memcmp(&got, raw.data(), sizeof(T)) == 0;
}
// the value read back equals what was written: type, typed accessor bits, raw bytes in the file
void check_value(const gguf::value& v, const node& n, std::span<const uint8_t> file) {
  REQUIRE(v.type() == n.type);
  switch (n.type) {
    case value_type::u8: CHECK(same_bits(v.as_u8(), n.raw)); break;
    case value_type::i8: CHECK(same_bits(v.as_i8(), n.raw)); break;
    case value_type::u16: CHECK(same_bits(v.as_u16(), n.raw)); break;
    case value_type::i16: CHECK(same_bits(v.as_i16(), n.raw)); break;
    case value_type::u32: CHECK(same_bits(v.as_u32(), n.raw)); break;
    case value_type::i32: CHECK(same_bits(v.as_i32(), n.raw)); break;
    case value_type::u64: CHECK(same_bits(v.as_u64(), n.raw)); break;
    case value_type::i64: CHECK(same_bits(v.as_i64(), n.raw)); break;
    case value_type::f32: CHECK(same_bits(v.as_f32(), n.raw)); break;
    case value_type::f64: CHECK(same_bits(v.as_f64(), n.raw)); break;
    case value_type::boolean: CHECK(v.as_bool() == (n.raw[0] != 0)); break;
    case value_type::string: CHECK(v.as_string() == n.str); break;
    case value_type::array: {
      const auto a = v.as_array();
      REQUIRE(a.elem_type() == n.elem);
      REQUIRE(a.size() == n.kids.size());
      for (std::size_t i = 0; i < a.size(); ++i) check_value(a[i], n.kids[i], file);
      CHECK_THROWS_AS(a[a.size()], lutkit::error);
      break;
    }
  }
  if (const uint32_t sb = gguf::scalar_bytes(n.type); sb != 0) {
    REQUIRE(v.offset() + sb <= file.size());
    CHECK(std::memcmp(file.data() + v.offset(), n.raw.data(), sb) == 0);
  }
}

struct tensor_spec {
  std::string name;
  ggml_type type;
  std::vector<uint64_t> ne;
  std::vector<uint8_t> bytes;
};
std::vector<tensor_spec> random_tensors(std::mt19937_64& rng) {
  const ggml_type types[] = {ggml_type::f32, ggml_type::f16, ggml_type::bf16, ggml_type::q4_0, ggml_type::q8_0,
                             ggml_type::q4_k, ggml_type::q6_k, ggml_type::tq1_0, ggml_type::iq2_xxs, ggml_type::i32,
                             ggml_type::q5_1, ggml_type::mxfp4};
  std::vector<tensor_spec> out;
  const std::size_t n = 1 + rng() % 6;
  for (std::size_t i = 0; i < n; ++i) {
    tensor_spec t;
    t.name = "blk." + std::to_string(i) + ".w";
    t.type = types[rng() % std::size(types)];
    const auto ti = lutkit::ggml_info(t.type);
    const std::size_t dims = 1 + rng() % 4;
    t.ne.push_back(ti.block_elems * (1 + rng() % 3));
    for (std::size_t d = 1; d < dims; ++d) t.ne.push_back(1 + rng() % 3);
    if (rng() % 8 == 0) t.ne.back() = 0;  // an empty tensor
    uint64_t bytes = t.ne[0] / ti.block_elems * ti.block_bytes;
    for (std::size_t d = 1; d < dims; ++d) bytes *= t.ne[d];
    t.bytes.resize(bytes);
    for (auto& b : t.bytes) b = uint8_t(rng());
    out.push_back(std::move(t));
  }
  return out;
}

// ------------------------------------------------------------------ raw files for hostile cases
struct raw {
  std::vector<uint8_t> b;
  raw& u8(uint8_t v) {
    b.push_back(v);
    return *this;
  }
  raw& u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(uint8_t(v >> (8 * i)));
    return *this;
  }
  raw& u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) b.push_back(uint8_t(v >> (8 * i)));
    return *this;
  }
  raw& str(std::string_view s) {
    u64(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  raw& pad(std::size_t a = 32) {
    while (b.size() % a) b.push_back(0);
    return *this;
  }
  raw& zeros(std::size_t n) {
    b.insert(b.end(), n, 0);
    return *this;
  }
  raw& tensor(std::string_view name, std::initializer_list<uint64_t> ne, uint32_t type, uint64_t offset) {
    str(name).u32(uint32_t(ne.size()));
    for (uint64_t d : ne) u64(d);
    return u32(type).u64(offset);
  }
};
raw header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
  raw r;
  r.u32(0x46554747u).u32(version).u64(n_tensors).u64(n_kv);
  return r;
}

// The bytes must be refused with a lutkit::error whose message holds every word given.
void refused(const std::vector<uint8_t>& b, std::initializer_list<const char*> words) {
  std::string msg;
  try {
    gguf::file f(std::span<const uint8_t>(b), "hostile.gguf");
  } catch (const lutkit::error& e) {
    msg = e.what();
  }
  INFO("message: " << msg);
  REQUIRE(!msg.empty());
  CHECK_THAT(msg, Catch::Contains("hostile.gguf"));
  CHECK_THAT(msg, Catch::Contains("at offset"));
  for (const char* w : words) CHECK_THAT(msg, Catch::Contains(w));
}

// Touches everything an accepted file exposes (the fuzz target does the same).
void walk(const gguf::file& f) {
  std::size_t n = 0;
  const std::function<void(const gguf::value&)> visit = [&](const gguf::value& v) {
    ++n;
    if (v.type() == value_type::string) n += v.as_string().size();
    else if (v.type() == value_type::array)
      for (std::size_t i = 0; i < v.as_array().size(); ++i) visit(v.as_array()[i]);
    else n += std::size_t(v.to_double() == 0);
  };
  for (const auto& kv : f.metadata()) visit(kv.value);
  for (const auto& t : f.tensors()) {
    REQUIRE(t.file_offset + t.n_bytes <= f.bytes().size());
    if (t.n_bytes > 0) n += t.bytes().front() + t.bytes().back();
  }
  (void)n;
}

}  // namespace

// ================================================================== round trip

TEST_CASE("gguf: write then read gives every metadata value and every tensor byte back", "[gguf]") {
  for (uint32_t version : {2u, 3u})
    for (uint32_t alignment : {0u, 1u, 8u, 64u, 4096u}) {
      std::mt19937_64 rng(version * 1000 + alignment);
      for (int rep = 0; rep < 12; ++rep) {
        INFO("version " << version << ", alignment " << alignment << ", rep " << rep);
        gguf::writer w(version);
        std::vector<std::pair<std::string, node>> meta;
        if (alignment) {
          w.set_alignment(alignment);
          meta.push_back({"general.alignment", node{value_type::u32, le_bytes(alignment), {}}});
        }
        // every value type at least once, then random ones (nested arrays among them)
        for (uint32_t t = 0; t <= 12; ++t) {
          meta.push_back({"k.type" + std::to_string(t), random_node(value_type(t), rng, 0)});
          add_to(w, meta.back().first, meta.back().second);
        }
        for (int i = 0; i < 10; ++i) {
          meta.push_back({"k.random." + std::to_string(i), random_node(value_type(rng() % 13), rng, 0)});
          add_to(w, meta.back().first, meta.back().second);
        }
        // an array nested to the reader's depth limit
        node deep{value_type::array, {}, {}, value_type::u8, {}};
        for (int d = 1; d < gguf::max_array_depth; ++d) deep = node{value_type::array, {}, {}, value_type::array, {deep}};
        meta.push_back({"k.deep", deep});
        add_to(w, "k.deep", deep);
        const auto tensors = random_tensors(rng);
        for (const auto& t : tensors) w.add_tensor(t.name, t.type, std::span<const uint64_t>(t.ne), std::span<const uint8_t>(t.bytes));

        const auto bytes = w.to_bytes();
        const gguf::file f{std::span<const uint8_t>(bytes)};
        CHECK(f.version() == version);
        CHECK(f.alignment() == (alignment ? alignment : 32u));
        CHECK(f.data_offset() % f.alignment() == 0);
        REQUIRE(f.metadata().size() == meta.size());
        for (std::size_t i = 0; i < meta.size(); ++i) {
          INFO("key " << meta[i].first);
          CHECK(f.metadata()[i].key == meta[i].first);
          check_value(f.get(meta[i].first), meta[i].second, f.bytes());
        }
        REQUIRE(f.tensors().size() == tensors.size());
        for (std::size_t i = 0; i < tensors.size(); ++i) {
          const auto& t = f.tensors()[i];
          INFO("tensor " << tensors[i].name);
          CHECK(t.name == tensors[i].name);
          CHECK(t.type == tensors[i].type);
          CHECK(t.n_dims == tensors[i].ne.size());
          for (std::size_t d = 0; d < 4; ++d) CHECK(t.ne[d] == (d < tensors[i].ne.size() ? tensors[i].ne[d] : 1));
          CHECK(t.offset % f.alignment() == 0);
          CHECK(t.file_offset == f.data_offset() + t.offset);
          REQUIRE(t.n_bytes == tensors[i].bytes.size());
          CHECK(std::equal(t.bytes().begin(), t.bytes().end(), tensors[i].bytes.begin()));
          CHECK(&f.get_tensor(tensors[i].name) == &t);
          if (t.n_rows() > 0) {
            const auto last = t.row(t.n_rows() - 1);
            CHECK(last.data() + last.size() == t.data + t.n_bytes);
          }
        }
        // the same bytes through a file on disk (mapped)
        if (rep == 0) {
          const auto path = std::filesystem::temp_directory_path() /
                            ("lutkit_gguf_rt_" + std::to_string(version) + "_" + std::to_string(alignment) + ".gguf");
          w.write(path);
          {
            gguf::file g(path);
            CHECK(g.mapped());
            REQUIRE(g.bytes().size() == bytes.size());
            CHECK(std::memcmp(g.bytes().data(), bytes.data(), bytes.size()) == 0);
            gguf::file moved = std::move(g);
            REQUIRE(moved.tensors().size() == tensors.size());
            for (std::size_t i = 0; i < tensors.size(); ++i)
              CHECK(std::equal(moved.tensors()[i].bytes().begin(), moved.tensors()[i].bytes().end(), tensors[i].bytes.begin()));
            walk(moved);
          }
          std::filesystem::remove(path);
        }
      }
    }
}

TEST_CASE("gguf: typed accessors, find, conversions and their errors", "[gguf]") {
  gguf::writer w;
  w.add_u32("llama.block_count", 32).add_u64("big", ~uint64_t(0)).add_i8("neg", -3).add_f32("eps", 1e-5f);
  w.add_string("general.architecture", "llama").add_bool("flag", true);
  w.add_array("scores", std::vector<float>{0.5f, -1.f});
  w.add_array("tokens", std::vector<std::string>{"<s>", "</s>", "a"});
  gguf::array_builder nested(value_type::array);
  nested.push(gguf::array_builder(value_type::i32).push(int32_t(7)).push(int32_t(-8)));
  nested.push(gguf::array_builder(value_type::string).push("x"));
  w.add_array("nested", nested);
  const auto bytes = w.to_bytes();
  const gguf::file f{std::span<const uint8_t>(bytes)};
  CHECK(f.get_u32("llama.block_count") == 32);
  CHECK(f.get_string("general.architecture") == "llama");
  CHECK(f.get_bool("flag"));
  CHECK(f.get_f32("eps") == 1e-5f);
  CHECK(f.get("llama.block_count").to_uint() == 32);
  CHECK(f.get("neg").to_int() == -3);
  CHECK(f.get("eps").to_double() == double(1e-5f));
  CHECK(f.get("big").to_uint() == ~uint64_t(0));
  CHECK(f.get_array("scores").to_vector<float>() == std::vector<float>{0.5f, -1.f});
  CHECK(f.get_array("tokens").to_vector<std::string_view>() == std::vector<std::string_view>{"<s>", "</s>", "a"});
  CHECK(f.get_array("tokens").string(2) == "a");
  CHECK(f.get_array("nested").array(0).get<int32_t>(1) == -8);
  CHECK(f.get_array("nested").array(1).string(0) == "x");
  CHECK(f.find("llama.block_count").has_value());
  CHECK_FALSE(f.find("llama.missing").has_value());
  CHECK(f.contains("flag"));
  CHECK(f.find_tensor("none") == nullptr);
  CHECK_THROWS_WITH(f.get_u32("big"), Catch::Contains("key 'big'") && Catch::Contains("is a u64, not a u32"));
  CHECK_THROWS_WITH(f.get_u32("llama.missing"), Catch::Contains("no key 'llama.missing'"));
  CHECK_THROWS_WITH(f.get("neg").to_uint(), Catch::Contains("not a non-negative integer"));
  CHECK_THROWS_WITH(f.get("big").to_int(), Catch::Contains("above the largest int64"));
  CHECK_THROWS_WITH(f.get("general.architecture").to_double(), Catch::Contains("not a number"));
  CHECK_THROWS_WITH(f.get_array("scores").to_vector<double>(), Catch::Contains("holds f32 elements, not f64"));
  CHECK_THROWS_WITH(f.get_array("tokens")[3], Catch::Contains("out of range"));
  CHECK_THROWS_WITH(f.get_tensor("none"), Catch::Contains("no tensor 'none'"));
}

TEST_CASE("gguf: the writer refuses what the reader would", "[gguf]") {
  gguf::writer w;
  w.add_u32("a", 1);
  CHECK_THROWS_WITH(w.add_u8("a", 1), Catch::Contains("duplicate key 'a'"));
  CHECK_THROWS_WITH(w.add_u8("", 1), Catch::Contains("empty key"));
  CHECK_THROWS_WITH(w.add_u64("general.alignment", 32), Catch::Contains("must be a u32"));
  CHECK_THROWS_WITH(w.set_alignment(48), Catch::Contains("not a power of two"));
  const std::vector<uint8_t> q(18);
  CHECK_THROWS_WITH(w.add_tensor("t", ggml_type::q4_0, {48}, std::span<const uint8_t>(q)),
                    Catch::Contains("not a multiple of the q4_0 block"));
  CHECK_THROWS_WITH(w.add_tensor("t", ggml_type::q4_0, {64}, std::span<const uint8_t>(q)),
                    Catch::Contains("18 bytes given, the shape needs 36"));
  CHECK_THROWS_WITH(w.add_tensor("t", ggml_type::q4_0, {32, 1, 1, 1, 1}, std::span<const uint8_t>(q)),
                    Catch::Contains("5 dimensions"));
  CHECK_THROWS_WITH(w.add_tensor("t", ggml_type(4), {32}, std::span<const uint8_t>(q)),
                    Catch::Contains("unknown ggml type id 4"));
  CHECK_THROWS_WITH(w.add_tensor(std::string(64, 'n'), ggml_type::q4_0, {32}, std::span<const uint8_t>(q)),
                    Catch::Contains("1 to 63 bytes"));
  w.add_tensor("t", ggml_type::q4_0, {32}, std::span<const uint8_t>(q));
  CHECK_THROWS_WITH(w.add_tensor("t", ggml_type::q4_0, {32}, std::span<const uint8_t>(q)),
                    Catch::Contains("duplicate tensor name 't'"));
  CHECK_THROWS_WITH(w.set_alignment(64), Catch::Contains("before adding tensors"));
  gguf::array_builder a(value_type::f32);
  CHECK_THROWS_WITH(a.push(1.0), Catch::Contains("pushing a f64 into an array of f32"));
  gguf::array_builder deep(value_type::u8);
  for (int d = 0; d < gguf::max_array_depth; ++d) deep = gguf::array_builder(value_type::array).push(deep);
  CHECK_THROWS_WITH(w.add_array("deep", deep), Catch::Contains("nested"));
  CHECK_THROWS_WITH(gguf::writer(1), Catch::Contains("version 1"));
}

TEST_CASE("gguf: the tiny llama model carries the keys and tensors llama.cpp loads", "[gguf]") {
  for (ggml_type t : {ggml_type::q4_0, ggml_type::q4_k, ggml_type::q6_k, ggml_type::tq2_0}) {
    gguf::tiny_llama_options o;
    o.matrix_type = t;
    o.embedding_type = ggml_type::q8_0;
    o.n_layer = 2;
    const auto bytes = gguf::tiny_llama(o).to_bytes();
    const gguf::file f{std::span<const uint8_t>(bytes)};
    CHECK(f.get_string("general.architecture") == "llama");
    for (const char* k : {"llama.context_length", "llama.embedding_length", "llama.block_count",
                          "llama.feed_forward_length", "llama.attention.head_count", "llama.attention.head_count_kv",
                          "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"})
      CHECK_NOTHROW(f.get_u32(k));
    CHECK(f.get_f32("llama.attention.layer_norm_rms_epsilon") == o.rms_eps);
    CHECK(f.get_f32("llama.rope.freq_base") == o.rope_freq_base);
    CHECK(f.get_string("tokenizer.ggml.model") == "llama");
    const auto tokens = f.get_array("tokenizer.ggml.tokens");
    REQUIRE(tokens.size() == o.n_vocab);
    CHECK(tokens.string(1) == "<s>");
    CHECK(tokens.string(3 + 0x0A) == "<0x0A>");
    CHECK(f.get_array("tokenizer.ggml.scores").size() == o.n_vocab);
    CHECK(f.get_array("tokenizer.ggml.token_type").get<int32_t>(3) == 6);
    const uint64_t n_kv = o.n_embd / o.n_head * o.n_head_kv;
    const auto shape = [&](const std::string& name, uint64_t ne0, uint64_t ne1, ggml_type type) {
      INFO(name);
      const auto& x = f.get_tensor(name);
      CHECK(x.ne[0] == ne0);
      CHECK(x.ne[1] == ne1);
      CHECK(x.type == type);
      // every row dequantizes to finite weights
      std::vector<float> row(x.row_elems());
      std::size_t non_finite = 0;
      for (uint64_t r = 0; r < x.n_rows(); ++r) {
        ggml::dequantize_row(x.type, x.row(r), row);
        for (float v : row) non_finite += !std::isfinite(v);
      }
      CHECK(non_finite == 0);
    };
    shape("token_embd.weight", o.n_embd, o.n_vocab, ggml_type::q8_0);
    shape("output_norm.weight", o.n_embd, 1, ggml_type::f32);
    shape("output.weight", o.n_embd, o.n_vocab, t);
    for (uint32_t l = 0; l < o.n_layer; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      shape(p + "attn_norm.weight", o.n_embd, 1, ggml_type::f32);
      shape(p + "attn_q.weight", o.n_embd, o.n_embd, t);
      shape(p + "attn_k.weight", o.n_embd, n_kv, t);
      shape(p + "attn_v.weight", o.n_embd, n_kv, t);
      shape(p + "attn_output.weight", o.n_embd, o.n_embd, t);
      shape(p + "ffn_norm.weight", o.n_embd, 1, ggml_type::f32);
      shape(p + "ffn_gate.weight", o.n_embd, o.n_ff, t);
      shape(p + "ffn_up.weight", o.n_embd, o.n_ff, t);
      shape(p + "ffn_down.weight", o.n_ff, o.n_embd, t);
    }
    CHECK(f.tensors().size() == 3 + 9 * o.n_layer);
  }
  gguf::tiny_llama_options bad;
  bad.matrix_type = ggml_type::q4_k;
  bad.n_embd = 128;  // not a multiple of 256
  CHECK_THROWS_WITH(gguf::tiny_llama(bad), Catch::Contains("multiples of the types' blocks"));
}

// ================================================================== hostile files: one case each

namespace {
// a small llama file: the full metadata (259 tokens), tensors of 32 x 64 at most
std::vector<uint8_t> small_llama(ggml_type t) {
  gguf::tiny_llama_options o;
  o.n_layer = 1;
  o.n_vocab = 259;
  o.n_embd = 32;
  o.n_ff = 64;
  o.n_head = 2;
  o.n_head_kv = 1;
  o.matrix_type = t;
  o.embedding_type = ggml_type::q8_0;
  return gguf::tiny_llama(o).to_bytes();
}
}  // namespace

TEST_CASE("gguf hostile: truncation anywhere", "[gguf][hostile]") {
  const auto good = small_llama(ggml_type::q4_0);
  const gguf::file f{std::span<const uint8_t>(good)};
  uint64_t end = 0;
  for (const auto& t : f.tensors()) end = std::max(end, t.file_offset + t.n_bytes);
  // every cut before the end of the last tensor's data is refused; the message names a field
  std::size_t refusals = 0;
  for (std::size_t n = 0; n < end; n += (n < f.data_offset() ? 1 : 97)) {
    std::string msg;
    try {
      gguf::file g(std::span<const uint8_t>(good.data(), n), "cut.gguf");
    } catch (const lutkit::error& e) {
      msg = e.what();
    }
    INFO("cut at " << n << ": " << msg);
    REQUIRE_THAT(msg, Catch::Contains("cut.gguf") && Catch::Contains("at offset"));
    REQUIRE((msg.find("truncated") != std::string::npos || msg.find("past the end") != std::string::npos ||
             msg.find("longer than") != std::string::npos || msg.find("cannot fit") != std::string::npos));
    ++refusals;
  }
  CHECK(refusals > 1000);
  refused(std::vector<uint8_t>(good.begin(), good.begin() + 10), {"header n_tensors at offset 8", "truncated"});
  refused({}, {"magic", "truncated"});
}

TEST_CASE("gguf hostile: magic and version", "[gguf][hostile]") {
  auto r = header(0, 0);
  r.b[0] = 'X';
  refused(r.b, {"magic", "not a GGUF file"});
  refused(header(0, 0, 1).b, {"version", "version 1 is not supported"});
  refused(header(0, 0, 7).b, {"version", "version 7"});
  refused(header(0, 0, 0x03000000u).b, {"version", "big-endian"});
  CHECK_NOTHROW(gguf::file(std::span<const uint8_t>(header(0, 0, 2).b)));
}

TEST_CASE("gguf hostile: counts past the file", "[gguf][hostile]") {
  refused(header(uint64_t(1) << 62, 0).b, {"n_tensors", "cannot fit"});
  refused(header(~uint64_t(0), 0).b, {"n_tensors", "at offset 8"});
  refused(header(0, uint64_t(1) << 60).b, {"n_kv", "at offset 16"});
  // counts that fit the header check but not the bytes after the metadata
  auto r = header(2, 1);
  r.str("k").u32(8).str(std::string(40, 'x'));
  refused(r.b, {"n_tensors", "after the metadata"});
  // an array length past the file (u32 elements, 4 bytes each)
  r = header(0, 1);
  r.str("arr").u32(9).u32(4).u64(1000).zeros(40);
  refused(r.b, {"key 'arr'", "array length 1000", "past the end"});
  r = header(0, 1);
  r.str("arr").u32(9).u32(8).u64(~uint64_t(0) / 2);
  refused(r.b, {"key 'arr'", "array length"});
}

TEST_CASE("gguf hostile: strings longer than the file", "[gguf][hostile]") {
  auto r = header(0, 1);
  r.u64(1000).b.insert(r.b.end(), 10, 'k');
  refused(r.b, {"key/value 0", "key", "string length 1000", "longer than"});
  r = header(0, 1);
  r.str("name").u32(8).u64(~uint64_t(0)).zeros(8);
  refused(r.b, {"key 'name'", "value", "string length 18446744073709551615"});
  r = header(1, 0);
  r.u64(500).zeros(30);
  refused(r.b, {"tensor 0", "name", "string length 500"});
  r = header(0, 1);  // a string inside an array
  r.str("toks").u32(9).u32(8).u64(2).str("a").u64(99).zeros(4);
  refused(r.b, {"key 'toks'", "string length 99"});
}

TEST_CASE("gguf hostile: unknown value and element types", "[gguf][hostile]") {
  auto r = header(0, 1);
  r.str("k").u32(13).zeros(8);
  refused(r.b, {"key 'k'", "value type", "unknown value type 13"});
  r = header(0, 1);
  r.str("k").u32(9).u32(77).u64(0);
  refused(r.b, {"key 'k'", "unknown array element type 77"});
}

TEST_CASE("gguf hostile: nested arrays past the depth limit", "[gguf][hostile]") {
  for (int depth : {gguf::max_array_depth, gguf::max_array_depth + 1, 1000}) {
    auto r = header(0, 1);
    r.str("deep").u32(9);
    for (int d = 1; d < depth; ++d) r.u32(9).u64(1);  // an array holding one array ...
    r.u32(0).u64(0);                                  // ... down to an empty array of u8
    if (depth <= gguf::max_array_depth) {
      const gguf::file f{std::span<const uint8_t>(r.b)};
      auto a = f.get_array("deep");
      for (int d = 1; d < depth; ++d) a = a.array(0);
      CHECK(a.empty());
    } else {
      refused(r.b, {"key 'deep'", "nested deeper than 8 levels"});
    }
  }
}

TEST_CASE("gguf hostile: duplicate and empty keys, bad bools", "[gguf][hostile]") {
  auto r = header(0, 2);
  r.str("k").u32(4).u32(1).str("k").u32(4).u32(2);
  refused(r.b, {"key 'k'", "duplicate key (first at offset 24)", "at offset 41"});
  r = header(0, 1);
  r.str("").u32(4).u32(1);
  refused(r.b, {"key/value 0", "the key is empty"});
  r = header(0, 1);
  r.str("b").u32(7).u8(2);
  refused(r.b, {"key 'b'", "bool byte is 2"});
  r = header(0, 1);
  r.str("bs").u32(9).u32(7).u64(3).u8(1).u8(0).u8(9);
  refused(r.b, {"key 'bs'", "bool byte is 9"});
}

TEST_CASE("gguf hostile: general.alignment of the wrong type or not a power of two", "[gguf][hostile]") {
  auto r = header(0, 1);
  r.str("general.alignment").u32(10).u64(32);
  refused(r.b, {"general.alignment", "a u64, not a u32"});
  r = header(0, 1);
  r.str("general.alignment").u32(4).u32(48);
  refused(r.b, {"general.alignment", "48 is not a power of two"});
  r = header(0, 1);
  r.str("general.alignment").u32(4).u32(0);
  refused(r.b, {"general.alignment", "0 is not a power of two"});
}

TEST_CASE("gguf hostile: tensor dimensions", "[gguf][hostile]") {
  auto r = header(1, 0);
  r.str("t").u32(5).zeros(40);
  refused(r.b, {"tensor 0 't'", "n_dims", "5 dimensions"});
  r = header(1, 0);
  r.tensor("t", {32, uint64_t(1) << 63}, 0, 0);
  refused(r.b, {"tensor 0 't'", "ne[1]", "exceeds 2^63 - 1"});
  r = header(1, 0);
  r.tensor("t", {uint64_t(1) << 32, uint64_t(1) << 32}, 0, 0);  // 2^64 elements
  refused(r.b, {"tensor 0 't'", "element count", "overflows"});
  r = header(1, 0);
  r.tensor("t", {1u << 20, 1u << 20, 1u << 20, 1u << 5}, 0, 0);  // 2^65
  refused(r.b, {"tensor 0 't'", "overflows"});
  r = header(1, 0);
  r.tensor("t", {uint64_t(1) << 62}, 0, 0);  // 2^62 f32 elements: 2^64 bytes
  refused(r.b, {"tensor 0 't'", "byte size", "overflows 64 bits"});
}

TEST_CASE("gguf hostile: unknown ggml types and rows not a multiple of the block", "[gguf][hostile]") {
  for (uint32_t id : {4u, 5u, 31u, 36u, 43u, 1000u}) {
    auto r = header(1, 0);
    r.tensor("t", {32}, id, 0);
    refused(r.b, {"tensor 0 't'", "type", ("unknown or retired ggml type id " + std::to_string(id)).c_str()});
  }
  auto r = header(1, 0);
  r.tensor("t", {48, 2}, uint32_t(ggml_type::q4_0), 0);
  refused(r.b, {"tensor 0 't'", "ne[0] = 48", "q4_0 block (32 elements)"});
  r = header(1, 0);
  r.tensor("t", {300}, uint32_t(ggml_type::q4_k), 0);
  refused(r.b, {"q4_K block (256 elements)"});
}

TEST_CASE("gguf hostile: misaligned, overlapping and out-of-file tensors", "[gguf][hostile]") {
  auto r = header(1, 0);
  r.tensor("t", {8}, 0, 8).pad().zeros(64);
  refused(r.b, {"tensor 0 't'", "offset", "data offset 8 is not a multiple of the alignment (32)"});
  r = header(2, 0);
  r.tensor("a", {16}, 0, 0).tensor("b", {8}, 0, 32).pad().zeros(128);  // a: [0, 64), b: [32, 64)
  refused(r.b, {"overlaps tensor 'a'"});
  r = header(2, 0);
  r.tensor("a", {8}, 0, 64).tensor("b", {16}, 0, 32).pad().zeros(128);  // b: [32, 96) covers a: [64, 96)
  refused(r.b, {"tensor 'a'", "overlaps tensor 'b'"});
  r = header(1, 0);
  r.tensor("t", {64}, 0, 0).pad().zeros(255);  // 256 bytes needed
  refused(r.b, {"tensor 't'", "runs past the end of the file", "holds 255 bytes"});
  r = header(1, 0);
  r.tensor("t", {1}, 0, uint64_t(1) << 63).pad().zeros(32);
  refused(r.b, {"tensor 't'", "past the end"});
  r = header(1, 0);
  r.tensor("t", {0}, 0, 0);  // the data section would start past the end
  refused(r.b, {"data section", "truncated"});
  r = header(2, 0);
  r.tensor("t", {8}, 0, 0).tensor("t", {8}, 0, 32);
  refused(r.b, {"tensor 1 't'", "duplicate tensor name"});
  // zero-byte tensors may share an offset; so may tensors listed out of order
  r = header(3, 0);
  r.tensor("e", {0, 4}, 0, 32).tensor("b", {8}, 0, 32).tensor("a", {8}, 0, 0).pad().zeros(64);
  const gguf::file ok{std::span<const uint8_t>(r.b)};
  CHECK(ok.get_tensor("e").n_bytes == 0);
  CHECK(ok.get_tensor("b").file_offset == ok.data_offset() + 32);
}

TEST_CASE("gguf hostile: random corruption is refused or read, never a crash", "[gguf][hostile]") {
  const auto good = small_llama(ggml_type::q5_1);
  const std::size_t meta_end = gguf::file(std::span<const uint8_t>(good)).data_offset();
  std::mt19937_64 rng(5);
  int accepted = 0, refusals = 0;
  for (int i = 0; i < 3000; ++i) {
    auto b = good;
    const int flips = 1 + int(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      const std::size_t at = rng() % meta_end;
      b[at] = rng() % 2 ? uint8_t(rng()) : uint8_t(b[at] ^ (1u << (rng() % 8)));
    }
    try {
      const gguf::file f{std::span<const uint8_t>(b)};
      walk(f);
      ++accepted;
    } catch (const lutkit::error&) {
      ++refusals;
    }
  }
  CHECK(accepted + refusals == 3000);
  CHECK(refusals > 0);
}

TEST_CASE("gguf: files that cannot be opened", "[gguf]") {
  CHECK_THROWS_WITH(gguf::file(std::filesystem::path("/nonexistent/x.gguf")), Catch::Contains("cannot open"));
  CHECK_THROWS_WITH(gguf::file(std::filesystem::temp_directory_path()), Catch::Contains("not a regular file"));
  const auto empty = std::filesystem::temp_directory_path() / "lutkit_gguf_empty.gguf";
  { std::ofstream(empty, std::ios::binary); }
  CHECK_THROWS_WITH(gguf::file(empty), Catch::Contains("magic") && Catch::Contains("truncated"));
  std::filesystem::remove(empty);
}

// ================================================================== block dequantizers

namespace {
// fp16 and bf16 read from their bit fields (not through lutkit's converters)
double ref_f16(const uint8_t* p) {
  const unsigned h = p[0] | (unsigned(p[1]) << 8);
  const int e = (h >> 10) & 31, m = h & 1023;
  const double s = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 31) return m ? std::nan("") : s * INFINITY;
  if (e == 0) return s * std::ldexp(double(m), -24);
  return s * std::ldexp(double(1024 + m), e - 25);
}
double ref_bf16(const uint8_t* p) {
  const uint32_t x = (uint32_t(p[0]) << 16) | (uint32_t(p[1]) << 24);
  float f;
  std::memcpy(&f, &x, 4);
  return double(f);
}
int bit(const uint8_t* bytes, int i) { return (bytes[i / 8] >> (i % 8)) & 1; }

// Weight e (0 <= e < block elements) of one block, in double, from the published layouts.
double ref_weight(ggml_type t, const uint8_t* b, int e) {
  switch (t) {
    case ggml_type::q4_0: {  // d, 16 bytes: weight e < 16 low nibble of byte e, else high nibble of byte e - 16
      const int q = e < 16 ? b[2 + e] & 15 : b[2 + e - 16] >> 4;
      return ref_f16(b) * (q - 8);
    }
    case ggml_type::iq4_nl: {
      static const int lv[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
      const int q = e < 16 ? b[2 + e] & 15 : b[2 + e - 16] >> 4;
      return ref_f16(b) * lv[q];
    }
    case ggml_type::q4_1: {  // d, m, nibbles
      const int q = e < 16 ? b[4 + e] & 15 : b[4 + e - 16] >> 4;
      return ref_f16(b) * q + ref_f16(b + 2);
    }
    case ggml_type::q5_0: {  // d, 32 high bits, nibbles
      const int q = (e < 16 ? b[6 + e] & 15 : b[6 + e - 16] >> 4) + 16 * bit(b + 2, e);
      return ref_f16(b) * (q - 16);
    }
    case ggml_type::q5_1: {
      const int q = (e < 16 ? b[8 + e] & 15 : b[8 + e - 16] >> 4) + 16 * bit(b + 4, e);
      return ref_f16(b) * q + ref_f16(b + 2);
    }
    case ggml_type::q8_0: return ref_f16(b) * int8_t(b[2 + e]);
    case ggml_type::q2_k: {  // 16 scale bytes (low nibble scale, high nibble min), 64 code bytes, d, dmin
      const int half = e / 128, pos = (e % 128) / 32, l = e % 32;
      const int q = (b[16 + 32 * half + l] >> (2 * pos)) & 3;
      const int sb = b[8 * half + 2 * pos + l / 16];
      return ref_f16(b + 80) * (sb & 15) * q - ref_f16(b + 82) * (sb >> 4);
    }
    case ggml_type::q3_k: {  // 32 hmask bytes, 64 code bytes, 12 scale bytes (6-bit), d
      const int half = e / 128, pos = (e % 128) / 32, l = e % 32;
      const int lo = (b[32 + 32 * half + l] >> (2 * pos)) & 3;
      const int hbit = bit(b + l, 4 * half + pos);  // bit 4 half + pos of hmask[l]
      const int s = 8 * half + 2 * pos + l / 16;
      // scale s: 4 low bits are nibble (s / 8) of byte s % 8, 2 high bits are bits 2 (s / 4)..+1 of byte 8 + s % 4
      const int sl = (b[96 + s % 8] >> (4 * (s / 8))) & 15, sh = (b[96 + 8 + s % 4] >> (2 * (s / 4))) & 3;
      return ref_f16(b + 108) * ((sl + 16 * sh) - 32) * (lo - (hbit ? 0 : 4));
    }
    case ggml_type::q4_k:
    case ggml_type::q5_k: {  // d, dmin, 12 scale bytes, [32 high-bit bytes], 128 nibble bytes
      const bool five = t == ggml_type::q5_k;
      const int s = e / 32, l = e % 32;
      const uint8_t* sc = b + 4;
      int scale, min;
      if (s < 4) {
        scale = sc[s] & 63;
        min = sc[s + 4] & 63;
      } else {
        scale = (sc[s + 4] & 15) + 16 * (sc[s - 4] >> 6);
        min = (sc[s + 4] >> 4) + 16 * (sc[s] >> 6);
      }
      const uint8_t* qs = b + (five ? 48 : 16);
      int q = (qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 15;
      if (five) q += 16 * bit(b + 16 + l, s);  // bit s of qh[l]
      return ref_f16(b) * scale * q - ref_f16(b + 2) * min;
    }
    case ggml_type::q6_k: {  // 128 low-nibble bytes, 64 high-bit bytes, 16 int8 scales, d
      const int half = e / 128, quarter = (e % 128) / 32, l = e % 32;
      const int lo = (b[64 * half + 32 * (quarter % 2) + l] >> (4 * (quarter / 2))) & 15;
      const int hi = (b[128 + 32 * half + l] >> (2 * quarter)) & 3;
      const int sc = int8_t(b[192 + 8 * half + 2 * quarter + l / 16]);
      return ref_f16(b + 208) * sc * (lo + 16 * hi - 32);
    }
    case ggml_type::tq1_0: {  // 48 + 4 bytes of base-3 fixed-point fractions, d
      int byte, n;
      if (e < 160) byte = e % 32, n = e / 32;
      else if (e < 240) byte = 32 + (e - 160) % 16, n = (e - 160) / 16;
      else byte = 48 + (e - 240) % 4, n = (e - 240) / 4;
      // digit n of the fraction x / 256 in base 3: shift n digits out (times 3^n, mod 1), take the next
      const double frac = std::fmod(double(b[byte]) * std::pow(3.0, n), 256.0) / 256.0;
      return ref_f16(b + 52) * (int(std::floor(3.0 * frac)) - 1);
    }
    case ggml_type::tq2_0: {
      const int g = e / 128, p = (e % 128) / 32, m = e % 32;
      return ref_f16(b + 64) * (((b[32 * g + m] >> (2 * p)) & 3) - 1);
    }
    case ggml_type::f16: return ref_f16(b + 2 * e);
    case ggml_type::bf16: return ref_bf16(b + 2 * e);
    case ggml_type::f32: {
      float f;
      std::memcpy(&f, b + 4 * e, 4);
      return double(f);
    }
    default: return std::nan("");
  }
}

// Every weight of every row equals its double reading rounded once to float (both NaN, or the
// same bits). Every product these formats form is exact, so this is bit-exactness.
void check_rows(ggml_type t, const std::vector<uint8_t>& bytes, const std::vector<std::size_t>& row_blocks) {
  const auto ti = lutkit::ggml_info(t);
  std::size_t at = 0, mismatches = 0;
  for (std::size_t blocks : row_blocks) {
    const std::size_t k = blocks * ti.block_elems;
    std::vector<float> y(k + 1, 12345.f);
    ggml::dequantize_row(t, bytes.data() + at, blocks * ti.block_bytes, y.data(), k);
    REQUIRE(y[k] == 12345.f);  // nothing past the row
    for (std::size_t i = 0; i < k; ++i) {
      const uint8_t* blk = bytes.data() + at + (i / ti.block_elems) * ti.block_bytes;
      const float want = float(ref_weight(t, blk, int(i % ti.block_elems)));
      uint32_t a, b;
      std::memcpy(&a, &y[i], 4);
      std::memcpy(&b, &want, 4);
      const bool ok = (std::isnan(y[i]) && std::isnan(want)) || a == b;
      if (!ok && mismatches++ < 4) FAIL_CHECK(ti.name << " weight " << i << ": got " << y[i] << ", want " << want);
    }
    at += blocks * ti.block_bytes;
  }
  CHECK(mismatches == 0);
}

const ggml_type kDequantTypes[] = {ggml_type::q4_0, ggml_type::q4_1, ggml_type::q5_0, ggml_type::q5_1,
                                   ggml_type::q8_0, ggml_type::iq4_nl, ggml_type::q2_k, ggml_type::q3_k,
                                   ggml_type::q4_k, ggml_type::q5_k, ggml_type::q6_k, ggml_type::tq1_0,
                                   ggml_type::tq2_0, ggml_type::f16, ggml_type::bf16, ggml_type::f32};
// fp16 scales at the edges: zeros, subnormals, the smallest normal, one, the largest, Inf, NaN
const uint16_t kEdgeScales[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00,
                                0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0x1234};
}  // namespace

TEST_CASE("ggml blocks: every type's block size matches its published layout", "[gguf][blocks]") {
  struct row {
    ggml_type t;
    uint32_t elems, bytes;
  };
  for (const row& r : {row{ggml_type::q4_0, 32, 2 + 16}, row{ggml_type::q4_1, 32, 4 + 16}, row{ggml_type::q5_0, 32, 2 + 4 + 16},
                       row{ggml_type::q5_1, 32, 4 + 4 + 16}, row{ggml_type::q8_0, 32, 2 + 32}, row{ggml_type::iq4_nl, 32, 2 + 16},
                       row{ggml_type::q2_k, 256, 16 + 64 + 4}, row{ggml_type::q3_k, 256, 32 + 64 + 12 + 2},
                       row{ggml_type::q4_k, 256, 4 + 12 + 128}, row{ggml_type::q5_k, 256, 4 + 12 + 32 + 128},
                       row{ggml_type::q6_k, 256, 128 + 64 + 16 + 2}, row{ggml_type::tq1_0, 256, 48 + 4 + 2},
                       row{ggml_type::tq2_0, 256, 64 + 2}, row{ggml_type::f16, 1, 2}, row{ggml_type::bf16, 1, 2},
                       row{ggml_type::f32, 1, 4}, row{ggml_type::q8_k, 256, 4 + 256 + 32}, row{ggml_type::iq4_xs, 256, 136}}) {
    INFO(lutkit::ggml_type_name(r.t));
    CHECK(lutkit::ggml_info(r.t).block_elems == r.elems);
    CHECK(lutkit::ggml_info(r.t).block_bytes == r.bytes);
  }
  for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 43u}) CHECK_FALSE(lutkit::ggml_type_by_id(id).has_value());
}

TEST_CASE("ggml blocks: random blocks dequantize to the layouts' values, ragged rows", "[gguf][blocks]") {
  for (ggml_type t : kDequantTypes) {
    INFO(lutkit::ggml_type_name(t));
    const auto ti = lutkit::ggml_info(t);
    std::mt19937_64 rng(uint32_t(t) + 17);
    // rows of 1, 2, 3, 5 and 7 blocks (plain types: 1..7 elements), every byte random (scales too)
    const std::vector<std::size_t> rows = {1, 2, 3, 5, 7, 1, 4};
    std::size_t total = 0;
    for (auto r : rows) total += r;
    std::vector<uint8_t> bytes(total * ti.block_bytes);
    for (int rep = 0; rep < 40; ++rep) {
      for (auto& c : bytes) c = uint8_t(rng());
      check_rows(t, bytes, rows);
    }
    // lutkit's own random blocks (finite scales)
    check_rows(t, ggml::random_blocks(t, 64 * ti.block_elems, 3), {64});
  }
}

TEST_CASE("ggml blocks: edge scales and every code pattern", "[gguf][blocks]") {
  for (ggml_type t : kDequantTypes) {
    INFO(lutkit::ggml_type_name(t));
    const auto ti = lutkit::ggml_info(t);
    if (ti.block_elems == 1) {  // F16 / BF16: every 16-bit pattern; F32: edges
      std::vector<uint8_t> bytes;
      if (t == ggml_type::f32) {
        for (uint32_t x : {0u, 0x80000000u, 1u, 0x007FFFFFu, 0x7F7FFFFFu, 0x7F800000u, 0xFF800000u, 0x7FC00001u, 0x7F800001u})
          for (int i = 0; i < 4; ++i) bytes.push_back(uint8_t(x >> (8 * i)));
      } else {
        for (uint32_t x = 0; x < 65536; ++x) bytes.push_back(uint8_t(x)), bytes.push_back(uint8_t(x >> 8));
      }
      check_rows(t, bytes, {bytes.size() / ti.block_bytes});
      continue;
    }
    const auto f = ggml::fp16_scale_fields(t);
    REQUIRE(f.count >= 1);
    // byte i of block v is v + 37 i: over 256 blocks every byte position takes every value (all
    // codes, all sub-block scales and high bits), once per edge scale (the second scale another
    // edge); then every pair of edge scales over 4 patterns
    const std::size_t ne = std::size(kEdgeScales);
    std::vector<uint8_t> bytes;
    const auto add = [&](std::size_t v, uint16_t s0, uint16_t s1) {
      const std::size_t at = bytes.size();
      bytes.resize(at + ti.block_bytes);
      uint8_t* b = bytes.data() + at;
      for (std::size_t i = 0; i < ti.block_bytes; ++i) b[i] = uint8_t(v + 37 * i);
      b[f.offset[0]] = uint8_t(s0), b[f.offset[0] + 1] = uint8_t(s0 >> 8);
      if (f.count == 2) b[f.offset[1]] = uint8_t(s1), b[f.offset[1] + 1] = uint8_t(s1 >> 8);
    };
    for (std::size_t e = 0; e < ne; ++e)
      for (std::size_t v = 0; v < 256; ++v) add(v, kEdgeScales[e], kEdgeScales[(5 * e + 3) % ne]);
    if (f.count == 2)
      for (std::size_t e0 = 0; e0 < ne; ++e0)
        for (std::size_t e1 = 0; e1 < ne; ++e1)
          for (std::size_t v : {0u, 85u, 170u, 255u}) add(v, kEdgeScales[e0], kEdgeScales[e1]);
    check_rows(t, bytes, {bytes.size() / ti.block_bytes});
    // the ternary types' encodings: each weight is -d, 0 or d for the codes the quantizer writes
    if (t == ggml_type::tq1_0 || t == ggml_type::tq2_0) {
      const auto rb = ggml::random_blocks(t, 8 * 256, 9, 1.f);
      std::vector<float> y(8 * 256);
      ggml::dequantize_row(t, rb, y);
      for (std::size_t i = 0; i < y.size(); ++i) {
        const float d = float(ref_f16(rb.data() + (i / 256) * ti.block_bytes + f.offset[0]));
        REQUIRE((y[i] == -d || y[i] == 0.f || y[i] == d));
      }
    }
  }
}

TEST_CASE("ggml blocks: dequantize_row refuses bad arguments", "[gguf][blocks]") {
  std::vector<uint8_t> b(144 * 2);
  std::vector<float> y(512);
  CHECK_THROWS_WITH(ggml::dequantize_row(ggml_type::q4_k, b.data(), b.size(), y.data(), 300),
                    Catch::Contains("k = 300 is not a multiple of the q4_K block"));
  CHECK_THROWS_WITH(ggml::dequantize_row(ggml_type::q4_k, b.data(), 200, y.data(), 512),
                    Catch::Contains("need 288 bytes, the source holds 200"));
  CHECK_THROWS_WITH(ggml::dequantize_row(ggml_type::iq2_xxs, b.data(), b.size(), y.data(), 256),
                    Catch::Contains("iq2_xxs"));
  CHECK_THROWS_WITH(ggml::dequantize_row_q4_0(b.data(), y.data(), 33), Catch::Contains("dequantize_row_q4_0"));
  CHECK_NOTHROW(ggml::dequantize_row(ggml_type::q4_k, b.data(), 0, y.data(), 0));
  CHECK_THROWS_WITH(ggml::random_blocks(ggml_type::q8_1, 32, 1), Catch::Contains("q8_1"));
}
