# tests/e2e/mpi.cmake: the reference executor's ranks as processes (issue 14). test_mpi runs under Open
# MPI's mpirun (and runs test_comm_mpi, built in tests/unit/ref/comm_mpi.cmake); test_slurm starts a
# one-node Slurm (munged, slurmctld, slurmd from Debian's packages) and runs srun and sbatch. Both SKIP
# only where .ci/setup did not install the packages.
ddp_sh_test(test_mpi SCRIPT test_mpi.sh LABELS cpu)
ddp_sh_test(test_slurm SCRIPT test_slurm.sh LABELS cpu)
set_property(TEST test_mpi test_slurm APPEND PROPERTY ENVIRONMENT
  "ST_COMPARE=$<TARGET_FILE:st_compare>;TEST_COMM_MPI=$<TARGET_FILE:test_comm_mpi>")
set_tests_properties(test_mpi PROPERTIES TIMEOUT 600)
set_tests_properties(test_slurm PROPERTIES TIMEOUT 600 RUN_SERIAL TRUE)
# SEND/RECV between processes (issue 13): test_p2p_mpi is built in tests/unit/ref/p2p.cmake.
ddp_sh_test(test_mpi_p2p SCRIPT test_mpi_p2p.sh LABELS cpu)
set_property(TEST test_mpi_p2p APPEND PROPERTY ENVIRONMENT "TEST_P2P_MPI=$<TARGET_FILE:test_p2p_mpi>")
set_tests_properties(test_mpi_p2p PROPERTIES TIMEOUT 300)
