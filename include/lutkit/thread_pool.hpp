// lutkit — a small thread pool for engines that bring none. Kernels only need
// run(tasks, fn): fn(i) for i in [0, tasks), the caller's thread taking part.
#pragma once
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
      stop_ = true;
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
    std::unique_lock<std::mutex> job_lk(job_mu_);  // one job at a time
    {
      std::lock_guard<std::mutex> lk(mu_);
      fn_ = &fn;
      tasks_ = tasks;
      next_ = 0;
      pending_ = tasks;
      error_ = nullptr;
      ++generation_;
    }
    cv_.notify_all();
    work();
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [this] { return pending_ == 0; });
    fn_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void work() {
    for (;;) {
      std::size_t i;
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (fn_ == nullptr || next_ >= tasks_) return;
        i = next_++;
      }
      try {
        (*fn_)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lk(mu_);
        if (!error_) error_ = std::current_exception();
      }
      std::lock_guard<std::mutex> lk(mu_);
      if (--pending_ == 0) done_cv_.notify_all();
    }
  }
  void loop() {
    std::size_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
      }
      work();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mu_, job_mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(std::size_t)>* fn_ = nullptr;
  std::size_t tasks_ = 0, next_ = 0, pending_ = 0, generation_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
};

}  // namespace lutkit
