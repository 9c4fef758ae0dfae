/* plan/op_slots.h: the operand slots of every kernel op and every instruction, named once and documented
 * next to their names. The compiler writes them (in.p / in.i / in.f of a ddp_instr), the reference
 * kernels and the executors read them (a->i[...], in->i[...]) and the CUDA templates read them
 * (a.i[...]); the numbers are the plan.bin contract. Plain enums and comments only: the file is also
 * compiled by NVRTC (templates/common.cuh includes it through -I<plan dir>, see compiler/codegen/nvrtc.c).
 *
 * Naming: <OP>_P_<NAME> is a pointer slot (p[], buffer references with their dtype in dt[k]),
 * <OP>_I_<NAME> an integer slot (i[]), <OP>_F_<NAME> a float slot (f[]); each enum counts from 0, with an
 * explicit number only where one is skipped or shared. <OP> is the kernel op or opcode name; ops that
 * share one layout share one prefix: ATTN_ (ATTN_FWD, ATTN_BWD_DKV, ATTN_BWD_DQ, and the integers of
 * ATTN_BWD_PREP), COLL_ (the collectives), EVENT_ (EVENT_RECORD, EVENT_WAIT).
 *
 * Conventions: matrices are row-major; N is a row (token) count; "act" is the activation dtype; dtypes of
 * the pointer slots come from the instruction (dt[k]), so one op serves f32, bf16 and (reference only) f64.
 * "acc" flags: 0 = overwrite the output, 1 = add into it. Partial tables ([P, D]) split N rows into P
 * contiguous chunks of ceil(N/P) rows; chunk c's row of the table is the sum over its rows (chunks past N
 * are zero rows). Optional pointer operands (null = skipped) are marked "(opt)". Outputs may alias inputs
 * in XENT (dlogits = logits), SWIGLU_BWD, MSE and the elementwise ops (each element is read before it is
 * written) but SUM_CHUNKS (its out must not overlap its in). A token or target id outside [0, V) gives a
 * NaN row. The one-line synopsis of each op is in plan/ops.h (DDP_KERNEL_OPS), printed by `ddpc inspect`
 * under "== kernel ops ==". */
#ifndef DDP_OP_SLOTS_H
#define DDP_OP_SLOTS_H

/* ---- kernel ops ---- */

/* EMBED_FWD: tokens i32[N], table[V,D], out[N,D]. partial = 0: the table is the whole vocabulary (vfirst 0);
 * partial = 1 (a vocabulary-parallel embedding under tensor parallelism): the table holds rows
 * [vfirst, vfirst + V) of it and a token outside them gives a zero row (another rank holds it) */
enum { EMBED_FWD_P_TOKENS = 0, EMBED_FWD_P_TABLE, EMBED_FWD_P_OUT };
enum { EMBED_FWD_I_N = 0, EMBED_FWD_I_D, EMBED_FWD_I_V, EMBED_FWD_I_VFIRST, EMBED_FWD_I_PARTIAL };

/* EMBED_BWD: tokens i32[N], dout[N,D], dtable[V,D]; deterministic: tokens are accumulated in order;
 * rows never hit are 0 when acc = 0. partial = 1: dtable holds rows [vfirst, vfirst + V) and tokens
 * outside them are skipped (as EMBED_FWD) */
enum { EMBED_BWD_P_TOKENS = 0, EMBED_BWD_P_DOUT, EMBED_BWD_P_DTABLE };
enum { EMBED_BWD_I_N = 0, EMBED_BWD_I_D, EMBED_BWD_I_V, EMBED_BWD_I_ACC, EMBED_BWD_I_VFIRST, EMBED_BWD_I_PARTIAL };

/* RMSNORM_FWD: x[N,D], g[D], y[N,D], rstd f32[N] (opt); y = x * rstd * g, rstd = 1/sqrt(mean(x^2)+eps),
 * statistics in f32 */
enum { RMSNORM_FWD_P_X = 0, RMSNORM_FWD_P_G, RMSNORM_FWD_P_Y, RMSNORM_FWD_P_RSTD };
enum { RMSNORM_FWD_I_N = 0, RMSNORM_FWD_I_D };
enum { RMSNORM_FWD_F_EPS = 0 };

/* RMSNORM_BWD: dx (opt) (+)= rstd*(g*dy - xhat*mean(g*dy*xhat)), xhat = x*rstd;
 * dg_part f32[P,D] (opt): dg_part[c] = sum over chunk c's rows of dy*xhat */
enum {
  RMSNORM_BWD_P_X = 0, RMSNORM_BWD_P_G, RMSNORM_BWD_P_DY, RMSNORM_BWD_P_RSTD, RMSNORM_BWD_P_DX, RMSNORM_BWD_P_DG_PART
};
enum { RMSNORM_BWD_I_N = 0, RMSNORM_BWD_I_D, RMSNORM_BWD_I_ACC, RMSNORM_BWD_I_P };

/* RMSNORM_BWD_CAST: RMSNORM_BWD (its slots, RMSNORM_BWD_*, dx required) fused with the cast of the new dx:
 * dx_cast[N,D] = (its dtype) dx, read back as stored (dx (+)= ... first, then rounded to dx's dtype);
 * equals RMSNORM_BWD followed by CAST(dx -> dx_cast), one pass instead of two */
enum { RMSNORM_BWD_CAST_P_DX_CAST = 6 };

/* REDUCE_ROWS: in[P,D], out[D]; out (+)= scale * sum over rows */
enum { REDUCE_ROWS_P_IN = 0, REDUCE_ROWS_P_OUT };
enum { REDUCE_ROWS_I_P = 0, REDUCE_ROWS_I_D, REDUCE_ROWS_I_ACC };
enum { REDUCE_ROWS_F_SCALE = 0 };

/* SUM: in[n], out[1]; out (+)= scale * sum */
enum { SUM_P_IN = 0, SUM_P_OUT };
enum { SUM_I_N = 0, SUM_I_ACC };
enum { SUM_F_SCALE = 0 };

/* ROPE: x in place, element (b,t,h,j) at x[(b*T+t)*stride + h*Dh + j], inv_freq f32[Dh/2]; pairs
 * (2m,2m+1) rotate by angle = fl32(t * inv_freq[m]) (or -angle when inverse) */
enum { ROPE_P_X = 0, ROPE_P_INV_FREQ };
enum { ROPE_I_B = 0, ROPE_I_T, ROPE_I_H, ROPE_I_DH, ROPE_I_STRIDE, ROPE_I_INVERSE };

/* ATTN_FWD, ATTN_BWD_DKV, ATTN_BWD_DQ (and the integers of ATTN_BWD_PREP): element (b,t,h,j) of q at
 * q[(b*T+t)*QSTRIDE + h*Dh + j]; k, v, o use KSTRIDE, VSTRIDE, OSTRIDE (do: OSTRIDE, dk: KSTRIDE,
 * dv: VSTRIDE, dq: QSTRIDE). lse f32[B,H,T] (opt in ATTN_FWD) = log-sum-exp of the scaled (masked)
 * scores, natural log; delta f32[B,H,T].
 *   ATTN_FWD     reads Q K V, writes O LSE
 *   ATTN_BWD_DKV reads Q K V LSE DO DELTA, overwrites DK DV
 *   ATTN_BWD_DQ  reads Q K V LSE DO DELTA, overwrites DQ */
enum {
  ATTN_P_Q = 0, ATTN_P_K, ATTN_P_V, ATTN_P_O, ATTN_P_LSE, ATTN_P_DO, ATTN_P_DELTA, ATTN_P_DK, ATTN_P_DV, ATTN_P_DQ
};
enum {
  ATTN_I_B = 0, ATTN_I_T, ATTN_I_H, ATTN_I_DH, ATTN_I_QSTRIDE, ATTN_I_KSTRIDE, ATTN_I_VSTRIDE, ATTN_I_OSTRIDE,
  ATTN_I_CAUSAL
};
enum { ATTN_F_SCALE = 0 };

/* ATTN_BWD_DKV_ROPE, ATTN_BWD_DQ_ROPE: ATTN_BWD_DKV / ATTN_BWD_DQ (their ATTN_ slots) fused with the inverse
 * ROPE of their output: inv_freq f32[Dh/2]; dk (DKV_ROPE) or dq (DQ_ROPE), element (b,t,h,2m|2m+1), is
 * rotated by -fl32(t * inv_freq[m]) as ROPE with inverse = 1 does; dv is not rotated. Equals the unfused op
 * followed by ROPE(inverse) over the same heads. The GPU kernels (bf16 only) rotate before rounding. */
enum { ATTN_P_INV_FREQ = 10 };

/* ATTN_BWD_FUSED: ATTN_BWD_DKV (its ATTN_ slots) that also adds dq (scale included) into dq_acc, f32
 * [B*H][ceil(T/64)][HA/8][64][8] with HA = Dh rounded up to 64: element (b,t,h,j) of dq at
 * ((((b*H + h)*ceil(T/64) + t/64)*(HA/8) + j/8)*64 + t%64)*8 + j%8. The additions of different key blocks
 * meet in no fixed order (the GPU kernel's bulk reductions), so the sum may differ in its last bits between
 * runs. ATTN_BWD_PREP zeroes dq_acc (its optional DQACC slot) and ATTN_DQ_STORE writes dq from it.
 *   ATTN_BWD_FUSED reads Q K V LSE DO DELTA DQACC, overwrites DK DV, adds into DQACC
 *   ATTN_DQ_STORE  reads DQACC, overwrites DQ (integers: ATTN_I_*; dq uses QSTRIDE) */
enum { ATTN_P_DQACC = 11 };

/* ATTN_BWD_PREP: delta f32[B,H,T] = sum_j do*o; integers as ATTN_I_* (do uses OSTRIDE); dq_acc (optional,
 * ATTN_BWD_FUSED's accumulator) set to zero */
enum { ATTN_BWD_PREP_P_O = 0, ATTN_BWD_PREP_P_DO, ATTN_BWD_PREP_P_DELTA, ATTN_BWD_PREP_P_DQACC };

/* SWIGLU_FWD: ab[N,2F] (a = cols [0,F), b = cols [F,2F)), h[N,F] = silu(a) * b */
enum { SWIGLU_FWD_P_AB = 0, SWIGLU_FWD_P_H };
enum { SWIGLU_FWD_I_N = 0, SWIGLU_FWD_I_F };

/* SWIGLU_BWD: ab[N,2F], dh[N,F], dab[N,2F] */
enum { SWIGLU_BWD_P_AB = 0, SWIGLU_BWD_P_DH, SWIGLU_BWD_P_DAB };
enum { SWIGLU_BWD_I_N = 0, SWIGLU_BWD_I_F };

/* XENT: logits[N,V], targets i32[N], loss_rows f32[N] (opt) = logsumexp - logit[target],
 * dlogits[N,V] (opt, may alias logits) = (softmax - onehot) * scale */
enum { XENT_P_LOGITS = 0, XENT_P_TARGETS, XENT_P_LOSS_ROWS, XENT_P_DLOGITS };
enum { XENT_I_N = 0, XENT_I_V };
enum { XENT_F_SCALE = 0 };

/* The vocabulary-parallel cross-entropy (tensor parallelism: each rank holds logits[N,V] of vocabulary
 * columns [vfirst, vfirst + V) of vtotal), in two kernels around an all-gather of the statistics:
 * XENT_VP_STATS: logits[N,V], targets i32[N], stats f32[N,2]: stats[n] = (logsumexp of the rank's logits of
 *   row n, logit[target - vfirst] when the target is among them else 0) */
enum { XENT_VP_STATS_P_LOGITS = 0, XENT_VP_STATS_P_TARGETS, XENT_VP_STATS_P_STATS };
enum { XENT_VP_STATS_I_N = 0, XENT_VP_STATS_I_V, XENT_VP_STATS_I_VFIRST };
/* XENT_VP: logits[N,V], targets i32[N], stats f32[parts,N,2] (every rank's XENT_VP_STATS, in rank order),
 * loss_rows f32[N] (opt), dlogits[N,V] (opt, may alias logits). lse = logsumexp over the parts of stats[.][n][0]
 * (fixed order), loss_rows[n] = lse - sum over the parts of stats[.][n][1] (NaN for a target outside
 * [0, vtotal)), dlogits = (exp(logit - lse) - onehot(target - vfirst)) * scale */
enum { XENT_VP_P_LOGITS = 0, XENT_VP_P_TARGETS, XENT_VP_P_STATS, XENT_VP_P_LOSS_ROWS, XENT_VP_P_DLOGITS };
enum { XENT_VP_I_N = 0, XENT_VP_I_V, XENT_VP_I_VFIRST, XENT_VP_I_PARTS, XENT_VP_I_VTOTAL };
enum { XENT_VP_F_SCALE = 0 };

/* MSE: pred[N,M], target[N,M], loss_rows f32[N] (opt) = sum_c (pred-target)^2,
 * dpred[N,M] (opt) = scale*(pred-target); the gradient's factor 2 is in the scale (2/numel) */
enum { MSE_P_PRED = 0, MSE_P_TARGET, MSE_P_LOSS_ROWS, MSE_P_DPRED };
enum { MSE_I_N = 0, MSE_I_M };
enum { MSE_F_SCALE = 0 };

/* SUMSQ: x[n], part f32[P]; part[c] = sum of x^2 over chunk c */
enum { SUMSQ_P_X = 0, SUMSQ_P_PART };
enum { SUMSQ_I_N = 0, SUMSQ_I_P };

/* OPT_SCALARS: part f32[P] (opt: norm 0, scale 1), scalars f32[8] (SCALAR_* below: t, incremented here
 * from 1; lr_t; grad norm; clip scale). schedule 0 constant, 1 cosine. lr_t for it = t-1: it < warmup:
 * it/warmup*max; it <= cycle: min + 0.5*(1+cos(pi*(it-warmup)/(cycle-warmup)))*(max-min); else min.
 * clip scale = norm > max_norm ? max_norm/(norm+1e-6) : 1. */
enum { OPT_SCALARS_P_PART = 0, OPT_SCALARS_P_SCALARS };
enum { OPT_SCALARS_I_P = 0, OPT_SCALARS_I_SCHEDULE, OPT_SCALARS_I_WARMUP, OPT_SCALARS_I_CYCLE, OPT_SCALARS_I_CLIP };
enum { OPT_SCALARS_F_LR_MAX = 0, OPT_SCALARS_F_LR_MIN, OPT_SCALARS_F_MAX_NORM };
/* The scalars block written by OPT_SCALARS, read by the optimizers and the metrics */
enum { SCALAR_STEP = 0, SCALAR_LR, SCALAR_GRAD_NORM, SCALAR_CLIP_SCALE, SCALAR_COUNT = 8 };

/* ADAMW: param f32[n], grad[n], m f32[n], v f32[n], copy[n] (opt), scalars f32[8]. g = grad*scale;
 * m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; a = lr sqrt(1-b2^t)/(1-b1^t); p -= a m/(sqrt(v)+eps);
 * p -= lr wd p; copy = p (in the copy's dtype).
 * i[ADAMW_I_PEERS] = W > 0 (nccl.all_reduce = "peer"; W is the world size): grad is read on every rank of
 * the world at the same arena offset and g = (sum over ranks 0..W-1 in that order, f32) / W * scale, the
 * all-reduce's mean computed inside the update. The plan leaves p[ADAMW_P_PEER_GRADS] null; the CUDA
 * executor points it at a table of the W ranks' grad pointers, mapped through CUDA IPC (runtime/cuda/
 * peer.c). The verifier proves each rank's grad final before a PEER_BARRIER the update follows, and not
 * written again before a PEER_BARRIER after it (compiler/verify/peer.c).
 * With p[ADAMW_P_RECEIVED] (nccl.all_reduce = "peer_copy"): the other ranks' gradients are not read where
 * they are but from received[(W-1) * n], rank order without this rank (a PEER_COPY put them there), so the
 * update reads only this rank's memory; the sum is the same. */
enum { ADAMW_P_PARAM = 0, ADAMW_P_GRAD, ADAMW_P_M, ADAMW_P_V, ADAMW_P_COPY, ADAMW_P_SCALARS, ADAMW_P_PEER_GRADS,
       ADAMW_P_RECEIVED };
enum { ADAMW_I_N = 0, ADAMW_I_PEERS };
enum { ADAMW_F_B1 = 0, ADAMW_F_B2, ADAMW_F_EPS, ADAMW_F_WD };

/* SGD: param f32[n], grad[n], copy (opt), scalars; p -= lr * grad * scale; copy = p */
enum { SGD_P_PARAM = 0, SGD_P_GRAD, SGD_P_COPY, SGD_P_SCALARS };
enum { SGD_I_N = 0 };

/* CAST: in[n], out[n] */
enum { CAST_P_IN = 0, CAST_P_OUT };
enum { CAST_I_N = 0 };

/* ADD: a[n], b[n], out[n] */
enum { ADD_P_A = 0, ADD_P_B, ADD_P_OUT };
enum { ADD_I_N = 0 };

/* SUM_CHUNKS: in[P*n] (P consecutive chunks of n elements, e.g. what an all-to-all received from each of P
 * ranks), out[n] (must not overlap in); out[i] = scale * (in[i] + in[n + i] + ... + in[(P-1)*n + i]), summed
 * in f32 in chunk order w = 0, 1, ..., P-1 and rounded to out's dtype once, so every rank that computes it
 * gets the same bits. P >= 1, n >= 0 */
enum { SUM_CHUNKS_P_IN = 0, SUM_CHUNKS_P_OUT };
enum { SUM_CHUNKS_I_N = 0, SUM_CHUNKS_I_P };
enum { SUM_CHUNKS_F_SCALE = 0 };

/* SCALE: x[n] in place, times s */
enum { SCALE_P_X = 0 };
enum { SCALE_I_N = 0 };
enum { SCALE_F_S = 0 };

/* BIAS_ADD: y[N,M] in place, b[M] */
enum { BIAS_ADD_P_Y = 0, BIAS_ADD_P_B };
enum { BIAS_ADD_I_N = 0, BIAS_ADD_I_M };

/* RELU_FWD: x[n], y[n] */
enum { RELU_FWD_P_X = 0, RELU_FWD_P_Y };
enum { RELU_FWD_I_N = 0 };

/* RELU_BWD: y[n] (the forward output), dy[n], dx[n] */
enum { RELU_BWD_P_Y = 0, RELU_BWD_P_DY, RELU_BWD_P_DX };
enum { RELU_BWD_I_N = 0, RELU_BWD_I_ACC };

/* LAYERNORM_FWD: x[N,D], w[D] (opt: ones), b[D] (opt: zeros), y[N,D], mean f32[N] (opt), rstd f32[N] (opt) */
enum {
  LAYERNORM_FWD_P_X = 0, LAYERNORM_FWD_P_W, LAYERNORM_FWD_P_B, LAYERNORM_FWD_P_Y, LAYERNORM_FWD_P_MEAN,
  LAYERNORM_FWD_P_RSTD
};
enum { LAYERNORM_FWD_I_N = 0, LAYERNORM_FWD_I_D };
enum { LAYERNORM_FWD_F_EPS = 0 };

/* LAYERNORM_BWD: x, w, dy, mean, rstd, dx (opt), dw_part f32[P,D] (opt), db_part f32[P,D] (opt) */
enum {
  LAYERNORM_BWD_P_X = 0, LAYERNORM_BWD_P_W, LAYERNORM_BWD_P_DY, LAYERNORM_BWD_P_MEAN, LAYERNORM_BWD_P_RSTD,
  LAYERNORM_BWD_P_DX, LAYERNORM_BWD_P_DW_PART, LAYERNORM_BWD_P_DB_PART
};
enum { LAYERNORM_BWD_I_N = 0, LAYERNORM_BWD_I_D, LAYERNORM_BWD_I_ACC, LAYERNORM_BWD_I_P };

/* ATTN_NAIVE_SOFTMAX: scores f32[B*H,T,T] in place (scaled, masked, softmaxed), lse f32[B,H,T] (opt);
 * the baseline path: the scores come from GEMMs */
enum { ATTN_NAIVE_SOFTMAX_P_SCORES = 0, ATTN_NAIVE_SOFTMAX_P_LSE };
enum { ATTN_NAIVE_SOFTMAX_I_B = 0, ATTN_NAIVE_SOFTMAX_I_T, ATTN_NAIVE_SOFTMAX_I_H, ATTN_NAIVE_SOFTMAX_I_CAUSAL = 8 };
enum { ATTN_NAIVE_SOFTMAX_F_SCALE = 0 };

/* ATTN_NAIVE_SOFTMAX_BWD: probs f32[B*H,T,T], dprobs f32[B*H,T,T] -> dscores in place, scaled by scale */
enum { ATTN_NAIVE_SOFTMAX_BWD_P_PROBS = 0, ATTN_NAIVE_SOFTMAX_BWD_P_DPROBS };
enum { ATTN_NAIVE_SOFTMAX_BWD_I_B = 0, ATTN_NAIVE_SOFTMAX_BWD_I_T, ATTN_NAIVE_SOFTMAX_BWD_I_H };
enum { ATTN_NAIVE_SOFTMAX_BWD_F_SCALE = 0 };

/* ---- instructions (plan/instr.h); KERNEL carries a kernel op's slots above ---- */

/* GEMM: D = alpha * op(A) op(B) + beta * C, row-major, compute in f32; C is read when beta != 0;
 * dt0..dt3 the dtypes of A B C D; batch strides in elements */
enum { GEMM_P_A = 0, GEMM_P_B, GEMM_P_C, GEMM_P_D };
enum {
  GEMM_I_M = 0, GEMM_I_N, GEMM_I_K, GEMM_I_TRANS_A, GEMM_I_TRANS_B, GEMM_I_LDA, GEMM_I_LDB, GEMM_I_LDC, GEMM_I_LDD,
  GEMM_I_BATCH, GEMM_I_STRIDE_A, GEMM_I_STRIDE_B, GEMM_I_STRIDE_C, GEMM_I_STRIDE_D
};
enum { GEMM_F_ALPHA = 0, GEMM_F_BETA };

/* MEMSET: dst, bytes of byte value */
enum { MEMSET_P_DST = 0 };
enum { MEMSET_I_BYTES = 0, MEMSET_I_VALUE };

/* COPY: src -> dst, bytes */
enum { COPY_P_SRC = 0, COPY_P_DST };
enum { COPY_I_BYTES = 0 };

/* EVENT_RECORD records the event on the instruction's stream; EVENT_WAIT makes the stream wait for it */
enum { EVENT_I_EVENT = 0 };

/* Collectives, dt0 their one dtype:
 *   ALL_REDUCE     send, recv (may equal); count, redop (ddp_redop), comm
 *   REDUCE_SCATTER send (count*world), recv (count); count per rank, redop, comm
 *   ALL_GATHER     send (count), recv (count*world); count per rank, comm
 *   ALL_TO_ALL     send (count*world), recv (count*world): chunk j of send to rank j, chunk j of recv from it;
 *                  count per rank, comm (not in place)
 *   BROADCAST      send, recv; count, root, comm
 *   SEND / RECV    buffer; count, peer, comm
 *   PEER_BARRIER   no buffer; count 0, comm 0 (the world): returns on a rank once every rank's stream has
 *                  reached its barrier of the same index (the step's k-th PEER_BARRIER on every rank), so
 *                  what each rank ordered before it is done (nccl.all_reduce = "peer": the gradients an
 *                  ADAMW with peers reads on every rank)
 *   PEER_COPY      send (count: this rank's range), recv (count * (world-1)); comm 0: recv chunk j gets the
 *                  same range of rank j (j < this rank) or j + 1 (after it), read where it lies (copy engines
 *                  through CUDA IPC on the GPU; the reference gathers it), after a PEER_BARRIER that made it
 *                  final (nccl.all_reduce = "peer_copy") */
enum { COLL_P_SEND = 0, COLL_P_RECV, COLL_P_BUF = 0 };
enum { COLL_I_COUNT = 0, COLL_I_REDOP, COLL_I_ROOT, COLL_I_PEER = 2, COLL_I_COMM, COLL_I_PATH };
/* ALL_TO_ALL and ALL_GATHER's i[COLL_I_PATH] (0 on every other collective): NCCL's collective, or (comm 0,
 * the world, in a step program: nccl.movement = "peer_copy") copy-engine pulls from every other rank's send
 * buffer through CUDA IPC, from all of them at once, between two barriers of the world's ranks: the
 * first says every rank's send buffer is final, the second that every rank has read this rank's (the
 * reference executor runs both kinds as the collective) */
enum { COLL_PATH_NCCL = 0, COLL_PATH_PEER_COPY, COLL_PATH_COUNT };

/* RANGE_PUSH: the instruction's name is a phase or layer range (NVTX, traces) of kind (ddp_range);
 * RANGE_POP closes the innermost range on its stream */
enum { RANGE_PUSH_I_KIND = 0 };

/* TIMER: a timing point on the stream (a CUDA event on the GPU, a host clock in the reference), read by
 * the metrics: slot, role (ddp_timer) */
enum { TIMER_I_SLOT = 0, TIMER_I_ROLE };

/* LOAD_BATCH: the data source fills inputs and targets for (step, part of parts): part `part` of the
 * global batch cut in `parts` (parts 0: this rank of the world; pipelines: the replica of the replicas) */
enum { LOAD_BATCH_P_INPUTS = 0, LOAD_BATCH_P_TARGETS };
enum { LOAD_BATCH_I_PART = 0, LOAD_BATCH_I_PARTS };

/* INIT_TENSOR: tensor (dt0) of elements, init kind (ddp_init), RNG stream id, fan_in, RNG salt (the rank
 * for per-rank inits, else 0), first (the index in the stream of the tensor's element 0: a rank's piece
 * of a sharded unit draws the values the whole unit would hold there); parameters a, b (std / bound /
 * constant) */
enum { INIT_TENSOR_P_TENSOR = 0 };
enum { INIT_TENSOR_I_KIND = 0, INIT_TENSOR_I_ELEMENTS, INIT_TENSOR_I_STREAM, INIT_TENSOR_I_FAN_IN, INIT_TENSOR_I_SALT,
       INIT_TENSOR_I_FIRST, INIT_TENSOR_I_RUN, INIT_TENSOR_I_STRIDE };
/* RUN, STRIDE (RUN 0: contiguous): the tensor's element i draws stream index FIRST + (i / RUN) * STRIDE + i % RUN
 * (a tensor-parallel rank's columns of a row-split weight: runs of RUN elements STRIDE apart in the whole unit) */
enum { INIT_TENSOR_F_A = 0, INIT_TENSOR_F_B };

#endif
