// kernels_bench's interface to ggml (ggml_side.cpp): ggml's quantizers and ggml_mul_mat on its CPU
// backend, weights held as libllama holds them. Types are ggml's type ids (lutkit::ggml_type's values).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace ggml_side {
std::size_t row_bytes(int type, std::size_t K);
const char* type_name(int type);
// M rows of K floats quantized by ggml (ggml_quantize_chunk, no importance matrix), rows split
// over `threads` threads
std::vector<uint8_t> quantize(int type, const float* w, std::size_t M, std::size_t K, int threads);
// row `row` of M x K blocks as ggml dequantizes it (its type traits' to_float), K floats
std::vector<float> dequantize_row(int type, const uint8_t* blocks, std::size_t K, std::size_t row);

// y = W x for `copies` copies of the same M x K weight blocks (cold rotation), x N rows of K
class matmul {
 public:
  matmul(int type, const uint8_t* blocks, std::size_t M, std::size_t K, std::size_t N, int copies);
  ~matmul();
  bool repacked() const;              // the weights sit in an extra buffer type (CPU_REPACK, AMX)
  const char* buffer_name() const;    // the weights' buffer type, as ggml names it
  void set_input(const float* x);     // N x K
  void run(int copy, int threads);    // one graph compute of copy `copy`
  void output(int copy, float* y) const;  // N x M, after run
  const void* weight_data(int copy) const;  // copy `copy` of the weights as ggml holds them (repacked or not)
  std::size_t weight_bytes() const;

 private:
  struct impl;
  std::unique_ptr<impl> p_;
};
}  // namespace ggml_side
