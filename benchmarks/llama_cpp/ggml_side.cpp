// The llama.cpp half of kernels_bench: ggml_mul_mat on ggml's CPU backend, set up as libllama sets
// up a weight (the CPU_REPACK buffer type where ggml's CPU backend supports the op with it: on an
// AVX2 / AVX-512 x86 Q4_0, IQ4_NL and Q4_K repacked to 8 x 8 rows, Q2_K with AVX-512; otherwise
// the plain CPU buffer), and ggml's quantizers for the benchmark's blocks. Kept apart from the
// lutkit translation unit: ggml's C names (ggml_type, ...) stay out of it.
#include "ggml_side.hpp"

#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

namespace ggml_side {

std::size_t row_bytes(int type, std::size_t K) { return ggml_row_size(ggml_type(type), int64_t(K)); }

const char* type_name(int type) { return ggml_type_name(ggml_type(type)); }

std::vector<uint8_t> quantize(int type, const float* w, std::size_t M, std::size_t K, int threads) {
  const ggml_type t = ggml_type(type);
  if (ggml_quantize_requires_imatrix(t)) throw std::runtime_error(std::string("needs an imatrix: ") + ggml_type_name(t));
  const std::size_t rb = ggml_row_size(t, int64_t(K));
  std::vector<uint8_t> out(rb * M);
  ggml_quantize_init(t);
  // rows split over threads (ggml_quantize_chunk is reentrant for disjoint rows)
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i) {
    const std::size_t r0 = M * std::size_t(i) / std::size_t(threads), r1 = M * std::size_t(i + 1) / std::size_t(threads);
    ts.emplace_back([&, r0, r1] {
      ggml_quantize_chunk(t, w + r0 * K, out.data() + r0 * rb, 0, int64_t(r1 - r0), int64_t(K), nullptr);
    });
  }
  for (auto& th : ts) th.join();
  return out;
}

std::vector<float> dequantize_row(int type, const uint8_t* blocks, std::size_t K, std::size_t row) {
  const ggml_type t = ggml_type(type);
  std::vector<float> out(K);
  ggml_get_type_traits(t)->to_float(blocks + row * ggml_row_size(t, int64_t(K)), out.data(), int64_t(K));
  return out;
}

struct matmul::impl {
  ggml_backend_t backend = nullptr;
  ggml_context* wctx = nullptr;  // the weight copies
  ggml_context* ctx = nullptr;   // activations, outputs, graphs
  ggml_backend_buffer_t wbuf = nullptr, buf = nullptr;
  std::vector<ggml_cgraph*> graphs;
  std::vector<ggml_tensor*> outs, ws;
  ggml_tensor* x = nullptr;
  bool repacked = false;
  const char* buft_name = "CPU";
  std::size_t M = 0, N = 0;
};

matmul::matmul(int type, const uint8_t* blocks, std::size_t M, std::size_t K, std::size_t N, int copies)
    : p_(std::make_unique<impl>()) {
  const ggml_type t = ggml_type(type);
  p_->M = M;
  p_->N = N;
  p_->backend = ggml_backend_cpu_init();
  if (!p_->backend) throw std::runtime_error("ggml_backend_cpu_init failed");
  ggml_backend_dev_t dev = ggml_backend_get_device(p_->backend);
  ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);

  // the buffer type libllama gives a weight: the first extra (repack) buffer type whose
  // supports_op accepts this mul_mat, else the CPU buffer type
  ggml_backend_buffer_type_t wbuft = ggml_backend_cpu_buffer_type();
  {
    ggml_init_params ip{ggml_tensor_overhead() * 8, nullptr, true};
    ggml_context* probe = ggml_init(ip);
    ggml_tensor* a = ggml_new_tensor_2d(probe, t, int64_t(K), int64_t(M));
    ggml_tensor* b = ggml_new_tensor_2d(probe, GGML_TYPE_F32, int64_t(K), int64_t(N));
    ggml_tensor* op = ggml_mul_mat(probe, a, b);
    auto get_extra = (ggml_backend_dev_get_extra_bufts_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts");
    if (get_extra) {
      for (ggml_backend_buffer_type_t* e = get_extra(dev); e && *e; ++e) {
        ggml_backend_buffer_t dummy = ggml_backend_buft_alloc_buffer(*e, 0);
        a->buffer = dummy;
        const bool ok = ggml_backend_dev_supports_op(dev, op);
        a->buffer = nullptr;
        ggml_backend_buffer_free(dummy);
        if (ok) {
          wbuft = *e;
          p_->repacked = true;
          p_->buft_name = ggml_backend_buft_name(*e);
          break;
        }
      }
    }
    ggml_free(probe);
  }

  ggml_init_params wp{ggml_tensor_overhead() * std::size_t(copies + 1), nullptr, true};
  p_->wctx = ggml_init(wp);
  std::vector<ggml_tensor*> ws;
  for (int c = 0; c < copies; ++c) ws.push_back(ggml_new_tensor_2d(p_->wctx, t, int64_t(K), int64_t(M)));
  p_->wbuf = ggml_backend_alloc_ctx_tensors_from_buft(p_->wctx, wbuft);
  if (!p_->wbuf) throw std::runtime_error("ggml: weight buffer allocation failed");
  ggml_backend_buffer_set_usage(p_->wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
  for (ggml_tensor* w : ws) ggml_backend_tensor_set(w, blocks, 0, ggml_nbytes(w));  // (repacks)
  p_->ws = ws;

  const std::size_t graph_bytes = ggml_graph_overhead() * std::size_t(copies) + ggml_tensor_overhead() * std::size_t(2 * copies + 4);
  ggml_init_params cp{graph_bytes, nullptr, true};
  p_->ctx = ggml_init(cp);
  p_->x = ggml_new_tensor_2d(p_->ctx, GGML_TYPE_F32, int64_t(K), int64_t(N));
  for (int c = 0; c < copies; ++c) {
    ggml_tensor* y = ggml_mul_mat(p_->ctx, ws[std::size_t(c)], p_->x);
    ggml_cgraph* g = ggml_new_graph(p_->ctx);
    ggml_build_forward_expand(g, y);
    p_->graphs.push_back(g);
    p_->outs.push_back(y);
  }
  p_->buf = ggml_backend_alloc_ctx_tensors(p_->ctx, p_->backend);
  if (!p_->buf) throw std::runtime_error("ggml: activation buffer allocation failed");
}

matmul::~matmul() {
  if (!p_) return;
  if (p_->buf) ggml_backend_buffer_free(p_->buf);
  if (p_->wbuf) ggml_backend_buffer_free(p_->wbuf);
  if (p_->ctx) ggml_free(p_->ctx);
  if (p_->wctx) ggml_free(p_->wctx);
  if (p_->backend) ggml_backend_free(p_->backend);
}

bool matmul::repacked() const { return p_->repacked; }
const char* matmul::buffer_name() const { return p_->buft_name; }

void matmul::set_input(const float* x) { ggml_backend_tensor_set(p_->x, x, 0, ggml_nbytes(p_->x)); }

void matmul::run(int copy, int threads) {
  ggml_backend_cpu_set_n_threads(p_->backend, threads);
  if (ggml_backend_graph_compute(p_->backend, p_->graphs[std::size_t(copy)]) != GGML_STATUS_SUCCESS)
    throw std::runtime_error("ggml_backend_graph_compute failed");
}

const void* matmul::weight_data(int copy) const { return p_->ws[std::size_t(copy)]->data; }
std::size_t matmul::weight_bytes() const { return ggml_nbytes(p_->ws[0]); }

void matmul::output(int copy, float* y) const {
  ggml_backend_tensor_get(p_->outs[std::size_t(copy)], y, 0, ggml_nbytes(p_->outs[std::size_t(copy)]));
}

}  // namespace ggml_side
