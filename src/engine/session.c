/*
 * session.c — sessions and per-sequence KV caches.
 *
 * A session holds up to n_seq_max sequences. Each sequence's cache grows on demand
 * (capacity doubling, starting small) up to n_ctx, so memory follows what the caller
 * actually uses, never max_position_embeddings up front.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/model_internal.h"
#include "model/weights_policy.h"
#include "util/error.h"


facet_status facet_session_create(facet_model *model, const facet_session_options *opts,
                                  facet_session **out, facet_error *err) {
    *out = NULL;
    facet_session_options o = {0};
    if (opts) o = *opts;
    const facet_facts *f = &model->facts;
    if (o.n_seq_max < 0 || o.n_ctx < 0)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "session options: n_seq_max=%d n_ctx=%d, expected >= 0", o.n_seq_max,
                         o.n_ctx);
    if (o.n_seq_max == 0) o.n_seq_max = 1;
    if (o.n_ctx == 0) o.n_ctx = (int)f->max_position_embeddings;
    if (o.n_ctx > f->max_position_embeddings)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "context %d is larger than max_position_embeddings=%lld", o.n_ctx,
                         (long long)f->max_position_embeddings);
    facet_session *s = calloc(1, sizeof *s);
    if (!s) return facet_err(err, FACET_E_NOMEM, "session");
    s->model = model;
    s->n_seq_max = o.n_seq_max;
    s->n_ctx = o.n_ctx;
    if (o.kv_type < FACET_KV_AUTO || o.kv_type > FACET_KV_F16) {
        free(s);
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "session options: kv_type=%d, expected auto, f32, bf16 or f16",
                         (int)o.kv_type);
    }
    s->kv_type = o.kv_type == FACET_KV_AUTO ? facet_auto_kv(model->weights) : o.kv_type;
    s->kv_elt = facet_kv_type_bytes(s->kv_type);
    /* sliding layers keep a ring of exactly the window: attention reads the positions
     * of the current chunk from the batch scratch and the ring is written after it
     * (forward.c), so no entry ever needs a row older than the window */
    if (f->n_sliding_layers > 0 && f->sliding_window > 0 && f->sliding_window < o.n_ctx)
        s->ring_cap = (int)f->sliding_window;
    s->seqs = calloc((size_t)o.n_seq_max, sizeof *s->seqs);
    s->rope_long = calloc((size_t)o.n_seq_max, 1);
    s->seq_added = calloc((size_t)o.n_seq_max, sizeof(int));
    if (!s->seqs || !s->rope_long || !s->seq_added) {
        free(s->seqs);
        free(s->rope_long);
        free(s->seq_added);
        free(s);
        return facet_err(err, FACET_E_NOMEM, "session sequences");
    }
    *out = s;
    return FACET_OK;
}

static void free_scratch(facet_session *s) {
    float *bufs[] = {s->x, s->xn, s->q, s->k, s->v, s->att_out, s->gate, s->up, s->scores,
                     s->rope_cos, s->rope_sin, s->rope_cos_local, s->rope_sin_local};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    free(s->pos);
    free(s->chunk_order);
    free(s->chunk_group);
    free(s->chunk_base);
    free(s->group_row);
    free(s->group_len);
    free(s->attn_scratch);
    free(s->attn_pos);
    s->attn_pos = NULL;
    s->chunk_order = s->chunk_group = s->chunk_base = s->group_row = s->group_len = NULL;
    s->attn_scratch = NULL;
    s->x = s->xn = s->q = s->k = s->v = s->att_out = s->gate = s->up = s->scores = NULL;
    s->rope_cos = s->rope_sin = s->rope_cos_local = s->rope_sin_local = NULL;
    s->pos = NULL;
    s->scratch_rows = 0;
}

void facet_session_free(facet_session *s) {
    if (!s) return;
    int L = (int)s->model->facts.num_hidden_layers;
    for (int i = 0; i < s->n_seq_max; i++) {
        facet_seq_cache *c = &s->seqs[i];
        if (c->k)
            for (int l = 0; l < L; l++) free(c->k[l]);
        if (c->v)
            for (int l = 0; l < L; l++) free(c->v[l]);
        free(c->k);
        free(c->v);
    }
    free(s->seqs);
    free(s->rope_long);
    free(s->seq_added);
    free_scratch(s);
    free(s);
}

facet_status facet_seq_reset(facet_session *s, int seq, facet_error *err) {
    if (seq < 0 || seq >= s->n_seq_max)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "sequence id %d out of range [0, %d)", seq,
                         s->n_seq_max);
    s->seqs[seq].len = 0;
    return FACET_OK;
}

facet_status facet_seq_release(facet_session *s, int seq, facet_error *err) {
    if (seq < 0 || seq >= s->n_seq_max)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "sequence id %d out of range [0, %d)", seq,
                         s->n_seq_max);
    facet_seq_cache *c = &s->seqs[seq];
    if (c->k)
        for (int64_t l = 0; l < s->model->facts.num_hidden_layers; l++) {
            free(c->k[l]);
            free(c->v[l]);
        }
    free(c->k);
    free(c->v);
    c->k = c->v = NULL;
    c->len = c->cap = 0;
    return FACET_OK;
}

int facet_seq_length(const facet_session *s, int seq) {
    if (seq < 0 || seq >= s->n_seq_max) return -1;
    return s->seqs[seq].len;
}

int facet_session_n_ctx(const facet_session *s) { return s->n_ctx; }

facet_kv_type facet_session_kv_type(const facet_session *s) { return s->kv_type; }

/* Make room for `need` positions in sequence `seq`'s cache (need <= n_ctx). Used by the
 * forward pass before it writes K/V. */
facet_status facet_seq_reserve(facet_session *s, int seq, int need, facet_error *err);
facet_status facet_seq_reserve(facet_session *s, int seq, int need, facet_error *err) {
    facet_seq_cache *c = &s->seqs[seq];
    if (need <= c->cap) return FACET_OK;
    const facet_facts *f = &s->model->facts;
    int L = (int)f->num_hidden_layers;
    size_t row_bytes = (size_t)(f->num_key_value_heads * f->head_dim) * s->kv_elt;
    int cap = c->cap ? c->cap : 64;
    while (cap < need) cap *= 2;
    int ctx_rows = (s->n_ctx + FACET_KV_GROUP - 1) / FACET_KV_GROUP * FACET_KV_GROUP;
    if (cap > ctx_rows) cap = ctx_rows; /* whole key groups */
    if (!c->k) {
        c->k = calloc((size_t)L, sizeof *c->k);
        c->v = calloc((size_t)L, sizeof *c->v);
        if (!c->k || !c->v) return facet_err(err, FACET_E_NOMEM, "KV cache tables");
    }
    for (int l = 0; l < L; l++) {
        if (s->ring_cap && f->layer_sliding[l]) {
            if (c->k[l]) continue; /* a ring never grows */
            /* zeroed: a key group's unwritten lanes are read (never used) by attention */
            size_t rows = facet_kv_rows(s, c, l);
            c->k[l] = calloc(rows, row_bytes);
            c->v[l] = calloc(rows, row_bytes);
            if (!c->k[l] || !c->v[l]) return facet_err(err, FACET_E_NOMEM, "KV ring");
            continue;
        }
        /* per KV head: values [row][hd], keys [row / 16][hd][16]; each head's rows
         * (whole key groups) move to their new place. Zeroed, as the ring above. */
        uint8_t *nk = calloc((size_t)cap, row_bytes), *nv = calloc((size_t)cap, row_bytes);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return facet_err(err, FACET_E_NOMEM, "KV cache: %d positions", cap);
        }
        size_t head_row = (size_t)f->head_dim * s->kv_elt;
        size_t used = (size_t)(c->len + FACET_KV_GROUP - 1) / FACET_KV_GROUP * FACET_KV_GROUP;
        for (int64_t h = 0; h < f->num_key_value_heads && c->len > 0; h++) {
            memcpy(nk + (size_t)h * cap * head_row, c->k[l] + (size_t)h * c->cap * head_row,
                   used * head_row);
            memcpy(nv + (size_t)h * cap * head_row, c->v[l] + (size_t)h * c->cap * head_row,
                   (size_t)c->len * head_row);
        }
        free(c->k[l]);
        free(c->v[l]);
        c->k[l] = nk;
        c->v[l] = nv;
    }
    c->cap = cap;
    return FACET_OK;
}

/* Grow the per-batch scratch to `rows` entries. */
facet_status facet_session_scratch(facet_session *s, int rows, facet_error *err);
facet_status facet_session_scratch(facet_session *s, int rows, facet_error *err) {
    if (rows <= s->scratch_rows) return FACET_OK;
    const facet_facts *f = &s->model->facts;
    free_scratch(s);
    size_t H = (size_t)f->hidden_size, I = (size_t)f->intermediate_size;
    size_t qd = (size_t)(f->num_attention_heads * f->head_dim);
    size_t kvd = (size_t)(f->num_key_value_heads * f->head_dim);
    size_t r = (size_t)rows;
    size_t half = (size_t)s->model->rope_dim / 2;
    s->x = malloc(r * H * sizeof(float));
    s->xn = malloc(r * H * sizeof(float));
    s->q = malloc(r * qd * sizeof(float));
    s->k = malloc(r * kvd * sizeof(float));
    s->v = malloc(r * kvd * sizeof(float));
    s->att_out = malloc(r * qd * sizeof(float));
    s->gate = malloc(r * I * sizeof(float));
    s->up = malloc(r * I * sizeof(float));
    s->pos = malloc(r * sizeof(int));
    s->chunk_order = malloc(r * sizeof(int));
    s->chunk_group = malloc(r * sizeof(int));
    s->chunk_base = malloc(r * sizeof(int));
    s->group_row = malloc(r * sizeof(int));
    s->group_len = malloc(r * sizeof(int));
    /* per thread: a prefill group of up to `rows` queries, or one decode entry's query
     * heads of a KV head (at most num_attention_heads) */
    int n_q = rows > f->num_attention_heads ? rows : (int)f->num_attention_heads;
    s->attn_scratch_floats = FACET_ATTN_SCRATCH(n_q, f->head_dim);
    s->attn_scratch = malloc((size_t)facet_pool_size(s->model->pool) * s->attn_scratch_floats *
                             sizeof(float));
    s->attn_pos = malloc((size_t)facet_pool_size(s->model->pool) *
                         (size_t)f->num_attention_heads * sizeof(int));
    s->rope_cos = malloc(r * (half ? half : 1) * sizeof(float));
    s->rope_sin = malloc(r * (half ? half : 1) * sizeof(float));
    s->rope_cos_local = malloc(r * (half ? half : 1) * sizeof(float));
    s->rope_sin_local = malloc(r * (half ? half : 1) * sizeof(float));
    s->scores = malloc((size_t)facet_pool_size(s->model->pool) * (size_t)s->n_ctx * sizeof(float));
    if (!s->chunk_order || !s->chunk_group || !s->chunk_base || !s->group_row || !s->group_len ||
        !s->attn_scratch || !s->attn_pos || !s->scores || !s->rope_cos_local || !s->rope_sin_local || !s->x || !s->xn || !s->q || !s->k || !s->v || !s->att_out || !s->gate || !s->up ||
        !s->pos || !s->rope_cos || !s->rope_sin) {
        free_scratch(s);
        return facet_err(err, FACET_E_NOMEM, "batch scratch for %d rows", rows);
    }
    s->scratch_rows = rows;
    return FACET_OK;
}
