/* runtime/driver/stop.h: a graceful stop on SIGTERM (what Slurm sends at a time limit) and SIGINT. The
 * handler only records the signal; the step loop (run.c) agrees on it across ranks at the next step
 * boundary, writes a checkpoint when checkpointing is on, and ddprun exits with 128 + the signal. A second
 * SIGTERM or SIGINT at least DDP_STOP_REPEAT_S after the first takes its default action, so a stuck run can
 * still be killed; one sooner is the same request delivered twice (GNU timeout, a terminal's Ctrl-C beside
 * --nproc's forwarding) and changes nothing. */
#ifndef DDP_STOP_H
#define DDP_STOP_H

#define DDP_STOP_REPEAT_S 1.0 /* seconds after the first signal from which another one kills */

/* Installs the handlers (a signal that was ignored, e.g. under nohup, stays ignored). */
void ddp_stop_install(void);
/* The first signal received, or 0. Safe to call from any thread. */
int ddp_stop_signal(void);
/* The run stopped before its last step because of `sig`: ddp_stop_exit_status then says 128 + sig. */
void ddp_stop_honoured(int sig);
/* 128 + the signal the run stopped for, or 0 when it was not stopped by a signal. */
int ddp_stop_exit_status(void);
/* Tests: forget a received signal. */
void ddp_stop_reset(void);
#endif
