// lutkit — a small thread pool for engines that bring none. Kernels only need
// run(tasks, fn): fn(i) for i in [0, tasks), the caller's thread taking part.
//
// Decode GEMVs last a few hundred microseconds, so waking a sleeping thread (tens of
// microseconds on a VM) would eat the gain of a second core: idle workers spin for a short
// while (~0.2 ms) before they sleep on a condition variable. A worker whose part of a job is
// done while other threads still run it yields its core after that while, so the pool does not
// starve its own threads on a machine with more runnable threads than cores.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lutkit {

class thread_pool {
 public:
  explicit thread_pool(std::size_t threads = std::thread::hardware_concurrency()) {
    if (threads == 0) threads = 1;
    for (std::size_t i = 1; i < threads; ++i) workers_.emplace_back([this] { loop(); });
  }
  ~thread_pool() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_.store(true);
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
  }
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  std::size_t size() const { return workers_.size() + 1; }

  // Runs fn(i) for every i in [0, tasks); returns when all are done; rethrows the first error.
  void run(std::size_t tasks, const std::function<void(std::size_t)>& fn) {
    if (tasks == 0) return;
    if (workers_.empty() || tasks == 1) {
      for (std::size_t i = 0; i < tasks; ++i) fn(i);
      return;
    }
    std::lock_guard<std::mutex> one_job(job_mu_);
    job j;
    j.fn = &fn;
    j.tasks = tasks;
    j.pending.store(tasks);
    j.generation = ++generation_;
    {
      std::lock_guard<std::mutex> lk(mu_);
      current_.store(&j, std::memory_order_release);
    }
    cv_.notify_all();
    work(j);
    for (int spin = 0; j.pending.load(std::memory_order_acquire) != 0; ++spin) pause(spin);
    // A worker that saw the job is counted in active_ before it reads it: wait for them. The
    // retiring store and the load of active_ (here), the worker's increment of active_ and its
    // second load of current_ (loop) are sequentially consistent: with release / acquire, x86
    // may perform this load before the store is visible, and a worker counted after it could
    // still read the retired job from this frame (a crash or a hang in 4 of 150 runs of a
    // two-pool stress program).
    current_.store(nullptr, std::memory_order_seq_cst);
    for (int spin = 0; active_.load(std::memory_order_seq_cst) != 0; ++spin) pause(spin);
    if (j.error) std::rethrow_exception(j.error);
  }

 private:
  struct job {
    const std::function<void(std::size_t)>* fn = nullptr;
    std::size_t tasks = 0;
    std::size_t generation = 0;
    std::atomic<std::size_t> next{0};
    std::atomic<std::size_t> pending{0};
    std::mutex err_mu;
    std::exception_ptr error;
  };

  static void pause(int spin) {
#if defined(__x86_64__) || defined(__i386__)
    if (spin < 4096) {
      __builtin_ia32_pause();
      return;
    }
#endif
    if (spin >= 0) std::this_thread::yield();
  }

  static void work(job& j) {
    for (;;) {
      const std::size_t i = j.next.fetch_add(1, std::memory_order_acq_rel);
      if (i >= j.tasks) return;
      try {
        (*j.fn)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lk(j.err_mu);
        if (!j.error) j.error = std::current_exception();
      }
      j.pending.fetch_sub(1, std::memory_order_acq_rel);
    }
  }

  void loop() {
    std::size_t seen = 0;
    int idle = 0;
    bool yielded = false;
    for (;;) {
      if (stop_.load(std::memory_order_acquire)) return;
      bool worked = false, in_flight = false;
      if (current_.load(std::memory_order_acquire) != nullptr) {
        active_.fetch_add(1, std::memory_order_seq_cst);
        job* j = current_.load(std::memory_order_seq_cst);
        if (j != nullptr) {
          in_flight = true;
          if (j->generation != seen) {
            seen = j->generation;
            work(*j);
            worked = true;
          }
        }
        active_.fetch_sub(1, std::memory_order_acq_rel);
      }
      if (worked) {
        idle = 0;
        continue;
      }
      if (++idle < 8192) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        continue;
      }
      // A job this worker has finished, still running on other threads: yield the core. On a
      // machine with more runnable threads than cores (two pools, other processes) the threads
      // with tasks left need it; spinning on, this worker would hold its core for whole time slices.
      if (in_flight) {
        std::this_thread::yield();
        yielded = true;
        continue;
      }
      if (yielded) {  // that job is over: spin again for the next one (back-to-back decode calls)
        yielded = false;
        idle = 0;
        continue;
      }
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return stop_.load() || current_.load(std::memory_order_acquire) != nullptr; });
      idle = 0;
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mu_, job_mu_;
  std::condition_variable cv_;
  std::atomic<job*> current_{nullptr};
  std::atomic<std::size_t> active_{0};
  std::atomic<bool> stop_{false};
  std::size_t generation_ = 0;
};

}  // namespace lutkit
