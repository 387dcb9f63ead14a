// Fuzz target: the GGUF reader (lutkit/io/gguf.hpp) on arbitrary bytes. A file it accepts is
// walked whole: every metadata value through its typed accessor (and a wrong one, which must
// refuse with lutkit::error), every array element, nested arrays to the bottom, every tensor's
// bytes checked to lie inside the input, aligned and disjoint, and the first row of each tensor of
// a type lutkit dequantizes turned into floats. Seeds: files written by lutkit's writer
// (make_seeds: value types, nested arrays, tensors of every dequantized type, a tiny llama model).
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include <lutkit/io/ggml_blocks.hpp>
#include <lutkit/io/gguf.hpp>

#include "fuzz_support.hpp"

namespace {
namespace gguf = lutkit::gguf;
constexpr const char* kTarget = "gguf";

uint64_t sink = 0;

void visit(const gguf::value& v, int depth, bool probe) {
  if (v.type() == gguf::value_type::array && depth > gguf::max_array_depth)
    lutkit_fuzz::fail(kTarget, "an accepted array is nested past the limit", depth);
  switch (v.type()) {
    case gguf::value_type::u8: sink += v.as_u8(); break;
    case gguf::value_type::i8: sink += uint64_t(v.as_i8()); break;
    case gguf::value_type::u16: sink += v.as_u16(); break;
    case gguf::value_type::i16: sink += uint64_t(v.as_i16()); break;
    case gguf::value_type::u32: sink += v.as_u32(); break;
    case gguf::value_type::i32: sink += uint64_t(v.as_i32()); break;
    case gguf::value_type::u64: sink += v.as_u64(); break;
    case gguf::value_type::i64: sink += uint64_t(v.as_i64()); break;
    case gguf::value_type::f32: sink += v.as_f32() == 0.f; break;
    case gguf::value_type::f64: sink += v.as_f64() == 0.0; break;
    case gguf::value_type::boolean: sink += v.as_bool(); break;
    case gguf::value_type::string: {
      const auto s = v.as_string();
      for (char c : s) sink += uint8_t(c);
      break;
    }
    case gguf::value_type::array: {
      const auto a = v.as_array();
      for (std::size_t i = 0; i < a.size(); ++i) visit(a[i], depth + 1, false);
      break;
    }
  }
  // (one value per file: exceptions are slow) a wrong accessor refuses; numbers convert
  if (probe) {
    try {
      if (v.type() == gguf::value_type::string) sink += v.as_u8();
      else sink += v.as_string().size();
      lutkit_fuzz::fail(kTarget, "a typed accessor read a value of another type");
    } catch (const lutkit::error&) {
    }
    if (v.type() != gguf::value_type::string && v.type() != gguf::value_type::array)
      sink += uint64_t(v.to_double() != 0.0);
  }
}

void check_tensors(const gguf::file& f) {
  const uint64_t size = f.bytes().size();
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const auto& t : f.tensors()) {
    const auto ti = lutkit::ggml_info(t.type);
    if (ti.block_elems == 0 || t.ne[0] % ti.block_elems != 0) lutkit_fuzz::fail(kTarget, "accepted an unknown type");
    if (t.offset % f.alignment() != 0) lutkit_fuzz::fail(kTarget, "accepted a misaligned tensor", double(t.offset));
    if (t.file_offset > size || t.n_bytes > size - t.file_offset)
      lutkit_fuzz::fail(kTarget, "a tensor's bytes lie outside the file", double(t.file_offset), double(t.n_bytes));
    if (t.data != f.bytes().data() + t.file_offset) lutkit_fuzz::fail(kTarget, "tensor data pointer");
    // n_bytes = blocks per row x block bytes x rows (no wrap: the reader checked, and the bytes are in the file)
    if (t.n_rows() > 0 && t.row_bytes() * t.n_rows() != t.n_bytes) lutkit_fuzz::fail(kTarget, "tensor byte count");
    if (t.n_bytes > 0) spans.push_back({t.file_offset, t.file_offset + t.n_bytes});
    if (f.find_tensor(t.name) == nullptr) lutkit_fuzz::fail(kTarget, "an accepted tensor is not found by name");
    // the first row, dequantized (a row is inside the tensor's bytes, so its floats are bounded by the input)
    if (t.n_rows() > 0 && lutkit::ggml::can_dequantize(t.type)) {
      const auto row = t.row(0);
      std::vector<float> y(std::size_t(t.row_elems()));
      lutkit::ggml::dequantize_row(t.type, row, y);
      for (float v : y) sink += v == 0.f;
    }
  }
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 1; i < spans.size(); ++i)
    if (spans[i].first < spans[i - 1].second) lutkit_fuzz::fail(kTarget, "accepted overlapping tensors");
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  try {
    const gguf::file f{std::span<const uint8_t>(data, size), "fuzz.gguf"};
    lutkit_fuzz::trace(kTarget, "accepted");
    if (f.version() != 2 && f.version() != 3) lutkit_fuzz::fail(kTarget, "accepted a version", f.version());
    for (std::size_t i = 0; i < f.metadata().size(); ++i) {
      const auto& kv = f.metadata()[i];
      if (!f.find(kv.key)) lutkit_fuzz::fail(kTarget, "an accepted key is not found");
      visit(kv.value, 1, i == size % f.metadata().size());
    }
    check_tensors(f);
  } catch (const lutkit::error&) {
    // the documented refusal
  }
  return 0;
}
