// lutkit — the planner's cost model, in the structure of Dolphium's Eq. 1
// (../shared/papers/dolphium_quant_dataflow_npu.md, §IV.D; docs/plan.md):
//
//   latency = max( max over shared resources u of  sum over cores i of lat(u, i),
//                  max over private resources u (every core's own) of lat(u) )  + per-call overheads
//
// where a resource's latency is the bytes moved through it over its bandwidth, or the
// operations run on it over its rate. The constants are a target_costs: plain numbers a
// calibration (plan/calibrate.hpp, the host) or a static model (AIE, HVX, SME proxies) fills.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../core/thread_pool.hpp"
#include "../decode/decode_gemv.hpp"
#include "../gemm/geometry.hpp"
#include "../sampling/microkernel.hpp"
#include "operator.hpp"

namespace lutkit::plan {

// One kernel's measured rate on one core (plan/calibrate.hpp, calibrate_decode<P>): the weights
// (times activation rows) a second it gets through with its weights in L2, the slope over two
// row counts, and its fixed cost per call per activation (table build, activation quantization),
// the intercept over K. What the peaks of the units do not capture: every instruction a kernel
// issues per weight besides the one the peak counts.
struct kernel_rate {
  double weights_per_s = 0;
  double s_per_activation = 0;
};

// A target's constants (bytes / s, operations / s, seconds). Rates are per core unless named
// otherwise; 0 where a target has no such unit (a workload that needs it is then an error).
struct target_costs {
  std::string name = "host";
  int cores = 1;  // cores the kernels may split over (the thread pool's threads)
  // shared: DRAM read bandwidth of all cores together (the calibration's read at `cores` threads)
  double dram_bps = 0;
  // private, per core
  double core_read_bps = 0;   // one core's streaming read from DRAM (the read at 1 thread)
  double l1_bps = 0;          // one core's read bandwidth from its L1
  double l2_bps = 0;          // from its L2
  double int8_macs_per_s = 0; // int8 multiply-adds of the decode's int8 dot (VNNI, or AVX2 vpmaddubsw)
  double fp32_fmas_per_s = 0; // fp32 fused multiply-adds (lanes)
  double bf16_macs_per_s = 0; // bf16 multiply-adds (without a native bf16 dot: widened, the FMA rate)
  double lookups_per_s = 0;   // byte table lookups (lanes of vpermb / vpshufb / TBL / vlut16)
  // per call
  double fork_join_s = 0;     // one thread-pool job over `cores` threads, each task waiting for all
  // the cores' worth of compute `cores` threads get together (0: `cores`, every core free): below
  // `cores` where the cores are SMT siblings or other processes run on them. The model then
  // also treats the compute units as one shared resource of this many cores (clamped to
  // [1, cores]), beside each core's own.
  double parallel_compute = 0;
  // measured kernels, by kernel_key(method, policy name); optional
  std::map<std::string, kernel_rate> kernels;
};

// The resources of Eq. 1 on the host: DRAM is shared, everything else is each core's own.
// kernel: the operator's own measured rate (target_costs::kernels), private.
enum class resource : int { dram, core_read, l1, l2, int8_dot, fp32_fma, bf16_dot, lookup, kernel, count };
inline constexpr int resource_count = int(resource::count);
inline constexpr bool resource_shared(resource r) { return r == resource::dram; }
// the compute units: private, and together a shared resource of target_costs::parallel_compute cores
inline constexpr bool resource_compute(resource r) {
  return r == resource::int8_dot || r == resource::fp32_fma || r == resource::bf16_dot || r == resource::lookup ||
         r == resource::kernel;
}
// parallel_compute as the model uses it: in [1, cores], `cores` where unset
inline double effective_parallel_compute(const target_costs& c) {
  const double cores = double(std::max(1, c.cores));
  const double p = c.parallel_compute > 0 ? c.parallel_compute : cores;
  return std::min(cores, std::max(1.0, p));
}
inline const char* resource_name(resource r) {
  switch (r) {
    case resource::dram: return "dram";
    case resource::core_read: return "core_read";
    case resource::l1: return "l1";
    case resource::l2: return "l2";
    case resource::int8_dot: return "int8_dot";
    case resource::fp32_fma: return "fp32_fma";
    case resource::bf16_dot: return "bf16_dot";
    case resource::lookup: return "lookup";
    case resource::kernel: return "kernel";
    default: return "?";
  }
}
// its bandwidth or rate in `c` (resource::kernel: the workload's own, workload::kernel_rate)
inline double resource_rate(const target_costs& c, resource r) {
  switch (r) {
    case resource::dram: return c.dram_bps;
    case resource::core_read: return c.core_read_bps;
    case resource::l1: return c.l1_bps;
    case resource::l2: return c.l2_bps;
    case resource::int8_dot: return c.int8_macs_per_s;
    case resource::fp32_fma: return c.fp32_fmas_per_s;
    case resource::bf16_dot: return c.bf16_macs_per_s;
    case resource::lookup: return c.lookups_per_s;
    default: return 0;
  }
}

// One core's demand on each resource (bytes or operations). DRAM bytes also pass the core's own
// read path: the model charges them to both (shared dram, private core_read).
struct core_work {
  std::array<double, resource_count> amount{};
  double& operator[](resource r) { return amount[std::size_t(r)]; }
  double operator[](resource r) const { return amount[std::size_t(r)]; }
};

// A call: the work of each core running it, and its serial overheads (seconds: the thread
// pool's fork / join, table builds or activation quantization on the calling thread).
struct workload {
  std::vector<core_work> cores;
  double overhead_s = 0;
  double kernel_rate = 0;  // the rate of resource::kernel (weights / s), where the work uses it
  // the cores' worth of resource::kernel together where the work runs on several: the kernel's
  // own measured factor (kernel_parallel_factor); 0: the target's parallel_compute
  double kernel_parallel = 0;
};

struct cost_breakdown {
  double shared_s = 0;    // max over shared resources of the sum over cores (DRAM; the compute
                          // units over parallel_compute cores where the work runs on several)
  double private_s = 0;   // max over private resources (and cores)
  double overhead_s = 0;
  double total_s = 0;     // max(shared_s, private_s) + overhead_s
  resource bottleneck = resource::dram;
};

// Eq. 1 on `w` with the constants `c`. A resource the work uses with no rate in `c` is an error.
inline cost_breakdown evaluate(const target_costs& c, const workload& w) {
  lutkit::detail::require(!w.cores.empty(), "plan: a workload needs at least one core");
  lutkit::detail::require(std::isfinite(w.overhead_s) && w.overhead_s >= 0, "plan: overhead ", w.overhead_s, " s is not >= 0");
  cost_breakdown b;
  b.overhead_s = w.overhead_s;
  double best_shared = -1, best_private = -1;
  resource shared_r = resource::dram, private_r = resource::dram;
  for (int ri = 0; ri < resource_count; ++ri) {
    const resource r = resource(ri);
    const double rate = r == resource::kernel ? w.kernel_rate : resource_rate(c, r);
    double sum = 0, mx = 0;
    bool used = false;
    for (const core_work& cw : w.cores) {
      const double a = cw[r];
      lutkit::detail::require(std::isfinite(a) && a >= 0, "plan: negative or non-finite demand on ", resource_name(r));
      if (a == 0) continue;
      used = true;
      lutkit::detail::require(rate > 0 && std::isfinite(rate), "plan: target '", c.name, "' has no rate for resource ",
                      resource_name(r), ", which the workload uses");
      sum += a / rate;
      mx = std::max(mx, a / rate);
    }
    if (!used) continue;
    if (resource_compute(r) && w.cores.size() > 1) {  // the cores' compute together, shared
      const double s =
          sum / (r == resource::kernel && w.kernel_parallel > 0 ? w.kernel_parallel : effective_parallel_compute(c));
      if (s > best_shared) best_shared = s, shared_r = r;
    }
    if (resource_shared(r)) {
      if (sum > best_shared) best_shared = sum, shared_r = r;
    } else {
      if (mx > best_private) best_private = mx, private_r = r;
    }
  }
  b.shared_s = std::max(0.0, best_shared);
  b.private_s = std::max(0.0, best_private);
  b.bottleneck = b.shared_s >= b.private_s ? shared_r : private_r;
  b.total_s = std::max(b.shared_s, b.private_s) + b.overhead_s;
  return b;
}

// ---------------------------------------------------------------- decode GEMV
// What each decode method asks per weight (and per activation row n of the N), the model's
// counts of the kernels' work (docs/plan.md, "Decode methods"):
//   lut_gemv  planes / 4 byte lookups per weight per row (one lookup lane per 4 weights per bit
//             plane); its tables, one row's table_bytes_per_step per 4 activations, read from L1
//             once per 64-row tile; built per call: 16 entries per 4 activations per row
//   int8      one int8 multiply-add per weight per row; level 1 (codes to u8 levels) one byte
//             lookup per weight; activations quantized per call, `act_prep_flops` per activation
//   fused_dq  level 2 to fp32: one FMA lane per weight (scale, zero) and 4 bytes written and read
//             back in L1; one fp32 FMA per weight per row
//   bf16      level 1 and level 2 one lookup per weight each; 2 bytes written and read back in L1;
//             one bf16 multiply-add per weight per row
// Every method reads the blob once from DRAM.
struct method_work {
  double lookups_per_weight = 0;         // independent of N
  double lookups_per_weight_row = 0;     // times N
  double int8_macs_per_weight_row = 0;
  double fp32_fmas_per_weight = 0;
  double fp32_fmas_per_weight_row = 0;
  double bf16_macs_per_weight_row = 0;
  double l1_bytes_per_weight = 0;
  double act_prep_flops = 0;             // fp32 operations per activation on the calling thread
};

// the key of a decode kernel in target_costs::kernels: "decode.<method>.<policy name>"
inline std::string kernel_key(decode_method m, const std::string& policy) {
  const char* n = m == decode_method::lut_gemv ? "lut_gemv"
                  : m == decode_method::fused_dq ? "fused_dq"
                  : m == decode_method::int8     ? "int8"
                  : m == decode_method::bf16     ? "bf16"
                                                 : "best";
  return std::string("decode.") + n + "." + policy;
}
// A measured kernel at every core (target_costs::cores threads; calibrate_decode,
// calibrate_prefill): its own rate there (weights / s, all cores together; intercept: its fixed
// cost per activation at those threads, for the record). What a kernel keeps at every core (of
// the DRAM read, of its units) differs by kernel: its stream's prefetch, the compute it
// interleaves, the cache it shares; neither the shared read nor parallel_compute, both measured
// by plain loops, knows it.
inline std::string kernel_parallel_key(const std::string& key) { return key + ".parallel"; }
// A calibration's entries for the kernel `key`: measure(nullptr) on one core, and with more than
// one core measure(&pool) over every core (else an earlier calibration's entry removed).
template <class Measure>
void store_kernel_rates(target_costs& c, const std::string& key, Measure&& measure) {
  c.kernels[key] = measure(static_cast<thread_pool*>(nullptr));
  if (c.cores > 1) {
    thread_pool pool(std::size_t(c.cores));
    c.kernels[kernel_parallel_key(key)] = measure(&pool);
  } else {
    c.kernels.erase(kernel_parallel_key(key));
  }
}
// The cores' worth of the kernel `key` at `threads` threads: its rate at every core over its
// one-core rate, in [1, cores]; between one thread and every core linear in the threads. 0 (the
// target's parallel_compute) without both entries or on one thread.
inline double kernel_parallel_factor(const target_costs& c, const std::string& key, int threads) {
  const auto one = c.kernels.find(key), all = c.kernels.find(kernel_parallel_key(key));
  if (threads <= 1 || c.cores <= 1 || one == c.kernels.end() || all == c.kernels.end() ||
      !(one->second.weights_per_s > 0) || !(all->second.weights_per_s > 0))
    return 0;
  const double cores = double(c.cores);
  const double f = std::clamp(all->second.weights_per_s / one->second.weights_per_s, 1.0, cores);
  return 1 + (f - 1) * double(std::min(threads, c.cores) - 1) / (cores - 1);
}

inline method_work decode_method_work(decode_method m, const matmul_op& op) {
  method_work w;
  switch (m) {
    case decode_method::lut_gemv:
      w.lookups_per_weight_row = double(op.planes) / 4.0;
      w.act_prep_flops = 16.0 / double(op.k_per_step) * 2.0;  // 16 entries a step: an add and a convert each
      break;
    case decode_method::int8:
      w.lookups_per_weight = 1;
      w.int8_macs_per_weight_row = 1;
      w.act_prep_flops = 4;  // |x| max, scale, round, convert
      break;
    case decode_method::fused_dq:
      w.fp32_fmas_per_weight = 1;
      w.fp32_fmas_per_weight_row = 1;
      w.l1_bytes_per_weight = 8;
      break;
    case decode_method::bf16:
      w.lookups_per_weight = 2;
      w.bf16_macs_per_weight_row = 1;
      w.l1_bytes_per_weight = 4;
      w.act_prep_flops = 2;  // the activation panel: convert and store
      break;
    default: lutkit::detail::require(false, "plan: decode_method::best is a choice, not a method the model can cost");
  }
  return w;
}

// The workload of `op` by method `m` on `threads` cores: the row tiles split as evenly as the
// driver splits them (the first tiles % threads cores take one more), every core's DRAM bytes its
// tiles' share of the blob.
inline workload decode_workload(const target_costs& c, const matmul_op& op, decode_method m, int threads) {
  lutkit::detail::require(threads >= 1, "plan: threads must be >= 1 (got ", threads, ")");
  lutkit::detail::require(threads <= std::max(1, c.cores), "plan: ", threads, " threads, but target '", c.name, "' has ",
                  c.cores, " cores");
  lutkit::detail::require(op.M > 0 && op.K > 0 && op.N > 0 && op.tiles > 0 && op.blob_bytes > 0,
                  "plan: an empty matmul (", op.M, " x ", op.K, ", N = ", op.N, ")");
  if (m == decode_method::lut_gemv)
    lutkit::detail::require(op.lut_gemv_capable, "plan: policy ", op.policy, " has no LUT-GEMV");
  const method_work mw = decode_method_work(m, op);
  const auto measured = c.kernels.find(kernel_key(m, op.policy));
  const kernel_rate* kr = measured == c.kernels.end() ? nullptr : &measured->second;
  const std::size_t T = std::min<std::size_t>(std::size_t(threads), op.tiles);
  workload wl;
  const double N = double(op.N), K = double(op.K);
  for (std::size_t i = 0; i < T; ++i) {
    const std::size_t tiles_i = op.tiles / T + (i < op.tiles % T ? 1 : 0);
    const double share = double(tiles_i) / double(op.tiles);
    const double weights = double(op.M) * K * share;
    core_work cw;
    cw[resource::dram] = double(op.blob_bytes) * share;
    cw[resource::core_read] = double(op.blob_bytes) * share;
    cw[resource::lookup] = weights * (mw.lookups_per_weight + mw.lookups_per_weight_row * N);
    cw[resource::int8_dot] = weights * mw.int8_macs_per_weight_row * N;
    cw[resource::fp32_fma] = weights * (mw.fp32_fmas_per_weight + mw.fp32_fmas_per_weight_row * N);
    cw[resource::bf16_dot] = weights * mw.bf16_macs_per_weight_row * N;
    cw[resource::l1] = weights * mw.l1_bytes_per_weight;
    if (m == decode_method::lut_gemv)  // each tile reads every step's tables of the N rows
      cw[resource::l1] += double(tiles_i) * (K / double(op.k_per_step)) * N * double(op.table_bytes_per_step);
    if (kr) cw[resource::kernel] = weights * N;
    wl.cores.push_back(cw);
  }
  if (kr) {  // the measured kernel: its own rate, and its measured fixed cost in place of the counts'
    wl.kernel_rate = kr->weights_per_s;
    wl.kernel_parallel = kernel_parallel_factor(c, kernel_key(m, op.policy), int(T));
    wl.overhead_s += K * N * kr->s_per_activation;
  } else if (mw.act_prep_flops > 0) {
    lutkit::detail::require(c.fp32_fmas_per_s > 0, "plan: target '", c.name, "' has no fp32 rate (activation preparation)");
    wl.overhead_s += K * N * mw.act_prep_flops / c.fp32_fmas_per_s;
  }
  if (T > 1) wl.overhead_s += c.fork_join_s;
  return wl;
}

inline cost_breakdown model_decode(const target_costs& c, const matmul_op& op, decode_method m, int threads) {
  return evaluate(c, decode_workload(c, op, m, threads));
}

// The thread count (1 .. c.cores) with the least modelled time for `op` by `m`; ties to fewer
// threads (times within a relative 1e-9: a bound shared by every count, DRAM, sums the cores'
// shares in a different order at each count and differs in the last bits).
namespace detail {
// the thread count in [1, cores] of least modelled(t) seconds; a tie (within 1e-9) to fewer
template <class F>
int fewest_fastest_threads(int cores, F&& modelled) {
  int best_t = 1;
  double best = modelled(1);
  for (int t = 2; t <= cores; ++t) {
    const double s = modelled(t);
    if (s < best * (1 - 1e-9)) best = s, best_t = t;
  }
  return best_t;
}
}  // namespace detail
inline int choose_threads(const target_costs& c, const matmul_op& op, decode_method m) {
  return detail::fewest_fastest_threads(c.cores, [&](int t) { return model_decode(c, op, m, t).total_s; });
}

// ---------------------------------------------------------------- the other operators
// Each is costed like a decode method: the bytes it reads from DRAM (shared, and each core's
// own read), the operations it counts on the units, and where calibrate_ops (plan/calibrate_ops.hpp)
// has timed the kernel on this host, its own rate (resource::kernel) and its fixed cost. The
// units' counts are lower bounds (docs/plan.md); the measured rate is what closes the gap.

// the split of `units` work items over `threads` cores as the drivers split them (the first
// units % T cores one more); T is min(threads, units)
inline std::vector<double> split_shares(std::size_t units, int threads) {
  const std::size_t T = std::max<std::size_t>(1, std::min<std::size_t>(std::size_t(threads), units));
  std::vector<double> share;
  for (std::size_t i = 0; i < T; ++i)
    share.push_back(double(units / T + (i < units % T ? 1 : 0)) / double(units));
  return share;
}
inline void check_threads(const target_costs& c, int threads) {
  lutkit::detail::require(threads >= 1, "plan: threads must be >= 1 (got ", threads, ")");
  lutkit::detail::require(threads <= std::max(1, c.cores), "plan: ", threads, " threads, but target '", c.name, "' has ",
                          c.cores, " cores");
}
inline const kernel_rate* find_kernel(const target_costs& c, const std::string& key) {
  const auto it = c.kernels.find(key);
  return it == c.kernels.end() ? nullptr : &it->second;
}

// Prefill GEMM (gemm/dequant_gemm.hpp) with activation paradigm `act`: the row tiles over the
// threads (its work queue), each weight unpacked once per column pass (the blob read once per
// pass of n_block() = 768 columns) and multiplied with every activation row: one multiply-add
// per weight per row on the paradigm's unit (int8 / int8_group: the int8 dot, bf16: the bf16 dot,
// fp32: the FMA). The activations are prepared (quantized, or converted to the panel) over the
// same threads: `prep_flops` per activation over the fp32 rate, or the measured intercept.
// Kernel key: "prefill.<act>.<policy>" (the rate in weights x rows a second on one core).
inline std::string prefill_kernel_key(act_type a, const std::string& policy) {
  return std::string("prefill.") + act_name(a) + "." + policy;
}
inline workload prefill_workload(const target_costs& c, const matmul_op& op, act_type act, int threads) {
  check_threads(c, threads);
  lutkit::detail::require(op.M > 0 && op.K > 0 && op.N > 0 && op.tiles > 0 && op.blob_bytes > 0,
                          "plan: an empty matmul (", op.M, " x ", op.K, ", N = ", op.N, ")");
  const kernel_rate* kr = find_kernel(c, prefill_kernel_key(act, op.policy));
  const double N = double(op.N), K = double(op.K), passes = double((op.N + 767) / 768);
  const resource unit = act == act_type::fp32   ? resource::fp32_fma
                        : act == act_type::bf16 ? resource::bf16_dot
                                                : resource::int8_dot;
  workload wl;
  const auto shares = split_shares(op.tiles, threads);
  for (double share : shares) {
    const double weights = double(op.M) * K * share;
    core_work cw;
    cw[resource::dram] = cw[resource::core_read] = double(op.blob_bytes) * share * passes;
    cw[unit] = weights * N;
    if (kr) cw[resource::kernel] = weights * N;
    wl.cores.push_back(cw);
  }
  const double T = double(shares.size());
  if (kr) {
    wl.kernel_rate = kr->weights_per_s;
    wl.kernel_parallel = kernel_parallel_factor(c, prefill_kernel_key(act, op.policy), int(T));
    wl.overhead_s += K * N * kr->s_per_activation / T;
  } else {
    lutkit::detail::require(c.fp32_fmas_per_s > 0, "plan: target '", c.name, "' has no fp32 rate (activation preparation)");
    wl.overhead_s += K * N * 4.0 / c.fp32_fmas_per_s / T;
  }
  if (shares.size() > 1) wl.overhead_s += c.fork_join_s;
  return wl;
}
inline cost_breakdown model_prefill(const target_costs& c, const matmul_op& op, act_type act, int threads) {
  return evaluate(c, prefill_workload(c, op, act, threads));
}
// the thread count the model prefers for the prefill GEMM by paradigm `act` (ties to fewer)
inline int choose_prefill_threads(const target_costs& c, const matmul_op& op, act_type act) {
  return detail::fewest_fastest_threads(c.cores, [&](int t) { return model_prefill(c, op, act, t).total_s; });
}

// Attention (attention/attention.hpp) of `queries` query rows at the end of a context: each
// query row of a head sees its causal keys (decode: queries = 1, every key; prefill: query i of
// n sees context - n + i + 1). The work unit is one query head x key x head dimension (the q.k
// multiply-adds; p.v is as many again): "score_macs". The keys and values are read from DRAM
// once per call (the prefill's query tiles re-read them from cache), split over the heads'
// threads; one exponential per score (counted as 8 fp32 operations). Kernel keys
// "attention.decode" / "attention.prefill" (rate: score_macs a second on one core; intercept:
// seconds per query row and head, the per-row softmax and merge).
inline double attention_score_macs(const attention_op& a) {
  const double n = double(a.queries), ctx = double(a.context);
  const double keys = a.causal ? n * (ctx - n) + n * (n + 1) / 2 : n * ctx;  // keys seen, summed over the queries
  return double(a.heads) * double(a.head_dim) * keys;
}
inline workload attention_workload(const target_costs& c, const attention_op& a, int threads) {
  check_threads(c, threads);
  lutkit::detail::require(a.heads > 0 && a.kv_heads > 0 && a.heads % a.kv_heads == 0 && a.head_dim > 0 && a.context > 0 &&
                              a.queries > 0 && a.queries <= a.context,
                          "plan: attention needs heads a multiple of kv_heads > 0, head_dim > 0 and 0 < queries <= context");
  const kernel_rate* kr = find_kernel(c, a.queries == 1 ? "attention.decode" : "attention.prefill");
  const double macs = attention_score_macs(a), exps = macs / double(a.head_dim);
  workload wl;
  // decode: key splits of 512 positions (at most 32, every head in each; attention/driver.hpp,
  // run_decode), so a context of 512 or fewer runs on one thread; prefill: query tiles x heads
  const std::size_t units = a.queries == 1 ? std::clamp<std::size_t>((a.context + 511) / 512, 1, 32)
                                           : a.heads * ((a.queries + 63) / 64);
  const auto shares = split_shares(units, threads);
  for (double share : shares) {
    core_work cw;
    cw[resource::dram] = cw[resource::core_read] = double(a.kv_cache_bytes()) * share;
    cw[resource::fp32_fma] = (2 * macs + 8 * exps) * share;
    if (kr) cw[resource::kernel] = macs * share;
    wl.cores.push_back(cw);
  }
  if (kr) {
    wl.kernel_rate = kr->weights_per_s;
    wl.overhead_s += double(a.queries) * double(a.heads) * kr->s_per_activation / double(shares.size());
  }
  if (shares.size() > 1) wl.overhead_s += c.fork_join_s;
  return wl;
}
inline cost_breakdown model_attention(const target_costs& c, const attention_op& a, int threads) {
  return evaluate(c, attention_workload(c, a, threads));
}

// Sampling (sampling/autoregressive.hpp, sampling/dllm.hpp): one streaming read of each row's
// logits by the pass sampling_op::pass names, then per row the selection (ar_sample: the
// candidates and the draw; dllm_sample: the token and its confidence). Work unit: one logit,
// counted as fp32 operations (sampling_flops: the maxima, the sums' exponentials or chords, the
// decode of bf16 / fp16 / MXFP8 logits, the Gumbel noise). Threads:
// - ar_sample: rows over the threads, a row over them by the driver's rule (detail::ar_split_rows:
//   fewer rows than threads, at least 256 KiB a row); a row's selection runs on one thread.
// - dllm_sample: the positions over the threads (4 tasks a thread), selection included.
// Kernel key sampling_kernel_key(pass, type), "sampling.<pass>.<type>" (rate: logits a second;
// intercept: seconds per row, its selection); a split row adds the intercept of
// sampling_split_key(pass, type), its measured cost beyond that.
inline std::string sampling_kernel_key(sampling_pass pass, logit_type type) {
  return std::string("sampling.") + sampling_pass_name(pass) + "." + logit_type_name(type);
}
// a row split over the threads (ar_sample): its measured cost beyond the parts and the selection
// (calibrate_sampling; intercept: seconds per split row, which the model adds; rate: the split
// row's logits a second as measured, for the record)
inline std::string sampling_split_key(sampling_pass pass, logit_type type) {
  return sampling_kernel_key(pass, type) + ".split";
}
inline double sampling_flops(const sampling_op& s) {
  double f = 0;
  switch (s.pass) {
    case sampling_pass::maxima: f = 2; break;        // a maximum, the block maxima
    case sampling_pass::chords: f = 2 + 5; break;    // and a chord: five vector operations
    case sampling_pass::exps: f = 2 + 12; break;     // and an exponential: twelve
    case sampling_pass::dllm: f = 4 + 12; break;     // argmax, exponential
    case sampling_pass::dllm_gumbel: f = 4 + 12 + 24; break;  // and the noise: a hash and a log
  }
  return f + (s.type == logit_type::f32 ? 0.0 : s.type == logit_type::mxfp8 ? 3.0 : 1.0);
}
inline workload sampling_workload(const target_costs& c, const sampling_op& s, int threads) {
  check_threads(c, threads);
  check_sampling_op(s);
  const kernel_rate* kr = find_kernel(c, sampling_kernel_key(s.pass, s.type));
  const bool dllm = s.pass == sampling_pass::dllm || s.pass == sampling_pass::dllm_gumbel;
  // (the driver's row size: the elements, MXFP8's exponents aside)
  const std::size_t row_bytes = s.vocab * logits_view{s.type, nullptr, nullptr, 1, s.vocab}.element_bytes();
  const bool split = !dllm && lutkit::detail::ar_split_rows(s.rows, std::size_t(threads), row_bytes);
  const auto shares = split ? split_shares(s.rows * std::size_t(threads), threads) : split_shares(s.rows, threads);
  const double logits = double(s.vocab) * double(s.rows);
  workload wl;
  for (double share : shares) {
    core_work cw;
    cw[resource::dram] = cw[resource::core_read] = double(s.logits_bytes()) * share;
    cw[resource::fp32_fma] = sampling_flops(s) * logits * share;
    if (kr) cw[resource::kernel] = logits * share;
    wl.cores.push_back(cw);
  }
  if (kr) {
    wl.kernel_rate = kr->weights_per_s;
    // the selections: ar_sample's on the row's one thread, dllm_sample's in the positions' tasks
    const double parallel = dllm ? double(shares.size()) : double(std::min<std::size_t>(s.rows, shares.size()));
    wl.overhead_s += double(s.rows) * kr->s_per_activation / parallel;
  }
  if (split) {
    const kernel_rate* sk = find_kernel(c, sampling_split_key(s.pass, s.type));
    if (sk) wl.overhead_s += double(s.rows) * sk->s_per_activation;
  }
  if (shares.size() > 1) wl.overhead_s += c.fork_join_s;
  return wl;
}
inline cost_breakdown model_sampling(const target_costs& c, const sampling_op& s, int threads) {
  return evaluate(c, sampling_workload(c, s, threads));
}

}  // namespace lutkit::plan
