// The HVX suite, run on Hexagon (qemu-hexagon, v67 HVX 128-byte): every kernel of
// include/lutkit/targets/hvx against the host's results in the embedded test vectors
// (make_hvx_vectors.cpp): the LUT-GEMV (tables built by HVX) within the derived bound of the
// double reference, rows outside a row range untouched; Q4_0 super-group dequantization bit-exact
// against the host's dequantization rounded to fp16; the vgather exp bit-exact against the host's
// table exp rounded to fp16; and the kernels' error statuses. Prints a line per kernel and
// "N passed, M failed" (with the Catch2-style total the CI summary counts).
#include <lutkit/targets/hvx/dequant.hpp>
#include <lutkit/targets/hvx/exp.hpp>
#include <lutkit/targets/hvx/lut_gemv_hvx.hpp>

#include "hvx_cases.hpp"
#include "runtime.hpp"

#ifndef LUTKIT_HVX_VECTORS
#error "define LUTKIT_HVX_VECTORS as the path of the file make_hvx_vectors wrote"
#endif
asm(".section .rodata\n.balign 128\n.global lutkit_hvx_vectors\nlutkit_hvx_vectors:\n.incbin \"" LUTKIT_HVX_VECTORS
    "\"\n.balign 128\n.text\n");
extern "C" const unsigned char lutkit_hvx_vectors[];

using namespace lutkit_hvx_test;
namespace hvx = lutkit::hvx;
using hvx_rt::put;

namespace {
alignas(128) unsigned char table_buf[1 << 20];
alignas(128) float ybuf[16 * 320];
alignas(128) std::uint16_t hbuf[300 * 1024];
alignas(128) unsigned char misaligned_copy[1 << 18];

const unsigned char* section(const record* r, int i) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(r) + sizeof(record);
  for (int j = 0; j < i; ++j) p += pad128(r->section[j]);
  return p;
}

void gemv_record(const record* r, hvx_rt::suite& s, long index) {
  const auto* data = section(r, 0);
  const auto* x = reinterpret_cast<const float*>(section(r, 1));
  const auto* ref = reinterpret_cast<const float*>(section(r, 2));
  const auto* bound = reinterpret_cast<const float*>(section(r, 3));
  const auto* model = reinterpret_cast<const float*>(section(r, 4));
  const auto* model_bound = reinterpret_cast<const float*>(section(r, 5));
  const std::size_t M = r->M, K = r->K, N = r->N;
  s.begin();
  const bool found = with_entry(gemv_policies{}, int(r->policy), [&]<class E>() {
    using P = hvx::spec_of<typename E::fmt, typename E::group, typename E::table>;
    hvx::tables tb;
    s.check(hvx::table_bytes<P>(N, K) <= sizeof table_buf);
    s.check(hvx::build_tables<P>(x, N, K, r->ldx, table_buf, sizeof table_buf, tb) == hvx::status::ok);
    const float sentinel = -12345.f;
    for (std::size_t i = 0; i < N * M; ++i) ybuf[i] = sentinel;
    s.check(hvx::lut_gemv_rows<P>(data, M, K, tb, ybuf, M, r->row_begin, r->row_end) == hvx::status::ok);
    bool reported = false;
    for (std::size_t n = 0; n < N; ++n)
      for (std::size_t m = 0; m < M; ++m) {
        const float y = ybuf[n * M + m];
        const bool inside = m >= r->row_begin && m < r->row_end;
        const float e = y - ref[n * M + m], em = y - model[n * M + m];
        const float b = bound[n * M + m], bm = model_bound[n * M + m];
        const bool ok = inside ? (e <= b && -e <= b && em <= bm && -em <= bm) : y == sentinel;
        if (!s.check(ok) && !reported) {
          reported = true;
          put("  lut_gemv policy ", long(r->policy), " M=", long(M), " K=", long(K), " N=", long(N), " n=", long(n),
              " m=", long(m), " y=", y, " ref=", ref[n * M + m], " bound=", bound[n * M + m], " model=", model[n * M + m],
              "\n");
        }
      }
  });
  s.check(found);
  s.end(index);
}

// Bit-exact comparison of n fp16 codes; a failing case prints its shape and how many differ.
void compare_codes(hvx_rt::suite& s, const std::uint16_t* got, const std::uint16_t* expect, std::size_t n,
                   const char* what, std::size_t M, std::size_t K) {
  long bad = 0;
  for (std::size_t i = 0; i < n; ++i) bad += !s.check(got[i] == expect[i]);
  if (bad) put("  ", what, " M=", long(M), " K=", long(K), " mismatches=", bad, "\n");
}

// A dequantizer's record: [input][expected fp16 codes, M x K]. `run(input, M, K)` writes hbuf and
// returns the kernel's status; a shape too large for hbuf fails the case without running it.
template <class Run>
void codes_record(const record* r, hvx_rt::suite& s, long index, const char* what, Run run) {
  const std::size_t M = r->M, K = r->K;
  s.begin();
  if (s.check(M * K <= sizeof hbuf / 2)) {
    s.check(run(section(r, 0), M, K) == hvx::status::ok);
    compare_codes(s, hbuf, reinterpret_cast<const std::uint16_t*>(section(r, 1)), M * K, what, M, K);
  }
  s.end(index);
}

void q4_0_record(const record* r, hvx_rt::suite& s, long index) {
  codes_record(r, s, index, "q4_0", [](const unsigned char* sg, std::size_t M, std::size_t K) {
    return hvx::dequant_q4_0_supergroups(sg, M, K, hbuf);
  });
}

// the T-MAN blob of the record's policy (the generator writes eligible policies only)
void tman_record(const record* r, hvx_rt::suite& s, long index) {
  codes_record(r, s, index, "tman dequant", [&](const unsigned char* data, std::size_t M, std::size_t K) {
    hvx::status st = hvx::status::bad_shape;  // no such policy
    with_entry(gemv_policies{}, int(r->policy), [&]<class E>() {
      if constexpr (tman_dequant_entry<E>)
        st = hvx::dequant_fp16<hvx::spec_of<typename E::fmt, typename E::group, typename E::table>>(data, M, K, hbuf);
    });
    return st;
  });
}

const std::uint16_t* exp_table = nullptr;
void exp_record(const record* r, hvx_rt::suite& s, long index) {
  if (r->section[0] != 0) {
    // the table on a 128-byte boundary (VTCM on a device)
    exp_table = reinterpret_cast<const std::uint16_t*>(section(r, 0));
  }
  const auto* in = reinterpret_cast<const std::uint16_t*>(section(r, 1));
  const auto* expect = reinterpret_cast<const std::uint16_t*>(section(r, 2));
  s.begin();
  alignas(128) static std::uint16_t out[65536 + 64];
  s.check(exp_table != nullptr && r->N <= 65536);
  s.check(hvx::exp_by_table(in, out, r->N, exp_table) == hvx::status::ok);
  compare_codes(s, out, expect, r->N, "exp", r->N, 1);
  s.end(index);
}

// Bad input gets its status, and nothing is written.
void status_cases(hvx_rt::suite& s, const record* first_gemv) {
  using P = hvx::spec_of<lutkit::fmt::uint_asym<2>, lutkit::group<64>, lutkit_hvx_test::i8>;
  alignas(128) static float x[256];
  for (int i = 0; i < 256; ++i) x[i] = float(i % 7) - 3.f;
  hvx::tables tb;
  s.begin();
  s.check(hvx::build_tables<P>(x, 1, 100, 0, table_buf, sizeof table_buf, tb) == hvx::status::bad_shape);  // K % 64
  s.check(hvx::build_tables<P>(x, 0, 128, 0, table_buf, sizeof table_buf, tb) == hvx::status::bad_shape);
  s.check(hvx::build_tables<P>(x, 1, 128, 100, table_buf, sizeof table_buf, tb) == hvx::status::bad_stride);
  s.check(hvx::build_tables<P>(nullptr, 1, 128, 0, table_buf, sizeof table_buf, tb) == hvx::status::null_pointer);
  s.check(hvx::build_tables<P>(x, 1, 128, 0, table_buf + 4, sizeof table_buf - 4, tb) == hvx::status::bad_alignment);
  s.check(hvx::build_tables<P>(x, 1, 128, 0, table_buf, 64, tb) == hvx::status::buffer_too_small);
  s.check(hvx::build_tables<P>(x, 2, 128, 0, table_buf, sizeof table_buf, tb) == hvx::status::ok);
  alignas(128) static unsigned char blob[4 * 128 * 64];
  for (auto& b : blob) b = 0x5A;
  for (float& y : ybuf) y = 7.f;
  s.check(hvx::lut_gemv_rows<P>(blob, 100, 128, tb, ybuf, 0, 0, 101) == hvx::status::bad_shape);  // past M
  s.check(hvx::lut_gemv_rows<P>(blob, 100, 128, tb, ybuf, 0, 5, 5) == hvx::status::bad_shape);    // empty
  s.check(hvx::lut_gemv_rows<P>(blob, 100, 64, tb, ybuf, 0, 0, 100) == hvx::status::bad_shape);   // tables' K
  s.check(hvx::lut_gemv_rows<P>(blob, 100, 128, tb, ybuf, 50, 0, 100) == hvx::status::bad_stride);
  s.check(hvx::lut_gemv_rows<P>(blob + 64, 100, 128, tb, ybuf, 0, 0, 100) == hvx::status::bad_alignment);
  bool untouched = true;
  for (float y : ybuf) untouched = untouched && y == 7.f;
  s.check(untouched);
  s.check(hvx::dequant_q4_0_supergroups(blob, 1, 48, hbuf) == hvx::status::bad_shape);  // K % 32
  s.check(hvx::exp_by_table(hbuf + 1, hbuf, 10, hbuf) == hvx::status::bad_alignment);
  (void)first_gemv;
  (void)misaligned_copy;
  s.end(0);
}

}  // namespace

int main() {
  hvx_rt::suite gemv{"lut_gemv (vlut16, HVX table build)"}, q40{"dequant Q4_0 super-groups (vlut16)"},
      ex{"exp table (vgather)"}, tm{"dequant T-MAN blob (vlut16 plane join)"}, st{"error statuses"};
  const record* first_gemv = nullptr;
  long i = 0;
  for (const auto* r = reinterpret_cast<const record*>(lutkit_hvx_vectors); r->kind != k_end;
       r = reinterpret_cast<const record*>(reinterpret_cast<const unsigned char*>(r) + r->total), ++i) {
    if (r->kind == k_gemv) {
      if (!first_gemv) first_gemv = r;
      gemv_record(r, gemv, i);
    } else if (r->kind == k_q4_0) {
      q4_0_record(r, q40, i);
    } else if (r->kind == k_exp) {
      exp_record(r, ex, i);
    } else if (r->kind == k_tman) {
      tman_record(r, tm, i);
    }
  }
  status_cases(st, first_gemv);
  const hvx_rt::suite* all[] = {&gemv, &q40, &tm, &ex, &st};
  long cases = 0, failed = 0, assertions = 0;
  for (const auto* s : all) {
    s->report();
    cases += s->cases;
    failed += s->failed;
    assertions += s->assertions;
  }
  put(cases - failed, " passed, ", failed, " failed\n");
  if (failed == 0) {
    put("All tests passed (", assertions, " assertions in ", cases, " test cases)\n");
  }
  return failed == 0 ? 0 : 1;
}
