# Cross-build for aarch64 Linux: clang-19 against Debian's multiarch :arm64 libraries (libhwy-dev:arm64,
# libstdc++-12-dev:arm64; scripts/deps.sh arm installs them), executed by qemu-aarch64.
#   cmake -S . -B build/aarch64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux.cmake
# ctest runs the suites through CMAKE_CROSSCOMPILING_EMULATOR: -cpu max (NEON, SVE, SVE2, SME; the SVE
# vector length is LUTKIT_SVE_BYTES). Highway 1.0.3 dispatches to NEON on aarch64; the SME suite
# picks its streaming vector lengths itself (tests/CMakeLists.txt).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER clang-19)
set(CMAKE_CXX_COMPILER clang++-19)
set(CMAKE_C_COMPILER_TARGET aarch64-linux-gnu)
set(CMAKE_CXX_COMPILER_TARGET aarch64-linux-gnu)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-fuse-ld=lld")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-fuse-ld=lld")
# multiarch: headers in /usr/include (shared) and /usr/include/aarch64-linux-gnu, libraries in
# /usr/lib/aarch64-linux-gnu; never pick up the host's x86-64 libraries
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH /usr/lib/aarch64-linux-gnu /usr)
set(LUTKIT_SVE_BYTES 32 CACHE STRING "SVE vector length (bytes) qemu gives the suites")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-cpu;max,sve-default-vector-length=${LUTKIT_SVE_BYTES})
