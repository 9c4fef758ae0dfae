# tests/e2e/explain_compare.cmake: the prediction stored in the plan and the run line, and
# `ddpc explain --compare` against reference-executor and hand-written metrics (test_explain_compare.sh).
ddp_sh_test(test_explain_compare SCRIPT test_explain_compare.sh LABELS cpu)
