/*
 * par.c — the process group over MPI (par.h). Without FACET_HAVE_MPI the functions give
 * the single-process answers and facet_par_start refuses.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#include "parallel/par.h"
#include "util/error.h"

#ifdef FACET_HAVE_MPI
#include <mpi.h>
#endif

static struct {
    int active, rank, size, pp, tp, agreed;
    double comm_s;
    uint64_t sent, steps, split_steps, split_multi, micro_batches;
#ifdef FACET_HAVE_MPI
    MPI_Comm stage_comm;           /* the tp ranks of this rank's stage                */
#endif
} g = {0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0
#ifdef FACET_HAVE_MPI
       , MPI_COMM_NULL
#endif
};

int facet_par_active(void) { return g.active; }
int facet_par_rank(void) { return g.rank; }
int facet_par_size(void) { return g.size; }
int facet_par_pp(void) { return g.pp; }
int facet_par_tp(void) { return g.tp; }
int facet_par_stage(void) { return g.rank / g.tp; }
int facet_par_tp_rank(void) { return g.rank % g.tp; }
int facet_par_agreed(void) { return g.agreed; }

void facet_par_stats(double *comm_s, uint64_t *bytes_sent) {
    if (comm_s) *comm_s = g.comm_s;
    if (bytes_sent) *bytes_sent = g.sent;
}

void facet_par_count_step(int micro_batches, int several_sequences) {
    g.steps++;
    if (micro_batches > 1) {
        g.split_steps++;
        g.split_multi += several_sequences != 0;
        g.micro_batches += (uint64_t)micro_batches;
    }
}

void facet_par_step_stats(uint64_t *steps, uint64_t *split_steps, uint64_t *split_multi,
                          uint64_t *micro_batches) {
    if (steps) *steps = g.steps;
    if (split_steps) *split_steps = g.split_steps;
    if (split_multi) *split_multi = g.split_multi;
    if (micro_batches) *micro_batches = g.micro_batches;
}

/* How many processes the launcher started, from its environment (Open MPI, MPICH/PMI,
 * PMIx); 0 when none says. */
static int launched_size(void) {
    const char *names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (v && atoi(v) > 0) return atoi(v);
    }
    return 0;
}

#ifndef FACET_HAVE_MPI

int facet_par_compiled(void) { return 0; }

facet_status facet_par_start(int pp, int tp, facet_error *err) {
    (void)launched_size;
    return facet_err(err, FACET_E_UNSUPPORTED,
                     "--pipeline-parallel %d --tensor-parallel %d needs %d MPI processes, and "
                     "this facet was built without MPI (install libopenmpi-dev and rebuild; "
                     "CMake option FACET_MPI)", pp, tp, pp * tp);
}
void facet_par_stop(void) {}
void facet_par_abort(int code) { (void)code; }
facet_status facet_par_send(const void *buf, size_t bytes, int peer, facet_error *err) {
    (void)buf, (void)bytes, (void)peer;
    return facet_err(err, FACET_E_UNSUPPORTED, "built without MPI");
}
facet_status facet_par_recv(void *buf, size_t bytes, int peer, facet_error *err) {
    (void)buf, (void)bytes, (void)peer;
    return facet_err(err, FACET_E_UNSUPPORTED, "built without MPI");
}
facet_status facet_par_bcast(void *buf, size_t bytes, facet_error *err) {
    (void)buf, (void)bytes;
    return facet_err(err, FACET_E_UNSUPPORTED, "built without MPI");
}
facet_status facet_par_irecv(void *buf, size_t bytes, int peer, facet_par_req *req,
                             facet_error *err) {
    (void)buf, (void)bytes, (void)peer;
    req->active = 0;
    return facet_err(err, FACET_E_UNSUPPORTED, "built without MPI");
}
facet_status facet_par_wait(facet_par_req *req, facet_error *err) {
    (void)req, (void)err;
    return FACET_OK;
}
facet_status facet_par_allreduce_f32(float *buf, size_t n, facet_error *err) {
    (void)buf, (void)n;
    return facet_err(err, FACET_E_UNSUPPORTED, "built without MPI");
}
int facet_par_agree(int ok, const char *msg, char *first, size_t cap) {
    g.agreed = ok ? 1 : 2;
    if (cap) snprintf(first, cap, "%s", ok ? "" : msg);
    return !ok;
}

#else

int facet_par_compiled(void) { return 1; }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

_Static_assert(sizeof(MPI_Request) <= sizeof(((facet_par_req *)0)->opaque),
               "facet_par_req holds an MPI_Request");

/* Complete r without spinning (par.h, "Waiting"): test and sched_yield for up to
 * 100 ms (a stage waiting for the previous one: the core goes to whoever else wants it,
 * and the message is seen at once), then test and sleep, 50 us doubling to 1 ms (a
 * follower between a server's requests). FACET_MPI_WAIT=spin: MPI_Wait. */
static int wait_request(MPI_Request *r) {
    static int spin = -1;
    if (spin < 0) {
        const char *v = getenv("FACET_MPI_WAIT");
        spin = v && !strcmp(v, "spin");
    }
    if (spin) return MPI_Wait(r, MPI_STATUS_IGNORE);
    double t0 = 0;
    long ns = 0;
    for (int i = 0;; i++) {
        int done = 0, rc = MPI_Test(r, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS || done) return rc;
        if (i == 0) t0 = now_s();
        if (now_s() - t0 < 0.1) {
            sched_yield();
            continue;
        }
        ns = ns ? ns * 2 : 50000;
        if (ns > 1000000) ns = 1000000;
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
    }
}

/* FACET_E_IO naming the call, the peer and MPI's own text for rc. */
static facet_status mpi_fail(facet_error *err, const char *call, int peer, int rc) {
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return facet_err(err, FACET_E_IO,
                     "rank %d: %s with rank %d failed: %s (a rank of the job ended or lost its "
                     "link; the job stops)", g.rank, call, peer, text);
}

facet_status facet_par_start(int pp, int tp, facet_error *err) {
    int want = pp * tp;
    int launched = launched_size();
    if (launched != want)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "--pipeline-parallel %d x --tensor-parallel %d is %d processes, and "
                         "this one was started as %s%d: run it as `mpirun -np %d facet ...`",
                         pp, tp, want, launched ? "one of " : "", launched ? launched : 1, want);
    int inited = 0, provided = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        return facet_err(err, FACET_E_IO, "MPI_Init_thread failed");
    if (!inited && provided < MPI_THREAD_SERIALIZED) {
        MPI_Finalize();
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "this MPI library gives thread level %d, facet needs "
                         "MPI_THREAD_SERIALIZED (the server's engine thread calls MPI)", provided);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g.size);
    if (g.size != want) {
        facet_status st = facet_err(err, FACET_E_INVALID_ARGUMENT,
                                    "--pipeline-parallel %d x --tensor-parallel %d is %d "
                                    "processes, and MPI started %d: run it as `mpirun -np %d "
                                    "facet ...`", pp, tp, want, g.size, want);
        MPI_Finalize();
        return st;
    }
    g.pp = pp;
    g.tp = tp;
    g.active = 1;
    if (MPI_Comm_split(MPI_COMM_WORLD, g.rank / tp, g.rank % tp, &g.stage_comm) != MPI_SUCCESS) {
        facet_par_stop();
        return facet_err(err, FACET_E_IO, "MPI_Comm_split of the stages failed");
    }
    MPI_Comm_set_errhandler(g.stage_comm, MPI_ERRORS_RETURN);
    return FACET_OK;
}

void facet_par_stop(void) {
    if (!g.active) return;
    if (g.stage_comm != MPI_COMM_NULL) MPI_Comm_free(&g.stage_comm);
    MPI_Finalize();
    g.active = 0;
    g.rank = 0;
    g.size = g.pp = g.tp = 1;
}

void facet_par_abort(int code) {
    if (g.active) MPI_Abort(MPI_COMM_WORLD, code);
}

/* MPI counts are int: messages here are a chunk's hidden states (256 rows), far below. */
static int count_of(size_t bytes) { return bytes > (size_t)0x7fffffff ? -1 : (int)bytes; }

facet_status facet_par_send(const void *buf, size_t bytes, int peer, facet_error *err) {
    double t = now_s();
    int n = count_of(bytes);
    int rc = n < 0 ? MPI_ERR_COUNT : MPI_Send(buf, n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
    g.comm_s += now_s() - t;
    if (rc != MPI_SUCCESS) return mpi_fail(err, "MPI_Send", peer, rc);
    g.sent += bytes;
    return FACET_OK;
}

facet_status facet_par_irecv(void *buf, size_t bytes, int peer, facet_par_req *req,
                             facet_error *err) {
    double t = now_s();
    int n = count_of(bytes);
    MPI_Request r = MPI_REQUEST_NULL;
    int rc = n < 0 ? MPI_ERR_COUNT : MPI_Irecv(buf, n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &r);
    g.comm_s += now_s() - t;
    req->active = rc == MPI_SUCCESS;
    req->peer = peer;
    memcpy(req->opaque, &r, sizeof r);
    return rc == MPI_SUCCESS ? FACET_OK : mpi_fail(err, "MPI_Irecv", peer, rc);
}

facet_status facet_par_wait(facet_par_req *req, facet_error *err) {
    if (!req->active) return FACET_OK;
    double t = now_s();
    MPI_Request r;
    memcpy(&r, req->opaque, sizeof r);
    int rc = wait_request(&r);
    g.comm_s += now_s() - t;
    req->active = 0;
    return rc == MPI_SUCCESS ? FACET_OK : mpi_fail(err, "MPI_Irecv (its wait)", req->peer, rc);
}

facet_status facet_par_recv(void *buf, size_t bytes, int peer, facet_error *err) {
    facet_par_req req;
    facet_status st = facet_par_irecv(buf, bytes, peer, &req, err);
    return st == FACET_OK ? facet_par_wait(&req, err) : st;
}

/* Every rank calls the nonblocking MPI_Ibcast (a blocking and a nonblocking collective
 * do not match) and waits without spinning: a follower waits here between commands. */
facet_status facet_par_bcast(void *buf, size_t bytes, facet_error *err) {
    double t = now_s();
    int n = count_of(bytes);
    MPI_Request r = MPI_REQUEST_NULL;
    int rc = n < 0 ? MPI_ERR_COUNT : MPI_Ibcast(buf, n, MPI_BYTE, 0, MPI_COMM_WORLD, &r);
    if (rc == MPI_SUCCESS) rc = wait_request(&r);
    g.comm_s += now_s() - t;
    if (rc != MPI_SUCCESS) return mpi_fail(err, "MPI_Bcast", 0, rc);
    if (g.rank == 0) g.sent += bytes * (size_t)(g.size - 1);
    return FACET_OK;
}

facet_status facet_par_allreduce_f32(float *buf, size_t n, facet_error *err) {
    double t = now_s();
    int c = count_of(n * sizeof(float));
    int rc = c < 0 ? MPI_ERR_COUNT
                   : MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, g.stage_comm);
    g.comm_s += now_s() - t;
    if (rc != MPI_SUCCESS) return mpi_fail(err, "MPI_Allreduce", -1, rc);
    /* a ring all-reduce sends 2 (T - 1) / T of the vector per rank */
    g.sent += (uint64_t)(2.0 * (g.tp - 1) / g.tp * (double)(n * sizeof(float)));
    return FACET_OK;
}

enum { AGREE_MSG = 400 };

int facet_par_agree(int ok, const char *msg, char *first, size_t cap) {
    if (cap) first[0] = 0;
    g.agreed = 1;
    if (!g.active) {
        if (cap) snprintf(first, cap, "%s", ok ? "" : msg);
        return !ok;
    }
    char mine[AGREE_MSG];
    memset(mine, 0, sizeof mine);
    if (!ok) snprintf(mine, sizeof mine, "rank %d: %s", g.rank, msg && *msg ? msg : "failed");
    char *all = calloc((size_t)g.size, AGREE_MSG);
    if (!all || MPI_Allgather(mine, AGREE_MSG, MPI_CHAR, all, AGREE_MSG, MPI_CHAR,
                              MPI_COMM_WORLD) != MPI_SUCCESS) {
        free(all);
        if (cap) snprintf(first, cap, "rank %d: MPI_Allgather of the ranks' states failed", g.rank);
        g.agreed = 2;
        return g.size;
    }
    int failed = 0;
    for (int r = 0; r < g.size; r++) {
        const char *m = all + (size_t)r * AGREE_MSG;
        if (!m[0]) continue;
        if (!failed && cap) snprintf(first, cap, "%.*s", AGREE_MSG, m);
        failed++;
    }
    free(all);
    g.agreed = failed ? 2 : 1;
    return failed;
}

#endif
