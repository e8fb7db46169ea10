/*
 * weights.c — read every tensor the facts call for, check its shape, convert weight
 * matrices to the run-time format (vectors stay float32). Tensor names are the Hugging
 * Face ones (model.layers.N.self_attn.q_proj...). The same walk takes the tensors from a
 * weight cache instead when one is given (weights_cache.c decides), so the shape checks
 * and the order of tensors are one code path for both.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/weights_check.h"
#include "engine/weights_load.h"
#include "io/safetensors.h"
#include "util/error.h"

/* entry kinds of the weight cache */
enum { KIND_VECTOR = 0, KIND_MATRIX = 1 };

_Static_assert(sizeof(facet_wtensor) <= WCACHE_META_MAX,
               "facet_wtensor no longer fits a weight cache entry's meta bytes");

/* Check that tensor `name` exists with shape (d0) or (d0, d1) (d1 = 0 for 1-D). */
static facet_status find_tensor(const st_checkpoint *ck, const char *name, int64_t d0, int64_t d1,
                                const st_tensor **out, facet_error *err) {
    const st_tensor *t = *out = st_checkpoint_find(ck, name);
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
    return FACET_OK;
}

/* Read tensor `t` as a malloc'd float32 array. */
static facet_status read_f32(const st_tensor *t, float **out, facet_error *err) {
    size_t n = (size_t)st_tensor_numel(t);
    float *buf = malloc(n * sizeof(float));
    if (!buf) return facet_err(err, FACET_E_NOMEM, "cannot allocate %zu floats for '%s'", n, t->name);
    facet_status st = st_tensor_to_f32(t, buf, err);
    if (st != FACET_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    return FACET_OK;
}

static void progress(wload *ld, const st_tensor *t) {
    ld->done += t->end - t->begin;
    if (ld->progress) ld->progress(ld->user, "converting weights", ld->done, ld->total);
}

/* Note a converted tensor for the cache writer (recording on). A tensor the cache cannot
 * hold turns recording off with the reason in ld->uncacheable. */
static facet_status record(wload *ld, const char *name, int kind, const facet_wtensor *meta,
                           const void *data, uint64_t bytes, facet_error *err) {
    if (!ld->recording) return FACET_OK;
    if (strlen(name) >= WCACHE_NAME_MAX || (meta && meta->scales)) {
        snprintf(ld->uncacheable, sizeof ld->uncacheable, "tensor '%s' %s", name,
                 meta && meta->scales ? "keeps separate scales" : "has too long a name");
        ld->recording = 0;
        return FACET_OK;
    }
    if (ld->n_rec == ld->cap_rec) {
        size_t cap = ld->cap_rec ? 2 * ld->cap_rec : 256;
        wload_rec *r = realloc(ld->rec, cap * sizeof *r);
        if (!r) return facet_err(err, FACET_E_NOMEM, "weight cache list of %zu tensors", cap);
        ld->rec = r;
        ld->cap_rec = cap;
    }
    wload_rec *r = &ld->rec[ld->n_rec++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->kind = (uint32_t)kind;
    if (meta) {
        r->meta = *meta;
        r->meta.data = NULL;
        r->meta.scales = NULL;
    }
    r->data = data;
    r->bytes = bytes;
    return FACET_OK;
}

/* The next cache entry, which must be `name` of `kind`. */
static facet_status next_entry(wload *ld, const char *name, int kind, const wcache_entry **out,
                               facet_error *err) {
    if (ld->next >= ld->cache->n_entries)
        return facet_err(err, FACET_E_FORMAT, "holds %u tensors, the checkpoint needs '%s' too",
                         ld->cache->n_entries, name);
    const wcache_entry *e = &ld->cache->entries[ld->next++];
    if (strcmp(e->name, name) || e->kind != (uint32_t)kind)
        return facet_err(err, FACET_E_FORMAT, "entry %zu is '%s', expected '%s'", ld->next - 1,
                         e->name, name);
    *out = e;
    return FACET_OK;
}

/* A float32 vector of n elements (norm weights, biases). */
static facet_status load_vec(wload *ld, const char *name, int64_t n, float **out, uint64_t *bytes,
                             facet_error *err) {
    const st_tensor *t;
    facet_status st = find_tensor(ld->ck, name, n, 0, &t, err);
    if (st != FACET_OK || ld->check_only) return st;
    if (ld->cache) {
        const wcache_entry *e = NULL;
        if ((st = next_entry(ld, name, KIND_VECTOR, &e, err)) != FACET_OK) return st;
        if (e->bytes != (uint64_t)n * sizeof(float))
            return facet_err(err, FACET_E_FORMAT, "'%s' holds %llu bytes, expected %llu", name,
                             (unsigned long long)e->bytes, (unsigned long long)n * sizeof(float));
        *out = (float *)(uintptr_t)e->data; /* read-only mapping: the engine never writes */
    } else {
        if ((st = read_f32(t, out, err)) != FACET_OK) return st;
        if ((st = record(ld, name, KIND_VECTOR, NULL, *out, (uint64_t)n * sizeof(float), err)))
            return st;
    }
    *bytes += (uint64_t)n * sizeof(float);
    progress(ld, t);
    return FACET_OK;
}

/* Take a matrix from the cache: the entry's meta is the tensor struct as the writer's
 * build left it (pointers cleared), the data lies in the mapping. */
static facet_status cached_mat(wload *ld, const char *name, int64_t rows, int64_t cols,
                               facet_wtensor *wt, facet_error *err) {
    const wcache_entry *e = NULL;
    facet_status st = next_entry(ld, name, KIND_MATRIX, &e, err);
    if (st != FACET_OK) return st;
    if (e->meta_len != sizeof *wt)
        return facet_err(err, FACET_E_FORMAT, "'%s' has %u meta bytes, expected %zu", name,
                         e->meta_len, sizeof *wt);
    memcpy(wt, e->meta, sizeof *wt);
    wt->data = (void *)(uintptr_t)e->data;
    wt->scales = NULL;
    if (wt->format != ld->format || wt->rows != rows || wt->cols != cols ||
        facet_wtensor_bytes(wt) != e->bytes) {
        facet_status s = facet_err(err, FACET_E_FORMAT,
                                   "'%s' is a [%d, %d] %s matrix of %llu bytes, expected [%lld, %lld] %s",
                                   name, wt->rows, wt->cols, facet_wformat_name(wt->format),
                                   (unsigned long long)e->bytes, (long long)rows, (long long)cols,
                                   facet_wformat_name(ld->format));
        memset(wt, 0, sizeof *wt);
        return s;
    }
    return FACET_OK;
}

/* Convert a row-major float32 [rows, cols] buffer (taken over) into a run-time matrix. */
static facet_status convert_mat(wload *ld, const char *name, float *data, int64_t rows,
                                int64_t cols, facet_wtensor *wt, facet_error *err) {
    wt->format = FACET_WF_F32;
    wt->rows = (int)rows;
    wt->cols = (int)cols;
    wt->data = data;
    wt->scales = NULL;
    facet_status st = facet_wtensor_convert(wt, ld->format, err);
    if (st != FACET_OK) return st;
    return record(ld, name, KIND_MATRIX, wt, wt->data, facet_wtensor_bytes(wt), err);
}

/* A weight matrix of shape (rows, cols) in the run-time format. */
static facet_status load_mat(wload *ld, const char *name, int64_t rows, int64_t cols,
                             facet_wtensor *wt, uint64_t *bytes, facet_error *err) {
    const st_tensor *t;
    facet_status st = find_tensor(ld->ck, name, rows, cols, &t, err);
    if (st != FACET_OK || ld->check_only) return st;
    if (ld->cache) {
        st = cached_mat(ld, name, rows, cols, wt, err);
    } else {
        float *f = NULL;
        if ((st = read_f32(t, &f, err)) != FACET_OK) return st;
        st = convert_mat(ld, name, f, rows, cols, wt, err);
    }
    if (st != FACET_OK) return st;
    *bytes += facet_wtensor_bytes(wt);
    progress(ld, t);
    return FACET_OK;
}

/* A fused matrix (Phi-3's qkv_proj, gate_up_proj) split by rows into n parts of
 * parts[i] rows each, every part a matrix of its own ("NAME[r0:r1]" in the cache). */
static facet_status load_split(wload *ld, const char *name, const int64_t *parts, int n, int64_t cols,
                               facet_wtensor **out, uint64_t *bytes, facet_error *err) {
    int64_t rows = 0;
    for (int i = 0; i < n; i++) rows += parts[i];
    const st_tensor *t;
    facet_status st = find_tensor(ld->ck, name, rows, cols, &t, err);
    if (st != FACET_OK || ld->check_only) return st;
    float *fused = NULL;
    if (!ld->cache && (st = read_f32(t, &fused, err)) != FACET_OK) return st;
    int64_t r0 = 0;
    for (int i = 0; i < n && st == FACET_OK; i++) {
        char part[300];
        snprintf(part, sizeof part, "%s[%lld:%lld]", name, (long long)r0, (long long)(r0 + parts[i]));
        if (ld->cache) {
            st = cached_mat(ld, part, parts[i], cols, out[i], err);
        } else {
            size_t count = (size_t)parts[i] * (size_t)cols;
            float *d = malloc(sizeof(float) * count);
            if (!d) st = facet_err(err, FACET_E_NOMEM, "cannot allocate a slice of '%s'", name);
            else {
                memcpy(d, fused + (size_t)r0 * (size_t)cols, sizeof(float) * count);
                st = convert_mat(ld, part, d, parts[i], cols, out[i], err);
            }
        }
        if (st == FACET_OK) *bytes += facet_wtensor_bytes(out[i]);
        r0 += parts[i];
    }
    free(fused);
    if (st == FACET_OK) progress(ld, t);
    return st;
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

#define NAME(...) snprintf(name, sizeof name, __VA_ARGS__)
#define TRY(call)                                                           \
    do {                                                                    \
        facet_status s_ = (call);                                           \
        if (s_ != FACET_OK) return s_;                                      \
    } while (0)
/* a float32 vector / a run-time matrix, counted into w->bytes */
#define VEC(ptr, n) TRY(load_vec(ld, name, (n), &(ptr), &w->bytes, err))
#define MAT(wt, rows, cols) TRY(load_mat(ld, name, (rows), (cols), &(wt), &w->bytes, err))

facet_status facet_weights_walk(facet_model *m, wload *ld, facet_error *err) {
    const facet_facts *f = &m->facts;
    facet_weights *w = &m->w;
    char name[256];
    int64_t H = f->hidden_size, I = f->intermediate_size, V = f->vocab_size;
    int64_t q_dim = f->num_attention_heads * f->head_dim;
    int64_t kv_dim = f->num_key_value_heads * f->head_dim;
    const char *P = tensor_prefix(ld->ck);

    w->layers = calloc((size_t)f->num_hidden_layers, sizeof *w->layers);
    if (!w->layers) return facet_err(err, FACET_E_NOMEM, "layer table");

    NAME("%sembed_tokens.weight", P);
    MAT(w->embed_tokens, V, H);
    for (int64_t l = 0; l < f->num_hidden_layers; l++) {
        facet_layer_weights *L = &w->layers[l];
        long long li = (long long)l;
        if (f->pre_norms) {
            NAME("%slayers.%lld.input_layernorm.weight", P, li);
            VEC(L->input_layernorm, H);
        }
        if (f->fused_qkv) { /* Phi-3: rows are q, then k, then v */
            NAME("%slayers.%lld.self_attn.qkv_proj.weight", P, li);
            int64_t parts[] = {q_dim, kv_dim, kv_dim};
            facet_wtensor *outs[] = {&L->q_proj, &L->k_proj, &L->v_proj};
            TRY(load_split(ld, name, parts, 3, H, outs, &w->bytes, err));
        } else {
            NAME("%slayers.%lld.self_attn.q_proj.weight", P, li);
            MAT(L->q_proj, q_dim, H);
            NAME("%slayers.%lld.self_attn.k_proj.weight", P, li);
            MAT(L->k_proj, kv_dim, H);
            NAME("%slayers.%lld.self_attn.v_proj.weight", P, li);
            MAT(L->v_proj, kv_dim, H);
        }
        if (f->qkv_bias) {
            NAME("%slayers.%lld.self_attn.q_proj.bias", P, li);
            VEC(L->q_bias, q_dim);
            NAME("%slayers.%lld.self_attn.k_proj.bias", P, li);
            VEC(L->k_bias, kv_dim);
            NAME("%slayers.%lld.self_attn.v_proj.bias", P, li);
            VEC(L->v_bias, kv_dim);
        }
        NAME("%slayers.%lld.self_attn.o_proj.weight", P, li);
        MAT(L->o_proj, H, q_dim);
        if (f->o_bias) {
            NAME("%slayers.%lld.self_attn.o_proj.bias", P, li);
            VEC(L->o_bias, H);
        }
        if (f->qk_norm) {
            /* the tensor's length says its scope: one head, or the whole projection */
            NAME("%slayers.%lld.self_attn.q_norm.weight", P, li);
            const st_tensor *qn = st_checkpoint_find(ld->ck, name);
            L->qk_norm_full = qn && qn->ndim == 1 && qn->shape[0] == q_dim && q_dim != f->head_dim;
            VEC(L->q_norm, L->qk_norm_full ? q_dim : f->head_dim);
            NAME("%slayers.%lld.self_attn.k_norm.weight", P, li);
            VEC(L->k_norm, L->qk_norm_full ? kv_dim : f->head_dim);
        }
        NAME("%slayers.%lld.post_attention_layernorm.weight", P, li);
        VEC(L->post_attention_layernorm, H);
        if (f->post_norms) {
            if (f->pre_norms) {
                NAME("%slayers.%lld.pre_feedforward_layernorm.weight", P, li);
                VEC(L->pre_feedforward_layernorm, H);
            }
            NAME("%slayers.%lld.post_feedforward_layernorm.weight", P, li);
            VEC(L->post_feedforward_layernorm, H);
        }
        if (f->fused_gate_up) { /* Phi-3: rows are gate, then up */
            NAME("%slayers.%lld.mlp.gate_up_proj.weight", P, li);
            int64_t parts[] = {I, I};
            facet_wtensor *outs[] = {&L->gate_proj, &L->up_proj};
            TRY(load_split(ld, name, parts, 2, H, outs, &w->bytes, err));
        } else {
            NAME("%slayers.%lld.mlp.gate_proj.weight", P, li);
            MAT(L->gate_proj, I, H);
            NAME("%slayers.%lld.mlp.up_proj.weight", P, li);
            MAT(L->up_proj, I, H);
        }
        NAME("%slayers.%lld.mlp.down_proj.weight", P, li);
        MAT(L->down_proj, H, I);
        if (f->mlp_bias) { /* Llama's mlp_bias: gate, up and down all carry a bias */
            NAME("%slayers.%lld.mlp.gate_proj.bias", P, li);
            VEC(L->gate_bias, I);
            NAME("%slayers.%lld.mlp.up_proj.bias", P, li);
            VEC(L->up_bias, I);
            NAME("%slayers.%lld.mlp.down_proj.bias", P, li);
            VEC(L->down_bias, H);
        }
    }
    NAME("%snorm.weight", P);
    VEC(w->norm, H);
    if (f->has_lm_head) {
        NAME("lm_head.weight");
        if (!st_checkpoint_find(ld->ck, name)) NAME("language_model.lm_head.weight");
        MAT(w->lm_head, V, H);
        w->lm_head_tied = 0;
    } else {
        w->lm_head = w->embed_tokens; /* same data: freed once */
        w->lm_head_tied = 1;
    }
    if (ld->cache && ld->next != ld->cache->n_entries)
        return facet_err(err, FACET_E_FORMAT, "holds %u tensors, the checkpoint %zu",
                         ld->cache->n_entries, ld->next);
    return FACET_OK;
}

facet_status facet_weights_check(const facet_facts *f, const st_checkpoint *ck, facet_error *err) {
    facet_model *m = calloc(1, sizeof *m);
    if (!m) return facet_err(err, FACET_E_NOMEM, "cannot allocate the tensor check");
    m->facts = *f;
    wload ld = {.ck = ck, .check_only = 1};
    facet_status st = facet_weights_walk(m, &ld, err);
    free(m->w.layers); /* a check walk fills no tensor */
    free(m);
    return st;
}

static void wtensor_free(facet_wtensor *t) {
    free(t->data);
    free(t->scales);
    t->data = NULL;
    t->scales = NULL;
}

void facet_weights_free(facet_model *m) {
    facet_weights *w = &m->w;
    if (w->cache) { /* every tensor lies in the cache's mapping */
        wcache_close(w->cache);
        free(w->cache);
        free(w->layers);
        memset(w, 0, sizeof *w);
        return;
    }
    if (w->layers) {
        for (int64_t l = 0; l < m->facts.num_hidden_layers; l++) {
            facet_layer_weights *L = &w->layers[l];
            float *ptrs[] = {L->input_layernorm, L->q_bias, L->k_bias, L->v_bias, L->o_bias,
                             L->q_norm, L->k_norm, L->post_attention_layernorm,
                             L->pre_feedforward_layernorm, L->post_feedforward_layernorm,
                             L->gate_bias, L->up_bias, L->down_bias};
            for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) free(ptrs[i]);
            facet_wtensor *mats[] = {&L->q_proj, &L->k_proj, &L->v_proj, &L->o_proj,
                                     &L->gate_proj, &L->up_proj, &L->down_proj};
            for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++) wtensor_free(mats[i]);
        }
        free(w->layers);
    }
    if (!w->lm_head_tied) wtensor_free(&w->lm_head);
    wtensor_free(&w->embed_tokens);
    free(w->norm);
    memset(w, 0, sizeof *w);
}
