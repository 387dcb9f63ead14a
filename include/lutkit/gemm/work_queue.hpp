// lutkit — the work queue of the dequant kernels: (column pass, 64-row tile) items handed out
// one at a time, and one thread's walk over it with the next item claimed in time to prefetch.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "geometry.hpp"

namespace lutkit::detail {

// The work of one GEMM, (column pass, 64-row tile) items handed out one at a time, so that
// threads of unequal speed (big and little cores, a vCPU its host takes away for a while) finish
// together, which a fixed split of the tiles cannot do. Several passes: from a shared counter, pass
// by pass (the threads of one pass read the same activation block). One pass over `parts` threads:
// each thread owns a contiguous range of tiles and takes them from its front, so its weights are
// one stream (a tile's panel follows the one before it; tiles dealt in turn from a shared counter
// restarted the stream, and its prefetch, at every tile: docs/design_measurements.md, "Work
// queue"); a thread whose range is empty takes the last tile of the fullest other range.
class dq_work_queue {
 public:
  struct item {
    std::size_t t, pass;
  };
  dq_work_queue(std::size_t t0, std::size_t t1, std::size_t passes, std::size_t parts = 1)
      : t0_(t0),
        tiles_(t1 - t0),
        count_((t1 - t0) * passes),
        parts_(passes == 1 && parts > 1 && t1 - t0 < (uint64_t(1) << 32) ? parts : 0) {
    if (parts_ > 0) {
      ranges_ = std::make_unique<std::atomic<uint64_t>[]>(parts_);
      for (std::size_t i = 0; i < parts_; ++i)
        ranges_[i].store(pack(tiles_ * i / parts_, tiles_ * (i + 1) / parts_), std::memory_order_relaxed);
    }
  }
  // the next item for thread `part` (< the parts given, or any with the shared counter)
  std::optional<item> claim(std::size_t part = 0) {
    if (parts_ == 0) {
      const std::size_t i = next_.fetch_add(1, std::memory_order_relaxed);
      if (i >= count_) return std::nullopt;
      return item{t0_ + i % tiles_, i / tiles_};
    }
    if (const auto t = take(part % parts_, false)) return item{t0_ + *t, 0};
    for (;;) {  // (a steal can lose its race: look again)
      std::size_t best = parts_, left = 0;
      for (std::size_t j = 0; j < parts_; ++j) {
        const uint64_t v = ranges_[j].load(std::memory_order_relaxed);
        if (end_of(v) > front_of(v) && end_of(v) - front_of(v) > left) {
          left = end_of(v) - front_of(v);
          best = j;
        }
      }
      if (best == parts_) return std::nullopt;
      if (const auto t = take(best, true)) return item{t0_ + *t, 0};
    }
  }
  std::size_t size() const { return count_; }

 private:
  static uint64_t pack(uint64_t front, uint64_t end) { return front | end << 32; }
  static std::size_t front_of(uint64_t v) { return std::size_t(v & 0xFFFFFFFFu); }
  static std::size_t end_of(uint64_t v) { return std::size_t(v >> 32); }
  // the front (own) or last (stolen) tile of range j, or none where it is empty
  std::optional<std::size_t> take(std::size_t j, bool last) {
    uint64_t v = ranges_[j].load(std::memory_order_relaxed);
    for (;;) {
      const std::size_t f = front_of(v), e = end_of(v);
      if (f >= e) return std::nullopt;
      const uint64_t w = last ? pack(f, e - 1) : pack(f + 1, e);
      if (ranges_[j].compare_exchange_weak(v, w, std::memory_order_relaxed)) return last ? e - 1 : f;
    }
  }
  std::size_t t0_, tiles_, count_, parts_;
  std::atomic<std::size_t> next_{0};
  std::unique_ptr<std::atomic<uint64_t>[]> ranges_;
};

inline std::size_t dq_passes(const dq_geometry& g) { return (g.NP + g.n_block() - 1) / g.n_block(); }

// One thread's walk over a queue: the current item, and the next one, claimed when the current
// item's last chunk starts so that its first chunk can be prefetched (claimed any earlier, it
// could sit waiting while another thread runs out of work).
class dq_worker {
 public:
  // part: the thread's index among the queue's parts
  explicit dq_worker(dq_work_queue& q, std::size_t part = 0) : q_(q), part_(part), cur_(q.claim(part)) {}
  const std::optional<dq_work_queue::item>& current() const { return cur_; }
  // the chunk after chunk [.., k1) of the current item (dq_geometry::next_chunk, the next tile
  // being the next item's; no_tile after the last item)
  dq_geometry::chunk next_chunk(const dq_geometry& g, std::size_t k1) {
    if (k1 >= g.K_pad && !claimed_) {
      next_ = q_.claim(part_);
      claimed_ = true;
    }
    return g.next_chunk(cur_->t, k1, next_ ? next_->t : dq_geometry::no_tile);
  }
  // on to the next item; false when the queue is dry
  bool advance() {
    if (!claimed_) next_ = q_.claim(part_);
    cur_ = next_;
    next_.reset();
    claimed_ = false;
    return cur_.has_value();
  }

 private:
  dq_work_queue& q_;
  std::size_t part_;
  std::optional<dq_work_queue::item> cur_, next_;
  bool claimed_ = false;
};

}  // namespace lutkit::detail
