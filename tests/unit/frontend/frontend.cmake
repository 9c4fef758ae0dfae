# tests/unit/frontend/frontend.cmake: the Lua front end (sandbox, constructors, validation, --set, bucket
# policies) on every shipped schedule and on the bad schedules in tests/fixtures/schedules_bad/.
ddp_c_test(test_frontend SOURCES test_frontend.c schedule_load.c LIBS ddpcompiler LABELS cpu)
target_include_directories(test_frontend PRIVATE ${CMAKE_SOURCE_DIR}/compiler/frontend)
include(${CMAKE_CURRENT_LIST_DIR}/fsdp.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/pipeline.cmake)
