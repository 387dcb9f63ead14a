// plan/: the cost model's arithmetic (Dolphium's Eq. 1) on hand-computed cases, the chooser's
// budget rule, the calibration file (save -> load is exact, malformed files rejected), and plans
// deterministic for a fixed calibration file.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include <lutkit/packing/pack.hpp>
#include <lutkit/plan/calibrate.hpp>
#include <lutkit/plan/calibrate_decode.hpp>
#include <lutkit/plan/calibrate_ops.hpp>
#include <lutkit/plan/chooser.hpp>
#include <lutkit/plan/cost_model.hpp>
#include <lutkit/plan/operator.hpp>

using namespace lutkit;
using namespace lutkit::plan;
using i8m = table::lut4<int8_t, true>;
using Q4_0 = policy<fmt::uint_sym<4>, group<32>>;  // the default tables (mirrored int16)

namespace {
// round numbers, so every expected time below is exact arithmetic
target_costs toy_costs() {
  target_costs c;
  c.name = "toy";
  c.cores = 2;
  c.dram_bps = 10;
  c.core_read_bps = 8;
  c.l1_bps = 100;
  c.l2_bps = 50;
  c.int8_macs_per_s = 4;
  c.fp32_fmas_per_s = 2;
  c.bf16_macs_per_s = 2;
  c.lookups_per_s = 16;
  c.fork_join_s = 0.5;
  return c;
}

std::string tmp_path(const char* name) { return std::string("lutkit_plan_test_") + name + ".txt"; }

// 500 random candidate sets of `choices` (each kept with probability 0.8, random errors and
// times) and budgets: the chooser's pick is within the budget and no candidate within it is
// faster; a set with none within is an error. Returns how many sets had a pick.
template <class C, class Choice, class Choose>
int random_choices(uint64_t seed, std::initializer_list<Choice> choices, Choose&& choose_fn) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  int chosen = 0;
  for (int it = 0; it < 500; ++it) {
    std::vector<C> cs;
    for (Choice ch : choices)
      if (u(rng) < 0.8) cs.push_back(C{ch, u(rng) * 0.04, u(rng), 1});
    if (cs.empty()) continue;
    const double budget = u(rng) * 0.04;
    bool any = false;
    for (const auto& c : cs) any = any || c.error <= budget;
    if (!any) {
      CHECK_THROWS_AS(choose_fn(cs, budget), lutkit::error);
      continue;
    }
    const C p = choose_fn(cs, budget);
    ++chosen;
    REQUIRE(p.error <= budget);
    for (const auto& c : cs)
      if (c.error <= budget) REQUIRE(p.modelled_s <= c.modelled_s);
  }
  return chosen;
}

calibration sample_calibration() {
  calibration cal;
  cal.costs.name = "host";
  cal.costs.cores = 2;
  cal.costs.dram_bps = 1.2345678901234567e10;
  cal.costs.core_read_bps = 9.87654321e9;
  cal.costs.l1_bps = 2.0e11 / 3.0;  // not a short decimal: the round trip must keep every bit
  cal.costs.l2_bps = 5.5e10;
  cal.costs.int8_macs_per_s = 3.3e11;
  cal.costs.fp32_fmas_per_s = 8.1e10;
  cal.costs.bf16_macs_per_s = 8.1e10;
  cal.costs.lookups_per_s = 1.7e11;
  cal.costs.fork_join_s = 3.1e-6;
  cal.costs.parallel_compute = 1.75;
  cal.costs.kernels["decode.int8.w4_g32_sym"] = {1.25e9, 2.5e-10};
  cal.costs.kernels["decode.lut_gemv.w4_g32_sym"] = {7.0e9 / 3.0, 0};
  cal.int8_isa = "avx2";
  cal.lookup_isa = "avx512vbmi";
  return cal;
}
}  // namespace

TEST_CASE("plan: Eq. 1 takes the larger of the shared sum and the slowest private resource", "[plan]") {
  const target_costs c = toy_costs();
  SECTION("shared DRAM summed over cores dominates") {
    workload w;
    core_work a, b;
    a[resource::dram] = 100;  // 10 s on DRAM
    b[resource::dram] = 60;   // 6 s
    a[resource::lookup] = 32; // 2 s private
    w.cores = {a, b};
    const auto r = evaluate(c, w);
    CHECK(r.shared_s == 16.0);  // (100 + 60) / 10, not max(10, 6)
    CHECK(r.private_s == 2.0);
    CHECK(r.total_s == 16.0);
    CHECK(r.bottleneck == resource::dram);
  }
  SECTION("the slowest private resource of any core dominates: max, not sum") {
    workload w;
    core_work a, b;
    a[resource::dram] = 10;       // shared 1 + 1 = 2 s
    b[resource::dram] = 10;
    a[resource::int8_dot] = 40;   // 10 s on core a's int8 unit
    b[resource::int8_dot] = 36;   // 9 s on core b's (not 19: private)
    b[resource::fp32_fma] = 4;    // 2 s
    w.cores = {a, b};
    const auto r = evaluate(c, w);
    // shared: DRAM 2 s; the int8 units pooled over the 2 free cores (10 + 9) / 2 = 9.5 s
    CHECK(r.shared_s == 9.5);
    CHECK(r.private_s == 10.0);
    CHECK(r.total_s == 10.0);
    CHECK(r.bottleneck == resource::int8_dot);
  }
  SECTION("the compute units shared: parallel_compute cores' worth over several cores") {
    workload w;
    core_work a, b;
    a[resource::int8_dot] = 40;  // 10 s on each core's own unit
    b[resource::int8_dot] = 40;
    w.cores = {a, b};
    target_costs d = c;
    d.parallel_compute = 0;  // unset: every core free, the private 10 s
    CHECK(evaluate(d, w).total_s == 10.0);
    d.parallel_compute = 2;
    CHECK(evaluate(d, w).total_s == 10.0);
    d.parallel_compute = 1.25;  // (40 + 40) / 4 / 1.25
    CHECK(evaluate(d, w).total_s == 16.0);
    CHECK(evaluate(d, w).bottleneck == resource::int8_dot);
    d.parallel_compute = 0.5;  // clamped to one core: (40 + 40) / 4
    CHECK(evaluate(d, w).total_s == 20.0);
    d.parallel_compute = 1.25;  // one core's work: its own unit only
    w.cores = {a};
    CHECK(evaluate(d, w).total_s == 10.0);
  }
  SECTION("DRAM bytes charged to the core's own read path too") {
    workload w;
    core_work a;
    a[resource::dram] = 80;       // 8 s shared
    a[resource::core_read] = 80;  // 10 s private
    w.cores = {a};
    const auto r = evaluate(c, w);
    CHECK(r.shared_s == 8.0);
    CHECK(r.private_s == 10.0);
    CHECK(r.total_s == 10.0);
    CHECK(r.bottleneck == resource::core_read);
  }
  SECTION("overheads are added to the max") {
    workload w;
    core_work a;
    a[resource::l1] = 300;  // 3 s
    w.cores = {a};
    w.overhead_s = 0.25;
    const auto r = evaluate(c, w);
    CHECK(r.total_s == 3.25);
    CHECK(r.overhead_s == 0.25);
  }
  SECTION("a resource without a rate is an error; so is an empty workload") {
    target_costs d = c;
    d.bf16_macs_per_s = 0;
    workload w;
    core_work a;
    a[resource::bf16_dot] = 1;
    w.cores = {a};
    CHECK_THROWS_AS(evaluate(d, w), lutkit::error);
    CHECK_THROWS_WITH(evaluate(d, w), Catch::Contains("bf16_dot"));
    CHECK_THROWS_AS(evaluate(c, workload{}), lutkit::error);
  }
}

TEST_CASE("plan: a decode GEMV's workload by method, hand-computed", "[plan]") {
  target_costs c = toy_costs();
  // a made-up 4-bit operator: 4 tiles of 64 rows, K = 128, 1000 blob bytes
  matmul_op op;
  op.policy = "toy";
  op.M = 256;
  op.K = 128;
  op.N = 2;
  op.blob_bytes = 1000;
  op.tiles = 4;
  op.planes = 4;
  op.k_per_step = 4;
  op.table_bytes_per_step = 16;
  op.lut_gemv_capable = true;
  const double weights = 256.0 * 128.0;  // 32768
  SECTION("lut_gemv at 1 thread: lookups planes / 4 per weight per row") {
    const workload w = decode_workload(c, op, decode_method::lut_gemv, 1);
    REQUIRE(w.cores.size() == 1);
    CHECK(w.cores[0][resource::dram] == 1000.0);
    CHECK(w.cores[0][resource::lookup] == weights * 1.0 * 2);               // 65536
    CHECK(w.cores[0][resource::l1] == 4.0 * (128.0 / 4) * 2 * 16);          // 4096 table bytes
    CHECK(w.overhead_s == 128.0 * 2 * (16.0 / 4 * 2) / 2.0);                // 1024 table flops at 2/s
    const auto r = model_decode(c, op, decode_method::lut_gemv, 1);
    // dram 100 s, core_read 125 s, lookups 4096 s, l1 40.96 s: the lookups dominate
    CHECK(r.total_s == 4096.0 + 1024.0);
    CHECK(r.bottleneck == resource::lookup);
  }
  SECTION("int8 at 2 threads: tiles split 2 / 2, fork / join added") {
    const workload w = decode_workload(c, op, decode_method::int8, 2);
    REQUIRE(w.cores.size() == 2);
    CHECK(w.cores[0][resource::dram] == 500.0);
    CHECK(w.cores[1][resource::int8_dot] == weights / 2 * 2);  // 32768
    CHECK(w.cores[1][resource::lookup] == weights / 2);
    CHECK(w.overhead_s == 128.0 * 2 * 4 / 2.0 + 0.5);  // 1024 quantization flops at 2/s, fork / join
    // int8 units 8192 s a core (private, not summed), lookups 1024 s, DRAM 100 s shared
    CHECK(model_decode(c, op, decode_method::int8, 2).total_s == 32768.0 / 4 + 512.5);
  }
  SECTION("a measured kernel: its rate is a private resource, its fixed cost replaces the counts'") {
    c.kernels[kernel_key(decode_method::int8, "toy")] = {2.0, 0.25};  // 2 weights / s, 0.25 s per activation
    const workload w = decode_workload(c, op, decode_method::int8, 2);
    CHECK(w.kernel_rate == 2.0);
    CHECK(w.cores[0][resource::kernel] == weights / 2 * 2);          // weights x N
    CHECK(w.overhead_s == 128.0 * 2 * 0.25 + 0.5);                    // K N s_per_activation, fork / join
    const auto r = model_decode(c, op, decode_method::int8, 2);
    CHECK(r.bottleneck == resource::kernel);
    CHECK(r.total_s == 32768.0 / 2 + 64.5);                          // slower than the int8 peak's 8192 s
    // another method or policy is not affected
    CHECK(decode_workload(c, op, decode_method::fused_dq, 2).kernel_rate == 0);
  }
  SECTION("a measured kernel at every core: its own share of the cores in place of parallel_compute") {
    const std::string key = kernel_key(decode_method::int8, "toy");
    c.kernels[key] = {2.0, 0.25};
    c.kernels[kernel_parallel_key(key)] = {3.0, 0.4};  // 3 weights / s at 2 cores: 1.5 cores' worth
    CHECK(kernel_parallel_key(key) == "decode.int8.toy.parallel");
    CHECK(kernel_parallel_factor(c, key, 2) == 1.5);
    CHECK(kernel_parallel_factor(c, key, 1) == 0);  // one thread: nothing shared
    CHECK(decode_workload(c, op, decode_method::int8, 2).kernel_parallel == 1.5);
    // the kernel's 65536 weights x rows over both cores at 3 / s (private: 16384 s a core)
    auto r = model_decode(c, op, decode_method::int8, 2);
    CHECK(r.bottleneck == resource::kernel);
    CHECK(r.shared_s == Approx(65536.0 / 3).epsilon(1e-12));
    CHECK(r.total_s == Approx(65536.0 / 3 + 64.5).epsilon(1e-12));
    CHECK(model_decode(c, op, decode_method::int8, 1).total_s == 65536.0 / 2 + 64);  // one core: its own rate
    // clamped to [1, cores]: a kernel measured slower at every core than at one, or faster than
    // cores times one
    c.kernels[kernel_parallel_key(key)] = {1.0, 0};
    CHECK(model_decode(c, op, decode_method::int8, 2).shared_s == 65536.0 / 2);
    c.kernels[kernel_parallel_key(key)] = {10.0, 0};
    CHECK(model_decode(c, op, decode_method::int8, 2).shared_s == 65536.0 / 4);
    // between one thread and every core, linear in the threads (4 cores, 3 cores' worth at 4: 2
    // threads 1 + 2 / 3)
    target_costs c4 = c;
    c4.cores = 4;
    c4.kernels[kernel_parallel_key(key)] = {6.0, 0};
    CHECK(kernel_parallel_factor(c4, key, 2) == Approx(1 + 2.0 / 3).epsilon(1e-15));
    CHECK(kernel_parallel_factor(c4, key, 4) == 3.0);
    // without the one-core entry, or for another method, nothing
    CHECK(decode_workload(c, op, decode_method::fused_dq, 2).kernel_parallel == 0);
    c.kernels.erase(key);
    CHECK(kernel_parallel_factor(c, key, 2) == 0);
  }
  SECTION("uneven tiles: the first cores take one more") {
    op.tiles = 5;
    op.M = 320;
    const workload w = decode_workload(c, op, decode_method::fused_dq, 2);
    REQUIRE(w.cores.size() == 2);
    CHECK(w.cores[0][resource::dram] == 600.0);
    CHECK(w.cores[1][resource::dram] == 400.0);
    CHECK(w.cores[0][resource::fp32_fma] == 320.0 * 128 * 3 / 5 * (1 + 2));
    CHECK(w.overhead_s == 0.5);  // FusedDQP prepares no activations
  }
  SECTION("bad requests are errors") {
    CHECK_THROWS_AS(decode_workload(c, op, decode_method::best, 1), lutkit::error);
    CHECK_THROWS_AS(decode_workload(c, op, decode_method::int8, 3), lutkit::error);  // 2 cores
    CHECK_THROWS_AS(decode_workload(c, op, decode_method::int8, 0), lutkit::error);
    op.lut_gemv_capable = false;
    CHECK_THROWS_AS(decode_workload(c, op, decode_method::lut_gemv, 1), lutkit::error);
  }
}

TEST_CASE("plan: the thread count follows the model", "[plan]") {
  target_costs c = toy_costs();
  matmul_op op;
  op.policy = "toy";
  op.M = 256;
  op.K = 128;
  op.N = 1;
  op.tiles = 4;
  op.planes = 4;
  op.k_per_step = 4;
  op.table_bytes_per_step = 16;
  op.lut_gemv_capable = true;
  c.int8_macs_per_s = 1e12;
  c.lookups_per_s = 1e12;
  c.fp32_fmas_per_s = 1e12;
  c.l1_bps = 1e12;
  op.blob_bytes = 8000;  // 1 thread: 1000 s on core_read; 2: max(800 shared, 500 private) + 0.5
  CHECK(choose_threads(c, op, decode_method::int8) == 2);
  c.fork_join_s = 300;   // now 1100 > 1000
  CHECK(choose_threads(c, op, decode_method::int8) == 1);
  c.fork_join_s = 200;   // 1000 = 1000: a tie goes to fewer threads
  CHECK(choose_threads(c, op, decode_method::int8) == 1);
}

TEST_CASE("plan: the chooser keeps to the error budget", "[plan]") {
  const candidate lut{decode_method::lut_gemv, 0.02, 1.0, 1};
  const candidate i8{decode_method::int8, 0.01, 2.0, 2};
  const candidate bf{decode_method::bf16, 0.002, 5.0, 2};
  SECTION("the faster of two within the budget") {
    CHECK(choose({lut, i8, bf}, 0.05).chosen.method == decode_method::lut_gemv);
    CHECK(choose({bf, i8}, 0.05).chosen.method == decode_method::int8);
  }
  SECTION("never one over the budget, however fast") {
    CHECK(choose({lut, i8, bf}, 0.015).chosen.method == decode_method::int8);
    CHECK(choose({lut, i8, bf}, 0.005).chosen.method == decode_method::bf16);
    CHECK(choose({lut, i8, bf}, 0.01).chosen.method == decode_method::int8);  // error == budget fits
  }
  SECTION("none within the budget is an error naming the candidates") {
    CHECK_THROWS_AS(choose({lut, i8, bf}, 0.001), lutkit::error);
    CHECK_THROWS_WITH(choose({lut, i8, bf}, 0.001), Catch::Contains("lut_gemv") && Catch::Contains("budget"));
    CHECK_THROWS_AS(choose({}, 1.0), lutkit::error);
    CHECK_THROWS_AS(choose({lut}, -1.0), lutkit::error);
    CHECK_THROWS_AS(choose({candidate{decode_method::int8, std::nan(""), 1.0, 1}}, 1.0), lutkit::error);
  }
  SECTION("ties: the lower error, then the method's order, whatever the input order") {
    const candidate a{decode_method::fused_dq, 0.01, 1.0, 1}, b{decode_method::int8, 0.01, 1.0, 1},
        d{decode_method::bf16, 0.005, 1.0, 1};
    CHECK(choose({b, a}, 1).chosen.method == decode_method::fused_dq);
    CHECK(choose({a, b}, 1).chosen.method == decode_method::fused_dq);
    CHECK(choose({b, d, a}, 1).chosen.method == decode_method::bf16);
  }
  SECTION("random candidate sets: the choice is within budget and no fitting candidate is faster") {
    CHECK(random_choices<candidate>(49, {decode_method::lut_gemv, decode_method::fused_dq, decode_method::int8, decode_method::bf16},
                                    [](const std::vector<candidate>& cs, double b) { return choose(cs, b).chosen; }) > 100);
  }
}

TEST_CASE("plan: the calibration file round-trips exactly", "[plan]") {
  const calibration cal = sample_calibration();
  const std::string path = tmp_path("roundtrip");
  save_calibration(cal, path);
  const calibration back = load_calibration(path);
  CHECK(back.costs.name == cal.costs.name);
  CHECK(back.costs.cores == cal.costs.cores);
  for (const auto& f : lutkit::plan::detail::number_fields()) {
    INFO(f.key);
    CHECK(back.costs.*(f.field) == cal.costs.*(f.field));  // bit for bit
  }
  REQUIRE(back.costs.kernels.size() == 2);
  CHECK(back.costs.kernels.at("decode.int8.w4_g32_sym").weights_per_s == 1.25e9);
  CHECK(back.costs.kernels.at("decode.int8.w4_g32_sym").s_per_activation == 2.5e-10);
  CHECK(back.costs.kernels.at("decode.lut_gemv.w4_g32_sym").weights_per_s == 7.0e9 / 3.0);
  CHECK(back.int8_isa == "avx2");
  CHECK(back.lookup_isa == "avx512vbmi");
  CHECK(to_text(back) == to_text(cal));
  std::remove(path.c_str());
}

TEST_CASE("plan: malformed calibration files are rejected with the line", "[plan]") {
  const std::string good = to_text(sample_calibration());
  CHECK_NOTHROW(from_text(good));
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const auto p = t.find(from);
    REQUIRE(p != std::string::npos);
    t.replace(p, from.size(), to);
    return t;
  };
  auto rejects = [](const std::string& text, const std::string& what) {
    INFO(text);
    CHECK_THROWS_AS(from_text(text, "costs.txt"), lutkit::error);
    CHECK_THROWS_WITH(from_text(text, "costs.txt"), Catch::Contains(what));
  };
  rejects("", "'format' is missing");
  rejects(good + "dram_bandwidth = 1\n", "unknown key 'dram_bandwidth'");
  rejects(replace("dram_bps = ", "dram_bandwidth = "), "'dram_bps' is missing");
  rejects(replace("l2_bps = 55000000000\n", ""), "'l2_bps' is missing");
  rejects(good + "cores = 2\n", "'cores' given twice");
  rejects(replace("l2_bps = 55000000000", "l2_bps = 5.5e10x"), "costs.txt:8: l2_bps");
  rejects(replace("l2_bps = 55000000000", "l2_bps = fast"), "not a finite number");
  rejects(replace("l2_bps = 55000000000", "l2_bps = inf"), "not a finite number");
  rejects(replace("l2_bps = 55000000000", "l2_bps = 0"), "must be > 0");
  rejects(replace("l2_bps = 55000000000", "l2_bps = -5"), "must be > 0");
  rejects(replace("fork_join_s = ", "fork_join_s = -"), "must be >= 0");
  rejects(replace("cores = 2", "cores = 2.5"), "cores must be an integer");
  rejects(replace("cores = 2", "cores = 0"), "cores must be an integer");
  rejects(replace("format = lutkit-target-costs 1", "format = lutkit-target-costs 2"), "format is");
  rejects(replace("name = host", "name host"), "expected 'key = value'");
  rejects(replace("name = host", "name ="), "has no value");
  rejects(replace("kernel.decode.int8.w4_g32_sym.s_per_activation = 2.5000000000000002e-10\n", ""),
          "kernel 'decode.int8.w4_g32_sym' has weights_per_s but no s_per_activation");
  rejects(replace("kernel.decode.int8.w4_g32_sym.weights_per_s = 1250000000", "kernel.decode.int8.w4_g32_sym.weights_per_s = 0"),
          "must be > 0");
  rejects(replace("kernel.decode.int8.w4_g32_sym.weights_per_s = 1250000000", "kernel.decode.int8.w4_g32_sym.weights_per_s = 1e9 2"),
          "not a finite number");
  rejects(good + "kernel..weights_per_s = 1\nkernel..s_per_activation = 0\n", "names no kernel");
  CHECK_THROWS_AS(load_calibration("/nonexistent/lutkit_costs.txt"), lutkit::error);
  // comments and blank lines are not keys
  CHECK_NOTHROW(from_text("\n# a note\n" + good + "\n   \n"));
}

TEST_CASE("plan: describe_matmul takes the blob's bytes from the tiling spec", "[plan]") {
  const matmul_op op = describe_matmul<Q4_0>(128, 256, 1);
  const packed_weights<Q4_0> w(128, 256);
  CHECK(op.blob_bytes == w.size_bytes());
  CHECK(op.tiles == 2);
  CHECK(op.planes == 4);
  CHECK(op.lut_gemv_capable);
  CHECK(op.bytes_per_weight() > 0.5);  // 4-bit codes and their parameters: over half a byte a weight
  CHECK_THROWS_AS(describe_matmul<Q4_0>(128, 250, 1), lutkit::error);  // K not a multiple of the group
  CHECK_THROWS_AS(describe_matmul<Q4_0>(128, 256, 0), lutkit::error);
}

TEST_CASE("plan: measured errors and plans for Q4_0, deterministic for a fixed calibration file", "[plan]") {
  const std::size_t M = 128, K = 512, N = 1;
  std::mt19937_64 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> wf(M * K), x(N * K);
  for (auto& v : wf) v = nd(rng) * 0.05f;
  for (auto& v : x) v = nd(rng);
  const auto w = pack<Q4_0>(quantize<Q4_0>(wf.data(), M, K));
  const auto methods = valid_decode_methods<Q4_0>(N);
  REQUIRE(methods.size() == 4);  // lut_gemv, fused_dq, int8, bf16: a 4-bit integer format on the host
  // the routes' errors against the double reference of the same weights: FusedDQP computes in
  // fp32 (tiny), bf16 rounds the activations to 8 bits of mantissa, int8 to 8 bits, the default
  // (int16) tables to 16
  const double e_fused = measure_decode_error<Q4_0>(w, x.data(), N, decode_method::fused_dq);
  const double e_bf16 = measure_decode_error<Q4_0>(w, x.data(), N, decode_method::bf16);
  const double e_int8 = measure_decode_error<Q4_0>(w, x.data(), N, decode_method::int8);
  const double e_lut = measure_decode_error<Q4_0>(w, x.data(), N, decode_method::lut_gemv);
  CHECK(e_fused < 1e-5);
  CHECK(e_bf16 > e_fused);
  CHECK(e_bf16 < 1e-2);
  CHECK(e_int8 > e_bf16);
  CHECK(e_int8 < 3e-2);
  CHECK(e_lut < e_int8);
  CHECK(e_lut > e_fused);

  const std::string path = tmp_path("plan");
  save_calibration(sample_calibration(), path);
  const target_costs c1 = load_calibration(path).costs;
  const target_costs c2 = load_calibration(path).costs;
  const decode_plan p1 = plan_decode<Q4_0>(c1, w, x.data(), N, 0.05);
  const decode_plan p2 = plan_decode<Q4_0>(c2, w, x.data(), N, 0.05);
  REQUIRE(p1.candidates.size() == p2.candidates.size());
  CHECK(p1.chosen.method == p2.chosen.method);
  CHECK(p1.chosen.threads == p2.chosen.threads);
  CHECK(p1.chosen.modelled_s == p2.chosen.modelled_s);
  for (std::size_t i = 0; i < p1.candidates.size(); ++i) {
    CHECK(p1.candidates[i].method == p2.candidates[i].method);
    CHECK(p1.candidates[i].modelled_s == p2.candidates[i].modelled_s);
    CHECK(p1.candidates[i].error == p2.candidates[i].error);
  }
  // a budget only FusedDQP meets
  const double only_fused = std::sqrt(e_fused * std::min(e_lut, e_bf16));
  REQUIRE(only_fused < std::min(e_lut, e_bf16));
  const decode_plan tight = plan_decode<Q4_0>(c1, w, x.data(), N, only_fused);
  CHECK(tight.chosen.method == decode_method::fused_dq);
  // the chosen one within budget, and no faster one within it
  for (const auto& c : p1.candidates)
    if (c.error <= p1.budget) CHECK(p1.chosen.modelled_s <= c.modelled_s);
  CHECK(p1.chosen.error <= 0.05);
  CHECK_THROWS_AS(plan_decode<Q4_0>(c1, w, x.data(), N, 1e-9), lutkit::error);
  std::remove(path.c_str());
}

TEST_CASE("plan: the DRAM read's size comes from the LLC; measure_read_rates checks its arguments", "[plan]") {
  const std::size_t llc = lutkit::last_level_cache_bytes();
  CHECK(llc >= (std::size_t(64) << 10));  // a cache Linux lists, or the 32 MiB default
  CHECK(lutkit::cold_bytes() >= 2 * llc);
  CHECK(lutkit::cold_bytes() >= (std::size_t(128) << 20));
  CHECK(calibration_options{}.read_bytes >= lutkit::cold_bytes());
  lutkit::thread_pool pool{2};
  const read_rates r = measure_read_rates(pool, 2, std::size_t(4) << 20, 1);
  CHECK(r.one > 0);
  CHECK(r.all >= r.one);
  const read_rates r1 = measure_read_rates(pool, 1, std::size_t(4) << 20, 1);
  CHECK(r1.all == r1.one);  // one thread: the one-thread read is the whole figure
  CHECK_THROWS_AS(measure_read_rates(pool, 3, std::size_t(4) << 20, 1), lutkit::error);   // more threads than the pool
  CHECK_THROWS_AS(measure_read_rates(pool, 0, std::size_t(4) << 20, 1), lutkit::error);
  CHECK_THROWS_AS(measure_read_rates(pool, 1, std::size_t(1) << 19, 1), lutkit::error);  // under 1 MiB
  CHECK_THROWS_AS(measure_read_rates(pool, 1, std::size_t(4) << 20, 0), lutkit::error);
}

TEST_CASE("plan: a short calibration of this host gives usable constants", "[plan]") {
  calibration_options o;
  o.threads = 2;
  o.read_bytes = std::size_t(8) << 20;  // short: the test checks the plumbing, not the figures
  o.read_reps = 1;
  o.compute_reps = 1;
  o.compute_seconds = 0.001;
  const calibration cal = calibrate(o);
  const target_costs& c = cal.costs;
  CHECK(c.cores == 2);
  for (const auto& f : lutkit::plan::detail::number_fields())
    if (f.rate) {
      INFO(f.key);
      CHECK(c.*(f.field) > 0);
      CHECK(std::isfinite(c.*(f.field)));
    }
  CHECK(c.dram_bps >= c.core_read_bps);
  CHECK(c.fork_join_s > 0);
  CHECK(!cal.int8_isa.empty());
  // what it measured loads back as it was saved
  const calibration back = from_text(to_text(cal));
  CHECK(back.costs.int8_macs_per_s == c.int8_macs_per_s);
  CHECK(back.costs.fork_join_s == c.fork_join_s);
  CHECK_THROWS_AS(calibrate(calibration_options{0, 1024, 1, 1, 0.001}), lutkit::error);
  // the decode kernels' own rates: one entry per valid method, usable by the model
  target_costs k = c;
  // (2 cores: each method also at both, kernel_parallel_key)
  calibrate_decode<Q4_0>(k, decode_calibration_options{256, 64, 128, 3, 0});
  REQUIRE(k.kernels.size() == 8);
  for (decode_method m : valid_decode_methods<Q4_0>(1)) {
    const auto& kr = k.kernels.at(kernel_key(m, Q4_0::name()));
    CHECK(kr.weights_per_s > 0);
    CHECK(kr.s_per_activation >= 0);
    const auto& kp = k.kernels.at(kernel_parallel_key(kernel_key(m, Q4_0::name())));
    CHECK(kp.weights_per_s > 0);
    CHECK(kp.s_per_activation >= 0);
    const double f = kernel_parallel_factor(k, kernel_key(m, Q4_0::name()), 2);
    CHECK((f >= 1 && f <= 2));
    const auto r = model_decode(k, describe_matmul<Q4_0>(256, 256, 1), m, 1);
    CHECK(r.total_s > 0);
    CHECK(model_decode(k, describe_matmul<Q4_0>(256, 256, 1), m, 2).total_s > 0);
  }
  CHECK(from_text(to_text(calibration{k, "", "", "", ""})).costs.kernels.size() == 8);
  // one core: no entry at every core (an earlier calibration's removed)
  target_costs k1 = k;
  k1.cores = 1;
  calibrate_decode<Q4_0>(k1, decode_calibration_options{256, 64, 128, 3, 0});
  CHECK(k1.kernels.size() == 4);
  CHECK_THROWS_AS(calibrate_decode<Q4_0>(k, decode_calibration_options{256, 128, 64, 2, 0}), lutkit::error);
}

TEST_CASE("plan: prefill, attention and sampling workloads on hand-computed cases", "[plan]") {
  target_costs c = toy_costs();
  SECTION("prefill GEMM: the blob once per 768-column pass, one multiply-add per weight and row on the paradigm's unit") {
    matmul_op op;
    op.policy = "p";
    op.M = 4, op.K = 2, op.N = 1000, op.tiles = 2, op.blob_bytes = 80;
    // 2 tiles on 2 cores: each 40 bytes x 2 passes on DRAM (80 / 10 summed = 16 s), its own read
    // 80 / 8 = 10 s; int8: 4 weights x 1000 rows = 4000 MACs a core / 4 = 1000 s; activation
    // preparation 2 x 1000 x 4 flops / 2 / 2 threads = 2000 s; fork / join 0.5 s
    auto r = model_prefill(c, op, act_type::int8_group, 2);
    CHECK(r.private_s == 1000.0);
    CHECK(r.shared_s == 1000.0);  // the compute units together, over parallel_compute = 2 cores
    CHECK(r.overhead_s == 2000.5);
    CHECK(r.total_s == 3000.5);
    // fp32 on 1 core: 8000 FMAs / 2 = 4000 s, preparation 8000 / 2 = 4000 s, no fork / join
    r = model_prefill(c, op, act_type::fp32, 1);
    CHECK(r.total_s == 8000.0);
    CHECK(r.bottleneck == resource::fp32_fma);
    // a measured kernel: its rate (weights x rows) and intercept per activation take over
    c.kernels[prefill_kernel_key(act_type::int8, "p")] = {16000.0, 0.25};
    r = model_prefill(c, op, act_type::int8, 1);
    // the kernel: 8000 / 16000 = 0.5 s; the int8 unit's count 8000 / 4 = 2000 s: Eq. 1 keeps the slower
    CHECK(r.private_s == 2000.0);
    CHECK(r.overhead_s == 500.0);  // 2 x 1000 activations x 0.25 s
    CHECK(prefill_kernel_key(act_type::int8, "p") == "prefill.int8.p");
    // at 2 threads a slow kernel (2 a second: 2000 s a core) with its rate at both cores measured
    // (3 a second: 1.5 cores' worth): the summed 8000 over 3, in place of over parallel_compute
    c.kernels[prefill_kernel_key(act_type::int8, "p")] = {2.0, 0.0};
    CHECK(model_prefill(c, op, act_type::int8, 2).shared_s == 8000.0 / 2 / 2);
    c.kernels[kernel_parallel_key(prefill_kernel_key(act_type::int8, "p"))] = {3.0, 0.0};
    r = model_prefill(c, op, act_type::int8, 2);
    CHECK(r.bottleneck == resource::kernel);
    CHECK(r.shared_s == Approx(8000.0 / 3).epsilon(1e-12));
    CHECK(r.total_s == Approx(8000.0 / 3 + 0.5).epsilon(1e-12));  // and the fork / join
  }
  SECTION("attention: causal score counts, the cache read once, one exponential per score") {
    attention_op a;
    a.heads = 4, a.kv_heads = 2, a.head_dim = 8, a.context = 10, a.queries = 1, a.kv_bytes = 2;
    CHECK(attention_score_macs(a) == 4.0 * 8 * 10);
    a.queries = 10;  // query i sees i + 1 keys: 55 in all
    CHECK(attention_score_macs(a) == 4.0 * 8 * 55);
    a.queries = 4;   // the last 4 of 10: 7 + 8 + 9 + 10
    CHECK(attention_score_macs(a) == 4.0 * 8 * 34);
    a.causal = false;
    CHECK(attention_score_macs(a) == 4.0 * 8 * 40);
    a.causal = true;
    a.queries = 1;
    // 1 core: cache 2 x 2 x 10 x 8 x 2 = 640 bytes / 8 = 80 s own read; FMAs 2 x 320 + 8 x 40 =
    // 960 / 2 = 480 s
    auto r = model_attention(c, a, 1);
    CHECK(r.private_s == 480.0);
    CHECK(r.total_s == 480.0);
    a.queries = 11;
    CHECK_THROWS_AS(model_attention(c, a, 1), lutkit::error);  // more queries than the context
  }
  SECTION("sampling: a row is split over threads only when it is 256 KiB or larger") {
    sampling_op s;
    s.vocab = 1000, s.rows = 1;
    // one core: 4000 bytes / 8 = 500 s read; 2 x 1000 flops / 2 = 1000 s
    auto r = model_sampling(c, s, 2);
    CHECK(r.total_s == 1000.0);  // not split: no fork / join either
    s.vocab = std::size_t(1) << 20;  // 4 MiB: split over both cores
    CHECK(sampling_workload(c, s, 2).cores.size() == 2);
    s.vocab = 65536;  // 256 KiB: split
    CHECK(sampling_workload(c, s, 2).cores.size() == 2);
    s.vocab = 65535;  // just under: one core
    CHECK(sampling_workload(c, s, 2).cores.size() == 1);
    s.rows = 3, s.vocab = 1000;  // rows over threads: 2 and 1
    const auto w = sampling_workload(c, s, 2);
    REQUIRE(w.cores.size() == 2);
    CHECK(w.cores[0][resource::fp32_fma] == 4000.0);
    CHECK(w.cores[1][resource::fp32_fma] == 2000.0);
  }
  SECTION("sampling: each pass's count per logit, the logits' bytes by type, the selections' threads") {
    sampling_op s;
    s.vocab = 1000, s.rows = 1;
    CHECK(sampling_flops(s) == 2.0);
    s.pass = sampling_pass::chords;
    CHECK(sampling_flops(s) == 7.0);
    s.pass = sampling_pass::exps;
    CHECK(sampling_flops(s) == 14.0);
    s.pass = sampling_pass::dllm;
    CHECK(sampling_flops(s) == 16.0);
    s.type = logit_type::bf16;
    CHECK(sampling_flops(s) == 17.0);
    CHECK(s.logits_bytes() == 2000);
    s.type = logit_type::mxfp8;  // a byte a logit and an exponent per 32: 32 blocks of 1000
    CHECK(sampling_flops(s) == 19.0);
    CHECK(s.logits_bytes() == 1032);
    s.pass = sampling_pass::dllm_gumbel;
    s.type = logit_type::f32;
    CHECK(sampling_flops(s) == 40.0);
    // 1 core, chords: 7 x 1000 / 2 = 3500 s against a 500 s read
    s.pass = sampling_pass::chords;
    CHECK(model_sampling(c, s, 1).total_s == 3500.0);
    // a measured kernel under its key: 1000 logits / 4 a second = 250 s; the unit's count (3500 s)
    // stays the larger; its intercept per row is added: 10 s
    c.kernels[sampling_kernel_key(sampling_pass::chords, logit_type::f32)] = {4.0, 10.0};
    CHECK(sampling_kernel_key(sampling_pass::chords, logit_type::f32) == "sampling.chords.fp32");
    auto r = model_sampling(c, s, 1);
    CHECK(r.total_s == 3510.0);
    // ar_sample, 3 rows on 2 cores: rows 2 and 1; the selections of 2 rows on the first core
    s.rows = 3;
    r = model_sampling(c, s, 2);
    CHECK(r.overhead_s == 3 * 10.0 / 2 + 0.5);
    // dllm_sample: 3 positions of 1 MiB logits are not split per position, and their selections
    // are in the positions' tasks; its key is its own
    s.pass = sampling_pass::dllm;
    s.vocab = std::size_t(1) << 18;
    c.kernels[sampling_kernel_key(sampling_pass::dllm, logit_type::f32)] = {4.0, 10.0};
    const auto w = sampling_workload(c, s, 2);
    REQUIRE(w.cores.size() == 2);
    CHECK(w.cores[0][resource::kernel] == 2.0 * double(s.vocab));
    CHECK(w.overhead_s == 3 * 10.0 / 2 + 0.5);
    s.rows = 1;  // one position: one core (an ar_sample row of 1 MiB would be split)
    CHECK(sampling_workload(c, s, 2).cores.size() == 1);
    s.pass = sampling_pass::maxima;
    CHECK(sampling_workload(c, s, 2).cores.size() == 2);
    s.type = logit_type::mxfp8;  // 2^18 codes: 256 KiB split as the driver splits it (exponents aside)
    CHECK(sampling_workload(c, s, 2).cores.size() == 2);
    s.vocab -= 32;  // 32 codes short, however many exponent bytes: one core
    CHECK(sampling_workload(c, s, 2).cores.size() == 1);
    s.vocab += 32;
    s.type = logit_type::f32;
    // a split row adds its measured cost (the split key's intercept) once per row
    const double before = sampling_workload(c, s, 2).overhead_s;
    c.kernels[sampling_split_key(sampling_pass::maxima, logit_type::f32)] = {1.0, 7.0};
    CHECK(sampling_workload(c, s, 2).overhead_s == before + 7.0);
    CHECK(sampling_workload(c, s, 1).overhead_s == 0.0);  // one thread: no split (no maxima kernel here)
    s.rows = 4;  // rows over the threads: no row is split
    CHECK(sampling_workload(c, s, 2).overhead_s == 0.5);
  }
  SECTION("sampling: the pass of a chain is the driver's") {
    const std::size_t V = 1000;
    ar_params p;  // temperature 1, nothing truncates: the draw over every token sums exps
    CHECK(describe_ar_sampling(p, V).pass == sampling_pass::exps);
    p.temperature = 0.8f;
    p.top_p = 0.9f;  // top-p over the whole vocabulary: the rejection draw's chords
    CHECK(describe_ar_sampling(p, V).pass == sampling_pass::chords);
    p.min_p = 0.05f;  // a min-p after top-p: still the rejection draw
    CHECK(describe_ar_sampling(p, V).pass == sampling_pass::chords);
    p.top_k = 40;  // a top-k in front: maxima only
    CHECK(describe_ar_sampling(p, V).pass == sampling_pass::maxima);
    p.top_k = int(V);  // k covering the vocabulary is off
    CHECK(describe_ar_sampling(p, V).pass == sampling_pass::chords);
    p.top_k = 0;
    p.top_p = 1.f;  // min-p alone: maxima
    CHECK(describe_ar_sampling(p, V).pass == sampling_pass::maxima);
    p.min_p = 0.f;
    p.temperature = 0.f;  // greedy
    CHECK(describe_ar_sampling(p, V).pass == sampling_pass::maxima);
    p.temperature = 0.8f;
    p.top_p = 0.9f;
    p.chain = ar_chain{{ar_stage::penalties, ar_stage::top_p, ar_stage::temperature, ar_stage::top_k, ar_stage::min_p}, 5};
    // top-p before the temperature: beta at top-p 1, the draw's 1.25 >= 1: the rejection draw
    CHECK(describe_ar_sampling(p, V).pass == sampling_pass::chords);
    p.temperature = 1.25f;  // the draw's beta 0.8 below top-p's: the exact kept set, exps
    CHECK(describe_ar_sampling(p, V).pass == sampling_pass::exps);
    const auto s = describe_ar_sampling(p, V, 3, logit_type::bf16);
    CHECK(s.rows == 3);
    CHECK(s.logits_bytes() == 6000);
    dllm_params d;
    CHECK(describe_dllm_sampling(d, 4, V).pass == sampling_pass::dllm);
    d.temperature = 1.f;
    CHECK(describe_dllm_sampling(d, 4, V, logit_type::mxfp8).pass == sampling_pass::dllm_gumbel);
  }
  SECTION("sampling: bad descriptions are errors") {
    ar_params p;
    p.temperature = std::nanf("");
    CHECK_THROWS_AS(describe_ar_sampling(p, 1000), lutkit::error);
    p.temperature = 0.8f;
    p.top_p = 2.f;
    CHECK_THROWS_AS(describe_ar_sampling(p, 1000), lutkit::error);
    p.top_p = 0.9f;
    CHECK_THROWS_AS(describe_ar_sampling(p, 0), lutkit::error);
    CHECK_THROWS_AS(describe_ar_sampling(p, 1000, 0), lutkit::error);
    CHECK_THROWS_AS(describe_ar_sampling(p, 1000, 1, logit_type(7)), lutkit::error);
    dllm_params d;
    d.temperature = -1.f;
    CHECK_THROWS_AS(describe_dllm_sampling(d, 4, 1000), lutkit::error);
    sampling_op s = describe_ar_sampling(p, 1000);
    s.pass = sampling_pass(9);
    CHECK_THROWS_AS(model_sampling(c, s, 1), lutkit::error);
    s.pass = sampling_pass::maxima;
    s.type = logit_type(7);
    CHECK_THROWS_AS(model_sampling(c, s, 1), lutkit::error);
    s.type = logit_type::f32;
    s.rows = std::size_t(1) << 40;  // 2^40 x 1000 logits
    CHECK_THROWS_AS(model_sampling(c, s, 1), lutkit::error);
  }
}

TEST_CASE("plan: the prefill chooser keeps to the error budget; the thread count follows the prefill model", "[plan]") {
  const prefill_candidate i8{act_type::int8, 0.03, 1.0, 2};
  const prefill_candidate i8g{act_type::int8_group, 0.006, 1.2, 2};
  const prefill_candidate bf{act_type::bf16, 0.002, 3.0, 2};
  const prefill_candidate f32{act_type::fp32, 1e-7, 6.0, 2};
  CHECK(choose_prefill({f32, bf, i8g, i8}, 0.05).chosen.act == act_type::int8);
  CHECK(choose_prefill({f32, bf, i8g, i8}, 0.006).chosen.act == act_type::int8_group);  // error == budget fits
  CHECK(choose_prefill({f32, bf, i8g, i8}, 0.005).chosen.act == act_type::bf16);
  CHECK(choose_prefill({i8, bf, f32, i8g}, 1e-6).chosen.act == act_type::fp32);
  CHECK_THROWS_WITH(choose_prefill({bf, i8}, 1e-3), Catch::Contains("int8") && Catch::Contains("bf16") && Catch::Contains("budget"));
  CHECK_THROWS_AS(choose_prefill({}, 1.0), lutkit::error);
  CHECK_THROWS_AS(choose_prefill({prefill_candidate{act_type::bf16, 0.1, -1.0, 1}}, 1.0), lutkit::error);
  // ties: the lower error, then act_type's order, whatever the input order
  const prefill_candidate a{act_type::int8, 0.01, 1.0, 1}, b{act_type::int8_group, 0.01, 1.0, 1};
  CHECK(choose_prefill({b, a}, 1).chosen.act == act_type::int8);
  CHECK(choose_prefill({a, b}, 1).chosen.act == act_type::int8);
  // random sets: within budget, and no candidate within it is faster
  CHECK(random_choices<prefill_candidate>(4949, {act_type::fp32, act_type::bf16, act_type::int8, act_type::int8_group},
                                          [](const std::vector<prefill_candidate>& cs, double b) {
                                            return choose_prefill(cs, b).chosen;
                                          }) > 100);
  // threads: the toy machine's int8 prefill (model_prefill above: 1 core 2000 + 4000 s; 2 cores
  // 1000 + 2000.5 s) takes 2; a fork / join dearer than the gain takes 1
  target_costs c = toy_costs();
  matmul_op op;
  op.policy = "p";
  op.M = 4, op.K = 2, op.N = 1000, op.tiles = 2, op.blob_bytes = 80;
  CHECK(choose_prefill_threads(c, op, act_type::int8_group) == 2);
  c.fork_join_s = 3000;
  CHECK(choose_prefill_threads(c, op, act_type::int8_group) == 1);
}

TEST_CASE("plan: measured prefill errors and plans for Q4_0, deterministic for a fixed calibration file", "[plan]") {
  const std::size_t M = 128, K = 512, N = 8;
  std::mt19937_64 rng(17);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> wf(M * K), x(N * K);
  for (auto& v : wf) v = nd(rng) * 0.05f;
  // outlier channels: per-row int8 loses the small ones, per-group int8 keeps each group's own scale
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = nd(rng) * ((i % K) % 97 == 0 ? 30.f : 1.f);
  const auto w = pack<Q4_0>(quantize<Q4_0>(wf.data(), M, K));
  const auto acts = valid_prefill_acts<Q4_0>();
  REQUIRE(acts.size() == 4);  // fp32, bf16, int8, int8_group: integer levels on the host
  const double e_f32 = measure_prefill_error<Q4_0>(w, x.data(), N, act_type::fp32);
  const double e_bf16 = measure_prefill_error<Q4_0>(w, x.data(), N, act_type::bf16);
  const double e_i8g = measure_prefill_error<Q4_0>(w, x.data(), N, act_type::int8_group);
  const double e_i8 = measure_prefill_error<Q4_0>(w, x.data(), N, act_type::int8);
  CHECK(e_f32 < 1e-5);
  CHECK(e_bf16 > e_f32);
  CHECK(e_bf16 < 1e-2);
  CHECK(e_i8g > e_bf16);
  CHECK(e_i8 > 2 * e_i8g);
  CHECK(e_i8 < 0.1);
  CHECK_THROWS_AS(measure_prefill_error<Q4_0>(w, nullptr, N, act_type::fp32), lutkit::error);

  calibration cal = sample_calibration();
  cal.costs.kernels[prefill_kernel_key(act_type::int8_group, Q4_0::name())] = {6.0e10, 1e-9};
  cal.costs.kernels[prefill_kernel_key(act_type::int8, Q4_0::name())] = {7.0e10, 5e-10};
  cal.costs.kernels[prefill_kernel_key(act_type::bf16, Q4_0::name())] = {2.0e10, 2e-9};
  cal.costs.kernels[prefill_kernel_key(act_type::fp32, Q4_0::name())] = {1.0e10, 2e-9};
  const std::string path = tmp_path("prefill_plan");
  save_calibration(cal, path);
  const target_costs c1 = load_calibration(path).costs;
  const target_costs c2 = load_calibration(path).costs;
  const matmul_op op = describe_matmul<Q4_0>(4096, K, 512);  // a prompt chunk of 512 on a larger matrix
  // the budget of the default paradigm's own error: never less accurate than the default
  const prefill_plan p1 = plan_prefill<Q4_0>(c1, op, w, x.data(), N, e_i8g);
  const prefill_plan p2 = plan_prefill<Q4_0>(c2, op, w, x.data(), N, e_i8g);
  REQUIRE(p1.candidates.size() == 4);
  CHECK(p1.chosen.act == p2.chosen.act);
  CHECK(p1.chosen.threads == p2.chosen.threads);
  CHECK(p1.chosen.modelled_s == p2.chosen.modelled_s);
  for (std::size_t i = 0; i < p1.candidates.size(); ++i) {
    CHECK(p1.candidates[i].act == p2.candidates[i].act);
    CHECK(p1.candidates[i].error == p2.candidates[i].error);
    CHECK(p1.candidates[i].modelled_s == p2.candidates[i].modelled_s);
  }
  // per-row int8 is the fastest but over the budget: int8_group, the fastest within it
  CHECK(p1.chosen.act == act_type::int8_group);
  CHECK(p1.chosen.error <= e_i8g);
  for (const auto& c : p1.candidates) {
    if (c.error <= p1.budget) CHECK(p1.chosen.modelled_s <= c.modelled_s);
    CHECK(c.modelled_s == model_prefill(c1, op, c.act, c.threads).total_s);
  }
  // a budget only fp32 meets; a looser one takes per-row int8
  CHECK(plan_prefill<Q4_0>(c1, op, w, x.data(), N, 1e-5).chosen.act == act_type::fp32);
  CHECK(plan_prefill<Q4_0>(c1, op, w, x.data(), N, 2 * e_i8).chosen.act == act_type::int8);
  CHECK_THROWS_AS(plan_prefill<Q4_0>(c1, op, w, x.data(), N, 1e-12), lutkit::error);
  std::remove(path.c_str());
}

TEST_CASE("plan: calibrate_sampling times every pass it names; the rotation's rows are copies of one row", "[plan]") {
  std::vector<float> row(128);
  for (std::size_t i = 0; i < row.size(); ++i) row[i] = float(i % 7) - 3.f;
  for (logit_type t : {logit_type::f32, logit_type::bf16, logit_type::f16, logit_type::mxfp8}) {
    const auto rot = lutkit::plan::detail::make_logit_rotation(t, row, 4096);
    REQUIRE(rot.count >= 2);
    const logits_view a = rot.view(0, 64), b = rot.view(rot.count + 1, 128), r = rot.view_rows(1, 2);
    CHECK(a.vocab == 64);
    CHECK(b.vocab == 128);
    CHECK(r.rows == 2);
    // (small integers: every type holds them exactly)
    for (const logits_view& v : {a, b, r})
      for (std::size_t k = 0; k < v.rows; ++k)
        for (uint32_t i = 0; i < v.vocab; ++i) CHECK(lutkit::detail::read_value(v, k, i, {}) == row[i]);
  }
  // 96 MXFP8 codes a row are padded to 128 bytes: their copies are not rows of one view
  const std::vector<float> r96(row.begin(), row.begin() + 96);
  CHECK_THROWS_AS(lutkit::plan::detail::make_logit_rotation(logit_type::mxfp8, r96, 4096).view_rows(0, 2), lutkit::error);
  // (rates of a real core's order, so that the split row's model is of the measured time's; a
  // stale split entry from an earlier calibration, of an impossible -1000 s, must not enter the
  // model the new one is measured against)
  target_costs c = toy_costs();
  c.dram_bps = c.core_read_bps = 1e10, c.l1_bps = c.l2_bps = 1e11;
  c.int8_macs_per_s = c.fp32_fmas_per_s = c.bf16_macs_per_s = c.lookups_per_s = 1e10;
  c.fork_join_s = 1e-6;
  c.kernels[sampling_split_key(sampling_pass::maxima, logit_type::f32)] = {1.0, -1e3};
  calibrate_sampling(c, ops_calibration_options{1, std::size_t(4) << 20});
  CHECK(c.kernels.at(sampling_split_key(sampling_pass::maxima, logit_type::f32)).s_per_activation < 1.0);
  for (sampling_pass pass : {sampling_pass::maxima, sampling_pass::chords, sampling_pass::exps, sampling_pass::dllm,
                             sampling_pass::dllm_gumbel})
    for (logit_type t : {logit_type::f32, logit_type::bf16, logit_type::f16, logit_type::mxfp8}) {
      const bool named = t == logit_type::f32 || pass == sampling_pass::dllm;
      const bool ar = pass == sampling_pass::maxima || pass == sampling_pass::chords || pass == sampling_pass::exps;
      // (toy_costs has 2 cores: the ar passes' split rows are timed too)
      CHECK(bool(c.kernels.count(sampling_split_key(pass, t))) == (ar && t == logit_type::f32));
      INFO(sampling_kernel_key(pass, t));
      REQUIRE(bool(c.kernels.count(sampling_kernel_key(pass, t))) == named);
      if (named) {
        CHECK(c.kernels.at(sampling_kernel_key(pass, t)).weights_per_s > 0);
        CHECK(c.kernels.at(sampling_kernel_key(pass, t)).s_per_activation >= 0);
      }
    }
}
