/*
 * layer.c — the layer kinds' table and the row steps the layer loop shares (layer.h).
 */
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

void facet_sync(facet_session *s) {
    if (s->be->ops->sync) s->be->ops->sync(s->be);
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
        s->be->ops->copy(s->be, y, x, (size_t)H);
}

void facet_norm_row(const facet_session *s, float *y, const float *x, const float *w) {
    facet_norm_row_bias(s, y, x, w, NULL);
}

typedef struct {
    facet_session *s;
    int l, n, per;
    facet_range_fn fn;
} ranges_job;

static void ranges_task(void *ctx, int task, int thread) {
    (void)thread;
    const ranges_job *j = ctx;
    int r0 = task * j->per, r1 = r0 + j->per < j->n ? r0 + j->per : j->n;
    j->fn(j->s, j->l, r0, r1);
}

void facet_for_row_ranges(facet_session *s, int l, int n, facet_range_fn fn) {
    facet_backend *be = s->be;
    int threads = be->ops->threads(be);
    if (n <= 0) return;
    if (threads <= 1 || n < ROWS_PARALLEL) {
        fn(s, l, 0, n);
        return;
    }
    int tasks = threads * 4;
    ranges_job j = {s, l, n, (n + tasks - 1) / tasks, fn};
    be->ops->run(be, (n + j.per - 1) / j.per, ranges_task, &j);
}

/* Rows [r0, r1) of hidden_size: y = norm(x) as facet_norm_row_bias does row by row, the
 * RMSNorm or LayerNorm of all of them in one operation (or the copy, when no norm). */
static void norm_rows(facet_session *s, float *y, const float *x, const float *w, const float *b,
                      int r0, int r1) {
    const facet_facts *f = &s->model->facts;
    size_t H = (size_t)f->hidden_size;
    y += (size_t)r0 * H;
    x += (size_t)r0 * H;
    if (f->layer_norm && (w || f->norm_no_weight)) /* OLMo's has no parameters */
        s->be->ops->layernorm_rows(s->be, y, x, w, b, (int)H, r1 - r0, f->rms_norm_eps);
    else if (w)
        s->be->ops->rmsnorm_rows(s->be, y, x, w, (int)H, r1 - r0, f->rms_norm_eps,
                                 (float)f->norm_weight_offset);
    else if (y != x)
        s->be->ops->copy(s->be, y, x, H * (size_t)(r1 - r0));
}

/* x += h * residual_multiplier over rows [r0, r1). */
static void residual_rows(facet_session *s, float *x, const float *h, int r0, int r1) {
    const facet_facts *f = &s->model->facts;
    size_t H = (size_t)f->hidden_size;
    s->be->ops->add_scaled(s->be, x + (size_t)r0 * H, h + (size_t)r0 * H, (size_t)(r1 - r0) * H,
                           (float)f->residual_multiplier);
}

/* The mixer's input norm: xn = RMSNorm_in(x); with a parallel residual also the FFN's
 * input norm of the same x into xp (post_attention_layernorm, NeoX). */
void facet_rows_in_norm(facet_session *s, int l, int r0, int r1) {
    size_t H = (size_t)s->model->facts.hidden_size;
    const facet_layer_weights *L = &s->model->w.layers[l];
    norm_rows(s, s->xn, s->x, L->input_layernorm, L->input_layernorm_bias, r0, r1);
    if (s->model->facts.parallel_one_norm) /* Phi: the FFN reads the same normed input */
        s->be->ops->copy(s->be, s->xp + (size_t)r0 * H, s->xn + (size_t)r0 * H,
                         H * (size_t)(r1 - r0));
    else if (s->model->facts.parallel_residual) {
        norm_rows(s, s->xp, s->x, L->post_attention_layernorm, L->post_attention_layernorm_bias,
                  r0, r1);
    }
}

/* After the mixer (its output in xn): the post-mixer norm (sandwich families), the
 * residual, then the FFN's input norm into xn: pre_feedforward_layernorm in sandwich-norm
 * families, post_attention_layernorm in pre-norm ones, none in OLMo 2. */
void facet_rows_mixer_out(facet_session *s, int l, int r0, int r1) {
    const facet_facts *f = &s->model->facts;
    const facet_layer_weights *L = &s->model->w.layers[l];
    size_t H = (size_t)f->hidden_size;
    if (f->post_norms) norm_rows(s, s->xn, s->xn, L->post_attention_layernorm, NULL, r0, r1);
    residual_rows(s, s->x, s->xn, r0, r1);
    if (f->parallel_residual) { /* the FFN reads the layer's input x, normed before */
        s->be->ops->copy(s->be, s->xn + (size_t)r0 * H, s->xp + (size_t)r0 * H,
                         H * (size_t)(r1 - r0));
        return;
    }
    const float *pre = f->post_norms ? L->pre_feedforward_layernorm : L->post_attention_layernorm;
    norm_rows(s, s->xn, s->x, f->pre_norms ? pre : NULL,
              f->post_norms ? NULL : L->post_attention_layernorm_bias, r0, r1);
}

/* After the FFN (its output in xn): the post-FFN norm (sandwich families) and the
 * residual. */
void facet_rows_ffn_out(facet_session *s, int l, int r0, int r1) {
    const facet_facts *f = &s->model->facts;
    if (f->post_norms)
        norm_rows(s, s->xn, s->xn, s->model->w.layers[l].post_feedforward_layernorm, NULL, r0, r1);
    residual_rows(s, s->x, s->xn, r0, r1);
}
