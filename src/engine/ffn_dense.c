/*
 * ffn_dense.c — the dense gated FFN kind (layer.h): transformers' LlamaMLP and the
 * families that share it, down(act(gate h) * up h) (+ biases when mlp_bias); the ungated
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

/* gate = act(gate) * up over one row of intermediate_size. */
static void act_row(facet_session *s, int l, int r) {
    (void)l;
    const facet_facts *f = &s->model->facts;
    size_t I = (size_t)f->intermediate_size;
    s->be->ops->gated_act(s->be, s->gate + r * I, s->up + r * I, (int)I, (int)f->act);
}

/* up = act(up) over one row (an ungated MLP). */
static void ungated_row(facet_session *s, int l, int r) {
    (void)l;
    const facet_facts *f = &s->model->facts;
    size_t I = (size_t)f->intermediate_size;
    s->be->ops->act(s->be, s->up + r * I, (int)I, (int)f->act);
}

/* xn (the FFN's input norm) -> xn (its output) for entries [0, n) of layer l. */
static void dense_forward(facet_session *s, int l, int n) {
    facet_backend *be = s->be;
    const facet_layer_weights *L = &s->model->w.layers[l];
    if (s->model->facts.ffn_ungated) { /* down(act(up h)): NeoX's dense_h_to_4h/4h_to_h */
        be->ops->matmul(be, s->up, s->xn, &L->up_proj, L->up_bias, n);
        facet_for_rows(s, l, n, ungated_row);
        be->ops->matmul(be, s->xn, s->up, &L->down_proj, L->down_bias, n);
        return;
    }
    { /* gate and up in one sweep */
        float *const y[2] = {s->gate, s->up};
        const facet_wtensor *const w[2] = {&L->gate_proj, &L->up_proj};
        const float *const b[2] = {L->gate_bias, L->up_bias};
        be->ops->matmul_multi(be, 2, y, s->xn, w, b, n);
    }
    facet_for_rows(s, l, n, act_row);
    be->ops->matmul(be, s->xn, s->gate, &L->down_proj, L->down_bias, n);
}

const facet_ffn_kind facet_ffn_dense = {"dense", dense_takes, dense_forward};
