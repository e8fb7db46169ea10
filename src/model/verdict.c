/*
 * verdict.c — judging facts against the capability table (table.c).
 *
 * Each fact has one row below: how to read its value from the facts, whether the
 * backend's caps admit it, and how to print the supported range. The same rows print
 * the table (`facet conform --table`, docs/SUPPORT.md), so the printed ranges are the
 * judged ranges.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/config_class.h"
#include "model/table.h"
#include "model/table_internal.h"
#include "model/verdict_rows.h"
#include "util/error.h"

/* ---------------------------------------------------------------------------------
 * Range and value printers
 * ------------------------------------------------------------------------------ */
static void allow_text(unsigned allow, char *buf, size_t cap) {
    snprintf(buf, cap, "%s", allow == ALLOW_BOTH    ? "true, false"
                             : allow == ALLOW_TRUE  ? "true"
                             : allow == ALLOW_FALSE ? "false"
                                                    : "none");
}

static int allows(unsigned allow, int v) { return (allow & (v ? ALLOW_TRUE : ALLOW_FALSE)) != 0; }

static const char *rope_name(int t) {
    static const char *const names[] = {"default", "linear", "dynamic", "llama3",
                                        "yarn", "longrope", "unknown"};
    return t >= 0 && t <= FACET_ROPE_UNKNOWN ? names[t] : "unknown";
}

static const char *act_name(int a) {
    static const char *const names[] = {"silu", "gelu_pytorch_tanh", "gelu", "relu2", "unknown"};
    return a >= 0 && a <= FACET_ACT_UNKNOWN ? names[a] : "unknown";
}

static void join_bits(unsigned bits, int n, const char *(*name)(int), char *buf, size_t cap) {
    buf[0] = '\0';
    for (int i = 0; i < n; i++)
        if (bits & BIT(i))
            snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", buf[0] ? ", " : "", name(i));
    if (!buf[0]) snprintf(buf, cap, "none");
}

static const char *dtype_name(int d) { return st_dtype_name((st_dtype)d); }

static const char *tf(int v) { return v ? "true" : "false"; }

/* ---------------------------------------------------------------------------------
 * Rows: one per fact. check() returns 1 when supported and writes the value; range()
 * writes the supported range (f may be NULL when printing the table).
 * ------------------------------------------------------------------------------ */
#define CHECK(name) static int name(const facet_facts *f, const facet_caps *c, char *v, size_t n)
#define RANGE(name) static void name(const facet_caps *c, const facet_facts *f, char *b, size_t n)

/* no attention layer (Mamba): the attention shape does not apply */
static int attention_free(const facet_facts *f) {
    return f->n_ssm_layers > 0 && f->n_ssm_layers == f->num_hidden_layers;
}

CHECK(check_kv) {
    snprintf(v, n, "%lld", (long long)f->num_key_value_heads);
    if (attention_free(f)) return 1;
    return f->num_key_value_heads > 0 && f->num_key_value_heads <= f->num_attention_heads &&
           f->num_attention_heads % f->num_key_value_heads == 0 && c->gqa_any_divisor;
}
RANGE(range_kv) {
    (void)c;
    if (f) snprintf(b, n, "a divisor of num_attention_heads=%lld", (long long)f->num_attention_heads);
    else snprintf(b, n, "any divisor of num_attention_heads");
}

CHECK(check_head_dim) {
    int64_t d = f->head_dim;
    if (attention_free(f)) {
        snprintf(v, n, "none (no attention layer)");
        return 1;
    }
    snprintf(v, n, "%lld", (long long)d);
    if (c->head_dim_set[0]) {
        for (int i = 0; i < 8 && c->head_dim_set[i]; i++)
            if (c->head_dim_set[i] == d) return 1;
        return 0;
    }
    return d >= c->head_dim_min && d <= c->head_dim_max &&
           (c->head_dim_multiple <= 1 || d % c->head_dim_multiple == 0);
}
RANGE(range_head_dim) {
    (void)f;
    if (c->head_dim_set[0]) {
        snprintf(b, n, "{");
        for (int i = 0; i < 8 && c->head_dim_set[i]; i++)
            snprintf(b + strlen(b), n - strlen(b), "%s%lld", i ? ", " : "",
                     (long long)c->head_dim_set[i]);
        snprintf(b + strlen(b), n - strlen(b), "}");
    } else if (c->head_dim_multiple == 2) {
        snprintf(b, n, "%lld..%lld, even", (long long)c->head_dim_min, (long long)c->head_dim_max);
    } else if (c->head_dim_multiple > 2) {
        snprintf(b, n, "%lld..%lld, multiple of %lld", (long long)c->head_dim_min,
                 (long long)c->head_dim_max, (long long)c->head_dim_multiple);
    } else {
        snprintf(b, n, "%lld..%lld", (long long)c->head_dim_min, (long long)c->head_dim_max);
    }
}

CHECK(check_rope_type) {
    snprintf(v, n, "%s", f->rope_type_name[0] ? f->rope_type_name : rope_name(f->rope_type));
    return f->rope_type != FACET_ROPE_UNKNOWN && (c->rope_types & BIT(f->rope_type));
}
RANGE(range_rope_type) {
    (void)f;
    join_bits(c->rope_types, FACET_ROPE_UNKNOWN, rope_name, b, n);
}

CHECK(check_partial_rotary) {
    snprintf(v, n, "%g", f->partial_rotary_factor);
    return f->partial_rotary_factor >= c->partial_rotary_min && f->partial_rotary_factor <= 1.0;
}
RANGE(range_partial_rotary) {
    (void)f;
    if (c->partial_rotary_min >= 1.0) snprintf(b, n, "1.0 (full rotary)");
    else snprintf(b, n, "%g..1.0", c->partial_rotary_min);
}

CHECK(check_local_base) {
    snprintf(v, n, "%g", f->rope_local_base_freq);
    return c->dual_rope_base || f->rope_local_base_freq == 0 ||
           f->rope_local_base_freq == f->rope_theta || f->n_sliding_layers == 0;
}
RANGE(range_local_base) {
    (void)f;
    snprintf(b, n, "%s", c->dual_rope_base ? "any" : "none (one rope_theta for every layer)");
}

CHECK(check_act) {
    snprintf(v, n, "%s", f->act_name[0] ? f->act_name : act_name(f->act));
    return f->act != FACET_ACT_UNKNOWN && (c->acts & BIT(f->act));
}
RANGE(range_act) {
    (void)f;
    join_bits(c->acts, FACET_ACT_UNKNOWN, act_name, b, n);
}

#define BOOL_ROW(cname, rname, field, capfield)                                        \
    CHECK(cname) {                                                                     \
        snprintf(v, n, "%s", tf(f->field));                                            \
        return allows(c->capfield, f->field);                                          \
    }                                                                                  \
    RANGE(rname) {                                                                     \
        (void)f;                                                                       \
        allow_text(c->capfield, b, n);                                                 \
    }

BOOL_ROW(check_norm_offset, range_norm_offset, norm_weight_offset, norm_weight_offset)
BOOL_ROW(check_pre_norms, range_pre_norms, pre_norms, pre_norms)
BOOL_ROW(check_post_norms, range_post_norms, post_norms, post_norms)
BOOL_ROW(check_mlp_bias, range_mlp_bias, mlp_bias, mlp_bias)
BOOL_ROW(check_qkv_bias, range_qkv_bias, qkv_bias, qkv_bias)
BOOL_ROW(check_o_bias, range_o_bias, o_bias, o_bias)
BOOL_ROW(check_qk_norm, range_qk_norm, qk_norm, qk_norm)
BOOL_ROW(check_tied, range_tied, tie_word_embeddings, tied)
BOOL_ROW(check_fused_qkv, range_fused_qkv, fused_qkv, fused_qkv)
BOOL_ROW(check_fused_gate_up, range_fused_gate_up, fused_gate_up, fused_gate_up)
BOOL_ROW(check_layer_norm, range_layer_norm, layer_norm, layer_norm)
BOOL_ROW(check_ffn_ungated, range_ffn_ungated, ffn_ungated, ffn_ungated)
BOOL_ROW(check_parallel, range_parallel, parallel_residual, parallel_residual)
BOOL_ROW(check_fused_qkv_heads, range_fused_qkv_heads, fused_qkv_heads, fused_qkv_heads)
BOOL_ROW(check_norm_bias, range_norm_bias, norm_bias, norm_bias)
BOOL_ROW(check_alibi, range_alibi, alibi, alibi)
BOOL_ROW(check_rope_interleaved, range_rope_interleaved, rope_interleaved, rope_interleaved)
BOOL_ROW(check_embed_norm, range_embed_norm, embed_norm, embed_norm)
BOOL_ROW(check_lm_head_l2_norm, range_lm_head_l2_norm, lm_head_l2_norm, lm_head_l2_norm)

CHECK(check_attn_softcap) {
    snprintf(v, n, "%g", f->attn_logit_softcap);
    return c->softcaps || f->attn_logit_softcap == 0;
}
CHECK(check_final_softcap) {
    snprintf(v, n, "%g", f->final_logit_softcap);
    return c->softcaps || f->final_logit_softcap == 0;
}
RANGE(range_softcap) {
    (void)f;
    snprintf(b, n, "%s", c->softcaps ? "any (tanh softcapping)" : "none");
}

CHECK(check_embedding_multiplier) {
    snprintf(v, n, "%g", f->embedding_multiplier);
    return c->multipliers || f->embedding_multiplier == 1.0;
}
CHECK(check_residual_multiplier) {
    snprintf(v, n, "%g", f->residual_multiplier);
    return c->multipliers || f->residual_multiplier == 1.0;
}
CHECK(check_logits_scaling) {
    snprintf(v, n, "%g", f->logits_scaling);
    return c->multipliers || f->logits_scaling == 1.0;
}
RANGE(range_multiplier) {
    (void)f;
    snprintf(b, n, "%s", c->multipliers ? "any" : "1.0 (none)");
}

CHECK(check_attn_scale) {
    double plain = f->head_dim > 0 ? 1.0 / sqrt((double)f->head_dim) : 0;
    snprintf(v, n, "%.6g", f->attn_scale);
    return c->attn_scale_custom || fabs(f->attn_scale - plain) <= 1e-12 * plain;
}
RANGE(range_attn_scale) {
    (void)f;
    snprintf(b, n, "%s", c->attn_scale_custom ? "any (query_pre_attn_scalar, attention_multiplier)"
                                              : "1/sqrt(head_dim)");
}

CHECK(check_window) {
    if (f->n_sliding_layers)
        snprintf(v, n, "%lld (%d of %lld layers)", (long long)f->sliding_window,
                 f->n_sliding_layers, (long long)f->num_hidden_layers);
    else if (f->window_inert)
        snprintf(v, n, "%lld (inert)", (long long)f->sliding_window);
    else
        snprintf(v, n, "none");
    return c->sliding_window || f->n_sliding_layers == 0;
}
RANGE(range_window) {
    (void)f;
    snprintf(b, n, "%s", c->sliding_window
                             ? "any window, per-layer pattern"
                             : "none, or inert (use_sliding_window=false or "
                               ">= max_position_embeddings)");
}

CHECK(check_no_rope) {
    snprintf(v, n, "%d of %lld layers", f->n_no_rope_layers, (long long)f->num_hidden_layers);
    return c->no_rope_layers || f->n_no_rope_layers == 0;
}
RANGE(range_no_rope) {
    (void)f;
    snprintf(b, n, "%s", c->no_rope_layers ? "any per-layer pattern" : "none (RoPE on every layer)");
}

static const char *router_name(int r) {
    static const char *const names[] = {"none (dense)", "softmax-topk", "topk-softmax",
                                        "grouped (DeepSeek)"};
    return r >= 0 && r <= FACET_ROUTER_GROUPED ? names[r] : "unknown";
}

CHECK(check_router) {
    if (f->moe_router == FACET_ROUTER_NONE)
        snprintf(v, n, "%s", router_name(f->moe_router));
    else
        snprintf(v, n, "%s%s, top-%lld of %lld experts on %d of %lld layers",
                 router_name(f->moe_router),
                 f->moe_router == FACET_ROUTER_SOFTMAX_TOPK && f->norm_topk_prob ? " renormalized" : "",
                 (long long)f->num_experts_per_tok, (long long)f->num_experts, f->n_sparse_layers,
                 (long long)f->num_hidden_layers);
    return (c->moe_routers & BIT(f->moe_router)) &&
           (f->moe_router == FACET_ROUTER_NONE || f->num_experts_per_tok <= c->experts_per_tok_max);
}
RANGE(range_router) {
    (void)f;
    join_bits(c->moe_routers, FACET_ROUTER_TOPK_SOFTMAX + 1, router_name, b, n);
    if (c->moe_routers & ~BIT(FACET_ROUTER_NONE))
        snprintf(b + strlen(b), n - strlen(b), "; top-k up to %lld", (long long)c->experts_per_tok_max);
}

CHECK(check_shared_expert) {
    if (f->shared_expert_intermediate_size > 0)
        snprintf(v, n, "%lld%s", (long long)f->shared_expert_intermediate_size,
                 f->shared_expert_gate ? " (sigmoid gate)" : "");
    else
        snprintf(v, n, "none");
    return allows(c->shared_expert, f->moe_router != FACET_ROUTER_NONE &&
                                        f->shared_expert_intermediate_size > 0);
}
RANGE(range_shared_expert) {
    (void)f;
    snprintf(b, n, "%s", c->shared_expert & ALLOW_TRUE ? "any size, gated or not" : "none");
}

/* Mamba mixers (issue 26): the caps' ssm flag; in/out projection biases (use_bias) are
 * not built but for Falcon-H1's (facts ssm_in_bias / ssm_out_bias, not ssm_proj_bias) */
CHECK(check_ssm) {
    if (!f->n_ssm_layers && !f->ssm_parallel) {
        snprintf(v, n, "none");
        return 1;
    }
    int big = f->ssm_version == 1 && f->ssm_state_size > 256; /* mixer_mamba.c's table */
    char mix[80] = "";
    if (f->ssm_parallel) /* Falcon-H1 */
        snprintf(mix, sizeof mix, " beside attention on every layer");
    else if (f->n_ssm_layers < f->num_hidden_layers || f->ssm_ffn) /* a hybrid */
        snprintf(mix, sizeof mix, " on %d of %lld layers%s", f->n_ssm_layers,
                 (long long)f->num_hidden_layers, f->ssm_ffn ? ", each with its FFN" : "");
    const char *bias = f->ssm_version == 3 ? " with conv_bias=true"
                       : f->ssm_ffn        ? " with mamba_proj_bias=true"
                                           : " with use_bias=true";
    snprintf(v, n, "%s%s%s%s",
             f->ssm_version == 4   ? "gated_delta"
             : f->ssm_version == 3 ? "shortconv"
             : f->ssm_version == 2 ? "mamba2"
                                   : "mamba",
             mix,
             f->ssm_proj_bias ? bias : "", big ? " with state_size > 256" : "");
    return c->ssm && !f->ssm_proj_bias && !big;
}
RANGE(range_ssm) {
    (void)f;
    snprintf(b, n, "%s", c->ssm ? "none, or mamba (state_size <= 256) / mamba2 with use_bias=false "
                                  "(hybrids but falcon_h1: mamba_proj_bias=false) / shortconv "
                                  "with conv_bias=false / gated_delta, on any layers"
                                : "none");
}

CHECK(check_dtypes) {
    /* float8 e4m3 with block scales: DeepSeek-V3's FP8 release (widened at load) */
    unsigned fp8 = f->fp8_block_rows > 0 ? 1u << ST_F8_E4M3 : 0;
    unsigned bad = f->dtype_mask & ~(c->dtypes | fp8);
    join_bits(bad ? bad : f->dtype_mask, ST_DTYPE_COUNT, dtype_name, v, n);
    return bad == 0;
}
RANGE(range_dtypes) {
    (void)f;
    join_bits(c->dtypes, ST_DTYPE_COUNT, dtype_name, b, n);
}

const facet_row facet_rows[] = {
    /* fact                      probed check                 range                 */
    {"num_key_value_heads",      0, check_kv,                 range_kv},
    {"head_dim",                 0, check_head_dim,           range_head_dim},
    {"rope_type",                0, check_rope_type,          range_rope_type},
    {"partial_rotary_factor",    0, check_partial_rotary,     range_partial_rotary},
    {"rope_local_base_freq",     0, check_local_base,         range_local_base},
    {"hidden_act",               0, check_act,                range_act},
    {"norm_weight_offset",       0, check_norm_offset,        range_norm_offset},
    {"pre_norms",                0, check_pre_norms,          range_pre_norms},
    {"post_norms",               0, check_post_norms,         range_post_norms},
    {"mlp_bias",                 0, check_mlp_bias,           range_mlp_bias},
    {"layer_norm",               0, check_layer_norm,         range_layer_norm},
    {"ungated mlp",              0, check_ffn_ungated,        range_ffn_ungated},
    {"parallel residual",        0, check_parallel,           range_parallel},
    {"alibi",                    0, check_alibi,              range_alibi},
    {"interleaved rope",         0, check_rope_interleaved,   range_rope_interleaved},
    {"embedding norm",           0, check_embed_norm,         range_embed_norm},
    {"lm_head row norm",         0, check_lm_head_l2_norm,    range_lm_head_l2_norm},
    {"attn_logit_softcapping",   0, check_attn_softcap,       range_softcap},
    {"final_logit_softcapping",  0, check_final_softcap,      range_softcap},
    {"embedding_multiplier",     0, check_embedding_multiplier, range_multiplier},
    {"residual_multiplier",      0, check_residual_multiplier, range_multiplier},
    {"logits_scaling",           0, check_logits_scaling,     range_multiplier},
    {"attention scale",          0, check_attn_scale,         range_attn_scale},
    {"sliding_window",           0, check_window,             range_window},
    {"no_rope_layers",           0, check_no_rope,            range_no_rope},
    {"moe router",               0, check_router,             range_router},
    {"shared expert",            0, check_shared_expert,      range_shared_expert},
    {"state-space mixer",        0, check_ssm,                range_ssm},
    {"q/k/v bias",               1, check_qkv_bias,           range_qkv_bias},
    {"o_proj bias",              1, check_o_bias,             range_o_bias},
    {"qk-norm",                  1, check_qk_norm,            range_qk_norm},
    {"tied lm_head",             1, check_tied,               range_tied},
    {"fused qkv_proj",           1, check_fused_qkv,          range_fused_qkv},
    {"fused gate_up_proj",       1, check_fused_gate_up,      range_fused_gate_up},
    {"per-head fused qkv",       1, check_fused_qkv_heads,    range_fused_qkv_heads},
    {"layer norm bias",          1, check_norm_bias,          range_norm_bias},
    {"weight dtypes",            1, check_dtypes,             range_dtypes},
};
const int facet_n_rows = (int)(sizeof facet_rows / sizeof facet_rows[0]);

/* ---------------------------------------------------------------------------------
 * Config keys
 * ------------------------------------------------------------------------------ */
const facet_key_rule *facet_key_rule_find(const char *key) {
    for (int i = 0; i < facet_n_key_rules; i++) {
        const char *r = facet_key_rules[i].key;
        size_t n = strlen(r);
        char last = n ? r[n - 1] : 0;
        if ((last == '.' || last == '[') ? !strncmp(key, r, n) : !strcmp(key, r))
            return &facet_key_rules[i];
    }
    return NULL;
}

int facet_key_is_suspect(const char *key) {
    for (int i = 0; facet_inert_words[i]; i++)
        if (strstr(key, facet_inert_words[i])) return 0;
    for (int i = 0; facet_math_words[i]; i++)
        if (strstr(key, facet_math_words[i])) return 1;
    return 0;
}

/* ---------------------------------------------------------------------------------
 * The verdict
 * ------------------------------------------------------------------------------ */
static void refuse(facet_verdict *out, const char *fact, const char *value,
                   const char *supported) {
    if (out->n_refusals >= FACET_MAX_REFUSALS) {
        out->refusals_dropped++;
        return;
    }
    facet_refusal *r = &out->refusals[out->n_refusals++];
    snprintf(r->fact, sizeof r->fact, "%.63s", fact);
    snprintf(r->value, sizeof r->value, "%.95s", value);
    snprintf(r->supported, sizeof r->supported, "%.511s", supported ? supported : "");
    if (supported && !strcmp(fact, "backend"))
        snprintf(r->text, sizeof r->text, "REFUSED: backend=%s is not supported (supported: %s)",
                 value, supported);
    else if (supported)
        snprintf(r->text, sizeof r->text, "REFUSED: %s=%s is not supported on %s (supported: %s)",
                 fact, value, out->backend, supported);
    else
        snprintf(r->text, sizeof r->text, "REFUSED: %s=%s is not built into this binary", fact,
                 value);
}

void facet_verdict_refuse(facet_verdict *v, const char *fact, const char *value,
                          const char *supported) {
    refuse(v, fact, value, supported);
    v->status = FACET_VERDICT_REFUSED;
}

static const facet_caps *caps_of(const facet_profile *p, const char *backend) {
    if (!p) return NULL;
    if (!strcmp(backend, "cpu")) return p->cpu;
    if (!strcmp(backend, "vulkan")) return p->vulkan;
    return NULL;
}

static void judge_keys(const facet_facts *f, facet_verdict *out) {
    char supported[192];
    for (int i = 0; i < f->n_config_keys; i++) {
        const facet_config_key *k = &f->config_keys[i];
        const facet_key_rule *rule = facet_key_rule_find(k->key);
        if (rule && rule->kind == FACET_KEY_INERT) continue;
        if (k->is_off) continue; /* null, false, 0, empty: the feature is switched off */
        if (rule) {
            snprintf(supported, sizeof supported, "absent or off; %s: outside the table",
                     rule->what);
            refuse(out, k->key, k->value, supported);
        } else if (f->family_known && facet_key_is_suspect(k->key)) {
            /* (outside the table the model_type refusal already covers its keys) */
            refuse(out, k->key, k->value,
                   "absent; an unknown key that may change the math");
        } else {
            size_t len = strlen(out->ignored);
            snprintf(out->ignored + len, sizeof out->ignored - len, "%s%s", len ? ", " : "",
                     k->key);
        }
    }
    if (f->config_keys_overflow) {
        char v[32];
        snprintf(v, sizeof v, "more than %d", FACET_MAX_CONFIG_KEYS);
        refuse(out, "unmodeled config keys", v, "at most 96 (each one is judged)");
    }
}

/* The DeepSeek facts a latent-attention model runs with (DeepseekV2/V3 modeling code). */
static void judge_deepseek(const facet_facts *f, facet_verdict *out) {
    char v[64];
    /* DeepseekV3Config's class (deepseek_v3, and kimi_k2 under Moonshot's name) */
    const char *cls_method = facet_config_class_find(f->model_type)->topk_method;
    int v3 = cls_method && !strcmp(cls_method, "noaux_tc");
    const char *method = v3 ? "noaux_tc" : NULL;
    if (method ? strcmp(f->topk_method, method)
               : strcmp(f->topk_method, "greedy") && strcmp(f->topk_method, "group_limited_greedy"))
        refuse(out, "topk_method", f->topk_method,
               v3 ? "noaux_tc (DeepseekV3TopkRouter)" : "greedy, group_limited_greedy");
    if (strcmp(f->scoring_func, v3 ? "sigmoid" : "softmax"))
        refuse(out, "scoring_func", f->scoring_func, v3 ? "sigmoid" : "softmax");
    if (f->num_experts > 0) {
        if (f->n_group < 1 || f->num_experts % f->n_group) {
            snprintf(v, sizeof v, "%lld", (long long)f->n_group);
            refuse(out, "n_group", v, "a divisor of n_routed_experts");
        } else if (f->topk_group < 1 || f->topk_group > f->n_group ||
                   f->topk_group * (f->num_experts / f->n_group) < f->num_experts_per_tok) {
            snprintf(v, sizeof v, "%lld", (long long)f->topk_group);
            refuse(out, "topk_group", v,
                   "1..n_group, its groups holding at least num_experts_per_tok experts");
        } else if (f->moe_score_bias && f->num_experts / f->n_group < 2) {
            snprintf(v, sizeof v, "%lld", (long long)f->n_group);
            refuse(out, "n_group", v, "groups of at least 2 experts (noaux_tc sums the top 2)");
        }
    }
    /* transformers' DeepseekV2Moe never normalizes; DeepSeek's own code does (and then
     * skips routed_scaling_factor): the two disagree, so neither is guessed */
    if (!v3 && f->norm_topk_prob && f->n_sparse_layers)
        refuse(out, "norm_topk_prob", "true", "false on deepseek_v2 (transformers and "
               "DeepSeek's modeling code disagree)");
    if (f->attention_bias)
        refuse(out, "attention_bias", "true", "false (no q_a / kv_a / o_proj biases)");
    /* transformers' decoder layers read first_k_dense_replace only */
    if (f->moe_layer_freq != 1) {
        snprintf(v, sizeof v, "%lld", (long long)f->moe_layer_freq);
        refuse(out, "moe_layer_freq", v, "1");
    }
}

void facet_judge(const facet_facts *f, const char *backend, facet_verdict *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->backend, sizeof out->backend, "%s", backend);
    int known_backend = !strcmp(backend, "cpu") || !strcmp(backend, "vulkan");
    if (!known_backend) refuse(out, "backend", backend, "cpu, vulkan");

    const facet_profile *p = facet_table_profile(f->model_type);
    const facet_caps *c = caps_of(p, backend);
    out->profile = p ? p->model_type : NULL;
    if (c && !c->built) refuse(out, "backend", backend, NULL);

    if (!p) {
        char list[512] = "";
        for (int i = 0; i < facet_n_profiles; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                     facet_profiles[i].model_type);
        refuse(out, "model_type", f->model_type[0] ? f->model_type : "(none)", list);
    } else if (f->architecture[0]) {
        int ok = 0;
        char list[192] = "";
        for (int i = 0; i < 4 && p->architectures[i]; i++) {
            ok |= !strcmp(p->architectures[i], f->architecture);
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                     p->architectures[i]);
        }
        if (!ok) refuse(out, "architectures", f->architecture, list);
    }

    judge_keys(f, out);
    /* DeepSeek-V2/V3 (issue 25): latent attention and DeepSeek's routing run; the
     * variants of neither class's modeling code are refused by name */
    if (f->kv_lora_rank > 0) judge_deepseek(f, out);
    if (f->kv_lora_rank > 0 && !strcmp(backend, "vulkan")) { /* no latent-attention shader */
        char v[32];
        snprintf(v, sizeof v, "%lld", (long long)f->kv_lora_rank);
        refuse(out, "kv_lora_rank", v, "absent (multi-head latent attention has no shader yet)");
    }
    if (f->experts_mxfp4 && !strcmp(backend, "vulkan")) /* gpt-oss's quantized experts */
        refuse(out, "quantization_config.quant_method", "mxfp4",
               "absent (MXFP4 experts have no shader yet; unquantized experts run)");
    if (c) {
        char value[96], range[192];
        for (int i = 0; i < facet_n_rows; i++) {
            const facet_row *row = &facet_rows[i];
            if (row->probed && !f->probed) {
                if (out->n_pending < FACET_MAX_PENDING) out->pending[out->n_pending++] = row->fact;
                continue;
            }
            if (!row->check(f, c, value, sizeof value)) {
                row->range(c, f, range, sizeof range);
                refuse(out, row->fact, value, range);
            }
        }
    }
    out->status = out->n_refusals ? FACET_VERDICT_REFUSED
                  : f->probed     ? FACET_VERDICT_SUPPORTED
                                  : FACET_VERDICT_PENDING_PROBE;
}

const char *facet_verdict_status_name(facet_verdict_status s) {
    switch (s) {
    case FACET_VERDICT_SUPPORTED: return "supported";
    case FACET_VERDICT_PENDING_PROBE: return "supported-pending-probe";
    case FACET_VERDICT_REFUSED: return "refused";
    }
    return "unknown";
}

size_t facet_verdict_format(const facet_verdict *v, char *buf, size_t cap) {
    size_t len = 0;
    if (!cap) return 0;
    buf[0] = '\0';
    for (int i = 0; i < v->n_refusals && len + 1 < cap; i++) {
        int w = snprintf(buf + len, cap - len, "%s\n", v->refusals[i].text);
        if (w < 0) break;
        len = (size_t)w >= cap - len ? cap - 1 : len + (size_t)w;
    }
    if (v->refusals_dropped && len + 1 < cap) {
        int w = snprintf(buf + len, cap - len, "REFUSED: ... and %d more\n", v->refusals_dropped);
        if (w > 0) len = (size_t)w >= cap - len ? cap - 1 : len + (size_t)w;
    }
    return len;
}

facet_status facet_verdict_error(const facet_verdict *v, facet_error *err) {
    if (v->status != FACET_VERDICT_REFUSED) {
        facet_err_clear(err);
        return FACET_OK;
    }
    char msg[sizeof err->message];
    size_t len = 0;
    msg[0] = '\0';
    for (int i = 0; i < v->n_refusals && len + 1 < sizeof msg; i++) {
        int w = snprintf(msg + len, sizeof msg - len, "%s%s", i ? "; " : "", v->refusals[i].text);
        if (w < 0) break;
        len = (size_t)w >= sizeof msg - len ? sizeof msg - 1 : len + (size_t)w;
    }
    return facet_err(err, FACET_E_UNSUPPORTED, "%s", msg);
}
