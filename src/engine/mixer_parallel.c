/*
 * mixer_parallel.c — Falcon-H1's parallel mixers as one layer kind (layer.h): on every
 * layer of a model whose facts say ssm_parallel, attention (mixer_attention.c) and a
 * Mamba-2 mixer (mixer_mamba2.c) read the same normed input h and their outputs are
 * summed, as transformers' FalconH1DecoderLayer:
 *   out = attn(h * attn_in_multiplier) * attn_out_multiplier
 *       + mamba2(h * ssm_in_multiplier) * ssm_out_multiplier
 * The layer's cache holds its KV rows and, beside them, the Mamba-2 state (kv_cache.h
 * facet_kv_cache_add_state). Scratch: xn carries attention's input and output, xp the
 * Mamba-2 mixer's (model_internal.h).
 */
#include "engine/layer.h"

static int parallel_takes(const facet_facts *f, int l) {
    return f->ssm_parallel && l >= 0 && l < FACET_MAX_LAYERS && !f->layer_ssm[l] &&
           f->layer_block[l] != FACET_BLOCK_FFN;
}

/* xp = h * ssm_in_multiplier; xn = h * attn_in_multiplier (h: xn). */
static void split_row(facet_session *s, int l, int r) {
    (void)l;
    const facet_facts *f = &s->model->facts;
    size_t H = (size_t)f->hidden_size;
    float *xn = s->xn + r * H, *xp = s->xp + r * H;
    float a = f->mup ? (float)f->attn_in_multiplier : 1.0f;
    float m = f->mup ? (float)f->ssm_in_multiplier : 1.0f;
    for (size_t i = 0; i < H; i++) {
        xp[i] = xn[i] * m;
        xn[i] *= a;
    }
}

/* xn = attention's output * attn_out_multiplier + the mixer's (xp) * ssm_out_multiplier. */
static void join_row(facet_session *s, int l, int r) {
    (void)l;
    const facet_facts *f = &s->model->facts;
    size_t H = (size_t)f->hidden_size;
    float *xn = s->xn + r * H;
    const float *xp = s->xp + r * H;
    float a = f->mup ? (float)f->attn_out_multiplier : 1.0f;
    float m = f->mup ? (float)f->ssm_out_multiplier : 1.0f;
    for (size_t i = 0; i < H; i++) xn[i] = xp[i] * m + xn[i] * a;
}

/* xn (RMSNorm_in(x)) -> xn (the two mixers' summed output) for entries [0, n). */
static void parallel_forward(facet_session *s, int l, int n) {
    facet_for_rows(s, l, n, split_row);
    facet_mixer_attention.forward(s, l, n);        /* xn -> xn */
    facet_mamba2_mix(s, l, n, s->xp, s->xp);       /* xp -> xp, the layer's state */
    facet_for_rows(s, l, n, join_row);
}

const facet_mixer_kind facet_mixer_parallel = {"attention+mamba2", parallel_takes,
                                               parallel_forward};
