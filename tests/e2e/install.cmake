# tests/e2e/install.cmake: `cmake --install` and what the installed tools find without a source tree
# (test_install.sh), the schedule library's helper modules in schedules/lib/ (test_schedule_lib.sh), and the
# docs against the code (test_docs.sh).
ddp_sh_test(test_install SCRIPT test_install.sh LABELS cpu)
set_property(TEST test_install APPEND PROPERTY ENVIRONMENT "CMAKE=${CMAKE_COMMAND};DDP_BUILD_DIR=${CMAKE_BINARY_DIR}")
set_tests_properties(test_install PROPERTIES TIMEOUT 300)
ddp_sh_test(test_schedule_lib SCRIPT test_schedule_lib.sh LABELS cpu)
ddp_sh_test(test_docs SCRIPT test_docs.sh LABELS cpu)
