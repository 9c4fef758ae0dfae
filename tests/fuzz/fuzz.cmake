# tests/fuzz/fuzz.cmake: the fuzz targets (docs/FUZZING.md). Every build gets, per target, a replay
# executable fuzz_replay_<t> (the target's LLVMFuzzerTestOneInput with replay_main.c) and the ctest
# fuzz_regress_<t> (label cpu) that replays tests/fuzz/regress/<t>/, so every bug the fuzzer found stays
# fixed (regress/<t>/open/: found, not fixed yet, replayed by fuzz_open_<t>, label fuzz-open; see
# regress/README.md); fuzz_seeds (label cpu) builds the seed corpus from the shipped schedules and replays it through
# every target. With -DDDP_FUZZ=ON (preset "fuzz", clang) it also builds the libFuzzer executables
# fuzz_<t> (target "fuzz"); tests/fuzz/run.sh runs them.
set(DDP_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})
set(DDP_FUZZ_TARGETS plan schedule safetensors tokens profile)
set(DDP_FUZZ_LIBS_plan ddpruntime ddpcompiler)
set(DDP_FUZZ_LIBS_schedule ddpcompiler)
set(DDP_FUZZ_LIBS_safetensors ddpruntime)
set(DDP_FUZZ_LIBS_tokens ddpruntime)
set(DDP_FUZZ_LIBS_profile ddpcompiler)

add_library(ddpfuzzutil STATIC ${DDP_FUZZ_DIR}/fuzz_util.c ${DDP_FUZZ_DIR}/plan_fixup.c)
target_include_directories(ddpfuzzutil PUBLIC ${DDP_FUZZ_DIR})
target_link_libraries(ddpfuzzutil PUBLIC ZLIB::ZLIB)

add_executable(strip_plan ${DDP_FUZZ_DIR}/strip_plan.c)
target_link_libraries(strip_plan PRIVATE ddpplan)

set(DDP_FUZZ_REPLAYS)
foreach(t ${DDP_FUZZ_TARGETS})
  add_executable(fuzz_replay_${t} ${DDP_FUZZ_DIR}/fuzz_${t}.c ${DDP_FUZZ_DIR}/replay_main.c)
  target_link_libraries(fuzz_replay_${t} PRIVATE ddpfuzzutil ${DDP_FUZZ_LIBS_${t}})
  add_test(NAME fuzz_regress_${t} COMMAND fuzz_replay_${t} ${DDP_FUZZ_DIR}/regress/${t})
  set_tests_properties(fuzz_regress_${t} PROPERTIES LABELS cpu
    ENVIRONMENT "DDPC_CACHE_DIR=${CMAKE_BINARY_DIR}/kernel-cache;TMPDIR=${CMAKE_BINARY_DIR}")
  if(EXISTS ${DDP_FUZZ_DIR}/regress/${t}/open)
    add_test(NAME fuzz_open_${t} COMMAND fuzz_replay_${t} ${DDP_FUZZ_DIR}/regress/${t}/open)
    set_tests_properties(fuzz_open_${t} PROPERTIES LABELS fuzz-open
      ENVIRONMENT "DDPC_CACHE_DIR=${CMAKE_BINARY_DIR}/kernel-cache;TMPDIR=${CMAKE_BINARY_DIR}")
  endif()
  list(APPEND DDP_FUZZ_REPLAYS $<TARGET_FILE:fuzz_replay_${t}>)
  set(defs DDP_FUZZ_SCHEDULE_DIR="${CMAKE_SOURCE_DIR}/schedules")
  target_compile_definitions(fuzz_replay_${t} PRIVATE ${defs} DDP_FUZZ_REPLAY=1)
  if(DDP_FUZZ)
    set(extra)
    if(t STREQUAL "plan")
      set(extra ${DDP_FUZZ_DIR}/fuzz_plan_mutator.c)
    endif()
    add_executable(fuzz_${t} ${DDP_FUZZ_DIR}/fuzz_${t}.c ${extra})
    target_link_libraries(fuzz_${t} PRIVATE ddpfuzzutil ${DDP_FUZZ_LIBS_${t}})
    target_link_options(fuzz_${t} PRIVATE -fsanitize=fuzzer)
    target_compile_definitions(fuzz_${t} PRIVATE ${defs})
    list(APPEND DDP_FUZZ_EXES fuzz_${t})
  endif()
endforeach()
if(DDP_FUZZ)
  add_custom_target(fuzz DEPENDS ${DDP_FUZZ_EXES})
endif()

# The seed corpus (make_corpus.sh: plans compiled by ddpc and stripped of CUBIN, the shipped schedules, a
# checkpoint written by ddprun, token files), replayed through every target.
add_test(NAME fuzz_seeds COMMAND bash ${DDP_FUZZ_DIR}/seeds_test.sh ${CMAKE_BINARY_DIR}/fuzz-corpus ${DDP_FUZZ_REPLAYS})
set_tests_properties(fuzz_seeds PROPERTIES LABELS cpu
  ENVIRONMENT "DDPC=$<TARGET_FILE:ddpc>;DDPRUN=$<TARGET_FILE:ddprun>;STRIP_PLAN=$<TARGET_FILE:strip_plan>;DDP_SOURCE_DIR=${CMAKE_SOURCE_DIR};DDPC_CACHE_DIR=${CMAKE_BINARY_DIR}/kernel-cache;TMPDIR=${CMAKE_BINARY_DIR}")

# The custom mutator's fix-up and section relay (plan_fixup.c) on the synthetic fixture plan.
ddp_c_test(test_plan_fixup SOURCES test_plan_fixup.c ../fixtures/plan_fixture.c LIBS ddpfuzzutil ddpplan LABELS cpu)
# Unit regressions of the bugs the fuzzer found and this branch fixed (test_fuzz_finds.c lists them).
ddp_c_test(test_fuzz_finds SOURCES test_fuzz_finds.c LIBS ddpruntime LABELS cpu)
