# ctest driver (cmake -P): install the lutkit build tree LUTKIT_BINARY_DIR into WORK/prefix,
# then configure, build and run tests/consumer twice: with find_package(lutkit) against that
# prefix (every variant), and with add_subdirectory(LUTKIT_SOURCE_DIR) (the plain program). Any
# failing step fails the test.
# EXPECT_XSIMD (true where the lutkit build found xsimd on x86-64): the xsimd variant must be
# built and run too.
foreach(v LUTKIT_SOURCE_DIR LUTKIT_BINARY_DIR WORK GENERATOR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run.cmake needs -D${v}=...")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK})
# the AVX3_DL variant is built on every x86-64 machine and run where the CPU has those features
set(RUN_AVX3DL OFF)
if(EXISTS /proc/cpuinfo)
  file(STRINGS /proc/cpuinfo flags REGEX "^flags" LIMIT_COUNT 1)
  set(RUN_AVX3DL ON)
  foreach(f avx512f avx512bw avx512vl avx512dq avx512_vnni avx512vbmi avx512_vbmi2 avx512_vpopcntdq avx512_bitalg
            vaes vpclmulqdq avx_vnni)
    if(NOT flags MATCHES " ${f}( |$)")
      set(RUN_AVX3DL OFF)
    endif()
  endforeach()
endif()
function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer: ${what} failed (${rc})\n${out}\n${err}")
  endif()
  message(STATUS "consumer: ${what}: ok")
  if(what MATCHES "^run")
    message(STATUS "${out}")
  endif()
endfunction()
set(src ${LUTKIT_SOURCE_DIR}/tests/consumer)
step("install" ${CMAKE_COMMAND} --install ${LUTKIT_BINARY_DIR} --prefix ${WORK}/prefix)
foreach(mode installed subdir)
  if(mode STREQUAL installed)
    set(how -DCMAKE_PREFIX_PATH=${WORK}/prefix)
  else()
    set(how -DLUTKIT_SOURCE_DIR=${LUTKIT_SOURCE_DIR})
  endif()
  # (a Release build at -O1: what the test checks - the package, its targets, the variants' flags
  # against the headers - does not depend on the optimization level, and -O3's four compiles made
  # it the host run's longest test, 90 s on a 2-core Zen 3)
  step("configure (${mode})" ${CMAKE_COMMAND} -S ${src} -B ${WORK}/${mode} -G ${GENERATOR}
       -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" ${how})
  # add_subdirectory: the targets exist (the consumer's configure checks) and the plain program
  # builds and runs; the xsimd and AVX3_DL variants (each a compile of the whole library)
  # are built once, against the installed package
  set(only "")
  if(mode STREQUAL subdir)
    set(only --target lutkit_consumer)
  endif()
  step("build (${mode})" ${CMAKE_COMMAND} --build ${WORK}/${mode} ${only})
  step("run (${mode})" ${WORK}/${mode}/lutkit_consumer)
  if(mode STREQUAL subdir)
    continue()
  endif()
  if(EXPECT_XSIMD)
    step("run xsimd (${mode})" ${WORK}/${mode}/lutkit_consumer_xsimd)
  endif()
  if(EXISTS ${WORK}/${mode}/lutkit_consumer_avx3dl AND RUN_AVX3DL)
    step("run AVX3_DL baseline (${mode})" ${WORK}/${mode}/lutkit_consumer_avx3dl)
  elseif(EXISTS ${WORK}/${mode}/lutkit_consumer_avx3dl)
    message(STATUS "consumer: AVX3_DL baseline (${mode}): built; not run (the CPU lacks its features)")
  endif()
endforeach()
