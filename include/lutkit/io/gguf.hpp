// lutkit — a reader of GGUF model files (llama.cpp's format), versions 2 and 3, little-endian.
//
//   lutkit::gguf::file f("model.gguf");               // maps the file read-only; nothing is copied
//   uint32_t layers = f.get_u32("llama.block_count");
//   auto vocab = f.get_array("tokenizer.ggml.tokens"); // a view: vocab.size(), vocab.string(i)
//   if (auto v = f.find("llama.rope.freq_base")) base = v->as_f32();
//   for (const auto& t : f.tensors())                  // name, type, ne[], offset, bytes()
//     use(t.name, t.type, t.ne[0], t.n_rows(), t.row(0));
//
// A file is parsed completely and validated when it is opened; afterwards every accessor reads
// memory that is known to be inside the file. What the reader refuses (docs/gguf.md lists each
// case) gets a lutkit::error whose message names the field and its byte offset in the file:
// truncation anywhere, counts past the file (tensor and key/value counts, array lengths, string
// lengths), an unknown value type or ggml type, a nested array deeper than max_array_depth, more
// than 4 dimensions, a dimension above 2^63 - 1 or an element count or byte size that overflows,
// a row length that is not a multiple of the type's block, duplicate keys or tensor names, a bad
// general.alignment, a tensor offset that is not a multiple of the alignment, tensor data past
// the end of the file, and tensors that overlap. Nothing is allocated from a count before the
// count is checked against the bytes that remain, so memory stays proportional to the file.
//
// Dimension order: `tensor::ne` is ggml's order. ne[0] is the innermost dimension, the one whose
// elements are contiguous in memory (the row); ne[1] counts rows, ne[2] and ne[3] count matrices.
// A weight matrix y = W x of K inputs and M outputs is stored with ne[0] = K, ne[1] = M, the
// transpose of the (rows, columns) = (M, K) order PyTorch and NumPy print.
//
// Views (values, arrays, strings, tensors) point into the mapped file: they stay valid while the
// file object lives (moving the file keeps them valid).
#pragma once
#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lutkit/core/error.hpp"
#include "lutkit/io/ggml_types.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#define LUTKIT_GGUF_MMAP 1
#else
#include <fstream>
#endif

namespace lutkit::gguf {

// The type of a metadata value (the uint32 before each value in the file).
enum class value_type : uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12,
};

inline constexpr uint32_t magic = 0x46554747u;  // "GGUF" read as a little-endian uint32
inline constexpr uint32_t default_alignment = 32;
inline constexpr uint32_t max_dims = 4;
// Arrays inside arrays: an array of scalars or strings is depth 1, an array of such arrays 2, ...
inline constexpr int max_array_depth = 8;

constexpr std::string_view value_type_name(value_type t) {
  switch (t) {
    case value_type::u8: return "u8";
    case value_type::i8: return "i8";
    case value_type::u16: return "u16";
    case value_type::i16: return "i16";
    case value_type::u32: return "u32";
    case value_type::i32: return "i32";
    case value_type::f32: return "f32";
    case value_type::boolean: return "bool";
    case value_type::string: return "string";
    case value_type::array: return "array";
    case value_type::u64: return "u64";
    case value_type::i64: return "i64";
    case value_type::f64: return "f64";
  }
  return "unknown";
}
// Bytes of one scalar of type t in the file; 0 for strings and arrays (variable size).
constexpr uint32_t scalar_bytes(value_type t) {
  switch (t) {
    case value_type::u8: case value_type::i8: case value_type::boolean: return 1;
    case value_type::u16: case value_type::i16: return 2;
    case value_type::u32: case value_type::i32: case value_type::f32: return 4;
    case value_type::u64: case value_type::i64: case value_type::f64: return 8;
    default: return 0;
  }
}
constexpr bool valid_value_type(uint32_t t) { return t <= 12; }

// The value type that stores C++ type T (uint8_t -> u8, ..., bool -> boolean, double -> f64).
template <class T>
constexpr value_type value_type_of() {
  if constexpr (std::is_same_v<T, bool>) return value_type::boolean;
  else if constexpr (std::is_same_v<T, uint8_t>) return value_type::u8;
  else if constexpr (std::is_same_v<T, int8_t>) return value_type::i8;
  else if constexpr (std::is_same_v<T, uint16_t>) return value_type::u16;
  else if constexpr (std::is_same_v<T, int16_t>) return value_type::i16;
  else if constexpr (std::is_same_v<T, uint32_t>) return value_type::u32;
  else if constexpr (std::is_same_v<T, int32_t>) return value_type::i32;
  else if constexpr (std::is_same_v<T, uint64_t>) return value_type::u64;
  else if constexpr (std::is_same_v<T, int64_t>) return value_type::i64;
  else if constexpr (std::is_same_v<T, float>) return value_type::f32;
  else if constexpr (std::is_same_v<T, double>) return value_type::f64;
  else static_assert(sizeof(T) == 0, "no GGUF value type stores this C++ type");
}

namespace detail {
// little-endian loads from unaligned bytes
template <class T>
inline T load_le(const uint8_t* p) {
  static_assert(std::is_trivially_copyable_v<T>);
  if constexpr (std::endian::native == std::endian::little) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  } else {
    uint8_t b[sizeof(T)];
    for (std::size_t i = 0; i < sizeof(T); ++i) b[i] = p[sizeof(T) - 1 - i];
    T v;
    std::memcpy(&v, b, sizeof(T));
    return v;
  }
}
// For arrays of strings and of arrays: where each element starts in the file. For an array
// element, `first` is the index of its own first entry (its elements' entries), else unused.
struct gguf_element {
  uint64_t offset;
  uint64_t first;
};
}  // namespace detail


class array_view;

// A metadata value: a view into the file. The typed accessors throw lutkit::error naming the key,
// the offset and both types when the value has another type.
class value {
 public:
  value() = default;
  value_type type() const { return type_; }
  bool is(value_type t) const { return type_ == t; }
  std::string_view key() const { return key_; }  // the key the value belongs to (array elements: their array's)
  uint64_t offset() const { return offset_; }     // file offset of the value's bytes

  uint8_t as_u8() const { return scalar<uint8_t>(); }
  int8_t as_i8() const { return scalar<int8_t>(); }
  uint16_t as_u16() const { return scalar<uint16_t>(); }
  int16_t as_i16() const { return scalar<int16_t>(); }
  uint32_t as_u32() const { return scalar<uint32_t>(); }
  int32_t as_i32() const { return scalar<int32_t>(); }
  uint64_t as_u64() const { return scalar<uint64_t>(); }
  int64_t as_i64() const { return scalar<int64_t>(); }
  float as_f32() const { return scalar<float>(); }
  double as_f64() const { return scalar<double>(); }
  bool as_bool() const { return scalar<bool>(); }
  std::string_view as_string() const {
    expect(value_type::string);
    return {reinterpret_cast<const char*>(data_), std::size_t(count_)};
  }
  inline array_view as_array() const;
  // as<T>(): the accessor of C++ type T (as<uint32_t>() is as_u32(), as<std::string_view>() as_string())
  template <class T>
  T as() const {
    if constexpr (std::is_same_v<T, std::string_view>) return as_string();
    else return scalar<T>();
  }

  // Any integer type (bool included) as uint64 / int64, refused when the value does not fit; any
  // integer or floating type as double.
  uint64_t to_uint() const {
    if (is_signed_int()) {
      const int64_t v = signed_value();
      lutkit::detail::require(v >= 0, where(), " is ", v, ", not a non-negative integer");
      return uint64_t(v);
    }
    lutkit::detail::require(is_unsigned_int(), where(), " is a ", value_type_name(type_), ", not an integer");
    return unsigned_value();
  }
  int64_t to_int() const {
    if (is_signed_int()) return signed_value();
    lutkit::detail::require(is_unsigned_int(), where(), " is a ", value_type_name(type_), ", not an integer");
    const uint64_t v = unsigned_value();
    lutkit::detail::require(v <= uint64_t(INT64_MAX), where(), " is ", v, ", above the largest int64");
    return int64_t(v);
  }
  double to_double() const {
    if (type_ == value_type::f32) return double(scalar<float>());
    if (type_ == value_type::f64) return scalar<double>();
    if (is_signed_int()) return double(signed_value());
    lutkit::detail::require(is_unsigned_int(), where(), " is a ", value_type_name(type_), ", not a number");
    return double(unsigned_value());
  }

 private:
  friend class file;
  friend class array_view;
  std::string where() const {
    std::ostringstream os;
    os << "gguf: key '" << key_ << "' (value at offset " << offset_ << ")";
    return os.str();
  }
  void expect(value_type t) const {
    if (type_ != t) [[unlikely]]
      lutkit::detail::require(false, where(), " is a ", value_type_name(type_), ", not a ", value_type_name(t));
  }
  template <class T>
  T scalar() const {
    expect(value_type_of<T>());
    if constexpr (std::is_same_v<T, bool>) return data_[0] != 0;
    else return detail::load_le<T>(data_);
  }
  bool is_unsigned_int() const {
    return type_ == value_type::u8 || type_ == value_type::u16 || type_ == value_type::u32 ||
           type_ == value_type::u64 || type_ == value_type::boolean;
  }
  bool is_signed_int() const {
    return type_ == value_type::i8 || type_ == value_type::i16 || type_ == value_type::i32 || type_ == value_type::i64;
  }
  uint64_t unsigned_value() const {
    switch (type_) {
      case value_type::u8: case value_type::boolean: return data_[0];
      case value_type::u16: return detail::load_le<uint16_t>(data_);
      case value_type::u32: return detail::load_le<uint32_t>(data_);
      default: return detail::load_le<uint64_t>(data_);
    }
  }
  int64_t signed_value() const {
    switch (type_) {
      case value_type::i8: return int8_t(data_[0]);
      case value_type::i16: return detail::load_le<int16_t>(data_);
      case value_type::i32: return detail::load_le<int32_t>(data_);
      default: return detail::load_le<int64_t>(data_);
    }
  }

  value_type type_ = value_type::u8;
  value_type elem_ = value_type::u8;  // arrays: the element type
  uint64_t count_ = 0;                // strings: bytes; arrays: elements
  uint64_t offset_ = 0;               // file offset: scalar bytes, a string's length, an array's header
  const uint8_t* data_ = nullptr;     // scalar bytes; string characters; an array's first element
  const uint8_t* base_ = nullptr;     // the file's first byte
  const detail::gguf_element* table_ = nullptr;  // the file's element table
  uint64_t first_ = 0;                // arrays of strings / arrays: their first entry in table_
  std::string_view key_;
};

// An array value: element type, length and elements (scalars, strings or arrays). A view.
class array_view {
 public:
  array_view() = default;
  value_type elem_type() const { return v_.elem_; }
  std::size_t size() const { return std::size_t(v_.count_); }
  bool empty() const { return v_.count_ == 0; }
  uint64_t offset() const { return v_.offset_; }  // file offset of the array's header
  std::string_view key() const { return v_.key_; }

  // Element i as a value of type elem_type(); i is checked.
  value operator[](std::size_t i) const {
    lutkit::detail::require(i < v_.count_, "gguf: key '", v_.key_, "': array index ", i, " out of range (", v_.count_,
                            " elements; array at offset ", v_.offset_, ")");
    value e;
    e.type_ = v_.elem_;
    e.key_ = v_.key_;
    e.base_ = v_.base_;
    e.table_ = v_.table_;
    const uint32_t sb = scalar_bytes(v_.elem_);
    if (sb != 0) {
      e.data_ = v_.data_ + i * sb;
      e.offset_ = uint64_t(e.data_ - v_.base_);
      return e;
    }
    const detail::gguf_element& t = v_.table_[v_.first_ + i];
    const uint8_t* p = v_.base_ + t.offset;
    e.offset_ = t.offset;
    if (v_.elem_ == value_type::string) {
      e.count_ = detail::load_le<uint64_t>(p);
      e.data_ = p + 8;
    } else {  // a nested array: element type, length, then its elements
      e.elem_ = value_type(detail::load_le<uint32_t>(p));
      e.count_ = detail::load_le<uint64_t>(p + 4);
      e.data_ = p + 12;
      e.first_ = t.first;
    }
    return e;
  }
  value at(std::size_t i) const { return (*this)[i]; }
  std::string_view string(std::size_t i) const { return (*this)[i].as_string(); }
  array_view array(std::size_t i) const { return (*this)[i].as_array(); }
  template <class T>
  T get(std::size_t i) const {
    return (*this)[i].template as<T>();
  }
  // The elements copied out: numbers of C++ type T (the element type must be T's exactly), or,
  // with T = std::string_view, the strings (views into the file).
  template <class T>
  std::vector<T> to_vector() const {
    std::vector<T> out;
    if constexpr (std::is_same_v<T, std::string_view>) {
      check_elem(value_type::string);
      out.reserve(size());
      for (std::size_t i = 0; i < size(); ++i) out.push_back(string(i));
    } else {
      check_elem(value_type_of<T>());
      out.resize(size());
      for (std::size_t i = 0; i < size(); ++i) {
        if constexpr (std::is_same_v<T, bool>) out[i] = v_.data_[i] != 0;
        else out[i] = detail::load_le<T>(v_.data_ + i * sizeof(T));
      }
    }
    return out;
  }

 private:
  friend class value;
  explicit array_view(const value& v) : v_(v) {}
  void check_elem(value_type t) const {
    lutkit::detail::require(v_.elem_ == t, "gguf: key '", v_.key_, "' (array at offset ", v_.offset_, ") holds ",
                            value_type_name(v_.elem_), " elements, not ", value_type_name(t));
  }
  value v_;
};

inline array_view value::as_array() const {
  expect(value_type::array);
  return array_view(*this);
}

// One metadata entry, in file order.
struct key_value {
  std::string_view key;
  uint64_t offset;  // file offset of the entry (its key's length field)
  gguf::value value;
};

// One tensor: its info and a view of its bytes in the mapped file.
struct tensor {
  std::string_view name;
  ggml_type type;
  uint32_t n_dims;                // 0..4, as written in the file
  std::array<uint64_t, 4> ne;     // ggml order: ne[0] innermost (contiguous, a row); 1 past n_dims
  uint64_t offset;                // from the start of the data section (a multiple of the alignment)
  uint64_t file_offset;           // from the start of the file
  uint64_t n_bytes;               // (ne[0] / block elems) * block bytes * ne[1] * ne[2] * ne[3]
  uint64_t info_offset;           // file offset of the tensor's info (its name's length field)
  const uint8_t* data;            // the first byte of its data (in the mapping)

  std::span<const uint8_t> bytes() const { return {data, std::size_t(n_bytes)}; }
  ggml_type_info info() const { return ggml_info(type); }
  uint64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  uint64_t row_elems() const { return ne[0]; }
  uint64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
  uint64_t row_bytes() const { return ne[0] / info().block_elems * info().block_bytes; }
  // Row r (0 <= r < n_rows()) as bytes: row_bytes() bytes of blocks.
  std::span<const uint8_t> row(uint64_t r) const {
    lutkit::detail::require(r < n_rows(), "gguf: tensor '", name, "': row ", r, " out of range (", n_rows(), " rows)");
    const uint64_t rb = row_bytes();
    return {data + r * rb, std::size_t(rb)};
  }
};

namespace detail {
// The bytes of a file: mapped read-only (POSIX), read into memory (elsewhere), or the caller's.
class gguf_bytes {
 public:
  gguf_bytes() = default;
  gguf_bytes(const gguf_bytes&) = delete;
  gguf_bytes& operator=(const gguf_bytes&) = delete;
  gguf_bytes(gguf_bytes&& o) noexcept { *this = std::move(o); }
  gguf_bytes& operator=(gguf_bytes&& o) noexcept {
    if (this != &o) {
      release();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
      mapped_ = std::exchange(o.mapped_, false);
      owned_ = std::move(o.owned_);
    }
    return *this;
  }
  ~gguf_bytes() { release(); }

  static gguf_bytes borrow(std::span<const uint8_t> s) {
    gguf_bytes b;
    b.p_ = s.data();
    b.n_ = s.size();
    return b;
  }
  static gguf_bytes map(const std::filesystem::path& path) {
    gguf_bytes b;
#if defined(LUTKIT_GGUF_MMAP)
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    lutkit::detail::require(fd >= 0, "gguf: cannot open '", path.string(), "': ", std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      lutkit::detail::require(false, "gguf: '", path.string(), "' is not a regular file");
    }
    const auto n = std::size_t(st.st_size);
    if (n > 0) {
      // MAP_POPULATE (Linux): the page tables filled in one pass at open. A reader packs every
      // tensor, and a page not yet mapped both costs a fault when first read and makes a
      // software prefetch of it a no-op: the packers' prefetches of the next tile's blocks were
      // dropped and their loads stalled (docs/llama_formats.md, "Load").
      int flags = MAP_PRIVATE;
#if defined(MAP_POPULATE)
      flags |= MAP_POPULATE;
#endif
      void* p = ::mmap(nullptr, n, PROT_READ, flags, fd, 0);
      const int err = errno;
      ::close(fd);
      lutkit::detail::require(p != MAP_FAILED, "gguf: cannot map '", path.string(), "': ", std::strerror(err));
      b.p_ = static_cast<const uint8_t*>(p);
      b.n_ = n;
      b.mapped_ = true;
    } else {
      ::close(fd);
    }
#else
    std::ifstream in(path, std::ios::binary);
    lutkit::detail::require(bool(in), "gguf: cannot open '", path.string(), "'");
    in.seekg(0, std::ios::end);
    const auto n = std::size_t(in.tellg());
    in.seekg(0);
    b.owned_.resize(n);
    in.read(reinterpret_cast<char*>(b.owned_.data()), std::streamsize(n));
    lutkit::detail::require(bool(in), "gguf: cannot read '", path.string(), "'");
    b.p_ = b.owned_.data();
    b.n_ = n;
#endif
    return b;
  }
  const uint8_t* data() const { return p_; }
  std::size_t size() const { return n_; }
  bool mapped() const { return mapped_; }

 private:
  void release() {
#if defined(LUTKIT_GGUF_MMAP)
    if (mapped_) ::munmap(const_cast<uint8_t*>(p_), n_);
#endif
    p_ = nullptr;
    n_ = 0;
    mapped_ = false;
    owned_.clear();
  }
  const uint8_t* p_ = nullptr;
  std::size_t n_ = 0;
  bool mapped_ = false;
  std::vector<uint8_t> owned_;
};
}  // namespace detail

// A GGUF file, parsed and validated on construction.
class file {
 public:
  // Maps the file at `path` read-only (POSIX mmap; elsewhere it is read into memory).
  explicit file(const std::filesystem::path& path) : bytes_(detail::gguf_bytes::map(path)), name_(path.string()) {
    parse();
  }
  // Parses the caller's bytes in place; they must stay valid (and unchanged) while the file is used.
  explicit file(std::span<const uint8_t> bytes, std::string name = "<memory>")
      : bytes_(detail::gguf_bytes::borrow(bytes)), name_(std::move(name)) {
    parse();
  }
  file(file&&) noexcept = default;
  file& operator=(file&&) noexcept = default;

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // where the data section starts in the file
  std::span<const uint8_t> bytes() const { return {bytes_.data(), bytes_.size()}; }
  bool mapped() const { return bytes_.mapped(); }

  // ---- metadata
  std::span<const key_value> metadata() const { return kv_; }
  bool contains(std::string_view key) const { return key_index_.count(key) != 0; }
  std::optional<gguf::value> find(std::string_view key) const {
    const auto it = key_index_.find(key);
    if (it == key_index_.end()) return std::nullopt;
    return kv_[it->second].value;
  }
  // The value of `key`; a missing key is an error naming it.
  gguf::value get(std::string_view key) const {
    const auto it = key_index_.find(key);
    lutkit::detail::require(it != key_index_.end(), "gguf: ", name_, ": no key '", key, "'");
    return kv_[it->second].value;
  }
  uint8_t get_u8(std::string_view key) const { return get(key).as_u8(); }
  int8_t get_i8(std::string_view key) const { return get(key).as_i8(); }
  uint16_t get_u16(std::string_view key) const { return get(key).as_u16(); }
  int16_t get_i16(std::string_view key) const { return get(key).as_i16(); }
  uint32_t get_u32(std::string_view key) const { return get(key).as_u32(); }
  int32_t get_i32(std::string_view key) const { return get(key).as_i32(); }
  uint64_t get_u64(std::string_view key) const { return get(key).as_u64(); }
  int64_t get_i64(std::string_view key) const { return get(key).as_i64(); }
  float get_f32(std::string_view key) const { return get(key).as_f32(); }
  double get_f64(std::string_view key) const { return get(key).as_f64(); }
  bool get_bool(std::string_view key) const { return get(key).as_bool(); }
  std::string_view get_string(std::string_view key) const { return get(key).as_string(); }
  array_view get_array(std::string_view key) const { return get(key).as_array(); }

  // ---- tensors (in file order)
  std::span<const tensor> tensors() const { return tensors_; }
  const tensor* find_tensor(std::string_view name) const {
    const auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
  }
  const tensor& get_tensor(std::string_view name) const {
    const tensor* t = find_tensor(name);
    lutkit::detail::require(t != nullptr, "gguf: ", name_, ": no tensor '", name, "'");
    return *t;
  }

 private:
  // ---- parsing: a cursor over the bytes; every read is checked against the end of the file
  [[noreturn]] void fail(std::string_view field, uint64_t at, const std::string& problem) const {
    std::ostringstream os;
    os << "gguf: " << name_ << ": ";
    switch (ctx_.kind) {  // what was being read
      case context::header: os << "header "; break;
      case context::kv: os << "key/value " << ctx_.index << " "; break;
      case context::key: os << "key " << quoted(ctx_.name) << " "; break;
      case context::tensor: os << "tensor " << ctx_.index << " "; break;
      case context::tensor_named: os << "tensor " << ctx_.index << " " << quoted(ctx_.name) << " "; break;
      case context::tensor_data: os << "tensor " << quoted(ctx_.name) << " "; break;
      case context::none: break;
    }
    os << field << " at offset " << at << ": " << problem;
    throw lutkit::error(os.str());
  }
  uint64_t left() const { return size_ - pos_; }
  // a name from the file, quoted for a message (long names shortened)
  static std::string quoted(std::string_view s) {
    constexpr std::size_t max = 96;
    return "'" + std::string(s.substr(0, max)) + (s.size() > max ? "...'" : "'");
  }
  void need(uint64_t n, std::string_view field) const {
    if (n > left()) [[unlikely]] {
      std::ostringstream os;
      os << "truncated: needs " << n << " bytes, the file has " << left() << " left";
      fail(field, pos_, os.str());
    }
  }
  template <class T>
  T read(std::string_view field) {
    need(sizeof(T), field);
    const T v = detail::load_le<T>(base_ + pos_);
    pos_ += sizeof(T);
    return v;
  }
  // a GGUF string: uint64 length, then the bytes (no terminator)
  std::string_view read_string(std::string_view field) {
    const uint64_t at = pos_;
    const uint64_t n = read<uint64_t>(field);
    if (n > left()) [[unlikely]] {
      std::ostringstream os;
      os << "string length " << n << " is longer than the " << left() << " bytes left in the file";
      fail(field, at, os.str());
    }
    const std::string_view s(reinterpret_cast<const char*>(base_ + pos_), std::size_t(n));
    pos_ += n;
    return s;
  }
  // the smallest number of bytes one element of type t takes in the file
  static uint64_t min_bytes(value_type t) {
    if (t == value_type::string) return 8;
    if (t == value_type::array) return 12;
    return scalar_bytes(t);
  }
  void check_bools(const uint8_t* p, uint64_t n, uint64_t at, std::string_view field) const {
    for (uint64_t i = 0; i < n; ++i)
      if (p[i] > 1) [[unlikely]] {
        std::ostringstream os;
        os << "bool byte is " << unsigned(p[i]) << ", not 0 or 1";
        fail(field, at + i, os.str());
      }
  }
  // The value of type t at pos_ (its type field already read) into v; arrays recurse, depth
  // counting the arrays around this one.
  void read_value(value& v, value_type t, int depth, std::string_view field) {
    v.type_ = t;
    v.offset_ = pos_;
    v.base_ = base_;
    const uint32_t sb = scalar_bytes(t);
    if (sb != 0) {
      need(sb, field);
      if (t == value_type::boolean) check_bools(base_ + pos_, 1, pos_, field);
      v.data_ = base_ + pos_;
      pos_ += sb;
      return;
    }
    if (t == value_type::string) {
      const std::string_view s = read_string(field);
      v.data_ = reinterpret_cast<const uint8_t*>(s.data());
      v.count_ = s.size();
      return;
    }
    // an array: element type, length, elements
    if (depth + 1 > max_array_depth) [[unlikely]] {
      std::ostringstream os;
      os << "arrays nested deeper than " << max_array_depth << " levels";
      fail(field, pos_, os.str());
    }
    const uint64_t type_at = pos_;
    const uint32_t et = read<uint32_t>(field);
    if (!valid_value_type(et)) [[unlikely]]
      fail(field, type_at, "unknown array element type " + std::to_string(et));
    const uint64_t count_at = pos_;
    const uint64_t n = read<uint64_t>(field);
    const value_type e = value_type(et);
    if (n > left() / min_bytes(e)) [[unlikely]] {
      std::ostringstream os;
      os << "array length " << n << " of " << value_type_name(e) << " elements runs past the end of the file ("
         << left() << " bytes left)";
      fail(field, count_at, os.str());
    }
    v.elem_ = e;
    v.count_ = n;
    v.data_ = base_ + pos_;
    if (const uint32_t esb = scalar_bytes(e); esb != 0) {
      if (e == value_type::boolean) check_bools(base_ + pos_, n, pos_, field);
      pos_ += n * esb;
      return;
    }
    // strings or arrays: one table entry per element, reserved up front (n is bounded by the file)
    const std::size_t first = table_.size();
    v.first_ = first;
    table_.resize(first + std::size_t(n));
    for (uint64_t i = 0; i < n; ++i) {
      table_[first + i].offset = pos_;
      if (e == value_type::string) {
        read_string(field);
      } else {
        value child;
        read_value(child, value_type::array, depth + 1, field);
        table_[first + i].first = child.first_;
      }
    }
  }

  void parse() {
    base_ = bytes_.data();
    size_ = bytes_.size();
    pos_ = 0;
    ctx_ = {context::header};
    // header: magic, version, tensor count, key/value count
    const uint32_t m = read<uint32_t>("magic");
    if (m != magic) {
      std::ostringstream os;
      os << "not a GGUF file (magic 0x" << std::hex << m << ", expected 0x" << magic << " \"GGUF\")";
      fail("magic", 0, os.str());
    }
    version_ = read<uint32_t>("version");
    if (version_ != 2 && version_ != 3) {
      const uint32_t swapped = ((version_ & 0xFFu) << 24) | ((version_ & 0xFF00u) << 8) |
                               ((version_ >> 8) & 0xFF00u) | (version_ >> 24);
      if (swapped >= 1 && swapped <= 3)
        fail("version", 4, "a big-endian GGUF file (version " + std::to_string(swapped) +
                               " byte-swapped); only little-endian files are read");
      fail("version", 4, "version " + std::to_string(version_) + " is not supported (2 and 3 are)");
    }
    const uint64_t n_tensors = read<uint64_t>("n_tensors");
    const uint64_t n_kv = read<uint64_t>("n_kv");
    // each tensor info takes at least 24 bytes (empty name, n_dims, type, offset), each key/value
    // pair at least 13 (empty key, type, a one-byte value)
    if (n_tensors > left() / 24) {
      std::ostringstream os;
      os << "n_tensors = " << n_tensors << " tensor infos cannot fit in the " << left() << " bytes after the header";
      fail("n_tensors", 8, os.str());
    }
    if (n_kv > (left() - n_tensors * 24) / 13) {
      std::ostringstream os;
      os << "n_kv = " << n_kv << " key/value pairs cannot fit in the " << left() << " bytes after the header";
      fail("n_kv", 16, os.str());
    }

    // metadata
    // (the counts are bounded by the file; reserving more than a typical file holds is left to
    // growth as entries are actually read)
    kv_.reserve(std::size_t(std::min<uint64_t>(n_kv, 256)));
    key_index_.reserve(std::size_t(std::min<uint64_t>(n_kv, 256)));
    for (uint64_t i = 0; i < n_kv; ++i) {
      key_value e;
      e.offset = pos_;
      ctx_ = {context::kv, i};
      e.key = read_string("key");
      if (e.key.empty()) fail("key", e.offset, "the key is empty");
      ctx_ = {context::key, i, e.key};
      if (const auto it = key_index_.find(e.key); it != key_index_.end())
        fail("key", e.offset, "duplicate key (first at offset " + std::to_string(kv_[it->second].offset) + ")");
      const uint64_t type_at = pos_;
      const uint32_t t = read<uint32_t>("value type");
      if (!valid_value_type(t)) fail("value type", type_at, "unknown value type " + std::to_string(t));
      read_value(e.value, value_type(t), 0, "value");
      e.value.key_ = e.key;
      key_index_.emplace(e.key, kv_.size());
      kv_.push_back(e);
    }
    // every value's table pointer, now that the table has its final size
    for (auto& e : kv_) e.value.table_ = table_.data();

    // general.alignment: a u32, a power of two
    ctx_ = {};
    alignment_ = default_alignment;
    if (const auto it = key_index_.find("general.alignment"); it != key_index_.end()) {
      const value& a = kv_[it->second].value;
      if (a.type() != value_type::u32)
        fail("general.alignment", a.offset(),
             "the alignment is a " + std::string(value_type_name(a.type())) + ", not a u32");
      const uint32_t al = a.as_u32();
      if (al == 0 || (al & (al - 1)) != 0)
        fail("general.alignment", a.offset(), "alignment " + std::to_string(al) + " is not a power of two");
      alignment_ = al;
    }

    // tensor infos
    if (n_tensors > left() / 24) {
      std::ostringstream os;
      os << "n_tensors = " << n_tensors << " tensor infos cannot fit in the " << left()
         << " bytes after the metadata";
      ctx_ = {context::header};
      fail("n_tensors", 8, os.str());
    }
    tensors_.reserve(std::size_t(std::min<uint64_t>(n_tensors, 4096)));
    tensor_index_.reserve(std::size_t(std::min<uint64_t>(n_tensors, 4096)));
    for (uint64_t i = 0; i < n_tensors; ++i) read_tensor_info(i);

    // the data section starts at the next multiple of the alignment
    ctx_ = {};
    data_offset_ = (pos_ + alignment_ - 1) / alignment_ * alignment_;
    if (n_tensors > 0 && data_offset_ > size_) {
      std::ostringstream os;
      os << "truncated: the data section starts at " << data_offset_ << ", past the end of the file (" << size_
         << " bytes)";
      fail("data section", pos_, os.str());
    }
    const uint64_t data_bytes = n_tensors > 0 ? size_ - data_offset_ : 0;
    for (auto& t : tensors_) {
      ctx_ = {context::tensor_data, 0, t.name};
      if (t.offset > data_bytes || t.n_bytes > data_bytes - t.offset) {
        std::ostringstream os;
        os << "data [" << t.offset << ", " << t.offset << " + " << t.n_bytes
           << ") of the data section runs past the end of the file (the data section holds " << data_bytes
           << " bytes)";
        fail("offset", t.info_offset, os.str());
      }
      t.file_offset = data_offset_ + t.offset;
      t.data = base_ + t.file_offset;
    }
    // no two tensors share a byte
    std::vector<std::size_t> order(tensors_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return tensors_[a].offset != tensors_[b].offset ? tensors_[a].offset < tensors_[b].offset : a < b;
    });
    const tensor* prev = nullptr;
    for (const std::size_t i : order) {
      const tensor& t = tensors_[i];
      if (t.n_bytes == 0) continue;
      if (prev && prev->offset + prev->n_bytes > t.offset) {
        ctx_ = {context::tensor_data, 0, t.name};
        std::ostringstream os;
        os << "data [" << t.offset << ", " << t.offset + t.n_bytes << ") overlaps tensor " << quoted(prev->name) << " ["
           << prev->offset << ", " << prev->offset + prev->n_bytes << ")";
        fail("offset", t.info_offset, os.str());
      }
      prev = &t;
    }
    ctx_ = {};
  }

  void read_tensor_info(uint64_t i) {
    tensor t{};
    t.info_offset = pos_;
    ctx_ = {context::tensor, i};
    t.name = read_string("name");
    ctx_ = {context::tensor_named, i, t.name};
    if (const auto it = tensor_index_.find(t.name); it != tensor_index_.end())
      fail("name", t.info_offset,
           "duplicate tensor name (first at offset " + std::to_string(tensors_[it->second].info_offset) + ")");
    const uint64_t dims_at = pos_;
    t.n_dims = read<uint32_t>("n_dims");
    if (t.n_dims > max_dims)
      fail("n_dims", dims_at, std::to_string(t.n_dims) + " dimensions (at most " + std::to_string(max_dims) + ")");
    t.ne = {1, 1, 1, 1};
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      const std::string field = "ne[" + std::to_string(d) + "]";
      const uint64_t at = pos_;
      t.ne[d] = read<uint64_t>(field);
      if (t.ne[d] > uint64_t(INT64_MAX))
        fail(field, at, "dimension " + std::to_string(t.ne[d]) + " exceeds 2^63 - 1");
    }
    // the element count must fit int64 (llama.cpp's) and so uint64
    uint64_t n = 1;
    bool zero = false;
    for (uint32_t d = 0; d < max_dims; ++d) zero = zero || t.ne[d] == 0;
    if (!zero)
      for (uint32_t d = 0; d < max_dims; ++d)
        if (__builtin_mul_overflow(n, t.ne[d], &n) || n > uint64_t(INT64_MAX)) {
          std::ostringstream os;
          os << "the element count " << t.ne[0] << " x " << t.ne[1] << " x " << t.ne[2] << " x " << t.ne[3]
             << " overflows 2^63 - 1";
          fail("ne", dims_at + 4, os.str());
        }
    const uint64_t type_at = pos_;
    const uint32_t type_id = read<uint32_t>("type");
    const auto ti = ggml_type_by_id(type_id);
    if (!ti) fail("type", type_at, "unknown or retired ggml type id " + std::to_string(type_id));
    t.type = ti->type;
    if (t.ne[0] % ti->block_elems != 0) {
      std::ostringstream os;
      os << "a row of ne[0] = " << t.ne[0] << " elements is not a multiple of the " << ti->name << " block ("
         << ti->block_elems << " elements)";
      fail("ne[0]", dims_at + 4, os.str());
    }
    // bytes = blocks per row x block bytes x rows (each step checked)
    uint64_t bytes = t.ne[0] / ti->block_elems;
    bool over = __builtin_mul_overflow(bytes, uint64_t(ti->block_bytes), &bytes);
    for (uint32_t d = 1; d < max_dims && !over; ++d) over = __builtin_mul_overflow(bytes, t.ne[d], &bytes);
    if (over) {
      std::ostringstream os;
      os << "the byte size of " << t.ne[0] << " x " << t.ne[1] << " x " << t.ne[2] << " x " << t.ne[3] << " "
         << ti->name << " elements overflows 64 bits";
      fail("ne", dims_at + 4, os.str());
    }
    t.n_bytes = bytes;
    const uint64_t offset_at = pos_;
    t.offset = read<uint64_t>("offset");
    if (t.offset % alignment_ != 0) {
      std::ostringstream os;
      os << "data offset " << t.offset << " is not a multiple of the alignment (" << alignment_ << ")";
      fail("offset", offset_at, os.str());
    }
    tensor_index_.emplace(t.name, tensors_.size());
    tensors_.push_back(t);
  }

  detail::gguf_bytes bytes_;
  std::string name_;
  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  uint64_t pos_ = 0;
  // parsing: what is being read, for messages (formatted only when one is thrown)
  struct context {
    enum kind_t { none, header, kv, key, tensor, tensor_named, tensor_data } kind = none;
    uint64_t index = 0;
    std::string_view name = {};
  };
  context ctx_;
  uint32_t version_ = 0;
  uint64_t alignment_ = default_alignment;
  uint64_t data_offset_ = 0;
  std::vector<key_value> kv_;
  std::vector<detail::gguf_element> table_;
  std::vector<tensor> tensors_;
  std::unordered_map<std::string_view, std::size_t> key_index_;
  std::unordered_map<std::string_view, std::size_t> tensor_index_;
};

}  // namespace lutkit::gguf
