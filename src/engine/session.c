/*
 * session.c — sessions: up to n_seq_max sequences over one model, their KV cache
 * (kv_cache.h: grown on demand up to n_ctx, so memory follows what the caller actually
 * uses, never max_position_embeddings up front) and the forward pass's batch scratch.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "engine/layer.h"
#include "engine/model_internal.h"
#include "engine/session_par.h"
#include "engine/ssm.h"
#include "model/weights_policy.h"
#include "parallel/par.h"
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
    facet_kv_type kv_type = o.kv_type == FACET_KV_AUTO ? facet_auto_kv(model->weights) : o.kv_type;
    if (model->device) { /* Vulkan: a bf16 cache's rounding has a shader, an f16 one not
                            yet. auto follows the weights as on the CPU (f32 -> f32, bf16 ->
                            bf16) and takes bf16 for f16 weights: the same 2 bytes per
                            element that `facet plan` and serve's KV budget count */
        if (o.kv_type == FACET_KV_AUTO && kv_type == FACET_KV_F16) kv_type = FACET_KV_BF16;
        if (kv_type == FACET_KV_F16) {
            free(s);
            return facet_err(err, FACET_E_UNSUPPORTED,
                             "REFUSED: kv_cache=f16 is not supported on vulkan (supported: "
                             "f32, bf16)");
        }
    }
    /* latent attention caches one row of kv_lora_rank + qk_rope_head_dim per position
     * and layer, no values (kv_cache.h) */
    int mla = f->kv_lora_rank > 0;
    facet_status st = facet_kv_cache_init(
        &s->kv, (int)f->num_hidden_layers, mla ? 1 : (int)f->num_key_value_heads,
        mla ? (int)(f->kv_lora_rank + f->qk_rope_head_dim) : (int)f->head_dim,
        mla ? NULL : f->layer_sliding, mla ? 0 : f->sliding_window, kv_type, o.n_seq_max,
        o.n_ctx, err);
    if (st != FACET_OK) {
        free(s);
        return st;
    }
    s->kv.latent = mla;
    /* Vulkan: the cache's keys and values in the device's memory, read in place */
    if (model->device) facet_device_kv_memory(model->device, &s->kv);
    /* recurrent layers keep a fixed state per sequence (kv_cache.h STATE slots) */
    for (int l = 0; l < (int)f->num_hidden_layers; l++)
        if (f->layer_ssm[l])
            facet_kv_cache_set_state(&s->kv, l, facet_mamba_state_floats(f) * sizeof(float));
        else if (f->ssm_parallel) /* Falcon-H1: a Mamba-2 state beside the layer's KV */
            facet_kv_cache_add_state(&s->kv, l, facet_mamba_state_floats(f) * sizeof(float));
    /* a pipeline stage holds only its own layers' cache; an FFN-only layer has none */
    for (int l = 0; l < (int)f->num_hidden_layers; l++)
        if (l < model->layer_first || l >= model->layer_end ||
            f->layer_block[l] == FACET_BLOCK_FFN)
            facet_kv_cache_set_absent(&s->kv, l);
    s->par = facet_par_active();
    if (s->par && facet_par_agreed()) { /* the ranks follow the job's one session */
        facet_kv_cache_free(&s->kv);
        free(s);
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "a parallel job (mpirun) runs one session; a second one (here: "
                         "embeddings beside generation) is not available");
    }
    /* the backend and each layer's kinds, once: forward.c only calls through them */
    st = model->device ? facet_backend_vulkan_create(model->device, &s->be, err)
                       : facet_backend_cpu_create(model->pool, &s->be, err);
    if (st != FACET_OK) {
        facet_session_free(s);
        return st;
    }
    int L = (int)f->num_hidden_layers;
    s->mixers = calloc((size_t)L ? (size_t)L : 1, sizeof *s->mixers);
    s->ffns = calloc((size_t)L ? (size_t)L : 1, sizeof *s->ffns);
    if (!s->mixers || !s->ffns) {
        facet_session_free(s);
        return facet_err(err, FACET_E_NOMEM, "session layer table");
    }
    for (int l = 0; l < L; l++) {
        s->mixers[l] = facet_layer_mixer(f, l);
        s->ffns[l] = facet_layer_ffn(f, l);
        if (!s->mixers[l] || !s->ffns[l]) {
            const char *what = s->mixers[l] ? "FFN" : "mixer";
            facet_session_free(s);
            return facet_err(err, FACET_E_UNSUPPORTED, "layer %d: no %s kind runs it", l, what);
        }
    }
    s->rope_long = calloc((size_t)o.n_seq_max, 1);
    s->seq_added = calloc((size_t)o.n_seq_max, sizeof(int));
    if (!s->rope_long || !s->seq_added) {
        facet_session_free(s);
        return facet_err(err, FACET_E_NOMEM, "session sequences");
    }
    if (s->par) { /* every rank's session is ready, or none runs */
        char first[512];
        int failed = facet_par_agree(1, "", first, sizeof first);
        if (failed) {
            s->par = 0; /* nobody follows it */
            facet_session_free(s);
            return facet_err(err, FACET_E_IO, "%s", first);
        }
    }
    *out = s;
    return FACET_OK;
}

/* The batch scratch as a table (shapes in model_internal.h), so allocation and release
 * name the same buffers: per buffer, elements per row and their size. */
typedef struct {
    void **buf;
    size_t per_row, elt;
    size_t fixed;                  /* elements beyond rows * per_row                   */
} scratch_buf;

enum { SCRATCH_BUFS = 39 }; /* the buffers and the NULL that ends them */

static void scratch_table(facet_session *s, scratch_buf *t) {
    const facet_facts *f = &s->model->facts;
    size_t H = (size_t)f->hidden_size, I = (size_t)f->intermediate_size;
    int moe = f->n_sparse_layers > 0;
    size_t E = moe ? (size_t)f->num_experts : 0, K = moe ? (size_t)f->num_experts_per_tok : 0;
    size_t HM = moe ? H : 0;
    if (moe && (size_t)f->moe_intermediate_size > I) I = (size_t)f->moe_intermediate_size;
    if (moe && (size_t)f->shared_expert_intermediate_size > I)
        I = (size_t)f->shared_expert_intermediate_size;
    size_t nh = (size_t)f->num_attention_heads;
    size_t qd = nh * (size_t)f->head_dim, kvd = (size_t)(f->num_key_value_heads * f->head_dim);
    int mla = f->kv_lora_rank > 0; /* q, k, att_out as mixer_mla.c uses them */
    size_t QL = mla ? (size_t)f->q_lora_rank : 0, MW = mla ? facet_mla_row_floats(f) : 0;
    /* one facet_attention_latent scratch per thread (the sizes matter only to allocate:
     * free_scratch runs before the backend is freed) */
    size_t MB = mla && s->be ? (size_t)s->be->ops->threads(s->be) * facet_mla_thread_floats(f) : 0;
    if (mla) {
        size_t mq = nh * (size_t)(f->qk_nope_head_dim + f->qk_rope_head_dim);
        size_t mo = nh * (size_t)f->v_head_dim;
        qd = mq > mo ? mq : mo;
        kvd = (size_t)(f->kv_lora_rank + f->qk_rope_head_dim);
    }
    size_t half = s->model->rope_dim / 2 ? (size_t)s->model->rope_dim / 2 : 1;
    size_t F = sizeof(float), N = sizeof(int);
    /* Mamba: xz 2 DI, xc DI, dbc R + 2N, dtin R, dt DI; Mamba-2 (model_internal.h): xz
     * the in_proj row (DI + CD + NH), xc CD, dbc y (DI), dtin dt (NH), no dt */
    int ssm = f->n_ssm_layers > 0 || f->ssm_parallel, v2 = f->ssm_version == 2;
    size_t DI = ssm ? (size_t)f->ssm_inner : 0, RDT = ssm ? (size_t)f->ssm_dt_rank : 0;
    size_t DBC = ssm ? RDT + 2 * (size_t)f->ssm_state_size : 0;
    size_t XZ = 2 * DI, XC = DI, DT = DI;
    if (ssm && v2) {
        size_t CD = DI + 2 * (size_t)(f->ssm_groups * f->ssm_state_size);
        XZ = DI + CD + (size_t)f->ssm_heads, XC = CD, DBC = DI, RDT = (size_t)f->ssm_heads;
        DT = 0;
    }
    /* the SSM work area is per thread (the backend exists before any scratch) */
    size_t thr = s->be ? (size_t)s->be->ops->threads(s->be) : 0;
    if (ssm && f->ssm_version == 3) /* LFM2's short conv: xz B, C, x (3 H), xc y (H) */
        XZ = 3 * DI, XC = DI, DBC = RDT = DT = 0;
    if (ssm && f->ssm_version == 4) { /* Qwen3-Next (mixer_gated_delta.c): xz qkvz, dtin ba,
                                       * xc q k v, dt exp(g) and beta, dbc o then y */
        size_t CD = DI + 2 * (size_t)(f->ssm_groups * f->ssm_state_size);
        XZ = CD + DI, XC = CD, DBC = DI, RDT = DT = 2 * (size_t)f->ssm_heads;
    }
    scratch_buf b[SCRATCH_BUFS] = {
        {(void **)&s->x, H, F, 0},           {(void **)&s->xn, H, F, 0},
        {(void **)&s->xp, f->parallel_residual || f->ssm_parallel ? H : 0, F, 0},
        {(void **)&s->q, qd, F, 0},
        {(void **)&s->q_gate, f->attn_output_gate ? 2 * qd : 0, F, 0},
        {(void **)&s->k, kvd, F, 0},
        {(void **)&s->v, kvd, F, 0},         {(void **)&s->att_out, qd, F, 0},
        {(void **)&s->gate, I, F, 0},        {(void **)&s->up, I, F, 0},
        {(void **)&s->pos, 1, N, 0},         {(void **)&s->chunk_order, 1, N, 0},
        {(void **)&s->chunk_group, 1, N, 0}, {(void **)&s->chunk_gid, 1, N, 0},
        {(void **)&s->group_row, 1, N, 0},   {(void **)&s->group_len, 1, N, 0},
        {(void **)&s->rope_cos, half, F, 0}, {(void **)&s->rope_sin, half, F, 0},
        {(void **)&s->rope_cos_local, half, F, 0}, {(void **)&s->rope_sin_local, half, F, 0},
        {(void **)&s->moe_logits, moe ? E + 1 : 0, F, 0},  {(void **)&s->moe_ids, K, N, 0},
        {(void **)&s->moe_w, K, F, 0},       {(void **)&s->moe_pair, K, N, 0},
        {(void **)&s->moe_start, 0, N, moe ? E + 1 : 0},
        {(void **)&s->moe_x, HM, F, 0},      {(void **)&s->moe_y, HM, F, 0},
        {(void **)&s->moe_in, HM, F, 0},
        {(void **)&s->ssm_xz, XZ, F, 0},     {(void **)&s->ssm_xc, XC, F, 0},
        {(void **)&s->ssm_dbc, DBC, F, 0},   {(void **)&s->ssm_dtin, RDT, F, 0},
        {(void **)&s->ssm_dt, DT, F, 0},
        {(void **)&s->ssm_work, 0, F, facet_ssm_work_floats(f) * (size_t)thr},
        {(void **)&s->mla_q_a, QL, F, 0},    {(void **)&s->mla_work, MW, F, 0},
        {(void **)&s->mla_blk, 0, F, mla && s->be ? MB : 0},
        {(void **)&s->par_x, s->par && facet_par_pp() > 1 && facet_par_stage() == 0 ? H : 0, F, 0},
        {NULL, 0, 0, 0},
    };
    memcpy(t, b, sizeof b);
}

/* The activations the layer loop and the attention, dense and MoE kinds hand to the
 * backend's operations live where the backend wants them (backend.h scratch_alloc: the
 * device's memory for Vulkan); the rest (positions, groups, router logits and choices,
 * the other kinds' work areas, which the host reads) on the heap. */
static int on_backend(const facet_session *s, void **buf) {
    return s->be && s->be->ops->scratch_alloc &&
           (buf == (void **)&s->x || buf == (void **)&s->xn || buf == (void **)&s->xp ||
            buf == (void **)&s->q || buf == (void **)&s->q_gate || buf == (void **)&s->k ||
            buf == (void **)&s->v || buf == (void **)&s->att_out || buf == (void **)&s->gate ||
            buf == (void **)&s->up || buf == (void **)&s->rope_cos ||
            buf == (void **)&s->rope_sin || buf == (void **)&s->rope_cos_local ||
            buf == (void **)&s->rope_sin_local || buf == (void **)&s->moe_x ||
            buf == (void **)&s->moe_y || buf == (void **)&s->moe_in);
}

static void free_scratch(facet_session *s) {
    scratch_buf t[SCRATCH_BUFS];
    scratch_table(s, t);
    for (scratch_buf *b = t; b->buf; b++) {
        if (on_backend(s, b->buf)) s->be->ops->scratch_free(s->be, *b->buf);
        else free(*b->buf);
        *b->buf = NULL;
    }
    s->scratch_rows = 0;
}

void facet_session_free(facet_session *s) {
    if (!s) return;
    if (s->par && facet_par_rank() == 0) facet_session_par_end(s);
    facet_kv_cache_free(&s->kv);
    free(s->rope_long);
    free(s->seq_added);
    free_scratch(s); /* before the backend: its table asks the thread count */
    if (s->be) s->be->ops->free(s->be);
    s->be = NULL;
    free(s->mixers);
    free(s->ffns);
    free(s);
}

facet_status facet_seq_reset(facet_session *s, int seq, facet_error *err) {
    if (s->par && facet_par_rank() == 0) {
        facet_status pst = facet_session_par_op(s, FACET_PAR_RESET, seq, 0, 0, err);
        if (pst != FACET_OK) return pst;
    }
    if (seq < 0 || seq >= s->n_seq_max)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "sequence id %d out of range [0, %d)", seq,
                         s->n_seq_max);
    facet_kv_cache_reset(&s->kv, seq);
    return FACET_OK;
}

facet_status facet_seq_release(facet_session *s, int seq, facet_error *err) {
    if (s->par && facet_par_rank() == 0) {
        facet_status pst = facet_session_par_op(s, FACET_PAR_RELEASE, seq, 0, 0, err);
        if (pst != FACET_OK) return pst;
    }
    if (seq < 0 || seq >= s->n_seq_max)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "sequence id %d out of range [0, %d)", seq,
                         s->n_seq_max);
    facet_kv_cache_release(&s->kv, seq);
    return FACET_OK;
}

facet_status facet_seq_truncate(facet_session *s, int seq, int n_keep, facet_error *err) {
    if (s->par && facet_par_rank() == 0) {
        facet_status pst = facet_session_par_op(s, FACET_PAR_TRUNCATE, seq, n_keep, 0, err);
        if (pst != FACET_OK) return pst;
    }
    if (seq < 0 || seq >= s->n_seq_max)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "sequence id %d out of range [0, %d)", seq,
                         s->n_seq_max);
    int len = s->kv.seqs[seq].len;
    if (n_keep < 0 || n_keep > len)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "cannot keep %d tokens of sequence %d, which holds %d", n_keep, seq, len);
    /* a ring row is overwritten only once the sequence has wrapped around it */
    if (n_keep < len && s->kv.ring_cap > 0 && len > s->kv.ring_cap)
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "sequence %d cannot be cut back to %d of its %d tokens: its "
                         "sliding-window layers keep only the last %d positions",
                         seq, n_keep, len, s->kv.ring_cap);
    /* a recurrent state holds every token so far: it can only start again from zero */
    if (n_keep < len && s->kv.n_state_layers > 0) {
        if (n_keep > 0)
            return facet_err(err, FACET_E_UNSUPPORTED,
                             "sequence %d cannot be cut back to %d of its %d tokens: its "
                             "recurrent layers keep a state of every token, not positions",
                             seq, n_keep, len);
        facet_kv_cache_reset(&s->kv, seq);
    }
    s->kv.seqs[seq].len = n_keep;
    return FACET_OK;
}

facet_status facet_seq_copy(facet_session *s, int src, int dst, int n, facet_error *err) {
    if (s->par && facet_par_rank() == 0) {
        facet_status pst = facet_session_par_op(s, FACET_PAR_COPY, src, dst, n, err);
        if (pst != FACET_OK) return pst;
    }
    if (src < 0 || src >= s->n_seq_max || dst < 0 || dst >= s->n_seq_max || src == dst)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "cannot copy sequence %d into sequence %d (two distinct ids in [0, "
                         "%d) expected)", src, dst, s->n_seq_max);
    int len = s->kv.seqs[src].len;
    if (n < 0 || n > len)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "cannot copy %d tokens of sequence %d, which holds %d", n, src, len);
    if (n > 0 && s->kv.ring_cap > 0 && len > s->kv.ring_cap)
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "sequence %d's first %d tokens cannot be copied: its sliding-window "
                         "layers keep only the last %d positions", src, n, s->kv.ring_cap);
    if (n > 0 && n < len && s->kv.n_state_layers > 0)
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "sequence %d's first %d tokens cannot be copied: its recurrent layers "
                         "keep a state of all its %d tokens, not positions", src, n, len);
    return facet_kv_cache_copy(&s->kv, src, dst, n, err);
}

int facet_seq_length(const facet_session *s, int seq) {
    if (seq < 0 || seq >= s->n_seq_max) return -1;
    return s->kv.seqs[seq].len;
}

int facet_session_n_ctx(const facet_session *s) { return s->n_ctx; }

facet_kv_type facet_session_kv_type(const facet_session *s) { return s->kv.type; }

facet_status facet_session_scratch(facet_session *s, int rows, facet_error *err) {
    if (rows <= s->scratch_rows) return FACET_OK;
    free_scratch(s);
    scratch_buf t[SCRATCH_BUFS];
    scratch_table(s, t);
    for (scratch_buf *b = t; b->buf; b++) {
        size_t bytes = ((size_t)rows * b->per_row + b->fixed) * b->elt;
        *b->buf = !bytes ? NULL
                  : on_backend(s, b->buf) ? s->be->ops->scratch_alloc(s->be, bytes)
                                          : malloc(bytes);
        if (bytes && !*b->buf) {
            free_scratch(s);
            return facet_err(err, FACET_E_NOMEM, "batch scratch for %d rows", rows);
        }
    }
    s->scratch_rows = rows;
    return FACET_OK;
}
