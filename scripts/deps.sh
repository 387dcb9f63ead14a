#!/usr/bin/env bash
# Installs lutkit's build dependencies from Debian packages when any is missing.
#   scripts/deps.sh          the host build: compiler, CMake, Highway, xsimd, Boost.PFR, Catch2, Benchmark;
#                            matplotlib for the report (scripts/report.py) and its test
#   scripts/deps.sh fuzz     and clang-19 with its runtimes (libFuzzer, sanitizers) for scripts/fuzz.sh
#   scripts/deps.sh arm      and the aarch64 cross build: clang-19, lld-19, qemu-user, the aarch64 GCC
#                            runtime, and Debian multiarch :arm64 builds of Highway and libstdc++
#   scripts/deps.sh hexagon  and the Hexagon cross build: clang-19, lld-19, libc++ headers, qemu-user
set -euo pipefail
pkgs=(cmake ninja-build g++ libhwy-dev libxsimd-dev libboost1.81-dev catch2 libbenchmark-dev python3-matplotlib)
for extra in "$@"; do
  case "$extra" in
    fuzz) pkgs+=(clang-19 libclang-rt-19-dev) ;;
    arm)
      pkgs+=(clang-19 lld-19 qemu-user g++-aarch64-linux-gnu libhwy-dev:arm64 libstdc++-12-dev:arm64 libc6-dev:arm64)
      if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        SUDO=""
        [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        $SUDO dpkg --add-architecture arm64
      fi
      ;;
    hexagon) pkgs+=(clang-19 lld-19 libc++-19-dev qemu-user python3) ;;
    *) echo "deps.sh: unknown group '$extra'" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[deps] installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
