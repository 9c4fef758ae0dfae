# tests/e2e/ckpt_sharded.cmake: checkpoints of plans described by pieces through ddprun (issue 12): piece_plan
# (tests/fixtures/tools/piece_plan.c) rewrites a compiled DDP plan as a sharded plan would describe its state.
add_executable(piece_plan ${CMAKE_SOURCE_DIR}/tests/fixtures/tools/piece_plan.c)
target_link_libraries(piece_plan PRIVATE ddpplan)
ddp_sh_test(test_ckpt_sharded SCRIPT test_ckpt_sharded.sh LABELS cpu)
set_tests_properties(test_ckpt_sharded PROPERTIES TIMEOUT 150)
set_property(TEST test_ckpt_sharded APPEND PROPERTY ENVIRONMENT "PIECE_PLAN=$<TARGET_FILE:piece_plan>")
