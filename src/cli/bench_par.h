/*
 * bench_par.h — `mpirun -np P*T facet bench MODEL --pipeline-parallel P
 * [--tensor-parallel T]` (issue 21): the prefill and decode measurements of cmd_bench.c
 * over a parallel job, rank 0 reporting.
 *
 * A parallel job follows one session (session_par.h), so where the single-process bench
 * loads the model three times and makes a session per measurement, this loads once and
 * makes one session: max(concurrency) sequences, a context of max(the prompt lengths,
 * 16 + n + 1) tokens. Prefill: each prompt length `reps` times on sequence 0 (reset
 * between them); decode: for each concurrency c, sequences 0..c-1 reset, each given a
 * seeded 16-token prompt, then n greedy steps of all c together, timed as one. Per
 * decode row rank 0 also prints its seconds inside MPI per step (waits on the other
 * stages included) and the bytes it sent per step. No machine ceilings (they are one
 * machine's: `facet bench` without the flags measures them) and no weight cache (a
 * rank loads its share from the checkpoint).
 */
#ifndef FACET_CLI_BENCH_PAR_H
#define FACET_CLI_BENCH_PAR_H

#include "facet.h"

typedef struct bench_par_args {
    const char *model;             /* the model folder or .gguf file                   */
    int pp, tp;                    /* stages, tensor ranks per stage (pp * tp > 1)      */
    const int *shapes;             /* prompt lengths to prefill, n_shapes of them       */
    int n_shapes;
    const int *concs;              /* decode concurrencies, n_concs of them             */
    int n_concs;
    int steps, reps, threads;      /* decode steps, prefill repetitions, threads/rank   */
    facet_weight_format weights;
    facet_kv_type kv;
    const char *backend;           /* NULL or "cpu" (a parallel job refuses vulkan)     */
    const char *json_path;         /* write the figures there too, or NULL              */
} bench_par_args;

/* Run the parallel bench as this rank (every rank of the job calls it with the same
 * arguments). Returns the exit code (0; 1 on a failure, 2 on a refusal). */
int bench_parallel(const bench_par_args *a);

#endif
