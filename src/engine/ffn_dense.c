/*
 * ffn_dense.c — the dense gated FFN kind (layer.h): transformers' LlamaMLP and the
 * families that share it, down(act(gate h) * up h) (+ biases when mlp_bias; muP, Falcon-H1:
 * down(act(gate h * g) * up h) * d with the mlp multipliers g, d); the ungated
 * MLP of the classic decoders (ffn_ungated: GPT-NeoX), down(act(up h)).
 */
#include "backend/backend.h"
#include "engine/layer.h"

/* Every layer of a dense decoder: the first FFN kind, taken when no other kind is. */
static int dense_takes(const facet_facts *f, int l) {
    (void)f;
    (void)l;
    return 1;
}

/* The gate times mlp_gate_multiplier (muP, Falcon-H1), by the host. */
static void gate_mult_row(facet_session *s, int l, int r) {
    (void)l;
    const facet_facts *f = &s->model->facts;
    size_t I = (size_t)f->intermediate_size;
    float m = (float)f->mlp_gate_multiplier;
    for (size_t i = 0; i < I; i++) s->gate[r * I + i] *= m;
}

/* gate = act(gate) * up over rows [r0, r1) of intermediate_size, one operation. */
static void act_rows(facet_session *s, int l, int r0, int r1) {
    (void)l;
    const facet_facts *f = &s->model->facts;
    size_t I = (size_t)f->intermediate_size;
    s->be->ops->gated_act_rows(s->be, s->gate + (size_t)r0 * I, s->up + (size_t)r0 * I, (int)I,
                               r1 - r0, (int)f->act);
}

/* The down projection's output times mlp_down_multiplier (muP, Falcon-H1). */
static void down_mult_row(facet_session *s, int l, int r) {
    (void)l;
    const facet_facts *f = &s->model->facts;
    size_t H = (size_t)f->hidden_size;
    float m = (float)f->mlp_down_multiplier;
    for (size_t i = 0; i < H; i++) s->xn[r * H + i] *= m;
}

/* up = act(up) over rows [r0, r1) (an ungated MLP), one operation. */
static void ungated_rows(facet_session *s, int l, int r0, int r1) {
    (void)l;
    const facet_facts *f = &s->model->facts;
    size_t I = (size_t)f->intermediate_size;
    s->be->ops->act_rows(s->be, s->up + (size_t)r0 * I, (int)I, r1 - r0, (int)f->act);
}

/* The activation of an ungated MLP over rows [0, n) of s->up when the rows are fewer
 * than the threads x 2 (decode): each row's I elements split into one range a thread.
 * GPT-2's gelu_new is a libm tanhf per element (~18 ns; 3072 a layer), which on one
 * thread held the other idle for ~25 us a layer, 0.3 ms a token, against the ~4 ms a
 * GPT-2-124M token takes to read. Element-wise, so the split changes no bit. */
typedef struct {
    facet_session *s;
    int per, act;
    size_t I;
} act_split;

static void act_split_task(void *ctx, int task, int thread) {
    (void)thread;
    const act_split *j = ctx;
    size_t tasks_per_row = (j->I + (size_t)j->per - 1) / (size_t)j->per;
    size_t r = (size_t)task / tasks_per_row, a = ((size_t)task % tasks_per_row) * (size_t)j->per;
    size_t len = a + (size_t)j->per <= j->I ? (size_t)j->per : j->I - a;
    j->s->be->ops->act(j->s->be, j->s->up + r * j->I + a, (int)len, j->act);
}

static void ungated_act(facet_session *s, int l, int n) {
    facet_backend *be = s->be;
    int threads = be->ops->threads(be);
    size_t I = (size_t)s->model->facts.intermediate_size;
    if (threads <= 1 || n >= 2 * threads || I < 1024) {
        facet_for_row_ranges(s, l, n, ungated_rows);
        return;
    }
    /* ranges of a multiple of 16 elements, one a thread per row */
    int per = (int)(((I + (size_t)threads - 1) / (size_t)threads + 15) / 16 * 16);
    act_split j = {s, per, (int)s->model->facts.act, I};
    int tasks_per_row = (int)((I + (size_t)per - 1) / (size_t)per);
    be->ops->run(be, n * tasks_per_row, act_split_task, &j);
}

/* xn (the FFN's input norm) -> xn (its output) for entries [0, n) of layer l. */
static void dense_forward(facet_session *s, int l, int n) {
    facet_backend *be = s->be;
    const facet_layer_weights *L = &s->model->w.layers[l];
    if (s->model->facts.ffn_ungated) { /* down(act(up h)): NeoX's dense_h_to_4h/4h_to_h */
        be->ops->matmul(be, s->up, s->xn, &L->up_proj, L->up_bias, n);
        ungated_act(s, l, n);
        be->ops->matmul(be, s->xn, s->up, &L->down_proj, L->down_bias, n);
        return;
    }
    { /* gate and up in one sweep */
        float *const y[2] = {s->gate, s->up};
        const facet_wtensor *const w[2] = {&L->gate_proj, &L->up_proj};
        const float *const b[2] = {L->gate_bias, L->up_bias};
        be->ops->matmul_multi(be, 2, y, s->xn, w, b, n);
    }
    const facet_facts *f = &s->model->facts;
    if (f->mup && f->mlp_gate_multiplier != 1.0) {
        facet_sync(s);
        facet_for_rows(s, l, n, gate_mult_row);
    }
    facet_for_row_ranges(s, l, n, act_rows);
    be->ops->matmul(be, s->xn, s->gate, &L->down_proj, L->down_bias, n);
    if (f->mup && f->mlp_down_multiplier != 1.0) {
        facet_sync(s);
        facet_for_rows(s, l, n, down_mult_row);
    }
}

const facet_ffn_kind facet_ffn_dense = {"dense", dense_takes, dense_forward};
