// lutkit — the host's calibration: measures the target_costs of this machine in a few hundred
// milliseconds (a plain read of a buffer well beyond the LLC at 1 and `threads` threads, the L1
// and L2 read, the int8 dot, fp32 FMA, bf16 dot and byte-lookup peaks of one core, the thread
// pool's fork / join), and saves / loads them as a small text file an engine can keep
// ("key = value" lines, docs/plan.md). Loading is exact (17 significant digits round-trip every
// double) and checked: a malformed file is a lutkit::error naming the line.
#pragma once
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../core/target.hpp"
#include "../core/thread_pool.hpp"
#include "cost_model.hpp"
#include "targets.hpp"

namespace lutkit::plan {

// The calibration's DRAM read: a buffer of twice the last-level cache (cold_bytes()), at least 256 MiB
inline std::size_t dram_read_bytes() { return std::max(std::size_t(256) << 20, cold_bytes()); }

struct calibration_options {
  int threads = 0;                              // 0: std::thread::hardware_concurrency()
  std::size_t read_bytes = dram_read_bytes();   // the DRAM read's buffer
  int read_reps = 3;                            // best of this many reads per thread count
  int compute_reps = 5;                         // best of this many runs per compute loop
  double compute_seconds = 0.004;               // the length of one compute run
};

namespace detail {
using clock = std::chrono::steady_clock;
inline double seconds_since(clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); }

// the best rate (operations / s) of `reps` runs of `loop`, each about `seconds` long
template <class Loop, class Sink>
double peak_rate(Loop loop, Sink* sink, int reps, double seconds) {
  std::size_t iters = 256;
  for (;;) {  // size one run
    const auto t0 = clock::now();
    loop(iters, sink);
    const double s = seconds_since(t0);
    if (s >= seconds / 4 || iters > (std::size_t(1) << 40)) {
      iters = std::size_t(double(iters) * seconds / std::max(s, 1e-9)) + 1;
      break;
    }
    iters *= 4;
  }
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = clock::now();
    const double ops = loop(iters, sink);
    best = std::max(best, ops / std::max(seconds_since(t0), 1e-12));
  }
  return best;
}

// the best read bandwidth (bytes / s) of `reps` passes over [p, p + n) split over `threads`
inline double read_rate(const calibration_loops& L, thread_pool& pool, const uint8_t* p, std::size_t n, int threads,
                        int reps, int passes = 1) {
  double best = 0;
  std::vector<int64_t> sinks(std::size_t(threads) * 8, 0);
  const std::size_t part = n / std::size_t(threads) / 256 * 256;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = clock::now();
    pool.run(std::size_t(threads), [&](std::size_t i) {
      for (int k = 0; k < passes; ++k) L.read(p + i * part, part, &sinks[i * 8]);
    });
    best = std::max(best, double(part) * threads * passes / std::max(seconds_since(t0), 1e-12));
  }
  int64_t s = 0;
  for (int64_t v : sinks) s ^= v;
  volatile int64_t keep = s;
  (void)keep;
  return best;
}

// one core's read bandwidth from a buffer of `bytes` it has just touched (L1, L2)
inline double cache_read_rate(const calibration_loops& L, std::size_t bytes, int reps, double seconds) {
  auto mem = lutkit::detail::alloc_aligned(bytes);
  std::memset(mem.get(), 1, bytes);
  const uint8_t* p = mem.get();
  int64_t sink = 0;
  const double r = peak_rate(
      [&](std::size_t iters, int64_t* s) {
        for (std::size_t i = 0; i < iters; ++i) L.read(p, bytes, s);
        return double(iters) * double(bytes);
      },
      &sink, reps, seconds);
  volatile int64_t keep = sink;
  (void)keep;
  return r;
}
}  // namespace detail

// Measures this host. Also records the instruction each rate was measured with (isa_*), for
// the saved file's reader.
struct calibration {
  target_costs costs;
  std::string int8_isa, fp32_isa, bf16_isa, lookup_isa;
};

// The plain read rate (bytes / s) of a fresh buffer of `bytes` (by default twice the LLC,
// lutkit::cold_bytes(), and at least 256 MiB: from DRAM), the best of `reps` passes: `one` on one
// thread, `all` split over `threads` threads of `pool` (at least `one`). calibrate() takes its
// dram_bps and core_read_bps from it; an engine can print its decode against it.
struct read_rates {
  double one = 0, all = 0;
};
inline read_rates measure_read_rates(thread_pool& pool, int threads,
                                     std::size_t bytes = dram_read_bytes(), int reps = 3) {
  lutkit::detail::require(threads >= 1 && std::size_t(threads) <= pool.size(), "measure_read_rates: threads (", threads,
                          ") must be in [1, the pool's ", pool.size(), "]");
  lutkit::detail::require(bytes >= (std::size_t(1) << 20) && reps >= 1,
                          "measure_read_rates: bytes must be at least 1 MiB and reps >= 1");
  const detail::calibration_loops L = detail::host_calibration_loops();
  auto mem = lutkit::detail::alloc_aligned(bytes);
  uint8_t* p = mem.get();
  pool.run(std::size_t(threads), [&](std::size_t i) {  // first touch, spread over the threads
    const std::size_t part = bytes / std::size_t(threads);
    std::memset(p + i * part, int(i + 1), i + 1 == std::size_t(threads) ? bytes - i * part : part);
  });
  read_rates r;
  r.one = detail::read_rate(L, pool, p, bytes, 1, reps);
  r.all = threads > 1 ? std::max(r.one, detail::read_rate(L, pool, p, bytes, threads, reps)) : r.one;
  return r;
}

inline calibration calibrate(const calibration_options& o = {}) {
  lutkit::detail::require(o.read_reps >= 1 && o.compute_reps >= 1 && o.compute_seconds > 0,
                          "calibrate: reps must be >= 1 and compute_seconds > 0");
  lutkit::detail::require(o.read_bytes >= (std::size_t(1) << 20), "calibrate: read_bytes (", o.read_bytes,
                          ") must be at least 1 MiB");
  int threads = o.threads > 0 ? o.threads : int(std::thread::hardware_concurrency());
  if (threads < 1) threads = 1;
  const detail::calibration_loops L = detail::host_calibration_loops();
  calibration cal;
  target_costs& c = cal.costs;
  c.name = "host";
  c.cores = threads;
  thread_pool pool{std::size_t(threads)};
  {
    const read_rates rr = measure_read_rates(pool, threads, o.read_bytes, o.read_reps);
    c.core_read_bps = rr.one;
    c.dram_bps = rr.all;
  }
  c.l1_bps = detail::cache_read_rate(L, std::size_t(16) << 10, o.compute_reps, o.compute_seconds);
  c.l2_bps = detail::cache_read_rate(L, std::min<std::size_t>(target::host::desc.onchip_bytes / 2, std::size_t(512) << 10),
                                     o.compute_reps, o.compute_seconds);
  int64_t isink = 0;
  double fsink = 0;
  c.int8_macs_per_s = detail::peak_rate(L.int8_dot, &isink, o.compute_reps, o.compute_seconds);
  c.fp32_fmas_per_s = detail::peak_rate(L.fp32_fma, &fsink, o.compute_reps, o.compute_seconds);
  c.bf16_macs_per_s = L.bf16_dot ? detail::peak_rate(L.bf16_dot, &fsink, o.compute_reps, o.compute_seconds) : c.fp32_fmas_per_s;
  c.lookups_per_s = detail::peak_rate(L.lookup, &isink, o.compute_reps, o.compute_seconds);
  volatile double keep = double(isink) + fsink;
  (void)keep;
  // the int8 dot loop on every thread at once: the cores' worth of compute they get together
  c.parallel_compute = 1;
  if (threads > 1) {
    std::size_t iters = 1024;
    for (;;) {
      const auto t0 = detail::clock::now();
      L.int8_dot(iters, &isink);
      if (detail::seconds_since(t0) >= o.compute_seconds || iters > (std::size_t(1) << 40)) break;
      iters *= 2;
    }
    // Each thread times its own run, from its start: the sum of their rates is the compute the
    // cores give together. (Timed from the fork instead, a worker's wake-up, up to 2 ms on a
    // virtual machine's idle vCPU, counted as lost compute: parallel_compute 1.37 on an idle
    // 2-core Zen 3 whose 2-thread decode kernels ran 1.7-1.8x their 1-thread speed.)
    double best = 0;
    std::vector<int64_t> sinks(std::size_t(threads) * 8, 0);
    for (int r = 0; r < o.compute_reps; ++r) {
      std::vector<double> rate(std::size_t(threads), 0);
      pool.run(std::size_t(threads), [&](std::size_t i) {
        const auto t0 = detail::clock::now();
        const double ops = L.int8_dot(iters, &sinks[i * 8]);
        rate[i] = ops / std::max(detail::seconds_since(t0), 1e-12);
      });
      double total = 0;
      for (double v : rate) total += v;
      best = std::max(best, total);
    }
    for (int64_t v : sinks) isink += v;
    c.parallel_compute = std::min(double(threads), std::max(1.0, best / c.int8_macs_per_s));
  }
  cal.int8_isa = L.int8_dot_isa;
  cal.fp32_isa = L.fp32_fma_isa;
  cal.bf16_isa = L.bf16_dot ? "avx512bf16" : std::string("fp32 fma (") + L.fp32_fma_isa + ")";
  cal.lookup_isa = L.lookup_isa;
  // fork / join: the median of 150 back-to-back jobs of `threads` empty tasks, what the pool adds
  // to a kernel's call. (Tasks that wait for each other measure instead how soon the scheduler
  // runs every worker: on a loaded machine a time slice, about 250 us on the machine of
  // docs/plan.md, which a kernel's job does not wait for: the calling thread takes the tasks a
  // worker has not started. That sharing is parallel_compute's.)
  if (threads > 1) {
    std::vector<double> t;
    std::vector<int64_t> touched(std::size_t(threads), 0);
    for (int j = 0; j < 150; ++j) {
      const auto t0 = detail::clock::now();
      pool.run(std::size_t(threads), [&](std::size_t i) { touched[i] += 1; });
      t.push_back(detail::seconds_since(t0));
    }
    std::sort(t.begin(), t.end());
    c.fork_join_s = t[t.size() / 2];
  }
  return cal;
}

// ---------------------------------------------------------------- the file
// "key = value" lines; '#' starts a comment line; blank lines are skipped. The keys of
// target_costs, each exactly once; the isa_* keys are optional notes.
namespace detail {
inline constexpr const char* costs_format = "lutkit-target-costs 1";

struct number_field {
  const char* key;
  double target_costs::*field;
  bool rate;  // must be > 0 (else >= 0)
};
inline const std::vector<number_field>& number_fields() {
  static const std::vector<number_field> f = {
      {"dram_bps", &target_costs::dram_bps, true},
      {"core_read_bps", &target_costs::core_read_bps, true},
      {"l1_bps", &target_costs::l1_bps, true},
      {"l2_bps", &target_costs::l2_bps, true},
      {"int8_macs_per_s", &target_costs::int8_macs_per_s, true},
      {"fp32_fmas_per_s", &target_costs::fp32_fmas_per_s, true},
      {"bf16_macs_per_s", &target_costs::bf16_macs_per_s, true},
      {"lookups_per_s", &target_costs::lookups_per_s, true},
      {"fork_join_s", &target_costs::fork_join_s, false},
      {"parallel_compute", &target_costs::parallel_compute, true},
  };
  return f;
}
inline std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}
inline std::string format_double(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}
}  // namespace detail

inline std::string to_text(const calibration& cal) {
  std::ostringstream os;
  os << "# lutkit target costs (lutkit/plan/calibrate.hpp): rates per core except dram_bps\n";
  os << "format = " << detail::costs_format << "\n";
  os << "name = " << cal.costs.name << "\n";
  os << "cores = " << cal.costs.cores << "\n";
  for (const auto& f : detail::number_fields()) os << f.key << " = " << detail::format_double(cal.costs.*(f.field)) << "\n";
  for (const auto& [key, k] : cal.costs.kernels) {
    os << "kernel." << key << ".weights_per_s = " << detail::format_double(k.weights_per_s) << "\n";
    os << "kernel." << key << ".s_per_activation = " << detail::format_double(k.s_per_activation) << "\n";
  }
  if (!cal.int8_isa.empty()) os << "isa_int8 = " << cal.int8_isa << "\n";
  if (!cal.fp32_isa.empty()) os << "isa_fp32 = " << cal.fp32_isa << "\n";
  if (!cal.bf16_isa.empty()) os << "isa_bf16 = " << cal.bf16_isa << "\n";
  if (!cal.lookup_isa.empty()) os << "isa_lookup = " << cal.lookup_isa << "\n";
  return os.str();
}

// Parses to_text's format; `where` names the source in the messages.
inline calibration from_text(const std::string& text, const std::string& where = "calibration text") {
  using lutkit::detail::require;
  std::map<std::string, std::pair<std::string, int>> kv;  // key -> (value, line)
  std::istringstream is(text);
  std::string line;
  int n = 0;
  while (std::getline(is, line)) {
    ++n;
    const std::string t = detail::trim(line);
    if (t.empty() || t[0] == '#') continue;
    const auto eq = t.find('=');
    require(eq != std::string::npos, where, ":", n, ": expected 'key = value', got '", t, "'");
    const std::string key = detail::trim(t.substr(0, eq)), value = detail::trim(t.substr(eq + 1));
    require(!key.empty(), where, ":", n, ": empty key");
    require(!value.empty(), where, ":", n, ": key '", key, "' has no value");
    require(kv.find(key) == kv.end(), where, ":", n, ": key '", key, "' given twice (first on line ",
            kv.count(key) ? kv[key].second : 0, ")");
    kv[key] = {value, n};
  }
  auto take = [&](const std::string& key) -> std::pair<std::string, int> {
    auto it = kv.find(key);
    require(it != kv.end(), where, ": key '", key, "' is missing");
    auto v = it->second;
    kv.erase(it);
    return v;
  };
  const auto fmt = take("format");
  require(fmt.first == detail::costs_format, where, ":", fmt.second, ": format is '", fmt.first, "', expected '",
          detail::costs_format, "'");
  calibration cal;
  cal.costs.name = take("name").first;
  {
    const auto [v, ln] = take("cores");
    int cores = 0;
    const auto r = std::from_chars(v.data(), v.data() + v.size(), cores);
    require(r.ec == std::errc() && r.ptr == v.data() + v.size() && cores >= 1 && cores <= 4096, where, ":", ln,
            ": cores must be an integer in [1, 4096], got '", v, "'");
    cal.costs.cores = cores;
  }
  for (const auto& f : detail::number_fields()) {
    const auto [v, ln] = take(f.key);
    double d = 0;
    // strtod: std::from_chars for double is not in every standard library the project builds with
    char* end = nullptr;
    errno = 0;
    d = std::strtod(v.c_str(), &end);
    require(end == v.c_str() + v.size() && errno == 0 && std::isfinite(d), where, ":", ln, ": ", f.key,
            " = '", v, "' is not a finite number");
    require(f.rate ? d > 0 : d >= 0, where, ":", ln, ": ", f.key, " = ", v, " must be ", f.rate ? "> 0" : ">= 0");
    cal.costs.*(f.field) = d;
  }
  auto note = [&](const char* key, std::string& out) {
    auto it = kv.find(key);
    if (it == kv.end()) return;
    out = it->second.first;
    kv.erase(it);
  };
  // kernel.<key>.weights_per_s and kernel.<key>.s_per_activation, both for every key
  for (auto it = kv.begin(); it != kv.end();) {
    const std::string& key = it->first;
    const std::string a = ".weights_per_s", b = ".s_per_activation";
    auto ends = [&](const std::string& suf) {
      return key.size() > suf.size() && key.compare(key.size() - suf.size(), suf.size(), suf) == 0;
    };
    if (key.rfind("kernel.", 0) != 0 || !(ends(a) || ends(b))) {
      ++it;
      continue;
    }
    const bool is_rate = ends(a);
    const std::string name = key.substr(7, key.size() - 7 - (is_rate ? a.size() : b.size()));
    require(!name.empty(), where, ":", it->second.second, ": kernel key '", key, "' names no kernel");
    const std::string v = it->second.first;
    char* end = nullptr;
    errno = 0;
    const double d = std::strtod(v.c_str(), &end);
    require(end == v.c_str() + v.size() && errno == 0 && std::isfinite(d), where, ":", it->second.second, ": ", key,
            " = '", v, "' is not a finite number");
    require(is_rate ? d > 0 : d >= 0, where, ":", it->second.second, ": ", key, " = ", v, " must be ",
            is_rate ? "> 0" : ">= 0");
    const std::string other = "kernel." + name + (is_rate ? b : a);
    require(kv.count(other) || cal.costs.kernels.count(name), where, ":", it->second.second, ": kernel '", name,
            "' has ", key.substr(key.rfind('.') + 1), " but no ", other.substr(other.rfind('.') + 1));
    (is_rate ? cal.costs.kernels[name].weights_per_s : cal.costs.kernels[name].s_per_activation) = d;
    it = kv.erase(it);
  }
  note("isa_int8", cal.int8_isa);
  note("isa_fp32", cal.fp32_isa);
  note("isa_bf16", cal.bf16_isa);
  note("isa_lookup", cal.lookup_isa);
  if (!kv.empty()) {
    const auto& [key, v] = *kv.begin();
    require(false, where, ":", v.second, ": unknown key '", key, "'");
  }
  return cal;
}

inline void save_calibration(const calibration& cal, const std::string& path) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  lutkit::detail::require(bool(f), "save_calibration: cannot open '", path, "' for writing");
  f << to_text(cal);
  f.flush();
  lutkit::detail::require(bool(f), "save_calibration: writing '", path, "' failed");
}

inline calibration load_calibration(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  lutkit::detail::require(bool(f), "load_calibration: cannot open '", path, "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  return from_text(ss.str(), path);
}

}  // namespace lutkit::plan
