# tests/unit/io/fifo.cmake: the input readers refuse FIFOs at once (issue 11).
ddp_c_test(test_fifo_inputs SOURCES test_fifo_inputs.c LIBS ddpruntime LABELS cpu)
