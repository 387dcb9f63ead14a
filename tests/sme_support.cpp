// The SME ABI support routines a program with lutkit's SME kernels links against (compiler-rt and
// newer libgcc provide them; GCC 12's libgcc, used by these cross builds, does not). Test support
// only: an engine that defines LUTKIT_ENABLE_SME takes them from its toolchain. No ZA state is
// live across a call in these programs, so committing a lazy save has nothing to do.
#include <arm_sme.h>
#include <sys/auxv.h>

#include <cstdint>

namespace {
// read at start-up, outside streaming mode (getauxval is not streaming-compatible)
const bool has_sve_or_sme = (getauxval(AT_HWCAP) & (1UL << 22)) != 0 || (getauxval(AT_HWCAP2) & (1UL << 23)) != 0;
}  // namespace

extern "C" {
void __arm_tpidr2_save(void) __arm_streaming_compatible {}
void __arm_za_disable(void) __arm_streaming_compatible {}
void __arm_tpidr2_restore(void*) __arm_streaming_compatible {}
// VG: the current vector length in 64-bit granules (streaming VL in streaming mode), 0 without SVE/SME
uint64_t __arm_get_current_vg(void) __arm_streaming_compatible {
  if (!has_sve_or_sme) return 0;
  uint64_t vg;
  __asm__ volatile(".arch_extension sve\n\tcntd %0" : "=r"(vg));
  return vg;
}
}
