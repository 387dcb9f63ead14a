// lutkit — packing through the tiling spec. A packed blob = 64-byte header (magic, layout
// version, policy hash and name, shape) + the packed tiles. Every kernel validates the header
// against its own policy and the shapes it is given.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../core/half.hpp"
#include "../core/memory.hpp"
#include "../core/policy.hpp"
#include "../core/thread_pool.hpp"
#include "../core/tiling.hpp"
#include "../targets/cpu/pack_avx512.hpp"
#include "quant.hpp"

namespace lutkit {

struct blob_header {
  char magic[8];            // "LUTKIT1\0"
  uint32_t version;         // layout_version
  uint32_t header_bytes;    // sizeof(blob_header)
  uint64_t policy_hash;
  uint64_t M, K;
  uint64_t data_bytes;
  char policy_name[80];
};
static_assert(sizeof(blob_header) % 64 == 0, "blob header keeps the data 64-byte aligned");


// Owns the bytes of a packed weight matrix for policy P (64-byte aligned).
namespace detail {
// packed_weights' constructor tag for a packer that writes or clears every data byte itself
// (tile by tile on its own threads, which also spreads the first touch of the pages)
struct data_uninitialized_t {};
}  // namespace detail

template <class P>
class packed_weights {
 public:
  packed_weights() = default;
  // An all-zero blob of M x K (every code 0, every scale and zero 0) with its header.
  packed_weights(std::size_t M, std::size_t K) : packed_weights(M, K, detail::data_uninitialized_t{}) {
    std::memset(data(), 0, layout_.total_bytes);
  }
  packed_weights(std::size_t M, std::size_t K, detail::data_uninitialized_t) : layout_(P::spec, M, K) {
    size_ = sizeof(blob_header) + layout_.total_bytes;
    bytes_ = detail::alloc_aligned(size_);
    blob_header h{};
    std::memcpy(h.magic, "LUTKIT1", 8);
    h.version = layout_version;
    h.header_bytes = sizeof(blob_header);
    h.policy_hash = P::hash();
    h.M = M;
    h.K = K;
    h.data_bytes = layout_.total_bytes;
    const std::string name = P::name();
    std::strncpy(h.policy_name, name.c_str(), sizeof(h.policy_name) - 1);
    std::memcpy(bytes_.get(), &h, sizeof h);
  }
  // Adopt serialized bytes (e.g. read from a file): validated against P before anything runs.
  static packed_weights from_bytes(const void* src, std::size_t n) {
    detail::require(src != nullptr, "packed blob: null pointer");
    detail::require(n >= sizeof(blob_header), "packed blob: too short for a header");
    blob_header h;
    std::memcpy(&h, src, sizeof h);
    check_header(h, n);
    packed_weights w(std::size_t(h.M), std::size_t(h.K), detail::data_uninitialized_t{});
    std::memcpy(w.bytes_.get(), src, n);  // n covers the header and every data byte
    w.check_contents();
    return w;
  }

  const blob_header& header() const { return *reinterpret_cast<const blob_header*>(bytes_.get()); }
  const packed_layout& layout() const { return layout_; }
  std::size_t M() const { return layout_.M; }
  std::size_t K() const { return layout_.K; }
  const uint8_t* data() const { return bytes_.get() + sizeof(blob_header); }
  uint8_t* data() { return bytes_.get() + sizeof(blob_header); }
  const uint8_t* bytes() const { return bytes_.get(); }
  uint8_t* bytes() { return bytes_.get(); }
  std::size_t size_bytes() const { return size_; }
  bool empty() const { return !bytes_; }

  // Called by every kernel: the header must name P and this shape, the data must be intact.
  void validate() const {
    detail::require(bytes_ != nullptr, "packed blob is empty");
    check_header(header(), size_);
    detail::require(header().M == layout_.M && header().K == layout_.K,
                    "packed blob header shape disagrees with its layout");
  }

 private:
  static void check_header(const blob_header& h, std::size_t n) {
    detail::require(std::memcmp(h.magic, "LUTKIT1", 8) == 0, "packed blob: bad magic (not a lutkit blob)");
    detail::require(h.version == layout_version, "packed blob: layout version ", h.version, ", expected ", layout_version);
    if (h.policy_hash != P::hash()) {
      std::string other(h.policy_name, strnlen(h.policy_name, sizeof h.policy_name));
      throw error("packed blob was packed for policy '" + other + "' but is used with policy '" +
                  P::name() + "'");
    }
    detail::require(h.header_bytes == sizeof(blob_header), "packed blob: header field header_bytes is ",
                    h.header_bytes, ", expected ", sizeof(blob_header));
    detail::require(h.M > 0 && h.K > 0, "packed blob: empty shape (header fields M = ", h.M, ", K = ", h.K, ")");
    detail::require(h.M <= max_dim, "packed blob: header field M = ", h.M, " exceeds the largest dimension (2^31)");
    detail::require(h.K <= max_dim, "packed blob: header field K = ", h.K, " exceeds the largest dimension (2^31)");
    detail::require(P::spec.group_k == 0 || h.K % std::uint64_t(P::spec.group_k) == 0, "packed blob: header field K = ",
                    h.K, " is not a multiple of the policy's group size ", P::spec.group_k);
    const packed_layout l(P::spec, std::size_t(h.M), std::size_t(h.K));  // checks M x K <= max_elements
    detail::require(h.data_bytes == l.total_bytes, "packed blob: header field data_bytes = ", h.data_bytes,
                    " disagrees with the ", h.M, " x ", h.K, " shape, which packs to ", l.total_bytes, " bytes");
    detail::require(n == sizeof(blob_header) + l.total_bytes, "packed blob: size is ", n, " bytes, but its header (",
                    h.M, " x ", h.K, ") needs ", sizeof(blob_header) + l.total_bytes, " (truncated or corrupted)");
  }

  // What the header cannot vouch for: every scale and zero slot (padded rows included) holds a
  // finite value whose largest weight, |scale| x (max |level| + |zero|), is a finite float; every
  // ternary index is one the packer writes (0..13). Otherwise the kernels would return NaN, or
  // a value no reference gives, instead of an error.
  void check_contents() const {
    using FT = format_traits<typename P::format>;
    constexpr auto& S = P::spec;
    float max_level = 0;
    for (int c = 0; c <= FT::max_code; ++c) max_level = std::max(max_level, std::fabs(float(FT::level(c))));
    const uint8_t* d = data();
    for (std::size_t t = 0; t < layout_.tiles; ++t)
      for (std::size_t g = 0; g < layout_.groups; ++g)
        for (int r = 0; r < S.rows_per_tile; ++r) {
          uint16_t sb, zb = 0;
          std::memcpy(&sb, d + layout_.scale_offset(t, g) + 2 * std::size_t(r), 2);
          if (S.asymmetric) std::memcpy(&zb, d + layout_.zero_offset(t, g) + 2 * std::size_t(r), 2);
          const float s = decode_param(S, sb), z = S.asymmetric ? decode_param(S, zb) : S.sym_zero;
          const std::size_t row = t * std::size_t(S.rows_per_tile) + std::size_t(r);
          detail::require(std::isfinite(s) && std::isfinite(z), "packed blob: ", std::isfinite(s) ? "zero" : "scale",
                          " of row ", row, ", group ", g, " is not finite");
          detail::require(std::isfinite(std::fabs(s) * (max_level + std::fabs(z))), "packed blob: scale ", s,
                          " and zero ", z, " of row ", row, ", group ", g, " overflow float weights");
        }
    if constexpr (S.ternary)
      for (std::size_t t = 0; t < layout_.tiles; ++t)
        for (std::size_t sp = 0; sp < layout_.step_pairs(); ++sp) {
          const uint8_t* c = d + layout_.lone_chunk_offset(t, sp);
          for (int i = 0; i < S.chunk_bytes; ++i)
            detail::require((c[i] & 15) <= 13 && (c[i] >> 4) <= 13, "packed blob: ternary index byte ", i,
                            " of tile ", t, ", step pair ", sp, " is not a valid mirrored index (0..13)");
        }
  }

  packed_layout layout_{};
  std::size_t size_ = 0;
  detail::aligned_bytes bytes_;
};

namespace detail {
// Ternary: triple (t0,t1,t2) -> mirrored 4-bit index and sign (T-MAC TL2-style)
inline void ternary_encode(int c0, int c1, int c2, int& index, int& sign) {
  const int v = 9 * c0 + 3 * c1 + c2;  // codes are t + 1 in {0,1,2}
  if (v <= 13) {
    index = v;
    sign = 0;
  } else {
    index = 26 - v;
    sign = 1;
  }
}
inline void ternary_decode(int index, int sign, int& c0, int& c1, int& c2) {
  const int v = sign ? 26 - index : index;
  c0 = v / 9;
  c1 = (v / 3) % 3;
  c2 = v % 3;
}
}  // namespace detail

namespace detail {
// The packer by the element map alone, one weight bit at a time (index_location for every
// (row, k, plane)): the specification the fast packer below is tested against.
template <class P>
packed_weights<P> pack_by_element_map(const quantized<P>& q) {
  detail::require(q.M > 0 && q.K > 0 && q.codes.size() == q.M * q.K, "pack: quantized tensor is empty or inconsistent");
  packed_weights<P> out(q.M, q.K);
  const packed_layout& L = out.layout();
  uint8_t* d = out.data();
  constexpr auto& S = P::spec;
  // scales and zeros (padded rows keep scale 0, zero 0)
  for (std::size_t m = 0; m < q.M; ++m)
    for (std::size_t g = 0; g < L.groups; ++g) {
      const std::size_t t = m / S.rows_per_tile, r = m % S.rows_per_tile;
      const uint16_t s = encode_param(S, q.scale(m, g));
      std::memcpy(d + L.scale_offset(t, g) + 2 * r, &s, 2);
      if (S.asymmetric) {
        const uint16_t z = encode_param(S, q.zero(m, g));
        std::memcpy(d + L.zero_offset(t, g) + 2 * r, &z, 2);
      }
    }
  if constexpr (S.ternary) {
    // padded weights (k >= K) are t = 0, i.e. code 1
    for (std::size_t m = 0; m < q.M; ++m)
      for (std::size_t st = 0; st < L.steps(); ++st) {
        int c[3];
        for (int i = 0; i < 3; ++i) {
          const std::size_t k = st * 3 + i;
          c[i] = k < q.K ? q.codes[m * q.K + k] : 1;
        }
        int index, sign;
        detail::ternary_encode(c[0], c[1], c[2], index, sign);
        const auto li = L.index_location(m, st * 3, 0);
        d[li.byte] |= uint8_t(index << li.shift);
        const auto ls = L.ternary_sign_location(m, st);
        d[ls.byte] |= uint8_t(sign << ls.shift);
      }
    // padded rows: all-zero triples encode as index 13, sign 0
    for (std::size_t m = q.M; m < L.M_pad; ++m)
      for (std::size_t st = 0; st < L.steps(); ++st) {
        const auto li = L.index_location(m, st * 3, 0);
        d[li.byte] |= uint8_t(13 << li.shift);
      }
  } else {
    for (std::size_t m = 0; m < q.M; ++m)
      for (std::size_t k = 0; k < q.K; ++k) {
        const unsigned code = q.codes[m * q.K + k];
        for (int b = 0; b < S.planes; ++b) {
          const auto loc = L.index_location(m, k, b);
          d[loc.byte] |= uint8_t(((code >> b) & 1u) << loc.shift);
        }
      }
  }
  return out;
}
}  // namespace detail

namespace detail {
// Ternary tiles: per row and step the triple's mirrored index and sign (ternary_encode) where the
// element map puts them; padded rows and the padded K hold all-zero triples (index 13, sign 0).
template <class P>
void pack_ternary_tiles(const quantized<P>& q, uint8_t* d, const packed_layout& L, std::size_t t0, std::size_t t1) {
  constexpr auto& S = P::spec;
  constexpr int R = S.rows_per_tile, per = S.step_pairs_per_block();
  const std::size_t K = q.K, steps = L.steps();
  for (std::size_t t = t0; t < t1; ++t)
    for (int r = 0; r < R; ++r) {
      const std::size_t m = t * std::size_t(R) + std::size_t(r);
      const bool real = m < q.M;
      if (real)
        for (std::size_t g = 0; g < L.groups; ++g) {
          const uint16_t sc = encode_param(S, q.scale(m, g));
          std::memcpy(d + L.scale_offset(t, g) + 2 * std::size_t(r), &sc, 2);
        }
      const int ioff[2] = {S.index_byte_in_step_pair(r, 0, 0), S.index_byte_in_step_pair(r, 0, 1)};
      const int ish[2] = {S.index_shift(r, 0), S.index_shift(r, 1)};
      int sbit[per][2];
      for (int spi = 0; spi < per; ++spi)
        for (int s2 = 0; s2 < 2; ++s2) sbit[spi][s2] = S.sign_bit_in_block(r, spi, s2);
      const uint8_t* c = real ? q.codes.data() + m * K : nullptr;
      for (std::size_t st = 0; st < steps; ++st) {
        int cc[3];
        for (int i = 0; i < 3; ++i) {
          const std::size_t k = st * 3 + std::size_t(i);
          cc[i] = real && k < K ? c[k] : 1;
        }
        int index, sign;
        ternary_encode(cc[0], cc[1], cc[2], index, sign);
        const std::size_t sp = st / 2;
        const int spi = int(sp % std::size_t(per)), s2 = int(st & 1);
        uint8_t* blk = d + L.block_offset(t, sp / std::size_t(per));
        blk[std::size_t(spi) * std::size_t(S.step_pair_bytes()) + std::size_t(ioff[s2])] |= uint8_t(index << ish[s2]);
        if (sign) blk[sbit[spi][s2] / 8] |= uint8_t(1u << (sbit[spi][s2] % 8));
      }
    }
}

// bit p of each of the 8 codes in x (byte i: the code of k0 + i) -> one byte, bit i from code i:
// the plane-p indices of two consecutive steps (low nibble: the first). The multiply moves bit 8i
// to bit 56 + i; no two partial products share a bit, so nothing carries.
inline unsigned plane_byte(uint64_t x, int p) {
  return unsigned((((x >> p) & 0x0101010101010101ull) * 0x0102040810204080ull) >> 56);
}
// 8 codes of a row from k0 (zeros beyond K)
inline uint64_t load_codes8(const uint8_t* c, std::size_t k0, std::size_t K) {
  uint64_t x = 0;
  if (k0 + 8 <= K) {
    std::memcpy(&x, c + k0, 8);
  } else {
    for (std::size_t i = 0; k0 + i < K; ++i) x |= uint64_t(c[k0 + i]) << (8 * i);
  }
  return x;
}
// The host layouts' byte sharing: rows r and r + 32 of a 64-row tile hold the low and high
// nibble of the same bytes, for every plane and step (then the packer writes whole bytes)
template <class P>
constexpr bool rows_share_bytes_by_nibble() {
  constexpr auto& S = P::spec;
  if (S.plane_chunks() || S.rows_per_tile != 64) return false;
  for (int r = 0; r < 32; ++r)
    for (int p = 0; p < S.planes; ++p)
      for (int s = 0; s < 2; ++s)
        if (S.index_byte_in_step_pair(r, p, s) != S.index_byte_in_step_pair(r + 32, p, s) || S.index_shift(r, s) != 0 ||
            S.index_shift(r + 32, s) != 4)
          return false;
  return true;
}

// The planes of a row pair's 64 codes: p0, p1 the codes of rows r and r + 32 at k0 .. k0 + 63
// in form F (quant.hpp, code_form; p1 null: a padded row, all zero); out[s][8 j + p] is plane p
// of step 2 j + s (plane_byte's nibble s), row r in the low nibble, row r + 32 in the high one.
// AVX-512 + GFNI where the CPU has it (targets/cpu/pack_avx512.hpp), else one plane_byte per
// plane and step pair; the same bytes.
template <code_form F>
void row_pair_planes_scalar(const uint8_t* p0, const uint8_t* p1, std::size_t stride, uint8_t (*out)[64]) {
  auto codes8 = [&](const uint8_t* p, int j) -> uint64_t {
    if (p == nullptr) return 0;
    if constexpr (F == code_form::bytes) return load_codes8(p, std::size_t(8 * j), std::size_t(64));
    else if constexpr (F == code_form::ggml_nibbles) return ggml_q4_0::codes8(p + (j / 4) * stride, unsigned(8 * j % 32));
    else return ggml_q8_0::codes8(p + (j / 4) * stride, unsigned(8 * j % 32));
  };
  for (int j = 0; j < 8; ++j) {
    const uint64_t x0 = codes8(p0, j), x1 = codes8(p1, j);
    for (int p = 0; p < 8; ++p) {
      const unsigned b0 = plane_byte(x0, p), b1 = plane_byte(x1, p);
      out[0][8 * j + p] = uint8_t((b0 & 0x0Fu) | ((b1 << 4) & 0xF0u));
      out[1][8 * j + p] = uint8_t((b0 >> 4) | (b1 & 0xF0u));
    }
  }
}
template <code_form F>
void row_pair_planes(const uint8_t* p0, const uint8_t* p1, std::size_t stride, uint8_t (*out)[64]) {
#if defined(LUTKIT_HAVE_PACK_AVX512)
  if (avx512::cpu_has_pack_kernel()) return avx512::row_pair_planes<F>(p0, p1, stride, out);
#endif
  row_pair_planes_scalar<F>(p0, p1, stride, out);
}

// What the bit-plane packer reads, a code source: M(), K(), scale_bits(m, g), zero_bits(m, g) (the
// blob's parameter slots, encode_param), and row(m),
// a cursor whose codes8(k0) holds the 8 codes of k0 .. k0 + 7 (byte i: k0 + i; zeros beyond K).
// Two sources: a quantized<P> (per-weight codes) and a llama.cpp block tensor, read in place.
template <class P>
struct quantized_source {
  const quantized<P>& q;
  struct row_cursor {
    const uint8_t* c;
    std::size_t K;
    uint64_t codes8(std::size_t k0) const { return load_codes8(c, k0, K); }
    static constexpr code_form form = code_form::bytes;
    static constexpr std::size_t stride = 0;
    // the 64 codes from k0 in `form` when all are inside the row, else codes64
    bool whole64(std::size_t k0) const { return k0 + 64 <= K; }
    const uint8_t* at(std::size_t k0) const { return c + k0; }
    // 64 codes from k0 (zeros beyond K)
    void codes64(std::size_t k0, uint8_t* out) const {
      if (k0 + 64 <= K) {
        std::memcpy(out, c + k0, 64);
      } else {
        for (std::size_t j = 0; j < 8; ++j) {
          const uint64_t x = codes8(k0 + 8 * j);
          std::memcpy(out + 8 * j, &x, 8);
        }
      }
    }
  };
  std::size_t M() const { return q.M; }
  std::size_t K() const { return q.K; }
  uint16_t scale_bits(std::size_t m, std::size_t g) const { return encode_param(P::spec, q.scale(m, g)); }
  uint16_t zero_bits(std::size_t m, std::size_t g) const { return encode_param(P::spec, q.zero(m, g)); }
  row_cursor row(std::size_t m) const { return {q.codes.data() + m * q.K, q.K}; }
};
template <class P, class Block>
struct ggml_source {
  // (check_ggml_tensor has refused any policy but the block's format with group<32>)
  const char* what;
  const unsigned char* blocks;
  std::size_t M_, K_;
  struct row_cursor {
    const unsigned char* b;  // the row's first block
    std::size_t K;
    uint64_t codes8(std::size_t k0) const {
      return Block::codes8(b + (k0 / 32) * Block::block_bytes + 2, unsigned(k0 % 32));
    }
    static constexpr code_form form = Block::form;
    static constexpr std::size_t stride = Block::block_bytes;
    bool whole64(std::size_t k0) const { return k0 + 64 <= K; }
    const uint8_t* at(std::size_t k0) const { return b + (k0 / 32) * Block::block_bytes + 2; }
    // 64 codes from k0 (a multiple of 64; K is a multiple of 32: a row may end half way)
    void codes64(std::size_t k0, uint8_t* out) const {
      const unsigned char* blk = b + (k0 / 32) * Block::block_bytes + 2;
      Block::codes32(blk, out);
      if (k0 + 64 <= K) Block::codes32(blk + Block::block_bytes, out + 32);
      else std::memset(out + 32, 0, 32);
    }
  };
  std::size_t M() const { return M_; }
  std::size_t K() const { return K_; }
  // the block's fp16 d, checked finite, as the blob's fp16 slot holds it (the same bits)
  uint16_t scale_bits(std::size_t m, std::size_t g) const {
    const std::size_t i = m * (K_ / 32) + g;
    const unsigned char* b = blocks + i * Block::block_bytes;
    const uint16_t h = uint16_t(b[0] | (unsigned(b[1]) << 8));
    if ((h & 0x7C00u) == 0x7C00u) ggml_block_scale(what, b, i, K_);  // throws: not finite
    if constexpr (P::spec.bf16_params) return encode_param(P::spec, f16_to_f32(h));
    else return h;
  }
  uint16_t zero_bits(std::size_t, std::size_t) const { return encode_param(P::spec, P::spec.sym_zero); }
  row_cursor row(std::size_t m) const { return {blocks + m * (K_ / 32) * Block::block_bytes, K_}; }
};

// Planes 2 q and 2 q + 1 of a row's step sit in adjacent bytes (pshufb order's paired chunks):
// the packer stores them as one 16-bit word
template <class P>
constexpr bool planes_side_by_side() {
  constexpr auto& S = P::spec;
  for (int r = 0; r < S.rows_per_tile; ++r)
    for (int p = 0; p + 1 < S.planes; p += 2)
      for (int s = 0; s < 2; ++s)
        if (S.index_byte_in_step_pair(r, p + 1, s) != S.index_byte_in_step_pair(r, p, s) + 1) return false;
  return true;
}

// The layouts whose walk below stores every byte of a tile's blocks whole (no or-ing into
// zeros): the plane orders and the host layouts' row pairs
template <class P>
constexpr bool pack_writes_whole_bytes() {
  return !P::spec.ternary && (P::spec.plane_chunks() || rows_share_bytes_by_nibble<P>());
}

// Tiles [t0, t1) of a bit-plane format: the parameters, then per row (or row pair) a sequential
// walk of its codes, a step pair (8 codes) at a time, each plane's two step indices made at once
// (plane_byte) and stored where tiling_spec::index_byte_in_step_pair puts them (offsets computed
// once per row):
//   plane orders (sve, vlut16): a row's byte of a plane holds both steps: one store;
//   host layouts: rows r and r + 32 walked together, each byte stored whole (low nibble row r);
//   any other layout: each step's index or-ed into its byte.
// A tile is one thread's: the rows sharing a byte are in it. (One code at a time per plane, the
// earlier walk, took 1.6-2x the time of this one; docs/llama_formats.md, "Load".)
template <class P, class Src>
void pack_tiles(const Src& src, uint8_t* d, const packed_layout& L, std::size_t t0, std::size_t t1) {
  constexpr auto& S = P::spec;
  constexpr int R = S.rows_per_tile, PL = S.planes;
  static_assert(!S.ternary && S.k_per_step == 4, "pack_tiles: bit-plane formats");
  const std::size_t M = src.M(), K = src.K();
  const std::size_t per = std::size_t(S.step_pairs_per_block()), pair_bytes = std::size_t(S.step_pair_bytes());
  const std::size_t pairs = (K + 7) / 8;
  // The tile is walked in k chunks of `chunk` step pairs (at most 16 KiB of output, which stays
  // in L1 while every row of the tile writes into it), all rows per chunk.
  const std::size_t chunk = std::max<std::size_t>(per, std::size_t(16384) / pair_bytes / per * per);
  // walks the step pairs [sp0, sp1) of tile t (sp0 a multiple of per): f(the step pair's first
  // byte, its first k)
  // the first byte of each block of the chunk being walked (block_offset divides: once per
  // chunk, not per row)
  std::vector<uint8_t*> chunk_blocks(chunk / per + 1);
  auto walk = [&](std::size_t, std::size_t sp0, std::size_t sp1, auto&& f) {
    std::size_t blk = 0, spi = 0;
    uint8_t* pair = chunk_blocks[0];
    for (std::size_t sp = sp0; sp < sp1; ++sp) {
      f(pair, 8 * sp);
      if (++spi == per) {
        spi = 0;
        pair = chunk_blocks[++blk];
      } else {
        pair += pair_bytes;
      }
    }
  };
  auto row_offsets = [&](int r, int (&off)[PL][2]) {
    for (int p = 0; p < PL; ++p)
      for (int s = 0; s < 2; ++s) off[p][s] = S.index_byte_in_step_pair(r, p, s);
  };
  // row r of tile t (row m of the tensor): the scale and zero slots of groups [g0, g1)
  auto params = [&](std::size_t t, int r, std::size_t m, std::size_t g0, std::size_t g1) {
    for (std::size_t g = g0; g < g1; ++g) {
      const uint16_t sc = src.scale_bits(m, g);
      std::memcpy(d + L.scale_offset(t, g) + 2 * std::size_t(r), &sc, 2);
      if constexpr (S.asymmetric) {
        const uint16_t z = src.zero_bits(m, g);
        std::memcpy(d + L.zero_offset(t, g) + 2 * std::size_t(r), &z, 2);
      }
    }
  };
  // the groups that begin in [k0, k1)
  const std::size_t gk = std::size_t(S.group_k);
  auto groups_from = [&](std::size_t k0) { return gk ? (k0 + gk - 1) / gk : (k0 == 0 ? 0 : 1); };
  constexpr bool host_walk = !S.plane_chunks() && rows_share_bytes_by_nibble<P>();
  for (std::size_t t = t0; t < t1; ++t) {
    if constexpr (!host_walk)  // (the host walk writes them beside the codes of the same bytes)
      for (int r = 0; r < R; ++r) {
        const std::size_t m = t * std::size_t(R) + std::size_t(r);
        if (m >= M) break;  // padded rows: code 0, scale 0, zero 0 (the cleared tile)
        params(t, r, m, 0, L.groups);
      }
    for (std::size_t sp0 = 0; sp0 < pairs; sp0 += chunk) {
    const std::size_t sp1 = std::min(pairs, sp0 + chunk);
    for (std::size_t b = 0; b < chunk_blocks.size(); ++b)
      chunk_blocks[b] = sp0 / per + b < L.blocks() ? d + L.block_offset(t, sp0 / per + b) : nullptr;
    if constexpr (S.plane_chunks()) {
      static_assert(S.index_shift(0, 0) == 0 && S.index_shift(0, 1) == 4, "plane orders: a byte holds a row's step pair");
      for (int r = 0; r < R; ++r) {
        const std::size_t m = t * std::size_t(R) + std::size_t(r);
        if (m >= M) break;
        int off[PL][2];
        row_offsets(r, off);
        const auto c = src.row(m);
        walk(t, sp0, sp1, [&](uint8_t* pair, std::size_t k0) {
          const uint64_t x = c.codes8(k0);
          for (int p = 0; p < PL; ++p) pair[off[p][0]] = uint8_t(plane_byte(x, p));
        });
      }
    } else if constexpr (rows_share_bytes_by_nibble<P>()) {
      // 8 step pairs of a row pair at a time: their 64 codes per row, the planes of both steps
      // (row_pair_planes), then the bytes stored, two planes at once where the spec puts them
      // side by side (pshufb order's paired chunks)
      alignas(64) uint8_t c0[64], c1[64], planes[2][64];
      for (int r = 0; r < 32; ++r) {
        const std::size_t m0 = t * 64 + std::size_t(r), m1 = m0 + 32;
        if (m0 >= M) break;
        int off[PL][2];
        row_offsets(r, off);
        const auto r0 = src.row(m0);
        const bool second = m1 < M;
        const auto r1 = src.row(second ? m1 : m0);
        std::size_t blk = 0, spi = 0;
        uint8_t* pair = chunk_blocks[0];
        for (std::size_t sp8 = sp0; sp8 < sp1; sp8 += 8) {
          const std::size_t n8 = std::min<std::size_t>(8, sp1 - sp8);
          const std::size_t k0 = 8 * sp8;
          const std::size_t g0 = groups_from(k0), g1 = std::min(L.groups, groups_from(k0 + 64));
          params(t, r, m0, g0, g1);
          if (second) params(t, r + 32, m1, g0, g1);
          using cursor = decltype(r0);
          if (r0.whole64(k0)) {
            row_pair_planes<cursor::form>(r0.at(k0), second ? r1.at(k0) : nullptr, cursor::stride, planes);
          } else {
            r0.codes64(k0, c0);
            if (second) r1.codes64(k0, c1);
            row_pair_planes<code_form::bytes>(c0, second ? c1 : nullptr, 0, planes);
          }
          for (std::size_t j = 0; j < n8; ++j) {
            const uint8_t* b = planes[0] + 8 * j;
            for (int s2 = 0; s2 < 2; ++s2, b += 64) {
              if constexpr (planes_side_by_side<P>()) {
                for (int p = 0; p + 1 < PL; p += 2) std::memcpy(pair + off[p][s2], b + p, 2);
                if constexpr (PL % 2 == 1) pair[off[PL - 1][s2]] = b[PL - 1];
              } else {
                for (int p = 0; p < PL; ++p) pair[off[p][s2]] = b[p];
              }
            }
            if (++spi == per) {
              spi = 0;
              pair = chunk_blocks[++blk];
            } else {
              pair += pair_bytes;
            }
          }
        }
      }
    } else {
      for (int r = 0; r < R; ++r) {
        const std::size_t m = t * std::size_t(R) + std::size_t(r);
        if (m >= M) break;
        int off[PL][2];
        row_offsets(r, off);
        const int sh0 = S.index_shift(r, 0), sh1 = S.index_shift(r, 1);
        const auto c = src.row(m);
        walk(t, sp0, sp1, [&](uint8_t* pair, std::size_t k0) {
          const uint64_t x = c.codes8(k0);
          for (int p = 0; p < PL; ++p) {
            const unsigned b = plane_byte(x, p);
            pair[off[p][0]] |= uint8_t((b & 0x0Fu) << sh0);
            pair[off[p][1]] |= uint8_t((b >> 4) << sh1);
          }
        });
      }
    }
    }
  }
}

// The blob of a code source, tile by tile over `pool`'s threads, into `out` (a blob of the
// source's shape: its storage is overwritten). Each thread clears the tiles its walk does not
// store whole (padded rows, padded K, or-ed layouts) and packs them.
template <class P, class Src>
void pack_source_into(packed_weights<P>& out, const Src& src, thread_pool* pool) {
  require(!out.empty() && out.M() == src.M() && out.K() == src.K(), "pack into a blob: the blob is ",
          out.empty() ? std::string("empty") : std::to_string(out.M()) + " x " + std::to_string(out.K()),
          ", the tensor ", src.M(), " x ", src.K());
  const packed_layout& L = out.layout();
  uint8_t* d = out.data();
  constexpr std::size_t R = std::size_t(P::spec.rows_per_tile);
  const bool whole_k = (src.K() + 7) / 8 == L.step_pairs();
  auto tiles = [&](std::size_t t0, std::size_t t1) {
    for (std::size_t t = t0; t < t1; ++t)
      if (!(pack_writes_whole_bytes<P>() && whole_k && (t + 1) * R <= src.M()))
        std::memset(d + L.tile_offset(t), 0, L.tile_bytes);
    if constexpr (P::spec.ternary) pack_ternary_tiles(src.q, d, L, t0, t1);
    else pack_tiles<P>(src, d, L, t0, t1);
  };
  if (pool == nullptr || pool->size() <= 1 || L.tiles <= 1) {
    tiles(0, L.tiles);
  } else {
    const std::size_t parts = std::min(pool->size(), L.tiles);
    pool->run(parts, [&](std::size_t i) { tiles(L.tiles * i / parts, L.tiles * (i + 1) / parts); });
  }
}
template <class P, class Src>
packed_weights<P> pack_source(const Src& src, thread_pool* pool) {
  // (the pages are first touched by the threads that pack them)
  packed_weights<P> out(src.M(), src.K(), data_uninitialized_t{});
  pack_source_into(out, src, pool);
  return out;
}

template <class P, class Block>
ggml_source<P, Block> ggml_tensor(const char* what, const void* blocks, std::size_t M, std::size_t K,
                                  std::size_t nbytes) {
  check_ggml_tensor<P, Block>(what, blocks, M, K, nbytes);
  return {what, static_cast<const unsigned char*>(blocks), M, K};
}
}  // namespace detail

// The blob of q for P, tile by tile (over `pool`'s threads when given): the bytes the element map
// defines (tests/test_layout.cpp compares them with detail::pack_by_element_map).
template <class P>
packed_weights<P> pack(const quantized<P>& q, thread_pool* pool = nullptr) {
  detail::require(q.M > 0 && q.K > 0 && q.codes.size() == q.M * q.K, "pack: quantized tensor is empty or inconsistent");
  return detail::pack_source<P>(detail::quantized_source<P>{q}, pool);
}
// The same bytes written over `out`, a blob of q's shape (an engine's buffer reused: no new pages)
template <class P>
void pack_into(packed_weights<P>& out, const quantized<P>& q, thread_pool* pool = nullptr) {
  detail::require(q.M > 0 && q.K > 0 && q.codes.size() == q.M * q.K, "pack: quantized tensor is empty or inconsistent");
  detail::pack_source_into(out, detail::quantized_source<P>{q}, pool);
}

// llama.cpp block tensors straight to a blob, the blocks read in place (no per-weight codes):
// the same bytes as pack(import_q4_0<P>(...)) and the same checks and errors as the importers
// (quant.hpp), with "pack_q4_0" ... naming the call. The _into forms write over `out`, a blob of
// the tensor's shape.
template <class P>
packed_weights<P> pack_q4_0(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                            thread_pool* pool = nullptr) {
  return detail::pack_source<P>(detail::ggml_tensor<P, detail::ggml_q4_0>("pack_q4_0", blocks, M, K, nbytes), pool);
}
template <class P>
packed_weights<P> pack_q8_0(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                            thread_pool* pool = nullptr) {
  return detail::pack_source<P>(detail::ggml_tensor<P, detail::ggml_q8_0>("pack_q8_0", blocks, M, K, nbytes), pool);
}
template <class P>
packed_weights<P> pack_iq4_nl(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                              thread_pool* pool = nullptr) {
  return detail::pack_source<P>(detail::ggml_tensor<P, detail::ggml_iq4_nl>("pack_iq4_nl", blocks, M, K, nbytes),
                                pool);
}
template <class P>
void pack_q4_0_into(packed_weights<P>& out, const void* blocks, std::size_t M, std::size_t K,
                    std::size_t nbytes = unknown_size, thread_pool* pool = nullptr) {
  detail::pack_source_into(out, detail::ggml_tensor<P, detail::ggml_q4_0>("pack_q4_0", blocks, M, K, nbytes), pool);
}
template <class P>
void pack_q8_0_into(packed_weights<P>& out, const void* blocks, std::size_t M, std::size_t K,
                    std::size_t nbytes = unknown_size, thread_pool* pool = nullptr) {
  detail::pack_source_into(out, detail::ggml_tensor<P, detail::ggml_q8_0>("pack_q8_0", blocks, M, K, nbytes), pool);
}
template <class P>
void pack_iq4_nl_into(packed_weights<P>& out, const void* blocks, std::size_t M, std::size_t K,
                      std::size_t nbytes = unknown_size, thread_pool* pool = nullptr) {
  detail::pack_source_into(out, detail::ggml_tensor<P, detail::ggml_iq4_nl>("pack_iq4_nl", blocks, M, K, nbytes),
                           pool);
}

template <class P>
quantized<P> unpack(const packed_weights<P>& w) {
  w.validate();
  const packed_layout& L = w.layout();
  constexpr auto& S = P::spec;
  quantized<P> q = detail::make_quantized<P>(L.M, L.K);
  const uint8_t* d = w.data();
  for (std::size_t m = 0; m < q.M; ++m)
    for (std::size_t g = 0; g < L.groups; ++g) {
      const std::size_t t = m / S.rows_per_tile, r = m % S.rows_per_tile;
      uint16_t s;
      std::memcpy(&s, d + L.scale_offset(t, g) + 2 * r, 2);
      q.scales[m * q.groups + g] = decode_param(S, s);
      if (S.asymmetric) {
        uint16_t z;
        std::memcpy(&z, d + L.zero_offset(t, g) + 2 * r, 2);
        q.zeros[m * q.groups + g] = decode_param(S, z);
      }
    }
  if constexpr (S.ternary) {
    for (std::size_t m = 0; m < q.M; ++m)
      for (std::size_t st = 0; st < L.steps(); ++st) {
        const auto li = L.index_location(m, st * 3, 0);
        const auto ls = L.ternary_sign_location(m, st);
        int c[3];
        detail::ternary_decode((d[li.byte] >> li.shift) & 15, (d[ls.byte] >> ls.shift) & 1, c[0], c[1], c[2]);
        for (int i = 0; i < 3; ++i)
          if (st * 3 + i < q.K) q.codes[m * q.K + st * 3 + i] = uint8_t(c[i]);
      }
  } else {
    for (std::size_t m = 0; m < q.M; ++m)
      for (std::size_t k = 0; k < q.K; ++k) {
        unsigned code = 0;
        for (int b = 0; b < S.planes; ++b) {
          const auto loc = L.index_location(m, k, b);
          code |= ((d[loc.byte] >> loc.shift) & 1u) << b;
        }
        q.codes[m * q.K + k] = uint8_t(code);
      }
  }
  return q;
}

}  // namespace lutkit
