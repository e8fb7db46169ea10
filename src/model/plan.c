/*
 * plan.c — memory and kernel plan of a checkpoint from its facts (see plan.h).
 */
#include "model/plan.h"
#include "model/weights_policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "engine/layer.h"
#include "io/safetensors.h"
#include "util/error.h"
#include "util/fs.h"

#define MAX_BATCH (1LL << 20)

/* What `--weights auto` loads: the checkpoint's own precision (weights_policy.c, the
 * same function the loader calls). */
static int plan_format(facet_weight_format w) {
    return w == FACET_WEIGHTS_GGUF ? FACET_PLAN_GGUF : (int)facet_wformat_of(w);
}

static int auto_format(const facet_facts *f) { return plan_format(facet_auto_weights(f)); }

int facet_plan_weights(facet_weight_format w) {
    return w == FACET_WEIGHTS_AUTO ? FACET_PLAN_AUTO : plan_format(w);
}

/* The kernels' names and packed sizes come from the CPU backend the engine creates for a
 * session (backend.h), resolved the same way, never from a copy here. */
const char *facet_plan_matmul_path(int fmt) {
    facet_backend *be = NULL;
    if (fmt < 0 || fmt >= FACET_WF_COUNT || facet_backend_cpu_create(NULL, &be, NULL) != FACET_OK)
        return "none";
    const char *name = be->ops->matmul_kernel(be, (facet_wformat)fmt);
    be->ops->free(be);
    return name;
}

const char *facet_plan_format_name(int fmt) {
    if (fmt == FACET_PLAN_GGUF) return "gguf";
    return fmt >= 0 && fmt < FACET_WF_COUNT ? facet_wformat_name((facet_wformat)fmt) : "auto";
}

int facet_plan_format_parse(const char *s, int *fmt) {
    if (!strcmp(s, "auto")) {
        *fmt = FACET_PLAN_AUTO;
        return 0;
    }
    for (int i = 0; i <= FACET_PLAN_GGUF; i++)
        if (!strcmp(s, facet_plan_format_name(i))) {
            *fmt = i;
            return 0;
        }
    return -1;
}

/* Saturating arithmetic: a plan of an absurd config prints UINT64_MAX, never wraps. */
static uint64_t sat_mul(uint64_t a, uint64_t b) {
    if (a && b > UINT64_MAX / a) return UINT64_MAX;
    return a * b;
}
static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

static uint64_t u(int64_t x) { return x > 0 ? (uint64_t)x : 0; }

/* Sums over the weights in one format: all of them, and what one decoded token reads. */
typedef struct {
    const facet_backend *be;
    int fmt;
    uint64_t bytes, params, mat;          /* every tensor                                */
    uint64_t active_bytes, active_params; /* what one decoded token reads               */
} wsum;

/* `count` [rows, cols] matrices in format fmt, `active` of them read per decoded token. */
static void add_mat_in(wsum *w, int fmt, uint64_t rows, uint64_t cols, uint64_t count,
                       uint64_t active) {
    uint64_t b = w->be->ops->weight_bytes(w->be, (facet_wformat)fmt, rows, cols);
    uint64_t n = sat_mul(rows, cols);
    w->bytes = sat_add(w->bytes, sat_mul(b, count));
    w->mat = sat_add(w->mat, sat_mul(n, count));
    w->params = sat_add(w->params, sat_mul(n, count));
    w->active_bytes = sat_add(w->active_bytes, sat_mul(b, active));
    w->active_params = sat_add(w->active_params, sat_mul(n, active));
}

static void add_mat(wsum *w, uint64_t rows, uint64_t cols, uint64_t count, uint64_t active) {
    add_mat_in(w, w->fmt, rows, cols, count, active);
}

/* `count` float32 vectors of n elements, `active` of them read per decoded token. */
static void add_vec_active(wsum *w, uint64_t n, uint64_t count, uint64_t active) {
    w->bytes = sat_add(w->bytes, sat_mul(sat_mul(n, 4), count));
    w->params = sat_add(w->params, sat_mul(n, count));
    w->active_bytes = sat_add(w->active_bytes, sat_mul(sat_mul(n, 4), active));
    w->active_params = sat_add(w->active_params, sat_mul(n, active));
}

/* `count` float32 vectors of n elements (norms, biases), all read per token. */
static void add_vec(wsum *w, uint64_t n, uint64_t count) {
    w->bytes = sat_add(w->bytes, sat_mul(sat_mul(n, 4), count));
    w->params = sat_add(w->params, sat_mul(n, count));
    w->active_bytes = sat_add(w->active_bytes, sat_mul(sat_mul(n, 4), count));
    w->active_params = sat_add(w->active_params, sat_mul(n, count));
}

/* Weight bytes in format fmt: 2-D matrices in fmt (the output projection in
 * facet_wformat_output(fmt, H)), vectors (norms, biases) in f32. A
 * mixture-of-experts layer holds the router, num_experts experts of
 * moe_intermediate_size and the shared expert; a decoded token reads the router, its
 * num_experts_per_tok experts and the shared expert, and everything else (the embedding
 * table counted whole, as the published "active parameters" do: a token reads one row
 * of it unless it is also the head). */
static void weight_sums(const facet_backend *be, const facet_facts *f, int fmt, wsum *w) {
    memset(w, 0, sizeof *w);
    w->be = be;
    w->fmt = fmt;
    uint64_t H = u(f->hidden_size), I = u(f->intermediate_size), V = u(f->vocab_size);
    uint64_t nh = u(f->num_attention_heads), nkv = u(f->num_key_value_heads), hd = u(f->head_dim);
    /* Mamba layers (no attention, no FFN), or Falcon-H1's mixers beside attention */
    uint64_t M = f->ssm_parallel ? u(f->num_hidden_layers) : (uint64_t)f->n_ssm_layers;
    uint64_t S = (uint64_t)f->n_sparse_layers;
    /* per layer: L the attention layers, LF the FFN ones (a hybrid's recurrent layers keep
     * theirs), NV the H-wide norms outside the recurrent blocks (2 per two-block layer and
     * post-norm family, 1 on a single-block layer) */
    uint64_t L = 0, LF = 0, NV = 0;
    uint64_t per = (uint64_t)(2 * (f->pre_norms ? 1 : 0) + 2 * (f->post_norms ? 1 : 0));
    for (int64_t l = 0; l < f->num_hidden_layers && l < FACET_MAX_LAYERS; l++) {
        int ssm = f->layer_ssm[l], blk = f->layer_block[l];
        L += !ssm && blk != FACET_BLOCK_FFN;
        LF += (!ssm || f->ssm_ffn) && blk != FACET_BLOCK_MIXER;
        NV += ssm && !f->ssm_ffn ? 0 : blk != FACET_BLOCK_BOTH ? 1 : per;
    }
    uint64_t D = LF > S ? LF - S : 0;
    uint64_t q = sat_mul(nh, hd), kv = sat_mul(nkv, hd);
    int untied = f->probed ? f->has_lm_head : !f->tie_word_embeddings;

    /* embeddings (the output projection's format when tied) */
    int out_fmt = (int)facet_wformat_output((facet_wformat)fmt, (int64_t)H);
    uint64_t emb = be->ops->weight_bytes(be, (facet_wformat)(untied ? fmt : out_fmt), V, H);
    w->bytes = w->active_bytes = emb;
    if (untied && V) w->active_bytes = emb / V; /* looked up: a token reads one row */
    w->mat = w->params = w->active_params = sat_mul(V, H);
    if (untied) add_mat_in(w, out_fmt, V, H, 1, 1);
    /* attention, every layer */
    if (f->kv_lora_rank > 0) { /* latent attention: q (plain or low-rank), kv_a, kv_b, o */
        uint64_t QL = u(f->q_lora_rank), C = u(f->kv_lora_rank), dr = u(f->qk_rope_head_dim);
        uint64_t mq = sat_mul(nh, u(f->qk_nope_head_dim) + dr);
        if (QL) {
            add_mat(w, QL, H, L, L);
            add_mat(w, mq, QL, L, L);
            add_vec(w, QL, L); /* q_a_layernorm */
        } else {
            add_mat(w, mq, H, L, L);
        }
        add_mat(w, C + dr, H, L, L);
        uint64_t kvb = sat_mul(nh, u(f->qk_nope_head_dim) + u(f->v_head_dim));
        add_mat(w, kvb, C, L, L);
        /* and kv_b_proj once more in float32, which the absorbed attention reads
         * (mixer_mla.c): memory, not parameters */
        uint64_t f32b = sat_mul(sat_mul(sat_mul(kvb, C), 4), L);
        w->bytes = sat_add(w->bytes, f32b);
        w->active_bytes = sat_add(w->active_bytes, f32b);
        add_mat(w, H, sat_mul(nh, u(f->v_head_dim)), L, L);
        add_vec(w, C, L); /* kv_a_layernorm */
    } else {
        add_mat(w, f->attn_output_gate ? sat_mul(q, 2) : q, H, L, L); /* + the gate's rows */
        add_mat(w, kv, H, 2 * L, 2 * L);
        add_mat(w, H, q, L, L);
    }
    /* dense FFN layers */
    add_mat(w, I, H, (f->ffn_ungated ? 1 : 2) * D, (f->ffn_ungated ? 1 : 2) * D);
    add_mat(w, H, I, D, D);
    if (S) { /* mixture-of-experts layers */
        uint64_t E = u(f->num_experts), K = u(f->num_experts_per_tok);
        uint64_t EI = u(f->moe_intermediate_size), SI = u(f->shared_expert_intermediate_size);
        add_mat_in(w, FACET_WF_F32, E, H, S, S); /* the router stays float32 */
        /* MXFP4 experts (gpt-oss's quantization_config) stay in their blocks in every
         * run-time format */
        int ef = f->experts_mxfp4 ? (int)FACET_WF_GGUF_MXFP4 : fmt;
        uint64_t up = f->ffn_ungated ? 1 : 2; /* gate and up, or up alone (Nemotron-H) */
        add_mat_in(w, ef, EI, H, sat_mul(up * E, S), sat_mul(up * K, S));
        add_mat_in(w, ef, H, EI, sat_mul(E, S), sat_mul(K, S));
        if (SI) {
            add_mat(w, SI, H, up * S, up * S);
            add_mat(w, H, SI, S, S);
        }
        if (SI && f->shared_expert_gate) add_mat(w, 1, H, S, S);
        if (f->moe_score_bias) add_vec(w, E, S); /* DeepSeek-V3's e_score_correction_bias */
        if (f->moe_biases) { /* gpt-oss: the router's and each expert's gate, up, down */
            add_vec(w, E, S);
            add_vec_active(w, sat_add(sat_mul(EI, 2), H), sat_mul(E, S), sat_mul(K, S));
        }
    }
    /* vectors per layer: norms, biases, q/k norms (one head_dim each, per head) */
    add_vec(w, H, NV);
    if (f->qkv_bias) add_vec(w, sat_add(f->attn_output_gate ? sat_mul(q, 2) : q, sat_mul(kv, 2)), L);
    if (f->o_bias) add_vec(w, H, L);
    if (f->mlp_bias) add_vec(w, sat_add(sat_mul(I, f->ffn_ungated ? 1 : 2), H), D);
    if (f->qk_norm) add_vec(w, sat_mul(hd, 2), L);
    if (f->attn_sinks) add_vec(w, nh, L);
    if (M && f->ssm_version == 4) { /* Qwen3-Next's delta rule: in_proj_qkvz (CD + DI rows),
                                      * in_proj_ba (2 NH), out_proj; the conv's taps,
                                      * dt_bias and A_log per head, the gated norm (DV) */
        uint64_t DI = u(f->ssm_inner), N = u(f->ssm_state_size), K = u(f->ssm_conv_kernel);
        uint64_t NH = u(f->ssm_heads), CD = sat_add(DI, sat_mul(2 * u(f->ssm_groups), N));
        add_mat(w, sat_add(CD, DI), H, M, M);
        add_mat(w, 2 * NH, H, M, M);
        add_mat(w, H, DI, M, M);
        add_vec(w, sat_add(sat_add(sat_mul(CD, K), sat_mul(NH, 2)), u(f->ssm_head_dim)), M);
    } else if (M && f->ssm_version == 3) { /* LFM2's short conv: in (3 H) and out projections,
                                      * the conv's taps (the norms: counted above) */
        uint64_t DI = u(f->ssm_inner), K = u(f->ssm_conv_kernel);
        add_mat(w, 3 * DI, H, M, M);
        add_mat(w, H, DI, M, M);
        add_vec(w, sat_mul(DI, K), M);
    } else if (M && f->ssm_version == 2) { /* Mamba-2: in/out projections; norm, conv, per-head
                                      * dt bias, A_log, D; the gated norm */
        uint64_t DI = u(f->ssm_inner), N = u(f->ssm_state_size), K = u(f->ssm_conv_kernel);
        uint64_t NH = u(f->ssm_heads), CD = sat_add(DI, sat_mul(2 * u(f->ssm_groups), N));
        add_mat(w, sat_add(sat_add(DI, CD), NH), H, M, M);
        add_mat(w, H, DI, M, M);
        /* the block's norm (a hybrid's: counted above), the gated norm (Falcon-H1: none
         * without mamba_rms_norm) */
        add_vec(w, sat_add(f->ssm_ffn ? 0 : H, f->ssm_norm == FACET_SSM_NORM_NONE ? 0 : DI), M);
        /* Falcon-H1's projection biases */
        add_vec(w, sat_add(f->ssm_in_bias ? sat_add(sat_add(DI, CD), NH) : 0,
                           f->ssm_out_bias ? H : 0), M);
        add_vec(w, sat_add(sat_mul(CD, K + (f->ssm_conv_bias ? 1 : 0)), sat_mul(NH, 3)), M);
    } else if (M) { /* Mamba layers: in/x/dt/out projections; norm, conv, dt bias, A_log, D */
        uint64_t DI = u(f->ssm_inner), N = u(f->ssm_state_size), K = u(f->ssm_conv_kernel);
        uint64_t R = u(f->ssm_dt_rank);
        add_mat(w, 2 * DI, H, M, M);
        add_mat(w, sat_add(R, 2 * N), DI, M, M);
        add_mat(w, DI, R, M, M);
        add_mat(w, H, DI, M, M);
        /* the block's norm (a hybrid's: counted above); Jamba's dt, B and C norms */
        add_vec(w, sat_add(f->ssm_ffn ? 0 : H, f->ssm_dbc_norm ? sat_add(R, 2 * N) : 0), M);
        add_vec(w, sat_mul(DI, sat_add(K, sat_add(N, 2 + (f->ssm_conv_bias ? 1 : 0)))), M);
    }
    add_vec(w, H, 1); /* final norm */
}

/* Weight bytes in format fmt (weight_sums). */
static uint64_t weight_bytes(const facet_backend *be, const facet_facts *f, int fmt,
                             uint64_t *n_params, uint64_t *n_matrix) {
    wsum w;
    weight_sums(be, f, fmt, &w);
    if (n_matrix) *n_matrix = w.mat;
    if (n_params) *n_params = w.params;
    return w.bytes;
}

/* k: K and V bytes of one layer and position (2 x num_key_value_heads x head_dim x elt);
 * for multi-head latent attention (kv_lora_rank > 0, issue 25) the one slot its cache
 * holds: the normed latent and the shared rope key, (kv_lora_rank + qk_rope_head_dim)
 * x elt, whatever the head count. */
static uint64_t kv_layer_position_bytes(const facet_facts *f, uint64_t elt) {
    if (f->kv_lora_rank > 0)
        return sat_mul(u(f->kv_lora_rank) + u(f->qk_rope_head_dim), elt);
    return sat_mul(sat_mul(2, sat_mul(u(f->num_key_value_heads), u(f->head_dim))), elt);
}

uint64_t facet_plan_kv_bytes(const facet_facts *f, int64_t c, uint64_t elt) {
    uint64_t k = kv_layer_position_bytes(f, elt);
    uint64_t S = (uint64_t)f->n_sliding_layers;
    uint64_t G = u(f->num_hidden_layers) - S - (uint64_t)f->n_ssm_layers -
                 (uint64_t)f->n_ffn_only_layers; /* FFN-only layers keep no KV */
    /* positions are allocated in whole key groups of 16 (src/engine/session.c) */
    uint64_t cg = u(c < f->max_position_embeddings ? c : f->max_position_embeddings);
    uint64_t cs = u(f->sliding_window && c > f->sliding_window ? f->sliding_window : c);
    cg = (cg + 15) / 16 * 16;
    cs = (cs + 15) / 16 * 16;
    return sat_mul(k, sat_add(sat_mul(G, cg), sat_mul(S, cs)));
}

uint64_t facet_plan_state_bytes(const facet_facts *f) {
    uint64_t DI = u(f->ssm_inner), N = u(f->ssm_state_size);
    /* Mamba-2 and Qwen3-Next's delta rule convolve x B C / q k v: DI + 2 G N channels */
    uint64_t CD = f->ssm_version == 2 || f->ssm_version == 4
                      ? sat_add(DI, sat_mul(2 * u(f->ssm_groups), N)) : DI;
    uint64_t per = sat_add(sat_mul(CD, u(f->ssm_conv_kernel - 1)), sat_mul(DI, N));
    uint64_t layers = f->ssm_parallel ? u(f->num_hidden_layers) : (uint64_t)f->n_ssm_layers;
    return sat_mul(sat_mul(per, 4), layers);
}

/* GGUF weights: the kernel of each format the file's matrices are in, joined ("Q4_0-avx2,
 * Q6_K-avx2"), and a note for each below its best. */
static void choose_gguf(const facet_backend *be, uint32_t formats, facet_plan *p) {
    size_t off = 0, noff = 0;
    for (int fmt = 0; fmt < FACET_WF_ALL; fmt++) {
        if (!(formats & (1u << fmt))) continue;
        const char *name = be->ops->matmul_kernel(be, (facet_wformat)fmt);
        const char *best = be->ops->matmul_kernel_best(be, (facet_wformat)fmt);
        if (off < sizeof p->matmul_path)
            off += (size_t)snprintf(p->matmul_path + off, sizeof p->matmul_path - off, "%s%s",
                                    off ? ", " : "", name);
        if (strcmp(best, name) && noff < sizeof p->weights_note)
            noff += (size_t)snprintf(p->weights_note + noff, sizeof p->weights_note - noff,
                                     "%s%s matmul: this CPU lacks %s; using %s", noff ? "; " : "",
                                     facet_wformat_name((facet_wformat)fmt), best, name);
    }
    if (!off) snprintf(p->matmul_path, sizeof p->matmul_path, "none");
}

static void choose_format(const facet_backend *be, const facet_facts *f, int requested,
                          uint32_t gguf_formats, facet_plan *p) {
    p->requested = requested;
    p->weights = requested == FACET_PLAN_AUTO ? auto_format(f) : requested;
    /* gguf on a checkpoint that is not a GGUF file: each matrix in its own dtype, which
     * is what auto plans */
    if (p->weights == FACET_PLAN_GGUF && !gguf_formats) p->weights = auto_format(f);
    if (p->weights == FACET_PLAN_GGUF) {
        choose_gguf(be, gguf_formats, p);
        return;
    }
    facet_wformat w = (facet_wformat)p->weights;
    snprintf(p->matmul_path, sizeof p->matmul_path, "%s", be->ops->matmul_kernel(be, w));
    const char *best = be->ops->matmul_kernel_best(be, w);
    if (strcmp(best, p->matmul_path))
        snprintf(p->weights_note, sizeof p->weights_note,
                 "%s matmul: this CPU lacks %s; using %s (the closest declared path)",
                 facet_wformat_name(w), best, p->matmul_path);
}

static void kernel_paths(const facet_backend *be, const facet_facts *f, facet_plan *p) {
    snprintf(p->norm_path, sizeof p->norm_path, "%s%s eps=%g",
             f->layer_norm ? "layernorm" : "rmsnorm", f->norm_weight_offset ? "(1+w)" : "",
             f->rms_norm_eps);
    if (f->alibi)
        snprintf(p->rope_path, sizeof p->rope_path, "alibi max_bias=%g%s (no rotary)",
                 f->alibi_bias_max, f->alibi_pre_scale ? ", scaled with q.k" : "");
    else if (f->pos_embed_learned)
        snprintf(p->rope_path, sizeof p->rope_path, "learned positions (no rotary)");
    else if (f->no_rope || (f->n_ssm_layers && f->n_ssm_layers == f->num_hidden_layers))
        snprintf(p->rope_path, sizeof p->rope_path, "no positions (no rotary)");
    else
        snprintf(p->rope_path, sizeof p->rope_path, "rope-%.31s %s theta=%g%s",
                 f->rope_type_name[0] ? f->rope_type_name : "default",
                 f->kv_lora_rank > 0 || f->rope_interleaved ? "interleaved-pairs" : "rotate_half",
                 f->rope_theta,
                 f->partial_rotary_factor < 1.0 ? " partial" : "");
    snprintf(p->ffn_path, sizeof p->ffn_path, "%s-%.47s%s", f->ffn_ungated ? "ungated" : "gated",
             f->act_name[0] ? f->act_name : "silu",
             f->parallel_residual ? " parallel-residual" : "");
    p->n_groups = 0;
    for (int64_t l = 0; l < f->num_hidden_layers; l++) {
        int s = f->layer_sliding[l];
        int nope = f->layer_no_rope[l] && !f->no_rope;
        /* the layer's kinds and kernels, as a session resolves them */
        const facet_mixer_kind *mk = facet_layer_mixer(f, (int)l);
        const facet_ffn_kind *fk = facet_layer_ffn(f, (int)l);
        char kern[192];
        int ssm = f->layer_ssm[l];
        char par[96];
        snprintf(par, sizeof par, "%.56s + conv1d + selective scan, f32",
                 be->ops->attention_kernel(be, p->kv_type, (int)f->head_dim));
        snprintf(kern, sizeof kern, "mixer %s (%.60s), ffn %s (%.47s)", mk ? mk->name : "none",
                 ssm == 4              ? "conv1d + gated delta rule, f32"
                 : ssm == 3            ? "gated short conv1d, f32"
                 : ssm                 ? "conv1d + selective scan, f32"
                 : f->ssm_parallel     ? par
                 : f->layer_block[l] == FACET_BLOCK_FFN ? "-"
                 : f->kv_lora_rank > 0 ? "absorbed, blocked online softmax, f32"
                                       : be->ops->attention_kernel(be, p->kv_type, (int)f->head_dim),
                 fk ? fk->name : "none",
                 (ssm && !f->ssm_ffn) || f->layer_block[l] == FACET_BLOCK_MIXER ? "-"
                                                                                 : p->matmul_path);
        facet_plan_group *g = p->n_groups ? &p->groups[p->n_groups - 1] : NULL;
        if (g && g->sliding == s && g->no_rope == nope && g->last == l - 1 &&
            !strcmp(g->kernels, kern)) {
            g->last = (int)l;
            continue;
        }
        if (p->n_groups == (int)(sizeof p->groups / sizeof p->groups[0])) {
            g->last = (int)l; /* beyond 64 groups the last one absorbs the rest */
            continue;
        }
        g = &p->groups[p->n_groups++];
        g->first = g->last = (int)l;
        g->sliding = s;
        g->no_rope = nope;
        snprintf(g->kernels, sizeof g->kernels, "%s", kern);
        int64_t nh = f->num_attention_heads, nkv = f->num_key_value_heads;
        char win[48] = "";
        if (s) snprintf(win, sizeof win, ", window %lld (ring)", (long long)f->sliding_window);
        if (nope) snprintf(win + strlen(win), sizeof win - strlen(win), ", no rope");
        if (f->layer_block[l] == FACET_BLOCK_FFN && f->layer_sparse[l]) { /* Nemotron-H's E */
            snprintf(g->attention, sizeof g->attention,
                     "none: the MoE FFN alone (%lld experts, %lld a token, %.20s%s)",
                     (long long)f->num_experts, (long long)f->num_experts_per_tok,
                     f->act_name[0] ? f->act_name : "silu",
                     f->shared_expert_intermediate_size ? ", shared expert" : "");
            continue;
        }
        if (f->layer_block[l] == FACET_BLOCK_FFN) {
            snprintf(g->attention, sizeof g->attention, "none: the FFN alone (%.47s)",
                     f->act_name[0] ? f->act_name : "silu");
            continue;
        }
        if (ssm == 4) {
            snprintf(g->attention, sizeof g->attention,
                     "none: gated delta rule, %lld value heads x %lld, %lld key heads x %lld, "
                     "conv %lld taps",
                     (long long)f->ssm_heads, (long long)f->ssm_head_dim,
                     (long long)f->ssm_groups, (long long)f->ssm_state_size,
                     (long long)f->ssm_conv_kernel);
            continue;
        }
        if (ssm == 3) {
            snprintf(g->attention, sizeof g->attention,
                     "none: LFM2 short conv (B*x, %lld taps, C gate) over %lld channels",
                     (long long)f->ssm_conv_kernel, (long long)f->ssm_inner);
            continue;
        }
        if (ssm) {
            snprintf(g->attention, sizeof g->attention,
                     ssm == 2 ? "none: Mamba-2 mixer d_inner=%lld state=%lld conv=%lld heads=%lld "
                                "groups=%lld"
                              : "none: Mamba mixer d_inner=%lld state=%lld conv=%lld dt_rank=%lld",
                     (long long)f->ssm_inner, (long long)f->ssm_state_size,
                     (long long)f->ssm_conv_kernel,
                     (long long)(ssm == 2 ? f->ssm_heads : f->ssm_dt_rank),
                     (long long)f->ssm_groups);
            continue;
        }
        if (f->kv_lora_rank > 0) { /* one latent row shared by every head */
            snprintf(g->attention, sizeof g->attention,
                     "causal latent %lldq qk=%lld+%lld v=%lld over latent %lld + rope %lld%s",
                     (long long)nh, (long long)f->qk_nope_head_dim,
                     (long long)f->qk_rope_head_dim, (long long)f->v_head_dim,
                     (long long)f->kv_lora_rank, (long long)f->qk_rope_head_dim,
                     f->q_lora_rank ? "" : ", plain q_proj");
            continue;
        }
        char mix[80] = ""; /* Falcon-H1: a Mamba-2 mixer beside the attention */
        if (f->ssm_parallel)
            snprintf(mix, sizeof mix, " + Mamba-2 d_inner=%lld state=%lld heads=%lld groups=%lld",
                     (long long)f->ssm_inner, (long long)f->ssm_state_size,
                     (long long)f->ssm_heads, (long long)f->ssm_groups);
        snprintf(g->attention, sizeof g->attention, "causal %s %lldq/%lldkv hd=%lld%s%s%s%s",
                 nkv == nh ? "MHA" : nkv == 1 ? "MQA" : "GQA", (long long)nh, (long long)nkv,
                 (long long)f->head_dim, f->qk_norm ? " qk-norm" : "",
                 f->attn_output_gate ? " sigmoid-gated" : "", win, mix);
    }
}

facet_status facet_plan_make(const facet_facts *f, const facet_plan_opts *opts, facet_plan *out,
                             facet_error *err) {
    memset(out, 0, sizeof *out);
    const struct {
        const char *name;
        int64_t v;
    } need[] = {{"hidden_size", f->hidden_size}, {"intermediate_size", f->intermediate_size},
                {"num_hidden_layers", f->num_hidden_layers},
                {"num_attention_heads", f->num_attention_heads},
                {"num_key_value_heads", f->num_key_value_heads}, {"head_dim", f->head_dim},
                {"vocab_size", f->vocab_size},
                {"max_position_embeddings", f->max_position_embeddings}};
    int attention_free = f->n_ssm_layers > 0 && f->n_ssm_layers == f->num_hidden_layers;
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (need[i].v <= 0 && !(attention_free && i >= 3 && i <= 5))
            return facet_err(err, FACET_E_INVALID_ARGUMENT,
                             "facts incomplete: %s is missing or not positive", need[i].name);
    int64_t ctx = opts->ctx ? opts->ctx : f->max_position_embeddings;
    int64_t batch = opts->batch ? opts->batch : 1;
    if (ctx < 1 || ctx > f->max_position_embeddings)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "--ctx %lld is outside 1..max_position_embeddings (%lld)",
                         (long long)ctx, (long long)f->max_position_embeddings);
    if (batch < 1 || batch > MAX_BATCH)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "--batch %lld is outside 1..%lld",
                         (long long)batch, (long long)MAX_BATCH);
    if (opts->weights != FACET_PLAN_AUTO &&
        (opts->weights < 0 || opts->weights > FACET_PLAN_GGUF))
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "unknown weight format %d", opts->weights);
    if (opts->kv_cache < FACET_KV_AUTO || opts->kv_cache > FACET_KV_F16)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "unknown KV cache type %d", (int)opts->kv_cache);
    /* the backend a session would create: its kernels' names and packed sizes */
    facet_backend *be = NULL;
    facet_status bst = facet_backend_cpu_create(NULL, &be, err);
    if (bst != FACET_OK) return bst;
    for (int fmt = 0; fmt < FACET_WF_COUNT; fmt++)
        out->weight_bytes[fmt] = weight_bytes(be, f, fmt, &out->n_params, &out->n_matrix_params);
    out->weight_bytes[FACET_PLAN_GGUF] = opts->gguf_weight_bytes;
    choose_format(be, f, opts->weights, opts->gguf_formats, out);
    {
        wsum ws; /* a GGUF file's own types: counted as f32 for the parameters, its bytes
                  * bounded by the whole file's (every tensor read per token) */
        int gguf = out->weights == FACET_PLAN_GGUF;
        weight_sums(be, f, gguf ? FACET_WF_F32 : out->weights, &ws);
        out->n_active_params = ws.active_params;
        out->decode_bytes_per_token = !gguf ? ws.active_bytes
                                      : opts->gguf_decode_bytes ? opts->gguf_decode_bytes
                                                                : opts->gguf_weight_bytes;
    }
    out->kv_type = opts->kv_cache;
    if (out->kv_type == FACET_KV_AUTO)
        out->kv_type = facet_auto_kv(out->weights == FACET_PLAN_GGUF
                                         ? FACET_WEIGHTS_GGUF
                                         : facet_wformat_public((facet_wformat)out->weights));
    uint64_t elt = facet_kv_type_bytes(out->kv_type);
    const char *kvn = facet_kv_type_name(out->kv_type);

    out->kv_bytes_per_layer_position = kv_layer_position_bytes(f, elt);
    out->kv_bytes_per_token_naive = sat_mul(out->kv_bytes_per_layer_position,
                                            u(f->num_hidden_layers));
    out->n_sliding_layers = f->n_sliding_layers;
    out->n_global_layers = (int)f->num_hidden_layers - f->n_sliding_layers - f->n_ssm_layers -
                           f->n_ffn_only_layers;
    out->window = f->n_sliding_layers ? f->sliding_window : 0;
    if (out->window)
        snprintf(out->kv_layout, sizeof out->kv_layout,
                 "per sequence, layer and KV head (%lld, head_dim %lld): %s keys "
                 "[position/16][head_dim][16] and values [position][head_dim]; %d global "
                 "layers grow to ctx, %d windowed layers hold a ring of min(ctx, %lld)",
                 (long long)f->num_key_value_heads, (long long)f->head_dim, kvn,
                 out->n_global_layers, out->n_sliding_layers, (long long)out->window);
    else if (f->kv_lora_rank > 0)
        snprintf(out->kv_layout, sizeof out->kv_layout,
                 "per sequence and layer one latent-attention slot per position: the "
                 "normed latent (kv_lora_rank %lld) and the rope key (qk_rope_head_dim "
                 "%lld), %s; per-head keys and values would take %llu bytes a layer",
                 (long long)f->kv_lora_rank, (long long)f->qk_rope_head_dim, kvn,
                 (unsigned long long)sat_mul(
                     sat_mul(u(f->num_attention_heads),
                             u(f->qk_nope_head_dim) + u(f->qk_rope_head_dim) + u(f->v_head_dim)),
                     elt));
    else if (attention_free)
        snprintf(out->kv_layout, sizeof out->kv_layout,
                 "no KV cache (no attention layer); per sequence and Mamba layer a fixed "
                 "float32 state: conv window %lld x %lld + SSM state %lld x %lld",
                 (long long)(f->ssm_inner + (f->ssm_version == 2
                                                 ? 2 * f->ssm_groups * f->ssm_state_size
                                                 : 0)),
                 (long long)(f->ssm_conv_kernel - 1),
                 (long long)f->ssm_inner, (long long)f->ssm_state_size);
    else
        snprintf(out->kv_layout, sizeof out->kv_layout,
                 "per sequence, layer and KV head (%lld, head_dim %lld): %s keys "
                 "[position/16][head_dim][16] and values [position][head_dim], grown on "
                 "demand up to ctx%s", (long long)f->num_key_value_heads, (long long)f->head_dim,
                 kvn, f->n_ssm_layers ? "; on the attention layers only (the recurrent layers "
                                        "keep a fixed state instead)"
                      : f->ssm_parallel ? "; every layer also keeps a fixed float32 Mamba-2 "
                                          "state (its mixer runs beside attention)"
                                        : "");

    out->ctx = ctx;
    out->batch = batch;
    out->kv_bytes_per_sequence = facet_plan_kv_bytes(f, ctx, elt);
    out->kv_bytes_per_token_actual = (double)out->kv_bytes_per_sequence / (double)ctx;
    out->state_bytes_per_sequence = facet_plan_state_bytes(f);
    uint64_t state = out->state_bytes_per_sequence;
    uint64_t w = out->weight_bytes[out->weights];
    out->total_bytes =
        sat_add(w, sat_mul(sat_add(out->kv_bytes_per_sequence, state), (uint64_t)batch));

    out->mem_available = opts->mem_available;
    if (!out->mem_available) {
        facet_status st = facet_mem_available(&out->mem_available, err);
        if (st != FACET_OK) {
            be->ops->free(be);
            return st;
        }
    }
    uint64_t avail = out->mem_available;
    out->fits = out->total_bytes <= avail;

    /* largest context at this batch: kv bytes grow monotonically with c */
    int64_t lo = 0, hi = f->max_position_embeddings;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        uint64_t seq = sat_add(facet_plan_kv_bytes(f, mid, elt), state);
        if (sat_add(w, sat_mul(seq, (uint64_t)batch)) <= avail) lo = mid;
        else hi = mid - 1;
    }
    out->max_ctx_at_batch = lo;
    uint64_t per = sat_add(out->kv_bytes_per_sequence, state);
    if (w > avail) out->max_batch_at_ctx = 0;
    else if (!per || (avail - w) / per > (uint64_t)INT64_MAX) out->max_batch_at_ctx = INT64_MAX;
    else out->max_batch_at_ctx = (int64_t)((avail - w) / per);

    kernel_paths(be, f, out);
    be->ops->free(be);
    return FACET_OK;
}
