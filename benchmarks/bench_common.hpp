// Shared by the benchmark translation units: one thread pool per thread count.
#pragma once
#include <lutkit/thread_pool.hpp>

namespace lutkit_bench {
lutkit::thread_pool& pool_for(int threads);
void register_prefill();
}  // namespace lutkit_bench
