// kernels_bench: lutkit's kernels beside llama.cpp's ggml_mul_mat on the same llama.cpp blocks, in
// one process (docs/llama_formats.md, "Beside llama.cpp's kernels"). Per type: M x K weights of
// normal random floats quantized by ggml's own quantizer; lutkit packs those blocks
// (the engine's pack_matrix) and applies them as the engine does (examples/llm/model.hpp,
// matrix::apply: decode_gemv's best method for N = 1, the dequant-GEMM's default paradigm for
// N = 128); ggml computes ggml_mul_mat on its CPU backend with the weights in the buffer type
// libllama would give them (ggml_side.cpp). Both rotate over the same number of weight copies
// (cold: more than twice the LLC of them, lutkit::cold_bytes()). Before timing, both sides' outputs are
// compared with each other and, on 64 rows, with a double reference of ggml's dequantized weights (stderr).
//
//   kernels_bench --type q4_k [--M 4096] [--K 14336] [Google Benchmark flags]
//   rows: {ggml,lutkit}/<type>/n:<N>/threads:<T>   counter weight_GBps: that side's weight bytes / time
//         read/<type>/{ggml,lutkit}/threads:<T>   a plain read of that side's weight copies
//         load/<type>/threads:<T>    the engine's load of the tensor: pack_matrix, the blocks to a new blob
//         memcpy/<type>              one memcpy of the same blocks into a buffer already touched
//         memcpy_new/<type>          the same into a new buffer (alloc_aligned, as a blob is)
//
// benchmarks/llama_cpp/kernels.sh builds it, runs every type with interleaved repetitions and
// prints the table of medians.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "ggml_side.hpp"
#include "llm/model.hpp"

namespace {
struct setup {
  lutkit::ggml_type type{};
  std::size_t M = 4096, K = 14336;
  std::vector<uint8_t> blocks;
  std::vector<llm::matrix> lk;                           // the lutkit copies
  std::map<std::size_t, std::unique_ptr<ggml_side::matmul>> gg;  // per N, its copies
  std::vector<float> x;                                  // 128 x K activations
  std::map<int, std::unique_ptr<lutkit::thread_pool>> pools;
  lutkit::thread_pool* pool(int T) {
    if (T <= 1) return nullptr;
    auto& p = pools[T];
    if (!p) p = std::make_unique<lutkit::thread_pool>(std::size_t(T));
    return p.get();
  }
};
setup g;

lutkit::ggml_type parse_type(const std::string& s) {
  for (uint32_t id = 0; id < 40; ++id) {
    const char* n = ggml_side::type_name(int(id));
    if (n && std::strlen(n) && s.size() == std::strlen(n)) {
      bool eq = true;
      for (std::size_t i = 0; i < s.size(); ++i) eq = eq && std::tolower(s[i]) == std::tolower(n[i]);
      if (eq) return lutkit::ggml_type(id);
    }
  }
  throw std::runtime_error("kernels_bench: unknown type " + s);
}

// the benchmark's blocks as the GGUF tensor the engine's pack_matrix takes
lutkit::gguf::tensor blocks_tensor() {
  lutkit::gguf::tensor t{};
  t.name = "w";
  t.type = g.type;
  t.n_dims = 2;
  t.ne = {g.K, g.M, 1, 1};
  t.n_bytes = g.blocks.size();
  t.data = g.blocks.data();
  return t;
}

// the largest |a - b| over the largest |b|
double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, double(std::fabs(a[i] - b[i])));
    m = std::max(m, double(std::fabs(b[i])));
  }
  return m > 0 ? d / m : d;
}

void prepare(int copies_min) {
  std::mt19937_64 rng(42);
  std::normal_distribution<float> nd;
  std::vector<float> w(g.M * g.K);
  for (auto& v : w) v = nd(rng);
  g.blocks = ggml_side::quantize(int(g.type), w.data(), g.M, g.K, 2);
  std::vector<float>().swap(w);
  const std::size_t bytes = g.blocks.size();
  const int copies = std::max<int>(copies_min, int(lutkit::cold_bytes() / bytes + 1));
  const lutkit::gguf::tensor t = blocks_tensor();
  for (int c = 0; c < copies; ++c) g.lk.push_back(llm::pack_matrix(t, g.pool(2)));
  for (std::size_t N : {std::size_t(1), std::size_t(128)})
    g.gg[N] = std::make_unique<ggml_side::matmul>(int(g.type), g.blocks.data(), g.M, g.K, N, copies);
  g.x.resize(128 * g.K);
  for (auto& v : g.x) v = nd(rng);
  // a double reference on 64 rows spread over M (ggml's own dequantization of the blocks)
  std::vector<std::size_t> rows;
  for (std::size_t i = 0; i < 64; ++i) rows.push_back(i * (g.M - 1) / 63);
  std::vector<std::vector<float>> wr;
  for (std::size_t r : rows) wr.push_back(ggml_side::dequantize_row(int(g.type), g.blocks.data(), g.K, r));
  for (auto& [N, mm] : g.gg) {
    mm->set_input(g.x.data());
    std::vector<float> yl(N * g.M), yg(N * g.M);
    mm->run(0, 2);
    mm->output(0, yg.data());
    g.lk[0].apply(g.x.data(), N, yl.data(), g.pool(2));
    double dl = 0, dg = 0, mr = 0;  // largest |lutkit - ref|, |ggml - ref|, |ref| on the sampled rows
    for (std::size_t n = 0; n < N; ++n)
      for (std::size_t i = 0; i < rows.size(); ++i) {
        double ref = 0;
        for (std::size_t k = 0; k < g.K; ++k) ref += double(wr[i][k]) * double(g.x[n * g.K + k]);
        const std::size_t o = n * g.M + rows[i];
        dl = std::max(dl, std::fabs(double(yl[o]) - ref));
        dg = std::max(dg, std::fabs(double(yg[o]) - ref));
        mr = std::max(mr, std::fabs(ref));
      }
    std::fprintf(stderr,
                 "%s n=%zu: lutkit against ggml, max |diff| / max |ggml| = %.2e; against a double reference "
                 "(64 rows), max |diff| / max |ref|: lutkit %.2e, ggml %.2e (ggml: %s buffer)\n",
                 ggml_side::type_name(int(g.type)), N, rel_diff(yl, yg), dl / mr, dg / mr, mm->buffer_name());
  }
  std::fprintf(stderr, "%s: %zu x %zu, %d copies; ggml blocks %.1f MiB, lutkit blob %.1f MiB\n",
               ggml_side::type_name(int(g.type)), g.M, g.K, copies, double(bytes) / 1048576.0,
               double(g.lk[0].bytes()) / 1048576.0);
}

void bm_ggml(benchmark::State& st, std::size_t N, int T) {
  auto& mm = *g.gg.at(N);
  const int copies = int(g.lk.size());
  int i = 0;
  for (auto _ : st) mm.run(i++ % copies, T);
  st.counters["weight_GBps"] = benchmark::Counter(double(g.blocks.size()) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void bm_lutkit(benchmark::State& st, std::size_t N, int T) {
  std::vector<float> y(N * g.M);
  lutkit::thread_pool* pool = g.pool(T);
  std::size_t i = 0;
  for (auto _ : st) {
    g.lk[i++ % g.lk.size()].apply(g.x.data(), N, y.data(), pool);
    benchmark::DoNotOptimize(y.data());
  }
  st.counters["weight_GBps"] = benchmark::Counter(double(g.lk[0].bytes()) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
void bm_load(benchmark::State& st, int T) {
  const lutkit::gguf::tensor t = blocks_tensor();
  for (auto _ : st) {
    llm::matrix m = llm::pack_matrix(t, g.pool(T));
    benchmark::DoNotOptimize(&m);
  }
  st.counters["file_GBps"] = benchmark::Counter(double(g.blocks.size()) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// a plain read of `bytes` at p (32-byte vectors, four chains), the reference each side's kernel
// time compares with: the same loop over lutkit's blobs and over ggml's weight buffers tells a
// difference in the memory the two sides were given from one in their kernels
__attribute__((target("avx2"))) uint64_t read_span(const void* p, std::size_t bytes) {
  typedef uint64_t v4 __attribute__((vector_size(32)));
  const v4* v = static_cast<const v4*>(p);
  v4 a = {}, b = {}, c = {}, d = {};
  const std::size_t n = bytes / 128;
  for (std::size_t i = 0; i < n; ++i) {
    a ^= v[4 * i];
    b ^= v[4 * i + 1];
    c ^= v[4 * i + 2];
    d ^= v[4 * i + 3];
  }
  const v4 r = a ^ b ^ c ^ d;
  return r[0] ^ r[1] ^ r[2] ^ r[3];
}
const void* blob_data(const llm::matrix& m) {
  return std::visit(
      [](const auto& pw) -> const void* {
        if constexpr (std::is_same_v<std::decay_t<decltype(pw)>, std::monostate>)
          return nullptr;
        else
          return pw.bytes();
      },
      m.w);
}
// read/<type>/<side>/threads:T: the plain read of that side's weight copies, rotating as its kernel
void bm_read(benchmark::State& st, bool ggml_side_, int T) {
  const ggml_side::matmul& mm = *g.gg.at(1);
  const int copies = int(g.lk.size());
  const std::size_t bytes = ggml_side_ ? mm.weight_bytes() : g.lk[0].bytes();
  lutkit::thread_pool* pool = g.pool(T);
  int i = 0;
  std::atomic<uint64_t> sink{0};
  for (auto _ : st) {
    const int c = i++ % copies;
    const uint8_t* p = static_cast<const uint8_t*>(ggml_side_ ? mm.weight_data(c) : blob_data(g.lk[std::size_t(c)]));
    const auto part = [&](std::size_t t) {
      const std::size_t a = bytes * t / std::size_t(T) / 128 * 128, b = bytes * (t + 1) / std::size_t(T) / 128 * 128;
      sink ^= read_span(p + a, b - a);
    };
    if (pool)
      pool->run(std::size_t(T), part);
    else
      part(0);
  }
  benchmark::DoNotOptimize(sink.load());
  st.counters["weight_GBps"] = benchmark::Counter(double(bytes) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void bm_memcpy(benchmark::State& st) {
  std::vector<uint8_t> dst(g.blocks.size(), 1);
  for (auto _ : st) {
    std::memcpy(dst.data(), g.blocks.data(), g.blocks.size());
    benchmark::DoNotOptimize(dst.data());
  }
  st.counters["file_GBps"] = benchmark::Counter(double(g.blocks.size()) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
// the same memcpy into a new buffer, allocated as a blob is (lutkit's alloc_aligned: a slab in
// huge pages; a blob above 16 MiB a new mapping of its own): the first touch of new pages that a load into new memory pays
void bm_memcpy_new(benchmark::State& st) {
  for (auto _ : st) {
    lutkit::detail::aligned_bytes dst = lutkit::detail::alloc_aligned(g.blocks.size());
    std::memcpy(dst.get(), g.blocks.data(), g.blocks.size());
    benchmark::DoNotOptimize(dst.get());
  }
  st.counters["file_GBps"] = benchmark::Counter(double(g.blocks.size()) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> rest{argv[0]};
  std::string type = "q4_0";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--type" && i + 1 < argc) type = argv[++i];
    else if (a == "--M" && i + 1 < argc) g.M = std::stoul(argv[++i]);
    else if (a == "--K" && i + 1 < argc) g.K = std::stoul(argv[++i]);
    else rest.push_back(argv[i]);
  }
  try {
    g.type = parse_type(type);
    prepare(2);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernels_bench: %s\n", e.what());
    return 1;
  }
  const std::string tn = ggml_side::type_name(int(g.type));
  for (int T : {1, 2})
    for (std::size_t N : {std::size_t(1), std::size_t(128)}) {
      const std::string tail = tn + "/n:" + std::to_string(N) + "/threads:" + std::to_string(T);
      benchmark::RegisterBenchmark(("ggml/" + tail).c_str(), bm_ggml, N, T)->UseRealTime()->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(("lutkit/" + tail).c_str(), bm_lutkit, N, T)->UseRealTime()->Unit(benchmark::kMillisecond);
    }
  for (int T : {1, 2})
    for (bool gs : {true, false})
      benchmark::RegisterBenchmark(
          ("read/" + tn + (gs ? "/ggml" : "/lutkit") + "/threads:" + std::to_string(T)).c_str(), bm_read, gs, T)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(("memcpy/" + tn).c_str(), bm_memcpy)->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(("memcpy_new/" + tn).c_str(), bm_memcpy_new)->UseRealTime()->Unit(benchmark::kMillisecond);
  for (int T : {1, 2})
    benchmark::RegisterBenchmark(("load/" + tn + "/threads:" + std::to_string(T)).c_str(), bm_load, T)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  int n = int(rest.size());
  benchmark::Initialize(&n, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
