// lutkit — the AMD AIE-ML target: a host-executed model of one compute tile's vector API.
//
// No AIE compiler or simulator runs here (docs/targets/aie.md), so lutkit's AIE kernels are
// written against this model: vectors and accumulators of the hardware's widths, the matrix
// unit's native `mmul` shapes only, shift-round-saturate (SRS) with every rounding and saturation
// mode, upshift (UPS), int4 -> int8 -> int16 unpack, a fixed set of shuffle modes, broadcast,
// parallel_lookup with its replicated table layout checked, and aligned loads and stores into the
// tile's 64 KiB data memory with bank accounting. Every operation computes its documented
// integer result bit for bit and records its issue slot in the core's trace, which the cycle
// model (model/cycles.hpp) turns into initiation intervals. Every figure derived from it is
// modelled, never measured.
//
// Two profiles: aie2 (XDNA 1: Phoenix, Hawk Point) and aie2p (XDNA 2: Strix, Krackan Point).
// Freestanding like the HVX kernels: no hosted header, no exceptions, no allocation; an operation
// that the hardware would refuse (a misaligned load, an address past the data memory, a table in
// the wrong layout) sets the core's sticky status and yields zeros, and every kernel returns a
// status.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../../core/bf16.hpp"
#include "../../core/half.hpp"

namespace lutkit::aie {

enum class status : int {
  ok = 0,
  null_pointer,      // a required pointer is null
  bad_shape,         // a dimension is 0, or not a multiple the kernel needs
  bad_stride,        // a leading dimension smaller than the row
  bad_alignment,     // a vector load or store at an address not aligned to its access width
  out_of_memory,     // the kernel's buffers do not fit the 64 KiB data memory
  bad_table,         // parallel_lookup: the table is not in the replicated layout, or its copies share a bank
  out_of_range,      // an access past the end of the data memory
  unsupported,       // a shape or type the profile does not offer natively
};

constexpr const char* status_name(status s) {
  switch (s) {
    case status::ok: return "ok";
    case status::null_pointer: return "null pointer";
    case status::bad_shape: return "bad shape";
    case status::bad_stride: return "bad stride";
    case status::bad_alignment: return "misaligned vector access";
    case status::out_of_memory: return "data memory exhausted";
    case status::bad_table: return "lookup table not in the replicated layout";
    case status::out_of_range: return "access past the data memory";
    case status::unsupported: return "not native on this profile";
  }
  return "unknown status";
}

// ---------------------------------------------------------------------------------- profiles
// Issue slots of the VLIW bundle the trace counts (FACTS.md, AIE2Slots.td): two vector load
// ports (counted together as `ld`, 2 per cycle), one store port, the vector unit, the move slot,
// the scalar ALU. Which slot an operation takes is part of the model (docs/targets/aie.md,
// "Slots"): loads, load-with-upshift and parallel_lookup the load ports; stores and
// store-with-SRS the store port; mmul, element-wise arithmetic, compares, selects, shuffles,
// SRS, UPS, unpack and conversions the vector slot; broadcast and scalar-to-vector moves the
// move slot; pointer and loop arithmetic the ALU.
enum class slot : int { ld = 0, st, vec, mv, alu, count };

// aie2 = AIE-ML (XDNA 1). Sources: FACTS.md (AM020, UG1603, AIE2Schedule.td, npu1_regs.c).
struct aie2 {
  static constexpr const char* name = "aie2";
  static constexpr int vector_bits_max = 1024;   // Y registers (4 x 256-bit W)
  static constexpr int acc_bits_max = 1024;      // CM accumulators (2 x 512-bit BM)
  static constexpr int load_bits = 256;          // each of the two load ports
  static constexpr int store_bits = 256;
  static constexpr std::size_t dm_bytes = 65536;  // 8 single-port banks of 128 bit x 512 words
  static constexpr int banks = 8;
  static constexpr std::size_t bank_bytes = 8192;
  static constexpr int conflict_banks = 1;        // two loads conflict within one bank
  static constexpr int lut_accesses = 4;          // parallel_lookup: 4 reads per instruction
  static constexpr int lut_repeat_bytes = 16;     // table repeated every 128 bits, 2 copies
  // latencies in cycles (AIE2Schedule.td via FACTS.md)
  static constexpr int lat_load = 7, lat_mac_int = 5, lat_mac_float = 6, acc_read_stage = 3;
  static constexpr int lat_srs = 4, lat_ups = 3, lat_shuffle = 2, lat_unpack = 7, lat_branch = 6, lat_store = 1;
  static constexpr double clock_ghz = 1.6;  // npu1_regs.c power table maximum (uncertain: 1.0 elsewhere)
  static constexpr int columns = 4, rows = 4;  // usable compute array (column 0 has no shim DMA)
};
// aie2p = XDNA 2. Sources: FACTS.md (scalable-analyses/xdna isa.rst, NPU2 target model, npu4_regs.c).
struct aie2p {
  static constexpr const char* name = "aie2p";
  static constexpr int vector_bits_max = 1024;
  static constexpr int acc_bits_max = 2048;      // five 2048-bit accumulators
  static constexpr int load_bits = 512;
  static constexpr int store_bits = 512;
  static constexpr std::size_t dm_bytes = 65536;  // 8 x 8 KiB banks paired into 4 x 16 KiB
  static constexpr int banks = 8;
  static constexpr std::size_t bank_bytes = 8192;
  static constexpr int conflict_banks = 2;        // two 512-bit loads only from different pairs
  static constexpr int lut_accesses = 4;          // (uncertain: UG1603 gives 8 for AIE-ML v2)
  static constexpr int lut_repeat_bytes = 16;
  static constexpr int lat_load = 7, lat_mac_int = 5, lat_mac_float = 6, acc_read_stage = 3;
  static constexpr int lat_srs = 4, lat_ups = 3, lat_shuffle = 2, lat_unpack = 7, lat_branch = 6, lat_store = 1;
  static constexpr double clock_ghz = 1.8;  // npu4_regs.c; the Gemma 3 paper's "up to 1.8 GHz"
  static constexpr int columns = 8, rows = 4;
};

// ---------------------------------------------------------------------------------- element types
struct i4 {};    // signed 4-bit (two per byte, element 2 i in the low nibble of byte i)
struct u4 {};    // unsigned 4-bit
struct bf16 {};  // bfloat16 (stored as its bits)
template <class T>
struct elem {
  using type = T;
  static constexpr int bits = int(sizeof(T) * 8);
};
template <>
struct elem<i4> {
  using type = int8_t;
  static constexpr int bits = 4;
};
template <>
struct elem<u4> {
  using type = uint8_t;
  static constexpr int bits = 4;
};
template <>
struct elem<bf16> {
  using type = uint16_t;
  static constexpr int bits = 16;
};

template <class T, int N>
struct vec {
  static_assert(N * elem<T>::bits >= 128 && N * elem<T>::bits <= 1024 && (N & (N - 1)) == 0,
                "aie::vec: 128- to 1024-bit vectors of a power-of-two length");
  using value_type = typename elem<T>::type;
  static constexpr int size = N;
  static constexpr int bits = N * elem<T>::bits;
  value_type v[N] = {};
  constexpr value_type& operator[](int i) { return v[i]; }
  constexpr const value_type& operator[](int i) const { return v[i]; }
};

// Accumulator lanes: acc32 (32-bit integer lanes, wrapping), acc64, accfloat (fp32).
enum class acc_kind : int { acc32, acc64, accfloat };
template <acc_kind A, int N>
struct accum {
  static constexpr int lane_bits = A == acc_kind::acc64 ? 64 : 32;
  static_assert(N * lane_bits >= 256 && N * lane_bits <= 2048, "aie::accum: 256- to 2048-bit accumulators");
  using value_type = std::conditional_t<A == acc_kind::accfloat, float, int64_t>;
  static constexpr int size = N;
  static constexpr int bits = N * lane_bits;
  value_type v[N] = {};
};

// ---------------------------------------------------------------------------------- modes
// SRS rounding (UG1583 rounding modes; UG1603 aie::rounding_mode) and saturation.
enum class rounding : int {
  floor = 0,          // truncate: toward -inf
  ceil = 1,           // toward +inf
  sym_floor = 2,      // toward zero
  sym_ceil = 3,       // away from zero
  neg_inf = 8,        // nearest, halfway toward -inf
  pos_inf = 9,        // nearest, halfway toward +inf
  sym_zero = 10,      // nearest, halfway toward zero
  sym_inf = 11,       // nearest, halfway away from zero
  conv_even = 12,     // nearest, halfway to even
  conv_odd = 13,      // nearest, halfway to odd
};
enum class saturation : int { none = 0, saturate = 1, symmetric = 3 };

// The fixed shuffle modes the model offers (aie_api filter / interleave families): one vector's
// even or odd elements, or two vectors' zip / unzip halves, at the element granularity of T.
enum class shuffle_mode : int { filter_even, filter_odd, zip_lo, zip_hi, unzip_lo, unzip_hi };

// Planted faults (tests/aie: each one must make the suite fail). The model's operations and the
// kernels consult the core's fault; `none` in every real run.
enum class fault : int {
  none = 0,
  // operations
  srs_rounding,      // SRS rounds halfway cases as floor
  srs_saturation,    // SRS saturation off by one at the top
  ups_shift,         // UPS shifts by one less
  unpack_sign,       // int4 unpack zero-extends
  shuffle_order,     // zip swaps its sources
  broadcast_lane,    // broadcast leaves the last lane 0
  mmul_last_k,       // mmul drops the last k of its shape
  mmul_acc,          // mac overwrites instead of accumulating
  lookup_index,      // parallel_lookup reads entry index + 1
  load_bank,         // (cycle model) bank conflicts not counted
  bf16_round,        // float -> bf16 conversion drops 4 of the 7 mantissa bits
  int_lane,          // integer element-wise ops (add ... select, narrow): lane 0 off by one
  float_lane,        // fp32 element-wise ops (fadd, fmax, fmul, mul_bf16, finv, acc_add): lane 0 off by 2^-10
  convert,           // int32 <-> fp32 conversions: lane 0 off by one unit
  store_byte,        // a vector store leaves its last byte unwritten
  // kernels
  gemv_group_scale,  // W4A8 GEMV: the next group's activation scale
  gemv_nibble,       // W4A8 GEMV: the code's sign flip skipped
  lut_plane_weight,  // LUT-GEMV: plane 1 weighs 1
  lut_zero_term,     // LUT-GEMV: the zero-point term dropped
  dq_min,            // dequant-GEMM: the group minimum dropped
  dq_k_tile,         // dequant-GEMM: the last k tile skipped
  att_rescale,       // attention: the running-max correction not applied to the value sum
  att_causal,        // attention: a query sees one key past its position
  exp_table,         // exp: the table built with the wrong step
  dllm_argmax_tie,   // dLLM step: ties keep the higher index
  dllm_sum_rescale,  // dLLM step: the running sum not rescaled on a new maximum
  count
};
constexpr const char* fault_name(fault f) {
  constexpr const char* names[] = {"none", "srs_rounding", "srs_saturation", "ups_shift", "unpack_sign", "shuffle_order",
                                   "broadcast_lane", "mmul_last_k", "mmul_acc", "lookup_index", "load_bank", "bf16_round",
                                   "int_lane", "float_lane", "convert", "store_byte",
                                   "gemv_group_scale", "gemv_nibble", "lut_plane_weight", "lut_zero_term", "dq_min",
                                   "dq_k_tile", "att_rescale", "att_causal", "exp_table", "dllm_argmax_tie",
                                   "dllm_sum_rescale"};
  return names[int(f)];
}

// ---------------------------------------------------------------------------------- trace
// Per loop region: issue counts per slot, iterations, vector-MAC issues per accumulator (the
// recurrence), load pairs that hit the same bank (group), lookups.
struct region_stats {
  const char* name = nullptr;
  uint64_t entries = 0, iterations = 0;
  uint64_t ops[int(slot::count)] = {};
  uint64_t bank_peak = 0;   // sum over iterations of the busiest bank (group)'s accesses: a bank serves one a cycle
  uint64_t macs = 0;        // mmul / mac issues
  uint64_t macs_float = 0;  // of which bf16 / bfp16 (float accumulators)
  uint64_t lookups = 0;     // parallel_lookup element reads
  uint64_t dma_bytes_in = 0, dma_bytes_out = 0;
  static constexpr int max_acc = 16;
  const void* acc_key[max_acc] = {};
  uint64_t acc_macs[max_acc] = {};
  bool acc_float[max_acc] = {};
  int n_acc = 0;
  // per iteration bookkeeping: accesses per bank (group) of the current iteration
  uint32_t bank_hits[8] = {};
  void flush_banks() {
    uint32_t m = 0;
    for (auto& h : bank_hits) {
      m = h > m ? h : m;
      h = 0;
    }
    bank_peak += m;
  }
};

struct trace {
  static constexpr int max_regions = 24;
  region_stats r[max_regions];
  int n = 1;        // region 0: straight-line code outside any loop
  int current = 0;
  bool count_conflicts = true;
  constexpr trace() { r[0].name = "straight-line"; }
  region_stats& cur() { return r[current]; }
  int find(const char* name) {
    for (int i = 1; i < n; ++i)
      if (r[i].name == name || __builtin_strcmp(r[i].name, name) == 0) return i;
    if (n == max_regions) return 0;
    r[n].name = name;
    return n++;
  }
};

// ---------------------------------------------------------------------------------- the core
// One compute tile: its data memory (a bump allocator over the 64 KiB, with per-bank placement),
// the SRS modes, the trace and the fault switch.
template <class Prof>
struct core {
  using profile = Prof;
  alignas(64) uint8_t dm[Prof::dm_bytes] = {};
  std::size_t top = 0;                        // linear allocations grow up from 0
  std::size_t ceiling = Prof::dm_bytes;       // banked ones are carved from their bank's end
  std::size_t bank_end[Prof::banks] = {};
  rounding rnd = rounding::floor;
  saturation sat = saturation::none;
  status st = status::ok;
  fault flt = fault::none;
  trace tr;

  void fail(status s) {
    if (st == status::ok) st = s;
  }
  bool faulty(fault f) const { return flt == f; }
  // `bytes` of the data memory aligned to `align`: from the bottom, or, in bank `bank` (0..7)
  // when given, carved from that bank's end (the whole allocation lies in it; the linear
  // allocations stay below every carved one). Returns the offset, or sets out_of_memory.
  uint32_t alloc(std::size_t bytes, std::size_t align = 64, int bank = -1) {
    if (bank >= 0) {
      std::size_t& end = bank_end[bank];
      if (end == 0) end = std::size_t(bank + 1) * Prof::bank_bytes;
      const std::size_t b0 = std::size_t(bank) * Prof::bank_bytes;
      if (bytes > end - b0 || (end - bytes) / align * align < b0 || (end - bytes) / align * align < top) {
        fail(status::out_of_memory);
        return 0;
      }
      end = (end - bytes) / align * align;
      if (end < ceiling) ceiling = end;
      return uint32_t(end);
    }
    const std::size_t o = (top + align - 1) / align * align;
    if (o + bytes > ceiling) {
      fail(status::out_of_memory);
      return 0;
    }
    top = o + bytes;
    return uint32_t(o);
  }
  void reset_memory() {
    top = 0;
    ceiling = Prof::dm_bytes;
    for (auto& e : bank_end) e = 0;
  }
  static constexpr int bank_of(std::size_t off) { return int(off / Prof::bank_bytes); }
  uint8_t* ptr(uint32_t off) { return dm + off; }
  // the DMA (not the core): bytes into / out of the data memory, counted for the data-movement
  // model, no issue slot
  void dma_in(uint32_t off, const void* src, std::size_t bytes) {
    if (std::size_t(off) + bytes > Prof::dm_bytes) return fail(status::out_of_range);
    __builtin_memcpy(dm + off, src, bytes);
    tr.cur().dma_bytes_in += bytes;
  }
  void dma_out(void* dst, uint32_t off, std::size_t bytes) {
    if (std::size_t(off) + bytes > Prof::dm_bytes) return fail(status::out_of_range);
    __builtin_memcpy(dst, dm + off, bytes);
    tr.cur().dma_bytes_out += bytes;
  }
  // loop regions: the kernel marks its loops; the cycle model reads one II per region
  void loop_begin(const char* name) {
    tr.current = tr.find(name);
    ++tr.cur().entries;
  }
  void iteration() {
    if (tr.cur().iterations > 0) tr.cur().flush_banks();
    ++tr.cur().iterations;
  }
  void loop_end() {
    tr.cur().flush_banks();
    tr.current = 0;
  }
  void issue(slot s, uint64_t n = 1) { tr.cur().ops[int(s)] += n; }
  void bank_access(std::size_t off) {
    if (tr.count_conflicts && flt != fault::load_bank) ++tr.cur().bank_hits[bank_of(off) / Prof::conflict_banks];
  }
  void issue_load(std::size_t off) {
    ++tr.cur().ops[int(slot::ld)];
    bank_access(off);
  }
  void issue_store(std::size_t off) {
    ++tr.cur().ops[int(slot::st)];
    bank_access(off);
  }
  void issue_mac(const void* acc, bool is_float) {
    region_stats& R = tr.cur();
    ++R.ops[int(slot::vec)];
    ++R.macs;
    if (is_float) ++R.macs_float;
    for (int i = 0; i < R.n_acc; ++i)
      if (R.acc_key[i] == acc) {
        ++R.acc_macs[i];
        return;
      }
    if (R.n_acc < region_stats::max_acc) {
      R.acc_key[R.n_acc] = acc;
      R.acc_macs[R.n_acc] = 1;
      R.acc_float[R.n_acc] = is_float;
      ++R.n_acc;
    }
  }
};

// ---------------------------------------------------------------------------------- scalar semantics
namespace detail {
constexpr int64_t wrap32(int64_t x) { return int64_t(int32_t(uint32_t(uint64_t(x)))); }
// arithmetic shift right of a 64-bit value with the given rounding (shift >= 0); the exact
// integer result of x / 2^shift rounded per mode
constexpr int64_t shift_round(int64_t x, int shift, rounding m, bool halfway_floor) {
  if (shift <= 0) return x << (-shift);
  const int64_t q = x >> shift;  // floor
  const int64_t rem = x - (q << shift);  // 0 <= rem < 2^shift
  const int64_t half = int64_t(1) << (shift - 1);
  const bool exact = rem == 0, neg = x < 0;
  switch (m) {
    case rounding::floor: return q;
    case rounding::ceil: return exact ? q : q + 1;
    case rounding::sym_floor: return exact || !neg ? q : q + 1;
    case rounding::sym_ceil: return exact || neg ? q : q + 1;
    default: break;
  }
  if (rem > half) return q + 1;
  if (rem < half) return q;
  if (halfway_floor) return q;  // planted fault
  switch (m) {
    case rounding::neg_inf: return q;
    case rounding::pos_inf: return q + 1;
    case rounding::sym_zero: return neg ? q + 1 : q;
    case rounding::sym_inf: return neg ? q : q + 1;
    case rounding::conv_even: return (q & 1) ? q + 1 : q;
    case rounding::conv_odd: return (q & 1) ? q : q + 1;
    default: return q;
  }
}
constexpr int64_t saturate_to(int64_t x, int bits, saturation s, bool off_by_one) {
  const int64_t hi = (int64_t(1) << (bits - 1)) - 1 - (off_by_one ? 1 : 0);
  const int64_t lo = s == saturation::symmetric ? -hi : -(int64_t(1) << (bits - 1));
  if (s == saturation::none) {  // truncate on the MSB side
    const uint64_t mask = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
    uint64_t u = uint64_t(x) & mask;
    if (bits < 64 && (u >> (bits - 1)) & 1) u |= ~mask;
    return int64_t(u);
  }
  return x > hi ? hi : (x < lo ? lo : x);
}
inline float bits_f32(uint32_t u) {
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
inline uint32_t f32_bits(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  return u;
}
template <class T>
constexpr bool is_signed_elem = T(-1) < T(0);
}  // namespace detail

// ---------------------------------------------------------------------------------- memory
// Whether a vector access of `bytes` at `off` is aligned to `align` and inside the data memory;
// if not, the core records the fault.
template <class P>
bool access_ok(core<P>& c, uint32_t off, int bytes, int align) {
  if (off % uint32_t(align) != 0) {
    c.fail(status::bad_alignment);
    return false;
  }
  if (std::size_t(off) + std::size_t(bytes) > P::dm_bytes) {
    c.fail(status::out_of_range);
    return false;
  }
  return true;
}
// Vector load of N elements of T at data-memory offset `off`: one load-port issue per
// load_bits (a 512-bit vector is two 256-bit loads on aie2, one on aie2p), each counted in its
// bank; the address must be aligned to min(vector bytes, load bytes).
template <class T, int N, class P>
vec<T, N> load(core<P>& c, uint32_t off) {
  vec<T, N> r;
  constexpr int bytes = N * elem<T>::bits / 8;
  constexpr int port = P::load_bits / 8;
  constexpr int align = bytes < port ? bytes : port;
  if (!access_ok(c, off, bytes, align)) return r;
  for (int o = 0; o < bytes; o += port) c.issue_load(off + std::size_t(o));
  const uint8_t* p = c.dm + off;
  if constexpr (elem<T>::bits == 4) {
    for (int i = 0; i < N; ++i) {
      const int nib = (p[i / 2] >> (4 * (i % 2))) & 15;
      r.v[i] = detail::is_signed_elem<typename elem<T>::type> ? typename elem<T>::type(nib >= 8 ? nib - 16 : nib)
                                                              : typename elem<T>::type(nib);
    }
  } else {
    __builtin_memcpy(r.v, p, bytes);
  }
  return r;
}
template <class T, int N, class P>
void store(core<P>& c, uint32_t off, const vec<T, N>& x) {
  constexpr int bytes = N * elem<T>::bits / 8;
  constexpr int port = P::store_bits / 8;
  constexpr int align = bytes < port ? bytes : port;
  if (!access_ok(c, off, bytes, align)) return;
  for (int o = 0; o < bytes; o += port) c.issue_store(off + std::size_t(o));
  uint8_t* p = c.dm + off;
  const uint8_t last = p[bytes - 1];
  if constexpr (elem<T>::bits == 4) {
    for (int i = 0; i < N; i += 2) p[i / 2] = uint8_t((uint8_t(x.v[i]) & 15) | ((uint8_t(x.v[i + 1]) & 15) << 4));
  } else {
    __builtin_memcpy(p, x.v, bytes);
  }
  if (c.faulty(fault::store_byte)) p[bytes - 1] = last;
}

// An accumulator's 32-bit lanes (fp32, or int32 for acc32) loaded from / stored to the data
// memory through the load / store ports, one issue per port width.
template <acc_kind A, int N, class P>
accum<A, N> load_acc(core<P>& c, uint32_t off) {
  static_assert(A != acc_kind::acc64, "aie::load_acc: 32-bit lanes");
  accum<A, N> r;
  constexpr int bytes = 4 * N, port = P::load_bits / 8;
  if (!access_ok(c, off, bytes, port)) return r;
  for (int o = 0; o < bytes; o += port) c.issue_load(off + std::size_t(o));
  for (int i = 0; i < N; ++i) {
    if constexpr (A == acc_kind::accfloat) {
      __builtin_memcpy(&r.v[i], c.dm + off + 4 * i, 4);
    } else {
      int32_t x;
      __builtin_memcpy(&x, c.dm + off + 4 * i, 4);
      r.v[i] = x;
    }
  }
  return r;
}
template <acc_kind A, int N, class P>
void store_acc(core<P>& c, uint32_t off, const accum<A, N>& a) {
  static_assert(A != acc_kind::acc64, "aie::store_acc: 32-bit lanes");
  constexpr int bytes = 4 * N, port = P::store_bits / 8;
  if (!access_ok(c, off, bytes, port)) return;
  for (int o = 0; o < bytes; o += port) c.issue_store(off + std::size_t(o));
  for (int i = 0; i < N; ++i) {
    if constexpr (A == acc_kind::accfloat) {
      __builtin_memcpy(c.dm + off + 4 * i, &a.v[i], 4);
    } else {
      const int32_t x = int32_t(a.v[i]);
      __builtin_memcpy(c.dm + off + 4 * i, &x, 4);
    }
  }
}

// ---------------------------------------------------------------------------------- broadcast / moves
template <class T, int N, class P>
vec<T, N> broadcast(core<P>& c, typename elem<T>::type x) {
  c.issue(slot::mv);
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r.v[i] = x;
  if (c.faulty(fault::broadcast_lane)) r.v[N - 1] = 0;
  return r;
}
// a scalar of the core (pointer / counter arithmetic): one ALU issue
template <class P>
void scalar_op(core<P>& c, int n = 1) {
  c.issue(slot::alu, uint64_t(n));
}

// ---------------------------------------------------------------------------------- element-wise integer
namespace detail {
template <class T, int N, class P, class F>
vec<T, N> lanewise(core<P>& c, const vec<T, N>& a, const vec<T, N>& b, F f) {
  static_assert(elem<T>::bits >= 8 && !std::is_same_v<T, bf16>, "aie: integer element-wise ops on 8/16/32-bit lanes");
  c.issue(slot::vec);
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r.v[i] = typename elem<T>::type(f(int64_t(a.v[i]), int64_t(b.v[i])));
  if (c.faulty(fault::int_lane)) r.v[0] = typename elem<T>::type(r.v[0] + 1);
  return r;
}
}  // namespace detail
// wrapping add / sub, max, min, bitwise and / or / xor
template <class T, int N, class P>
vec<T, N> add(core<P>& c, const vec<T, N>& a, const vec<T, N>& b) {
  return detail::lanewise(c, a, b, [](int64_t x, int64_t y) { return x + y; });
}
template <class T, int N, class P>
vec<T, N> sub(core<P>& c, const vec<T, N>& a, const vec<T, N>& b) {
  return detail::lanewise(c, a, b, [](int64_t x, int64_t y) { return x - y; });
}
template <class T, int N, class P>
vec<T, N> max(core<P>& c, const vec<T, N>& a, const vec<T, N>& b) {
  return detail::lanewise(c, a, b, [](int64_t x, int64_t y) { return x > y ? x : y; });
}
template <class T, int N, class P>
vec<T, N> band(core<P>& c, const vec<T, N>& a, const vec<T, N>& b) {
  return detail::lanewise(c, a, b, [](int64_t x, int64_t y) { return x & y; });
}
template <class T, int N, class P>
vec<T, N> bor(core<P>& c, const vec<T, N>& a, const vec<T, N>& b) {
  return detail::lanewise(c, a, b, [](int64_t x, int64_t y) { return x | y; });
}
template <class T, int N, class P>
vec<T, N> bxor(core<P>& c, const vec<T, N>& a, const vec<T, N>& b) {
  return detail::lanewise(c, a, b, [](int64_t x, int64_t y) { return x ^ y; });
}
// shifts by an immediate: left, and right (arithmetic for signed, logical for unsigned lanes)
template <class T, int N, class P>
vec<T, N> shl(core<P>& c, const vec<T, N>& a, int s) {
  c.issue(slot::vec);
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r.v[i] = typename elem<T>::type(uint64_t(int64_t(a.v[i])) << s);
  if (c.faulty(fault::int_lane)) r.v[0] = typename elem<T>::type(r.v[0] + 1);
  return r;
}
template <class T, int N, class P>
vec<T, N> shr(core<P>& c, const vec<T, N>& a, int s) {
  c.issue(slot::vec);
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r.v[i] = typename elem<T>::type(a.v[i] >> s);
  if (c.faulty(fault::int_lane)) r.v[0] = typename elem<T>::type(r.v[0] + 1);
  return r;
}
// lane mask of a > b, and select(mask, a, b) = mask ? a : b
template <int N>
struct mask {
  bool m[N] = {};
};
template <class T, int N, class P>
mask<N> gt(core<P>& c, const vec<T, N>& a, const vec<T, N>& b) {
  c.issue(slot::vec);
  mask<N> r;
  for (int i = 0; i < N; ++i) r.m[i] = a.v[i] > b.v[i];
  if (c.faulty(fault::int_lane)) r.m[0] = !r.m[0];
  return r;
}
template <class T, int N, class P>
vec<T, N> select(core<P>& c, const mask<N>& m, const vec<T, N>& a, const vec<T, N>& b) {
  c.issue(slot::vec);
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r.v[i] = m.m[i] ? a.v[i] : b.v[i];
  if (c.faulty(fault::int_lane)) r.v[0] = typename elem<T>::type(r.v[0] + 1);
  return r;
}

// ---------------------------------------------------------------------------------- unpack / pack
// int4 -> int8 (sign-extending) and u4 -> uint8, int8 -> int16, uint8 -> uint16: element i of
// the result is element i of the source (the low nibble of byte i / 2 for even i).
template <class T>
struct widened;
template <>
struct widened<i4> {
  using type = int8_t;
};
template <>
struct widened<u4> {
  using type = uint8_t;
};
template <>
struct widened<int8_t> {
  using type = int16_t;
};
template <>
struct widened<uint8_t> {
  using type = uint16_t;
};
template <class T, int N, class P>
vec<typename widened<T>::type, N> unpack(core<P>& c, const vec<T, N>& a) {
  c.issue(slot::vec);
  vec<typename widened<T>::type, N> r;
  for (int i = 0; i < N; ++i) {
    auto x = a.v[i];
    if constexpr (std::is_same_v<T, i4>)
      if (c.faulty(fault::unpack_sign)) x = int8_t(x & 15);
    r.v[i] = typename widened<T>::type(x);
  }
  return r;
}
// reinterpret the bytes of a vector as another element type (no instruction)
template <class U, int M, class T, int N>
vec<U, M> as(const vec<T, N>& a) {
  static_assert(M * elem<U>::bits == N * elem<T>::bits, "aie::as: same total size");
  vec<U, M> r;
  if constexpr (elem<T>::bits == 4 || elem<U>::bits == 4) {
    uint8_t bytes[N * elem<T>::bits / 8] = {};
    if constexpr (elem<T>::bits == 4)
      for (int i = 0; i < N; i += 2) bytes[i / 2] = uint8_t((uint8_t(a.v[i]) & 15) | ((uint8_t(a.v[i + 1]) & 15) << 4));
    else
      __builtin_memcpy(bytes, a.v, sizeof(bytes));
    if constexpr (elem<U>::bits == 4) {
      for (int i = 0; i < M; ++i) {
        const int nib = (bytes[i / 2] >> (4 * (i % 2))) & 15;
        r.v[i] = std::is_same_v<U, i4> ? typename elem<U>::type(nib >= 8 ? nib - 16 : nib) : typename elem<U>::type(nib);
      }
    } else {
      __builtin_memcpy(r.v, bytes, sizeof(bytes));
    }
  } else {
    __builtin_memcpy(r.v, a.v, sizeof(r.v));
  }
  return r;
}
// the lower or upper half of a vector, or two halves joined (register views: no instruction)
template <class T, int N>
vec<T, N / 2> half(const vec<T, N>& a, int h) {
  vec<T, N / 2> r;
  for (int i = 0; i < N / 2; ++i) r.v[i] = a.v[h * (N / 2) + i];
  return r;
}
template <acc_kind A, int N>
accum<A, N / 2> half_acc(const accum<A, N>& a, int h) {
  accum<A, N / 2> r;
  for (int i = 0; i < N / 2; ++i) r.v[i] = a.v[h * (N / 2) + i];
  return r;
}
template <class T, int N>
vec<T, 2 * N> concat(const vec<T, N>& a, const vec<T, N>& b) {
  vec<T, 2 * N> r;
  for (int i = 0; i < N; ++i) r.v[i] = a.v[i], r.v[N + i] = b.v[i];
  return r;
}

// narrowing of integer lanes to a smaller type, truncating (the high bits dropped): one issue
template <class U, class T, int N, class P>
vec<U, N> narrow(core<P>& c, const vec<T, N>& a) {
  c.issue(slot::vec);
  vec<U, N> r;
  for (int i = 0; i < N; ++i) r.v[i] = typename elem<U>::type(a.v[i]);
  if (c.faulty(fault::int_lane)) r.v[0] = typename elem<U>::type(r.v[0] + 1);
  return r;
}

// ---------------------------------------------------------------------------------- shuffles
template <class T, int N, class P>
vec<T, N> shuffle(core<P>& c, const vec<T, N>& a, const vec<T, N>& b, shuffle_mode m) {
  c.issue(slot::vec);
  vec<T, N> r;
  const vec<T, N>& x = c.faulty(fault::shuffle_order) && (m == shuffle_mode::zip_lo || m == shuffle_mode::zip_hi) ? b : a;
  const vec<T, N>& y = &x == &a ? b : a;
  switch (m) {
    case shuffle_mode::filter_even:  // even elements of a, then of b
      for (int i = 0; i < N / 2; ++i) r.v[i] = a.v[2 * i], r.v[N / 2 + i] = b.v[2 * i];
      break;
    case shuffle_mode::filter_odd:
      for (int i = 0; i < N / 2; ++i) r.v[i] = a.v[2 * i + 1], r.v[N / 2 + i] = b.v[2 * i + 1];
      break;
    case shuffle_mode::zip_lo:  // a0 b0 a1 b1 ... of the lower halves
      for (int i = 0; i < N / 2; ++i) r.v[2 * i] = x.v[i], r.v[2 * i + 1] = y.v[i];
      break;
    case shuffle_mode::zip_hi:
      for (int i = 0; i < N / 2; ++i) r.v[2 * i] = x.v[N / 2 + i], r.v[2 * i + 1] = y.v[N / 2 + i];
      break;
    case shuffle_mode::unzip_lo:  // even elements of the pair (a, b)
      for (int i = 0; i < N; ++i) r.v[i] = (2 * i < N ? a.v[2 * i] : b.v[2 * i - N]);
      break;
    case shuffle_mode::unzip_hi:
      for (int i = 0; i < N; ++i) r.v[i] = (2 * i + 1 < N ? a.v[2 * i + 1] : b.v[2 * i + 1 - N]);
      break;
  }
  return r;
}

// ---------------------------------------------------------------------------------- accumulators
// UPS: vector -> accumulator, value << shift (sign- or zero-extended)
template <acc_kind A, class T, int N, class P>
accum<A, N> ups(core<P>& c, const vec<T, N>& a, int shift) {
  static_assert(A != acc_kind::accfloat, "aie::ups: integer accumulators");
  c.issue(slot::vec);
  if (c.faulty(fault::ups_shift) && shift > 0) --shift;
  accum<A, N> r;
  for (int i = 0; i < N; ++i) {
    const int64_t x = int64_t(a.v[i]) * (int64_t(1) << shift);
    r.v[i] = A == acc_kind::acc32 ? detail::wrap32(x) : x;
  }
  return r;
}
// load with upshift: the load port widens on the way (no vector-slot issue)
template <acc_kind A, class T, int N, class P>
accum<A, N> load_ups(core<P>& c, uint32_t off, int shift) {
  const vec<T, N> v = load<T, N>(c, off);
  accum<A, N> r;
  if (c.faulty(fault::ups_shift) && shift > 0) --shift;
  for (int i = 0; i < N; ++i) {
    const int64_t x = int64_t(v.v[i]) * (int64_t(1) << shift);
    r.v[i] = A == acc_kind::acc32 ? detail::wrap32(x) : x;
  }
  return r;
}
// SRS: accumulator -> vector of T: lane >> shift, rounded by the core's rounding mode and
// saturated (or truncated) to T's width by its saturation mode
namespace detail {
template <class T, acc_kind A, int N, class P>
vec<T, N> srs_lanes(const core<P>& c, const accum<A, N>& a, int shift) {
  static_assert(A != acc_kind::accfloat && elem<T>::bits >= 8, "aie::srs: integer accumulator to 8/16/32-bit lanes");
  vec<T, N> r;
  constexpr int bits = elem<T>::bits;
  for (int i = 0; i < N; ++i) {
    const int64_t x = shift_round(int64_t(a.v[i]), shift, c.rnd, c.faulty(fault::srs_rounding));
    int64_t y = saturate_to(x, bits, c.sat, c.faulty(fault::srs_saturation));
    if (!is_signed_elem<typename elem<T>::type> && c.sat != saturation::none) y = y < 0 ? 0 : y;
    r.v[i] = typename elem<T>::type(y);
  }
  return r;
}
}  // namespace detail
template <class T, acc_kind A, int N, class P>
vec<T, N> srs(core<P>& c, const accum<A, N>& a, int shift) {
  c.issue(slot::vec);
  return detail::srs_lanes<T>(c, a, shift);
}
// store with SRS: the shift-round-saturate rides the store port (no vector-slot issue)
template <class T, acc_kind A, int N, class P>
void store_srs(core<P>& c, uint32_t off, const accum<A, N>& a, int shift) {
  store(c, off, detail::srs_lanes<T>(c, a, shift));
}
// integer accumulator lane-wise add
template <acc_kind A, int N, class P>
accum<A, N> acc_add(core<P>& c, const accum<A, N>& a, const accum<A, N>& b) {
  c.issue(slot::vec);
  accum<A, N> r;
  for (int i = 0; i < N; ++i) {
    if constexpr (A == acc_kind::accfloat)
      r.v[i] = a.v[i] + b.v[i];
    else
      r.v[i] = A == acc_kind::acc32 ? detail::wrap32(a.v[i] + b.v[i]) : a.v[i] + b.v[i];
  }
  if constexpr (A == acc_kind::accfloat)
    if (c.faulty(fault::float_lane)) r.v[0] = r.v[0] * (1.f + 0x1p-10f) + 0x1p-60f;
  return r;
}

// ---------------------------------------------------------------------------------- floating point
// bf16 conversion: float lanes -> bf16, round to nearest even
template <class P>
uint16_t to_bf16_scalar(core<P>& c, float f) {
  if (c.faulty(fault::bf16_round)) return uint16_t((detail::f32_bits(f) >> 16) & 0xFFF0u);
  return f32_to_bf16(f);
}
template <int N, class P>
vec<bf16, N> to_bf16(core<P>& c, const accum<acc_kind::accfloat, N>& a) {
  c.issue(slot::vec);
  vec<bf16, N> r;
  for (int i = 0; i < N; ++i) r.v[i] = to_bf16_scalar(c, a.v[i]);
  return r;
}
template <int N, class P>
accum<acc_kind::accfloat, N> from_bf16(core<P>& c, const vec<bf16, N>& a) {
  c.issue(slot::vec);
  accum<acc_kind::accfloat, N> r;
  for (int i = 0; i < N; ++i) r.v[i] = bf16_to_f32(a.v[i]);
  return r;
}
// int32 accumulator lanes -> fp32 (native on aie2: UG1529's conversion table)
template <int N, class P>
accum<acc_kind::accfloat, N> to_float(core<P>& c, const accum<acc_kind::acc32, N>& a) {
  c.issue(slot::vec);
  accum<acc_kind::accfloat, N> r;
  for (int i = 0; i < N; ++i) r.v[i] = float(int32_t(a.v[i]));
  if (c.faulty(fault::convert)) r.v[0] += 1.f;
  return r;
}
// fp32 -> int32 with floor (native, UG1529: aie::rounding_mode::floor), saturated to int32's
// range; NaN gives the most negative value
template <int N, class P>
vec<int32_t, N> float_to_int_floor(core<P>& c, const accum<acc_kind::accfloat, N>& a) {
  c.issue(slot::vec);
  vec<int32_t, N> r;
  for (int i = 0; i < N; ++i) {
    const float f = a.v[i];
    if (!(f == f) || f < -2147483648.f) {
      r.v[i] = int32_t(-2147483647 - 1);
    } else if (f >= 2147483648.f) {
      r.v[i] = 2147483647;
    } else {
      int64_t q = int64_t(f);  // toward zero, exact in range
      if (float(q) > f) --q;
      r.v[i] = int32_t(q);
    }
  }
  if (c.faulty(fault::convert)) r.v[0] = int32_t(uint32_t(r.v[0]) + 1u);
  return r;
}
// fp32 element-wise add (native on the accumulators) and max
template <int N, class P>
accum<acc_kind::accfloat, N> fadd(core<P>& c, const accum<acc_kind::accfloat, N>& a, const accum<acc_kind::accfloat, N>& b) {
  return acc_add(c, a, b);
}
template <int N, class P>
accum<acc_kind::accfloat, N> fmax(core<P>& c, const accum<acc_kind::accfloat, N>& a, const accum<acc_kind::accfloat, N>& b) {
  c.issue(slot::vec);
  accum<acc_kind::accfloat, N> r;
  for (int i = 0; i < N; ++i) r.v[i] = a.v[i] > b.v[i] ? a.v[i] : b.v[i];
  if (c.faulty(fault::float_lane)) r.v[0] = r.v[0] * (1.f + 0x1p-10f) + 0x1p-60f;
  return r;
}
// fp32 x fp32 element-wise multiply: no native fp32 multiplier on aie2 / aie2p; the API
// emulates it with bf16 products (UG1603 "Floating-Point Operations", default accuracy "fast":
// three bf16 partial products). The model returns the fp32 product and charges three issues.
template <int N, class P>
accum<acc_kind::accfloat, N> fmul(core<P>& c, const accum<acc_kind::accfloat, N>& a, const accum<acc_kind::accfloat, N>& b) {
  c.issue(slot::vec, 3);
  accum<acc_kind::accfloat, N> r;
  for (int i = 0; i < N; ++i) r.v[i] = a.v[i] * b.v[i];
  if (c.faulty(fault::float_lane)) r.v[0] = r.v[0] * (1.f + 0x1p-10f) + 0x1p-60f;
  return r;
}
// bf16 x bf16 element-wise multiply into fp32 lanes (native: the product is exact in fp32)
template <int N, class P>
accum<acc_kind::accfloat, N> mul_bf16(core<P>& c, const vec<bf16, N>& a, const vec<bf16, N>& b) {
  c.issue(slot::vec);
  accum<acc_kind::accfloat, N> r;
  for (int i = 0; i < N; ++i) r.v[i] = bf16_to_f32(a.v[i]) * bf16_to_f32(b.v[i]);
  if (c.faulty(fault::float_lane)) r.v[0] = r.v[0] * (1.f + 0x1p-10f) + 0x1p-60f;
  return r;
}
// fp32 reciprocal (emulated: aie::inv; charged 4 vector issues); the model returns 1 / x in fp32
template <int N, class P>
accum<acc_kind::accfloat, N> finv(core<P>& c, const accum<acc_kind::accfloat, N>& a) {
  c.issue(slot::vec, 4);
  accum<acc_kind::accfloat, N> r;
  for (int i = 0; i < N; ++i) r.v[i] = a.v[i] == 0.f ? __builtin_copysignf(__builtin_inff(), a.v[i]) : 1.0f / a.v[i];
  if (c.faulty(fault::float_lane)) r.v[0] = r.v[0] * (1.f + 0x1p-10f) + 0x1p-60f;
  return r;
}
template <acc_kind A, int N, class P>
accum<A, N> acc_broadcast(core<P>& c, typename accum<A, N>::value_type x) {
  c.issue(slot::mv);
  accum<A, N> r;
  for (int i = 0; i < N; ++i) r.v[i] = x;
  if (c.faulty(fault::broadcast_lane)) r.v[N - 1] = 0;
  return r;
}

// ---------------------------------------------------------------------------------- mmul
// The native matrix-multiply shapes (aie_api detail/mmul.hpp via FACTS.md). Any other shape is
// refused at compile time; a kernel that needs one issues several native calls.
template <class P, int M, int K, int N, class TA, class TB>
struct native_mmul : std::false_type {};
// aie2
template <>
struct native_mmul<aie2, 4, 16, 8, int8_t, i4> : std::true_type {};
template <>
struct native_mmul<aie2, 2, 8, 8, int8_t, int8_t> : std::true_type {};
template <>
struct native_mmul<aie2, 4, 8, 8, int8_t, int8_t> : std::true_type {};
template <>
struct native_mmul<aie2, 4, 8, 4, int16_t, int8_t> : std::true_type {};
template <>
struct native_mmul<aie2, 4, 4, 8, int16_t, int8_t> : std::true_type {};
template <>
struct native_mmul<aie2, 2, 8, 8, int16_t, int8_t> : std::true_type {};
template <>
struct native_mmul<aie2, 4, 4, 4, int16_t, int16_t> : std::true_type {};
template <>
struct native_mmul<aie2, 2, 4, 8, int16_t, int16_t> : std::true_type {};
template <>
struct native_mmul<aie2, 4, 2, 8, int16_t, int16_t> : std::true_type {};
template <>
struct native_mmul<aie2, 4, 8, 4, bf16, bf16> : std::true_type {};
// aie2p
template <>
struct native_mmul<aie2p, 4, 16, 16, int8_t, i4> : std::true_type {};
template <>
struct native_mmul<aie2p, 4, 8, 8, int8_t, int8_t> : std::true_type {};
template <>
struct native_mmul<aie2p, 8, 8, 8, int8_t, int8_t> : std::true_type {};
struct bfp16 {};  // block floating point: 8 values share an 8-bit exponent, 8-bit mantissas (aie2p)
template <>
struct native_mmul<aie2p, 8, 8, 8, bfp16, bfp16> : std::true_type {};
template <class P, int M, int K, int N, class TA, class TB>
inline constexpr bool native_mmul_v = native_mmul<P, M, K, N, TA, TB>::value;

template <class TA, class TB>
inline constexpr bool float_mmul = std::is_same_v<TA, bf16> || std::is_same_v<TA, bfp16>;

// C (M x N, row-major in the accumulator lanes) += A (M x K, row-major) * B (K x N, row-major):
// the lane layouts of aie_api's mmul. Integer products are exact; the acc32 lanes wrap. bf16
// products are exact in fp32 and each lane adds them to its accumulator in k order in fp32.
template <int M, int K, int N, class TA, class TB, class P>
void mmul_mac(core<P>& c, accum<float_mmul<TA, TB> ? acc_kind::accfloat : acc_kind::acc32, M * N>& acc,
              const vec<std::conditional_t<std::is_same_v<TA, bfp16>, bf16, TA>, M * K>& a,
              const vec<std::conditional_t<std::is_same_v<TB, bfp16>, bf16, TB>, K * N>& b) {
  static_assert(native_mmul_v<P, M, K, N, TA, TB>,
                "aie::mmul: not a native shape of this profile (issue several native mmuls instead)");
  constexpr bool fl = float_mmul<TA, TB>;
  c.issue_mac(&acc, fl);
  const int kk = c.faulty(fault::mmul_last_k) ? K - 1 : K;
  const bool overwrite = c.faulty(fault::mmul_acc);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      if constexpr (fl) {
        float s = overwrite ? 0.f : acc.v[m * N + n];
        for (int k = 0; k < kk; ++k) s += bf16_to_f32(a.v[m * K + k]) * bf16_to_f32(b.v[k * N + n]);
        acc.v[m * N + n] = s;
      } else {
        int64_t s = overwrite ? 0 : acc.v[m * N + n];
        for (int k = 0; k < kk; ++k) s += int64_t(a.v[m * K + k]) * int64_t(b.v[k * N + n]);
        acc.v[m * N + n] = detail::wrap32(s);
      }
    }
}

// bfp16 (aie2p): a block of 8 bf16 values converted to one shared exponent (the largest of the
// block) and 8-bit signed mantissas, truncated toward zero. The exact conversion rule of the
// hardware is not public here; this one is the model's (docs/targets/aie.md).
template <int N, class P>
vec<bf16, N> to_bfp16(core<P>& c, const vec<bf16, N>& a) {
  static_assert(N % 8 == 0, "aie::to_bfp16: blocks of 8");
  c.issue(slot::vec);
  vec<bf16, N> r;
  for (int b = 0; b < N; b += 8) {
    int emax = 0;
    for (int i = 0; i < 8; ++i) {
      const int e = (a.v[b + i] >> 7) & 0xFF;
      emax = e > emax ? e : emax;
    }
    for (int i = 0; i < 8; ++i) {
      const float f = bf16_to_f32(a.v[b + i]);
      // mantissa unit 2^(emax - 127 - 6): 7 magnitude bits below the block's leading bit
      const float unit = detail::bits_f32(uint32_t(emax > 6 ? emax - 6 : 1) << 23);
      const float q = float(int32_t(f / unit));  // toward zero
      r.v[b + i] = f32_to_bf16(q * unit);
    }
  }
  return r;
}

// a bfp16 tile (8 x 8: 64 mantissas and 8 shared exponents, 72 bytes in the hardware's layout)
// popped from the load pipeline: one load-port issue. The model keeps the tile's values as bf16
// (2 N bytes at `off`, 64-byte aligned).
template <int N, class P>
vec<bf16, N> load_bfp16(core<P>& c, uint32_t off) {
  static_assert(std::is_same_v<P, aie2p> && N == 64, "aie::load_bfp16: aie2p 8 x 8 tiles");
  vec<bf16, N> r;
  if (!access_ok(c, off, 2 * N, 64)) return r;
  c.issue_load(off);
  __builtin_memcpy(r.v, c.dm + off, 2 * N);
  return r;
}

// ---------------------------------------------------------------------------------- parallel_lookup
// A table of `entries` int16 values in the layout parallel_lookup needs (UG1603 "Lookup Tables"):
// two copies (ab, cd) in different banks, each repeating every 128 bits (lut_repeat_bytes):
// entries [8 j, 8 j + 8) stored twice in a row. `make_lut` writes that layout from the values and
// `lut_check` verifies it (a table in any other layout, or copies in one bank, is refused).
struct lut16 {
  uint32_t ab = 0, cd = 0;
  int entries = 0;
};
template <class P>
constexpr std::size_t lut_copy_bytes(int entries) {
  constexpr int per = P::lut_repeat_bytes / 2;
  return std::size_t((entries + per - 1) / per) * P::lut_repeat_bytes * 2;
}
// (re)write the table's values in its replicated layout: the stores of both copies, counted
template <class P>
void lut_fill(core<P>& c, const lut16& t, const int16_t* values) {
  constexpr int per = P::lut_repeat_bytes / 2;  // values per repeat unit
  const int entries = t.entries;
  c.issue(slot::st, 2 * lut_copy_bytes<P>(entries) / (P::store_bits / 8));
  for (int copy = 0; copy < 2; ++copy) {
    uint8_t* base = c.ptr(copy ? t.cd : t.ab);
    for (int j = 0; j * per < entries; ++j)
      for (int rep = 0; rep < 2; ++rep)
        for (int i = 0; i < per; ++i) {
          const int16_t v = j * per + i < entries ? values[j * per + i] : int16_t(0);
          __builtin_memcpy(base + (std::size_t(j) * 2 + std::size_t(rep)) * P::lut_repeat_bytes + 2 * std::size_t(i), &v, 2);
        }
  }
}
// the banks the kernels give a table's two copies: the last two bank groups (aie2: banks 6, 7;
// aie2p: 5, 7, in different pairs), so both copies serve their reads in one cycle
template <class P>
constexpr int lut_bank_ab = P::banks - 1 - P::conflict_banks;
template <class P>
constexpr int lut_bank_cd = P::banks - 1;
template <class P>
lut16 make_lut(core<P>& c, const int16_t* values, int entries, int bank_ab, int bank_cd) {
  lut16 t;
  t.entries = entries;
  t.ab = c.alloc(lut_copy_bytes<P>(entries), 64, bank_ab);
  t.cd = c.alloc(lut_copy_bytes<P>(entries), 64, bank_cd);
  if (values != nullptr) lut_fill(c, t, values);
  return t;
}
template <class P>
bool lut_check(core<P>& c, const lut16& t) {
  constexpr int per = P::lut_repeat_bytes / 2;
  const std::size_t bytes = std::size_t((t.entries + per - 1) / per) * P::lut_repeat_bytes * 2;
  if (t.entries <= 0 || std::size_t(t.ab) + bytes > P::dm_bytes || std::size_t(t.cd) + bytes > P::dm_bytes) return false;
  if (core<P>::bank_of(t.ab) == core<P>::bank_of(t.cd) || core<P>::bank_of(t.ab) != core<P>::bank_of(t.ab + bytes - 1) ||
      core<P>::bank_of(t.cd) != core<P>::bank_of(t.cd + bytes - 1))
    return false;
  const uint8_t* a = c.ptr(t.ab);
  const uint8_t* b = c.ptr(t.cd);
  for (std::size_t u = 0; u < bytes; u += 2 * std::size_t(P::lut_repeat_bytes))
    for (int i = 0; i < P::lut_repeat_bytes; ++i) {
      const uint8_t v = a[u + std::size_t(i)];
      if (a[u + std::size_t(P::lut_repeat_bytes) + std::size_t(i)] != v || b[u + std::size_t(i)] != v ||
          b[u + std::size_t(P::lut_repeat_bytes) + std::size_t(i)] != v)
        return false;
    }
  return true;
}
// r[i] = table[(idx[i] >> step_bits) + bias], out-of-range indices saturated to the table's ends.
// Each instruction reads lut_accesses entries and takes both load ports (one cycle).
template <class T, int N, class P>
vec<int16_t, N> parallel_lookup(core<P>& c, const lut16& t, const vec<T, N>& idx, int step_bits = 0, int bias = 0) {
  static_assert(elem<T>::bits == 8 || elem<T>::bits == 16, "aie::parallel_lookup: 8- or 16-bit indices");
  vec<int16_t, N> r;
  if (!lut_check(c, t)) {
    c.fail(status::bad_table);
    return r;
  }
  constexpr int per = P::lut_repeat_bytes / 2;
  for (int i = 0; i < N; i += P::lut_accesses) {  // both ports; the 4 reads hit the two copies' banks
    c.issue(slot::ld, 2);
    c.bank_access(t.ab);
    c.bank_access(t.cd);
  }
  c.tr.cur().lookups += uint64_t(N);
  for (int i = 0; i < N; ++i) {
    int j = (int(idx.v[i]) >> step_bits) + bias;
    if (c.faulty(fault::lookup_index)) ++j;
    j = j < 0 ? 0 : (j >= t.entries ? t.entries - 1 : j);
    // lanes alternate between the copies and the two 128-bit repetitions, as the 4 reads do
    const uint8_t* base = c.ptr((i / 2) % 2 ? t.cd : t.ab);
    const std::size_t off = (std::size_t(j / per) * 2 + std::size_t(i % 2)) * P::lut_repeat_bytes + 2 * std::size_t(j % per);
    int16_t v;
    __builtin_memcpy(&v, base + off, 2);
    r.v[i] = v;
  }
  return r;
}

}  // namespace lutkit::aie
