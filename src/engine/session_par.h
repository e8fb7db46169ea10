/*
 * session_par.h — a session spread over the ranks of a parallel job (src/parallel,
 * issue 21). Every rank creates the same session (the same options) over its share of
 * the model; rank 0 is the caller's: each call that changes the sequences (a forward
 * batch, reset, release, truncate, copy) is first broadcast to the other ranks as a
 * command, and every rank applies it in the same order, so the sequences' lengths (the
 * positions) agree everywhere. The other ranks run facet_session_follow until rank 0's
 * session is freed (a STOP command).
 *
 * Command: five int32 (op, n, a, b, c), then for FORWARD n tokens, n sequence ids and,
 * when a = 1, n want-logits bytes; FORWARD's b is the micro-batches of each chunk
 * (s->par_mb: rank 0 chooses, every rank follows).
 */
#ifndef FACET_ENGINE_SESSION_PAR_H
#define FACET_ENGINE_SESSION_PAR_H

#include "engine/model_internal.h"

enum {
    FACET_PAR_STOP = 0,
    FACET_PAR_FORWARD = 1,
    FACET_PAR_RESET = 2,
    FACET_PAR_RELEASE = 3,
    FACET_PAR_TRUNCATE = 4,
    FACET_PAR_COPY = 5,
};

/* Most micro-batches a pipeline splits one chunk into (forward.c). */
#define FACET_PAR_MAX_MB 16

/* Fewest rows of a micro-batch the split chooses by itself. A stage reads all its
 * weights once per micro-batch: a decode step of a few rows costs about what one row
 * costs (the weights' bytes, not the rows, bound it), so cutting it in M costs a stage
 * M times its step while the overlap saves at most the other stages' time, a loss; a
 * chunk of many rows (prefill, a large batch) costs in proportion to its rows, and its
 * micro-batches overlap for a gain (bench/RESULTS.md, issue 21). */
#define FACET_PAR_MB_ROWS 16

/* Rank 0: the micro-batches a chunk of n entries runs as in a pipeline of P stages:
 * min(P, n / FACET_PAR_MB_ROWS); or min(FACET_MICRO_BATCHES, n) when that variable is
 * set (1: never split; 2 or more: split even a step of a few rows); at most
 * FACET_PAR_MAX_MB. 1 (the chunk whole) without a pipeline, with one entry, or when the
 * rule gives fewer than 2. */
int facet_session_par_micro_batches(int n);

/* Rank 0: broadcast batch b (hidden: facet_forward_hidden's call; only rank 0 makes the
 * output) and set s->par_mb. Errors: FACET_E_IO (a rank lost). */
facet_status facet_session_par_forward(facet_session *s, const facet_batch *b, int hidden,
                                       facet_error *err);

/* Rank 0: broadcast a sequence command (op RESET, RELEASE: a = seq; TRUNCATE: a = seq,
 * b = n_keep; COPY: a = src, b = dst, c = n). Errors: FACET_E_IO. */
facet_status facet_session_par_op(facet_session *s, int op, int a, int b, int c,
                                  facet_error *err);

/* Rank 0: tell the other ranks the session ends (from facet_session_free). */
void facet_session_par_end(facet_session *s);

/*
 * Ranks other than 0: apply rank 0's commands to s until STOP. A command's own error
 * (a batch rank 0 refused the same way) is not the job's; a lost message is.
 * Errors: FACET_E_IO (rank 0 or a peer lost), FACET_E_NOMEM (this rank could not follow:
 * the job cannot go on).
 */
facet_status facet_session_follow(facet_session *s, facet_error *err);

#endif
