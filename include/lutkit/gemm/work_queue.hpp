// lutkit — the work queue of the dequant kernels: (column pass, 64-row tile) items handed out
// one at a time, and one thread's walk over it with the next item claimed in time to prefetch.
#pragma once
#include <atomic>
#include <cstddef>
#include <optional>

#include "geometry.hpp"

namespace lutkit::detail {

// The work of one GEMM, (column pass, 64-row tile) items handed out one at a time from a shared
// counter, pass by pass. Threads of unequal speed (big and little cores, a vCPU its host takes
// away for a while) then finish together, which a fixed split of the tiles cannot do; and the
// threads of one pass read the same activation block.
class dq_work_queue {
 public:
  struct item {
    std::size_t t, pass;
  };
  dq_work_queue(std::size_t t0, std::size_t t1, std::size_t passes)
      : t0_(t0), tiles_(t1 - t0), count_((t1 - t0) * passes) {}
  std::optional<item> claim() {
    const std::size_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i >= count_) return std::nullopt;
    return item{t0_ + i % tiles_, i / tiles_};
  }
  std::size_t size() const { return count_; }

 private:
  std::size_t t0_, tiles_, count_;
  std::atomic<std::size_t> next_{0};
};

inline std::size_t dq_passes(const dq_geometry& g) { return (g.NP + g.n_block() - 1) / g.n_block(); }

// One thread's walk over a queue: the current item, and the next one, claimed when the current
// item's last chunk starts so that its first chunk can be prefetched (claimed any earlier, it
// could sit waiting while another thread runs out of work).
class dq_worker {
 public:
  explicit dq_worker(dq_work_queue& q) : q_(q), cur_(q.claim()) {}
  const std::optional<dq_work_queue::item>& current() const { return cur_; }
  // the chunk after chunk [.., k1) of the current item (dq_geometry::next_chunk, the next tile
  // being the next item's; no_tile after the last item)
  dq_geometry::chunk next_chunk(const dq_geometry& g, std::size_t k1) {
    if (k1 >= g.K_pad && !claimed_) {
      next_ = q_.claim();
      claimed_ = true;
    }
    return g.next_chunk(cur_->t, k1, next_ ? next_->t : dq_geometry::no_tile);
  }
  // on to the next item; false when the queue is dry
  bool advance() {
    if (!claimed_) next_ = q_.claim();
    cur_ = next_;
    next_.reset();
    claimed_ = false;
    return cur_.has_value();
  }

 private:
  dq_work_queue& q_;
  std::optional<dq_work_queue::item> cur_, next_;
  bool claimed_ = false;
};

}  // namespace lutkit::detail
