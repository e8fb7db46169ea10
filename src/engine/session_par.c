/*
 * session_par.c — rank 0's commands and the other ranks' loop (session_par.h).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/session_par.h"
#include "parallel/par.h"
#include "util/error.h"

static facet_status send_cmd(int32_t op, int32_t n, int32_t a, int32_t b, int32_t c,
                             facet_error *err) {
    int32_t h[5] = {op, n, a, b, c};
    return facet_par_bcast(h, sizeof h, err);
}

int facet_session_par_micro_batches(int n) {
    static int want = -1;
    if (want < 0) {
        /* N >= 0 in full, else chosen by the rows (0), as the CLI notes (cli/main.c) */
        const char *v = getenv("FACET_MICRO_BATCHES");
        char *end = NULL;
        long n = v && *v ? strtol(v, &end, 10) : 0;
        want = v && *v && *end == '\0' && n >= 0 && n <= 1048576 ? (int)n : 0;
    }
    int P = facet_par_pp();
    int m = want ? want : n / FACET_PAR_MB_ROWS;
    if (!want && m > P) m = P;
    if (P < 2 || n < 2 || m < 2) return 1;
    if (m > n) m = n;
    return m > FACET_PAR_MAX_MB ? FACET_PAR_MAX_MB : m;
}

facet_status facet_session_par_forward(facet_session *s, const facet_batch *b, int hidden,
                                       facet_error *err) {
    (void)hidden;
    int n = b->n_tokens;
    /* a chunk of FACET_FORWARD_CHUNK entries at most is split (forward.c) */
    s->par_mb = facet_session_par_micro_batches(n < FACET_FORWARD_CHUNK ? n
                                                                        : FACET_FORWARD_CHUNK);
    facet_status st = send_cmd(FACET_PAR_FORWARD, n, b->want_logits != NULL, s->par_mb, 0, err);
    if (st == FACET_OK && n > 0)
        st = facet_par_bcast((void *)b->tokens, sizeof(int32_t) * (size_t)n, err);
    if (st == FACET_OK && n > 0)
        st = facet_par_bcast((void *)b->seq_ids, sizeof(int32_t) * (size_t)n, err);
    if (st == FACET_OK && n > 0 && b->want_logits)
        st = facet_par_bcast((void *)b->want_logits, (size_t)n, err);
    return st;
}

facet_status facet_session_par_op(facet_session *s, int op, int a, int b, int c,
                                  facet_error *err) {
    (void)s;
    return send_cmd(op, 0, a, b, c, err);
}

void facet_session_par_end(facet_session *s) {
    (void)s;
    facet_error err = {0};
    send_cmd(FACET_PAR_STOP, 0, 0, 0, 0, &err); /* a lost rank: nothing left to tell */
}

facet_status facet_session_follow(facet_session *s, facet_error *err) {
    int32_t *tokens = NULL, *seqs = NULL;
    uint8_t *want = NULL;
    int cap = 0;
    facet_status st = FACET_OK;
    for (;;) {
        int32_t h[5];
        if ((st = facet_par_bcast(h, sizeof h, err)) != FACET_OK) break;
        if (h[0] == FACET_PAR_STOP) break;
        facet_error cmd_err = {0};
        facet_status cst = FACET_OK;
        switch (h[0]) {
        case FACET_PAR_FORWARD: {
            int n = h[1];
            if (n > cap) {
                free(tokens);
                free(seqs);
                free(want);
                tokens = malloc(sizeof(int32_t) * (size_t)n);
                seqs = malloc(sizeof(int32_t) * (size_t)n);
                want = malloc((size_t)n);
                cap = tokens && seqs && want ? n : 0;
                if (!cap) {
                    st = facet_err(err, FACET_E_NOMEM, "rank %d: a batch of %d entries",
                                   facet_par_rank(), n);
                    goto out;
                }
            }
            if (n > 0 && ((st = facet_par_bcast(tokens, sizeof(int32_t) * (size_t)n, err)) ||
                          (st = facet_par_bcast(seqs, sizeof(int32_t) * (size_t)n, err)) ||
                          (h[2] && (st = facet_par_bcast(want, (size_t)n, err)))))
                goto out;
            facet_batch b = {n, tokens, seqs, h[2] ? want : NULL};
            s->par_mb = h[3] >= 1 && h[3] <= FACET_PAR_MAX_MB ? h[3] : 1;
            cst = facet_forward(s, &b, NULL, &cmd_err);
            /* refused before anything moved (rank 0 refuses it alike) is rank 0's to
             * report; a failure after (a message lost, memory) ends the job */
            if (cst == FACET_E_IO || cst == FACET_E_NOMEM) {
                *err = cmd_err;
                st = cst;
                goto out;
            }
            break;
        }
        case FACET_PAR_RESET: cst = facet_seq_reset(s, h[2], &cmd_err); break;
        case FACET_PAR_RELEASE: cst = facet_seq_release(s, h[2], &cmd_err); break;
        case FACET_PAR_TRUNCATE: cst = facet_seq_truncate(s, h[2], h[3], &cmd_err); break;
        case FACET_PAR_COPY:
            cst = facet_seq_copy(s, h[2], h[3], h[4], &cmd_err);
            if (cst == FACET_E_NOMEM) {
                *err = cmd_err;
                st = cst;
                goto out;
            }
            break;
        default:
            st = facet_err(err, FACET_E_IO, "rank %d: unknown command %d from rank 0",
                           facet_par_rank(), h[0]);
            goto out;
        }
    }
out:
    free(tokens);
    free(seqs);
    free(want);
    return st;
}
