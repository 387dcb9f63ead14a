// lutkit — compiler attributes shared by the kernel families.
#pragma once
// for functions compiled into each caller's instruction set (e.g. gemm/activations.hpp)
#if defined(__GNUC__) || defined(__clang__)
#define LUTKIT_ALWAYS_INLINE __attribute__((always_inline))
#else
#define LUTKIT_ALWAYS_INLINE
#endif
// The AVX-512 instance of prepare_rows relies on the loop vectorizer, which GCC 12 runs at -O2
// only with its very-cheap cost model: an engine built at -O2 (RelWithDebInfo) got scalar loops,
// 7.2 ms instead of 1.0 ms for N = 128, K = 14336 int8 activations, 15% of that GEMM.
#if defined(__GNUC__) && !defined(__clang__)
#define LUTKIT_VECTORIZE __attribute__((optimize("tree-vectorize")))
#else
#define LUTKIT_VECTORIZE
#endif

// `#pragma GCC unroll n` with n a macro (expanded before the pragma is formed)
#define LUTKIT_PRAGMA_STR_(x) #x
#if defined(__GNUC__) && !defined(__clang__)
#define LUTKIT_PRAGMA_UNROLL(n) _Pragma(LUTKIT_PRAGMA_STR_(GCC unroll n))
#else
#define LUTKIT_PRAGMA_UNROLL(n)
#endif
