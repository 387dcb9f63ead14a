# The layout rules must fail on a violation of each of them (a check that cannot fail checks
# nothing). Each case copies include/lutkit, plants one violation and expects layout_rules.cmake
# to fail with that rule's message naming the planted file; the unchanged copy must pass. Rule 5
# is planted four ways: an edge its table does not allow, a folder missing from the table, a
# cycle added to the table itself (in a copy of the script), and the document's copy of the table
# disagreeing with the script's.
# Usage: cmake -DROOT=<include/lutkit> -DDOC=<docs/architecture.md> -DRULES=<layout_rules.cmake>
#              -DWORK=<scratch dir> -P layout_rules_planted.cmake
cmake_policy(SET CMP0057 NEW)  # if(... IN_LIST ...)
foreach(v ROOT DOC RULES WORK)
  if(NOT ${v})
    message(FATAL_ERROR "layout_rules_planted: pass -D${v}=...")
  endif()
endforeach()

# run the rules on root (further -D arguments after want); expect: PASS, or the text the
# failure's output must contain. A case that does not go as expected is recorded in the global
# property planted_failures.
function(expect name root rules want)
  execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${root} ${ARGN} -P ${rules} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  set(out "${out}${err}")
  string(REGEX REPLACE "[ \t\r\n]+" " " flat "${out}")  # (CMake wraps long messages)
  set(ok FALSE)
  if(want STREQUAL "PASS")
    if(rc EQUAL 0)
      set(ok TRUE)
    endif()
  else()
    string(FIND "${flat}" "${want}" at)
    if(NOT rc EQUAL 0 AND at GREATER -1)
      set(ok TRUE)
    endif()
  endif()
  if(ok)
    message(STATUS "${name}: as expected (${want})")
  else()
    message(SEND_ERROR "${name}: expected ${want}, got exit code ${rc}:\n${out}")
    set_property(GLOBAL APPEND PROPERTY planted_failures ${name})
  endif()
endfunction()

# a fresh copy of the tree in WORK/<name>, text appended to its file (mode APPEND: the file must
# exist, so the plant lands where the case says; NEW: a new file; NONE: no plant), the rules
# expected to say want
function(plant_in_tree name mode file text want)
  file(REMOVE_RECURSE ${WORK}/${name})
  file(MAKE_DIRECTORY ${WORK}/${name})
  file(COPY ${ROOT}/ DESTINATION ${WORK}/${name})
  set(path ${WORK}/${name}/${file})
  if(mode STREQUAL "APPEND" AND NOT EXISTS ${path})
    message(FATAL_ERROR "layout_rules_planted: ${name}: ${file} does not exist in the tree; update the case")
  endif()
  if(NOT mode STREQUAL "NONE")
    file(APPEND ${path} "\n${text}\n")
  endif()
  expect(${name} ${WORK}/${name} ${RULES} "${want}")
endfunction()

# out: a copy of the file src with `from` replaced by `to` (which must change it)
function(planted_copy src from to out)
  file(READ ${src} text)
  string(REPLACE "${from}" "${to}" planted "${text}")
  if(planted STREQUAL text)
    message(FATAL_ERROR "layout_rules_planted: '${from}' is not in ${src}; update the case")
  endif()
  file(WRITE ${out} "${planted}")
endfunction()

plant_in_tree(clean NONE "" "" PASS)
plant_in_tree(rule1 APPEND targets/sme/cpu.hpp "#include \"../host/features.hpp\"" "rule 1: targets/sme/cpu.hpp")
plant_in_tree(rule2 APPEND gemm/geometry.hpp "#include \"../targets/host/features.hpp\"" "rule 2: gemm/geometry.hpp")
plant_in_tree(rule3 APPEND quant/quant.hpp "#include \"../gemv/tables.hpp\"" "rule 3: quant/quant.hpp")
plant_in_tree(rule4 APPEND gemm/dequant_gemm.hpp "#if defined(LUTKIT_HAVE_AVX512)\n#endif"
              "rule 4: gemm/dequant_gemm.hpp")
# rule 5: gemm/ including decode/ (decode -> gemm is the allowed direction); a folder with no row
plant_in_tree(rule5_edge APPEND gemm/geometry.hpp "#include \"../decode/decode_gemv.hpp\"" "rule 5: gemm/geometry.hpp")
plant_in_tree(rule5_folder NEW runner/runner.hpp "#pragma once\n#include \"../core/error.hpp\"" "rule 5: runner/runner.hpp")
# rule 5: the declared table with a cycle (gemm -> decode beside decode -> gemm), on the clean tree
planted_copy(${RULES} "\"gemm: core quant\"" "\"gemm: core quant decode\"" ${WORK}/layout_rules_cyclic.cmake)
expect(rule5_cycle ${WORK}/clean ${WORK}/layout_rules_cyclic.cmake "rule 5: family_edges has a cycle")
# rule 5: the document's table letting gemv/ include gemm/, which the script's does not; the
# document as it is passes (the clean case)
expect(clean_doc ${WORK}/clean ${RULES} PASS -DDOC=${DOC})
planted_copy(${DOC} "| `gemv/` | `core/`, `quant/` |" "| `gemv/` | `core/`, `quant/`, `gemm/` |"
             ${WORK}/architecture_planted.md)
expect(rule5_doc ${WORK}/clean ${RULES} "rule 5: ${WORK}/architecture_planted.md lets gemv/"
       -DDOC=${WORK}/architecture_planted.md)

get_property(failed GLOBAL PROPERTY planted_failures)
if(failed)
  message(FATAL_ERROR "layout rules: planted case(s) not as expected: ${failed}")
endif()
