// lutkit — a small GGUF writer (version 3 by default, or 2), for tests and benchmarks that make
// their own model files, and a helper that writes a tiny random `llama` model.
//
//   lutkit::gguf::writer w;
//   w.add_string("general.architecture", "llama").add_u32("llama.block_count", 2);
//   w.add_array("tokenizer.ggml.scores", std::span<const float>(scores));
//   w.add_tensor("token_embd.weight", lutkit::ggml_type::q4_k, {n_embd, n_vocab}, bytes);
//   w.write("model.gguf");                           // or: std::vector<uint8_t> b = w.to_bytes();
//
// Shapes are in ggml's order (io/gguf.hpp): ne[0] is the row, the contiguous dimension. The
// writer checks what the reader would refuse (duplicate or empty keys and tensor names, more than
// 4 dimensions, a row that is not a multiple of the type's block, a byte count that does not
// match the shape) and throws lutkit::error. Tensor data is laid out as llama.cpp expects: in the
// order added, each at the next multiple of the alignment (general.alignment, default 32), padded
// with zeros, the last one too. Tensor names are shorter than 64 bytes (llama.cpp's limit).
//
// A file llama.cpp loads as a `llama` architecture model carries these keys (types as written by
// tiny_llama below; llama.cpp reads the integers as u32 and the floats as f32):
//   general.architecture                    string  "llama"
//   llama.context_length                    u32     training context
//   llama.embedding_length                  u32     n_embd
//   llama.block_count                       u32     n_layer
//   llama.feed_forward_length               u32     n_ff
//   llama.attention.head_count              u32     n_head
//   llama.attention.head_count_kv           u32     n_head_kv (grouped-query attention; = n_head for MHA)
//   llama.attention.layer_norm_rms_epsilon  f32     RMSNorm epsilon
//   llama.rope.freq_base                    f32     RoPE base (optional, 10000 when absent)
//   llama.rope.dimension_count              u32     rotated dimensions per head (optional: n_embd / n_head)
//   tokenizer.ggml.model                    string  "llama" (SentencePiece-style vocabulary)
//   tokenizer.ggml.tokens                   array of string, one per token; a "llama" vocabulary
//                                           must hold the byte tokens "<0x00>".."<0xFF>" (at least
//                                           "<0x0A>": the loader looks up the newline token)
//   tokenizer.ggml.scores                   array of f32, one per token
//   tokenizer.ggml.token_type               array of i32, one per token: 1 normal, 2 unknown,
//                                           3 control, 6 byte
//   tokenizer.ggml.bos_token_id, tokenizer.ggml.eos_token_id, tokenizer.ggml.unknown_token_id   u32
// and these tensors (shapes in ggml order; N = 0 .. block_count - 1; head_dim = n_embd / n_head):
//   token_embd.weight          {n_embd, n_vocab}
//   blk.N.attn_norm.weight     {n_embd}                      F32
//   blk.N.attn_q.weight        {n_embd, n_embd}
//   blk.N.attn_k.weight        {n_embd, head_dim * n_head_kv}
//   blk.N.attn_v.weight        {n_embd, head_dim * n_head_kv}
//   blk.N.attn_output.weight   {n_embd, n_embd}
//   blk.N.ffn_norm.weight      {n_embd}                      F32
//   blk.N.ffn_gate.weight      {n_embd, n_ff}
//   blk.N.ffn_up.weight        {n_embd, n_ff}
//   blk.N.ffn_down.weight      {n_ff, n_embd}
//   output_norm.weight         {n_embd}                      F32
//   output.weight              {n_embd, n_vocab}             (optional: token_embd.weight is reused)
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "lutkit/core/error.hpp"
#include "lutkit/io/ggml_blocks.hpp"
#include "lutkit/io/ggml_types.hpp"
#include "lutkit/io/gguf.hpp"

namespace lutkit::gguf {

namespace detail {
template <class T>
inline void put_le(std::vector<uint8_t>& out, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  if constexpr (std::endian::native == std::endian::big)
    for (std::size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
  out.insert(out.end(), b, b + sizeof(T));
}
inline void put_string(std::vector<uint8_t>& out, std::string_view s) {
  put_le<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}
}  // namespace detail

// An array value being built: its element type and its elements, serialized as they are pushed.
// Arrays of arrays push other builders (each element array has its own element type and length).
class array_builder {
 public:
  explicit array_builder(value_type elem) : elem_(elem) {}
  value_type elem_type() const { return elem_; }
  std::size_t size() const { return std::size_t(count_); }
  // depth: 1 for an array of scalars or strings, 1 + the deepest element array otherwise
  int depth() const { return depth_; }

  template <class T>
    requires std::is_arithmetic_v<T>
  array_builder& push(T v) {
    check(value_type_of<T>());
    if constexpr (std::is_same_v<T, bool>) bytes_.push_back(v ? 1 : 0);
    else detail::put_le<T>(bytes_, v);
    ++count_;
    return *this;
  }
  array_builder& push(std::string_view s) {
    check(value_type::string);
    detail::put_string(bytes_, s);
    ++count_;
    return *this;
  }
  array_builder& push(const char* s) { return push(std::string_view(s)); }
  array_builder& push(const array_builder& a) {
    check(value_type::array);
    a.serialize(bytes_);
    depth_ = std::max(depth_, a.depth_ + 1);
    ++count_;
    return *this;
  }
  // the array's bytes as a value: element type, length, elements
  void serialize(std::vector<uint8_t>& out) const {
    detail::put_le<uint32_t>(out, uint32_t(elem_));
    detail::put_le<uint64_t>(out, count_);
    out.insert(out.end(), bytes_.begin(), bytes_.end());
  }

 private:
  void check(value_type t) const {
    lutkit::detail::require(t == elem_, "gguf::array_builder: pushing a ", value_type_name(t), " into an array of ",
                            value_type_name(elem_));
  }
  value_type elem_;
  uint64_t count_ = 0;
  int depth_ = 1;
  std::vector<uint8_t> bytes_;
};

class writer {
 public:
  explicit writer(uint32_t version = 3) : version_(version) {
    lutkit::detail::require(version == 2 || version == 3, "gguf::writer: version ", version,
                            " (2 and 3 can be written)");
  }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  std::size_t n_kv() const { return std::size_t(n_kv_); }
  std::size_t n_tensors() const { return tensors_.size(); }

  // ---- metadata: one call per key; a key may be given once
  writer& add_u8(std::string_view key, uint8_t v) { return scalar(key, v); }
  writer& add_i8(std::string_view key, int8_t v) { return scalar(key, v); }
  writer& add_u16(std::string_view key, uint16_t v) { return scalar(key, v); }
  writer& add_i16(std::string_view key, int16_t v) { return scalar(key, v); }
  writer& add_u32(std::string_view key, uint32_t v) {
    const bool align = key == "general.alignment";
    if (align) {
      lutkit::detail::require(v != 0 && (v & (v - 1)) == 0, "gguf::writer: general.alignment ", v,
                              " is not a power of two");
      lutkit::detail::require(tensors_.empty(), "gguf::writer: set general.alignment before adding tensors");
    }
    scalar(key, v);
    if (align) alignment_ = v;
    return *this;
  }
  writer& add_i32(std::string_view key, int32_t v) { return scalar(key, v); }
  writer& add_u64(std::string_view key, uint64_t v) { return scalar(key, v); }
  writer& add_i64(std::string_view key, int64_t v) { return scalar(key, v); }
  writer& add_f32(std::string_view key, float v) { return scalar(key, v); }
  writer& add_f64(std::string_view key, double v) { return scalar(key, v); }
  writer& add_bool(std::string_view key, bool v) { return scalar(key, v); }
  writer& add_string(std::string_view key, std::string_view v) {
    begin(key, value_type::string);
    detail::put_string(meta_, v);
    return *this;
  }
  writer& add_array(std::string_view key, const array_builder& a) {
    lutkit::detail::require(a.depth() <= max_array_depth, "gguf::writer: key '", key, "': arrays nested ",
                            a.depth(), " deep (at most ", max_array_depth, ")");
    begin(key, value_type::array);
    a.serialize(meta_);
    return *this;
  }
  template <class T>
    requires std::is_arithmetic_v<T>
  writer& add_array(std::string_view key, std::span<const T> v) {
    array_builder a(value_type_of<T>());
    for (const T& x : v) a.push(x);
    return add_array(key, a);
  }
  template <class T>
    requires std::is_arithmetic_v<T>
  writer& add_array(std::string_view key, const std::vector<T>& v) {
    return add_array(key, std::span<const T>(v));
  }
  writer& add_array(std::string_view key, std::span<const std::string> v) {
    array_builder a(value_type::string);
    for (const auto& s : v) a.push(std::string_view(s));
    return add_array(key, a);
  }
  writer& add_array(std::string_view key, const std::vector<std::string>& v) {
    return add_array(key, std::span<const std::string>(v));
  }
  // general.alignment (a u32 key): the data alignment, a power of two; before any tensor
  writer& set_alignment(uint32_t a) { return add_u32("general.alignment", a); }

  // ---- tensors, in the order their data is written. ne in ggml order (ne[0] the row), 1 to 4
  // dimensions; `bytes` must hold exactly the tensor's bytes (copied, or moved in).
  writer& add_tensor(std::string_view name, ggml_type type, std::span<const uint64_t> ne,
                     std::vector<uint8_t>&& bytes) {
    lutkit::detail::require(!name.empty() && name.size() < 64, "gguf::writer: tensor name '", name,
                            "' must have 1 to 63 bytes");
    lutkit::detail::require(tensor_names_.count(std::string(name)) == 0, "gguf::writer: duplicate tensor name '", name,
                            "'");
    lutkit::detail::require(!ne.empty() && ne.size() <= max_dims, "gguf::writer: tensor '", name, "' has ", ne.size(),
                            " dimensions (1 to 4)");
    const auto ti = ggml_type_by_id(uint32_t(type));
    lutkit::detail::require(ti.has_value(), "gguf::writer: tensor '", name, "': unknown ggml type id ", uint32_t(type));
    uint64_t n = ne[0] / ti->block_elems * ti->block_bytes;
    bool over = false;
    for (const uint64_t d : ne) over = over || d > uint64_t(INT64_MAX);
    for (std::size_t d = 1; d < ne.size() && !over; ++d) over = __builtin_mul_overflow(n, ne[d], &n);
    lutkit::detail::require(!over, "gguf::writer: tensor '", name, "': the shape's size overflows");
    lutkit::detail::require(ne[0] % ti->block_elems == 0, "gguf::writer: tensor '", name, "': ne[0] = ", ne[0],
                            " is not a multiple of the ", ti->name, " block (", ti->block_elems, ")");
    lutkit::detail::require(bytes.size() == n, "gguf::writer: tensor '", name, "': ", bytes.size(),
                            " bytes given, the shape needs ", n);
    entry e;
    e.name = std::string(name);
    e.type = type;
    e.n_dims = uint32_t(ne.size());
    e.ne = {1, 1, 1, 1};
    for (std::size_t d = 0; d < ne.size(); ++d) e.ne[d] = ne[d];
    e.bytes = std::move(bytes);
    tensor_names_.insert(e.name);
    tensors_.push_back(std::move(e));
    return *this;
  }
  writer& add_tensor(std::string_view name, ggml_type type, std::span<const uint64_t> ne,
                     std::span<const uint8_t> bytes) {
    return add_tensor(name, type, ne, std::vector<uint8_t>(bytes.begin(), bytes.end()));
  }
  writer& add_tensor(std::string_view name, ggml_type type, std::initializer_list<uint64_t> ne,
                     std::span<const uint8_t> bytes) {
    return add_tensor(name, type, std::span<const uint64_t>(ne.begin(), ne.size()), bytes);
  }
  writer& add_tensor(std::string_view name, ggml_type type, std::initializer_list<uint64_t> ne,
                     std::vector<uint8_t>&& bytes) {
    return add_tensor(name, type, std::span<const uint64_t>(ne.begin(), ne.size()), std::move(bytes));
  }

  // ---- output
  // Everything before the data section: header, metadata, tensor infos, padding.
  std::vector<uint8_t> header_bytes() const {
    std::vector<uint8_t> out;
    detail::put_le<uint32_t>(out, magic);
    detail::put_le<uint32_t>(out, version_);
    detail::put_le<uint64_t>(out, tensors_.size());
    detail::put_le<uint64_t>(out, n_kv_);
    out.insert(out.end(), meta_.begin(), meta_.end());
    uint64_t offset = 0;
    for (const auto& t : tensors_) {
      detail::put_string(out, t.name);
      detail::put_le<uint32_t>(out, t.n_dims);
      for (uint32_t d = 0; d < t.n_dims; ++d) detail::put_le<uint64_t>(out, t.ne[d]);
      detail::put_le<uint32_t>(out, uint32_t(t.type));
      detail::put_le<uint64_t>(out, offset);
      offset += padded(t.bytes.size());
    }
    out.resize(padded(out.size()), 0);
    return out;
  }
  std::vector<uint8_t> to_bytes() const {
    std::vector<uint8_t> out = header_bytes();
    for (const auto& t : tensors_) {
      out.insert(out.end(), t.bytes.begin(), t.bytes.end());
      out.resize(padded(out.size()), 0);
    }
    return out;
  }
  void write(const std::filesystem::path& path) const {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    lutkit::detail::require(bool(f), "gguf::writer: cannot create '", path.string(), "'");
    const auto head = header_bytes();
    f.write(reinterpret_cast<const char*>(head.data()), std::streamsize(head.size()));
    static const char zeros[256] = {};
    for (const auto& t : tensors_) {
      f.write(reinterpret_cast<const char*>(t.bytes.data()), std::streamsize(t.bytes.size()));
      for (std::size_t pad = padded(t.bytes.size()) - t.bytes.size(); pad > 0;) {
        const std::size_t n = std::min(pad, sizeof(zeros));
        f.write(zeros, std::streamsize(n));
        pad -= n;
      }
    }
    f.flush();
    lutkit::detail::require(bool(f), "gguf::writer: writing '", path.string(), "' failed");
  }

 private:
  struct entry {
    std::string name;
    ggml_type type;
    uint32_t n_dims;
    std::array<uint64_t, 4> ne;
    std::vector<uint8_t> bytes;
  };
  uint64_t padded(uint64_t n) const { return (n + alignment_ - 1) / alignment_ * alignment_; }
  void begin(std::string_view key, value_type t) {
    lutkit::detail::require(!key.empty(), "gguf::writer: empty key");
    lutkit::detail::require(key != "general.alignment" || t == value_type::u32,
                            "gguf::writer: general.alignment must be a u32");
    lutkit::detail::require(keys_.insert(std::string(key)).second, "gguf::writer: duplicate key '", key, "'");
    detail::put_string(meta_, key);
    detail::put_le<uint32_t>(meta_, uint32_t(t));
    ++n_kv_;
  }
  template <class T>
  writer& scalar(std::string_view key, T v) {
    begin(key, value_type_of<T>());
    if constexpr (std::is_same_v<T, bool>) meta_.push_back(v ? 1 : 0);
    else detail::put_le<T>(meta_, v);
    return *this;
  }

  uint32_t version_;
  uint32_t alignment_ = default_alignment;
  uint64_t n_kv_ = 0;
  std::vector<uint8_t> meta_;
  std::unordered_set<std::string> keys_;
  std::vector<entry> tensors_;
  std::unordered_set<std::string> tensor_names_;
};

// ------------------------------------------------------------------ a tiny random llama model
// The shape and types of the model tiny_llama writes. n_embd and n_ff must be multiples of the
// matrix type's block (256 for the K-quants and TQ types, 32 for Q4_0 ...), n_embd a multiple of
// n_head, n_head a multiple of n_head_kv, n_vocab at least 259 (3 special and 256 byte tokens).
struct tiny_llama_options {
  // "llama"; "qwen2" adds F32 biases of Q, K and V (blk.N.attn_{q,k,v}.bias); "qwen3" adds the
  // per-head norms blk.N.attn_{q,k}_norm.weight {head_dim}; both qwen ones a "gpt2" vocabulary
  // (byte-level BPE pieces). "gemma3" adds the per-head norms, blk.N.post_attention_norm and
  // blk.N.post_ffw_norm, and gemma3.attention.sliding_window. Any other name is written as given
  // (for tests of a loader's refusal).
  std::string arch = "llama";
  uint32_t sliding_window = 8;  // gemma3: the local layers' window
  ggml_type matrix_type = ggml_type::q4_0;     // attention and feed-forward matrices, output.weight
  ggml_type embedding_type = ggml_type::f32;   // token_embd.weight
  // llama.cpp's Q4_K_M mix (with matrix_type Q4_K): attn_v and ffn_down in Q6_K in the layers its
  // quantizer gives more bits (the first and last eighth, every third between), output.weight in
  // Q6_K; general.file_type 15
  bool q4_k_m = false;
  uint32_t n_vocab = 320;
  uint32_t n_embd = 256;
  uint32_t n_ff = 512;
  uint32_t n_layer = 2;
  uint32_t n_head = 4;
  uint32_t n_head_kv = 2;
  uint32_t n_ctx = 256;
  float rms_eps = 1e-5f;
  float rope_freq_base = 10000.f;
  bool output_tensor = true;                   // false: llama.cpp reuses token_embd.weight
  uint64_t seed = 1;
  uint32_t version = 3;
};

// A `llama` model with random weights (io/ggml_blocks.hpp's random_blocks: finite scales, codes
// uniform), F32 norms near 1, and a SentencePiece-style vocabulary: <unk>, <s>, </s>, the 256 byte
// tokens <0x00>..<0xFF>, then words "w<i>". Every key and tensor of the list above.
inline writer tiny_llama(const tiny_llama_options& o) {
  const auto need = [](bool ok, const char* what) {
    lutkit::detail::require(ok, "gguf::tiny_llama: ", what);
  };
  const ggml_type_info mt = ggml_info(o.matrix_type), et = ggml_info(o.embedding_type);
  need(ggml::can_dequantize(o.matrix_type) && ggml::can_dequantize(o.embedding_type),
       "the matrix and embedding types must be types lutkit dequantizes");
  need(o.n_layer >= 1 && o.n_head >= 1 && o.n_head_kv >= 1 && o.n_head % o.n_head_kv == 0,
       "n_layer, n_head, n_head_kv >= 1 with n_head a multiple of n_head_kv");
  need(o.n_embd % o.n_head == 0, "n_embd must be a multiple of n_head");
  need(o.n_embd % mt.block_elems == 0 && o.n_ff % mt.block_elems == 0 && o.n_embd % et.block_elems == 0,
       "n_embd and n_ff must be multiples of the types' blocks");
  need(o.n_vocab >= 259, "n_vocab must be at least 259 (<unk>, <s>, </s> and 256 byte tokens)");

  writer w(o.version);
  const std::string a = o.arch + ".";
  const bool qwen = o.arch == "qwen2" || o.arch == "qwen3";
  w.add_string("general.architecture", o.arch);
  w.add_string("general.name", "lutkit tiny " + o.arch);
  // llama.cpp's file type of the matrices (LLAMA_FTYPE_MOSTLY_*: its loader prints it; 0: F32)
  const uint32_t ftype = o.matrix_type == ggml_type::q4_0     ? 2
                         : o.matrix_type == ggml_type::q4_1   ? 3
                         : o.matrix_type == ggml_type::q5_0   ? 8
                         : o.matrix_type == ggml_type::q8_0   ? 7
                         : o.matrix_type == ggml_type::iq4_nl ? 25
                         : o.matrix_type == ggml_type::tq1_0  ? 36
                         : o.matrix_type == ggml_type::tq2_0  ? 37
                         : o.matrix_type == ggml_type::q4_k   ? (o.q4_k_m ? 15 : 14)
                         : o.matrix_type == ggml_type::q6_k   ? 18
                         : o.matrix_type == ggml_type::q3_k   ? 11  // Q3_K_S: every matrix Q3_K
                         : o.matrix_type == ggml_type::q5_1   ? 9
                         : o.matrix_type == ggml_type::q2_k   ? 10
                         : o.matrix_type == ggml_type::q5_k   ? 16  // Q5_K_S
                                                              : 0;
  if (ftype) w.add_u32("general.file_type", ftype);
  w.set_alignment(default_alignment);
  w.add_u32(a + "context_length", o.n_ctx);
  w.add_u32(a + "embedding_length", o.n_embd);
  w.add_u32(a + "block_count", o.n_layer);
  w.add_u32(a + "feed_forward_length", o.n_ff);
  w.add_u32(a + "attention.head_count", o.n_head);
  w.add_u32(a + "attention.head_count_kv", o.n_head_kv);
  w.add_f32(a + "attention.layer_norm_rms_epsilon", o.rms_eps);
  w.add_f32(a + "rope.freq_base", o.rope_freq_base);
  w.add_u32(a + "rope.dimension_count", o.n_embd / o.n_head);
  w.add_u32(a + "vocab_size", o.n_vocab);
  if (o.arch == "gemma3") w.add_u32(a + "attention.sliding_window", o.sliding_window);
  if (o.arch == "qwen3" || o.arch == "gemma3") {
    w.add_u32(a + "attention.key_length", o.n_embd / o.n_head);
    w.add_u32(a + "attention.value_length", o.n_embd / o.n_head);
  }

  // vocabulary
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  tokens.reserve(o.n_vocab);
  const auto add_token = [&](std::string s, float score, int32_t type) {
    tokens.push_back(std::move(s));
    scores.push_back(score);
    types.push_back(type);
  };
  add_token("<unk>", 0.f, 2);
  add_token("<s>", 0.f, 3);
  add_token("</s>", 0.f, 3);
  static const char hex[] = "0123456789ABCDEF";
  if (qwen) {
    // byte-level BPE: the 256 single-byte pieces through GPT-2's byte-to-character table, then
    // words "Ġw<i>" (U+0120, a space)
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      const uint32_t cp = printable ? uint32_t(b) : uint32_t(256 + n++);
      std::string s;
      if (cp < 0x80) s += char(cp);
      else s += char(0xC0 | (cp >> 6)), s += char(0x80 | (cp & 0x3F));
      add_token(s, 0.f, 1);
    }
    for (uint32_t i = uint32_t(tokens.size()); i < o.n_vocab; ++i) add_token("\xC4\xA0w" + std::to_string(i), 0.f, 1);
  } else {
    for (int b = 0; b < 256; ++b) add_token(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">", 0.f, 6);
    for (uint32_t i = uint32_t(tokens.size()); i < o.n_vocab; ++i)
      add_token("\xE2\x96\x81w" + std::to_string(i), -float(i), 1);  // "▁w<i>"
  }
  w.add_string("tokenizer.ggml.model", qwen ? "gpt2" : "llama");
  w.add_array("tokenizer.ggml.tokens", tokens);
  w.add_array("tokenizer.ggml.scores", scores);
  w.add_array("tokenizer.ggml.token_type", types);
  w.add_u32("tokenizer.ggml.unknown_token_id", 0);
  w.add_u32("tokenizer.ggml.bos_token_id", 1);
  w.add_u32("tokenizer.ggml.eos_token_id", 2);

  // tensors
  uint64_t seed = o.seed;
  const auto mat = [&](const std::string& name, ggml_type t, uint64_t ne0, uint64_t ne1) {
    w.add_tensor(name, t, {ne0, ne1}, ggml::random_blocks(t, std::size_t(ne0 * ne1), seed++, 0.05f));
  };
  const auto norm = [&](const std::string& name, uint64_t n) {
    w.add_tensor(name, ggml_type::f32, {n}, ggml::random_blocks(ggml_type::f32, std::size_t(n), seed++, 0.1f));
  };
  need(!o.q4_k_m || o.matrix_type == ggml_type::q4_k, "the Q4_K_M mix needs matrix_type Q4_K");
  const uint64_t head_dim = o.n_embd / o.n_head, n_kv = head_dim * o.n_head_kv;
  // the Q4_K_M mix: Q6_K where llama.cpp's quantizer spends more bits
  const auto more_bits = [&](uint32_t l) {
    const uint32_t n = o.n_layer;
    return o.q4_k_m && (l < n / 8 || l >= 7 * n / 8 || (l - n / 8) % 3 == 2);
  };
  mat("token_embd.weight", o.embedding_type, o.n_embd, o.n_vocab);
  for (uint32_t l = 0; l < o.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    norm(p + "attn_norm.weight", o.n_embd);
    mat(p + "attn_q.weight", o.matrix_type, o.n_embd, o.n_embd);
    mat(p + "attn_k.weight", o.matrix_type, o.n_embd, n_kv);
    mat(p + "attn_v.weight", more_bits(l) ? ggml_type::q6_k : o.matrix_type, o.n_embd, n_kv);
    if (o.arch == "qwen2") {
      const auto bias = [&](const std::string& name, uint64_t n) {
        w.add_tensor(name, ggml_type::f32, {n}, ggml::random_blocks(ggml_type::f32, std::size_t(n), seed++, 0.02f));
      };
      bias(p + "attn_q.bias", o.n_embd);
      bias(p + "attn_k.bias", n_kv);
      bias(p + "attn_v.bias", n_kv);
    }
    if (o.arch == "qwen3" || o.arch == "gemma3") {
      norm(p + "attn_q_norm.weight", head_dim);
      norm(p + "attn_k_norm.weight", head_dim);
    }
    mat(p + "attn_output.weight", o.matrix_type, o.n_embd, o.n_embd);
    if (o.arch == "gemma3") norm(p + "post_attention_norm.weight", o.n_embd);
    norm(p + "ffn_norm.weight", o.n_embd);
    mat(p + "ffn_gate.weight", o.matrix_type, o.n_embd, o.n_ff);
    mat(p + "ffn_up.weight", o.matrix_type, o.n_embd, o.n_ff);
    mat(p + "ffn_down.weight", more_bits(l) ? ggml_type::q6_k : o.matrix_type, o.n_ff, o.n_embd);
    if (o.arch == "gemma3") norm(p + "post_ffw_norm.weight", o.n_embd);
  }
  norm("output_norm.weight", o.n_embd);
  if (o.output_tensor) mat("output.weight", o.q4_k_m ? ggml_type::q6_k : o.matrix_type, o.n_embd, o.n_vocab);
  return w;
}

}  // namespace lutkit::gguf
