// lutkit — opens an x86 intrinsics region of a targets/cpu header: <immintrin.h>, and the
// compiler's warnings about its own headers silenced until intrinsics_end.hpp. GCC 12 flags its
// _mm512_undefined_* helpers (used by the casts and inserts) as uninitialized.
// Included, with intrinsics_end.hpp, once per region: no include guard on purpose.
#include <immintrin.h>
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"
