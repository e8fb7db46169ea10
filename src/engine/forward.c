/*
 * forward.c — the decoder forward pass over a batch of (sequence, token) entries: the
 * embeddings, the rotary tables, the layer loop over declared kinds (layer.h: a mixer
 * and an FFN per layer, chosen from the facts when the session is created), the final
 * norm and the logits; every operation runs through the session's backend
 * (src/backend/backend.h). Follows transformers' decoder-only modeling code
 * (modeling_llama.py and the families that share its skeleton: qwen2, qwen3, mistral,
 * gemma, gemma2, gemma3, phi3, olmo2, granite). Per layer, with every variation a fact of
 * src/model/facts.h:
 *
 *   mixer block (mixer_attention.c)          ffn block (ffn_dense.c)
 *   h = RMSNorm_in(x)        [pre_norms]     h = RMSNorm(x)        [pre_norms]
 *   h = mixer(h)                             h = ffn(h)
 *   h = RMSNorm_post(h)      [post_norms]    h = RMSNorm_post(h)   [post_norms]
 *   x = x + h * residual_multiplier          x = x + h * residual_multiplier
 *
 *   x0 = embed_tokens[token] * embedding_multiplier;  logits = softcap(RMSNorm(x) W_lm^T
 *   / logits_scaling).  RMSNorm multiplies by (offset + w), offset = norm_weight_offset.
 *
 * No branch tests a model's name. All entries of the batch share one sweep over each
 * weight matrix (the backend's matmul). Long batches run in chunks of
 * FACET_FORWARD_CHUNK entries.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "engine/layer.h"
#include "engine/model_internal.h"
#include "engine/session_par.h"
#include "parallel/par.h"
#include "util/error.h"

/* Group the chunk's entries by sequence (position order kept): the attention kernel
 * runs a sequence's queries together, and a ring layer's view reads the chunk's rows. */
static void group_chunk(facet_session *s, const int32_t *seq_ids, int n) {
    int k = 0;
    s->n_groups = 0;
    s->groups_contiguous = 1;
    for (int r = 0; r < n; r++) s->chunk_group[r] = -1;
    for (int r = 0; r < n; r++) {
        if (s->chunk_group[r] >= 0) continue;
        int start = k;
        for (int q = r; q < n; q++)
            if (seq_ids[q] == seq_ids[r]) {
                s->chunk_group[q] = start;
                s->chunk_gid[q] = s->n_groups;
                s->chunk_order[k++] = q;
            }
        s->group_row[s->n_groups] = r;
        s->group_len[s->n_groups] = k - start;
        if (s->chunk_order[k - 1] != r + (k - start) - 1) s->groups_contiguous = 0;
        s->n_groups++;
    }
}

/* Run entries [0, n) (already validated; positions assigned in s->pos) through this
 * process's layers (all of them, or a pipeline stage's: the hidden states come from the
 * previous stage and go to the next, the last stage's back to stage 0). Writes the
 * final hidden states to s->x on stage 0 when `back` (a micro-batch's come back later:
 * forward_micro_batches). Errors: a parallel job's message lost. */
static facet_status forward_layers(facet_session *s, const int32_t *tokens,
                                   const int32_t *seq_ids, int n, int back, facet_error *err) {
    facet_model *m = s->model;
    const facet_facts *f = &m->facts;
    int H = (int)f->hidden_size, half = m->rope_dim / 2;
    size_t xbytes = sizeof(float) * (size_t)n * (size_t)H;
    int pipelined = s->par && facet_par_pp() > 1;
    int stage = facet_par_stage(), P = facet_par_pp(), T = facet_par_tp();
    int tr = facet_par_tp_rank();
    int tensor = s->par && T > 1;
    facet_status st = FACET_OK;

    facet_sync(s); /* the host writes the embeddings and the rotary tables */
    /* embeddings (Gemma: times sqrt(hidden_size) rounded to float32; Granite:
     * embedding_multiplier); a later stage receives the previous stage's output */
    if (m->stage_inner) {
        st = facet_par_recv(s->x, xbytes, (stage - 1) * T + tr, err);
        if (st != FACET_OK) return st;
    }
    float emb_mult = (float)f->embedding_multiplier;
    for (int r = 0; r < n && !m->stage_inner; r++) {
        float *x = s->x + (size_t)r * H;
        facet_wtensor_row(&m->w.embed_tokens, tokens[r], x);
        if (emb_mult != 1.0f)
            for (int i = 0; i < H; i++) x[i] *= emb_mult;
        if (f->pos_embed_learned) { /* GPT-2: + wpe[position] (xn as the row's scratch) */
            float *p = s->xn + (size_t)r * H;
            facet_wtensor_row(&m->w.pos_embed, s->pos[r], p);
            for (int i = 0; i < H; i++) x[i] += p[i];
        }
    }
    if (f->embed_norm && !m->stage_inner) /* BLOOM: word_embeddings_layernorm, every row */
        s->be->ops->layernorm_rows(s->be, s->x, s->x, m->w.embed_norm, m->w.embed_norm_bias, H,
                                   n, f->rms_norm_eps);
    /* rotary tables for each entry's position */
    for (int r = 0; r < n; r++) {
        const float *inv = s->rope_long[seq_ids[r]] ? m->inv_freq_long : m->inv_freq;
        facet_rope_cos_sin(m, inv, m->rope_attention_scale, s->pos[r],
                           s->rope_cos + (size_t)r * half, s->rope_sin + (size_t)r * half);
        if (m->inv_freq_local)
            facet_rope_cos_sin(m, m->inv_freq_local, 1.0f, s->pos[r],
                               s->rope_cos_local + (size_t)r * half,
                               s->rope_sin_local + (size_t)r * half);
    }
    group_chunk(s, seq_ids, n);
    s->seq_ids = seq_ids;
    for (int l = m->layer_first; l < m->layer_end; l++) {
        facet_for_row_ranges(s, l, n, facet_rows_in_norm);
        s->mixers[l]->forward(s, l, n); /* xn -> xn */
        /* tensor parallel: each rank's heads gave a partial sum of o_proj's output */
        if (tensor) facet_sync(s);
        if (tensor && (st = facet_par_allreduce_f32(s->xn, (size_t)n * H, err)) != FACET_OK)
            return st;
        facet_for_row_ranges(s, l, n, facet_rows_mixer_out);
        s->ffns[l]->forward(s, l, n);   /* xn -> xn */
        if (tensor) facet_sync(s);
        if (tensor && (st = facet_par_allreduce_f32(s->xn, (size_t)n * H, err)) != FACET_OK)
            return st;
        facet_for_row_ranges(s, l, n, facet_rows_ffn_out);
    }
    if (!pipelined) return FACET_OK;
    facet_sync(s);
    /* to the next stage; the last stage's output back to stage 0 for the logits */
    st = facet_par_send(s->x, xbytes, (stage + 1) % P * T + tr, err);
    if (st == FACET_OK && stage == 0 && back)
        st = facet_par_recv(s->x, xbytes, (P - 1) * T + tr, err);
    return st;
}

/* A pipeline's chunk of n entries as `mb` micro-batches (GPipe inside one step): rows
 * [n m / mb, n (m + 1) / mb) are micro-batch m, and every stage runs them in order, so
 * stage s computes micro-batch m while stage s + 1 computes m - 1. Positions are taken
 * per micro-batch, as chunks take them: a sequence cut between two micro-batches sees
 * its earlier rows in the KV cache, as in chunked prefill, and every row is computed
 * by the same kernels in the same order (bit-identical to the chunk run whole). Stage
 * 0 posts the receives of the last stage's outputs first (into s->par_x), so no stage
 * blocks sending to it while it computes, then copies them to s->x for the logits. */
static facet_status forward_micro_batches(facet_session *s, const int32_t *tokens,
                                          const int32_t *seq_ids, int n, int mb,
                                          facet_error *err) {
    size_t H = (size_t)s->model->facts.hidden_size;
    int stage = facet_par_stage(), P = facet_par_pp(), T = facet_par_tp();
    int from = (P - 1) * T + facet_par_tp_rank();
    facet_par_req req[FACET_PAR_MAX_MB];
    facet_status st = FACET_OK;
    int posted = 0;
    for (; stage == 0 && posted < mb && st == FACET_OK; posted++) {
        int r0 = n * posted / mb, r1 = n * (posted + 1) / mb;
        st = facet_par_irecv(s->par_x + (size_t)r0 * H, sizeof(float) * (size_t)(r1 - r0) * H,
                             from, &req[posted], err);
    }
    for (int m = 0; m < mb && st == FACET_OK; m++) {
        int r0 = n * m / mb, r1 = n * (m + 1) / mb;
        for (int r = r0; r < r1; r++) s->pos[r - r0] = s->kv.seqs[seq_ids[r]].len++;
        st = forward_layers(s, tokens + r0, seq_ids + r0, r1 - r0, 0, err);
    }
    /* on an error the job ends (the CLI aborts it): the receives are not waited for */
    for (int m = 0; m < posted && st == FACET_OK; m++) st = facet_par_wait(&req[m], err);
    if (st == FACET_OK && stage == 0) memcpy(s->x, s->par_x, sizeof(float) * (size_t)n * H);
    return st;
}

/* Final norm, lm_head, logits scaling and softcap for the entries that want logits;
 * `hidden`: the final norm's output alone, written to `logits` as rows of hidden_size. */
static void forward_logits(facet_session *s, const uint8_t *want, int n, float *logits,
                           int hidden) {
    facet_model *m = s->model;
    const facet_facts *f = &m->facts;
    int H = (int)f->hidden_size;
    size_t V = (size_t)f->vocab_size;
    int k = 0;
    float *dst = hidden ? logits : s->xn;
    for (int r = 0; r < n; r++) {
        if (want && !want[r]) continue;
        facet_norm_row_bias(s, dst + (size_t)k * H, s->x + (size_t)r * H, m->w.norm,
                            m->w.norm_bias);
        k++;
    }
    if (!k || hidden) return;
    /* logits: host memory, so the matmul completes before it returns on every backend */
    s->be->ops->matmul(s->be, logits, s->xn, &m->w.lm_head, m->w.lm_head_bias, k);
    float inv_scale = (float)(1.0 / f->logits_scaling);
    float cap = (float)f->final_logit_softcap;
    if (inv_scale != 1.0f || cap > 0)
        for (size_t i = 0; i < (size_t)k * V; i++) {
            float v = logits[i] * inv_scale;
            logits[i] = cap > 0 ? tanhf(v / cap) * cap : v;
        }
}

static facet_status forward_batch(facet_session *s, const facet_batch *b, float *logits,
                                  int hidden, facet_error *err) {
    facet_model *m = s->model;
    const facet_facts *f = &m->facts;
    if (!b || b->n_tokens < 0 || (b->n_tokens > 0 && (!b->tokens || !b->seq_ids)))
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "batch: missing tokens or sequence ids");
    /* a parallel job: rank 0 sends the batch to every rank, which runs it in step */
    if (s->par && facet_par_rank() == 0) {
        facet_status pst = facet_session_par_forward(s, b, hidden, err);
        if (pst != FACET_OK) return pst;
    }
    int n = b->n_tokens;
    /* validate everything and count each sequence's new tokens before applying anything */
    int *added = s->seq_added; /* session-owned: no allocation per step */
    memset(added, 0, sizeof(int) * (size_t)s->n_seq_max);
    facet_status st = FACET_OK;
    for (int i = 0; i < n && st == FACET_OK; i++) {
        int seq = b->seq_ids[i];
        if (seq < 0 || seq >= s->n_seq_max)
            st = facet_err(err, FACET_E_INVALID_ARGUMENT,
                           "batch entry %d: sequence id %d out of range [0, %d)", i, seq,
                           s->n_seq_max);
        else if (b->tokens[i] < 0 || b->tokens[i] >= f->vocab_size)
            st = facet_err(err, FACET_E_INVALID_ARGUMENT,
                           "batch entry %d: token id %d out of range [0, %lld)", i, b->tokens[i],
                           (long long)f->vocab_size);
        else
            added[seq]++;
    }
    for (int q = 0; q < s->n_seq_max && st == FACET_OK; q++)
        if (added[q] && f->pos_embed_learned &&
            s->kv.seqs[q].len + added[q] > f->max_position_embeddings)
            st = facet_err(err, FACET_E_CONTEXT,
                           "sequence %d: %d tokens + %d new would pass max_position_embeddings="
                           "%lld, the learned positions the model has", q, s->kv.seqs[q].len,
                           added[q], (long long)f->max_position_embeddings);
    for (int q = 0; q < s->n_seq_max && st == FACET_OK; q++)
        if (added[q] && s->kv.seqs[q].len + added[q] > s->n_ctx)
            st = facet_err(err, FACET_E_CONTEXT,
                           "sequence %d: %d tokens + %d new would exceed the context of %d tokens",
                           q, s->kv.seqs[q].len, added[q], s->n_ctx);
    for (int q = 0; q < s->n_seq_max && st == FACET_OK; q++) {
        if (!added[q]) continue;
        int seq_len = s->kv.seqs[q].len + added[q];
        st = facet_kv_cache_reserve(&s->kv, q, seq_len, err);
        /* longrope: this call's length picks the factors for all of its tokens, as
         * transformers' dynamic_rope_update does per forward call */
        s->rope_long[q] = m->inv_freq_long &&
                          seq_len > f->rope_original_max_position_embeddings;
    }
    if (st != FACET_OK) return st;
    st = facet_session_scratch(s, n < FACET_FORWARD_CHUNK ? n : FACET_FORWARD_CHUNK, err);
    if (st == FACET_OK) /* the backend's own scratch (attention) */
        st = s->be->ops->reserve(s->be, &s->kv, (int)f->num_attention_heads,
                                 n < FACET_FORWARD_CHUNK ? n : FACET_FORWARD_CHUNK, err);
    if (st != FACET_OK) return st;

    size_t V = hidden ? (size_t)f->hidden_size : (size_t)f->vocab_size;
    float *out = logits;
    for (int c0 = 0; c0 < n; c0 += FACET_FORWARD_CHUNK) {
        int cn = n - c0 < FACET_FORWARD_CHUNK ? n - c0 : FACET_FORWARD_CHUNK;
        const int32_t *seq_ids = b->seq_ids + c0;
        int mb = s->par && facet_par_pp() > 1 && s->par_mb > 1 ? s->par_mb : 1;
        if (mb > cn) mb = cn;
        if (mb > 1) {
            st = forward_micro_batches(s, b->tokens + c0, seq_ids, cn, mb, err);
        } else {
            /* positions: each sequence's next position, in batch order */
            for (int r = 0; r < cn; r++) s->pos[r] = s->kv.seqs[seq_ids[r]].len++;
            st = forward_layers(s, b->tokens + c0, seq_ids, cn, 1, err);
        }
        if (st != FACET_OK) return st;
        if (s->par) {
            int several = 0;
            for (int r = 1; r < cn && !several; r++) several = seq_ids[r] != seq_ids[0];
            facet_par_count_step(mb, several);
        }
        const uint8_t *want = b->want_logits ? b->want_logits + c0 : NULL;
        int k = 0;
        for (int r = 0; r < cn; r++) k += !want || want[r];
        if (k && out) {
            forward_logits(s, want, cn, out, hidden);
            out += (size_t)k * V;
        }
        /* a device backend's operations cannot return errors: it keeps the first */
        if (s->be->ops->status && (st = s->be->ops->status(s->be, err)) != FACET_OK) return st;
    }
    return FACET_OK;
}

facet_status facet_forward(facet_session *s, const facet_batch *b, float *logits,
                           facet_error *err) {
    return forward_batch(s, b, logits, 0, err);
}

facet_status facet_forward_hidden(facet_session *s, const facet_batch *b, float *hidden,
                                  facet_error *err) {
    return forward_batch(s, b, hidden, 1, err);
}
