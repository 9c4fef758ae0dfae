# tests/frontend.cmake: the schedule front end (compiler/frontend/, schedules/, tests/schedules_bad/).
# Built from the front end's own sources, so it does not wait for the other compiler stages.
file(GLOB DDP_FRONTEND_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/compiler/frontend/*.c)
ddp_c_test(test_frontend SOURCES test_frontend.c ${DDP_FRONTEND_SOURCES}
  LIBS ${LUA_STATIC_LIBRARY} m ${CMAKE_DL_LIBS} LABELS cpu)
target_include_directories(test_frontend PRIVATE ${CMAKE_SOURCE_DIR}/compiler ${CMAKE_SOURCE_DIR}/plan
  ${LUA_INCLUDE_DIR})
