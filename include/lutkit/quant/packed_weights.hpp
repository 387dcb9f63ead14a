// lutkit — the packed blob: a 64-byte header (magic, layout version, policy hash and name,
// shape) + the packed tiles, laid out by the tiling spec. Every kernel validates the header
// against its own policy and the shapes it is given. Here too: the packer by the element map
// alone (the reference of packing/pack.hpp, the fast packer), the ternary tile walk, the bit
// helpers both walks share, and unpack.
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
          const float s = group_scale(layout_, d, t, g, std::size_t(r));
          const float z = group_zero(layout_, d, t, g, std::size_t(r));
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
      if constexpr (S.super_k > 0) store_group_params(L, d, t, g, r, q.scale(m, g), q.zero(m, g), q.super_scale(m, g), q.super_min(m, g));
      else store_group_params(L, d, t, g, r, q.scale(m, g), q.zero(m, g));
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
          store_param(S, d + L.scale_offset(t, g), std::size_t(r), q.scale(m, g));
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
  if (S.plane_chunks() || S.whole_codes() || S.rows_per_tile != 64) return false;
  for (int r = 0; r < 32; ++r)
    for (int p = 0; p < S.planes; ++p)
      for (int s = 0; s < 2; ++s)
        if (S.index_byte_in_step_pair(r, p, s) != S.index_byte_in_step_pair(r + 32, p, s) || S.index_shift(r, s) != 0 ||
            S.index_shift(r + 32, s) != 4)
          return false;
  return true;
}
}  // namespace detail

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
      q.scales[m * q.groups + g] = group_scale(L, d, t, g, r);
      if (S.asymmetric) q.zeros[m * q.groups + g] = group_zero(L, d, t, g, r);
      if constexpr (S.super_k > 0)
        if (g % std::size_t(S.groups_per_super()) == 0) {
          const std::size_t u = g / std::size_t(S.groups_per_super());
          q.supers[m * q.supers_per_row + u] = detail::load_f32(d + L.super_offset(t, g) + 4 * r);
          if (S.asymmetric) q.super_mins[m * q.supers_per_row + u] = detail::load_f32(d + L.super_min_offset(t, g) + 4 * r);
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
