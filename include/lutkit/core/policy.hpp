// lutkit — the policy: {format, group shape, table layout, target}. Its runtime-visible
// identity is a plain aggregate (policy_desc) reflected with Boost.PFR into the canonical name
// used by test and benchmark labels and hashed into every packed blob's header.
#pragma once
#include <boost/pfr.hpp>
#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>

#include "concepts.hpp"
#include "target.hpp"
#include "tiling.hpp"

namespace lutkit {

// One token type per field, so that PFR's field walk can print each in its own grammar:
//   w<bits>|tern _ g<group>|gch|gten _ sym|asym _ lut<g><i8|i16>[m][t<whole planes>] _ <target> _ b<block_k>
namespace name_token {
struct weight {
  int bits;
  bool ternary;
  const char* book = nullptr;  // codebook formats: w4nf4, w4fp4, w4iq4nl
  std::string str() const {
    return ternary ? std::string("tern") : std::string("w").append(std::to_string(bits)).append(book ? book : "");
  }
};
struct grouping {
  int group_k;
  bool tensor;
  std::string str() const {
    return group_k > 0 ? std::string("g").append(std::to_string(group_k)) : std::string(tensor ? "gten" : "gch");
  }
};
struct symmetry {
  bool asymmetric;
  std::string str() const { return asymmetric ? "asym" : "sym"; }
};
struct table_layout {
  int index_bits;  // 0: the format never builds LUT tables (8 bits, codebooks, Q4NX): "notab"
  int entry_bits;
  bool mirror;
  int whole_planes = 0;  // int16 tables summed whole for the top planes only: "t<planes>"
  std::string str() const {
    if (index_bits == 0) return "notab";
    std::ostringstream os;
    os << "lut" << index_bits << "i" << entry_bits << (mirror ? "m" : "");
    if (whole_planes > 0) os << "t" << whole_planes;
    return os.str();
  }
};
struct target_name {
  const char* name;
  std::string str() const { return name; }
};
struct block {
  int block_k;
  std::string str() const { return std::string("b").append(std::to_string(block_k)); }
};
}  // namespace name_token

struct policy_desc {
  name_token::weight weight;
  name_token::grouping grouping;
  name_token::symmetry symmetry;
  name_token::table_layout table;
  name_token::target_name target;
  name_token::block block;
};

inline std::string canonical_name(const policy_desc& d) {
  std::ostringstream out;
  bool first = true;
  boost::pfr::for_each_field(d, [&](const auto& field) {
    out << (first ? "" : "_") << field.str();
    first = false;
  });
  return out.str();
}

// FNV-1a 64 of the canonical name and the layout version: what a blob header records.
inline constexpr uint32_t layout_version = 5;
inline uint64_t policy_hash(const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](unsigned char c) { h = (h ^ c) * 1099511628211ull; };
  for (char c : name) mix(static_cast<unsigned char>(c));
  for (int i = 0; i < 4; ++i) mix(static_cast<unsigned char>(layout_version >> (8 * i)));
  return h;
}

namespace table {
// The table layout of a policy that names none: the one whose LUT-GEMV is at least as accurate as
// llama.cpp's arithmetic on the same weights, activations without outlier channels included
// (docs/llama_formats.md, "Accuracy"). Mirrored int16 tables for the bit-plane formats: with int8
// tables, whose entries sum four activations on one scale per block, the error measured 1.1-1.8x
// llama.cpp's (Q4_0 1.23, Q5_0 1.25, Q5_1 1.40, Q5_K 1.08, W2 / W3 g32 1.44, W4 g64 1.81); int16
// tables 0.00-0.01x; from 3 bits up the lowest plane pair reads the entries' high bytes alone
// (lut4's WholePlanes = bits - 2: 0.15-0.47x llama.cpp's error on its types, a quarter or a fifth
// fewer lookups than every plane whole). Mirrored int8 tables for ternary weights (their only layout) and for the
// K-quants with 16-weight groups (Q2_K, Q3_K, Q6_K: 0.83-0.93x llama.cpp's q8_K arithmetic). Formats the LUT-GEMV
// cannot run (8 bits, codebooks, Q4NX, Q4_1, Q4_K) ignore it, and their blobs do not record it. lut4<int8_t, true> is
// the faster opt-in.
template <class Fmt, class Group>
using default_for =
    std::conditional_t<format_traits<Fmt>::lut_gemv_capable && !format_traits<Fmt>::is_ternary &&
                           !(format_traits<Fmt>::super_params && Group::group_k == 16),
                       lut4<int16_t, true, (format_traits<Fmt>::planes >= 3 ? format_traits<Fmt>::planes - 2 : 0)>,
                       lut4<int8_t, true>>;
}  // namespace table

// Table: the LUT-GEMV's activation tables (table::default_for when not named).
template <class Fmt, class Group, class Table = table::default_for<Fmt, Group>, class Target = target::host>
struct policy {
  using format = Fmt;
  using group_shape = Group;
  using table_layout = Table;
  using target_type = Target;
  using fmt_traits = format_traits<Fmt>;

  static_assert(!fmt_traits::is_ternary || Group::group_k == 0,
                "lutkit: ternary weights use per_tensor or per_channel scales (3-weight steps "
                "cannot tile a power-of-two group)");

  static constexpr tiling_spec spec = make_tiling_spec<Fmt, Group, Table, Target>();
  static_assert(spec.valid(), "lutkit: tiling spec violates its constraints (int16 bound, block/group)");
  // false for codebooks and 8-bit formats: the LUT-GEMV entry points reject such policies
  static constexpr bool lut_gemv_capable = fmt_traits::lut_gemv_capable;

  static constexpr const target_descriptor& target = Target::desc;

  static policy_desc desc() {
    return policy_desc{{fmt_traits::bits, fmt_traits::is_ternary, fmt_traits::book_name},
                       {Group::group_k, Group::tensor},
                       {fmt_traits::asymmetric},
                       fmt_traits::lut_gemv_capable ? name_token::table_layout{Table::index_bits, Table::entry_bits,
                                                                               spec.mirror, spec.whole_planes}
                                                    : name_token::table_layout{0, 0, false},
                       {Target::desc.name},
                       {spec.block_k}};
  }
  static const std::string& name() {
    static const std::string n = canonical_name(desc());
    return n;
  }
  static uint64_t hash() {
    static const uint64_t h = policy_hash(name());
    return h;
  }
};

namespace detail {
// Called by every LUT-GEMV entry point (tables, kernels, both backends): a compile-time rejection
// of the formats whose weights are not linear in their code bits or overflow the int16 bound.
template <class P>
constexpr void require_lut_gemv_capable() {
  using FT = typename P::fmt_traits;
  static_assert(!FT::is_codebook,
                "lutkit: codebook formats are not linear in their bits: use fused_dq_gemv or dequant_gemm");
  static_assert(FT::is_codebook || FT::lut_gemv_capable,
                "lutkit: 8-bit formats overflow the LUT-GEMV int16 accumulators: use fused_dq_gemv or dequant_gemm");
}
}  // namespace detail

template <class T>
struct is_policy : std::false_type {};
template <class F, class G, class T, class X>
struct is_policy<policy<F, G, T, X>> : std::true_type {};

}  // namespace lutkit
