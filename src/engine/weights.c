/*
 * weights.c — read every tensor the facts call for, check its shape, convert to
 * float32. Tensor names are the Hugging Face ones (model.layers.N.self_attn.q_proj...).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model_internal.h"
#include "io/safetensors.h"
#include "util/error.h"

/* Load tensor `name` that must have shape (d0) or (d0, d1) (d1 = 0 for 1-D). */
static facet_status load_tensor(const st_checkpoint *ck, const char *name, int64_t d0, int64_t d1,
                                float **out, facet_error *err) {
    *out = NULL;
    const st_tensor *t = st_checkpoint_find(ck, name);
    if (!t) return facet_err(err, FACET_E_NOT_FOUND, "checkpoint: tensor '%s' is missing", name);
    int want_ndim = d1 ? 2 : 1;
    if (t->ndim != want_ndim || t->shape[0] != d0 || (d1 && t->shape[1] != d1)) {
        char got[128] = "", want[64];
        size_t off = 0;
        for (int i = 0; i < t->ndim && off < sizeof got - 24; i++)
            off += (size_t)snprintf(got + off, sizeof got - off, "%s%lld", i ? ", " : "",
                                    (long long)t->shape[i]);
        if (d1)
            snprintf(want, sizeof want, "[%lld, %lld]", (long long)d0, (long long)d1);
        else
            snprintf(want, sizeof want, "[%lld]", (long long)d0);
        return facet_err(err, FACET_E_FORMAT,
                         "checkpoint: tensor '%s' has shape [%s], expected %s from config.json",
                         name, got, want);
    }
    size_t n = (size_t)st_tensor_numel(t);
    float *buf = malloc(n * sizeof(float));
    if (!buf) return facet_err(err, FACET_E_NOMEM, "cannot allocate %zu floats for '%s'", n, name);
    facet_status st = st_tensor_to_f32(t, buf, err);
    if (st != FACET_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    return FACET_OK;
}

/* LOAD also counts the run-time bytes of every tensor into w->bytes */
#define LOAD(ptr, d0, d1)                                                   \
    do {                                                                    \
        facet_status s_ = load_tensor(ck, name, (d0), (d1), &(ptr), err);   \
        if (s_ != FACET_OK) return s_;                                      \
        w->bytes += (uint64_t)(d0) * (uint64_t)((d1) ? (d1) : 1) * sizeof(float); \
    } while (0)
/* a weight matrix: float32 now, converted to the run-time format by to_format() */
#define LOADM(wt, d0, d1)                                                   \
    do {                                                                    \
        float *f_;                                                          \
        facet_status s_ = load_tensor(ck, name, (d0), (d1), &f_, err);      \
        if (s_ != FACET_OK) return s_;                                      \
        (wt).format = FACET_WF_F32;                                         \
        (wt).rows = (int)(d0);                                              \
        (wt).cols = (int)(d1);                                              \
        (wt).data = f_;                                                     \
        (wt).scales = NULL;                                                 \
        s_ = facet_wtensor_convert(&(wt), format, err);                     \
        if (s_ != FACET_OK) return s_;                                      \
        w->bytes += facet_wtensor_bytes(&(wt));                             \
    } while (0)
#define NAME(...) snprintf(name, sizeof name, __VA_ARGS__)

static void facet_wtensor_free(facet_wtensor *t) {
    free(t->data);
    free(t->scales);
    t->data = NULL;
    t->scales = NULL;
}

/* Make a float32 facet_wtensor of rows [r0, r0 + rows) of a loaded [*, cols] matrix. */
static facet_status slice_rows(const float *src, int r0, int rows, int cols, facet_wformat format,
                               facet_wtensor *out, facet_error *err) {
    float *d = malloc(sizeof(float) * (size_t)rows * (size_t)cols);
    if (!d) return facet_err(err, FACET_E_NOMEM, "cannot allocate a %d x %d slice", rows, cols);
    memcpy(d, src + (size_t)r0 * cols, sizeof(float) * (size_t)rows * (size_t)cols);
    out->format = FACET_WF_F32;
    out->rows = rows;
    out->cols = cols;
    out->data = d;
    out->scales = NULL;
    return facet_wtensor_convert(out, format, err);
}

/* The prefix of the decoder's tensors: "model." for *ForCausalLM checkpoints, longer
 * ones for multimodal wrappers whose text model is loaded alone. */
static const char *tensor_prefix(const st_checkpoint *ck) {
    static const char *prefixes[] = {"model.", "model.language_model.", "language_model.model."};
    char name[128];
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        snprintf(name, sizeof name, "%sembed_tokens.weight", prefixes[i]);
        if (st_checkpoint_find(ck, name)) return prefixes[i];
    }
    return "model.";
}

facet_status facet_weights_load(facet_model *m, const st_checkpoint *ck, facet_wformat format,
                                facet_error *err) {
    const facet_facts *f = &m->facts;
    facet_weights *w = &m->w;
    char name[256];
    int64_t H = f->hidden_size, I = f->intermediate_size, V = f->vocab_size;
    int64_t q_dim = f->num_attention_heads * f->head_dim;
    int64_t kv_dim = f->num_key_value_heads * f->head_dim;
    const char *P = tensor_prefix(ck);

    w->layers = calloc((size_t)f->num_hidden_layers, sizeof *w->layers);
    if (!w->layers) return facet_err(err, FACET_E_NOMEM, "layer table");

    NAME("%sembed_tokens.weight", P);
    LOADM(w->embed_tokens, V, H);
    for (int64_t l = 0; l < f->num_hidden_layers; l++) {
        facet_layer_weights *L = &w->layers[l];
        long long li = (long long)l;
        if (f->pre_norms) {
            NAME("%slayers.%lld.input_layernorm.weight", P, li);
            LOAD(L->input_layernorm, H, 0);
        }
        if (f->fused_qkv) { /* Phi-3: rows are q, then k, then v */
            float *fused;
            NAME("%slayers.%lld.self_attn.qkv_proj.weight", P, li);
            facet_status s_ = load_tensor(ck, name, q_dim + 2 * kv_dim, H, &fused, err);
            if (s_ == FACET_OK) s_ = slice_rows(fused, 0, (int)q_dim, (int)H, format, &L->q_proj, err);
            if (s_ == FACET_OK)
                s_ = slice_rows(fused, (int)q_dim, (int)kv_dim, (int)H, format, &L->k_proj, err);
            if (s_ == FACET_OK)
                s_ = slice_rows(fused, (int)(q_dim + kv_dim), (int)kv_dim, (int)H, format,
                                &L->v_proj, err);
            free(fused);
            if (s_ != FACET_OK) return s_;
            w->bytes += facet_wtensor_bytes(&L->q_proj) + 2 * facet_wtensor_bytes(&L->k_proj);
        } else {
            NAME("%slayers.%lld.self_attn.q_proj.weight", P, li);
            LOADM(L->q_proj, q_dim, H);
            NAME("%slayers.%lld.self_attn.k_proj.weight", P, li);
            LOADM(L->k_proj, kv_dim, H);
            NAME("%slayers.%lld.self_attn.v_proj.weight", P, li);
            LOADM(L->v_proj, kv_dim, H);
        }
        if (f->qkv_bias) {
            NAME("%slayers.%lld.self_attn.q_proj.bias", P, li);
            LOAD(L->q_bias, q_dim, 0);
            NAME("%slayers.%lld.self_attn.k_proj.bias", P, li);
            LOAD(L->k_bias, kv_dim, 0);
            NAME("%slayers.%lld.self_attn.v_proj.bias", P, li);
            LOAD(L->v_bias, kv_dim, 0);
        }
        NAME("%slayers.%lld.self_attn.o_proj.weight", P, li);
        LOADM(L->o_proj, H, q_dim);
        if (f->o_bias) {
            NAME("%slayers.%lld.self_attn.o_proj.bias", P, li);
            LOAD(L->o_bias, H, 0);
        }
        if (f->qk_norm) {
            /* the tensor's length says its scope: one head, or the whole projection */
            NAME("%slayers.%lld.self_attn.q_norm.weight", P, li);
            const st_tensor *qn = st_checkpoint_find(ck, name);
            L->qk_norm_full = qn && qn->ndim == 1 && qn->shape[0] == q_dim && q_dim != f->head_dim;
            LOAD(L->q_norm, L->qk_norm_full ? q_dim : f->head_dim, 0);
            NAME("%slayers.%lld.self_attn.k_norm.weight", P, li);
            LOAD(L->k_norm, L->qk_norm_full ? kv_dim : f->head_dim, 0);
        }
        NAME("%slayers.%lld.post_attention_layernorm.weight", P, li);
        LOAD(L->post_attention_layernorm, H, 0);
        if (f->post_norms) {
            if (f->pre_norms) {
                NAME("%slayers.%lld.pre_feedforward_layernorm.weight", P, li);
                LOAD(L->pre_feedforward_layernorm, H, 0);
            }
            NAME("%slayers.%lld.post_feedforward_layernorm.weight", P, li);
            LOAD(L->post_feedforward_layernorm, H, 0);
        }
        if (f->fused_gate_up) { /* Phi-3: rows are gate, then up */
            float *fused;
            NAME("%slayers.%lld.mlp.gate_up_proj.weight", P, li);
            facet_status s_ = load_tensor(ck, name, 2 * I, H, &fused, err);
            if (s_ == FACET_OK) s_ = slice_rows(fused, 0, (int)I, (int)H, format, &L->gate_proj, err);
            if (s_ == FACET_OK) s_ = slice_rows(fused, (int)I, (int)I, (int)H, format, &L->up_proj, err);
            free(fused);
            if (s_ != FACET_OK) return s_;
            w->bytes += 2 * facet_wtensor_bytes(&L->gate_proj);
        } else {
            NAME("%slayers.%lld.mlp.gate_proj.weight", P, li);
            LOADM(L->gate_proj, I, H);
            NAME("%slayers.%lld.mlp.up_proj.weight", P, li);
            LOADM(L->up_proj, I, H);
        }
        NAME("%slayers.%lld.mlp.down_proj.weight", P, li);
        LOADM(L->down_proj, H, I);
    }
    NAME("%snorm.weight", P);
    LOAD(w->norm, H, 0);
    if (f->has_lm_head) {
        NAME("lm_head.weight");
        if (!st_checkpoint_find(ck, name)) NAME("language_model.lm_head.weight");
        LOADM(w->lm_head, V, H);
        w->lm_head_tied = 0;
    } else {
        w->lm_head = w->embed_tokens; /* same data: freed once */
        w->lm_head_tied = 1;
    }
    return FACET_OK;
}

void facet_weights_free(facet_model *m) {
    facet_weights *w = &m->w;
    if (w->layers) {
        for (int64_t l = 0; l < m->facts.num_hidden_layers; l++) {
            facet_layer_weights *L = &w->layers[l];
            float *ptrs[] = {L->input_layernorm, L->q_bias, L->k_bias, L->v_bias, L->o_bias,
                             L->q_norm, L->k_norm, L->post_attention_layernorm,
                             L->pre_feedforward_layernorm, L->post_feedforward_layernorm};
            for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) free(ptrs[i]);
            facet_wtensor *mats[] = {&L->q_proj, &L->k_proj, &L->v_proj, &L->o_proj,
                                     &L->gate_proj, &L->up_proj, &L->down_proj};
            for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++) facet_wtensor_free(mats[i]);
        }
        free(w->layers);
    }
    if (!w->lm_head_tied) facet_wtensor_free(&w->lm_head);
    facet_wtensor_free(&w->embed_tokens);
    free(w->norm);
    memset(w, 0, sizeof *w);
}
