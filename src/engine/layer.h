/*
 * layer.h — a decoder layer as declared kinds: a mixer (the block that mixes positions:
 * attention today; latent attention and recurrent mixers next) and an FFN (dense today;
 * mixture-of-experts next), each kind chosen per layer from the facts (facet_layer_kinds)
 * when a session is created and called through this table, so adding a kind adds a file
 * and a row, and touches no other kind's code.
 *
 * The layer loop (forward.c), for entries [0, n) of the chunk:
 *   xn = RMSNorm_in(x)                          facet_rows_in_norm
 *     (parallel_residual: also xp = FFN input norm(x), from the same x)
 *   mixer->forward(s, l, n):  xn -> xn          (the block's output, before its post-norm)
 *   x += post_norm(xn); xn = FFN input norm(x)  facet_rows_mixer_out
 *     (parallel_residual: xn = xp)
 *   ffn->forward(s, l, n):    xn -> xn
 *   x += post_norm(xn)                          facet_rows_ffn_out
 * A kind reads and writes the session's batch scratch (model_internal.h) and runs its
 * arithmetic through the session's backend (src/backend/backend.h).
 */
#ifndef FACET_ENGINE_LAYER_H
#define FACET_ENGINE_LAYER_H

#include "engine/model_internal.h"

typedef struct facet_mixer_kind {
    const char *name;              /* "attention"                                      */
    /* 1 if this kind runs layer l of the facts (the first kind that takes it wins) */
    int (*takes)(const facet_facts *f, int l);
    void (*forward)(facet_session *s, int l, int n);
} facet_mixer_kind;

typedef struct facet_ffn_kind {
    const char *name;              /* "dense"                                          */
    int (*takes)(const facet_facts *f, int l);
    void (*forward)(facet_session *s, int l, int n);
} facet_ffn_kind;

/* The kinds (mixer_attention.c, ffn_dense.c, ffn_moe.c: mixture of experts on the
 * layers the facts mark sparse). */
extern const facet_mixer_kind facet_mixer_attention;
extern const facet_ffn_kind facet_ffn_dense;
extern const facet_ffn_kind facet_ffn_moe;
/* mixer_mamba.c: the Mamba mixer on the layers the facts mark layer_ssm, and their "none"
 * FFN (a Mamba block is x + mixer(RMSNorm(x)) alone) */
extern const facet_mixer_kind facet_mixer_mamba;
extern const facet_mixer_kind facet_mixer_mamba2; /* mixer_mamba2.c: layer_ssm == 2 */
/* mixer_mamba2.c: the Mamba-2 mixer of layer l over entries [0, n): in (n rows of
 * hidden_size) -> out (n rows of hidden_size; may be in), the layer's state advanced */
void facet_mamba2_mix(facet_session *s, int l, int n, const float *in, float *out);
/* mixer_parallel.c: attention and Mamba-2 side by side, outputs summed (facts
 * ssm_parallel: Falcon-H1) */
extern const facet_mixer_kind facet_mixer_parallel;
/* mixer_shortconv.c: LFM2's gated short convolution, layer_ssm == 3 */
extern const facet_mixer_kind facet_mixer_shortconv;
/* mixer_gated_delta.c: Qwen3-Next's gated delta rule, layer_ssm == 4 */
extern const facet_mixer_kind facet_mixer_gated_delta;
extern const facet_ffn_kind facet_ffn_none;
/* mixer_mamba.c: no mixer (an FFN-only layer: layer_block FACET_BLOCK_FFN); its output is
 * zero */
extern const facet_mixer_kind facet_mixer_none;

/* mixer_mla.c: multi-head latent attention (DeepSeek-V2/V3) on every layer of a model
 * whose facts have kv_lora_rank > 0; its cache is latent (kv_cache.h). */
extern const facet_mixer_kind facet_mixer_mla;

/* Floats of one entry's scratch in a latent-attention layer (session.c sizes mla_work). */
size_t facet_mla_row_floats(const facet_facts *f);
/* Floats of one thread's attention scratch in a latent-attention layer (session.c sizes
 * mla_blk: threads x this). */
size_t facet_mla_thread_floats(const facet_facts *f);

/* After the weights load: each latent-attention layer's kv_b_f32 from its kv_b_proj
 * (the run-time format's values widened). Errors: FACET_E_NOMEM. */
facet_status facet_mla_prepare(facet_model *m, facet_error *err);

/* Floats of one sequence's state in one Mamba layer: CD * (K - 1) + DI * N, CD = DI
 * (Mamba-2: DI + 2 G N; LFM2's short conv: DI = hidden_size, N = 0; Qwen3-Next's delta
 * rule: CD = DI + 2 G N, its q, k, v, and N = the key head's DK). */
size_t facet_mamba_state_floats(const facet_facts *f);

/* The mixer and FFN kind of layer l of the facts; NULL when no kind takes it (the
 * capability table refuses such a checkpoint before it loads). */
const facet_mixer_kind *facet_layer_mixer(const facet_facts *f, int l);
const facet_ffn_kind *facet_layer_ffn(const facet_facts *f, int l);

/* ---- per-entry (row) steps, shared by the kinds ----
 * Each row's arithmetic is independent of the others and of how rows are split over
 * threads, so spreading them over the backend's threads keeps batch invariance. */
typedef void (*facet_row_fn)(facet_session *s, int l, int r);

/* fn(s, l, r) for every entry r < n of layer l, in parallel when n is large. */
void facet_for_rows(facet_session *s, int l, int n, facet_row_fn fn);

/* y = RMSNorm(x) over one row of hidden_size (w NULL: copy through); LayerNorm when the
 * facts say layer_norm. */
void facet_norm_row(const facet_session *s, float *y, const float *x, const float *w);
/* facet_norm_row with the LayerNorm's bias b (NULL: none). */
void facet_norm_row_bias(const facet_session *s, float *y, const float *x, const float *w,
                         const float *b);

/* fn(s, l, r0, r1) over ranges of rows covering [0, n): the whole chunk at once on a
 * backend of one thread (a device: one operation per step) or when n is small, else
 * ranges spread over the backend's threads. The steps call the backend's chunk
 * operations over their range; each row's arithmetic is the row steps', so the split
 * changes no bit. */
typedef void (*facet_range_fn)(facet_session *s, int l, int r0, int r1);
void facet_for_row_ranges(facet_session *s, int l, int n, facet_range_fn fn);

/* Wait for the backend's recorded operations (backend.h sync): before the host's own
 * arithmetic on activations (a kind's host loop, a copy). Nothing on the CPU. */
void facet_sync(facet_session *s);

/* The layer loop's steps (above) over rows [r0, r1). */
void facet_rows_in_norm(facet_session *s, int l, int r0, int r1);
void facet_rows_mixer_out(facet_session *s, int l, int r0, int r1);
void facet_rows_ffn_out(facet_session *s, int l, int r0, int r1);

#endif
