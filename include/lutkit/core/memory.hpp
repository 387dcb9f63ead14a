// lutkit — memory: aligned allocation (huge pages for large buffers), per-thread working buffers
// reused across calls, and the host's last-level cache size (what "cold" has to exceed).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <new>
#include <vector>
#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace lutkit {
namespace detail {
struct aligned_free {
  std::size_t alignment = 64;
  void operator()(void* p) const { ::operator delete[](p, std::align_val_t(alignment)); }
};
using aligned_bytes = std::unique_ptr<uint8_t[], aligned_free>;
inline constexpr std::size_t huge_page_bytes = std::size_t(2) << 20;
// Asks for huge pages under the whole 2 MiB extents of [p, p + n) (Linux; elsewhere nothing).
// Fewer, larger page faults on the first touch (docs/llama_formats.md, "Load").
inline void advise_huge_pages([[maybe_unused]] void* p, [[maybe_unused]] std::size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const auto a = (reinterpret_cast<std::uintptr_t>(p) + huge_page_bytes - 1) & ~(huge_page_bytes - 1);
  const auto e = (reinterpret_cast<std::uintptr_t>(p) + n) & ~(huge_page_bytes - 1);
  if (e > a) madvise(reinterpret_cast<void*>(a), e - a, MADV_HUGEPAGE);
#endif
}
// v = n copies of x, the storage advised for huge pages before its first touch (bulk tensors:
// codes, scales)
template <class T>
void assign_bulk(std::vector<T>& v, std::size_t n, const T& x) {
  v.clear();
  v.reserve(n);
  advise_huge_pages(v.data(), n * sizeof(T));
  v.assign(n, x);
}

// 64-byte aligned; large buffers (weights streamed from DRAM) are 2 MiB aligned and asked to
// be backed by huge pages, which cuts TLB misses of the weight stream and the cost of the
// first touch. The last, partial 2 MiB extent is allocated whole (and so advised) when that
// adds at most an eighth to the buffer: left in 4 KiB pages, its faults cost more than all the
// rest (docs/design_measurements.md, "Huge pages").
inline aligned_bytes alloc_aligned(std::size_t n) {
  constexpr std::size_t huge = huge_page_bytes;
  if (n >= 2 * huge) {
    const std::size_t whole = (n + huge - 1) & ~(huge - 1);
    if (whole - n <= n / 8) n = whole;
    auto* p = static_cast<uint8_t*>(::operator new[](n, std::align_val_t(huge)));
    advise_huge_pages(p, n);
    return aligned_bytes(p, aligned_free{huge});
  }
  auto* p = static_cast<uint8_t*>(::operator new[](n == 0 ? 64 : n, std::align_val_t(64)));
  return aligned_bytes(p, aligned_free{64});
}

// Working buffers reused from call to call: each thread keeps one grow-only buffer per slot and
// lends it to one owner at a time (a second owner on the same thread, or a request above
// `max_cached` bytes, gets buffers of its own). The contents are whatever the last owner left.
// Slot: an enum class of the family's buffers, ending in `count` (each enum has its own cache).
// Why: fresh pages on every call cost the prefill GEMM their clearing (docs/design_measurements.md,
// "Reusable working buffers").
template <class Slot>
class reusable_bytes {
 public:
  static constexpr std::size_t max_cached = std::size_t(64) << 20;
  reusable_bytes() = default;
  reusable_bytes(Slot slot, std::size_t n) {
    cached& c = cache()[int(slot)];
    if (!c.busy && n <= max_cached) {
      if (n > c.n) {
        c.p.reset();
        c.p = alloc_aligned(n);
        c.n = n;
      }
      c.busy = true;
      lent_ = &c;
      ptr_ = c.p.get();
    } else {
      own_ = alloc_aligned(n);
      ptr_ = own_.get();
    }
  }
  reusable_bytes(reusable_bytes&& o) noexcept : lent_(o.lent_), own_(std::move(o.own_)), ptr_(o.ptr_) {
    o.lent_ = nullptr;
    o.ptr_ = nullptr;
  }
  reusable_bytes& operator=(reusable_bytes&& o) noexcept {
    if (this != &o) {
      release();
      lent_ = o.lent_;
      own_ = std::move(o.own_);
      ptr_ = o.ptr_;
      o.lent_ = nullptr;
      o.ptr_ = nullptr;
    }
    return *this;
  }
  reusable_bytes(const reusable_bytes&) = delete;
  reusable_bytes& operator=(const reusable_bytes&) = delete;
  ~reusable_bytes() { release(); }
  uint8_t* get() const { return ptr_; }
  uint8_t& operator[](std::size_t i) const { return ptr_[i]; }
  bool lent() const { return lent_ != nullptr; }  // the thread's cached buffer (else its own)
  explicit operator bool() const { return ptr_ != nullptr; }

 private:
  struct cached {
    aligned_bytes p;
    std::size_t n = 0;
    bool busy = false;
  };
  static cached* cache() {
    thread_local cached c[int(Slot::count)];
    return c;
  }
  void release() {
    if (lent_) lent_->busy = false;
    lent_ = nullptr;
    own_.reset();
    ptr_ = nullptr;
  }
  cached* lent_ = nullptr;
  aligned_bytes own_;
  uint8_t* ptr_ = nullptr;
};
}  // namespace detail

// The host's last-level cache in bytes: the largest cache of cpu0 that Linux
// lists (/sys/devices/system/cpu/cpu0/cache/index*/size, e.g. "32768K"), read once; 32 MiB
// where none can be read. A VM reports its host socket's whole cache (300 MB on an Emerald
// Rapids guest), which its share of the socket may not get, so this is an upper bound.
inline std::size_t last_level_cache_bytes() {
  static const std::size_t bytes = [] {
    std::size_t best = 0;
#if defined(__linux__)
    for (int i = 0; i < 16; ++i) {
      char path[96];
      std::snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
      std::FILE* f = std::fopen(path, "r");
      if (!f) break;
      unsigned long long v = 0;
      char unit = 0;
      const int got = std::fscanf(f, "%llu%c", &v, &unit);
      std::fclose(f);
      if (got < 1 || v == 0 || v > (1ull << 40)) continue;
      const std::size_t mul = unit == 'K' ? (std::size_t(1) << 10)
                              : unit == 'M' ? (std::size_t(1) << 20)
                              : unit == 'G' ? (std::size_t(1) << 30)
                                            : 1;
      best = std::max(best, std::size_t(v) * mul);
    }
#endif
    return best ? best : std::size_t(32) << 20;
  }();
  return bytes;
}

// The bytes that a rotation of buffers must exceed for each to be read from DRAM again: twice the
// last-level cache, at least 128 MiB (a rotation of 100 MiB on that Emerald Rapids guest read at
// the cache's rate, 1.7x its DRAM's, docs/benchmarks.md "Cold").
inline std::size_t cold_bytes() { return std::max(std::size_t(128) << 20, 2 * last_level_cache_bytes()); }
}  // namespace lutkit
