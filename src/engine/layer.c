/*
 * layer.c — the layer kinds' table and the row steps the layer loop shares (layer.h).
 */
#include <string.h>

#include "backend/backend.h"
#include "engine/layer.h"

/* Closest first: a new kind goes before the one it specializes. */
static const facet_mixer_kind *const mixers[] = {&facet_mixer_none, &facet_mixer_mamba,
                                                  &facet_mixer_mamba2,
                                                  &facet_mixer_mla, &facet_mixer_shortconv,
                                                  &facet_mixer_parallel, &facet_mixer_gated_delta,
                                                  &facet_mixer_attention};
static const facet_ffn_kind *const ffns[] = {&facet_ffn_none, &facet_ffn_moe, &facet_ffn_dense};

const facet_mixer_kind *facet_layer_mixer(const facet_facts *f, int l) {
    for (size_t i = 0; i < sizeof mixers / sizeof mixers[0]; i++)
        if (mixers[i]->takes(f, l)) return mixers[i];
    return NULL;
}

const facet_ffn_kind *facet_layer_ffn(const facet_facts *f, int l) {
    for (size_t i = 0; i < sizeof ffns / sizeof ffns[0]; i++)
        if (ffns[i]->takes(f, l)) return ffns[i];
    return NULL;
}

/* Below this many rows the steps run on the calling thread (decode: a parallel run would
 * cost more than the work). */
#define ROWS_PARALLEL 8

typedef struct {
    facet_session *s;
    int l, n, per;
    facet_row_fn fn;
} rows_job;

static void rows_task(void *ctx, int task, int thread) {
    (void)thread;
    const rows_job *j = ctx;
    int r1 = (task + 1) * j->per < j->n ? (task + 1) * j->per : j->n;
    for (int r = task * j->per; r < r1; r++) j->fn(j->s, j->l, r);
}

void facet_for_rows(facet_session *s, int l, int n, facet_row_fn fn) {
    facet_backend *be = s->be;
    int threads = be->ops->threads(be);
    if (threads <= 1 || n < ROWS_PARALLEL) {
        for (int r = 0; r < n; r++) fn(s, l, r);
        return;
    }
    int tasks = threads * 4;
    rows_job j = {s, l, n, (n + tasks - 1) / tasks, fn};
    be->ops->run(be, (n + j.per - 1) / j.per, rows_task, &j);
}

void facet_norm_row_bias(const facet_session *s, float *y, const float *x, const float *w,
                         const float *b) {
    const facet_facts *f = &s->model->facts;
    int H = (int)f->hidden_size;
    if (f->layer_norm && (w || f->norm_no_weight)) /* OLMo's has no parameters */
        s->be->ops->layernorm(s->be, y, x, w, b, H, f->rms_norm_eps);
    else if (w)
        s->be->ops->rmsnorm(s->be, y, x, w, H, f->rms_norm_eps, (float)f->norm_weight_offset);
    else if (y != x)
        memcpy(y, x, sizeof(float) * (size_t)H);
}

void facet_norm_row(const facet_session *s, float *y, const float *x, const float *w) {
    facet_norm_row_bias(s, y, x, w, NULL);
}

/* x += h * mult over one row of H. */
static void residual_row(const facet_facts *f, float *x, const float *h) {
    float mult = (float)f->residual_multiplier;
    int H = (int)f->hidden_size;
    if (mult == 1.0f)
        for (int i = 0; i < H; i++) x[i] += h[i];
    else
        for (int i = 0; i < H; i++) x[i] += h[i] * mult;
}

/* The mixer's input norm: xn = RMSNorm_in(x); with a parallel residual also the FFN's
 * input norm of the same x into xp (post_attention_layernorm, NeoX). */
void facet_rows_in_norm(facet_session *s, int l, int r) {
    size_t H = (size_t)s->model->facts.hidden_size;
    const facet_layer_weights *L = &s->model->w.layers[l];
    facet_norm_row_bias(s, s->xn + r * H, s->x + r * H, L->input_layernorm,
                        L->input_layernorm_bias);
    if (s->model->facts.parallel_one_norm) /* Phi: the FFN reads the same normed input */
        memcpy(s->xp + r * H, s->xn + r * H, sizeof(float) * H);
    else if (s->model->facts.parallel_residual)
        facet_norm_row_bias(s, s->xp + r * H, s->x + r * H, L->post_attention_layernorm,
                            L->post_attention_layernorm_bias);
}

/* After the mixer (its output in xn): the post-mixer norm (sandwich families), the
 * residual, then the FFN's input norm into xn: pre_feedforward_layernorm in sandwich-norm
 * families, post_attention_layernorm in pre-norm ones, none in OLMo 2. */
void facet_rows_mixer_out(facet_session *s, int l, int r) {
    const facet_facts *f = &s->model->facts;
    const facet_layer_weights *L = &s->model->w.layers[l];
    size_t H = (size_t)f->hidden_size;
    float *x = s->x + r * H, *xn = s->xn + r * H;
    if (f->post_norms) facet_norm_row(s, xn, xn, L->post_attention_layernorm);
    residual_row(f, x, xn);
    if (f->parallel_residual) { /* the FFN reads the layer's input x, normed before */
        memcpy(xn, s->xp + r * H, sizeof(float) * H);
        return;
    }
    const float *pre = f->post_norms ? L->pre_feedforward_layernorm : L->post_attention_layernorm;
    facet_norm_row_bias(s, xn, x, f->pre_norms ? pre : NULL,
                        f->post_norms ? NULL : L->post_attention_layernorm_bias);
}

/* After the FFN (its output in xn): the post-FFN norm (sandwich families) and the
 * residual. */
void facet_rows_ffn_out(facet_session *s, int l, int r) {
    const facet_facts *f = &s->model->facts;
    size_t H = (size_t)f->hidden_size;
    float *x = s->x + r * H, *xn = s->xn + r * H;
    if (f->post_norms) facet_norm_row(s, xn, xn, s->model->w.layers[l].post_feedforward_layernorm);
    residual_row(f, x, xn);
}
