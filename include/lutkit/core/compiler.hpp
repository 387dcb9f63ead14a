// lutkit — compiler attributes shared by the kernel families.
#pragma once
// for functions compiled into each caller's instruction set (e.g. gemm/activations.hpp)
#if defined(__GNUC__) || defined(__clang__)
#define LUTKIT_ALWAYS_INLINE __attribute__((always_inline))
#else
#define LUTKIT_ALWAYS_INLINE
#endif
// The AVX-512 instance of prepare_rows relies on the loop vectorizer, which GCC 12 runs at -O2
// only with its very-cheap cost model: without this, an -O2 engine gets scalar loops
// (docs/design_measurements.md, "Vectorizer at -O2").
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
