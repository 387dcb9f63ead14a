# Cross-build of the HVX suite for Hexagon v67 with 128-byte HVX: clang-19 for hexagon-unknown-none-elf,
# freestanding (no libc: libc++ headers only, the test program brings its own _start and system
# calls), linked by lld, executed by qemu-hexagon (Debian's qemu-user; integer HVX, no HVX float).
#   cmake -S . -B build/hvx -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/hexagon-v67-hvx128.cmake \
#         -DLUTKIT_HVX_VECTORS=<file written by the host build's lutkit_make_hvx_vectors>
# Only tests/hvx is built in this configuration (scripts/test.sh does both steps).
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR hexagon)
set(CMAKE_C_COMPILER clang-19)
set(CMAKE_CXX_COMPILER clang++-19)
set(CMAKE_C_COMPILER_TARGET hexagon-unknown-none-elf)
set(CMAKE_CXX_COMPILER_TARGET hexagon-unknown-none-elf)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(LUTKIT_LIBCXX_INCLUDE /usr/lib/llvm-19/include/c++/v1)
set(CMAKE_CXX_FLAGS_INIT "-mv67 -mhvx -mhvx-length=128b -ffreestanding -fno-exceptions -fno-rtti -nostdinc++ -isystem ${LUTKIT_LIBCXX_INCLUDE} -D_LIBCPP_HAS_NO_THREADS")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-nostdlib -fuse-ld=lld")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-hexagon)
