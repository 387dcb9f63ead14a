# lutkit's dependencies, all from Debian packages (scripts/deps.sh installs them):
#   libhwy-dev (Highway 1.0.3), libxsimd-dev (8.1), libboost1.81-dev (PFR), catch2 (v2),
#   libbenchmark-dev.
# The source tree includes this file, and so does the installed package config
# (lutkitConfig.cmake): the exported lutkit targets name the lutkit_deps:: targets it defines
# and Threads::Threads.
# Safe to include more than once.
find_package(Threads REQUIRED)

if(NOT TARGET lutkit_deps::hwy)
  find_path(LUTKIT_HWY_INCLUDE hwy/highway.h REQUIRED)
  find_library(LUTKIT_HWY_LIB hwy REQUIRED)
  add_library(lutkit_deps::hwy INTERFACE IMPORTED)
  set_target_properties(lutkit_deps::hwy PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${LUTKIT_HWY_INCLUDE}"
    INTERFACE_LINK_LIBRARIES "${LUTKIT_HWY_LIB}")
endif()

if(NOT TARGET lutkit_deps::boost)
  find_path(LUTKIT_PFR_INCLUDE boost/pfr.hpp REQUIRED)
  add_library(lutkit_deps::boost INTERFACE IMPORTED)
  set_target_properties(lutkit_deps::boost PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${LUTKIT_PFR_INCLUDE}")
endif()

if(NOT TARGET lutkit_deps::xsimd)
  find_path(LUTKIT_XSIMD_INCLUDE xsimd/xsimd.hpp)
  add_library(lutkit_deps::xsimd INTERFACE IMPORTED)
  if(LUTKIT_XSIMD_INCLUDE)
    set_target_properties(lutkit_deps::xsimd PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${LUTKIT_XSIMD_INCLUDE}")
  endif()
endif()
