// The AIE vector API model (include/lutkit/targets/aie/aie.hpp): each operation's documented
// semantics, bit for bit where it is integer, against an independent formulation; the profiles'
// widths and native mmul shapes; alignment, bank and table-layout checks; the trace's slots.
// Every check is a function of the planted fault: it passes with none, and the fault it targets
// makes it fail ("planted faults" below).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>

#include <lutkit/targets/aie/aie.hpp>

namespace aie = lutkit::aie;
using aie::fault;

namespace {

template <class P>
std::unique_ptr<aie::core<P>> make_core(fault f = fault::none) {
  auto c = std::make_unique<aie::core<P>>();
  c->flt = f;
  return c;
}

// x / 2^s rounded per mode, computed in long double (exact for |x| < 2^60) with the C library's
// rounding functions: a formulation independent of the model's integer one
long double ref_round(int64_t x, int s, aie::rounding m) {
  const long double q = std::ldexp((long double)x, -s);
  const long double f = std::floor(q), frac = q - f;
  using R = aie::rounding;
  switch (m) {
    case R::floor: return f;
    case R::ceil: return std::ceil(q);
    case R::sym_floor: return std::trunc(q);
    case R::sym_ceil: return q < 0 ? std::floor(q) : std::ceil(q);
    default: break;
  }
  if (frac < 0.5L) return f;
  if (frac > 0.5L) return f + 1;
  switch (m) {
    case R::neg_inf: return f;
    case R::pos_inf: return f + 1;
    case R::sym_zero: return q < 0 ? f + 1 : f;
    case R::sym_inf: return q < 0 ? f : f + 1;
    case R::conv_even: return std::fmod(f, 2.0L) == 0 ? f : f + 1;
    case R::conv_odd: return std::fmod(f, 2.0L) == 0 ? f + 1 : f;
    default: return f;
  }
}
long double ref_saturate(long double v, int bits, aie::saturation s) {
  const long double hi = std::ldexp(1.0L, bits - 1) - 1, lo = s == aie::saturation::symmetric ? -hi : -hi - 1;
  if (s == aie::saturation::none) {  // keep the low `bits` bits, two's complement
    const long double m = std::ldexp(1.0L, bits);
    long double r = std::fmod(v, m);
    if (r < 0) r += m;
    return r > hi ? r - m : r;
  }
  return v > hi ? hi : (v < lo ? lo : v);
}

const aie::rounding all_roundings[] = {aie::rounding::floor,    aie::rounding::ceil,      aie::rounding::sym_floor,
                                        aie::rounding::sym_ceil, aie::rounding::neg_inf,   aie::rounding::pos_inf,
                                        aie::rounding::sym_zero, aie::rounding::sym_inf,   aie::rounding::conv_even,
                                        aie::rounding::conv_odd};
const aie::saturation all_saturations[] = {aie::saturation::none, aie::saturation::saturate, aie::saturation::symmetric};

// SRS acc32 -> int8 / int16 and acc64 -> int32 under every mode, random lanes plus halfway cases
template <class P>
bool check_srs(fault f) {
  auto c = make_core<P>(f);
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> d32(-(int64_t(1) << 31), (int64_t(1) << 31) - 1);
  bool ok = true;
  for (auto m : all_roundings)
    for (auto s : all_saturations)
      for (int shift : {0, 1, 3, 7, 12}) {
        c->rnd = m;
        c->sat = s;
        aie::accum<aie::acc_kind::acc32, 16> a;
        for (int i = 0; i < 16; ++i) {
          int64_t x = d32(rng) >> (i % 3 == 0 ? 16 : 0);
          if (i % 4 == 1 && shift > 0) x = ((x >> shift) << shift) + (int64_t(1) << (shift - 1));  // halfway
          a.v[i] = aie::detail::wrap32(x);
        }
        const auto v8 = aie::srs<int8_t>(*c, a, shift);
        const auto v16 = aie::srs<int16_t>(*c, a, shift);
        aie::store_srs<int16_t>(*c, 0, a, shift);  // the store port's SRS: the same lanes
        ok = ok && std::memcmp(c->dm, v16.v, sizeof(v16.v)) == 0;
        for (int i = 0; i < 16; ++i) {
          const long double r = ref_round(a.v[i], shift, m);
          ok = ok && (long double)v8.v[i] == ref_saturate(r, 8, s) && (long double)v16.v[i] == ref_saturate(r, 16, s);
        }
      }
  return ok && c->st == aie::status::ok;
}

template <class P>
bool check_ups(fault f) {
  auto c = make_core<P>(f);
  aie::vec<int16_t, 16> v;
  for (int i = 0; i < 16; ++i) v.v[i] = int16_t(i * 2047 - 16000);
  const auto a = aie::ups<aie::acc_kind::acc32>(*c, v, 5);
  const auto b = aie::ups<aie::acc_kind::acc64>(*c, v, 20);
  aie::store(*c, 0, v);
  const auto l = aie::load_ups<aie::acc_kind::acc32, int16_t, 16>(*c, 0, 5);  // the load port's UPS
  bool ok = true;
  for (int i = 0; i < 16; ++i)
    ok = ok && a.v[i] == int64_t(v.v[i]) * 32 && b.v[i] == int64_t(v.v[i]) * (int64_t(1) << 20) && l.v[i] == a.v[i];
  return ok;
}

template <class P>
bool check_unpack(fault f) {
  auto c = make_core<P>(f);
  const uint32_t off = c->alloc(64);
  for (int i = 0; i < 64; ++i) c->dm[off + uint32_t(i)] = uint8_t(i * 37 + 11);
  const auto s4 = aie::load<aie::i4, 128>(*c, off);
  const auto u4 = aie::load<aie::u4, 128>(*c, off);
  const auto s8 = aie::unpack(*c, s4);
  const auto u8 = aie::unpack(*c, u4);
  const auto s16 = aie::unpack(*c, aie::half(s8, 0));
  bool ok = true;
  for (int i = 0; i < 128; ++i) {
    const int nib = (c->dm[off + uint32_t(i / 2)] >> (4 * (i % 2))) & 15;
    ok = ok && s8.v[i] == (nib >= 8 ? nib - 16 : nib) && u8.v[i] == nib;
    if (i < 64) ok = ok && s16.v[i] == s8.v[i];
  }
  return ok && c->st == aie::status::ok;
}

template <class P>
bool check_shuffles(fault f) {
  auto c = make_core<P>(f);
  aie::vec<int16_t, 32> a, b;
  for (int i = 0; i < 32; ++i) a.v[i] = int16_t(i), b.v[i] = int16_t(100 + i);
  using M = aie::shuffle_mode;
  const auto fe = aie::shuffle(*c, a, b, M::filter_even), fo = aie::shuffle(*c, a, b, M::filter_odd);
  const auto zl = aie::shuffle(*c, a, b, M::zip_lo), zh = aie::shuffle(*c, a, b, M::zip_hi);
  const auto ul = aie::shuffle(*c, zl, zh, M::unzip_lo), uh = aie::shuffle(*c, zl, zh, M::unzip_hi);
  bool ok = true;
  for (int i = 0; i < 16; ++i) {
    ok = ok && fe.v[i] == 2 * i && fe.v[16 + i] == 100 + 2 * i && fo.v[i] == 2 * i + 1 && fo.v[16 + i] == 101 + 2 * i;
    ok = ok && zl.v[2 * i] == i && zl.v[2 * i + 1] == 100 + i && zh.v[2 * i] == 16 + i && zh.v[2 * i + 1] == 116 + i;
  }
  for (int i = 0; i < 32; ++i) ok = ok && ul.v[i] == a.v[i] && uh.v[i] == b.v[i];  // unzip inverts zip
  return ok;
}

template <class P>
bool check_broadcast(fault f) {
  auto c = make_core<P>(f);
  const auto v = aie::broadcast<int8_t, 64>(*c, int8_t(-5));
  const auto a = aie::acc_broadcast<aie::acc_kind::accfloat, 16>(*c, 2.5f);
  bool ok = true;
  for (int i = 0; i < 64; ++i) ok = ok && v.v[i] == -5;
  for (int i = 0; i < 16; ++i) ok = ok && a.v[i] == 2.5f;
  return ok;
}

// int8 x int4 (the profile's shape), int8 x int8, and bf16 (aie2) against the naive product
template <class P>
bool check_mmul(fault f) {
  auto c = make_core<P>(f);
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int> d8(-128, 127), d4(-8, 7);
  bool ok = true;
  {
    constexpr int M = 4, K = 16, N = std::is_same_v<P, aie::aie2> ? 8 : 16;
    aie::vec<int8_t, M * K> a;
    aie::vec<aie::i4, K * N> b;
    for (auto& x : a.v) x = int8_t(d8(rng));
    for (auto& x : b.v) x = int8_t(d4(rng));
    aie::accum<aie::acc_kind::acc32, M * N> acc;
    for (int i = 0; i < M * N; ++i) acc.v[i] = i * 1000 - 7;
    const auto acc0 = acc;
    aie::mmul_mac<M, K, N, int8_t, aie::i4>(*c, acc, a, b);
    aie::mmul_mac<M, K, N, int8_t, aie::i4>(*c, acc, a, b);
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        int64_t s = 0;
        for (int k = 0; k < K; ++k) s += int64_t(a.v[m * K + k]) * b.v[k * N + n];
        ok = ok && acc.v[m * N + n] == acc0.v[m * N + n] + 2 * s;
      }
  }
  {
    aie::vec<int8_t, 32> a;
    aie::vec<int8_t, 64> b;
    for (auto& x : a.v) x = int8_t(d8(rng));
    for (auto& x : b.v) x = int8_t(d8(rng));
    aie::accum<aie::acc_kind::acc32, 32> acc;
    acc.v[0] = (int64_t(1) << 31) - 1;  // wraps
    const auto acc0 = acc;
    aie::mmul_mac<4, 8, 8, int8_t, int8_t>(*c, acc, a, b);
    for (int m = 0; m < 4; ++m)
      for (int n = 0; n < 8; ++n) {
        int64_t s = acc0.v[m * 8 + n];
        for (int k = 0; k < 8; ++k) s += int64_t(a.v[m * 8 + k]) * b.v[k * 8 + n];
        ok = ok && acc.v[m * 8 + n] == int64_t(int32_t(uint32_t(s)));
      }
  }
  if constexpr (std::is_same_v<P, aie::aie2>) {
    std::normal_distribution<float> nd;
    aie::vec<aie::bf16, 32> a, b;
    for (auto& x : a.v) x = lutkit::f32_to_bf16(nd(rng));
    for (auto& x : b.v) x = lutkit::f32_to_bf16(nd(rng));
    aie::accum<aie::acc_kind::accfloat, 16> acc;
    aie::mmul_mac<4, 8, 4, aie::bf16, aie::bf16>(*c, acc, a, b);
    for (int m = 0; m < 4; ++m)
      for (int n = 0; n < 4; ++n) {
        double s = 0, sa = 0;
        for (int k = 0; k < 8; ++k) {
          const double p = double(lutkit::bf16_to_f32(a.v[m * 8 + k])) * lutkit::bf16_to_f32(b.v[k * 4 + n]);
          s += p, sa += std::fabs(p);
        }
        ok = ok && std::fabs(acc.v[m * 4 + n] - s) <= 8 * 0x1p-24 * sa + 1e-30;
      }
  }
  return ok && c->st == aie::status::ok;
}

// parallel_lookup: values, step_bits / bias, saturation at both ends, one load-pair issue per
// lut_accesses lookups
template <class P>
bool check_lookup(fault f) {
  auto c = make_core<P>(f);
  int16_t vals[40];
  for (int i = 0; i < 40; ++i) vals[i] = int16_t(i * i - 300);
  const auto t = aie::make_lut(*c, vals, 40, 2, 3);
  if (!aie::lut_check(*c, t)) return false;
  aie::vec<int8_t, 32> idx;
  for (int i = 0; i < 32; ++i) idx.v[i] = int8_t(i * 5 - 40);
  c->loop_begin("lookup");
  const auto r = aie::parallel_lookup(*c, t, idx, 1, 10);
  c->loop_end();
  bool ok = c->tr.r[c->tr.find("lookup")].ops[int(aie::slot::ld)] == uint64_t(2 * 32 / P::lut_accesses);
  for (int i = 0; i < 32; ++i) {
    int j = ((i * 5 - 40) >> 1) + 10;
    j = j < 0 ? 0 : (j > 39 ? 39 : j);
    ok = ok && r.v[i] == vals[j];
  }
  return ok && c->st == aie::status::ok;
}

// the integer element-wise operations on int8 (wrapping), uint8 and int32 lanes against C++'s
// two's-complement arithmetic
template <class P>
bool check_int_ops(fault f) {
  auto c = make_core<P>(f);
  std::mt19937_64 rng(17);
  std::uniform_int_distribution<int> d8(-128, 127);
  aie::vec<int8_t, 64> a, b;
  for (int i = 0; i < 64; ++i) a.v[i] = int8_t(d8(rng)), b.v[i] = int8_t(d8(rng));
  a.v[0] = 127, b.v[0] = 1;  // wraps to -128
  const auto s = aie::add(*c, a, b), d = aie::sub(*c, a, b), m = aie::max(*c, a, b);
  const auto n = aie::band(*c, a, b), o = aie::bor(*c, a, b), x = aie::bxor(*c, a, b);
  const auto l = aie::shl(*c, a, 3), r = aie::shr(*c, a, 2);
  const auto g = aie::gt(*c, a, b);
  const auto sel = aie::select(*c, g, a, b);
  bool ok = s.v[0] == -128;
  for (int i = 0; i < 64; ++i) {
    const int A = a.v[i], B = b.v[i];
    ok = ok && s.v[i] == int8_t(A + B) && d.v[i] == int8_t(A - B) && m.v[i] == (A > B ? A : B);
    ok = ok && n.v[i] == int8_t(A & B) && o.v[i] == int8_t(A | B) && x.v[i] == int8_t(A ^ B);
    ok = ok && l.v[i] == int8_t(uint8_t(A) << 3) && r.v[i] == int8_t(A >> 2) && g.m[i] == (A > B) && sel.v[i] == (A > B ? A : B);
  }
  aie::vec<uint8_t, 64> u;
  for (int i = 0; i < 64; ++i) u.v[i] = uint8_t(200 + i);
  const auto ur = aie::shr(*c, u, 3);  // logical
  for (int i = 0; i < 64; ++i) ok = ok && ur.v[i] == uint8_t(u.v[i] >> 3);
  aie::vec<int32_t, 16> w;
  for (int i = 0; i < 16; ++i) w.v[i] = int32_t(i * 70000 - 500000);
  const auto nw = aie::narrow<int16_t>(*c, w);  // truncating
  for (int i = 0; i < 16; ++i) ok = ok && nw.v[i] == int16_t(uint16_t(uint32_t(w.v[i])));
  return ok;
}

// fp32 lanes: adds, max, products, the reciprocal, and the conversions (int32 -> fp32 rounding to
// nearest, fp32 -> int32 floor with NaN to the minimum and saturation, bf16 round to nearest even)
template <class P>
bool check_float_ops(fault f) {
  auto c = make_core<P>(f);
  std::mt19937_64 rng(19);
  std::normal_distribution<float> nd(0.f, 100.f);
  aie::accum<aie::acc_kind::accfloat, 16> a, b;
  for (int i = 0; i < 16; ++i) a.v[i] = nd(rng), b.v[i] = nd(rng);
  b.v[1] = 0.f;
  const auto s = aie::fadd(*c, a, b), m = aie::fmax(*c, a, b), p = aie::fmul(*c, a, b), r = aie::finv(*c, b);
  aie::vec<aie::bf16, 16> ha, hb;
  for (int i = 0; i < 16; ++i) ha.v[i] = lutkit::f32_to_bf16(a.v[i]), hb.v[i] = lutkit::f32_to_bf16(b.v[i]);
  const auto q = aie::mul_bf16(*c, ha, hb);
  bool ok = true;
  for (int i = 0; i < 16; ++i) {
    ok = ok && s.v[i] == a.v[i] + b.v[i] && m.v[i] == std::max(a.v[i], b.v[i]) && p.v[i] == a.v[i] * b.v[i];
    ok = ok && (i == 1 ? std::isinf(r.v[i]) : r.v[i] == 1.f / b.v[i]);
    ok = ok && double(q.v[i]) == double(lutkit::bf16_to_f32(ha.v[i])) * double(lutkit::bf16_to_f32(hb.v[i]));  // exact
  }
  aie::accum<aie::acc_kind::acc32, 16> iv;
  const int64_t ints[16] = {0, 1, -1, 16777217, -16777219, 2147483647, -2147483647 - 1, 123456789, 5, -5, 7, 8, 9, 10, 11, 12};
  for (int i = 0; i < 16; ++i) iv.v[i] = ints[i];
  const auto fv = aie::to_float(*c, iv);
  for (int i = 0; i < 16; ++i) ok = ok && fv.v[i] == float(int32_t(ints[i]));
  aie::accum<aie::acc_kind::accfloat, 16> fl;
  const float fs[16] = {0.f, 0.5f, -0.5f, 1.999f, -1.001f, -0.f, 3e9f, -3e9f, std::nanf(""), 7.f, -7.f, 1e-30f, -1e-30f, 2.5f, -2.5f, 100.25f};
  for (int i = 0; i < 16; ++i) fl.v[i] = fs[i];
  const auto iw = aie::float_to_int_floor(*c, fl);
  const int32_t want[16] = {0, 0, -1, 1, -2, 0, 2147483647, -2147483647 - 1, -2147483647 - 1, 7, -7, 0, -1, 2, -3, 100};
  for (int i = 0; i < 16; ++i) ok = ok && iw.v[i] == want[i];
  const auto bf = aie::to_bf16(*c, a);
  const auto back = aie::from_bf16(*c, bf);
  for (int i = 0; i < 16; ++i) ok = ok && bf.v[i] == lutkit::f32_to_bf16(a.v[i]) && back.v[i] == lutkit::bf16_to_f32(bf.v[i]);
  return ok;
}

// vector stores and loads: bytes, int4 nibble order, accumulator lanes
template <class P>
bool check_memory(fault f) {
  auto c = make_core<P>(f);
  aie::vec<int8_t, 64> v;
  aie::vec<aie::i4, 128> n;
  for (int i = 0; i < 64; ++i) v.v[i] = int8_t(i * 3 - 90);
  for (int i = 0; i < 128; ++i) n.v[i] = int8_t(i % 16 - 8);
  aie::store(*c, 64, v);
  aie::store(*c, 128, n);
  bool ok = std::memcmp(c->dm + 64, v.v, 64) == 0;
  for (int i = 0; i < 128; ++i) ok = ok && ((c->dm[128 + i / 2] >> (4 * (i % 2))) & 15) == ((i % 16 - 8) & 15);
  const auto n2 = aie::load<aie::i4, 128>(*c, 128);
  for (int i = 0; i < 128; ++i) ok = ok && n2.v[i] == n.v[i];
  aie::accum<aie::acc_kind::accfloat, 16> a;
  for (int i = 0; i < 16; ++i) a.v[i] = float(i) * 0.25f - 1.f;
  aie::store_acc(*c, 256, a);
  const auto a2 = aie::load_acc<aie::acc_kind::accfloat, 16>(*c, 256);
  for (int i = 0; i < 16; ++i) ok = ok && a2.v[i] == a.v[i];
  return ok && c->st == aie::status::ok;
}

// bfp16 (the model's rule): 8 values share the largest exponent, 7 magnitude bits below it,
// truncated toward zero
template <class P>
bool check_bfp16(fault f) {
  auto c = make_core<P>(f);
  std::mt19937_64 rng(23);
  std::normal_distribution<float> nd(0.f, 1.f);
  aie::vec<aie::bf16, 64> v;
  for (int i = 0; i < 64; ++i) v.v[i] = lutkit::f32_to_bf16(nd(rng) * (i % 8 == 0 ? 30.f : 1.f));
  const auto q = aie::to_bfp16(*c, v);
  bool ok = true;
  for (int b = 0; b < 64; b += 8) {
    double amax = 0;
    for (int i = 0; i < 8; ++i) amax = std::max(amax, std::fabs(double(lutkit::bf16_to_f32(v.v[b + i]))));
    const double unit = std::ldexp(1.0, std::ilogb(amax) - 6);
    for (int i = 0; i < 8; ++i) {
      const double x = lutkit::bf16_to_f32(v.v[b + i]);
      ok = ok && double(lutkit::bf16_to_f32(q.v[b + i])) == std::trunc(x / unit) * unit;
    }
  }
  return ok;
}

}  // namespace

TEST_CASE("aie model: element-wise, conversion, memory and bfp16 operations", "[aie_model]") {
  CHECK(check_int_ops<aie::aie2>(fault::none));
  CHECK(check_float_ops<aie::aie2>(fault::none));
  CHECK(check_memory<aie::aie2>(fault::none));
  CHECK(check_memory<aie::aie2p>(fault::none));
  CHECK(check_bfp16<aie::aie2p>(fault::none));
}

TEST_CASE("aie model: profile widths and the native mmul shapes", "[aie_model]") {
  STATIC_REQUIRE(aie::native_mmul_v<aie::aie2, 4, 16, 8, int8_t, aie::i4>);
  STATIC_REQUIRE(aie::native_mmul_v<aie::aie2, 4, 8, 4, aie::bf16, aie::bf16>);
  STATIC_REQUIRE(aie::native_mmul_v<aie::aie2, 4, 8, 8, int8_t, int8_t>);
  STATIC_REQUIRE(!aie::native_mmul_v<aie::aie2, 4, 16, 16, int8_t, aie::i4>);  // aie2p's shape
  STATIC_REQUIRE(!aie::native_mmul_v<aie::aie2, 8, 8, 8, int8_t, int8_t>);
  STATIC_REQUIRE(!aie::native_mmul_v<aie::aie2, 4, 8, 8, aie::bf16, aie::bf16>);
  STATIC_REQUIRE(aie::native_mmul_v<aie::aie2p, 4, 16, 16, int8_t, aie::i4>);
  STATIC_REQUIRE(aie::native_mmul_v<aie::aie2p, 8, 8, 8, aie::bfp16, aie::bfp16>);
  STATIC_REQUIRE(!aie::native_mmul_v<aie::aie2p, 4, 8, 4, aie::bf16, aie::bf16>);  // emulated on XDNA 2
  STATIC_REQUIRE(!aie::native_mmul_v<aie::aie2p, 4, 16, 8, int8_t, aie::i4>);
  STATIC_REQUIRE(aie::vec<int8_t, 128>::bits == 1024);
  STATIC_REQUIRE(aie::accum<aie::acc_kind::acc32, 32>::bits == aie::aie2::acc_bits_max);
  STATIC_REQUIRE(aie::accum<aie::acc_kind::acc32, 64>::bits == aie::aie2p::acc_bits_max);
  STATIC_REQUIRE(aie::aie2::load_bits == 256 && aie::aie2p::load_bits == 512);
  STATIC_REQUIRE(aie::aie2::dm_bytes == 65536 && aie::aie2::banks * aie::aie2::bank_bytes == aie::aie2::dm_bytes);
}

TEMPLATE_TEST_CASE("aie model: integer semantics of each operation", "[aie_model]", aie::aie2, aie::aie2p) {
  CHECK(check_srs<TestType>(fault::none));
  CHECK(check_ups<TestType>(fault::none));
  CHECK(check_unpack<TestType>(fault::none));
  CHECK(check_shuffles<TestType>(fault::none));
  CHECK(check_broadcast<TestType>(fault::none));
  CHECK(check_mmul<TestType>(fault::none));
  CHECK(check_lookup<TestType>(fault::none));
}

TEST_CASE("aie model: SRS examples from the mode definitions", "[aie_model]") {
  auto c = make_core<aie::aie2>();
  aie::accum<aie::acc_kind::acc32, 16> a;
  const int64_t xs[8] = {5, -5, 6, -6, 7, -7, 1000, -1000};  // /4: 1.25 -1.25 1.5 -1.5 1.75 -1.75 250 -250
  for (int i = 0; i < 8; ++i) a.v[i] = xs[i];
  auto run = [&](aie::rounding m, aie::saturation s) {
    c->rnd = m;
    c->sat = s;
    const auto v = aie::srs<int8_t>(*c, a, 2);
    return std::vector<int>(v.v, v.v + 8);
  };
  using R = aie::rounding;
  using S = aie::saturation;
  CHECK(run(R::floor, S::saturate) == std::vector<int>{1, -2, 1, -2, 1, -2, 127, -128});
  CHECK(run(R::conv_even, S::saturate) == std::vector<int>{1, -1, 2, -2, 2, -2, 127, -128});
  CHECK(run(R::conv_odd, S::symmetric) == std::vector<int>{1, -1, 1, -1, 2, -2, 127, -127});
  CHECK(run(R::sym_zero, S::saturate) == std::vector<int>{1, -1, 1, -1, 2, -2, 127, -128});
  CHECK(run(R::sym_inf, S::saturate) == std::vector<int>{1, -1, 2, -2, 2, -2, 127, -128});
  CHECK(run(R::pos_inf, S::none) == std::vector<int>{1, -1, 2, -1, 2, -2, -6, 6});  // 250 wraps to -6
}

TEMPLATE_TEST_CASE("aie model: alignment, range and bank accounting", "[aie_model]", aie::aie2, aie::aie2p) {
  using P = TestType;
  auto c = make_core<P>();
  constexpr uint32_t port = P::load_bits / 8;
  (void)aie::load<int8_t, 64>(*c, port / 2);  // misaligned
  CHECK(c->st == aie::status::bad_alignment);
  c = make_core<P>();
  (void)aie::load<int8_t, 64>(*c, 65536);
  CHECK(c->st == aie::status::out_of_range);
  c = make_core<P>();
  (void)aie::load<int8_t, 16>(*c, 16);  // a 128-bit vector needs 16-byte alignment only
  CHECK(c->st == aie::status::ok);
  // a bank (group) serves one access a cycle: the busiest bank of each iteration is counted
  c->loop_begin("banks");
  c->iteration();
  (void)aie::load<int8_t, port>(*c, 0);
  (void)aie::load<int8_t, port>(*c, 1024);  // bank 0 again: 2 accesses
  c->iteration();
  (void)aie::load<int8_t, port>(*c, 0);
  (void)aie::load<int8_t, port>(*c, 2 * 8192 + 64);  // bank 2 (pair 1 on aie2p): 1 each
  c->iteration();
  (void)aie::load<int8_t, port>(*c, 0);
  (void)aie::load<int8_t, port>(*c, 8192);  // bank 1: one bank group with bank 0 on aie2p (pairs)
  aie::store(*c, 128, aie::vec<int8_t, port>{});  // a store in bank 0
  c->loop_end();
  const auto& R = c->tr.r[c->tr.find("banks")];
  CHECK(R.ops[int(aie::slot::ld)] == 6);
  CHECK(R.iterations == 3);
  CHECK(R.bank_peak == (P::conflict_banks == 2 ? 2u + 1u + 3u : 2u + 1u + 2u));
  // allocation: out of memory, per-bank placement
  auto d = make_core<P>();
  CHECK(d->alloc(100, 64, 3) == 4 * 8192 - 128);  // carved from bank 3's end
  CHECK(d->alloc(1000) == 0);
  d->alloc(70000);
  CHECK(d->st == aie::status::out_of_memory);
}

TEST_CASE("aie model: parallel_lookup refuses a table outside its replicated layout", "[aie_model]") {
  auto c = make_core<aie::aie2>();
  int16_t vals[16];
  for (int i = 0; i < 16; ++i) vals[i] = int16_t(i);
  auto t = aie::make_lut(*c, vals, 16, 1, 1);  // both copies in bank 1
  CHECK_FALSE(aie::lut_check(*c, t));
  aie::vec<uint8_t, 32> idx;
  (void)aie::parallel_lookup(*c, t, idx);
  CHECK(c->st == aie::status::bad_table);
  auto d = make_core<aie::aie2>();
  auto u = aie::make_lut(*d, vals, 16, 1, 2);
  CHECK(aie::lut_check(*d, u));
  d->dm[u.cd + 16] ^= 1;  // one replica differs
  CHECK_FALSE(aie::lut_check(*d, u));
}

TEST_CASE("aie model: each operation records its slot", "[aie_model]") {
  auto c = make_core<aie::aie2>();
  const uint32_t o = c->alloc(256);
  c->loop_begin("slots");
  const auto a = aie::load<int8_t, 64>(*c, o);         // 2 loads (256-bit ports)
  const auto b = aie::broadcast<int8_t, 64>(*c, 3);    // mv
  const auto s = aie::add(*c, a, b);                   // vec
  aie::store(*c, o + 64, s);                           // 2 stores
  aie::accum<aie::acc_kind::acc32, 32> acc;
  aie::vec<int8_t, 32> x;
  aie::vec<int8_t, 64> y;
  aie::mmul_mac<4, 8, 8, int8_t, int8_t>(*c, acc, x, y);  // vec, a mac on `acc`
  aie::store_srs<int16_t>(*c, o + 128, acc, 0);        // st only (SRS on the store path)
  aie::scalar_op(*c, 2);                               // alu
  c->loop_end();
  const auto& R = c->tr.r[c->tr.find("slots")];
  CHECK(R.ops[int(aie::slot::ld)] == 2);
  CHECK(R.ops[int(aie::slot::st)] == 2 + 2);
  CHECK(R.ops[int(aie::slot::vec)] == 2);
  CHECK(R.ops[int(aie::slot::mv)] == 1);
  CHECK(R.ops[int(aie::slot::alu)] == 2);
  CHECK(R.macs == 1);
  CHECK(R.n_acc == 1);
}

TEST_CASE("aie model: planted faults in the operations fail their checks", "[aie_model]") {
  using P = aie::aie2;
  CHECK_FALSE(check_srs<P>(fault::srs_rounding));
  CHECK_FALSE(check_srs<P>(fault::srs_saturation));
  CHECK_FALSE(check_ups<P>(fault::ups_shift));
  CHECK_FALSE(check_unpack<P>(fault::unpack_sign));
  CHECK_FALSE(check_shuffles<P>(fault::shuffle_order));
  CHECK_FALSE(check_broadcast<P>(fault::broadcast_lane));
  CHECK_FALSE(check_mmul<P>(fault::mmul_last_k));
  CHECK_FALSE(check_mmul<P>(fault::mmul_acc));
  CHECK_FALSE(check_lookup<P>(fault::lookup_index));
  CHECK_FALSE(check_mmul<aie::aie2p>(fault::mmul_last_k));
  CHECK_FALSE(check_lookup<aie::aie2p>(fault::lookup_index));
  CHECK_FALSE(check_int_ops<P>(fault::int_lane));
  CHECK_FALSE(check_float_ops<P>(fault::float_lane));
  CHECK_FALSE(check_float_ops<P>(fault::convert));
  CHECK_FALSE(check_float_ops<P>(fault::bf16_round));
  CHECK_FALSE(check_memory<P>(fault::store_byte));
}
