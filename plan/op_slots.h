/* plan/op_slots.h: the operand slots of every kernel op and every instruction, named once and documented
 * next to their names. The compiler writes them (in.p / in.i / in.f of a ddp_instr), the reference
 * kernels and the executors read them (a->i[...], in->i[...]) and the CUDA templates read them
 * (a.i[...]); the numbers are the plan.bin contract. Plain enums and comments only: the file is also
 * compiled by NVRTC (templates/common.cuh includes it through -I<plan dir>, see compiler/codegen/nvrtc.c).
 *
 * Naming: <OP>_P_<NAME> is a pointer slot (p[], buffer references with their dtype in dt[k]),
 * <OP>_I_<NAME> an integer slot (i[]), <OP>_F_<NAME> a float slot (f[]). <OP> is the kernel op or opcode
 * name; ops that share one layout share one prefix: ATTN_ (ATTN_FWD, ATTN_BWD_DKV, ATTN_BWD_DQ, and the
 * integers of ATTN_BWD_PREP), COLL_ (the collectives), EVENT_ (EVENT_RECORD, EVENT_WAIT).
 *
 * Conventions: matrices are row-major; N is a row (token) count; "act" is the activation dtype; dtypes of
 * the pointer slots come from the instruction (dt[k]), so one op serves f32, bf16 and (reference only) f64.
 * "acc" flags: 0 = overwrite the output, 1 = add into it. Partial tables ([P, D]) split N rows into P
 * contiguous chunks of ceil(N/P) rows; chunk c's row of the table is the sum over its rows (chunks past N
 * are zero rows). Optional pointer operands (null = skipped) are marked "(opt)". Outputs may alias inputs
 * in XENT (dlogits = logits), SWIGLU_BWD, MSE and the elementwise ops (each element is read before it is
 * written). A token or target id outside [0, V) gives a NaN row. The one-line synopsis of each op is in
 * plan/ops.h (DDP_KERNEL_OPS), printed by `ddpc inspect --ops`. */
#ifndef DDP_OP_SLOTS_H
#define DDP_OP_SLOTS_H

/* ---- kernel ops ---- */

/* EMBED_FWD: tokens i32[N], table[V,D], out[N,D] */
enum { EMBED_FWD_P_TOKENS = 0, EMBED_FWD_P_TABLE = 1, EMBED_FWD_P_OUT = 2 };
enum { EMBED_FWD_I_N = 0, EMBED_FWD_I_D = 1, EMBED_FWD_I_V = 2 };

/* EMBED_BWD: tokens i32[N], dout[N,D], dtable[V,D]; deterministic: tokens are accumulated in order;
 * rows never hit are 0 when acc = 0 */
enum { EMBED_BWD_P_TOKENS = 0, EMBED_BWD_P_DOUT = 1, EMBED_BWD_P_DTABLE = 2 };
enum { EMBED_BWD_I_N = 0, EMBED_BWD_I_D = 1, EMBED_BWD_I_V = 2, EMBED_BWD_I_ACC = 3 };

/* RMSNORM_FWD: x[N,D], g[D], y[N,D], rstd f32[N] (opt); y = x * rstd * g, rstd = 1/sqrt(mean(x^2)+eps),
 * statistics in f32 */
enum { RMSNORM_FWD_P_X = 0, RMSNORM_FWD_P_G = 1, RMSNORM_FWD_P_Y = 2, RMSNORM_FWD_P_RSTD = 3 };
enum { RMSNORM_FWD_I_N = 0, RMSNORM_FWD_I_D = 1 };
enum { RMSNORM_FWD_F_EPS = 0 };

/* RMSNORM_BWD: dx (opt) (+)= rstd*(g*dy - xhat*mean(g*dy*xhat)), xhat = x*rstd;
 * dg_part f32[P,D] (opt): dg_part[c] = sum over chunk c's rows of dy*xhat */
enum {
  RMSNORM_BWD_P_X = 0, RMSNORM_BWD_P_G = 1, RMSNORM_BWD_P_DY = 2, RMSNORM_BWD_P_RSTD = 3,
  RMSNORM_BWD_P_DX = 4, RMSNORM_BWD_P_DG_PART = 5
};
enum { RMSNORM_BWD_I_N = 0, RMSNORM_BWD_I_D = 1, RMSNORM_BWD_I_ACC = 2, RMSNORM_BWD_I_P = 3 };

/* REDUCE_ROWS: in[P,D], out[D]; out (+)= scale * sum over rows */
enum { REDUCE_ROWS_P_IN = 0, REDUCE_ROWS_P_OUT = 1 };
enum { REDUCE_ROWS_I_P = 0, REDUCE_ROWS_I_D = 1, REDUCE_ROWS_I_ACC = 2 };
enum { REDUCE_ROWS_F_SCALE = 0 };

/* SUM: in[n], out[1]; out (+)= scale * sum */
enum { SUM_P_IN = 0, SUM_P_OUT = 1 };
enum { SUM_I_N = 0, SUM_I_ACC = 1 };
enum { SUM_F_SCALE = 0 };

/* ROPE: x in place, element (b,t,h,j) at x[(b*T+t)*stride + h*Dh + j], inv_freq f32[Dh/2]; pairs
 * (2m,2m+1) rotate by angle = fl32(t * inv_freq[m]) (or -angle when inverse) */
enum { ROPE_P_X = 0, ROPE_P_INV_FREQ = 1 };
enum { ROPE_I_B = 0, ROPE_I_T = 1, ROPE_I_H = 2, ROPE_I_DH = 3, ROPE_I_STRIDE = 4, ROPE_I_INVERSE = 5 };

/* ATTN_FWD, ATTN_BWD_DKV, ATTN_BWD_DQ (and the integers of ATTN_BWD_PREP): element (b,t,h,j) of q at
 * q[(b*T+t)*QSTRIDE + h*Dh + j]; k, v, o use KSTRIDE, VSTRIDE, OSTRIDE (do: OSTRIDE, dk: KSTRIDE,
 * dv: VSTRIDE, dq: QSTRIDE). lse f32[B,H,T] (opt in ATTN_FWD) = log-sum-exp of the scaled (masked)
 * scores, natural log; delta f32[B,H,T].
 *   ATTN_FWD     reads Q K V, writes O LSE
 *   ATTN_BWD_DKV reads Q K V LSE DO DELTA, overwrites DK DV
 *   ATTN_BWD_DQ  reads Q K V LSE DO DELTA, overwrites DQ */
enum {
  ATTN_P_Q = 0, ATTN_P_K = 1, ATTN_P_V = 2, ATTN_P_O = 3, ATTN_P_LSE = 4, ATTN_P_DO = 5, ATTN_P_DELTA = 6,
  ATTN_P_DK = 7, ATTN_P_DV = 8, ATTN_P_DQ = 9
};
enum {
  ATTN_I_B = 0, ATTN_I_T = 1, ATTN_I_H = 2, ATTN_I_DH = 3, ATTN_I_QSTRIDE = 4, ATTN_I_KSTRIDE = 5,
  ATTN_I_VSTRIDE = 6, ATTN_I_OSTRIDE = 7, ATTN_I_CAUSAL = 8
};
enum { ATTN_F_SCALE = 0 };

/* ATTN_BWD_PREP: delta f32[B,H,T] = sum_j do*o; integers as ATTN_I_* (do uses OSTRIDE) */
enum { ATTN_BWD_PREP_P_O = 0, ATTN_BWD_PREP_P_DO = 1, ATTN_BWD_PREP_P_DELTA = 2 };

/* SWIGLU_FWD: ab[N,2F] (a = cols [0,F), b = cols [F,2F)), h[N,F] = silu(a) * b */
enum { SWIGLU_FWD_P_AB = 0, SWIGLU_FWD_P_H = 1 };
enum { SWIGLU_FWD_I_N = 0, SWIGLU_FWD_I_F = 1 };

/* SWIGLU_BWD: ab[N,2F], dh[N,F], dab[N,2F] */
enum { SWIGLU_BWD_P_AB = 0, SWIGLU_BWD_P_DH = 1, SWIGLU_BWD_P_DAB = 2 };
enum { SWIGLU_BWD_I_N = 0, SWIGLU_BWD_I_F = 1 };

/* XENT: logits[N,V], targets i32[N], loss_rows f32[N] (opt) = logsumexp - logit[target],
 * dlogits[N,V] (opt, may alias logits) = (softmax - onehot) * scale */
enum { XENT_P_LOGITS = 0, XENT_P_TARGETS = 1, XENT_P_LOSS_ROWS = 2, XENT_P_DLOGITS = 3 };
enum { XENT_I_N = 0, XENT_I_V = 1 };
enum { XENT_F_SCALE = 0 };

/* MSE: pred[N,M], target[N,M], loss_rows f32[N] (opt) = sum_c (pred-target)^2,
 * dpred[N,M] (opt) = scale*(pred-target); the gradient's factor 2 is in the scale (2/numel) */
enum { MSE_P_PRED = 0, MSE_P_TARGET = 1, MSE_P_LOSS_ROWS = 2, MSE_P_DPRED = 3 };
enum { MSE_I_N = 0, MSE_I_M = 1 };
enum { MSE_F_SCALE = 0 };

/* SUMSQ: x[n], part f32[P]; part[c] = sum of x^2 over chunk c */
enum { SUMSQ_P_X = 0, SUMSQ_P_PART = 1 };
enum { SUMSQ_I_N = 0, SUMSQ_I_P = 1 };

/* OPT_SCALARS: part f32[P] (opt: norm 0, scale 1), scalars f32[8] (SCALAR_*): [0] t (incremented here,
 * from 1), [1] lr_t, [2] grad norm, [3] clip scale. schedule 0 constant, 1 cosine. lr_t for it = t-1:
 * it < warmup: it/warmup*max; it <= cycle: min + 0.5*(1+cos(pi*(it-warmup)/(cycle-warmup)))*(max-min);
 * else min. clip scale = norm > max_norm ? max_norm/(norm+1e-6) : 1. */
enum { OPT_SCALARS_P_PART = 0, OPT_SCALARS_P_SCALARS = 1 };
enum {
  OPT_SCALARS_I_P = 0, OPT_SCALARS_I_SCHEDULE = 1, OPT_SCALARS_I_WARMUP = 2, OPT_SCALARS_I_CYCLE = 3,
  OPT_SCALARS_I_CLIP = 4
};
enum { OPT_SCALARS_F_LR_MAX = 0, OPT_SCALARS_F_LR_MIN = 1, OPT_SCALARS_F_MAX_NORM = 2 };

/* ADAMW: param f32[n], grad[n], m f32[n], v f32[n], copy[n] (opt), scalars f32[8]. g = grad*scale;
 * m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; a = lr sqrt(1-b2^t)/(1-b1^t); p -= a m/(sqrt(v)+eps);
 * p -= lr wd p; copy = p (in the copy's dtype) */
enum {
  ADAMW_P_PARAM = 0, ADAMW_P_GRAD = 1, ADAMW_P_M = 2, ADAMW_P_V = 3, ADAMW_P_COPY = 4, ADAMW_P_SCALARS = 5
};
enum { ADAMW_I_N = 0 };
enum { ADAMW_F_B1 = 0, ADAMW_F_B2 = 1, ADAMW_F_EPS = 2, ADAMW_F_WD = 3 };

/* SGD: param f32[n], grad[n], copy (opt), scalars; p -= lr * grad * scale; copy = p */
enum { SGD_P_PARAM = 0, SGD_P_GRAD = 1, SGD_P_COPY = 2, SGD_P_SCALARS = 3 };
enum { SGD_I_N = 0 };

/* CAST: in[n], out[n] */
enum { CAST_P_IN = 0, CAST_P_OUT = 1 };
enum { CAST_I_N = 0 };

/* ADD: a[n], b[n], out[n] */
enum { ADD_P_A = 0, ADD_P_B = 1, ADD_P_OUT = 2 };
enum { ADD_I_N = 0 };

/* SCALE: x[n] in place, times s */
enum { SCALE_P_X = 0 };
enum { SCALE_I_N = 0 };
enum { SCALE_F_S = 0 };

/* BIAS_ADD: y[N,M] in place, b[M] */
enum { BIAS_ADD_P_Y = 0, BIAS_ADD_P_B = 1 };
enum { BIAS_ADD_I_N = 0, BIAS_ADD_I_M = 1 };

/* RELU_FWD: x[n], y[n] */
enum { RELU_FWD_P_X = 0, RELU_FWD_P_Y = 1 };
enum { RELU_FWD_I_N = 0 };

/* RELU_BWD: y[n] (the forward output), dy[n], dx[n] */
enum { RELU_BWD_P_Y = 0, RELU_BWD_P_DY = 1, RELU_BWD_P_DX = 2 };
enum { RELU_BWD_I_N = 0, RELU_BWD_I_ACC = 1 };

/* LAYERNORM_FWD: x[N,D], w[D] (opt: ones), b[D] (opt: zeros), y[N,D], mean f32[N] (opt), rstd f32[N] (opt) */
enum {
  LAYERNORM_FWD_P_X = 0, LAYERNORM_FWD_P_W = 1, LAYERNORM_FWD_P_B = 2, LAYERNORM_FWD_P_Y = 3,
  LAYERNORM_FWD_P_MEAN = 4, LAYERNORM_FWD_P_RSTD = 5
};
enum { LAYERNORM_FWD_I_N = 0, LAYERNORM_FWD_I_D = 1 };
enum { LAYERNORM_FWD_F_EPS = 0 };

/* LAYERNORM_BWD: x, w, dy, mean, rstd, dx (opt), dw_part f32[P,D] (opt), db_part f32[P,D] (opt) */
enum {
  LAYERNORM_BWD_P_X = 0, LAYERNORM_BWD_P_W = 1, LAYERNORM_BWD_P_DY = 2, LAYERNORM_BWD_P_MEAN = 3,
  LAYERNORM_BWD_P_RSTD = 4, LAYERNORM_BWD_P_DX = 5, LAYERNORM_BWD_P_DW_PART = 6, LAYERNORM_BWD_P_DB_PART = 7
};
enum { LAYERNORM_BWD_I_N = 0, LAYERNORM_BWD_I_D = 1, LAYERNORM_BWD_I_ACC = 2, LAYERNORM_BWD_I_P = 3 };

/* ATTN_NAIVE_SOFTMAX: scores f32[B*H,T,T] in place (scaled, masked, softmaxed), lse f32[B,H,T] (opt);
 * the baseline path: the scores come from GEMMs */
enum { ATTN_NAIVE_SOFTMAX_P_SCORES = 0, ATTN_NAIVE_SOFTMAX_P_LSE = 1 };
enum {
  ATTN_NAIVE_SOFTMAX_I_B = 0, ATTN_NAIVE_SOFTMAX_I_T = 1, ATTN_NAIVE_SOFTMAX_I_H = 2,
  ATTN_NAIVE_SOFTMAX_I_CAUSAL = 8
};
enum { ATTN_NAIVE_SOFTMAX_F_SCALE = 0 };

/* ATTN_NAIVE_SOFTMAX_BWD: probs f32[B*H,T,T], dprobs f32[B*H,T,T] -> dscores in place, scaled by scale */
enum { ATTN_NAIVE_SOFTMAX_BWD_P_PROBS = 0, ATTN_NAIVE_SOFTMAX_BWD_P_DPROBS = 1 };
enum { ATTN_NAIVE_SOFTMAX_BWD_I_B = 0, ATTN_NAIVE_SOFTMAX_BWD_I_T = 1, ATTN_NAIVE_SOFTMAX_BWD_I_H = 2 };
enum { ATTN_NAIVE_SOFTMAX_BWD_F_SCALE = 0 };

/* ---- instructions (plan/instr.h); KERNEL carries a kernel op's slots above ---- */

/* GEMM: D = alpha * op(A) op(B) + beta * C, row-major, compute in f32; C is read when beta != 0;
 * dt0..dt3 the dtypes of A B C D; batch strides in elements */
enum { GEMM_P_A = 0, GEMM_P_B = 1, GEMM_P_C = 2, GEMM_P_D = 3 };
enum {
  GEMM_I_M = 0, GEMM_I_N = 1, GEMM_I_K = 2, GEMM_I_TRANS_A = 3, GEMM_I_TRANS_B = 4, GEMM_I_LDA = 5,
  GEMM_I_LDB = 6, GEMM_I_LDC = 7, GEMM_I_LDD = 8, GEMM_I_BATCH = 9, GEMM_I_STRIDE_A = 10,
  GEMM_I_STRIDE_B = 11, GEMM_I_STRIDE_C = 12, GEMM_I_STRIDE_D = 13
};
enum { GEMM_F_ALPHA = 0, GEMM_F_BETA = 1 };

/* MEMSET: dst, bytes of byte value */
enum { MEMSET_P_DST = 0 };
enum { MEMSET_I_BYTES = 0, MEMSET_I_VALUE = 1 };

/* COPY: src -> dst, bytes */
enum { COPY_P_SRC = 0, COPY_P_DST = 1 };
enum { COPY_I_BYTES = 0 };

/* EVENT_RECORD records the event on the instruction's stream; EVENT_WAIT makes the stream wait for it */
enum { EVENT_I_EVENT = 0 };

/* Collectives, dt0 their one dtype:
 *   ALL_REDUCE     send, recv (may equal); count, redop (ddp_redop), comm
 *   REDUCE_SCATTER send (count*world), recv (count); count per rank, redop, comm
 *   ALL_GATHER     send (count), recv (count*world); count per rank, comm
 *   BROADCAST      send, recv; count, root, comm
 *   SEND / RECV    buffer; count, peer, comm */
enum { COLL_P_SEND = 0, COLL_P_RECV = 1, COLL_P_BUF = 0 };
enum { COLL_I_COUNT = 0, COLL_I_REDOP = 1, COLL_I_ROOT = 2, COLL_I_PEER = 2, COLL_I_COMM = 3 };

/* RANGE_PUSH: the instruction's name is a phase or layer range (NVTX, traces) of kind (ddp_range);
 * RANGE_POP closes the innermost range on its stream */
enum { RANGE_PUSH_I_KIND = 0 };

/* TIMER: a timing point on the stream (a CUDA event on the GPU, a host clock in the reference), read by
 * the metrics: slot, role (ddp_timer) */
enum { TIMER_I_SLOT = 0, TIMER_I_ROLE = 1 };

/* LOAD_BATCH: the data source fills inputs and targets for (step, rank) */
enum { LOAD_BATCH_P_INPUTS = 0, LOAD_BATCH_P_TARGETS = 1 };

/* INIT_TENSOR: tensor (dt0) of elements, init kind (ddp_init), RNG stream id, fan_in, RNG salt (the rank
 * for per-rank inits, else 0); parameters a, b (std / bound / constant) */
enum { INIT_TENSOR_P_TENSOR = 0 };
enum {
  INIT_TENSOR_I_KIND = 0, INIT_TENSOR_I_ELEMENTS = 1, INIT_TENSOR_I_STREAM = 2, INIT_TENSOR_I_FAN_IN = 3,
  INIT_TENSOR_I_SALT = 4
};
enum { INIT_TENSOR_F_A = 0, INIT_TENSOR_F_B = 1 };

#endif
