/* tests/unit/explain/profile_fixture.h: the smallest complete profile file the explain tests parse, as a
 * printf format whose one %s is where a test puts extra top-level fields (each ending in ", "). */
#ifndef DDP_TEST_PROFILE_FIXTURE_H
#define DDP_TEST_PROFILE_FIXTURE_H
#define PROFILE_JSON_WITH(extra_fields_format)                                                                  \
  "{\"name\": \"x\", \"launch_us\": 1, \"hbm_gbps\": 1, \"gemm_tflops_16\": 1, "                               \
  "\"gemm_tflops_32\": 1, \"gemm_small_dim\": 1, \"gemm_small_scale\": 1, \"attention_tflops\": 1, "           \
  extra_fields_format "\"collectives\": {\"all_reduce\": {\"alpha_us\": 1, \"busbw_gbps\": 1}, "                \
  "\"reduce_scatter\": {\"alpha_us\": 1, \"busbw_gbps\": 1}, \"all_gather\": {\"alpha_us\": 1, "               \
  "\"busbw_gbps\": 1}, \"broadcast\": {\"alpha_us\": 1, \"busbw_gbps\": 1}, \"send_recv\": "                    \
  "{\"alpha_us\": 1, \"busbw_gbps\": 1}}}"
#endif
