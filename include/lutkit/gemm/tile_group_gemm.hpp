// lutkit — tile-group quantized weights (quant/tile_group.hpp, [TTS-NPU] §5.1, docs/references.md) as the kernels
// read them, their weight source, and the prefill dequant-GEMM (fp32 and bf16 activation
// paradigms), reading the super-group byte stream of pack_super_groups directly. The decode GEMV
// on these weights is the decode family's (decode/tile_group_gemv.hpp).
//
// Why the CPU kernels can read the NPU order: a tile group of the HMX geometry is 2 k x 16
// output rows, its 32 weights consecutive in read order as (row, k-pair) pairs. The bf16
// micro-kernel (rows in lanes, gemm/microkernel.hpp) reads, per k-pair step, 64 rows as four
// vectors of 16 rows x 2 bf16 — so one tile group is exactly one of those vectors, in the same
// element order: dequantizing a group writes 64 contiguous bytes of the step-major panel, with
// one scale and zero per group and no permutation. The fp32 kernel takes the group's two
// k-columns as two steps.
//
// Not provided: the int8 paradigm of the prefill GEMM (a VNNI step sums 4 k, which would straddle
// two groups of 2 k with different scales; the int8 entry points refuse tile-group weights), and
// the LUT-GEMV (a bit-serial table index covers 4 k: see docs/tile_group.md).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "../core/memory.hpp"
#include "../quant/tile_group.hpp"
#include "dequant_gemm.hpp"

namespace lutkit {

// Tile-group weights as the kernels read them: the super-group byte stream and its shape. Only
// the HMX geometry (32 x 32 tiles, 2-row interleave, groups of 32, super-groups of 8) is
// accepted, and M, K must be multiples of 32.
template <class Fmt>
class tile_group_weights {
 public:
  tile_group_weights() = default;
  explicit tile_group_weights(const tile_group_quantized<Fmt>& q) : layout_(q.layout) {
    const std::vector<uint8_t> b = pack_super_groups(q);
    assign(b.data(), b.size());
    check_geometry(layout_.geo);
  }
  tile_group_weights(const tile_group_weights& o) : layout_(o.layout_) { assign(o.data(), o.size_); }
  tile_group_weights& operator=(const tile_group_weights& o) {
    if (this != &o) {
      layout_ = o.layout_;
      assign(o.data(), o.size_);
    }
    return *this;
  }
  tile_group_weights(tile_group_weights&&) noexcept = default;
  tile_group_weights& operator=(tile_group_weights&&) noexcept = default;
  // bytes of pack_super_groups (validated: size, finite scales and zeros)
  static tile_group_weights from_bytes(const uint8_t* bytes, std::size_t n, std::size_t M, std::size_t K) {
    return tile_group_weights(unpack_super_groups<Fmt>(bytes, n, M, K));
  }
  std::size_t M() const { return layout_.M; }
  std::size_t K() const { return layout_.K; }
  const tile_group_layout& layout() const { return layout_; }
  const uint8_t* data() const { return bytes_.get(); }
  std::size_t size_bytes() const { return size_; }

 private:
  static void check_geometry(const tile_group_geometry& g) {
    const tile_group_geometry h = hmx_fp16_tile_groups;
    detail::require(g.tile == h.tile && g.interleave == h.interleave && g.group == h.group &&
                        g.super_groups == h.super_groups,
                    "tile_group_weights: the kernels read the HMX geometry only (32 x 32 tiles, 2-row interleave, "
                    "groups of 32, super-groups of 8)");
  }
  // the stream in the blob's storage (detail::alloc_aligned: in huge pages, core/memory.hpp): the
  // decode streams it from DRAM once per call, without the TLB misses of 4 KiB pages
  // (docs/design_measurements.md, "Huge pages").
  void assign(const uint8_t* p, std::size_t n) {
    bytes_ = detail::alloc_aligned(n);
    if (n) std::memcpy(bytes_.get(), p, n);
    size_ = n;
  }
  tile_group_layout layout_{};
  detail::aligned_bytes bytes_;
  std::size_t size_ = 0;
};

namespace detail {
// The weight source of dq_gemm_tiles and FusedDQP (decode/fused_dq.hpp) for tile-group weights.
// Tile t is rows [64t, 64t + 64); rows at or beyond M (M is a multiple of 32) dequantize to 0.
template <class Fmt>
struct tile_group_source {
  using FT = format_traits<Fmt>;
  const uint8_t* data;
  const tile_group_layout* L;
  const dq_kernel_set* ks;

  // where group g's codes, shift, scale and zero are (super_group_map: the byte offsets)
  void locate(std::size_t g, const uint8_t*& codes, int& shift, float& s, float& z) const {
    const super_group_map<Fmt> map(L->geo);
    const std::size_t sg = g / map.SG, gi = g % map.SG, i0 = gi * std::size_t(L->geo.group);
    const uint8_t* d = data + sg * super_group_bytes<Fmt>(L->geo);
    uint16_t h;
    std::memcpy(&h, d + map.scale_offset(gi), 2);
    s = f16_to_f32(h);
    z = FT::sym_zero;
    if constexpr (FT::asymmetric) {
      std::memcpy(&h, d + map.zero_offset(gi), 2);
      z = f16_to_f32(h);
    }
    codes = d + map.code_byte(i0);
    shift = map.code_shift(i0);
  }

  // The 32 values of the group holding rows [m, m + 16) x k-pair (k, k + 1) (m a multiple of 16,
  // k even), in read order: out[2 * i + j] = W[m + i][k + j].
  void group_values(std::size_t m, std::size_t k, float* out) const {
    const uint8_t* c;
    int sh;
    float s, z;
    locate(L->group_of(m, k), c, sh, s, z);  // the group's 32 positions share one shift
    constexpr unsigned mask = (1u << FT::bits) - 1u;
    for (std::size_t j = 0; j < std::size_t(L->geo.group); ++j) out[j] = FT::value(s, z, int((c[j] >> sh) & mask));
  }
  // the step-major panel values of the bf16 / fp32 micro-kernels for rows of tile t, k in [k0, k1)
  template <class T>
  const uint32_t* value_steps(std::size_t t, std::size_t k0, std::size_t k1, dq_scratch& s) const {
    uint32_t* out = reinterpret_cast<uint32_t*>(s.steps.get());
    // group (k-pair step st, vector q) is batch element 4 * st + q: bf16 writes it as the 64
    // bytes at out + 16 * (4 * st + q) (the group's own element order), fp32 as two steps of 16
    // floats; rows beyond M read a zero group
    static const uint8_t zero_codes[32] = {};
    const std::size_t n = (k1 - k0) / 2 * 4;
    std::vector<const uint8_t*> codes(n);
    std::vector<int> shift(n);
    std::vector<float> sc(n), zz(n);
    for (std::size_t k = k0, i = 0; k < k1; k += 2)
      for (std::size_t q = 0; q < 4; ++q, ++i) {
        const std::size_t m = t * 64 + 16 * q;
        if (m < L->M) {
          locate(L->group_of(m, k), codes[i], shift[i], sc[i], zz[i]);
        } else {
          codes[i] = zero_codes;
          shift[i] = 0;
          sc[i] = 0.f;
          zz[i] = 0.f;
        }
      }
    const tg_groups_args a{codes.data(), shift.data(), sc.data(), zz.data(), n, FT::bits,
                                    reinterpret_cast<uint16_t*>(out)};
    if constexpr (sizeof(T) == 2)
      ks->tg_groups_bf16(a);
    else
      ks->tg_groups_f32(a, reinterpret_cast<float*>(out));
    return out;
  }
  // row-major fp32 values (FusedDQP): out[r * ld + (k - k0)]
  template <class T>
  const T* values(std::size_t t, std::size_t k0, std::size_t k1, dq_scratch& s, std::size_t& ld) const {
    static_assert(std::is_same_v<T, float>, "tile-group FusedDQP reads fp32 values");
    float* out = reinterpret_cast<float*>(s.values.get());
    ld = s.ldv;
    alignas(64) float v[32];
    for (std::size_t k = k0; k < k1; k += 2)
      for (std::size_t q = 0; q < 4; ++q) {
        const std::size_t m = t * 64 + 16 * q;
        if (m < L->M)
          group_values(m, k, v);
        else
          std::fill(v, v + 32, 0.f);
        for (std::size_t i = 0; i < 16; ++i) {
          out[(16 * q + i) * ld + (k - k0)] = v[2 * i];
          out[(16 * q + i) * ld + (k - k0) + 1] = v[2 * i + 1];
        }
      }
    return out;
  }
  // the int8 paradigm is refused before a source is built (groups of 2 k)
  const uint8_t* levels(std::size_t, std::size_t, std::size_t, dq_scratch&) const {
    require(false, "tile-group weights: no int8 paradigm");
    return nullptr;
  }
  void group_scales(std::size_t, std::size_t, float*, float*) const { require(false, "tile-group weights: no int8 paradigm"); }
};

// the entry points' common prologue: default strides (0 -> K, M), then the checks
template <class Fmt>
void check_tile_group_args(const tile_group_weights<Fmt>& w, const float* x, std::size_t N, std::size_t K,
                           std::size_t& ldx, const float* y, std::size_t& ldy, const char* who) {
  if (ldx == 0) ldx = K;
  if (ldy == 0) ldy = w.M();
  require(w.M() > 0 && w.size_bytes() > 0, who, ": empty weights");
  require(x != nullptr && y != nullptr, who, ": null activation or output pointer");
  require(N > 0, who, ": N must be positive");
  require(K == w.K(), who, ": activations have K = ", K, " but the weights have K = ", w.K());
  require(ldx >= K, who, ": activation stride ldx (", ldx, ") is smaller than K (", K, ")");
  require(ldy >= w.M(), who, ": output stride ldy (", ldy, ") is smaller than M (", w.M(), ")");
  check_strided(N, K, ldx, who, "ldx");
  check_strided(N, w.M(), ldy, who, "ldy");
}

}  // namespace detail

// Prefill GEMM on tile-group weights: y[n * ldy + m] = sum_k W[m][k] x[n][k], act fp32 or bf16.
template <class Fmt>
void tile_group_gemm(const tile_group_weights<Fmt>& w, const float* x, std::size_t N, std::size_t K, float* y,
                     act_type act = act_type::bf16, std::size_t ldx = 0, std::size_t ldy = 0,
                     thread_pool* pool = nullptr, dq_backend backend = dq_backend::best) {
  detail::check_tile_group_args(w, x, N, K, ldx, y, ldy, "tile_group_gemm");
  detail::require(act == act_type::fp32 || act == act_type::bf16, "tile_group_gemm: act ", act_name(act),
                  " is not supported: a tile group spans 2 k, a VNNI int8 step 4 (use act_type::bf16 or fp32)");
  const auto& ks = detail::dq_kernels_for(backend);
  detail::dq_activations A;
  A.act = act;
  A.geo = detail::make_dq_geometry_k(K, K, std::size_t(w.layout().geo.group), N, act);
  detail::prepare_activations(A, x, ldx, pool, ks);
  const detail::tile_group_source<Fmt> src{w.data(), &w.layout(), &ks};
  detail::run_dq_gemm(src, A, ks, w.M(), 0, w.M(), y, ldy, pool);
}

}  // namespace lutkit
