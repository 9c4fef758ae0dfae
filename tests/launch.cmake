# tests/launch.cmake: rank identity from the launchers' environments, Slurm node lists, `--nproc` local
# launch and supervision (test_launch), and the NCCL-id rendezvous over TCP (test_rendezvous). The launch
# sources are compiled in directly, so these tests do not wait on the rest of ddpruntime building.
set(DDP_LAUNCH_RUNTIME_DIR ${CMAKE_CURRENT_LIST_DIR}/../runtime)
set(DDP_LAUNCH_SOURCES
  ${DDP_LAUNCH_RUNTIME_DIR}/launch_env.c ${DDP_LAUNCH_RUNTIME_DIR}/launch_nodelist.c
  ${DDP_LAUNCH_RUNTIME_DIR}/launch_fork.c ${DDP_LAUNCH_RUNTIME_DIR}/rendezvous.c)

foreach(t launch rendezvous)
  ddp_c_test(test_${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_${t}.c ${DDP_LAUNCH_SOURCES}
    LIBS Threads::Threads LABELS cpu)
  target_include_directories(test_${t} PRIVATE ${DDP_LAUNCH_RUNTIME_DIR})
  set_tests_properties(test_${t} PROPERTIES TIMEOUT 90)
endforeach()
