# tests/unit/launch/launch.cmake: rank identity from the launchers' environments, Slurm node lists, `--nproc`
# local launch and supervision (test_launch), and the NCCL-id rendezvous over TCP (test_rendezvous).
foreach(t launch rendezvous)
  ddp_c_test(test_${t} SOURCES test_${t}.c LIBS ddpruntime LABELS cpu)
  set_tests_properties(test_${t} PROPERTIES TIMEOUT 90)
endforeach()
