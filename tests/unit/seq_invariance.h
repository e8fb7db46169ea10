/*
 * seq_invariance.h — the sequence invariances of a recurrent or hybrid checkpoint through
 * the public API, shared by test_engine_mamba.c and test_engine_hybrid.c (each includes it
 * once, writes its checkpoints under `dir` in its setup). A sequence's logits must be the
 * same prefilled alone in one batch, or in a chunk of 7 then one token at a time;
 * interleaved entry by entry with two other sequences; for a 600-token prompt, in one call
 * or in pieces of 97 — within ROWS_TOL of the largest logit of the row, since Mamba-2's
 * scan runs in SSD blocks cut where the call cuts (mixer_mamba2.c), a decode step token by
 * token — and bit for bit decoded in a batch of three or alone (each prefilled in the
 * same calls), or prefilled again after a reset. A reset starts the state from zero, a cut back to a nonzero length is refused,
 * a release frees the state.
 */
#ifndef FACET_TEST_SEQ_INVARIANCE_H
#define FACET_TEST_SEQ_INVARIANCE_H

#define V 512
#define N_LONG 600

static char dir[64];

static int sh(const char *cmd) {
    int rc = system(cmd);
    if (rc != 0) fprintf(stderr, "failed (%d): %s\n", rc, cmd);
    return rc;
}

static int teardown(void **state) {
    (void)state;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return sh(cmd) ? -1 : 0;
}

enum { NSEQ = 3 };
static const int len[NSEQ] = {30, 9, 20};
static const int first[NSEQ] = {21, 1, 13};

/* rows a and b (V logits each) agree within cuts_tol (ROWS_TOL unless a test sets it) of
 * b's largest magnitude */
#define ROWS_TOL 1e-5
static double cuts_tol = ROWS_TOL;
static double worst_rel; /* the largest such difference seen, printed at the end */
static int cuts_exact;    /* set: bit for bit (a model without Mamba-2 layers)       */
static int rows_close(const float *a, const float *b, int rows) {
    if (cuts_exact) return !memcmp(a, b, sizeof(float) * V * (size_t)rows);
    for (int r = 0; r < rows; r++) {
        double big = 0, diff = 0;
        for (int i = 0; i < V; i++) {
            double m = b[(size_t)r * V + i] < 0 ? -b[(size_t)r * V + i] : b[(size_t)r * V + i];
            double d = (double)a[(size_t)r * V + i] - b[(size_t)r * V + i];
            if (m > big) big = m;
            if (d < 0) d = -d;
            if (d > diff) diff = d;
        }
        if (big > 0 && diff / big > worst_rel) worst_rel = diff / big;
        if (!(diff <= cuts_tol * big)) return 0;
    }
    return 1;
}

static int32_t tok(int seq, int i) { return (int32_t)(3 + (seq * 131 + i * 37 + i * i) % 500); }

static facet_session *session(facet_model *m, int n_seq, int n_ctx) {
    facet_error err = {0};
    facet_session *s;
    facet_session_options so = {.n_seq_max = n_seq, .n_ctx = n_ctx, .kv_type = FACET_KV_F32};
    assert_int_equal(facet_session_create(m, &so, &s, &err), FACET_OK);
    return s;
}

static void forward(facet_session *s, int n, const int32_t *t, const int32_t *q, float *out) {
    facet_error err = {0};
    facet_batch b = {.n_tokens = n, .tokens = t, .seq_ids = q, .want_logits = NULL};
    facet_status st = facet_forward(s, &b, out, &err);
    if (st != FACET_OK) fprintf(stderr, "forward: %s\n", err.message);
    assert_int_equal(st, FACET_OK);
}

/* The checkpoint dir/name in weight format wf: the plan counts what the engine allocated
 * (its weight bytes; state_bytes of state per sequence by hand; kv_bytes of KV at the
 * checkpoint's full context, or KV_NONZERO: some), and every sequence invariance of the
 * file comment holds bit for bit. */
#define KV_NONZERO UINT64_MAX
static void run_model(const char *name, facet_weight_format wf, uint64_t state_bytes,
                      uint64_t kv_bytes) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    facet_error err = {0};
    facet_model *m = NULL;
    facet_load_options lo = {.n_threads = 2, .weights = wf, .no_cache = 1};
    if (facet_model_load(path, &lo, &m, &err) != FACET_OK) fail_msg("load %s: %s", path, err.message);
    { /* the plan counts what the engine allocated: weights, and the state per sequence */
        static facet_facts f;
        static facet_plan p;
        st_checkpoint ck;
        assert_int_equal(facet_facts_read(path, &f, &err), FACET_OK);
        assert_int_equal(st_checkpoint_open(path, &ck, &err), FACET_OK);
        assert_int_equal(facet_facts_probe(&f, &ck, &err), FACET_OK);
        st_checkpoint_close(&ck);
        facet_plan_opts po = {.ctx = 0, .batch = 1, .weights = facet_plan_weights(wf),
                              .mem_available = 1ull << 30};
        assert_int_equal(facet_plan_make(&f, &po, &p, &err), FACET_OK);
        facet_model_info info;
        facet_model_get_info(m, &info);
        assert_int_equal(info.weight_bytes, p.weight_bytes[p.weights]);
        assert_int_equal(p.state_bytes_per_sequence, state_bytes);
        if (kv_bytes == KV_NONZERO) assert_true(p.kv_bytes_per_sequence > 0);
        else assert_int_equal(p.kv_bytes_per_sequence, kv_bytes);
    }

    float *alone[NSEQ], *out = malloc(sizeof(float) * V * N_LONG);
    int32_t *t = malloc(sizeof(int32_t) * N_LONG), *q = calloc(N_LONG, sizeof(int32_t));
    for (int s = 0; s < NSEQ; s++) { /* alone, one batch */
        facet_session *ss = session(m, 1, 64);
        alone[s] = malloc(sizeof(float) * V * (size_t)len[s]);
        for (int i = 0; i < len[s]; i++) t[i] = tok(s, i);
        forward(ss, len[s], t, q, alone[s]);
        facet_session_free(ss);
    }
    { /* sequence 0: a chunk of 7, then one token at a time; then reset, cut, release */
        facet_session *ss = session(m, 1, 64);
        for (int i = 0; i < 7; i++) t[i] = tok(0, i);
        forward(ss, 7, t, q, out);
        if (!rows_close(out, alone[0], 7)) fail_msg("%s: a chunk of 7 differs from the prefill", name);
        for (int i = 7; i < len[0]; i++) {
            t[0] = tok(0, i);
            forward(ss, 1, t, q, out);
            if (!rows_close(out, alone[0] + (size_t)i * V, 1))
                fail_msg("%s: decode of position %d differs from the prefill", name, i);
        }
        /* a state cannot be cut back to a nonzero length */
        assert_int_equal(facet_seq_truncate(ss, 0, 5, &err), FACET_E_UNSUPPORTED);
        assert_int_equal(facet_seq_length(ss, 0), len[0]);
        /* reset: the state starts from zero, as in a fresh session */
        assert_int_equal(facet_seq_reset(ss, 0, &err), FACET_OK);
        for (int i = 0; i < len[0]; i++) t[i] = tok(0, i);
        forward(ss, len[0], t, q, out);
        assert_memory_equal(out, alone[0], sizeof(float) * V * (size_t)len[0]);
        /* cut to 0 is a reset; release frees the state and the next use starts afresh */
        assert_int_equal(facet_seq_truncate(ss, 0, 0, &err), FACET_OK);
        forward(ss, 3, t, q, out);
        if (!rows_close(out, alone[0], 3)) fail_msg("%s: 3 tokens after a cut to 0", name);
        assert_int_equal(facet_seq_release(ss, 0, &err), FACET_OK);
        forward(ss, 3, t, q, out);
        if (!rows_close(out, alone[0], 3)) fail_msg("%s: 3 tokens after a release", name);
        facet_session_free(ss);
    }
    { /* interleaved: entry k of a batch is sequence k % 3's next token while it has one */
        facet_session *ss = session(m, NSEQ, 64);
        int at[NSEQ] = {0, 0, 0};
        for (int b = 0; b < 2; b++) {
            int n = 0, pos[64];
            for (int more = 1; more;) {
                more = 0;
                for (int s = 0; s < NSEQ; s++) {
                    int end = b == 0 ? first[s] : len[s];
                    if (at[s] < end) {
                        t[n] = tok(s, at[s]);
                        q[n] = s;
                        pos[n++] = at[s]++;
                        more = 1;
                    }
                }
            }
            forward(ss, n, t, q, out);
            for (int k = 0; k < n; k++)
                if (!rows_close(out + (size_t)k * V, alone[q[k]] + (size_t)pos[k] * V, 1))
                    fail_msg("%s: batch %d entry %d (sequence %d position %d) differs from "
                             "the sequence alone", name, b, k, q[k], pos[k]);
        }
        /* batched decode steps: one token of each sequence per step, against each alone
         * prefilled in the same two calls (the same state, bit for bit) */
        facet_session *solo[NSEQ];
        for (int s = 0; s < NSEQ; s++) {
            solo[s] = session(m, 1, 64);
            for (int i = 0; i < len[s]; i++) {
                t[i] = tok(s, i);
                q[i] = 0;
            }
            forward(solo[s], first[s], t, q, out);
            forward(solo[s], len[s] - first[s], t + first[s], q, out);
        }
        float *one = malloc(sizeof(float) * V);
        for (int step = 0; step < 8; step++) {
            int32_t bt[NSEQ], bq[NSEQ], z = 0;
            for (int s = 0; s < NSEQ; s++) {
                bt[s] = tok(s, 100 + step * 7 + s);
                bq[s] = s;
            }
            forward(ss, NSEQ, bt, bq, out);
            for (int s = 0; s < NSEQ; s++) {
                forward(solo[s], 1, &bt[s], &z, one);
                if (memcmp(out + (size_t)s * V, one, sizeof(float) * V))
                    fail_msg("%s: decode step %d, sequence %d: batched differs from alone",
                             name, step, s);
            }
        }
        free(one);
        for (int s = 0; s < NSEQ; s++) facet_session_free(solo[s]);
        facet_session_free(ss);
    }
    { /* a 600-token prompt: one call vs pieces of 97 */
        float *pieces = malloc(sizeof(float) * V * N_LONG);
        for (int i = 0; i < N_LONG; i++) {
            t[i] = tok(1, i);
            q[i] = 0;
        }
        facet_session *ss = session(m, 1, 1024);
        forward(ss, N_LONG, t, q, out);
        facet_session_free(ss);
        ss = session(m, 1, 1024);
        for (int i = 0; i < N_LONG; i += 97)
            forward(ss, N_LONG - i < 97 ? N_LONG - i : 97, t + i, q, pieces + (size_t)i * V);
        facet_session_free(ss);
        for (int i = 0; i < N_LONG; i++)
            if (!rows_close(pieces + (size_t)i * V, out + (size_t)i * V, 1))
                fail_msg("%s: position %d of a 600-token prompt differs between one call "
                         "and pieces of 97", name, i);
        free(pieces);
    }
    printf("%s: largest difference between cuts %.3g of the row's largest logit\n", name,
           worst_rel);
    worst_rel = 0;
    for (int s = 0; s < NSEQ; s++) free(alone[s]);
    free(out);
    free(t);
    free(q);
    facet_model_free(m);
}

#endif
