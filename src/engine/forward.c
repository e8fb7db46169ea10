/*
 * forward.c — the decoder forward pass over a batch of (sequence, token) entries.
 *
 * Follows transformers' LlamaModel / Qwen2Model / Qwen3Model (modeling_llama.py):
 *   x = embed_tokens[token]
 *   per layer:  h = RMSNorm(x) ; q,k,v = h W^T (+ bias) ; [q_norm, k_norm per head]
 *               RoPE(q, k) at the entry's position ; store k, v in the sequence's cache
 *               attn = softmax(q k^T * scale + causal mask) v   (GQA: kv head = h / group)
 *               x += attn W_o^T (+ bias)
 *               h = RMSNorm(x) ; x += (act(h W_gate^T) * (h W_up^T)) W_down^T
 *   logits = RMSNorm(x) W_lm^T
 * Every branch is on a fact (qkv_bias, o_bias, qk_norm, act, ...), never on a model name.
 * All entries of the batch share one sweep over each weight matrix.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model_internal.h"
#include "kernels/cpu/kernels.h"
#include "util/error.h"

facet_status facet_seq_reserve(facet_session *s, int seq, int need, facet_error *err);
facet_status facet_session_scratch(facet_session *s, int rows, facet_error *err);

/* Largest number of entries run through the layers at once; longer batches (long
 * prompts) are processed in chunks of this size, which bounds the scratch memory. */
#define FORWARD_CHUNK 256

typedef struct {
    facet_session *s;
    const int32_t *seq_ids;
    int layer;
} attn_job;

/* One (entry, head) of causal attention over the entry's sequence cache. */
static void attn_task(void *ctx, int task, int thread) {
    const attn_job *j = ctx;
    facet_session *s = j->s;
    const facet_facts *f = &s->model->facts;
    int nh = (int)f->num_attention_heads, hd = (int)f->head_dim;
    int group = (int)(f->num_attention_heads / f->num_key_value_heads);
    int kvd = (int)(f->num_key_value_heads * hd);
    int r = task / nh, h = task % nh;
    int pos = s->pos[r];
    const facet_seq_cache *c = &s->seqs[j->seq_ids[r]];
    const float *q = s->q + (size_t)r * nh * hd + (size_t)h * hd;
    const float *K = c->k[j->layer] + (size_t)(h / group) * hd;
    const float *V = c->v[j->layer] + (size_t)(h / group) * hd;
    float *scores = s->scores + (size_t)thread * s->n_ctx;
    float scale = (float)f->attn_scale;
    int n = pos + 1; /* causal: positions 0..pos */
    for (int t = 0; t < n; t++) scores[t] = facet_dot_f32(q, K + (size_t)t * kvd, hd) * scale;
    facet_softmax(scores, n);
    float *out = s->att_out + (size_t)r * nh * hd + (size_t)h * hd;
    memset(out, 0, sizeof(float) * (size_t)hd);
    for (int t = 0; t < n; t++) facet_axpy_f32(out, scores[t], V + (size_t)t * kvd, hd);
}

/* Run entries [0, n) (already validated; positions assigned in s->pos). Writes the
 * final hidden states to s->x. */
static void forward_layers(facet_session *s, const int32_t *tokens, const int32_t *seq_ids,
                           int n) {
    facet_model *m = s->model;
    const facet_facts *f = &m->facts;
    facet_pool *pool = m->pool;
    int H = (int)f->hidden_size, I = (int)f->intermediate_size;
    int nh = (int)f->num_attention_heads, nkv = (int)f->num_key_value_heads;
    int hd = (int)f->head_dim;
    int qd = nh * hd, kvd = nkv * hd;
    int half = m->rope_dim / 2;
    float off = (float)f->norm_weight_offset;

    /* embeddings */
    for (int r = 0; r < n; r++)
        facet_wtensor_row(&m->w.embed_tokens, tokens[r], s->x + (size_t)r * H);
    /* rotary tables for each entry's position */
    for (int r = 0; r < n; r++)
        facet_rope_cos_sin(m, s->pos[r], s->rope_cos + (size_t)r * half,
                           s->rope_sin + (size_t)r * half);

    for (int l = 0; l < f->num_hidden_layers; l++) {
        const facet_layer_weights *L = &m->w.layers[l];

        /* attention block */
        for (int r = 0; r < n; r++)
            facet_rmsnorm(s->xn + (size_t)r * H, s->x + (size_t)r * H, L->input_layernorm, H,
                          f->rms_norm_eps, off);
        facet_matmul(pool, s->q, s->xn, &L->q_proj, L->q_bias, n);
        facet_matmul(pool, s->k, s->xn, &L->k_proj, L->k_bias, n);
        facet_matmul(pool, s->v, s->xn, &L->v_proj, L->v_bias, n);
        for (int r = 0; r < n; r++) {
            float *q = s->q + (size_t)r * qd, *k = s->k + (size_t)r * kvd;
            if (L->q_norm) { /* Qwen3: RMSNorm over each head, before RoPE */
                for (int h = 0; h < nh; h++)
                    facet_rmsnorm(q + h * hd, q + h * hd, L->q_norm, hd, f->rms_norm_eps, off);
                for (int h = 0; h < nkv; h++)
                    facet_rmsnorm(k + h * hd, k + h * hd, L->k_norm, hd, f->rms_norm_eps, off);
            }
            const float *cs = s->rope_cos + (size_t)r * half, *sn = s->rope_sin + (size_t)r * half;
            facet_rope_apply(q, nh, hd, m->rope_dim, cs, sn);
            facet_rope_apply(k, nkv, hd, m->rope_dim, cs, sn);
            facet_seq_cache *c = &s->seqs[seq_ids[r]];
            memcpy(c->k[l] + (size_t)s->pos[r] * kvd, k, sizeof(float) * (size_t)kvd);
            memcpy(c->v[l] + (size_t)s->pos[r] * kvd, s->v + (size_t)r * kvd,
                   sizeof(float) * (size_t)kvd);
        }
        attn_job aj = {s, seq_ids, l};
        facet_pool_run(pool, n * nh, attn_task, &aj);
        facet_matmul(pool, s->xn, s->att_out, &L->o_proj, L->o_bias, n);
        for (size_t i = 0; i < (size_t)n * H; i++) s->x[i] += s->xn[i];

        /* feed-forward block */
        for (int r = 0; r < n; r++)
            facet_rmsnorm(s->xn + (size_t)r * H, s->x + (size_t)r * H,
                          L->post_attention_layernorm, H, f->rms_norm_eps, off);
        facet_matmul(pool, s->gate, s->xn, &L->gate_proj, NULL, n);
        facet_matmul(pool, s->up, s->xn, &L->up_proj, NULL, n);
        facet_gated_act(s->gate, s->up, n * I, (int)f->act);
        facet_matmul(pool, s->xn, s->gate, &L->down_proj, NULL, n);
        for (size_t i = 0; i < (size_t)n * H; i++) s->x[i] += s->xn[i];
    }
}

/* Final norm and lm_head for the entries that want logits. */
static void forward_logits(facet_session *s, const uint8_t *want, int n, float *logits) {
    facet_model *m = s->model;
    const facet_facts *f = &m->facts;
    int H = (int)f->hidden_size;
    int k = 0;
    for (int r = 0; r < n; r++) {
        if (want && !want[r]) continue;
        facet_rmsnorm(s->xn + (size_t)k * H, s->x + (size_t)r * H, m->w.norm, H, f->rms_norm_eps,
                      (float)f->norm_weight_offset);
        k++;
    }
    if (k) facet_matmul(m->pool, logits, s->xn, &m->w.lm_head, NULL, k);
}

facet_status facet_forward(facet_session *s, const facet_batch *b, float *logits,
                           facet_error *err) {
    const facet_facts *f = &s->model->facts;
    if (!b || b->n_tokens < 0 || (b->n_tokens > 0 && (!b->tokens || !b->seq_ids)))
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "batch: missing tokens or sequence ids");
    int n = b->n_tokens;
    /* validate everything and count each sequence's new tokens before applying anything */
    int *added = calloc((size_t)s->n_seq_max, sizeof(int));
    if (!added) return facet_err(err, FACET_E_NOMEM, "batch bookkeeping");
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
        if (added[q] && s->seqs[q].len + added[q] > s->n_ctx)
            st = facet_err(err, FACET_E_CONTEXT,
                           "sequence %d: %d tokens + %d new would exceed the context of %d tokens",
                           q, s->seqs[q].len, added[q], s->n_ctx);
    for (int q = 0; q < s->n_seq_max && st == FACET_OK; q++)
        if (added[q]) st = facet_seq_reserve(s, q, s->seqs[q].len + added[q], err);
    free(added);
    if (st != FACET_OK) return st;
    st = facet_session_scratch(s, n < FORWARD_CHUNK ? n : FORWARD_CHUNK, err);
    if (st != FACET_OK) return st;

    size_t V = (size_t)f->vocab_size;
    float *out = logits;
    for (int c0 = 0; c0 < n; c0 += FORWARD_CHUNK) {
        int cn = n - c0 < FORWARD_CHUNK ? n - c0 : FORWARD_CHUNK;
        const int32_t *seq_ids = b->seq_ids + c0;
        /* positions: each sequence's next position, in batch order */
        for (int r = 0; r < cn; r++) {
            facet_seq_cache *c = &s->seqs[seq_ids[r]];
            s->pos[r] = c->len++;
        }
        forward_layers(s, b->tokens + c0, seq_ids, cn);
        const uint8_t *want = b->want_logits ? b->want_logits + c0 : NULL;
        int k = 0;
        for (int r = 0; r < cn; r++) k += !want || want[r];
        if (k && out) {
            forward_logits(s, want, cn, out);
            out += (size_t)k * V;
        }
    }
    return FACET_OK;
}
