/*
 * gguf_checkpoint.c — GGUF tensor names to Hugging Face module paths (see
 * gguf_checkpoint.h).
 */
#include "model/gguf_checkpoint.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/quant.h"
#include "model/facts_gguf.h"
#include "model/weights_policy.h"
#include "model/tensors.h"
#include "util/error.h"

/* The Hugging Face name of GGUF tensor `g` into out, from the tensor table's GGUF
 * names (model/tensors.h); 0 when it has none, -1 when the loader does not take it (left
 * out of the view). */
static int hf_name(const char *g, const facet_facts *f, char *out, size_t cap) {
    if (!strcmp(g, "rope_freqs.weight")) return -1; /* the facts carry its scaling */
    long long layer = -1;
    const char *rest = g;
    if (!strncmp(g, "blk.", 4)) {
        char *end;
        layer = strtoll(g + 4, &end, 10);
        if (end == g + 4 || *end != '.' || layer < 0) return 0;
        rest = end + 1;
    }
    /* newer converters split attn_kv_b into attn_k_b (transposed per head) and attn_v_b:
     * the view joins them back into kv_b_proj under attn_k_b (join_kv_b) */
    if (layer >= 0 && !strcmp(rest, "attn_v_b.weight")) return -1;
    if (layer >= 0 && !strcmp(rest, "attn_k_b.weight")) {
        snprintf(out, cap, "model.layers.%lld.self_attn.kv_b_proj.weight", layer);
        return 2;
    }
    /* llama.cpp's LFM2 names: its short convolution under shortconv.*, its final norm
     * (Lfm2Model's embedding_norm) as token_embd_norm; Falcon-H1's FFN norm without a
     * .weight suffix */
    static const char *const alias[][2] = {{"shortconv.in_proj.weight", "ssm_in.weight"},
                                           {"shortconv.conv.weight", "ssm_conv1d.weight"},
                                           {"shortconv.out_proj.weight", "ssm_out.weight"},
                                           {"token_embd_norm.weight", "output_norm.weight"},
                                           /* Falcon-H1's pre_ff_layernorm: gguf-py maps its
                                            * full name, .weight included, to FFN_PRE_NORM */
                                           {"ffn_norm", "ffn_norm.weight"}};
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (!strcmp(rest, alias[i][0])) rest = alias[i][1];
    /* a Mamba block's norm (MambaBlock.norm, not a decoder layer's input_layernorm) */
    if (layer >= 0 && f->ssm_version && !f->ssm_ffn && !strcmp(rest, "attn_norm.weight")) {
        snprintf(out, cap, "model.layers.%lld.norm.weight", layer);
        return 1;
    }
    const facet_tensor_row *r = facet_tensor_from_gguf(rest, layer >= 0, f);
    if (!r) return 0;
    if (r->root == FACET_TR_LAYER) snprintf(out, cap, "model.layers.%lld.%s", layer, r->name);
    else if (r->root == FACET_TR_MODEL) snprintf(out, cap, "model.%s", r->name);
    else snprintf(out, cap, "%s", r->name);
    return 1;
}

/* The state-space tensors llama.cpp's converter reshapes or transforms. */
typedef enum { SSM_AS_IS, SSM_CONV, SSM_FLAT, SSM_A } ssm_form;

static ssm_form ssm_form_of(const char *name) {
    if (strncmp(name, "blk.", 4)) return SSM_AS_IS;
    const char *dot = strchr(name + 4, '.');
    if (!dot) return SSM_AS_IS;
    const char *k = dot + 1;
    if (!strcmp(k, "ssm_conv1d.weight") || !strcmp(k, "shortconv.conv.weight")) return SSM_CONV;
    if (!strcmp(k, "ssm_d") || !strcmp(k, "ssm_norm.weight")) return SSM_FLAT;
    if (!strcmp(k, "ssm_a")) return SSM_A;
    return SSM_AS_IS;
}

/* Give view tensor s (GGUF tensor t, float32) the Hugging Face form of its row:
 *   ssm_conv1d / shortconv.conv ne [K, C] (the converter squeezed it) -> [C, 1, K];
 *   ssm_d, ssm_norm (Mamba-2: [1, heads], [inner / groups, groups]) -> 1-D;
 *   ssm_a holds A = -exp(A_log) -> A_log = log(-A) (Mamba-2's [1, heads] made 1-D), a
 *   float32 copy into *owned (NULL when headers_only). A_log round-trips through exp and
 *   log: within an ulp or two of the checkpoint's. */
static facet_status ssm_reshape(const char *path, const gguf_tensor *t, st_tensor *s,
                                const facet_facts *f, int headers_only, void **owned,
                                facet_error *err) {
    *owned = NULL;
    uint64_t n = 1;
    for (int d = 0; d < t->n_dims; d++) n *= (uint64_t)t->ne[d];
    ssm_form form = ssm_form_of(t->name);
    if (form == SSM_CONV) {
        if (t->n_dims != 2)
            return facet_err(err, FACET_E_FORMAT,
                             "%s: tensor %s has %d dimensions, expected 2 (ne [kernel, "
                             "channels])",
                             path, t->name, t->n_dims);
        s->ndim = 3;
        s->shape[0] = t->ne[1];
        s->shape[1] = 1;
        s->shape[2] = t->ne[0];
        return FACET_OK;
    }
    int flat = form == SSM_FLAT || f->ssm_version == 2;
    if (flat) {
        s->ndim = 1;
        s->shape[0] = (int64_t)n;
    }
    if (form != SSM_A || headers_only) return FACET_OK;
    float *a = malloc((size_t)n * sizeof *a);
    if (!a) return facet_err(err, FACET_E_NOMEM, "%s: tensor %s: out of memory", path, t->name);
    memcpy(a, t->data, (size_t)n * sizeof *a);
    for (uint64_t i = 0; i < n; i++) {
        if (!(a[i] < 0) || !isfinite(a[i])) {
            float v = a[i];
            free(a);
            return facet_err(err, FACET_E_FORMAT,
                             "%s: tensor %s[%" PRIu64 "] is %g, expected A = -exp(A_log) < 0",
                             path, t->name, i, (double)v);
        }
        a[i] = logf(-a[i]);
    }
    s->data = (const uint8_t *)a;
    *owned = a;
    return FACET_OK;
}

int facet_gguf_tensor_known(const char *name) {
    facet_facts f;
    memset(&f, 0, sizeof f);
    char buf[160];
    return hf_name(name, &f, buf, sizeof buf) != 0;
}

uint64_t facet_gguf_tensor_run_bytes(const gguf_tensor *t, int *format) {
    *format = -1;
    char buf[160];
    facet_facts f;
    memset(&f, 0, sizeof f);
    int r = hf_name(t->name, &f, buf, sizeof buf);
    size_t len = strlen(t->name);
    if (r == 0) return 0;
    uint64_t n = 1;
    for (int d = 0; d < t->n_dims; d++) n *= (uint64_t)t->ne[d]; /* bounded by the reader */
    if (r == 2 || r < 0) { /* attn_k_b and attn_v_b: joined into a float32 kv_b_proj */
        if (r < 0 && (len < 16 || strcmp(t->name + len - 16, ".attn_v_b.weight"))) return 0;
        *format = (int)FACET_WF_F32;
        return n * 4;
    }
    int qt = facet_qtype_of_ggml(t->type);
    if (ssm_form_of(t->name) != SSM_AS_IS) return t->type == GGML_F32 ? n * 4 : 0; /* vectors */
    if (t->n_dims < 2) return qt >= 0 || t->type <= GGML_F16 || t->type == GGML_BF16 ? n * 4 : 0;
    if (qt >= 0) { /* in its blocks, or repacked exactly into facet's panels */
        facet_wformat w = facet_gguf_block_format((facet_wformat)(FACET_WF_GGUF + qt));
        *format = (int)w;
        return facet_wformat_qtype(w) >= 0 ? t->nbytes
                                           : facet_wtensor_packed_bytes(w, n / (uint64_t)t->ne[0],
                                                                        (uint64_t)t->ne[0]);
    }
    facet_wformat w = t->type == GGML_F16 ? FACET_WF_F16 : t->type == GGML_BF16 ? FACET_WF_BF16 : FACET_WF_F32;
    if (t->type != GGML_F32 && t->type != GGML_F16 && t->type != GGML_BF16) return 0;
    *format = (int)w;
    return facet_wtensor_packed_bytes(w, n / (uint64_t)t->ne[0], (uint64_t)t->ne[0]);
}

/* Tensor t's n elements as floats into out (F32 / F16 / BF16, or a block type's exact
 * dequantization, row by row of ne[0]). */
static facet_status to_f32(const gguf_tensor *t, float *out, facet_error *err) {
    uint64_t n = 1;
    for (int d = 0; d < t->n_dims; d++) n *= (uint64_t)t->ne[d];
    const uint8_t *src = t->data;
    int qt = facet_qtype_of_ggml(t->type);
    if (t->type == GGML_F32) {
        memcpy(out, src, n * 4);
    } else if (t->type == GGML_F16 || t->type == GGML_BF16) {
        for (uint64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            out[i] = t->type == GGML_F16 ? st_f16_to_f32(h) : st_bf16_to_f32(h);
        }
    } else if (qt >= 0) {
        const facet_qtype_traits *q = facet_qtype_traits_of((facet_qtype)qt);
        int64_t rows = (int64_t)(n / (uint64_t)t->ne[0]);
        size_t row_bytes = (size_t)(t->nbytes / (uint64_t)rows);
        for (int64_t r = 0; r < rows; r++) q->dequant_row(src + (size_t)r * row_bytes, out + r * t->ne[0], t->ne[0]);
    } else {
        return facet_err(err, FACET_E_UNSUPPORTED, "tensor %s has type %s; supported: %s",
                         t->name, gguf_type_name(t->type), facet_gguf_runnable_types());
    }
    return FACET_OK;
}

/* kv_b_proj [heads * (nope + v), kv_lora] (float32, into *out) from llama.cpp's split
 * blk.N.attn_k_b ne [nope, kv_lora, heads] (each head's key up-projection transposed)
 * and blk.N.attn_v_b ne [kv_lora, v, heads]: head h's rows are its nope key rows, then
 * its v value rows, as DeepseekV2Attention's kv_b_proj. headers_only: the shape alone. */
static facet_status join_kv_b(const gguf_model *m, const gguf_tensor *kb, int headers_only,
                              int64_t shape[2], float **out, facet_error *err) {
    char vname[96];
    size_t len = strlen(kb->name);
    snprintf(vname, sizeof vname, "%.*sattn_v_b.weight", (int)(len - strlen("attn_k_b.weight")),
             kb->name);
    const gguf_tensor *vb = gguf_model_find(m, vname);
    if (!vb || kb->n_dims != 3 || vb->n_dims != 3 || kb->ne[1] != vb->ne[0] ||
        kb->ne[2] != vb->ne[2])
        return facet_err(err, FACET_E_FORMAT,
                         "%s: tensor %s (ne [%" PRId64 ", %" PRId64 ", %" PRId64 "]) needs %s "
                         "beside it with ne [kv_lora_rank %" PRId64 ", v_head_dim, heads %" PRId64
                         "]%s",
                         m->files[0].path, kb->name, kb->ne[0], kb->ne[1], kb->n_dims > 2 ? kb->ne[2] : 1,
                         vname, kb->ne[1], kb->n_dims > 2 ? kb->ne[2] : 1, vb ? "" : " (missing)");
    int64_t nope = kb->ne[0], r = kb->ne[1], heads = kb->ne[2], v = vb->ne[1];
    shape[0] = heads * (nope + v);
    shape[1] = r;
    if (headers_only) return FACET_OK;
    float *k = malloc((size_t)(nope * r * heads) * sizeof *k);
    float *vv = malloc((size_t)(v * r * heads) * sizeof *vv);
    float *dst = malloc((size_t)(shape[0] * r) * sizeof *dst);
    facet_status st = !k || !vv || !dst ? facet_err(err, FACET_E_NOMEM, "tensor %s: out of memory", kb->name)
                                        : FACET_OK;
    if (st == FACET_OK) st = to_f32(kb, k, err);
    if (st == FACET_OK) st = to_f32(vb, vv, err);
    for (int64_t h = 0; st == FACET_OK && h < heads; h++) {
        float *rows = dst + h * (nope + v) * r;
        for (int64_t j = 0; j < nope; j++)
            for (int64_t c = 0; c < r; c++) rows[j * r + c] = k[(h * r + c) * nope + j];
        memcpy(rows + nope * r, vv + h * v * r, (size_t)(v * r) * sizeof *vv);
    }
    free(k);
    free(vv);
    if (st != FACET_OK) {
        free(dst);
        return st;
    }
    *out = dst;
    return FACET_OK;
}

static int cmp_st_name(const void *a, const void *b) {
    return strcmp((*(const st_tensor *const *)a)->name, (*(const st_tensor *const *)b)->name);
}

/* Copy matrix `t` (its data at src, rows of row_bytes: ne[0] elements, or their blocks)
 * undoing llama.cpp's permutation over `heads`; whole rows move, so a block type's rows
 * move as they are. */
static facet_status unpermute(const gguf_tensor *t, const uint8_t *src, int64_t heads,
                              size_t row_bytes, void **out, facet_error *err) {
    int64_t rows = t->ne[1];
    if (t->n_dims != 2 || heads <= 0 || rows % heads || (rows / heads) % 2)
        return facet_err(err, FACET_E_FORMAT,
                         "tensor %s: %" PRId64 " rows are not %" PRId64
                         " heads of an even head_dim; cannot undo llama.cpp's Q/K permutation",
                         t->name, rows, heads);
    uint8_t *dst = malloc((size_t)rows * row_bytes);
    if (!dst) return facet_err(err, FACET_E_NOMEM, "tensor %s: out of memory", t->name);
    int64_t d = rows / heads, half = d / 2;
    for (int64_t h = 0; h < heads; h++)
        for (int64_t i = 0; i < half; i++)
            for (int64_t j = 0; j < 2; j++)
                memcpy(dst + (size_t)(h * d + j * half + i) * row_bytes,
                       src + (size_t)(h * d + 2 * i + j) * row_bytes, row_bytes);
    *out = dst;
    return FACET_OK;
}

void facet_gguf_checkpoint_close(facet_gguf_checkpoint *c) {
    if (!c) return;
    st_checkpoint_close(&c->ck);
    for (size_t i = 0; i < c->n_owned; i++) free(c->owned[i]);
    free(c->owned);
    memset(c, 0, sizeof *c);
}

/* The view; headers_only: names, dtypes and shapes as the full view has them, data
 * left pointing into the mapping (no un-permuted copy). */
static facet_status open_view(const gguf_model *m, const facet_facts *f, int headers_only,
                              facet_gguf_checkpoint *out, facet_error *err) {
    memset(out, 0, sizeof *out);
    const gguf_file *g0 = &m->files[0];
    const gguf_kv *a = gguf_find_kv(g0, "general.architecture");
    char arch[64] = "";
    if (a && a->type == GGUF_T_STRING)
        snprintf(arch, sizeof arch, "%.*s", (int)(a->val_len > 63 ? 63 : a->val_len),
                 (const char *)a->val);
    int permute = facet_gguf_arch_permutes_qk(arch);
    st_checkpoint *ck = &out->ck;
    ck->files = calloc(1, sizeof *ck->files);
    st_file *sf = ck->files;
    if (sf) {
        ck->n_files = 1;
        sf->path = strdup(g0->path);
        sf->tensors = calloc(m->n_tensors ? m->n_tensors : 1, sizeof *sf->tensors);
    }
    ck->by_name = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *ck->by_name);
    out->owned = calloc(m->n_tensors ? m->n_tensors : 1, sizeof *out->owned);
    facet_status st = FACET_OK;
    if (!sf || !sf->path || !sf->tensors || !ck->by_name || !out->owned)
        st = facet_err(err, FACET_E_NOMEM, "%s: out of memory", g0->path);
    for (size_t i = 0; st == FACET_OK && i < m->n_tensors; i++) {
        const gguf_tensor *t = m->by_name[i];
        char name[160];
        int r = hf_name(t->name, f, name, sizeof name);
        if (r < 0) continue;
        if (r == 0) {
            st = facet_err(err, FACET_E_UNSUPPORTED,
                           "%s: tensor %s has no counterpart facet loads", g0->path, t->name);
            break;
        }
        if (r == 2) { /* attn_k_b + attn_v_b -> kv_b_proj, float32 */
            int64_t shape[2] = {0, 0};
            float *buf = NULL;
            st = join_kv_b(m, t, headers_only, shape, &buf, err);
            if (st != FACET_OK) break;
            st_tensor *s = &sf->tensors[sf->n_tensors];
            s->name = strdup(name);
            if (!s->name) {
                free(buf);
                st = facet_err(err, FACET_E_NOMEM, "%s: out of memory", g0->path);
                break;
            }
            sf->n_tensors++;
            if (buf) out->owned[out->n_owned++] = buf;
            s->dtype = ST_F32;
            s->ndim = 2;
            s->shape[0] = shape[0];
            s->shape[1] = shape[1];
            s->begin = 0;
            s->end = (uint64_t)(shape[0] * shape[1]) * 4;
            s->data = buf ? (const uint8_t *)buf : t->data;
            s->file_index = 0;
            s->gguf_qtype = 0;
            ck->by_name[ck->n_tensors++] = s;
            continue;
        }
        ssm_form form = ssm_form_of(t->name);
        if (form != SSM_AS_IS && t->type != GGML_F32) {
            st = facet_err(err, FACET_E_UNSUPPORTED,
                           "%s: tensor %s has type %s, expected F32 (llama.cpp keeps its "
                           "state-space vectors in F32)",
                           g0->path, t->name, gguf_type_name(t->type));
            break;
        }
        st_dtype dt = t->type == GGML_F32 ? ST_F32 : t->type == GGML_F16 ? ST_F16 : ST_BF16;
        const uint8_t *data = t->data;
        int qt = facet_qtype_of_ggml(t->type);
        if (qt >= 0) {
            dt = ST_F32; /* what the loader widens it to when asked for another format */
        } else if (t->type != GGML_F32 && t->type != GGML_F16 && t->type != GGML_BF16) {
            st = facet_err(err, FACET_E_UNSUPPORTED,
                           "tensor %s has type %s; supported: %s", t->name,
                           gguf_type_name(t->type), facet_gguf_runnable_types());
            break;
        }
        st_tensor *s = &sf->tensors[sf->n_tensors];
        s->name = strdup(name);
        if (!s->name) {
            st = facet_err(err, FACET_E_NOMEM, "%s: out of memory", g0->path);
            break;
        }
        sf->n_tensors++;
        s->dtype = dt;
        s->ndim = t->n_dims;
        for (int d = 0; d < t->n_dims; d++) s->shape[d] = t->ne[t->n_dims - 1 - d];
        s->begin = 0;
        s->end = t->nbytes;
        s->data = data;
        s->file_index = 0;
        s->gguf_qtype = qt + 1;
        if (form != SSM_AS_IS) {
            st = ssm_reshape(g0->path, t, s, f, headers_only, &out->owned[out->n_owned], err);
            if (st != FACET_OK) break;
            if (out->owned[out->n_owned]) out->n_owned++;
        }
        size_t len = strlen(t->name);
        int is_q = len > 14 && !strcmp(t->name + len - 14, ".attn_q.weight");
        int is_k = len > 14 && !strcmp(t->name + len - 14, ".attn_k.weight");
        if (permute && (is_q || is_k) && !headers_only) {
            void *buf = NULL;
            size_t row_bytes = t->ne[1] ? (size_t)(t->nbytes / (uint64_t)t->ne[1]) : 0;
            st = unpermute(t, data, is_q ? f->num_attention_heads : f->num_key_value_heads,
                           row_bytes, &buf, err);
            if (st != FACET_OK) break;
            out->owned[out->n_owned++] = buf;
            s->data = buf;
        }
        ck->by_name[ck->n_tensors++] = s;
    }
    if (st == FACET_OK) qsort(ck->by_name, ck->n_tensors, sizeof *ck->by_name, cmp_st_name);
    if (st != FACET_OK) facet_gguf_checkpoint_close(out);
    return st;
}

facet_status facet_gguf_checkpoint_open(const gguf_model *m, const facet_facts *f,
                                        facet_gguf_checkpoint *out, facet_error *err) {
    return open_view(m, f, 0, out, err);
}

facet_status facet_gguf_checkpoint_open_headers(const gguf_model *m, const facet_facts *f,
                                                facet_gguf_checkpoint *out, facet_error *err) {
    return open_view(m, f, 1, out, err);
}
