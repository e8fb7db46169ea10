/*
 * cli_par.c — the CLI's side of a parallel job (cli_par.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_par.h"
#include "engine/session_par.h"
#include "model/plan.h"
#include "model/split.h"
#include "parallel/par.h"
#include "util/error.h"

int cli_par_join(const facet_facts *f, int pp, int tp, int n_ctx, facet_weight_format w,
                 facet_kv_type kv, facet_load_options *lo) {
    if (pp * tp == 1) return 0;
    facet_error err = {0};
    /* the facts first: a refused split says so before MPI or any weight */
    if (facet_split_check(f, pp, tp, &err) != FACET_OK) return cli_fail(&err);
    facet_plan *plan = malloc(sizeof *plan);
    facet_split *split = malloc(sizeof *split);
    facet_plan_opts po = {.ctx = n_ctx, .batch = 1, .weights = facet_plan_weights(w),
                          .mem_available = 1, .kv_cache = kv};
    int rc = 0;
    if (!plan || !split) {
        fprintf(stderr, "facet: out of memory for the pipeline split\n");
        rc = 1;
    } else if (facet_plan_make(f, &po, plan, &err) != FACET_OK ||
               facet_split_make(f, plan, pp, tp, split, &err) != FACET_OK ||
               facet_par_start(pp, tp, &err) != FACET_OK) {
        rc = cli_fail(&err);
    } else {
        int s = facet_par_stage();
        lo->layer_first = split->first[s];
        lo->layer_end = split->first[s + 1];
        lo->stage_inner = s > 0;
        lo->tensor_parallel = tp;
        lo->tensor_rank = facet_par_tp_rank();
        if (facet_par_rank() == 0) {
            fprintf(stderr, "facet: pipeline of %d stages x %d tensor ranks over MPI:", pp, tp);
            for (int i = 0; i < pp; i++)
                fprintf(stderr, "%s layers %d-%d (%.1f MiB)", i ? " |" : "", split->first[i],
                        split->first[i + 1] - 1,
                        (double)(split->weight_bytes[i] + split->kv_bytes[i]) / 1048576.0);
            fputc('\n', stderr);
        }
    }
    free(plan);
    free(split);
    return rc;
}

void cli_par_report(const char *prefix) {
    if (!facet_par_active()) return;
    double comm_s;
    uint64_t sent, steps, split, multi, mbs;
    facet_par_stats(&comm_s, &sent);
    facet_par_step_stats(&steps, &split, &multi, &mbs);
    fprintf(stderr, "%sparallel %d x %d ranks: rank 0 spent %.3f s in MPI calls (waiting on the "
                    "other stages included), sent %llu bytes; %llu forward steps, %llu of them "
                    "in %llu micro-batches, %llu of those holding several sequences\n", prefix,
            facet_par_pp(), facet_par_tp(), comm_s, (unsigned long long)sent,
            (unsigned long long)steps, (unsigned long long)split, (unsigned long long)mbs,
            (unsigned long long)multi);
}

int cli_par_follower(void) { return facet_par_active() && facet_par_rank() != 0; }

/* Tell the other ranks this one failed before its session was ready (they stop). */
/* End every rank now with exit status `code` (what was printed flushed first). */
static void abort_job(int code) {
    fflush(stdout);
    fflush(stderr);
    facet_par_abort(code);
    exit(code);
}

static void fail_unready(const char *msg) {
    char first[512];
    facet_par_agree(0, msg, first, sizeof first);
}

int cli_par_follow(const char *model, const facet_load_options *lo,
                   const facet_session_options *so) {
    facet_error err = {0};
    facet_model *m = NULL;
    facet_session *s = NULL;
    facet_status st = facet_model_load(model, lo, &m, &err);
    if (st == FACET_OK) st = facet_session_create(m, so, &s, &err); /* ready: agreed */
    if (st != FACET_OK) { /* rank 0 reports the first failure; the exit status is its
                             (mpirun's is the first rank's to fail: a refusal is 2 on all) */
        if (!facet_par_agreed()) fail_unready(err.message);
        facet_model_free(m);
        facet_par_stop();
        return st == FACET_E_UNSUPPORTED ? 2 : 1;
    }
    st = facet_session_follow(s, &err);
    if (st != FACET_OK) { /* rank 0 waits on this rank: end the job, say why */
        fprintf(stderr, "facet: rank %d (stage %d): %s\n", facet_par_rank(), facet_par_stage(),
                err.message);
        abort_job(1);
    }
    facet_session_free(s);
    facet_model_free(m);
    facet_par_stop();
    return 0;
}

int cli_par_end(int rc) {
    if (!facet_par_active()) return rc;
    if (!facet_par_agreed()) {
        fail_unready("rank 0 stopped before its model was ready");
    } else if (rc != 0 && facet_par_agreed() == 1) {
        /* the other ranks may wait on a message that never comes */
        fprintf(stderr, "facet: ending the parallel job (rank 0 failed)\n");
        abort_job(rc);
    }
    facet_par_stop();
    return rc;
}
