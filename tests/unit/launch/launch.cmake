# tests/unit/launch/launch.cmake: rank identity from the launchers' environments, Slurm node lists, `--nproc`
# local launch and supervision (test_launch), the NCCL-id rendezvous over TCP (test_rendezvous) and its
# defences against clients that are not ranks (test_rendezvous_attack, loopback only).
foreach(t launch rendezvous rendezvous_attack)
  ddp_c_test(test_${t} SOURCES test_${t}.c LIBS ddpruntime LABELS cpu)
  set_tests_properties(test_${t} PROPERTIES TIMEOUT 90)
endforeach()
include(${CMAKE_CURRENT_LIST_DIR}/stop.cmake)
