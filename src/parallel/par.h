/*
 * par.h — the process group of a parallel run (issue 21): P pipeline stages x T tensor
 * ranks over MPI, started by `mpirun -np P*T facet ...`. World rank r is stage r / T,
 * tensor rank r % T. Rank 0 owns the tokenizer, the sampler and the output; it drives
 * every other rank with commands broadcast over the world (session.c) and the hidden
 * states pass stage to stage with point-to-point messages (forward.c).
 *
 * Built without MPI (CMake FACET_MPI=OFF, or no MPI found) every function here compiles
 * to the single-process answer: facet_par_start refuses P x T > 1 with a message, the
 * rest are never reached. A process that never calls facet_par_start runs alone.
 *
 * Errors: every MPI call runs under MPI_ERRORS_RETURN and a failed one (a rank that
 * died, a message lost) becomes FACET_E_IO naming the call, the peer and MPI's text;
 * the caller ends the job with facet_par_abort so no rank waits forever.
 * Threads: one thread at a time (MPI_THREAD_SERIALIZED): the server's engine thread
 * runs the forward passes while the main thread waits.
 * Waiting: a rank waiting for a message or a command (facet_par_recv, facet_par_wait,
 * facet_par_bcast) tests its request and yields the core (sched_yield) between tests
 * for up to 100 ms, then sleeps between tests (50 us doubling to 1 ms): on one machine a
 * waiting stage gives its core to the stage that computes (Open MPI's own wait polls
 * unless mpirun runs oversubscribed), and a follower idle between a server's requests
 * costs no CPU. FACET_MPI_WAIT=spin hands the wait to MPI (MPI_Wait) instead.
 */
#ifndef FACET_PARALLEL_PAR_H
#define FACET_PARALLEL_PAR_H

#include <stddef.h>
#include <stdint.h>

#include "facet.h"

/* 1 when this build has the MPI path. */
int facet_par_compiled(void);

/* Join the job as one of pp x tp ranks (pp, tp >= 1, product > 1): MPI_Init_thread, the
 * world's size checked against pp * tp, errors set to return. Errors:
 * FACET_E_UNSUPPORTED (built without MPI), FACET_E_INVALID_ARGUMENT (not started by
 * mpirun with pp * tp processes; the message says the command that would work). */
facet_status facet_par_start(int pp, int tp, facet_error *err);

/* 1 between facet_par_start and facet_par_stop. */
int facet_par_active(void);
int facet_par_rank(void);      /* world rank; 0 when inactive                       */
int facet_par_size(void);      /* world size; 1 when inactive                       */
int facet_par_pp(void);        /* stages (1 when inactive)                          */
int facet_par_tp(void);        /* tensor ranks per stage (1 when inactive)          */
int facet_par_stage(void);     /* this rank's stage                                 */
int facet_par_tp_rank(void);   /* this rank's place in its stage                    */

/* MPI_Finalize (nothing when inactive). */
void facet_par_stop(void);
/* End every rank of the job now (MPI_Abort, exit status `code`); returns only when no
 * job is active. The library neither prints nor exits: the caller flushes its output
 * first and exits after (cli_par.c). */
void facet_par_abort(int code);

/* Point-to-point, blocking: `bytes` bytes to / from world rank `peer`. */
facet_status facet_par_send(const void *buf, size_t bytes, int peer, facet_error *err);
facet_status facet_par_recv(void *buf, size_t bytes, int peer, facet_error *err);
/* A receive posted now and completed by facet_par_wait (rank 0 posts the last stage's
 * micro-batches before it computes them, so no stage blocks in a send to it). The buffer
 * must stay untouched until the wait returns. */
typedef struct facet_par_req {
    unsigned char opaque[16]; /* the MPI_Request */
    int peer, active;
} facet_par_req;
facet_status facet_par_irecv(void *buf, size_t bytes, int peer, facet_par_req *req,
                             facet_error *err);
/* Complete req (nothing when it is not active). Errors: FACET_E_IO (the peer lost). */
facet_status facet_par_wait(facet_par_req *req, facet_error *err);

/* Rank 0's `bytes` bytes at buf to every rank (a collective: every rank calls it). */
facet_status facet_par_bcast(void *buf, size_t bytes, facet_error *err);
/* Sum n floats over the tp ranks of this rank's stage, in place (every rank of the stage
 * calls it). */
facet_status facet_par_allreduce_f32(float *buf, size_t n, facet_error *err);

/* Every rank says whether it is ready (ok) or why not (msg); returns the number of
 * ranks that failed and, on every rank, the first failing rank's message (with its rank)
 * in first (cap bytes). A collective, called once per job: by facet_session_create
 * when the session is ready (session.c), or by the CLI on a rank that failed before. */
int facet_par_agree(int ok, const char *msg, char *first, size_t cap);
/* 0 before facet_par_agree ran; then 1 when every rank was ready, 2 when one failed
 * (every rank knows, and stops). */
int facet_par_agreed(void);

/* Seconds spent inside MPI calls and bytes sent by this rank since facet_par_start
 * (the bench's per-token communication time). */
void facet_par_stats(double *comm_s, uint64_t *bytes_sent);

/* Forward steps (chunks through the pipeline) this rank ran since facet_par_start: all
 * of them, those split into micro-batches, those of the split ones whose chunk held
 * several sequences (a server's decode step, a prefill chunk with decodes), and the
 * micro-batches of the split ones (forward.c counts them with facet_par_count_step; run,
 * serve and bench print rank 0's: cli_par_report). */
void facet_par_count_step(int micro_batches, int several_sequences);
void facet_par_step_stats(uint64_t *steps, uint64_t *split_steps, uint64_t *split_multi,
                          uint64_t *micro_batches);

#endif
