// lutkit — memory: aligned allocation (huge pages for large buffers), per-thread working buffers
// reused across calls, and the host's last-level cache size (what "cold" has to exceed).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <new>
#include <vector>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__SANITIZE_ADDRESS__)
#define LUTKIT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LUTKIT_ASAN 1
#endif
#endif
#if !defined(LUTKIT_ASAN)
#define LUTKIT_ASAN 0
#endif
#if LUTKIT_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace lutkit {
namespace detail {
inline constexpr std::size_t huge_page_bytes = std::size_t(2) << 20;

// Large buffers (weight blobs, working buffers, tables of 256 KiB and more) come from lutkit's
// own slabs: anonymous mappings, 2 MiB aligned, advised for huge pages before their first touch,
// handed out back to back (4 KiB granularity) so that a blob of any size lies in huge pages
// without a 2 MiB extent of its own. Through the C++ heap a buffer could land on pages the heap
// had touched before, in 4 KiB pages whatever the advice: in the busy stretches of a shared VM
// the decode of Llama-3.2-1B's 2048 x 2048 matrices then ran at half the speed of the same
// matrices in huge pages, and the 8192 x 2048 ones at 0.6-0.8 (alike in a quiet stretch:
// docs/design_measurements.md, "Huge pages"). A slab is unmapped when its
// last buffer is freed (the newest one is kept and reused); a freed buffer's whole 2 MiB extents
// are returned to the system at once. Under AddressSanitizer a slab is poisoned except the
// buffers handed out. Elsewhere than Linux, or if a mapping fails: the aligned heap.
class slab_pool {
 public:
  static constexpr std::size_t min_bytes = std::size_t(256) << 10;  // smaller: the heap
  static constexpr std::size_t slab_bytes = std::size_t(32) << 20;  // a buffer above half: a slab of its own
  static constexpr std::size_t granule = 4096;

  struct slab {
    uint8_t* base = nullptr;
    std::size_t bytes = 0, used = 0, live = 0;
  };

  static slab_pool& instance() {
    static slab_pool* p = new slab_pool;  // never destroyed: blobs with static storage outlive exit
    return *p;
  }
  // n bytes in a slab (the slab's address in *owner), or nullptr if no mapping can be made
  uint8_t* allocate(std::size_t n, slab** owner) {
#if defined(__linux__)
    const std::size_t need = round_up(n, granule);
    std::lock_guard<std::mutex> lk(mu_);
    slab* s = nullptr;
    if (need > slab_bytes / 2) {
      s = map(round_up(need, huge_page_bytes));
    } else {
      // (a current slab without buffers has used == 0: release resets it, and need fits)
      if (!current_ || current_->bytes - current_->used < need) current_ = map(slab_bytes);
      s = current_;
    }
    if (!s) return nullptr;
    uint8_t* p = s->base + s->used;
    s->used += need;
    ++s->live;
    unpoison(p, n);
    *owner = s;
    return p;
#else
    (void)n;
    (void)owner;
    return nullptr;
#endif
  }
  void release(slab* s, uint8_t* p, std::size_t n) {
#if defined(__linux__)
    std::lock_guard<std::mutex> lk(mu_);
    poison(p, round_up(n, granule));
    if (--s->live == 0) {
      if (s == current_)
        s->used = 0;  // kept: its pages are in place for the next buffers
      else
        unmap(s);
      return;
    }
    // the freed buffer's whole huge pages back to the system (the others wait for the slab)
    const auto a = round_up(reinterpret_cast<std::uintptr_t>(p), huge_page_bytes);
    const auto e = (reinterpret_cast<std::uintptr_t>(p) + n) & ~(huge_page_bytes - 1);
    if (e > a) madvise(reinterpret_cast<void*>(a), e - a, MADV_DONTNEED);
#else
    (void)s;
    (void)p;
    (void)n;
#endif
  }
  // slabs mapped now (tests)
  std::size_t slabs() {
    std::lock_guard<std::mutex> lk(mu_);
    return mapped_;
  }

 private:
  static std::size_t round_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }
#if defined(__linux__)
  slab* map(std::size_t bytes) {
    // 2 MiB aligned: map a huge page more and trim both ends
    const std::size_t span = bytes + huge_page_bytes;
    void* r = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED) return nullptr;
    const auto raw = reinterpret_cast<std::uintptr_t>(r);
    const auto base = round_up(raw, huge_page_bytes);
    if (base > raw) munmap(r, base - raw);
    if (base + bytes < raw + span) munmap(reinterpret_cast<void*>(base + bytes), raw + span - base - bytes);
#if defined(MADV_HUGEPAGE)
    madvise(reinterpret_cast<void*>(base), bytes, MADV_HUGEPAGE);
#endif
    auto* s = new slab;
    s->base = reinterpret_cast<uint8_t*>(base);
    s->bytes = bytes;
    poison(s->base, bytes);
    ++mapped_;
    return s;
  }
  void unmap(slab* s) {
    unpoison(s->base, s->bytes);
    munmap(s->base, s->bytes);
    if (s == current_) current_ = nullptr;
    delete s;
    --mapped_;
  }
#endif
  static void poison([[maybe_unused]] void* p, [[maybe_unused]] std::size_t n) {
#if LUTKIT_ASAN
    __asan_poison_memory_region(p, n);
#endif
  }
  static void unpoison([[maybe_unused]] void* p, [[maybe_unused]] std::size_t n) {
#if LUTKIT_ASAN
    __asan_unpoison_memory_region(p, n);
#endif
  }
  std::mutex mu_;
  slab* current_ = nullptr;
  std::size_t mapped_ = 0;
};

struct aligned_free {
  std::size_t alignment = 64;
  slab_pool::slab* slab = nullptr;  // the slab it came from (else the aligned heap)
  std::size_t bytes = 0;
  void operator()(void* p) const {
    if (slab)
      slab_pool::instance().release(slab, static_cast<uint8_t*>(p), bytes);
    else
      ::operator delete[](p, std::align_val_t(alignment));
  }
};
using aligned_bytes = std::unique_ptr<uint8_t[], aligned_free>;
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

// 64-byte aligned (4 KiB from 256 KiB up: slab_pool above, in huge pages).
inline aligned_bytes alloc_aligned(std::size_t n) {
  if (n >= slab_pool::min_bytes) {
    slab_pool::slab* s = nullptr;
    if (uint8_t* p = slab_pool::instance().allocate(n, &s))
      return aligned_bytes(p, aligned_free{slab_pool::granule, s, n});
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
