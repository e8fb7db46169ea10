/*
 * weights_tp.c — a tensor-parallel rank's share of a decoder layer (issue 21), cut from
 * the layer's tensors right after the loader made them (weights_load.h), before the next
 * layer loads, so a rank holds at most one whole layer beyond its share.
 *
 * Rank t of T keeps (nh, nkv heads of head_dim hd; FFN width I; Megatron-LM's split):
 *   q_proj rows of heads [t nh/T, (t+1) nh/T), k_proj and v_proj rows of its KV heads,
 *   their biases alike, o_proj the same heads' columns, attention sinks of its heads;
 *   gate/up rows [t I/T, (t+1) I/T) (each expert's and the shared expert's too) and
 *   down's same columns. The router, norms and q/k norms of one head stay whole. o_proj's
 *   and down's biases stay on rank 0 alone: the ranks' partial outputs are summed
 *   (MPI_Allreduce after attention and after the FFN, forward.c), so a bias is added
 *   once. The facts then describe the rank's share (facet_weights_tp_facts), and the
 *   forward pass runs on it unchanged.
 *
 * A slice is read back to float32 row by row (facet_wtensor_row) and packed again in the
 * tensor's format: exact for f32, bf16 and f16; int8 and q4 are requantized from their
 * own values. GGUF block types are refused (no packer for them).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/model_internal.h"
#include "util/error.h"

/* *w's rows [r0, r0 + nr) and columns [c0, c0 + nc), in w's format; *bytes adjusted. */
static facet_status mat_slice(const facet_warena *arena, facet_wtensor *w, int r0, int nr,
                              int c0, int nc, uint64_t *bytes, facet_error *err) {
    if (!w->data) return FACET_OK;
    if (w->format >= FACET_WF_COUNT)
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "--tensor-parallel cannot cut a %s matrix (GGUF block type): load "
                         "with --weights f32, bf16, f16, int8 or q4",
                         facet_wformat_name(w->format));
    float *buf = malloc(sizeof(float) * (size_t)nr * (size_t)nc);
    float *row = malloc(sizeof(float) * (size_t)w->cols);
    if (!buf || !row) {
        free(buf);
        free(row);
        return facet_err(err, FACET_E_NOMEM, "tensor-parallel slice of %d x %d", nr, nc);
    }
    for (int r = 0; r < nr; r++) {
        facet_wtensor_row(w, r0 + r, row);
        memcpy(buf + (size_t)r * nc, row + c0, sizeof(float) * (size_t)nc);
    }
    free(row);
    facet_wformat fmt = w->format;
    *bytes -= facet_wtensor_bytes(w);
    if (!facet_warena_owns(arena, w->data)) free(w->data); /* an arena's: freed with it */
    free(w->scales);
    memset(w, 0, sizeof *w);
    w->format = FACET_WF_F32;
    w->rows = nr;
    w->cols = nc;
    w->data = buf;
    facet_status st = facet_wtensor_convert(w, fmt, err);
    if (st != FACET_OK) return st;
    *bytes += facet_wtensor_bytes(w);
    return FACET_OK;
}

/* Rows [r0, r0 + nr) of matrix w, all columns; columns [c0, c0 + nc), all rows. */
static facet_status rows_of(const facet_warena *a, facet_wtensor *w, int r0, int nr, uint64_t *b,
                            facet_error *err) {
    return mat_slice(a, w, r0, nr, 0, w->cols, b, err);
}
static facet_status cols_of(const facet_warena *a, facet_wtensor *w, int c0, int nc, uint64_t *b,
                            facet_error *err) {
    return mat_slice(a, w, 0, w->rows, c0, nc, b, err);
}

/* Elements [o, o + n) of vector *v (NULL: none). */
static facet_status vec_slice(float **v, int o, int n, uint64_t *bytes, facet_error *err) {
    if (!*v) return FACET_OK;
    float *s = malloc(sizeof(float) * (size_t)n);
    if (!s) return facet_err(err, FACET_E_NOMEM, "tensor-parallel slice of %d floats", n);
    memcpy(s, *v + o, sizeof(float) * (size_t)n);
    free(*v);
    *v = s;
    (void)bytes; /* the full vector's bytes were counted; the difference is noise */
    return FACET_OK;
}

/* A bias of a summed output: rank 0 keeps it, the others drop it. */
static void bias_rank0(float **v, int rank) {
    if (rank == 0 || !*v) return;
    free(*v);
    *v = NULL;
}

#define TRY(call)                                                           \
    do {                                                                    \
        facet_status s_ = (call);                                           \
        if (s_ != FACET_OK) return s_;                                      \
    } while (0)

/* The FFN of width I: gate/up rows, down columns, rank t of T. */
static facet_status ffn_slice(const facet_warena *a, facet_wtensor *gate, facet_wtensor *up, facet_wtensor *down,
                              float **gate_b, float **up_b, float **down_b, int64_t I, int T,
                              int t, uint64_t *b, facet_error *err) {
    int w = (int)(I / T), o = t * w;
    TRY(rows_of(a, gate, o, w, b, err));
    TRY(rows_of(a, up, o, w, b, err));
    TRY(cols_of(a, down, o, w, b, err));
    if (gate_b) TRY(vec_slice(gate_b, o, w, b, err));
    if (up_b) TRY(vec_slice(up_b, o, w, b, err));
    if (down_b) bias_rank0(down_b, t);
    return FACET_OK;
}

facet_status facet_weights_tp_slice(facet_model *m, int l, int T, int t, facet_error *err) {
    const facet_facts *f = &m->facts;
    facet_layer_weights *L = &m->w.layers[l];
    uint64_t *b = &m->w.bytes;
    if (L->qk_norm_full)
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "--tensor-parallel %d: layer %d's q/k norm spans the whole projection "
                         "(OLMo 2), which a share of the heads cannot compute; T = 1 works", T, l);
    int hd = (int)f->head_dim, qh = (int)(f->num_attention_heads / T) * hd;
    int kh = (int)(f->num_key_value_heads / T) * hd;
    const facet_warena *a = &m->w.arena; /* GGUF repacks live there */
    TRY(rows_of(a, &L->q_proj, t * qh, qh, b, err));
    TRY(rows_of(a, &L->k_proj, t * kh, kh, b, err));
    TRY(rows_of(a, &L->v_proj, t * kh, kh, b, err));
    TRY(vec_slice(&L->q_bias, t * qh, qh, b, err));
    TRY(vec_slice(&L->k_bias, t * kh, kh, b, err));
    TRY(vec_slice(&L->v_bias, t * kh, kh, b, err));
    TRY(cols_of(a, &L->o_proj, t * qh, qh, b, err));
    bias_rank0(&L->o_bias, t);
    int nh = (int)(f->num_attention_heads / T);
    TRY(vec_slice(&L->sinks, t * nh, nh, b, err));
    if (!L->experts)
        return ffn_slice(a, &L->gate_proj, &L->up_proj, &L->down_proj, &L->gate_bias, &L->up_bias,
                         &L->down_bias, f->intermediate_size, T, t, b, err);
    for (int64_t e = 0; e < f->num_experts; e++) {
        facet_expert *x = &L->experts[e];
        TRY(ffn_slice(a, &x->gate, &x->up, &x->down, &x->gate_bias, &x->up_bias, &x->down_bias,
                      f->moe_intermediate_size, T, t, b, err));
    }
    if (f->shared_expert_intermediate_size > 0)
        TRY(ffn_slice(a, &L->shared_gate, &L->shared_up, &L->shared_down, NULL, NULL, NULL,
                      f->shared_expert_intermediate_size, T, t, b, err));
    return FACET_OK;
}

void facet_weights_tp_facts(facet_facts *f, int T) {
    f->num_attention_heads /= T;
    f->num_key_value_heads /= T;
    f->intermediate_size /= T;
    f->moe_intermediate_size /= T;
    f->shared_expert_intermediate_size /= T;
}
