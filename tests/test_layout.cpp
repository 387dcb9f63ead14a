// Layout properties of the tiling spec, exhaustively on small shapes, for every policy:
// unpack(pack(q)) == q; the element map is injective (no two weights share a bit) and covers
// every index bit of the packed data; offsets stay inside the blob.
#include <algorithm>
#include <cstring>
#include <limits>
#include <random>
#include <set>

#include "common.hpp"
#include "policy_list.hpp"

using namespace lutkit;
using namespace lutkit_test;

namespace {
template <class P>
void check_layout_properties() {
  constexpr auto& S = P::spec;
  // reduced runs (emulated, sanitizers): a partial tile and one more row than one 64-row and one
  // 128-row tile (the edges), not the larger shapes
  const std::vector<std::size_t> Ms = lutkit_test::case_divisor() > 1 ? std::vector<std::size_t>{1, 63, 65, 129}
                                                                     : std::vector<std::size_t>{1, 63, 64, 65, 129, 130, 257};
  const std::size_t g = S.group_k > 0 ? std::size_t(S.group_k) : 1;
  const std::size_t Ks[] = {g * (S.group_k > 0 ? 1 : 7), g * (S.group_k > 0 ? 2 : 96), S.group_k > 0 ? g * 3 : 200};
  std::mt19937_64 rng(policy_hash(P::name()));
  for (std::size_t M : Ms)
    for (std::size_t K : Ks) {
      INFO(P::name() << " M=" << M << " K=" << K);
      // codes: every code value appears; scales/zeros random
      constexpr int maxq = format_traits<typename P::format>::max_code;
      auto q = detail::make_quantized<P>(M, K);
      std::uniform_int_distribution<int> code(0, maxq);
      for (auto& c : q.codes) c = uint8_t(code(rng));
      std::normal_distribution<float> nd;
      for (auto& s : q.scales) s = round_to_f16(nd(rng));
      if (S.per_tensor)
        for (auto& s : q.scales) s = q.scales[0];
      for (auto& z : q.zeros) z = round_to_f16(float(code(rng)) + 0.25f);
      const auto wp = pack<P>(q);
      const auto u = unpack<P>(wp);
      // the fast packer (tile by tile, threaded) writes exactly the element map's bytes
      static thread_pool pool(3);
      const auto by_map = detail::pack_by_element_map<P>(q);
      const auto threaded = pack<P>(q, &pool);
      CHECK(std::memcmp(by_map.bytes(), wp.bytes(), wp.size_bytes()) == 0);
      CHECK(std::memcmp(by_map.bytes(), threaded.bytes(), wp.size_bytes()) == 0);
      CHECK(u.codes == q.codes);
      CHECK(u.scales == q.scales);
      CHECK(u.zeros == q.zeros);

      // element map: injective, in range, and it covers exactly the index bits
      const packed_layout& L = wp.layout();
      CHECK(wp.size_bytes() == sizeof(blob_header) + L.total_bytes);
      // K bands: band after band, each band's panels tile after tile, end to end over the blob;
      // whole groups per band (when grouped), a multiple of the whole-K int8 flush otherwise
      const std::size_t nblk = L.blocks();
      {
        std::size_t at = 0, first = 0;
        for (std::size_t b = 0; b < L.bands; ++b) {
          INFO("band " << b);
          CHECK(L.band_first_block(b) == first);
          CHECK(L.band_end_block(b) > first);
          if (L.band_end_block(b) < nblk) {
            CHECK(L.band_end_block(b) - first == L.band_blocks);
            CHECK((S.group_k > 0 ? L.band_blocks % L.blocks_per_group : L.band_blocks % std::size_t(S.whole_k_flush_blocks())) == 0);
          }
          for (std::size_t t = 0; t < L.tiles; ++t) {
            CHECK(L.panel_offset(t, b) == at);
            at += L.panel_bytes(b);
          }
          first = L.band_end_block(b);
          for (std::size_t k = L.band_first_block(b) * S.block_k; k < first * S.block_k; k += S.block_k)
            CHECK(L.band_end_k(k) == first * S.block_k);
        }
        CHECK(first == nblk);
        CHECK(at == L.total_bytes);
        // the LUT formats: as many whole units (groups, or int8 flush groups) as the limits allow,
        // at least one; the formats the LUT-GEMV never runs: one band
        CHECK((S.lut || S.ternary ? S.band_blocks > 0 : S.band_blocks == 0));
        if (S.band_blocks > 0) {
          const int unit = S.group_k > 0 ? S.group_k / S.block_k : S.whole_k_flush_blocks();
          CHECK(S.band_blocks % unit == 0);
          auto fits = [&](long nb) {
            const long k = nb * S.block_k;
            return k <= band_k_max && k / S.k_per_step * S.table_bytes_per_step() <= band_table_bytes &&
                   nb * S.block_bytes() + (S.group_k > 0 ? nb / unit * S.scale_bytes() : 0) <= band_panel_bytes;
          };
          CHECK((S.band_blocks == unit || fits(S.band_blocks)));
          CHECK_FALSE(fits(S.band_blocks + unit));
          // every panel within the limit (the first band's also holds whole-K parameters)
          if (S.band_blocks > unit)
            for (std::size_t b = 0; b < L.bands; ++b)
              CHECK(L.panel_bytes(b) - (b == 0 && S.group_k == 0 ? std::size_t(S.scale_bytes()) : 0) <= std::size_t(band_panel_bytes));
        }
      }
      // k_range_bytes (what the GEMM prefetches per chunk) of each single block: its size, its
      // group's parameters when the group starts there, and every weight bit of the block inside it
      // (checked in the element walk below); the blocks of a panel are contiguous, so a range of
      // several blocks of one band is the union of theirs
      std::vector<std::pair<std::size_t, std::size_t>> one(L.tiles * nblk);
      for (std::size_t t = 0; t < L.tiles; ++t)
        for (std::size_t blk = 0; blk < nblk; ++blk) {
          const auto [lo, hi] = L.k_range_bytes(t, blk * S.block_k, (blk + 1) * S.block_k);
          INFO("tile " << t << " block " << blk);
          REQUIRE(lo < hi);
          REQUIRE(hi <= L.total_bytes);
          const std::size_t band = L.band_of_block(blk);
          CHECK((lo >= L.panel_offset(t, band) && hi <= L.panel_offset(t, band) + L.panel_bytes(band)));
          const bool starts = blk % L.blocks_per_group == 0;
          CHECK(hi - lo == std::size_t(S.block_bytes()) + (starts ? std::size_t(S.scale_bytes()) : 0));
          if (starts) {
            const std::size_t so = L.scale_offset(t, L.group_of_block(blk));
            CHECK((so >= lo && so + std::size_t(S.scale_bytes()) <= hi));
          }
          if (blk > L.band_first_block(band)) CHECK(lo == one[t * nblk + blk - 1].second);
          else CHECK(lo == L.panel_offset(t, band));
          one[t * nblk + blk] = {lo, hi};
        }
      // ranges of 2 and 3 blocks and a whole band: from their first block's start to their last's end
      for (std::size_t t = 0; t < L.tiles; ++t)
        for (std::size_t nb : {std::size_t(2), std::size_t(3), nblk})
          for (std::size_t band = 0; band < L.bands; ++band)
            for (std::size_t b0 = L.band_first_block(band); b0 < L.band_end_block(band); b0 += nb) {
              const std::size_t b1 = std::min(L.band_end_block(band), b0 + nb);
              const auto [lo, hi] = L.k_range_bytes(t, b0 * S.block_k, b1 * S.block_k);
              INFO("tile " << t << " blocks [" << b0 << ", " << b1 << ")");
              CHECK(lo == one[t * nblk + b0].first);
              CHECK(hi == one[t * nblk + b1 - 1].second);
            }
      // (a bitmap of the blob's bits: a std::set of (byte, bit) pairs made this the suite's
      // slowest case, 70% of its time)
      std::vector<uint8_t> used(L.total_bytes * 8, 0);
      std::size_t n_used = 0;
      bool in_range = true, injective = true, in_block = true;
      auto mark = [&](std::size_t byte, int bit) {
        const bool ok = byte < L.total_bytes && bit >= 0 && bit < 8;
        in_range = in_range && ok;
        if (!ok) return;
        uint8_t& u = used[byte * 8 + std::size_t(bit)];
        injective = injective && u == 0;
        n_used += u == 0;
        u = 1;
      };
      // a weight bit of block blk of tile t lies in that block's k range
      auto mark_weight = [&](std::size_t t, std::size_t blk, std::size_t byte, int bit) {
        const auto& [lo, hi] = one[t * nblk + blk];
        in_block = in_block && byte >= lo && byte < hi;
        mark(byte, bit);
      };
      for (std::size_t m = 0; m < L.M_pad; ++m) {
        const std::size_t t = m / S.rows_per_tile, r = m % S.rows_per_tile;
        if (S.ternary) {
          for (std::size_t st = 0; st < L.steps(); ++st) {
            const std::size_t blk = st * 3 / std::size_t(S.block_k);
            const auto li = L.index_location(m, st * 3, 0);
            for (int b = 0; b < 4; ++b) mark_weight(t, blk, li.byte, li.shift + b);
            const auto ls = L.ternary_sign_location(m, st);
            mark_weight(t, blk, ls.byte, ls.shift);
          }
        } else {
          for (std::size_t k = 0; k < L.K_pad; ++k)
            for (int b = 0; b < S.planes; ++b) {
              const auto loc = L.index_location(m, k, b);
              mark_weight(t, k / std::size_t(S.block_k), loc.byte, loc.shift);
            }
        }
        for (std::size_t gi = 0; gi < L.groups; ++gi) {
          for (int b = 0; b < 16; ++b) mark(L.scale_offset(t, gi) + 2 * r + b / 8, b % 8);
          if (S.asymmetric)
            for (int b = 0; b < 16; ++b) mark(L.zero_offset(t, gi) + 2 * r + b / 8, b % 8);
        }
      }
      CHECK(in_range);
      CHECK(injective);
      CHECK(in_block);
      // every bit of the blob belongs to some element: the layout has no holes
      CHECK(n_used == L.total_bytes * 8);
      // block offsets tile each panel exactly, and a panel cursor walks them by additions
      for (std::size_t t = 0; t < L.tiles; ++t)
        for (std::size_t blk = 0; blk + 1 < L.blocks(); ++blk) {
          const std::size_t a = L.block_offset(t, blk), b = L.block_offset(t, blk + 1);
          const bool starts = L.group_of_block(blk) != L.group_of_block(blk + 1);
          const std::size_t band = L.band_of_block(blk + 1);
          if (band != L.band_of_block(blk))
            CHECK(b == L.panel_offset(t, band) + (starts ? std::size_t(S.scale_bytes()) : 0));
          else if (!starts)
            CHECK(b - a == std::size_t(S.block_bytes()));
          else
            CHECK(b - a == std::size_t(S.block_bytes() + S.scale_bytes()));
        }
      for (std::size_t t = 0; t < L.tiles; ++t)
        for (std::size_t band = 0; band < L.bands; ++band)
          for (std::size_t b0 : {L.band_first_block(band), (L.band_first_block(band) + L.band_end_block(band)) / 2}) {
            bool same = true;
            for (auto c = L.cursor(t, b0); c.blk < L.band_end_block(band); c.next())
              same = same && c.block == L.block_offset(t, c.blk) && c.group == L.group_of_block(c.blk) &&
                     c.params == L.scale_offset(t, c.group) && c.in_group == c.blk % L.blocks_per_group &&
                     (!S.asymmetric || c.zeros() == L.zero_offset(t, c.group));
            CHECK(same);
          }
    }
}
}  // namespace

TEST_CASE("pack/unpack round trip and element map, every policy", "[layout]") {
  for_policies<0, policy_count>([]<class P>() { check_layout_properties<P>(); });
}

#ifndef LUTKIT_REDUCED_BUILD
// (in the host Release build only: the layouts are the tiling spec's arithmetic and the portable
// packer's, the same code in every build; the sanitizer and emulated builds leave this case's
// instances out, and the HVX and SME suites check those targets' kernels on blobs of these layouts)
TEST_CASE("pack/unpack round trip and element map, every policy on every target's layout", "[layout]") {
  // the same properties on the layouts the spec builds for the other targets (hvx: 128-row tiles in
  // vlut16 order; sme: 64-row tiles in sve order), checked here on the host
  for_each_policy_in<retargeted<policy_list, target::hvx>>([]<class P>() { check_layout_properties<P>(); });
  for_each_policy_in<retargeted<policy_list, target::sme>>([]<class P>() { check_layout_properties<P>(); });
}
#endif

TEST_CASE("sve layout: a row's byte and nibble, its sign bit, the blob's policy", "[layout]") {
  using P = policy<fmt::uint_asym<3>, group<64>, table::lut4<int8_t, true>, target::sme>;
  using Pn = policy<fmt::uint_asym<3>, group<64>, table::lut4<int8_t, true>>;
  constexpr auto& S = P::spec;
  STATIC_REQUIRE(S.rows_per_tile == 64);
  STATIC_REQUIRE(S.sve());
  STATIC_REQUIRE(S.step_pair_bytes() == 3 * 64);  // one chunk per plane
  const packed_layout L(S, 100, 192);
  CHECK(L.tiles == 2);
  // row r of plane p, step 2 sp + s, activation i: byte r of plane p's chunk, bit 4 s + i
  for (int r : {0, 1, 31, 32, 63, 64, 99})
    for (std::size_t k : {std::size_t(0), std::size_t(5), std::size_t(70), std::size_t(191)})
      for (int p = 0; p < 3; ++p) {
        const auto loc = L.index_location(std::size_t(r), k, p);
        const std::size_t step = k / 4, sp = step / 2;
        const int spi = int(sp % std::size_t(S.step_pairs_per_block()));
        CHECK(loc.byte == L.block_offset(std::size_t(r / 64), sp / std::size_t(S.step_pairs_per_block())) +
                              std::size_t(spi * 192 + p * 64 + r % 64));
        CHECK(loc.shift == int(step % 2) * 4 + int(k % 4));
      }
  using T = policy<fmt::ternary, per_channel, table::lut4<int8_t, false>, target::sme>;
  STATIC_REQUIRE(T::spec.sign_chunks_per_block() == T::spec.step_pairs_per_block() / 4);
  const packed_layout LT(T::spec, 64, 96 * 2);
  const auto ls = LT.ternary_sign_location(37, 13);  // step pair 6 (sign chunk 1, bits 4, 5), step 1
  CHECK(ls.byte == LT.block_offset(0, 0) + std::size_t(T::spec.step_pairs_per_block() * 64 + 64 + 37));
  CHECK(ls.shift == 2 * 2 + 1);
  // an sme blob is not a host blob (the policy name carries the target), and the reverse
  std::vector<float> w(64 * 64, 0.25f);
  const auto wp = pack<P>(quantize<P>(w.data(), 64, 64));
  CHECK(P::name() != Pn::name());
  CHECK_THROWS_WITH(packed_weights<Pn>::from_bytes(wp.bytes(), wp.size_bytes()),
                    Catch::Matchers::Contains("packed for policy") && Catch::Matchers::Contains("sme"));
  const auto wn = pack<Pn>(quantize<Pn>(w.data(), 64, 64));
  CHECK_THROWS_WITH(packed_weights<P>::from_bytes(wn.bytes(), wn.size_bytes()), Catch::Matchers::Contains("packed for policy"));
}

TEST_CASE("vlut16 layout: a row's byte and nibble, its sign bit, the blob's policy", "[layout]") {
  using H = policy<fmt::uint_asym<2>, group<64>, table::lut4<int8_t, true>, target::hvx>;
  using Hn = policy<fmt::uint_asym<2>, group<64>, table::lut4<int8_t, true>>;
  constexpr auto& S = H::spec;
  STATIC_REQUIRE(S.rows_per_tile == 128);
  STATIC_REQUIRE(S.chunk_bytes == 128);
  STATIC_REQUIRE(S.vlut16());
  STATIC_REQUIRE(S.step_pair_bytes() == 2 * 128);  // one chunk per plane
  const packed_layout L(S, 300, 128);
  CHECK(L.tiles == 3);
  // row r of plane p, step 2 sp + s, activation i: byte 2 (r mod 64) + r / 64, bit 4 s + i
  for (int r : {0, 1, 63, 64, 65, 127})
    for (std::size_t k : {std::size_t(0), std::size_t(5), std::size_t(70)})
      for (int p = 0; p < 2; ++p) {
        const auto loc = L.index_location(std::size_t(r), k, p);
        const std::size_t step = k / 4, sp = step / 2;
        const int spi = int(sp % std::size_t(S.step_pairs_per_block()));
        CHECK(loc.byte == L.block_offset(0, sp / std::size_t(S.step_pairs_per_block())) +
                              std::size_t(spi * 256 + p * 128 + 2 * (r % 64) + r / 64));
        CHECK(loc.shift == int(step % 2) * 4 + int(k % 4));
      }
  using T = policy<fmt::ternary, per_channel, table::lut4<int8_t, false>, target::hvx>;
  STATIC_REQUIRE(T::spec.sign_chunks_per_block() == T::spec.step_pairs_per_block() / 4);
  const packed_layout LT(T::spec, 128, 96 * 2);
  const auto ls = LT.ternary_sign_location(65, 5);  // step pair 2, step 1
  CHECK(ls.byte == LT.block_offset(0, 0) + std::size_t(T::spec.step_pairs_per_block() * 128 + 2 * 1 + 1));
  CHECK(ls.shift == 2 * 2 + 1);
  // an hvx blob is not a host blob (the policy name carries the target), and the reverse
  std::vector<float> w(128 * 64, 0.25f);
  const auto wp = pack<H>(quantize<H>(w.data(), 128, 64));
  CHECK(H::name() != Hn::name());
  CHECK_THROWS_WITH(packed_weights<Hn>::from_bytes(wp.bytes(), wp.size_bytes()),
                    Catch::Matchers::Contains("packed for policy") && Catch::Matchers::Contains("hvx"));
  const auto wn = pack<Hn>(quantize<Hn>(w.data(), 128, 64));
  CHECK_THROWS_WITH(packed_weights<H>::from_bytes(wn.bytes(), wn.size_bytes()), Catch::Matchers::Contains("packed for policy"));
}

TEST_CASE("tiling spec constants", "[layout]") {
  using W2 = policy<fmt::uint_asym<2>, group<64>, table::lut4<int8_t, false>>;
  STATIC_REQUIRE(W2::spec.block_k == 64);
  STATIC_REQUIRE(W2::spec.max_abs_acc16() <= 32767);
  // W2 g64 asym: 2 bits + (2 fp16) per 64 weights = 2.5 bits per weight
  const packed_layout L(W2::spec, 4096, 14336);
  CHECK(L.total_bytes * 8 == std::size_t(4096) * 14336 * 5 / 2);
  // ternary: 5 bits per 3 weights, plus one fp16 per row
  using T = policy<fmt::ternary, per_tensor, table::lut4<int8_t, false>>;
  const packed_layout LT(T::spec, 64, 96);
  CHECK(LT.total_bytes == 64 * 2 + 32 * 64 / 2 / 64 * 80);
  // int16 tables keep the int8 tables' block: both of their bytes are signed lookups of at most
  // 128 (tiling_spec::table_qmax), so the bound holds for as many steps
  using W4i16 = policy<fmt::uint_asym<4>, group<128>, table::lut4<int16_t, false>>;
  STATIC_REQUIRE(W4i16::spec.block_k == 64);
  STATIC_REQUIRE(W4i16::spec.max_abs_acc16() <= 32767);
  STATIC_REQUIRE(W4i16::spec.table_qmax() == 32639);
  using W5i16 = policy<fmt::uint_sym<5>, group<32>, table::lut4<int16_t, true>>;
  STATIC_REQUIRE(W5i16::spec.block_k == 32);
  STATIC_REQUIRE(W5i16::spec.max_abs_acc16() <= 32767);
  // canonical names carry bits, group and symmetry
  CHECK(W2::name() == "w2_g64_asym_lut4i8_host_b64");
  CHECK(T::name() == "tern_gten_sym_lut4i8_host_b96");
  CHECK(W2::hash() != T::hash());
}

// The K-quants' super-group entries in the panels (layout version 5): every byte of the blob
// belongs to exactly one group's parameters, one block or one super-group entry; each entry lies
// right before its super-group's first group in the same tile's panel, and no band splits a
// super-group, so a kernel's walk of a band reads every super-value it uses in its stream.
template <class P>
void check_super_entries(std::size_t M, std::size_t K) {
  using namespace lutkit;
  constexpr auto& S = P::spec;
  const packed_layout L(S, M, K);
  INFO(P::name() << " " << M << " x " << K);
  std::vector<uint8_t> owner(L.total_bytes, 0);
  auto claim = [&](std::size_t off, std::size_t n) {
    REQUIRE(off + n <= L.total_bytes);
    for (std::size_t i = off; i < off + n; ++i) {
      CHECK(owner[i] == 0);
      owner[i] = 1;
    }
  };
  const std::size_t gps = std::size_t(S.groups_per_super()), bpg = L.blocks_per_group;
  for (std::size_t t = 0; t < L.tiles; ++t) {
    for (std::size_t g = 0; g < L.groups; ++g) {
      claim(L.scale_offset(t, g), std::size_t(S.scale_bytes()));
      if (g % gps == 0) {
        claim(L.super_offset(t, g), std::size_t(S.super_bytes()));
        CHECK(L.super_offset(t, g) + std::size_t(S.super_bytes()) == L.scale_offset(t, g));
      }
      CHECK(L.super_offset(t, g) == L.super_offset(t, g - g % gps));
      CHECK(L.super_min_offset(t, g) == L.super_offset(t, g) + 4 * std::size_t(S.rows_per_tile));
      // the first group of a band starts a super-group
      if (g * bpg % L.band_blocks == 0) CHECK(g % gps == 0);
    }
    for (std::size_t b = 0; b < L.blocks(); ++b) claim(L.block_offset(t, b), std::size_t(S.block_bytes()));
  }
  CHECK(std::count(owner.begin(), owner.end(), uint8_t(1)) == std::ptrdiff_t(L.total_bytes));
  // the panel cursor's super-group entry as the offsets give it, from every starting block
  for (std::size_t t = 0; t < L.tiles; t += std::max<std::size_t>(1, L.tiles - 1))
    for (std::size_t b0 = 0; b0 < L.blocks(); b0 += 3) {
      const std::size_t band_end = std::min(L.blocks(), (b0 / L.band_blocks + 1) * L.band_blocks);
      for (auto cur = L.cursor(t, b0); cur.blk < band_end; cur.next()) {
        CHECK(cur.block == L.block_offset(t, cur.blk));
        CHECK(cur.params == L.scale_offset(t, cur.group));
        CHECK(cur.super == L.super_offset(t, cur.group));
        if constexpr (S.asymmetric) CHECK(cur.super_mins() == L.super_min_offset(t, cur.group));
      }
    }
}

TEST_CASE("K-quant super-group entries: in the panel before their first group, bands of whole super-groups",
          "[layout][kquant]") {
  using namespace lutkit;
  for (const std::size_t K : {256, 1024, 14336, 256 * 7 + 32 * 3}) {
    check_super_entries<policy<fmt::q5_k, group<32>>>(130, K);
    check_super_entries<policy<fmt::q4_k, group<32>>>(64, K);
    check_super_entries<policy<fmt::q2_k, group<16>>>(70, K);
    check_super_entries<policy<fmt::q6_k, group<16>>>(64, K);
    check_super_entries<policy<fmt::q3_k, group<16>>>(192, K);
  }
}

TEST_CASE("a lone chunk gathered into row pairs: every row's two steps side by side, a permutation", "[layout]") {
  using W3 = policy<fmt::uint_asym<3>, group<64>, table::lut4<int8_t, false>>;
  constexpr auto& S = W3::spec;
  const int lone_plane = S.planes - 1;
  bool seen[64] = {};
  for (int o = 0; o < 64; ++o) {
    const int src = lone_pair_source(o);
    REQUIRE(src >= 0);
    REQUIRE(src < 64);
    CHECK_FALSE(seen[src]);
    seen[src] = true;
    // low nibble: row o / 2, high nibble: row 32 + o / 2; step o % 2 of the pair
    for (int h = 0; h < 2; ++h) {
      const int r = o / 2 + 32 * h;
      CHECK(S.index_byte_in_step_pair(r, lone_plane, o % 2) == S.lone_chunk_in_block(0) + src);
      CHECK(S.index_shift(r, o % 2) == 4 * h);
    }
  }
}

TEST_CASE("ternary encoding covers all 27 triples", "[layout]") {
  std::set<std::pair<int, int>> seen;
  for (int c0 = 0; c0 < 3; ++c0)
    for (int c1 = 0; c1 < 3; ++c1)
      for (int c2 = 0; c2 < 3; ++c2) {
        int idx, sign, d0, d1, d2;
        detail::ternary_encode(c0, c1, c2, idx, sign);
        CHECK(idx >= 0);
        CHECK(idx <= 13);
        detail::ternary_decode(idx, sign, d0, d1, d2);
        CHECK(d0 == c0);
        CHECK(d1 == c1);
        CHECK(d2 == c2);
        seen.insert({idx, sign});
      }
  CHECK(seen.size() == 27);
}

TEST_CASE("reusable working buffers: one owner at a time, reused after release", "[layout][scratch]") {
  enum class scratch_slot { codes, steps, count };  // a family's slots (the GEMM's: detail::dq_slot)
  using reusable_bytes = detail::reusable_bytes<scratch_slot>;
  const uint8_t* first = nullptr;
  {
    reusable_bytes a(scratch_slot::codes, 1000);
    first = a.get();
    REQUIRE(first != nullptr);
    // a second owner on the same thread while the first holds the slot: its own bytes
    reusable_bytes b(scratch_slot::codes, 1000);
    CHECK(a.lent());
    CHECK(!b.lent());
    CHECK(b.get() != a.get());
    std::memset(a.get(), 1, 1000);
    std::memset(b.get(), 2, 1000);
    CHECK(a[999] == 1);
    // moving keeps the lease
    reusable_bytes c = std::move(a);
    CHECK(c.get() == first);
    CHECK(!a);
  }
  // released: the next owner of the slot gets the cached buffer back (no larger request)
  {
    reusable_bytes d(scratch_slot::codes, 500);
    CHECK(d.get() == first);
    // a request above the cap is never cached and leaves the slot free
    reusable_bytes e(scratch_slot::steps, reusable_bytes::max_cached + 64);
    REQUIRE(e.get() != nullptr);
    CHECK(!e.lent());
    reusable_bytes f(scratch_slot::steps, 64);
    CHECK(f.lent());
    reusable_bytes g(scratch_slot::steps, 64);
    CHECK(!g.lent());
    CHECK(f.get() != g.get());
  }
}

TEST_CASE("large buffers: huge-page slabs, back to back, each unmapped with its last buffer", "[layout][scratch]") {
  using detail::slab_pool;
  auto& pool = slab_pool::instance();
  const std::size_t before = pool.slabs();
  std::mt19937 rng(17);
  for (int round = 0; round < 3; ++round) {
    // seeded sizes from the slab threshold to past half a slab (a mapping of its own), each
    // buffer filled with its own byte and checked after all are allocated: no two overlap
    std::vector<detail::aligned_bytes> bufs;
    std::vector<std::size_t> sizes;
    std::vector<uint8_t> fill;
    for (int i = 0; i < 24; ++i) {
      std::size_t n = slab_pool::min_bytes + rng() % (std::size_t(3) << 20);
      if (i % 8 == 7) n = slab_pool::slab_bytes / 2 + 1 + rng() % (std::size_t(4) << 20);
      bufs.push_back(detail::alloc_aligned(n));
      sizes.push_back(n);
      fill.push_back(uint8_t(i * 7 + round + 1));
      REQUIRE(bufs.back() != nullptr);
      CHECK(reinterpret_cast<std::uintptr_t>(bufs.back().get()) % 64 == 0);
      std::memset(bufs.back().get(), fill.back(), n);
    }
    for (std::size_t i = 0; i < bufs.size(); ++i) {
      const uint8_t* p = bufs[i].get();
      CHECK(p[0] == fill[i]);
      CHECK(p[sizes[i] / 2] == fill[i]);
      CHECK(p[sizes[i] - 1] == fill[i]);
    }
#if defined(__linux__)
    // the small ones share slabs: 21 buffers of at most 3.3 MiB in 32 MiB slabs, 3 of their own
    CHECK(pool.slabs() - before <= 3 + 4);
    CHECK(pool.slabs() - before >= 3 + 1);
    // a buffer above half a slab starts on a huge page
    CHECK(reinterpret_cast<std::uintptr_t>(bufs[7].get()) % detail::huge_page_bytes == 0);
#endif
    // freed in a shuffled order: every slab but the newest is unmapped with its last buffer
    std::shuffle(bufs.begin(), bufs.end(), rng);
    bufs.clear();
    CHECK(pool.slabs() <= before + 1);
  }
  // below the threshold: the heap
  const auto small = detail::alloc_aligned(slab_pool::min_bytes - 1);
  CHECK(small.get_deleter().slab == nullptr);
}

TEST_CASE("Q4_0 super-groups: every code and scale where the layout says, ragged K, bad scales refused", "[layout]") {
  using SG = q4_0_supergroup;
  std::mt19937 rng(7);
  for (std::size_t K : {std::size_t(32), std::size_t(256), std::size_t(288), std::size_t(800)}) {
    const std::size_t M = 3, nb = M * K / 32;
    std::vector<uint8_t> blocks(nb * 18);
    for (auto& b : blocks) b = uint8_t(rng());
    for (std::size_t b = 0; b < nb; ++b) blocks[b * 18 + 1] &= 0x3B;  // finite scales
    const auto sg = pack_q4_0_supergroups(blocks.data(), M, K, blocks.size());
    REQUIRE(sg.size() == M * SG::row_bytes(K));
    std::vector<bool> used(sg.size() * 8, false);
    bool codes_ok = true, scales_ok = true, injective = true;
    for (std::size_t m = 0; m < M; ++m)
      for (std::size_t k = 0; k < K; ++k) {
        const unsigned char* blk = &blocks[(m * (K / 32) + k / 32) * 18];
        const int j = int(k % 32);
        const unsigned code = j < 16 ? blk[2 + j] & 15u : unsigned(blk[2 + j - 16] >> 4);
        const int w = int(k % 256);
        const std::size_t at = SG::record_offset(K, m, k) + std::size_t(SG::byte_of(w));
        codes_ok = codes_ok && ((sg[at] >> SG::shift_of(w)) & 15u) == code;
        for (int b = 0; b < 4; ++b) {
          injective = injective && !used[at * 8 + std::size_t(SG::shift_of(w) + b)];
          used[at * 8 + std::size_t(SG::shift_of(w) + b)] = true;
        }
        if (j == 0) {
          const std::size_t so = SG::record_offset(K, m, k) + std::size_t(SG::scale_offset(int(w / 32)));
          scales_ok = scales_ok && sg[so] == blk[0] && sg[so + 1] == blk[1];
        }
      }
    CHECK(codes_ok);
    CHECK(scales_ok);
    CHECK(injective);
  }
  std::vector<uint8_t> bad(18, 0);
  bad[1] = 0x7C;  // +inf
  CHECK_THROWS_WITH(pack_q4_0_supergroups(bad.data(), 1, 32, bad.size()), Catch::Matchers::Contains("not finite"));
  CHECK_THROWS_WITH(pack_q4_0_supergroups(bad.data(), 1, 48, bad.size()), Catch::Matchers::Contains("multiple of 32"));
  CHECK_THROWS_WITH(pack_q4_0_supergroups(bad.data(), 2, 32, bad.size()), Catch::Matchers::Contains("needs"));
}

TEST_CASE("llama.cpp imports over a thread pool: the serial result; a bad block's error", "[layout][import]") {
  using Q4 = policy<fmt::uint_sym<4>, group<32>>;
  using Q8 = policy<fmt::uint_sym<8>, group<32>>;
  std::mt19937 rng(3);
  const std::size_t M = 37, K = 160;
  std::vector<uint8_t> b4(M * K / 32 * 18), b8(M * K / 32 * 34);
  for (auto& v : b4) v = uint8_t(rng());
  for (auto& v : b8) v = uint8_t(rng());
  for (std::size_t i = 0; i < M * K / 32; ++i) {
    b4[i * 18 + 1] &= 0x3B;  // finite fp16 scales
    b8[i * 34 + 1] &= 0x3B;
  }
  thread_pool pool(3);
  const auto s4 = import_q4_0<Q4>(b4.data(), M, K, b4.size()), p4 = import_q4_0<Q4>(b4.data(), M, K, b4.size(), &pool);
  CHECK(s4.codes == p4.codes);
  CHECK(s4.scales == p4.scales);
  const auto s8 = import_q8_0<Q8>(b8.data(), M, K, b8.size()), p8 = import_q8_0<Q8>(b8.data(), M, K, b8.size(), &pool);
  CHECK(s8.codes == p8.codes);
  CHECK(s8.scales == p8.scales);
  b4[(30 * (K / 32) + 2) * 18 + 1] = 0x7C;  // row 30, block 2: +inf (a later thread's rows)
  CHECK_THROWS_WITH(import_q4_0<Q4>(b4.data(), M, K, b4.size(), &pool), Catch::Matchers::Contains("(row 30)"));
}

namespace {
// Blocks of random bytes with finite fp16 scales (any exponent but the all-ones one)
std::vector<uint8_t> finite_blocks(std::mt19937_64& rng, std::size_t M, std::size_t K, std::size_t block_bytes) {
  std::vector<uint8_t> b(M * (K / 32) * block_bytes);
  for (auto& v : b) v = uint8_t(rng());
  for (std::size_t i = 0; i < M * (K / 32); ++i)
    if ((b[i * block_bytes + 1] & 0x7C) == 0x7C) b[i * block_bytes + 1] &= 0xFB;
  return b;
}
// pack_<block>(blocks) and pack_<block>_into give the bytes of pack(import_<block>(blocks)), serial
// and over 2 and 3 threads, on seeded random ragged shapes (M not a multiple of the tile, K an odd
// number of blocks: a row ending half way through the packer's 64 codes)
template <class P, class Import, class Direct, class Into>
void check_direct_pack(std::size_t block_bytes, Import import, Direct direct, Into into) {
  std::mt19937_64 rng(policy_hash(P::name()) + 11);
  thread_pool pool2(2), pool3(3);
  for (int c = 0; c < 12; ++c) {
    const std::size_t M = 1 + rng() % 150, K = 32 * (1 + rng() % 13);
    INFO(P::name() << " M = " << M << " K = " << K);
    const auto b = finite_blocks(rng, M, K, block_bytes);
    const auto want = pack(import(b.data(), M, K, b.size()));
    for (thread_pool* pool : {static_cast<thread_pool*>(nullptr), &pool2, &pool3}) {
      const auto got = direct(b.data(), M, K, b.size(), pool);
      REQUIRE(got.size_bytes() == want.size_bytes());
      CHECK(std::memcmp(got.bytes(), want.bytes(), want.size_bytes()) == 0);
      // over a blob of the same shape holding other bytes
      packed_weights<P> reused(M, K);
      std::memset(reused.data(), 0xA5, reused.layout().total_bytes);
      into(reused, b.data(), M, K, b.size(), pool);
      CHECK(std::memcmp(reused.bytes(), want.bytes(), want.size_bytes()) == 0);
    }
  }
}
}  // namespace

TEST_CASE("llama.cpp blocks packed in place: the bytes of pack(import), ragged shapes, 1-3 threads", "[layout][import]") {
  using Q4 = policy<fmt::uint_sym<4>, group<32>>;
  using Q8 = policy<fmt::uint_sym<8>, group<32>>;
  using NL = policy<fmt::codebook4<book::iq4_nl>, group<32>>;
  auto q4 = [&]<class P>() {
    check_direct_pack<P>(
        18, [](auto... a) { return import_q4_0<P>(a...); }, [](auto... a) { return pack_q4_0<P>(a...); },
        [](auto& w, auto... a) { pack_q4_0_into<P>(w, a...); });
  };
  q4.operator()<Q4>();
  q4.operator()<policy<fmt::uint_sym<4>, group<32>, table::lut4<int16_t, false>>>();
  q4.operator()<policy<fmt::uint_sym<4>, group<32>, table::lut4<int8_t, true>, target::sme>>();  // plane order
  q4.operator()<policy<fmt::uint_sym<4>, group<32>, table::lut4<int8_t, true>, target::hvx>>();  // 128-row tiles
  check_direct_pack<Q8>(
      34, [](auto... a) { return import_q8_0<Q8>(a...); }, [](auto... a) { return pack_q8_0<Q8>(a...); },
      [](auto& w, auto... a) { pack_q8_0_into<Q8>(w, a...); });
  check_direct_pack<NL>(
      18, [](auto... a) { return import_iq4_nl<NL>(a...); }, [](auto... a) { return pack_iq4_nl<NL>(a...); },
      [](auto& w, auto... a) { pack_iq4_nl_into<NL>(w, a...); });
  // Q5_0: five planes (a lone plane beside two pairs), the codes assembled from nibble and qh;
  // also in the plane order of SME and 128-row HVX tiles
  auto q5 = [&]<class P>() {
    check_direct_pack<P>(
        22, [](auto... a) { return import_q5_0<P>(a...); }, [](auto... a) { return pack_q5_0<P>(a...); },
        [](auto& w, auto... a) { pack_q5_0_into<P>(w, a...); });
  };
  q5.operator()<policy<fmt::uint_sym<5>, group<32>>>();
  q5.operator()<policy<fmt::uint_sym<5>, group<32>, table::lut4<int8_t, true>, target::sme>>();
  q5.operator()<policy<fmt::uint_sym<5>, group<32>, table::lut4<int8_t, true>, target::hvx>>();
  // Q4_1: the minimum at bytes 2-3 made finite too (the generator fixes the scale's only)
  using Q41 = policy<fmt::q4_1, group<32>>;
  auto fix_min = [](const void* p, std::size_t n, std::size_t bb) {
    auto* b = const_cast<uint8_t*>(static_cast<const uint8_t*>(p));
    for (std::size_t i = 0; i < n / bb; ++i)
      if ((b[i * bb + 3] & 0x7C) == 0x7C) b[i * bb + 3] &= 0xFB;
  };
  check_direct_pack<Q41>(
      20,
      [&](const void* b, std::size_t M, std::size_t K, std::size_t n) {
        fix_min(b, n, 20);
        return import_q4_1<Q41>(b, M, K, n);
      },
      [](auto... a) { return pack_q4_1<Q41>(a...); }, [](auto& w, auto... a) { pack_q4_1_into<Q41>(w, a...); });
  // Q5_1: Q5_0's assembled codes with Q4_1's minimum, in 5 bit planes
  using Q51 = policy<fmt::q5_1, group<32>>;
  check_direct_pack<Q51>(
      24,
      [&](const void* b, std::size_t M, std::size_t K, std::size_t n) {
        fix_min(b, n, 24);
        return import_q5_1<Q51>(b, M, K, n);
      },
      [](auto... a) { return pack_q5_1<Q51>(a...); }, [](auto& w, auto... a) { pack_q5_1_into<Q51>(w, a...); });
}

// Super-blocks of 256 (TQ2_0, TQ1_0, the K-quants: bb bytes, fp16 scale fields at d_off made
// finite) packed in place: the bytes of pack(import), new and _into, serially and on 2 and 3 threads
template <class P, class Import, class Direct, class Into>
void check_superblock_pack(std::size_t bb, std::initializer_list<std::size_t> d_off, Import import, Direct direct,
                           Into into) {
  std::mt19937_64 rng(policy_hash(P::name()) + bb);
  thread_pool pool2(2), pool3(3);
  for (int c = 0; c < 6; ++c) {
    const std::size_t M = 1 + rng() % 150, K = 256 * (1 + rng() % 5);
    INFO(P::name() << " block " << bb << " M = " << M << " K = " << K);
    std::vector<uint8_t> b(M * (K / 256) * bb);
    for (auto& v : b) v = uint8_t(rng());
    for (std::size_t i = 0; i < M * (K / 256); ++i)
      for (std::size_t o : d_off) {
        if ((b[i * bb + o + 1] & 0x7C) == 0x7C) b[i * bb + o + 1] &= 0xFB;
        // super-scales of +0 and -0 (the packer's code then keeps the sign of the product)
        if ((i + o) % 7 == 3) b[i * bb + o] = 0, b[i * bb + o + 1] = 0;
        if ((i + o) % 11 == 5) b[i * bb + o] = 0, b[i * bb + o + 1] = 0x80;
      }
    const auto want = pack(import(b.data(), M, K, b.size()));
    for (thread_pool* pool : {static_cast<thread_pool*>(nullptr), &pool2, &pool3}) {
      const auto got = direct(b.data(), M, K, b.size(), pool);
      REQUIRE(got.size_bytes() == want.size_bytes());
      CHECK(std::memcmp(got.bytes(), want.bytes(), want.size_bytes()) == 0);
      packed_weights<P> reused(M, K);
      std::memset(reused.data(), 0xA5, reused.layout().total_bytes);
      into(reused, b.data(), M, K, b.size(), pool);
      CHECK(std::memcmp(reused.bytes(), want.bytes(), want.size_bytes()) == 0);
    }
  }
}

TEST_CASE("TQ2_0 / TQ1_0 super-blocks packed in place: the bytes of pack(import), 1-3 threads", "[layout][import]") {
  using TQ = policy<fmt::uint_asym<2>, group<256>>;  // mirrored int16 tables (the default)
  using TQ16 = policy<fmt::uint_asym<2>, group<256>, table::lut4<int16_t, false>, target::sme>;  // plane order
  auto both = [&]<class P>() {
    check_superblock_pack<P>(
        66, {64}, [](auto... a) { return import_tq2_0<P>(a...); }, [](auto... a) { return pack_tq2_0<P>(a...); },
        [](auto& w, auto... a) { pack_tq2_0_into<P>(w, a...); });
    check_superblock_pack<P>(
        54, {52}, [](auto... a) { return import_tq1_0<P>(a...); }, [](auto... a) { return pack_tq1_0<P>(a...); },
        [](auto& w, auto... a) { pack_tq1_0_into<P>(w, a...); });
  };
  both.operator()<TQ>();
  both.operator()<TQ16>();
}

TEST_CASE("Q2_K ... Q6_K super-blocks packed in place: the bytes of pack(import), 1-3 threads", "[layout][import]") {
  using Q4K = policy<fmt::q4_k, group<32>>;
  using Q6K = policy<fmt::q6_k, group<16>>;
  using Q6K16 = policy<fmt::q6_k, group<16>, table::lut4<int16_t, false>>;  // 16-k blocks
  check_superblock_pack<Q4K>(
      144, {0, 2}, [](auto... a) { return import_q4_k<Q4K>(a...); }, [](auto... a) { return pack_q4_k<Q4K>(a...); },
      [](auto& w, auto... a) { pack_q4_k_into<Q4K>(w, a...); });
  check_superblock_pack<Q6K>(
      210, {208}, [](auto... a) { return import_q6_k<Q6K>(a...); }, [](auto... a) { return pack_q6_k<Q6K>(a...); },
      [](auto& w, auto... a) { pack_q6_k_into<Q6K>(w, a...); });
  check_superblock_pack<Q6K16>(
      210, {208}, [](auto... a) { return import_q6_k<Q6K16>(a...); }, [](auto... a) { return pack_q6_k<Q6K16>(a...); },
      [](auto& w, auto... a) { pack_q6_k_into<Q6K16>(w, a...); });
  // Q3_K: three planes (a pair and a lone plane) from two fields; also in SME's and HVX's plane order
  auto q3 = [&]<class P>() {
    check_superblock_pack<P>(
        110, {108}, [](auto... a) { return import_q3_k<P>(a...); }, [](auto... a) { return pack_q3_k<P>(a...); },
        [](auto& w, auto... a) { pack_q3_k_into<P>(w, a...); });
  };
  q3.operator()<policy<fmt::q3_k, group<16>>>();
  q3.operator()<policy<fmt::q3_k, group<16>, table::lut4<int8_t, true>, target::sme>>();
  q3.operator()<policy<fmt::q3_k, group<16>, table::lut4<int8_t, true>, target::hvx>>();
  // the min-form bit-plane K-quants: Q5_K (the fifth bit from qh), Q2_K (2 planes, 16-k groups)
  using Q5K = policy<fmt::q5_k, group<32>>;
  using Q2K = policy<fmt::q2_k, group<16>>;
  check_superblock_pack<Q5K>(
      176, {0, 2}, [](auto... a) { return import_q5_k<Q5K>(a...); }, [](auto... a) { return pack_q5_k<Q5K>(a...); },
      [](auto& w, auto... a) { pack_q5_k_into<Q5K>(w, a...); });
  check_superblock_pack<Q2K>(
      84, {80, 82}, [](auto... a) { return import_q2_k<Q2K>(a...); }, [](auto... a) { return pack_q2_k<Q2K>(a...); },
      [](auto& w, auto... a) { pack_q2_k_into<Q2K>(w, a...); });
}

TEST_CASE("llama.cpp blocks packed in place: the importers' errors, and a blob of another shape refused", "[layout][import]") {
  using Q4 = policy<fmt::uint_sym<4>, group<32>>;
  using Q8 = policy<fmt::uint_sym<8>, group<32>>;
  using Q4g64 = policy<fmt::uint_sym<4>, group<64>>;
  std::mt19937_64 rng(17);
  const std::size_t M = 70, K = 96;
  auto b = finite_blocks(rng, M, K, 18);
  thread_pool pool(2);
  CHECK_THROWS_WITH(pack_q4_0<Q4>(b.data(), M, K, b.size() - 1), Catch::Matchers::Contains("holds fewer than"));
  CHECK_THROWS_WITH(pack_q4_0<Q4>(nullptr, M, K), Catch::Matchers::Contains("null"));
  CHECK_THROWS_WITH(pack_q4_0<Q4>(b.data(), M, 80), Catch::Matchers::Contains("multiple of the block size 32"));
  CHECK_THROWS_WITH(pack_q4_0<Q4g64>(b.data(), M, K), Catch::Matchers::Contains("group<32>"));
  CHECK_THROWS_WITH(pack_q8_0<Q4>(b.data(), M, K), Catch::Matchers::Contains("the policy must have the block's format"));
  packed_weights<Q4> other(M + 1, K), empty;
  CHECK_THROWS_WITH(pack_q4_0_into<Q4>(other, b.data(), M, K, b.size()), Catch::Matchers::Contains("71 x 96"));
  CHECK_THROWS_WITH(pack_q4_0_into<Q4>(empty, b.data(), M, K, b.size()), Catch::Matchers::Contains("empty"));
  // a non-finite scale in the last thread's tiles: the error names its block and row
  b[(65 * (K / 32) + 1) * 18 + 1] = 0x7E;  // row 65, block 1: NaN
  CHECK_THROWS_WITH(pack_q4_0<Q4>(b.data(), M, K, b.size(), &pool), Catch::Matchers::Contains("(row 65)"));
  CHECK_THROWS_WITH(pack_q4_0<Q4>(b.data(), M, K, b.size()), Catch::Matchers::Contains("non-finite scale"));
  auto b8 = finite_blocks(rng, M, K, 34);
  b8[(3 * (K / 32)) * 34 + 1] = 0xFC;  // row 3, block 0: -inf
  CHECK_THROWS_WITH(pack_q8_0<Q8>(b8.data(), M, K, b8.size()), Catch::Matchers::Contains("(row 3)"));
}

TEST_CASE("the packer's row-pair planes: the AVX-512 and AVX2 kernels and the scalar twin agree, every code form", "[layout]") {
  std::mt19937_64 rng(23);
  auto check = [&]<detail::code_form F>(std::size_t stride) {
    for (int c = 0; c < 200; ++c) {
      std::vector<uint8_t> a(2 * stride + 64), b(2 * stride + 64);
      for (auto& v : a) v = uint8_t(rng());
      for (auto& v : b) v = uint8_t(rng());
      const bool pad = c % 5 == 0;
      uint8_t want[2][64], got[2][64];
      detail::row_pair_planes_scalar<F>(a.data(), pad ? nullptr : b.data(), stride, want);
      detail::row_pair_planes<F>(a.data(), pad ? nullptr : b.data(), stride, got);
      REQUIRE(std::memcmp(want, got, sizeof want) == 0);
#if defined(LUTKIT_HAVE_PACK_AVX2)
      if (detail::avx2_pack::cpu_has_pack_kernel()) {  // (also where the dispatched kernel is AVX-512's)
        detail::avx2_pack::row_pair_planes<F>(a.data(), pad ? nullptr : b.data(), stride, got);
        REQUIRE(std::memcmp(want, got, sizeof want) == 0);
      }
#endif
      // the scalar twin against the definition: bit i of a nibble is code 4 (2 j + s) + i's bit p
      uint8_t codes[2][64];
      for (int r = 0; r < 2; ++r)
        for (int j = 0; j < 8; ++j) {
          const uint8_t* p = r == 0 ? a.data() : b.data();
          uint64_t x = 0;
          if (r == 0 || !pad) {
            if constexpr (F == detail::code_form::bytes) std::memcpy(&x, p + 8 * j, 8);
            else if constexpr (F == detail::code_form::ggml_nibbles)
              x = detail::ggml_q4_0::codes8(p + (j / 4) * stride, unsigned(8 * j % 32));
            else x = detail::ggml_q8_0::codes8(p + (j / 4) * stride, unsigned(8 * j % 32));
          }
          std::memcpy(codes[r] + 8 * j, &x, 8);
        }
      for (int s = 0; s < 2; ++s)
        for (int j = 0; j < 8; ++j)
          for (int p = 0; p < 8; ++p)
            for (int i = 0; i < 8; ++i) {
              const int r = i / 4, k = 8 * j + 4 * s + i % 4;
              REQUIRE(((want[s][8 * j + p] >> i) & 1) == ((codes[r][k] >> p) & 1));
            }
    }
  };
  check.operator()<detail::code_form::bytes>(0);
  check.operator()<detail::code_form::ggml_nibbles>(18);
  check.operator()<detail::code_form::ggml_int8>(34);  // (reached only by a Q8_0 tensor packed for a 4-bit policy: refused)
}

TEST_CASE("the packer's strided fp16 encoding: the dispatched kernel = f32_to_f16, every value class", "[layout]") {
  std::mt19937 rng(29);
  std::vector<float> v;
  // normal fp16 range, halfway cases, fp16 subnormals and below, overflow, the specials
  std::uniform_real_distribution<float> e(-30.f, 18.f);
  for (int i = 0; i < 4000; ++i) v.push_back((rng() & 1 ? -1.f : 1.f) * std::exp2(e(rng)));
  for (uint32_t h = 0; h < 0x7C00u; h += 37) {  // exact halves and the midpoints between them
    const float a = f16_to_f32(uint16_t(h)), b = f16_to_f32(uint16_t(h + 1));
    v.push_back(a);
    v.push_back(-(a + b) / 2);
  }
  for (float x : {0.f, -0.f, 65504.f, 65519.f, 65520.f, 1e30f, -1e30f, 5.96e-8f, 2.98e-8f, 2.99e-8f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min()})
    v.push_back(x);
  for (std::size_t stride : {std::size_t(1), std::size_t(3), std::size_t(224)}) {
    for (std::size_t n : {std::size_t(1), std::size_t(15), std::size_t(16), std::size_t(64), std::size_t(70)}) {
      for (std::size_t start = 0; start + (n - 1) * stride < v.size(); start += 16 * stride + 5) {
        std::vector<uint8_t> got(2 * n), want(2 * n);
        detail::f16_strided(v.data() + start, stride, n, got.data());
        detail::f16_strided_scalar(v.data() + start, stride, n, want.data());
        REQUIRE(got == want);
#if defined(LUTKIT_HAVE_PACK_AVX2)
        if (detail::avx2_pack::cpu_has_pack_kernel()) {
          detail::avx2_pack::f16_strided(v.data() + start, stride, n, got.data());
          REQUIRE(got == want);
        }
#endif
        for (std::size_t i = 0; i < n; ++i) {
          uint16_t h;
          std::memcpy(&h, want.data() + 2 * i, 2);
          REQUIRE(h == f32_to_f16(v[start + i * stride]));
        }
      }
    }
  }
}

TEST_CASE("the packer's whole-code kernel: 8 rows to 8 step pairs, the AVX2 kernel and the scalar twin agree with the spec", "[layout]") {
  std::mt19937_64 rng(31);
  auto check = [&]<detail::code_form F, class P>(std::size_t stride, unsigned code_mask) {
    constexpr int PL = P::spec.planes;
    static_assert(detail::whole_code_rows_side_by_side<P>());
    const std::size_t pair_bytes = std::size_t(P::spec.step_pair_bytes());
    for (int c = 0; c < 40; ++c) {
      // 8 rows of 64 codes in form F at rows r0 .. r0 + 7 of a tile
      const int r0 = 8 * int(rng() % std::size_t(P::spec.rows_per_tile / 8));
      std::vector<std::vector<uint8_t>> rows(8, std::vector<uint8_t>(2 * stride + 64));
      for (auto& row : rows)
        for (auto& v : row) v = uint8_t(F == detail::code_form::bytes ? rng() & code_mask : rng());
      const uint8_t* p[8];
      for (int i = 0; i < 8; ++i) p[i] = rows[std::size_t(i)].data() + (F == detail::code_form::bytes ? 0 : 2);
      const int o0 = P::spec.code_byte_in_step_pair(r0, 0, 0), o1 = P::spec.code_byte_in_step_pair(r0, 1, 0);
      std::vector<uint8_t> want(8 * pair_bytes, 0xA5), got(8 * pair_bytes, 0xA5);
      uint8_t *wp[8], *gp[8];
      for (int j = 0; j < 8; ++j) {
        wp[j] = want.data() + std::size_t(j) * pair_bytes;
        gp[j] = got.data() + std::size_t(j) * pair_bytes;
      }
      detail::whole_codes_rows8_scalar<F, PL>(p, stride, wp, o0, o1);
      detail::whole_codes_rows8<F, PL>(p, stride, gp, o0, o1);
      REQUIRE(want == got);
#if defined(LUTKIT_HAVE_PACK_AVX2)
      if (detail::avx2_pack::cpu_has_pack_kernel()) {
        std::fill(got.begin(), got.end(), uint8_t(0xA5));
        detail::avx2_pack::whole_codes_rows8<F, PL>(p, stride, gp, o0, o1);
        REQUIRE(want == got);
      }
#endif
      // the twin against the spec: code i of step s of step pair j of row r0 + r, from its form
      for (int r = 0; r < 8; ++r) {
        uint8_t codes[64];
        for (int k = 0; k < 64; ++k) {
          const uint8_t* b = p[r] + (k / 32) * stride;
          if constexpr (F == detail::code_form::bytes) codes[k] = p[r][k];
          else if constexpr (F == detail::code_form::ggml_nibbles) codes[k] = uint8_t(k % 32 < 16 ? b[k % 16] & 15 : b[k % 16] >> 4);
          else codes[k] = uint8_t(b[k % 32] ^ 0x80);
        }
        for (int j = 0; j < 8; ++j)
          for (int s = 0; s < 2; ++s)
            for (int i = 0; i < 4; ++i) {
              const uint8_t byte = wp[j][P::spec.code_byte_in_step_pair(r0 + r, s, i)];
              const unsigned code = PL == 8 ? byte : (byte >> P::spec.code_shift(s)) & 15u;
              REQUIRE(code == codes[8 * j + 4 * s + i]);
            }
      }
      // bytes of other rows untouched
      for (std::size_t j = 0; j < 8; ++j)
        for (std::size_t b = 0; b < pair_bytes; ++b) {
          const int ob = int(b);
          const bool mine = (ob >= o0 && ob < o0 + 32) || (PL == 8 && ob >= o1 && ob < o1 + 32);
          if (!mine) REQUIRE(want[j * pair_bytes + b] == 0xA5);
        }
    }
  };
  using Q4K = policy<fmt::q4_k, group<32>>;
  using Q41 = policy<fmt::q4_1, group<32>>;
  using Q8 = policy<fmt::uint_sym<8>, group<32>>;
  check.operator()<detail::code_form::bytes, Q4K>(0, 0x0F);
  check.operator()<detail::code_form::ggml_nibbles, Q41>(20, 0xFF);
  check.operator()<detail::code_form::bytes, Q8>(0, 0xFF);
  check.operator()<detail::code_form::ggml_int8, Q8>(34, 0xFF);
}

TEST_CASE("the packer's tile kernel: 32 row pairs to 8 step pairs, the AVX-512 and AVX2 kernels and the scalar twin agree", "[layout]") {
  using Q4 = policy<fmt::uint_sym<4>, group<32>>;
  std::mt19937_64 rng(29);
  auto check = [&]<detail::code_form F, class P>(std::size_t stride, unsigned code_mask) {
    constexpr int PL = P::spec.planes;
    static_assert(detail::paired_plane_chunks<P>());
    int off[8] = {};
    for (int q = 0; 2 * q < PL; ++q)
      for (int s = 0; s < 2; ++s) off[2 * q + s] = P::spec.index_byte_in_step_pair(0, 2 * q, s);
    const std::size_t pair_bytes = std::size_t(P::spec.step_pair_bytes());
    for (int c = 0; c < 40; ++c) {
      // 64 rows of codes in form F (64 codes each), some partner rows padded
      std::vector<std::vector<uint8_t>> rows(64, std::vector<uint8_t>(2 * stride + 64));
      for (auto& row : rows)
        for (std::size_t i = 0; i < row.size(); ++i) {
          const uint8_t v = uint8_t(rng());
          // bytes form: codes of the format's width; block forms: a block's 2 scale bytes first
          row[i] = F == detail::code_form::bytes ? uint8_t(v & code_mask) : v;
        }
      const uint8_t *a[32], *b[32];
      const int pads = c % 3 == 0 ? int(rng() % 32) : 0;
      for (int r = 0; r < 32; ++r) {
        a[r] = rows[std::size_t(r)].data() + (F == detail::code_form::bytes ? 0 : 2);
        b[r] = r >= 32 - pads ? nullptr : rows[std::size_t(r) + 32].data() + (F == detail::code_form::bytes ? 0 : 2);
      }
      std::vector<uint8_t> want(8 * pair_bytes, 0xA5), got(8 * pair_bytes, 0xA5);
      uint8_t *wp[8], *gp[8];
      for (int j = 0; j < 8; ++j) {
        wp[j] = want.data() + std::size_t(j) * pair_bytes;
        gp[j] = got.data() + std::size_t(j) * pair_bytes;
      }
      detail::row_pairs_step_pairs8_scalar<F, PL>(a, b, stride, wp, off);
      detail::row_pairs_step_pairs8<F, PL>(a, b, stride, gp, off);
      REQUIRE(want == got);
#if defined(LUTKIT_HAVE_PACK_AVX2)
      if (detail::avx2_pack::cpu_has_pack_kernel()) {  // (also where the dispatched kernel is AVX-512's)
        std::fill(got.begin(), got.end(), uint8_t(0xA5));
        detail::avx2_pack::row_pairs_step_pairs8<F, PL>(a, b, stride, gp, off);
        REQUIRE(want == got);
      }
#endif
      // the twin against the row-pair planes (checked against the bit definition above) and
      // the spec's byte of every row pair, plane and step
      for (int r = 0; r < 32; ++r) {
        uint8_t planes[2][64];
        detail::row_pair_planes_scalar<F>(a[r], b[r], stride, planes);
        for (int j = 0; j < 8; ++j)
          for (int p = 0; p < PL; ++p)
            for (int s = 0; s < 2; ++s)
              REQUIRE(wp[j][P::spec.index_byte_in_step_pair(r, p, s)] == planes[s][8 * j + p]);
      }
    }
  };
  check.operator()<detail::code_form::bytes, Q4>(0, 0x0F);
  check.operator()<detail::code_form::ggml_nibbles, Q4>(18, 0xFF);
  // 2, 3, 5 and 6 planes (Q2_K and TQ2_0, Q3_K, Q5_0 and Q5_K, Q6_K): the AVX2 kernel's
  // plane-pair path, and its last single plane
  check.operator()<detail::code_form::bytes, policy<fmt::q2_k, group<16>>>(0, 0x03);
  check.operator()<detail::code_form::bytes, policy<fmt::uint_asym<2>, group<256>>>(0, 0x03);
  check.operator()<detail::code_form::bytes, policy<fmt::q3_k, group<16>>>(0, 0x07);
  check.operator()<detail::code_form::bytes, policy<fmt::uint_sym<5>, group<32>>>(0, 0x1F);
  check.operator()<detail::code_form::bytes, policy<fmt::q5_k, group<32>>>(0, 0x1F);
  check.operator()<detail::code_form::bytes, policy<fmt::q6_k, group<16>>>(0, 0x3F);
}
