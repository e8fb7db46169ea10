/*
 * cli_par.h — a CLI command (run, bench) as one rank of a parallel job (issue 21,
 * src/parallel/par.h): the split checked against the facts before anything loads or
 * MPI starts, this rank's layers chosen (src/model/split.h), the other ranks' life
 * (load, report ready, follow rank 0's session) and the job's end.
 */
#ifndef FACET_CLI_PAR_H
#define FACET_CLI_PAR_H

#include "facet.h"
#include "model/facts.h"

/* Refuse a split the facts cannot take, join the job of pp x tp ranks and set lo's
 * layer range for this rank (rank 0 prints the split on stderr). pp * tp == 1: nothing
 * (the process runs alone). Returns 0, or an exit code after printing the error. */
int cli_par_join(const facet_facts *f, int pp, int tp, int n_ctx, facet_weight_format w,
                 facet_kv_type kv, facet_load_options *lo);

/* 1 on a rank other than 0 of an active job. */
int cli_par_follower(void);

/* A rank other than 0: load its share of `model`, create the session (which reports
 * this rank ready: facet_par_agree), follow rank 0's commands until its session ends,
 * leave the job. Returns the exit code. */
int cli_par_follow(const char *model, const facet_load_options *lo,
                   const facet_session_options *so);

/* Rank 0 of an active job: one line on stderr, `prefix` first, with its seconds in MPI
 * calls (waits on the other stages included), bytes sent, the forward steps through the
 * pipeline and how many of them ran as micro-batches. Nothing when no job is active. */
void cli_par_report(const char *prefix);

/* Rank 0 at the end of the command, after its session is freed; rc the command's exit
 * code. A rank 0 that failed before its session was ready tells the others (they stop);
 * a failure after the ranks started following ends them all (MPI_Abort). Leaves the
 * job. Returns rc. */
int cli_par_end(int rc);

#endif
