// lutkit — the choice by error and time (Dolphium's Eq. 2 per operator): for one weight matrix,
// the decode methods valid for its policy (and for a prompt chunk the prefill's activation
// paradigms), each with its output error (relative RMS error against the double reference, the
// unit of docs/llama_formats.md's "Accuracy": measured here on calibration activations, or given
// by the caller) and its modelled time (plan/cost_model.hpp); the plan is the fastest candidate
// within the caller's error budget, and the thread count the model gives it.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "../core/error.hpp"
#include "../decode/decode_gemv.hpp"
#include "../gemm/dequant_gemm.hpp"
#include "../quant/packed_weights.hpp"
#include "../quant/reference.hpp"
#include "cost_model.hpp"
#include "operator.hpp"

namespace lutkit::plan {

// The decode methods decode_gemv runs for policy P and N activation rows on this CPU, in the
// enum's order (decode/decode_gemv.hpp's rules): the LUT-GEMV for formats linear in their bits;
// FusedDQP except on target::sme; the int8 decode for integer levels, and for float codebooks
// with split levels where the CPU has their fused kernel (not on target::sme); bf16 always.
template <class P>
std::vector<decode_method> valid_decode_methods(std::size_t N) {
  using FT = format_traits<typename P::format>;
  constexpr bool sme = std::is_same_v<typename P::target_type, target::sme>;
  constexpr bool host = std::is_same_v<typename P::target_type, target::host>;
  lutkit::detail::require(host || sme, "plan: policy ", P::name(), " has no decode on this machine (target ",
                          P::target_type::desc.name, ")");
  std::vector<decode_method> v;
  if constexpr (FT::lut_gemv_capable) v.push_back(decode_method::lut_gemv);
  if constexpr (!sme) {
    v.push_back(decode_method::fused_dq);
    if constexpr (FT::integer_levels)
      v.push_back(decode_method::int8);
    else if constexpr (lutkit::detail::split_levels<P>())
      if (lutkit::detail::split_int8_decode_available<P>(N, lutkit::detail::dq_kernels_for_policy<P>(dq_backend::best)))
        v.push_back(decode_method::int8);
  }
  v.push_back(decode_method::bf16);
  return v;
}

namespace detail {
// sqrt(sum (y - ref)^2 / sum ref^2) over n outputs
inline double relative_rms(const float* y, const std::vector<double>& ref, std::size_t n) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = double(y[i]) - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  lutkit::detail::require(den > 0, "plan: the reference output is all zero; the error is undefined (use other activations)");
  return std::sqrt(num / den);
}
// the relative RMS error of run(y) (N x M outputs of w on the N x K activations x) against the
// double reference of the blob's own weights, ref::gemv on unpack(w)
template <class P, class Run>
double error_against_reference(const packed_weights<P>& w, const float* x, std::size_t N, Run&& run) {
  const std::vector<double> ref = ref::gemv(unpack(w), x, N);
  std::vector<float> y(N * w.M());
  run(y.data());
  return relative_rms(y.data(), ref, N * w.M());
}
}  // namespace detail

// Relative RMS error of decode_gemv by `m` on the N x K activations x against the double
// reference of the blob's own weights (ref::gemv on unpack(w)): sqrt(sum (y - ref)^2 / sum ref^2).
template <class P>
double measure_decode_error(const packed_weights<P>& w, const float* x, std::size_t N, decode_method m) {
  lutkit::detail::require(x != nullptr && N > 0, "plan: measure_decode_error needs N >= 1 activation rows");
  lutkit::detail::require(m != decode_method::best, "plan: measure a method, not decode_method::best");
  return detail::error_against_reference(w, x, N, [&](float* y) { decode_gemv<P>(w, x, N, w.K(), y, m); });
}

struct candidate {
  decode_method method = decode_method::best;
  double error = 0;       // relative RMS error
  double modelled_s = 0;  // at `threads`
  int threads = 1;
};

// a choice among candidates C: the chosen one, every candidate considered (in its enum's order)
// and the budget
template <class C>
struct choice_plan {
  C chosen;
  std::vector<C> candidates;
  double budget = 0;
};
using decode_plan = choice_plan<candidate>;

namespace detail {
// The fastest of `cands` whose error is within `budget` (error <= budget); equal modelled times go
// to the lower error, then to the earlier choice in its enum's order (deterministic: the list is
// first sorted by a total order, so any order of the same list gives the same plan). No
// candidate within the budget, or none at all, is an error listing them. C: a candidate with
// .error, .modelled_s, .threads; key(c): its choice's enum value; name(c): its choice's name.
template <class C, class Key, class Name>
choice_plan<C> choose_within(std::vector<C> cands, double budget, Key key, Name name) {
  lutkit::detail::require(std::isfinite(budget) && budget >= 0, "plan: the error budget (", budget, ") must be >= 0");
  lutkit::detail::require(!cands.empty(), "plan: no candidates to choose from");
  for (const C& c : cands) {
    lutkit::detail::require(std::isfinite(c.error) && c.error >= 0, "plan: candidate ", name(c), " has error ", c.error,
                            " (must be finite and >= 0)");
    lutkit::detail::require(std::isfinite(c.modelled_s) && c.modelled_s >= 0, "plan: candidate ", name(c),
                            " has modelled time ", c.modelled_s, " s (must be finite and >= 0)");
  }
  std::sort(cands.begin(), cands.end(), [&](const C& a, const C& b) {
    if (key(a) != key(b)) return key(a) < key(b);
    if (a.error != b.error) return a.error < b.error;
    if (a.modelled_s != b.modelled_s) return a.modelled_s < b.modelled_s;
    return a.threads < b.threads;
  });
  const C* best = nullptr;
  for (const C& c : cands) {
    if (!(c.error <= budget)) continue;
    if (!best || c.modelled_s < best->modelled_s || (c.modelled_s == best->modelled_s && c.error < best->error))
      best = &c;
  }
  if (!best) {
    std::string list;
    for (const C& c : cands) list += std::string(list.empty() ? "" : ", ") + name(c) + " " + std::to_string(c.error);
    lutkit::detail::require(false, "plan: no candidate within the error budget ", budget, " (", list, ")");
  }
  choice_plan<C> p;
  p.chosen = *best;
  p.candidates = std::move(cands);
  p.budget = budget;
  return p;
}
// the candidates of `choices`, in their order: C{choice, error(choice), modelled(choice, t), t}
// with t = threads(choice)
template <class C, class Choice, class Err, class Threads, class Time>
std::vector<C> make_candidates(const std::vector<Choice>& choices, Err&& error, Threads&& threads, Time&& modelled) {
  std::vector<C> v;
  for (const Choice& ch : choices) {
    const int t = threads(ch);
    v.push_back(C{ch, error(ch), modelled(ch, t), t});
  }
  return v;
}
}  // namespace detail

// The fastest decode candidate whose error is within `budget` (error <= budget); equal modelled
// times go to the lower error, then to the method earlier in decode_method's order.
// No candidate within the budget, or none at all, is an error listing them.
inline decode_plan choose(std::vector<candidate> cands, double budget) {
  for (const candidate& c : cands)
    lutkit::detail::require(c.method != decode_method::best, "plan: a candidate must name a method, not best");
  return detail::choose_within(
      std::move(cands), budget, [](const candidate& c) { return int(c.method); },
      [](const candidate& c) { return std::string(decode_method_name(c.method)); });
}

// The plan for the blob w at N activation rows: every valid method, its error measured on the
// calibration activations x (N x K, row-major) and its time modelled with `costs` at the thread
// count the model prefers; then choose(). Deterministic for a fixed blob, activations and costs.
// This form models the times for the operator op and measures the errors on `sample`, a blob of
// the same policy and K (e.g. the matrix's first rows: the relative error is a per-row statistic,
// and a whole large matrix is slow to unpack and run in double); the form below takes both from w.
template <class P>
decode_plan plan_decode(const target_costs& costs, const matmul_op& op, const packed_weights<P>& sample,
                        const float* x, std::size_t N, double budget) {
  lutkit::detail::require(sample.K() == op.K, "plan: the error sample has K = ", sample.K(), ", the operator ", op.K);
  return choose(detail::make_candidates<candidate>(
                    valid_decode_methods<P>(N), [&](decode_method m) { return measure_decode_error<P>(sample, x, N, m); },
                    [&](decode_method m) { return choose_threads(costs, op, m); },
                    [&](decode_method m, int t) { return model_decode(costs, op, m, t).total_s; }),
                budget);
}
template <class P>
decode_plan plan_decode(const target_costs& costs, const packed_weights<P>& w, const float* x, std::size_t N,
                        double budget) {
  return plan_decode<P>(costs, describe_matmul<P>(w.M(), w.K(), N), w, x, N, budget);
}

// ---------------------------------------------------------------- prefill
// The activation paradigms dequant_gemm runs for policy P on this CPU, in act_type's order:
// fp32 and bf16 always; int8 (per row) and int8_group (per scale group, default_act's for integer
// levels) where the levels are integers and the CPU's kernel set has the int8 paradigm.
template <class P>
std::vector<act_type> valid_prefill_acts() {
  std::vector<act_type> v{act_type::fp32, act_type::bf16};
  if constexpr (format_traits<typename P::format>::integer_levels)
    if (lutkit::detail::dq_kernels_for_policy<P>(dq_backend::best).int8[0] != nullptr) {
      v.push_back(act_type::int8);
      v.push_back(act_type::int8_group);
    }
  return v;
}

// Relative RMS error of dequant_gemm by paradigm `act` on the N x K activations x against the
// double reference of the blob's own weights (the unit of measure_decode_error).
template <class P>
double measure_prefill_error(const packed_weights<P>& w, const float* x, std::size_t N, act_type act) {
  lutkit::detail::require(x != nullptr && N > 0, "plan: measure_prefill_error needs N >= 1 activation rows");
  return detail::error_against_reference(w, x, N, [&](float* y) { dequant_gemm<P>(w, x, N, w.K(), y, act); });
}

struct prefill_candidate {
  act_type act = act_type::fp32;
  double error = 0;       // relative RMS error
  double modelled_s = 0;  // at `threads`
  int threads = 1;
};

using prefill_plan = choice_plan<prefill_candidate>;

// The fastest prefill candidate within `budget`; ties to the lower error, then to the paradigm
// earlier in act_type's order. None within the budget is an error listing them.
inline prefill_plan choose_prefill(std::vector<prefill_candidate> cands, double budget) {
  return detail::choose_within(
      std::move(cands), budget, [](const prefill_candidate& c) { return int(c.act); },
      [](const prefill_candidate& c) { return std::string(act_name(c.act)); });
}

// The prefill plan of the operator op (op.N: the prompt chunk's rows): every valid paradigm, its
// error measured on `sample` (a blob of the same policy and K, e.g. the matrix's first rows) with
// the calibration activations x (Nx rows of K), its time modelled with `costs` at the thread
// count the model prefers; then choose_prefill(). Deterministic for a fixed blob, activations
// and costs.
template <class P>
prefill_plan plan_prefill(const target_costs& costs, const matmul_op& op, const packed_weights<P>& sample,
                          const float* x, std::size_t Nx, double budget) {
  lutkit::detail::require(sample.K() == op.K, "plan: the error sample has K = ", sample.K(), ", the operator ", op.K);
  return choose_prefill(detail::make_candidates<prefill_candidate>(
                            valid_prefill_acts<P>(), [&](act_type a) { return measure_prefill_error<P>(sample, x, Nx, a); },
                            [&](act_type a) { return choose_prefill_threads(costs, op, a); },
                            [&](act_type a, int t) { return model_prefill(costs, op, a, t).total_s; }),
                        budget);
}
template <class P>
prefill_plan plan_prefill(const target_costs& costs, const packed_weights<P>& w, const float* x, std::size_t N,
                          double budget) {
  return plan_prefill<P>(costs, describe_matmul<P>(w.M(), w.K(), N), w, x, N, budget);
}

}  // namespace lutkit::plan
