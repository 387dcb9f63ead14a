// The Hexagon test runtime: a freestanding program's own entry point and output (no libc), and a
// tiny harness. Under qemu-hexagon (Linux user mode) a program gets `trap0(#1)` system calls:
// r6 = number (64 write, 93 exit), r0.. = arguments.
#pragma once
#include <cstddef>
#include <cstdint>

extern "C" {
inline long lutkit_hvx_syscall(long n, long a, long b, long c) {
  register long r0 asm("r0") = a;
  register long r1 asm("r1") = b;
  register long r2 asm("r2") = c;
  register long r6 asm("r6") = n;
  asm volatile("trap0(#1)" : "+r"(r0) : "r"(r1), "r"(r2), "r"(r6) : "memory");
  return r0;
}
int main();
[[noreturn]] inline void lutkit_hvx_exit(int code) {
  lutkit_hvx_syscall(93, code, 0, 0);
  for (;;) {
  }
}
void lutkit_hvx_main() { lutkit_hvx_exit(main()); }
// the loader leaves sp at argc; HVX spills want a 128-byte aligned frame
__attribute__((naked, noreturn)) void _start() { asm volatile("r29 = and(r29, #-128)\n call lutkit_hvx_main\n"); }
// Hexagon has no integer divide instruction: clang calls these compiler-rt routines (the
// Hexagon SDK's runtime provides them to a DSP library; this test program brings its own).
unsigned __hexagon_udivsi3(unsigned a, unsigned b) {
  unsigned q = 0, r = 0;
  for (int i = 31; i >= 0; --i) {
    r = (r << 1) | ((a >> i) & 1u);
    if (r >= b) {
      r -= b;
      q |= 1u << i;
    }
  }
  return q;
}
unsigned __hexagon_umodsi3(unsigned a, unsigned b) { return a - __hexagon_udivsi3(a, b) * b; }
int __hexagon_divsi3(int a, int b) {
  const unsigned ua = a < 0 ? 0u - unsigned(a) : unsigned(a), ub = b < 0 ? 0u - unsigned(b) : unsigned(b);
  const unsigned q = __hexagon_udivsi3(ua, ub);
  return (a < 0) != (b < 0) ? -int(q) : int(q);
}
int __hexagon_modsi3(int a, int b) { return a - __hexagon_divsi3(a, b) * b; }
// what clang may call for struct copies and zeroing in a freestanding build
void* memcpy(void* d, const void* s, std::size_t n) {
  auto* dd = static_cast<unsigned char*>(d);
  const auto* ss = static_cast<const unsigned char*>(s);
  for (std::size_t i = 0; i < n; ++i) dd[i] = ss[i];
  return d;
}
void* __hexagon_memcpy_likely_aligned_min32bytes_mult8bytes(void* d, const void* s, std::size_t n) {
  return memcpy(d, s, n);
}
void* memset(void* d, int v, std::size_t n) {
  auto* dd = static_cast<unsigned char*>(d);
  for (std::size_t i = 0; i < n; ++i) dd[i] = static_cast<unsigned char>(v);
  return d;
}
}

namespace hvx_rt {
inline void put(const char* s) {
  long n = 0;
  while (s[n]) ++n;
  lutkit_hvx_syscall(64, 1, reinterpret_cast<long>(s), n);
}
inline void put(long v) {
  char b[24];
  int i = 23;
  b[i] = 0;
  const bool neg = v < 0;
  unsigned long u = neg ? 0ul - static_cast<unsigned long>(v) : static_cast<unsigned long>(v);
  do {
    b[--i] = char('0' + u % 10);
    u /= 10;
  } while (u);
  if (neg) b[--i] = '-';
  put(b + i);
}
inline void put(float f) {  // sign, integer part, 6 decimals: enough to read a failure
  if (f != f) return put("nan");
  if (f < 0) {
    put("-");
    f = -f;
  }
  if (f > 1e18f) return put("big");
  const long ip = long(f);
  put(ip);
  put(".");
  long frac = long((f - float(ip)) * 1e6f);
  char b[8] = "000000";
  for (int i = 5; i >= 0; --i, frac /= 10) b[i] = char('0' + frac % 10);
  put(b);
}

// Several values in a row: put("  M=", long(M), " K=", long(K), "\n")
template <class A, class B, class... R>
inline void put(const A& a, const B& b, const R&... rest) {
  put(a);
  put(b, rest...);
}

// One suite: cases and assertions, a case fails on its first failing assertion.
struct suite {
  const char* name;
  long cases = 0, failed = 0, assertions = 0;
  bool case_ok = true;
  void begin() { case_ok = true; }
  bool check(bool ok) {
    ++assertions;
    case_ok = case_ok && ok;
    return ok;
  }
  void end(long seed_or_index) {
    ++cases;
    if (!case_ok) {
      ++failed;
      put("FAILED: ", name, " case ", seed_or_index, "\n");
    }
  }
  void report() const {
    put("[hvx-v67] ", name, ": ", cases - failed, " cases passed, ", failed, " failed\n");
  }
};
}  // namespace hvx_rt
