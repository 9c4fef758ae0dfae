# tests/e2e/explain_models.cmake: `ddpc explain buckets` and `ddpc explain mesh` (test_explain_models.sh).
ddp_sh_test(test_explain_models SCRIPT test_explain_models.sh LABELS cpu)
