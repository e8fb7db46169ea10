/*
 * facts_gguf.c — GGUF metadata and tensor infos -> facet_facts (see facts_gguf.h).
 *
 * The metadata is checked key by key here (typed reads that name the GGUF key), then
 * written as the config.json object the same family would have and handed to
 * facet_facts_from_json, so one reader derives every implicit fact (defaults of the
 * config class, head_dim, window pattern, rope) and the table judges keys it does not
 * model. llama.cpp's own conventions are then applied, and the weight facts probed from
 * the tensor infos.
 */
#include "model/facts_gguf.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/safetensors.h"
#include "kernels/cpu/quant.h"
#include "model/config_class.h"
#include "model/gguf_checkpoint.h"
#include "model/tensors.h"
#include "util/error.h"

#define TRY(x)                                 \
    do {                                       \
        facet_status st_ = (x);                \
        if (st_ != FACET_OK) return st_;       \
    } while (0)

/* general.architecture -> config.json model_type (the table's profiles), with the
 * conventions llama.cpp keeps per family rather than in the file's keys:
 *   permutes_qk: its converter stores attn_q / attn_k rows permuted for its interleaved
 *     ("NORM") rope (convert_hf_to_gguf.py's LlamaModel.permute), which the checkpoint
 *     view undoes (gguf_checkpoint.h);
 *   scale_27b_layers: nonzero for the families whose q.k scale llama.cpp fixes itself,
 *     1/sqrt(key_length), except 1/sqrt(hidden/heads) for its 27B type, the block_count
 *     given here (as the reference code's query_pre_attn_scalar). */
typedef struct {
    const char *arch, *model_type;
    int permutes_qk;
    int64_t scale_27b_layers;
} arch_row;
static const arch_row ARCHS[] = {
    {"llama", "llama", 1, 0},     {"qwen2", "qwen2", 0, 0},       {"qwen3", "qwen3", 0, 0},
    {"gemma", "gemma", 0, 0},     {"gemma2", "gemma2", 0, 46},    {"gemma3", "gemma3_text", 0, 62},
    {"phi3", "phi3", 0, 0},       {"olmo2", "olmo2", 0, 0},       {"smollm3", "smollm3", 1, 0},
    {"granite", "granite", 1, 0}, {"qwen3moe", "qwen3_moe", 0, 0},
    {"deepseek2", "deepseek_v2", 0, 0}, {"gpt-oss", "gpt_oss", 0, 0},
    {"mamba", "mamba", 0, 0},     {"mamba2", "mamba2", 0, 0},     {"lfm2", "lfm2", 0, 0},
    /* q/k rows permuted by the converter (GraniteHybridModel keeps LlamaModel's
     * undo_permute, rope or not) */
    {"granitehybrid", "granitemoehybrid", 1, 0}, {"nemotron_h", "nemotron_h", 1, 0},
    {"falcon-h1", "falcon_h1", 0, 0},  {"jamba", "jamba", 0, 0},
};
#define N_ARCHS (sizeof ARCHS / sizeof ARCHS[0])

/* The row of general.architecture `arch`, or NULL. */
static const arch_row *arch_of(const char *arch) {
    for (size_t i = 0; i < N_ARCHS; i++)
        if (!strcmp(ARCHS[i].arch, arch)) return &ARCHS[i];
    return NULL;
}

static const char *model_type_of(const char *arch) {
    const arch_row *r = arch_of(arch);
    return r ? r->model_type : NULL;
}

/* llama.cpp writes Mixtral as general.architecture "llama" with <arch>.expert_count:
 * the class whose modeling code routes. */
static const struct {
    const char *arch, *model_type;
} MOE_ARCHS[] = {{"llama", "mixtral"}};

int facet_gguf_arch_permutes_qk(const char *arch) {
    const arch_row *r = arch_of(arch);
    return r && r->permutes_qk;
}

/* The block types with kernels come from their traits table (kernels/cpu/quant.h). */
const char *facet_gguf_runnable_types(void) { return facet_qtype_runnable_list(); }

static int runnable(uint32_t type) {
    return type == GGML_F32 || type == GGML_F16 || type == GGML_BF16 ||
           facet_qtype_of_ggml(type) >= 0;
}

int facet_gguf_matrices_q8_0(const gguf_model *m) {
    size_t n = 0;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const gguf_tensor *t = m->by_name[i];
        if (t->n_dims < 2) continue;
        if (t->type != GGML_Q8_0) return 0;
        n++;
    }
    return n > 0;
}

/* ---- reading <arch>.* keys ---------------------------------------------------------- */
typedef struct ctx {
    const gguf_file *g;         /* the first part: all metadata                          */
    char arch[64];
    json_t *cfg;                /* the config.json being written                         */
    const char *used[64];       /* <arch>.* suffixes consumed                             */
    int n_used;
    facet_error *err;
} ctx;

static void use(ctx *c, const char *suffix) {
    if (c->n_used < 64) c->used[c->n_used++] = suffix;
}

static int used(const ctx *c, const char *suffix) {
    for (int i = 0; i < c->n_used; i++)
        if (!strcmp(c->used[i], suffix)) return 1;
    return 0;
}

static void key_of(const ctx *c, const char *suffix, char *buf, size_t cap) {
    snprintf(buf, cap, "%s.%s", c->arch, suffix);
}

/* Integer <arch>.suffix in [min, max] -> cfg[json_key] (when given). */
static facet_status map_int(ctx *c, const char *suffix, const char *json_key, int required,
                            int64_t min, int64_t max, int64_t *out) {
    char key[160];
    key_of(c, suffix, key, sizeof key);
    use(c, suffix);
    int present = 0;
    int64_t v = 0;
    TRY(gguf_get_int(c->g, key, required, min, max, &v, &present, c->err));
    if (present) {
        if (json_key) json_object_set_new(c->cfg, json_key, json_integer(v));
        if (out) *out = v;
    }
    return FACET_OK;
}

static facet_status map_float(ctx *c, const char *suffix, const char *json_key, int required,
                              double *out) {
    char key[160];
    key_of(c, suffix, key, sizeof key);
    use(c, suffix);
    int present = 0;
    double v = 0;
    TRY(gguf_get_float(c->g, key, required, 1, &v, &present, c->err));
    if (present) {
        if (json_key) json_object_set_new(c->cfg, json_key, json_real(v));
        if (out) *out = v;
    }
    return FACET_OK;
}

/* Printable ASCII of s (n bytes, at most cap - 1), other bytes as '?': names and values
 * that are not valid UTF-8 still reach the table, recognizably. */
static const char *ascii(const char *s, uint64_t n, char *buf, size_t cap) {
    size_t k = 0;
    for (uint64_t i = 0; i < n && k + 1 < cap; i++)
        buf[k++] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
    buf[k] = 0;
    return buf;
}

/* A pair's value as JSON, for keys kept for the table (arrays: their type and count). */
static json_t *kv_json(const gguf_kv *kv) {
    if (kv->type == GGUF_T_STRING) {
        json_t *v = json_stringn((const char *)kv->val, kv->val_len);
        char buf[96];
        return v ? v : json_string(ascii((const char *)kv->val, kv->val_len, buf, sizeof buf));
    }
    if (kv->type == GGUF_T_BOOL) return json_boolean(kv->val[0]);
    if (kv->type == GGUF_T_FLOAT32 || kv->type == GGUF_T_FLOAT64)
        return isfinite(gguf_kv_number(kv)) ? json_real(gguf_kv_number(kv))
                                            : json_string(isnan(gguf_kv_number(kv)) ? "nan" : "inf");
    char buf[64];
    if (gguf_kv_is_int(kv)) { /* exact: through its decimal text (a u64 may not fit) */
        gguf_kv_render(kv, buf, sizeof buf);
        errno = 0;
        char *end;
        long long v = strtoll(buf, &end, 10);
        return errno || *end ? json_string(buf) : json_integer((json_int_t)v);
    }
    gguf_kv_render(kv, buf, sizeof buf);
    return json_string(buf); /* an array: its element type and count */
}

/* rope.scaling.*: linear and yarn become a rope_scaling object; anything else is kept
 * under its GGUF name for the table. */
static facet_status map_rope_scaling(ctx *c) {
    char key[160];
    const char *s = NULL;
    uint64_t len = 0;
    int present = 0;
    key_of(c, "rope.scaling.type", key, sizeof key);
    use(c, "rope.scaling.type");
    TRY(gguf_get_str(c->g, key, 0, &s, &len, &present, c->err));
    use(c, "rope.scaling.finetuned"); /* bookkeeping */
    int64_t orig = 0;
    TRY(map_int(c, "rope.scaling.original_context_length", NULL, 0, 1, INT64_C(1) << 40,
                &orig));
    if (orig) json_object_set_new(c->cfg, "original_max_position_embeddings", json_integer(orig));
    if (!present || (len == 4 && !memcmp(s, "none", 4))) return FACET_OK;
    int linear = len == 6 && !memcmp(s, "linear", 6), yarn = len == 4 && !memcmp(s, "yarn", 4);
    if (!linear && !yarn) { /* longrope (factors in tensors), or a type facet does not know */
        json_object_set_new(c->cfg, key, json_stringn(s, len));
        return FACET_OK;
    }
    json_t *o = json_object();
    json_object_set_new(o, "rope_type", json_string(linear ? "linear" : "yarn"));
    double factor = 0, v = 0;
    TRY(map_float(c, "rope.scaling.factor", NULL, 1, &factor));
    json_object_set_new(o, "factor", json_real(factor));
    if (yarn) {
        if (orig) json_object_set_new(o, "original_max_position_embeddings", json_integer(orig));
        v = 0;
        TRY(map_float(c, "rope.scaling.yarn_beta_fast", NULL, 0, &v));
        if (v) json_object_set_new(o, "beta_fast", json_real(v));
        v = 0;
        TRY(map_float(c, "rope.scaling.yarn_beta_slow", NULL, 0, &v));
        if (v) json_object_set_new(o, "beta_slow", json_real(v));
        v = 0;
        TRY(map_float(c, "rope.scaling.attn_factor", NULL, 0, &v));
        if (v) json_object_set_new(o, "attention_factor", json_real(v));
    }
    json_object_set_new(c->cfg, "rope_scaling", o);
    return FACET_OK;
}

/* The vocabulary size: <arch>.vocab_size, else the tokenizer's token count, else the
 * embedding's rows. */
static facet_status map_vocab(ctx *c, const gguf_model *m) {
    int64_t v = 0;
    TRY(map_int(c, "vocab_size", NULL, 0, 1, INT64_C(1) << 26, &v));
    const gguf_kv *tok = gguf_find_kv(c->g, "tokenizer.ggml.tokens");
    const gguf_tensor *emb = gguf_model_find(m, facet_tensor_slot(FACET_TS_EMBED_TOKENS)->gguf);
    if (!v && tok && tok->type == GGUF_T_ARRAY) v = (int64_t)tok->arr_n;
    if (!v && emb && emb->n_dims == 2) v = emb->ne[1];
    if (!v)
        return facet_err(c->err, FACET_E_NOT_FOUND,
                         "%s: no vocabulary size: no %s.vocab_size, no tokenizer.ggml.tokens "
                         "and no 2-D token_embd.weight",
                         c->g->path, c->arch);
    json_object_set_new(c->cfg, "vocab_size", json_integer(v));
    return FACET_OK;
}

static facet_status map_tokens(ctx *c) {
    static const char *const eos_keys[] = {"tokenizer.ggml.eos_token_id",
                                           "tokenizer.ggml.eot_token_id",
                                           "tokenizer.ggml.eom_token_id"};
    int64_t id = 0;
    int present = 0;
    TRY(gguf_get_int(c->g, "tokenizer.ggml.bos_token_id", 0, 0, INT32_MAX, &id, &present,
                     c->err));
    if (present) json_object_set_new(c->cfg, "bos_token_id", json_integer(id));
    json_t *eos = json_array();
    json_object_set_new(c->cfg, "eos_token_id", eos);
    for (size_t i = 0; i < sizeof eos_keys / sizeof eos_keys[0]; i++) {
        TRY(gguf_get_int(c->g, eos_keys[i], 0, 0, INT32_MAX, &id, &present, c->err));
        if (present) json_array_append_new(eos, json_integer(id));
    }
    return FACET_OK;
}

/* Keys of the file the mapping above did not consume: <arch>.* and unknown namespaces
 * are kept under their GGUF names; general.*, tokenizer.*, split.*, quantize.* are
 * bookkeeping (tokenizer keys are the tokenizer's, not the forward pass's). */
static void keep_rest(ctx *c) {
    size_t alen = strlen(c->arch);
    for (size_t i = 0; i < c->g->n_kv; i++) {
        const gguf_kv *kv = &c->g->kv[i];
        const char *k = kv->key;
        if (!strncmp(k, "general.", 8) || !strncmp(k, "tokenizer.", 10) ||
            !strncmp(k, "split.", 6) || !strncmp(k, "quantize.", 9))
            continue;
        if (!strncmp(k, c->arch, alen) && k[alen] == '.' && used(c, k + alen + 1)) continue;
        char safe[64];
        json_object_set_new(c->cfg, ascii(k, strlen(k), safe, sizeof safe), kv_json(kv));
    }
}

/* deepseek2 (llama.cpp's DeepSeek-V2/V3 architecture) -> DeepseekV2Config / DeepseekV3Config
 * keys, as convert_hf_to_gguf.py's DeepseekV2Model writes them and llama.cpp's deepseek2
 * loader reads them. head_count_kv is 1 (llama.cpp's MQA view of the latent); key_length /
 * value_length are the latent's widths in files with key_length_mla / value_length_mla
 * (the per-head widths), the per-head widths in older files. yarn_log_multiplier is
 * 0.1 * mscale_all_dim, which llama.cpp applies as both mscale and mscale_all_dim. */
static facet_status map_mla(ctx *c, int req) {
    json_t *cfg = c->cfg;
    int64_t heads = 0, rot = 0, klen = 0, vlen = 0, kmla = 0, vmla = 0, q_lora = 0, kv_lora = 0;
    TRY(map_int(c, "attention.head_count", "num_attention_heads", req, 1, INT64_C(1) << 14,
                &heads));
    use(c, "attention.head_count_kv"); /* 1: llama.cpp's MQA view of the latent */
    if (heads) json_object_set_new(cfg, "num_key_value_heads", json_integer(heads));
    TRY(map_int(c, "attention.q_lora_rank", NULL, 0, 0, INT64_C(1) << 20, &q_lora));
    json_object_set_new(cfg, "q_lora_rank", q_lora ? json_integer(q_lora) : json_null());
    TRY(map_int(c, "attention.kv_lora_rank", "kv_lora_rank", req, 1, INT64_C(1) << 20, &kv_lora));
    TRY(map_int(c, "rope.dimension_count", "qk_rope_head_dim", req, 1, INT64_C(1) << 16, &rot));
    TRY(map_int(c, "attention.key_length", NULL, 0, 1, INT64_C(1) << 20, &klen));
    TRY(map_int(c, "attention.value_length", NULL, 0, 1, INT64_C(1) << 20, &vlen));
    TRY(map_int(c, "attention.key_length_mla", NULL, 0, 1, INT64_C(1) << 20, &kmla));
    TRY(map_int(c, "attention.value_length_mla", NULL, 0, 1, INT64_C(1) << 20, &vmla));
    int64_t k = kmla ? kmla : klen, v = vmla ? vmla : vlen;
    if (req && (!k || !v || k <= rot))
        return facet_err(c->err, FACET_E_FORMAT,
                         "%s: %s.attention.key_length%s = %" PRId64 " with rope.dimension_count "
                         "%" PRId64 " and value_length%s = %" PRId64 ": expected a key head wider "
                         "than its rope part and a value head",
                         c->g->path, c->arch, kmla ? "_mla" : "", k, rot, vmla ? "_mla" : "", v);
    if (k > rot) json_object_set_new(cfg, "qk_nope_head_dim", json_integer(k - rot));
    if (v) json_object_set_new(cfg, "v_head_dim", json_integer(v));
    /* routing */
    int64_t gating = 0, groups = 0, dense = 0, shared = 0;
    TRY(map_int(c, "expert_count", "n_routed_experts", 0, 0, 4096, NULL));
    TRY(map_int(c, "expert_used_count", "num_experts_per_tok", 0, 1, 4096, NULL));
    TRY(map_int(c, "expert_feed_forward_length", "moe_intermediate_size", 0, 1, INT64_C(1) << 24,
                NULL));
    TRY(map_int(c, "expert_shared_count", "n_shared_experts", 0, 0, 4096, &shared));
    if (!shared) json_object_set_new(cfg, "n_shared_experts", json_null());
    TRY(map_int(c, "leading_dense_block_count", "first_k_dense_replace", 0, 0, FACET_MAX_LAYERS,
                &dense));
    if (!dense) json_object_set_new(cfg, "first_k_dense_replace", json_integer(0));
    double scale = 1.0;
    TRY(map_float(c, "expert_weights_scale", NULL, 0, &scale));
    json_object_set_new(cfg, "routed_scaling_factor", json_real(scale));
    char key[160];
    key_of(c, "expert_weights_norm", key, sizeof key);
    use(c, "expert_weights_norm");
    const gguf_kv *norm = gguf_find_kv(c->g, key);
    if (norm && norm->type != GGUF_T_BOOL)
        return facet_err(c->err, FACET_E_FORMAT, "%s: key %s is not a bool", c->g->path, key);
    json_object_set_new(cfg, "norm_topk_prob", json_boolean(norm && norm->val[0]));
    /* llama.cpp's deepseek2: 1 softmax, 2 sigmoid; absent is softmax (DeepSeek-V2 files) */
    TRY(map_int(c, "expert_gating_func", NULL, 0, 1, 3, &gating));
    TRY(map_int(c, "expert_group_count", NULL, 0, 1, 4096, &groups));
    int64_t groups_used = 0;
    TRY(map_int(c, "expert_group_used_count", NULL, 0, 1, 4096, &groups_used));
    if (gating == 2) { /* DeepSeek-V3: sigmoid scores, exp_probs_b, top-2-sum groups */
        json_object_set_new(cfg, "model_type", json_string("deepseek_v3"));
        json_object_set_new(cfg, "scoring_func", json_string("sigmoid"));
        json_object_set_new(cfg, "topk_method", json_string("noaux_tc"));
        json_object_set_new(cfg, "n_group", json_integer(groups ? groups : 1));
        json_object_set_new(cfg, "topk_group", json_integer(groups_used ? groups_used : 1));
    } else if (gating == 3 || groups > 1) {
        /* llama.cpp ranks groups by the sum of their top 2 scores, DeepSeek-V2's
         * group_limited_greedy by their max: kept under the GGUF names, refused */
        if (gating == 3) {
            key_of(c, "expert_gating_func", key, sizeof key);
            json_object_set_new(cfg, key, json_integer(gating));
        }
        if (groups > 1) {
            key_of(c, "expert_group_count", key, sizeof key);
            json_object_set_new(cfg, key, json_integer(groups));
        }
    } else {
        json_object_set_new(cfg, "scoring_func", json_string("softmax"));
        json_object_set_new(cfg, "topk_method", json_string("greedy"));
    }
    double log_mul = 0;
    TRY(map_float(c, "rope.scaling.yarn_log_multiplier", NULL, 0, &log_mul));
    TRY(map_rope_scaling(c));
    json_t *rs = json_object_get(cfg, "rope_scaling");
    if (log_mul && json_is_object(rs)) {
        json_object_set_new(rs, "mscale", json_real(log_mul / 0.1));
        json_object_set_new(rs, "mscale_all_dim", json_real(log_mul / 0.1));
    } else if (log_mul) {
        key_of(c, "rope.scaling.yarn_log_multiplier", key, sizeof key);
        json_object_set_new(cfg, key, json_real(log_mul));
    }
    TRY(map_int(c, "nextn_predict_layers", "num_nextn_predict_layers", 0, 0, 64, NULL));
    return FACET_OK;
}

/* gpt-oss (llama.cpp's LLM_ARCH_OPENAI_MOE) -> GptOssConfig keys beyond the generic ones:
 * expert_feed_forward_length is the experts' width (GptOssConfig's intermediate_size; the
 * converter writes it as feed_forward_length too); llama.cpp windows the layers i with
 * i % period < period - 1 (period: attention.sliding_window_pattern, 2 when absent),
 * written here as layer_types; it clamps the SwiGLU at 7.0 with alpha 1.702 whatever the
 * file says (no key), GptOssConfig's swiglu_limit default. */
static facet_status map_gpt_oss(ctx *c, int64_t layers) {
    int64_t eff = 0, period = 2;
    TRY(map_int(c, "expert_feed_forward_length", "intermediate_size", 0, 1, INT64_C(1) << 24,
                &eff));
    TRY(map_int(c, "attention.sliding_window_pattern", NULL, 0, 1, FACET_MAX_LAYERS, &period));
    json_object_del(c->cfg, "sliding_window_pattern");
    json_t *types = json_array();
    for (int64_t i = 0; i < layers; i++)
        json_array_append_new(types, json_string(i % period < period - 1 ? "sliding_attention"
                                                                         : "full_attention"));
    json_object_set_new(c->cfg, "layer_types", types);
    json_object_set_new(c->cfg, "swiglu_limit", json_real(7.0));
    return FACET_OK;
}

/* mamba / mamba2 (llama.cpp's LLM_ARCH_MAMBA / MAMBA2) -> MambaConfig / Mamba2Config keys,
 * as convert_hf_to_gguf.py's MambaModel / Mamba2Model write them: ssm.inner_size is
 * expand x hidden_size, ssm.time_step_rank is Mamba-1's dt rank but Mamba-2's head count
 * (head_dim = inner / heads), ssm.group_count Mamba-2's n_groups; feed_forward_length and
 * attention.head_count are written as 0 ("unused"); the conv bias is a tensor, not a key.
 * ssm.dt_b_c_rms true (Falcon-Mamba's RMSNorms of dt, B, C) is kept for the table. */
static facet_status map_ssm(ctx *c, const gguf_model *m, int req) {
    json_t *cfg = c->cfg;
    int v2 = !strcmp(c->arch, "mamba2");
    int64_t hidden = json_integer_value(json_object_get(cfg, "hidden_size"));
    int64_t inner = 0, rank = 0;
    use(c, "feed_forward_length");
    use(c, "attention.head_count");
    TRY(map_int(c, "ssm.conv_kernel", "conv_kernel", req, 1, 1 << 10, NULL));
    TRY(map_int(c, "ssm.state_size", "state_size", req, 1, 1 << 16, NULL));
    TRY(map_int(c, "ssm.inner_size", NULL, req, 1, INT64_C(1) << 24, &inner));
    if (inner && hidden && inner % hidden) {
        char key[160];
        key_of(c, "ssm.inner_size", key, sizeof key);
        return facet_err(c->err, FACET_E_FORMAT,
                         "%s: key %s is %" PRId64 ", expected a multiple of embedding_length "
                         "%" PRId64 " (expand x hidden_size)",
                         c->g->path, key, inner, hidden);
    }
    if (inner && hidden) json_object_set_new(cfg, "expand", json_integer(inner / hidden));
    TRY(map_int(c, "ssm.time_step_rank", v2 ? "num_heads" : "time_step_rank", req, 1,
                INT64_C(1) << 20, &rank));
    if (v2) {
        if (rank && inner % rank) {
            char key[160];
            key_of(c, "ssm.time_step_rank", key, sizeof key);
            return facet_err(c->err, FACET_E_FORMAT,
                             "%s: key %s (Mamba-2's head count) is %" PRId64 ", expected a "
                             "divisor of ssm.inner_size %" PRId64,
                             c->g->path, key, rank, inner);
        }
        if (rank) json_object_set_new(cfg, "head_dim", json_integer(inner / rank));
        TRY(map_int(c, "ssm.group_count", "n_groups", req, 1, INT64_C(1) << 20, NULL));
    } else {
        char key[160];
        key_of(c, "ssm.dt_b_c_rms", key, sizeof key);
        use(c, "ssm.dt_b_c_rms");
        const gguf_kv *kv = gguf_find_kv(c->g, key);
        if (kv && kv->type != GGUF_T_BOOL)
            return facet_err(c->err, FACET_E_FORMAT, "%s: key %s is not a bool", c->g->path, key);
        if (kv && kv->val[0]) json_object_set_new(cfg, key, json_true());
    }
    TRY(map_float(c, "attention.layer_norm_rms_epsilon", "layer_norm_epsilon", req, NULL));
    json_object_set_new(cfg, "use_conv_bias",
                        json_boolean(gguf_model_find(m, "blk.0.ssm_conv1d.bias") != NULL));
    json_object_set_new(cfg, "use_bias", json_false());
    return FACET_OK;
}

/* Whether some layer has a conv bias (a hybrid's first layer may attend; the loader
 * asks it of every Mamba layer then). */
static int any_conv_bias(const gguf_model *m) {
    for (size_t i = 0; i < m->n_tensors; i++) {
        const char *n = m->by_name[i]->name;
        size_t len = strlen(n);
        if (len > 16 && !strcmp(n + len - 16, ".ssm_conv1d.bias")) return 1;
    }
    return 0;
}

/* attention.head_count_kv as a per-layer array (llama.cpp's hybrids): 0 on a recurrent
 * layer, the attention layers' one KV head count elsewhere. layer_types gets `recurrent`
 * or `attention` per layer, num_key_value_heads the count. */
static facet_status map_kv_layers(ctx *c, int64_t layers, const char *recurrent,
                                  const char *attention) {
    char key[160];
    key_of(c, "attention.head_count_kv", key, sizeof key);
    use(c, "attention.head_count_kv");
    const gguf_kv *kv = gguf_find_kv(c->g, key);
    int ok = kv && (gguf_kv_is_int(kv) || (kv->type == GGUF_T_ARRAY && (int64_t)kv->arr_n == layers &&
                                           (kv->arr_type == GGUF_T_UINT32 || kv->arr_type == GGUF_T_INT32)));
    if (!ok)
        return facet_err(c->err, FACET_E_FORMAT,
                         "%s: key %s is %s, expected an array of block_count (%" PRId64
                         ") uint32 or int32 (0 on a recurrent layer)",
                         c->g->path, key, kv ? "of another type or length" : "missing", layers);
    json_t *types = json_array();
    int64_t nkv = 0;
    for (int64_t i = 0; i < layers; i++) {
        int64_t v;
        if (kv->type == GGUF_T_ARRAY) {
            uint32_t u;
            memcpy(&u, kv->val + 4 * i, 4);
            v = kv->arr_type == GGUF_T_INT32 ? (int64_t)(int32_t)u : (int64_t)u;
        } else {
            v = (int64_t)gguf_kv_number(kv);
        }
        if (v < 0 || (nkv && v && v != nkv)) {
            json_decref(types);
            return facet_err(c->err, FACET_E_FORMAT,
                             "%s: key %s[%" PRId64 "] is %" PRId64 ", expected 0 or the one KV "
                             "head count of the attention layers (%" PRId64 ")",
                             c->g->path, key, i, v, nkv);
        }
        if (v) nkv = v;
        json_array_append_new(types, json_string(v ? attention : recurrent));
    }
    json_object_set_new(c->cfg, "layer_types", types);
    if (nkv) json_object_set_new(c->cfg, "num_key_value_heads", json_integer(nkv));
    return FACET_OK;
}

/* lfm2 (llama.cpp's LLM_ARCH_LFM2): attention.head_count_kv is an array, 0 on the short
 * convolution layers (which become layer_types), the attention layers' count elsewhere;
 * feed_forward_length is the FFN width after Lfm2MLP's adjustment (so no adjustment
 * here); shortconv.l_cache is conv_L_cache. */
static facet_status map_lfm2(ctx *c, int64_t layers) {
    TRY(map_kv_layers(c, layers, "conv", "full_attention"));
    json_object_set_new(c->cfg, "block_auto_adjust_ff_dim", json_false());
    TRY(map_int(c, "shortconv.l_cache", "conv_L_cache", 1, 1, 1 << 10, NULL));
    /* the norms' eps: Lfm2Config's norm_eps */
    json_t *eps = json_object_get(c->cfg, "rms_norm_eps");
    if (eps) json_object_set(c->cfg, "norm_eps", eps);
    json_object_del(c->cfg, "rms_norm_eps");
    return FACET_OK;
}

/* granitehybrid (llama.cpp's LLM_ARCH_GRANITE_HYBRID, convert_hf_to_gguf.py's
 * GraniteHybridModel) -> GraniteMoeHybridConfig keys: head_count_kv an array, 0 on the
 * Mamba-2 layers (layer_types "mamba" / "attention"); ssm.* the mamba_* keys as for
 * mamba2 (inner_size = mamba_expand x hidden, time_step_rank = mamba_n_heads); the conv
 * bias from its tensor; rope.scaling.finetuned is the converter's rope switch (false for
 * Granite 4.0-H: position_embedding_type "nope"; llama.cpp takes a missing key as true);
 * expert_shared_feed_forward_length is shared_intermediate_size. The granite
 * multipliers and the experts' keys are read by build_config as for the other classes. */
static facet_status map_granite_hybrid(ctx *c, const gguf_model *m, int64_t layers,
                                       int64_t hidden) {
    TRY(map_kv_layers(c, layers, "mamba", "attention"));
    int64_t inner = 0, heads = 0;
    TRY(map_int(c, "ssm.conv_kernel", "mamba_d_conv", 1, 1, 1 << 10, NULL));
    TRY(map_int(c, "ssm.state_size", "mamba_d_state", 1, 1, 1 << 16, NULL));
    TRY(map_int(c, "ssm.group_count", "mamba_n_groups", 1, 1, INT64_C(1) << 20, NULL));
    TRY(map_int(c, "ssm.inner_size", NULL, 1, 1, INT64_C(1) << 24, &inner));
    TRY(map_int(c, "ssm.time_step_rank", "mamba_n_heads", 1, 1, INT64_C(1) << 20, &heads));
    if (inner % hidden || inner % heads) {
        char key[160];
        key_of(c, "ssm.inner_size", key, sizeof key);
        return facet_err(c->err, FACET_E_FORMAT,
                         "%s: key %s is %" PRId64 ", expected a multiple of embedding_length "
                         "%" PRId64 " (mamba_expand x hidden_size) and of ssm.time_step_rank "
                         "%" PRId64 " (the Mamba-2 head count)",
                         c->g->path, key, inner, hidden, heads);
    }
    json_object_set_new(c->cfg, "mamba_expand", json_integer(inner / hidden));
    json_object_set_new(c->cfg, "mamba_d_head", json_integer(inner / heads));
    json_object_set_new(c->cfg, "mamba_conv_bias", json_boolean(any_conv_bias(m)));
    json_object_set_new(c->cfg, "mamba_proj_bias", json_false());
    char key[160];
    key_of(c, "rope.scaling.finetuned", key, sizeof key);
    use(c, "rope.scaling.finetuned");
    const gguf_kv *kv = gguf_find_kv(c->g, key);
    if (kv && kv->type != GGUF_T_BOOL)
        return facet_err(c->err, FACET_E_FORMAT, "%s: key %s is not a bool", c->g->path, key);
    json_object_set_new(c->cfg, "position_embedding_type",
                        json_string(!kv || kv->val[0] ? "rope" : "nope"));
    TRY(map_int(c, "expert_shared_feed_forward_length", "shared_intermediate_size", 0, 1,
                INT64_C(1) << 24, NULL));
    /* the dense form (no experts: the shared MLP split into ffn_gate / ffn_up / ffn_down
     * of feed_forward_length) has not been cross-checked against llama.cpp */
    key_of(c, "expert_count", key, sizeof key);
    const gguf_kv *e = gguf_find_kv(c->g, key);
    if (!e || !gguf_kv_is_int(e) || gguf_kv_number(e) <= 0)
        return facet_err(c->err, FACET_E_UNSUPPORTED,
                         "%s: key %s is %s, expected a positive expert count (a granitehybrid "
                         "file without experts is not mapped yet)",
                         c->g->path, key, e ? "not a positive integer" : "missing");
    return FACET_OK;
}

/* A per-layer uint32 / int32 array <arch>.suffix of `layers` entries (or one integer for
 * all) -> out[]; missing: FACET_E_FORMAT naming the key. */
static facet_status layer_ints(ctx *c, const char *suffix, int64_t layers, int64_t *out) {
    char key[160];
    key_of(c, suffix, key, sizeof key);
    use(c, suffix);
    const gguf_kv *kv = gguf_find_kv(c->g, key);
    int ok = kv && (gguf_kv_is_int(kv) || (kv->type == GGUF_T_ARRAY && (int64_t)kv->arr_n == layers &&
                                           (kv->arr_type == GGUF_T_UINT32 || kv->arr_type == GGUF_T_INT32)));
    if (!ok)
        return facet_err(c->err, FACET_E_FORMAT,
                         "%s: key %s is %s, expected an array of block_count (%" PRId64
                         ") uint32 or int32",
                         c->g->path, key, kv ? "of another type or length" : "missing", layers);
    for (int64_t i = 0; i < layers; i++) {
        if (kv->type == GGUF_T_ARRAY) {
            uint32_t u;
            memcpy(&u, kv->val + 4 * i, 4);
            out[i] = kv->arr_type == GGUF_T_INT32 ? (int64_t)(int32_t)u : (int64_t)u;
        } else {
            out[i] = (int64_t)gguf_kv_number(kv);
        }
        if (out[i] < 0 || out[i] > (INT64_C(1) << 24))
            return facet_err(c->err, FACET_E_FORMAT,
                             "%s: key %s[%" PRId64 "] is %" PRId64 ", expected 0 to 2^24",
                             c->g->path, key, i, out[i]);
    }
    return FACET_OK;
}

/* nemotron_h (llama.cpp's LLM_ARCH_NEMOTRON_H, convert_hf_to_gguf.py's NemotronHModel, a
 * GraniteHybridModel) -> NemotronHConfig keys: a layer attends where head_count_kv is
 * nonzero, is an MLP where feed_forward_length is nonzero, is Mamba-2 where both are 0
 * (hybrid_override_pattern "*", "-", "M"); key_length is head_dim; ssm.inner_size is
 * mamba_num_heads x mamba_head_dim, ssm.time_step_rank mamba_num_heads; the conv bias
 * from its tensor; attention.layer_norm_rms_epsilon is layer_norm_epsilon. Nemotron-H
 * has no rotary embedding (the converter writes rope.scaling.finetuned false). The MoE
 * form is another architecture (nemotron_h_moe). */
static facet_status map_nemotron_h(ctx *c, const gguf_model *m, int64_t layers, int req) {
    json_t *cfg = c->cfg;
    int64_t kv[FACET_MAX_LAYERS], ff[FACET_MAX_LAYERS], nkv = 0, nff = 0;
    TRY(layer_ints(c, "attention.head_count_kv", layers, kv));
    TRY(layer_ints(c, "feed_forward_length", layers, ff));
    char pat[FACET_MAX_LAYERS + 1];
    for (int64_t i = 0; i < layers; i++) {
        char key[160];
        if ((kv[i] && nkv && kv[i] != nkv) || (ff[i] && nff && ff[i] != nff) || (kv[i] && ff[i])) {
            key_of(c, kv[i] && ff[i] ? "feed_forward_length" : kv[i] && nkv && kv[i] != nkv
                                                                ? "attention.head_count_kv"
                                                                : "feed_forward_length",
                   key, sizeof key);
            return facet_err(c->err, FACET_E_FORMAT,
                             "%s: key %s[%" PRId64 "] is %" PRId64 ", expected 0 or the one "
                             "value of the layers of its kind (a layer attends, is an MLP or "
                             "is Mamba-2)",
                             c->g->path, key, i, kv[i] && ff[i] ? ff[i] : kv[i] ? kv[i] : ff[i]);
        }
        if (kv[i]) nkv = kv[i];
        if (ff[i]) nff = ff[i];
        pat[i] = kv[i] ? '*' : ff[i] ? '-' : 'M';
    }
    pat[layers] = 0;
    json_object_set_new(cfg, "hybrid_override_pattern", json_string(pat));
    if (nkv) json_object_set_new(cfg, "num_key_value_heads", json_integer(nkv));
    if (nff) json_object_set_new(cfg, "intermediate_size", json_integer(nff));
    TRY(map_int(c, "attention.head_count", "num_attention_heads", req, 1, INT64_C(1) << 14, NULL));
    int64_t klen = 0, vlen = 0, inner = 0, heads = 0;
    TRY(map_int(c, "attention.key_length", "head_dim", 0, 1, INT64_C(1) << 16, &klen));
    TRY(map_int(c, "attention.value_length", NULL, 0, 1, INT64_C(1) << 16, &vlen));
    if (vlen && klen && vlen != klen) {
        char key[160];
        key_of(c, "attention.value_length", key, sizeof key);
        json_object_set_new(cfg, key, json_integer(vlen)); /* judged by the table */
    }
    TRY(map_float(c, "attention.layer_norm_rms_epsilon", "layer_norm_epsilon", req, NULL));
    /* the eps of the multi-token-prediction head's final norm (never run here) */
    TRY(map_float(c, "attention.layer_norm_epsilon", NULL, 0, NULL));
    TRY(map_float(c, "rope.freq_base", NULL, 0, NULL)); /* written, unused: no rope */
    TRY(map_int(c, "rope.dimension_count", NULL, 0, 1, INT64_C(1) << 16, NULL));
    char key[160];
    key_of(c, "rope.scaling.finetuned", key, sizeof key);
    use(c, "rope.scaling.finetuned");
    const gguf_kv *rf = gguf_find_kv(c->g, key);
    if (rf && (rf->type != GGUF_T_BOOL || rf->val[0]))
        json_object_set_new(cfg, key, kv_json(rf)); /* rope on: the table refuses it */
    TRY(map_int(c, "ssm.conv_kernel", "conv_kernel", req, 1, 1 << 10, NULL));
    TRY(map_int(c, "ssm.state_size", "ssm_state_size", req, 1, 1 << 16, NULL));
    TRY(map_int(c, "ssm.group_count", "n_groups", req, 1, INT64_C(1) << 20, NULL));
    TRY(map_int(c, "ssm.inner_size", NULL, req, 1, INT64_C(1) << 24, &inner));
    TRY(map_int(c, "ssm.time_step_rank", "mamba_num_heads", req, 1, INT64_C(1) << 20, &heads));
    if (heads && inner % heads) {
        key_of(c, "ssm.inner_size", key, sizeof key);
        return facet_err(c->err, FACET_E_FORMAT,
                         "%s: key %s is %" PRId64 ", expected a multiple of ssm.time_step_rank "
                         "%" PRId64 " (the Mamba-2 head count)",
                         c->g->path, key, inner, heads);
    }
    if (heads) json_object_set_new(cfg, "mamba_head_dim", json_integer(inner / heads));
    json_object_set_new(cfg, "use_conv_bias", json_boolean(any_conv_bias(m)));
    json_object_set_new(cfg, "mlp_hidden_act", json_string("relu2"));
    return FACET_OK;
}

/* falcon-h1 (llama.cpp's LLM_ARCH_FALCON_H1, convert_hf_to_gguf.py's FalconH1Model, a
 * Mamba2Model) -> FalconH1Config keys. The converter folds every muP multiplier into the
 * weights (embedding, lm_head, q / k / v by attention_in_multiplier, k also by
 * key_multiplier, o_proj, in_proj by ssm_in_multiplier and its z / x / B / C / dt rows by
 * ssm_multipliers, out_proj, the MLP's gate and down) and writes none of them: the class
 * runs with every multiplier 1. ssm.inner_size is mamba_d_ssm, ssm.time_step_rank
 * mamba_n_heads, key_length head_dim; mamba_rms_norm from the ssm_norm tensor (llama.cpp
 * takes it as optional) and mamba_norm_before_gate false (llama.cpp normalizes y * SiLU(z),
 * the only order its graph has); the biases llama.cpp's falcon-h1 graph never adds
 * (in_proj's, out_proj's, o_proj's) are left to the tensor check: mamba_proj_bias,
 * projectors_bias and attention_bias false, and a file holding them refused by name. */
static facet_status map_falcon_h1(ctx *c, const gguf_model *m, int req) {
    json_t *cfg = c->cfg;
    int64_t inner = 0, heads = 0;
    TRY(map_int(c, "ssm.conv_kernel", "mamba_d_conv", req, 1, 1 << 10, NULL));
    TRY(map_int(c, "ssm.state_size", "mamba_d_state", req, 1, 1 << 16, NULL));
    TRY(map_int(c, "ssm.group_count", "mamba_n_groups", req, 1, INT64_C(1) << 20, NULL));
    TRY(map_int(c, "ssm.inner_size", "mamba_d_ssm", req, 1, INT64_C(1) << 24, &inner));
    TRY(map_int(c, "ssm.time_step_rank", "mamba_n_heads", req, 1, INT64_C(1) << 20, &heads));
    if (heads && inner % heads) {
        char key[160];
        key_of(c, "ssm.inner_size", key, sizeof key);
        return facet_err(c->err, FACET_E_FORMAT,
                         "%s: key %s is %" PRId64 ", expected a multiple of ssm.time_step_rank "
                         "%" PRId64 " (the Mamba-2 head count)",
                         c->g->path, key, inner, heads);
    }
    if (heads) json_object_set_new(cfg, "mamba_d_head", json_integer(inner / heads));
    json_object_set_new(cfg, "mamba_conv_bias", json_boolean(any_conv_bias(m)));
    int norm = 0;
    for (size_t i = 0; i < m->n_tensors && !norm; i++) {
        const char *n = m->by_name[i]->name;
        size_t len = strlen(n);
        norm = len > 16 && !strcmp(n + len - 16, ".ssm_norm.weight");
    }
    json_object_set_new(cfg, "mamba_rms_norm", json_boolean(norm));
    json_object_set_new(cfg, "mamba_norm_before_gate", json_false());
    json_object_set_new(cfg, "mamba_proj_bias", json_false());
    json_object_set_new(cfg, "projectors_bias", json_false());
    static const char *const ones[] = {"embedding_multiplier", "lm_head_multiplier",
                                       "key_multiplier", "attention_in_multiplier",
                                       "attention_out_multiplier", "ssm_in_multiplier",
                                       "ssm_out_multiplier", NULL};
    for (int i = 0; ones[i]; i++) json_object_set_new(cfg, ones[i], json_real(1.0));
    json_t *s = json_array(), *mlp = json_array();
    for (int i = 0; i < 5; i++) json_array_append_new(s, json_real(1.0));
    for (int i = 0; i < 2; i++) json_array_append_new(mlp, json_real(1.0));
    json_object_set_new(cfg, "ssm_multipliers", s);
    json_object_set_new(cfg, "mlp_multipliers", mlp);
    return FACET_OK;
}

/* The (period, offset) with offset < period that marks exactly the layers of `mask`
 * (mask[i] == (i % period == offset) for every i < n), the smallest period first; none
 * marked: period n + 1, offset n. 0 when no such pair exists. */
static int period_of(const uint8_t *mask, int64_t n, int64_t *period, int64_t *offset) {
    int64_t any = 0;
    for (int64_t i = 0; i < n; i++) any += mask[i];
    if (!any) {
        *period = n + 1, *offset = n;
        return 1;
    }
    for (int64_t p = 1; p <= n; p++)
        for (int64_t o = 0; o < p; o++) {
            int ok = 1;
            for (int64_t i = 0; i < n && ok; i++) ok = mask[i] == (i % p == o);
            if (ok) {
                *period = p, *offset = o;
                return 1;
            }
        }
    return 0;
}

/* jamba (llama.cpp's LLM_ARCH_JAMBA, convert_hf_to_gguf.py's JambaModel) -> JambaConfig
 * keys: head_count_kv is an array, 0 on the Mamba layers, which becomes
 * attn_layer_period / attn_layer_offset; the layers with experts are those holding
 * ffn_gate_inp (the converter writes no period for them), which become
 * expert_layer_period / expert_layer_offset; ssm.inner_size / embedding_length is
 * mamba_expand, ssm.time_step_rank mamba_dt_rank, the conv bias from its tensor (llama.cpp
 * requires it), in_proj / out_proj without bias (llama.cpp loads none). */
static facet_status map_jamba(ctx *c, const gguf_model *m, int64_t layers, int64_t hidden) {
    char key[160];
    int64_t kv[FACET_MAX_LAYERS], nkv = 0, period, offset, inner = 0;
    uint8_t mask[FACET_MAX_LAYERS];
    TRY(layer_ints(c, "attention.head_count_kv", layers, kv));
    for (int64_t i = 0; i < layers; i++) {
        if (kv[i] && nkv && kv[i] != nkv) {
            key_of(c, "attention.head_count_kv", key, sizeof key);
            return facet_err(c->err, FACET_E_FORMAT,
                             "%s: key %s[%" PRId64 "] is %" PRId64 ", expected 0 or the one KV "
                             "head count of the attention layers (%" PRId64 ")",
                             c->g->path, key, i, kv[i], nkv);
        }
        if (kv[i]) nkv = kv[i];
        mask[i] = kv[i] != 0;
    }
    if (!period_of(mask, layers, &period, &offset)) {
        key_of(c, "attention.head_count_kv", key, sizeof key);
        return facet_err(c->err, FACET_E_UNSUPPORTED,
                         "%s: key %s marks attention layers that no attn_layer_period / "
                         "attn_layer_offset gives (JambaConfig's layout)",
                         c->g->path, key);
    }
    json_object_set_new(c->cfg, "attn_layer_period", json_integer(period));
    json_object_set_new(c->cfg, "attn_layer_offset", json_integer(offset));
    if (nkv) json_object_set_new(c->cfg, "num_key_value_heads", json_integer(nkv));
    for (int64_t i = 0; i < layers; i++) {
        char t[64];
        snprintf(t, sizeof t, "blk.%" PRId64 ".ffn_gate_inp.weight", i);
        mask[i] = gguf_model_find(m, t) != NULL;
    }
    if (!period_of(mask, layers, &period, &offset))
        return facet_err(c->err, FACET_E_UNSUPPORTED,
                         "%s: the layers holding ffn_gate_inp.weight follow no "
                         "expert_layer_period / expert_layer_offset (JambaConfig's layout)",
                         c->g->path);
    json_object_set_new(c->cfg, "expert_layer_period", json_integer(period));
    json_object_set_new(c->cfg, "expert_layer_offset", json_integer(offset));
    TRY(map_int(c, "ssm.conv_kernel", "mamba_d_conv", 1, 1, 1 << 10, NULL));
    TRY(map_int(c, "ssm.state_size", "mamba_d_state", 1, 1, 1 << 16, NULL));
    TRY(map_int(c, "ssm.time_step_rank", "mamba_dt_rank", 1, 1, INT64_C(1) << 20, NULL));
    TRY(map_int(c, "ssm.inner_size", NULL, 1, 1, INT64_C(1) << 24, &inner));
    if (inner % hidden) {
        key_of(c, "ssm.inner_size", key, sizeof key);
        return facet_err(c->err, FACET_E_FORMAT,
                         "%s: key %s is %" PRId64 ", expected a multiple of embedding_length "
                         "%" PRId64 " (mamba_expand x hidden_size)",
                         c->g->path, key, inner, hidden);
    }
    json_object_set_new(c->cfg, "mamba_expand", json_integer(inner / hidden));
    json_object_set_new(c->cfg, "mamba_conv_bias", json_boolean(any_conv_bias(m)));
    json_object_set_new(c->cfg, "mamba_proj_bias", json_false());
    return FACET_OK;
}

static facet_status build_config(ctx *c, const gguf_model *m, int known, int64_t *head_dim) {
    json_t *cfg = c->cfg;
    int64_t hidden = 0, heads = 0, layers = 0, klen = 0, vlen = 0, rot = 0;
    int req = known; /* outside the table: read what is there, the verdict refuses */
    TRY(map_int(c, "block_count", "num_hidden_layers", req, 1, FACET_MAX_LAYERS, &layers));
    TRY(map_int(c, "context_length", "max_position_embeddings", req, 1, INT32_MAX, NULL));
    TRY(map_int(c, "embedding_length", "hidden_size", req, 1, INT64_C(1) << 20, &hidden));
    if (!strcmp(c->arch, "nemotron_h")) {
        TRY(map_nemotron_h(c, m, layers, req));
        TRY(map_vocab(c, m));
        TRY(map_tokens(c));
        *head_dim = 0;
        return FACET_OK;
    }
    if (!strcmp(c->arch, "mamba") || !strcmp(c->arch, "mamba2")) {
        TRY(map_ssm(c, m, req));
        TRY(map_vocab(c, m));
        TRY(map_tokens(c));
        *head_dim = 0;
        return FACET_OK;
    }
    TRY(map_int(c, "feed_forward_length", "intermediate_size", req, 1, INT64_C(1) << 24, NULL));
    TRY(map_float(c, "attention.layer_norm_rms_epsilon", "rms_norm_eps", req, NULL));
    TRY(map_float(c, "rope.freq_base", "rope_theta", 0, NULL));
    if (!strcmp(c->arch, "deepseek2")) {
        TRY(map_mla(c, req));
        TRY(map_vocab(c, m));
        TRY(map_tokens(c));
        *head_dim = 0;
        return FACET_OK;
    }
    TRY(map_int(c, "attention.head_count", "num_attention_heads", req, 1, INT64_C(1) << 14,
                &heads));
    if (!strcmp(c->arch, "lfm2")) TRY(map_lfm2(c, layers));
    else if (!strcmp(c->arch, "granitehybrid")) TRY(map_granite_hybrid(c, m, layers, hidden));
    else if (!strcmp(c->arch, "jamba")) TRY(map_jamba(c, m, layers, hidden));
    else TRY(map_int(c, "attention.head_count_kv", "num_key_value_heads", 0, 1, INT64_C(1) << 14,
                     NULL));
    if (!strcmp(c->arch, "falcon-h1")) TRY(map_falcon_h1(c, m, req));
    TRY(map_int(c, "attention.key_length", NULL, 0, 1, INT64_C(1) << 16, &klen));
    TRY(map_int(c, "attention.value_length", NULL, 0, 1, INT64_C(1) << 16, &vlen));
    TRY(map_int(c, "rope.dimension_count", NULL, 0, 1, INT64_C(1) << 16, &rot));
    /* head_dim: key_length, else hidden / heads (llama.cpp's n_embd_head_k) */
    int64_t hd = klen ? klen : heads ? hidden / heads : 0;
    *head_dim = hd;
    if (hd) json_object_set_new(cfg, "head_dim", json_integer(hd));
    if (vlen && vlen != hd) { /* value heads of another width: kept for the table */
        char key[160];
        key_of(c, "attention.value_length", key, sizeof key);
        json_object_set_new(cfg, key, json_integer(vlen));
    }
    if (rot && hd && rot != hd)
        json_object_set_new(cfg, "partial_rotary_factor", json_real((double)rot / (double)hd));
    TRY(map_rope_scaling(c));

    /* windows and Gemma's attention keys */
    int64_t window = 0, pattern = 0;
    TRY(map_int(c, "attention.sliding_window", NULL, 0, 0, INT64_C(1) << 40, &window));
    json_object_set_new(cfg, "sliding_window", window ? json_integer(window) : json_null());
    TRY(map_int(c, "attention.sliding_window_pattern", NULL, 0, 1, FACET_MAX_LAYERS, &pattern));
    /* passed on unless the config class implies it without reading the key (Gemma 2
     * alternates by its modeling code); the class reads it (Gemma 3) or the table judges it */
    const facet_config_class *cls =
        facet_config_class_find(json_string_value(json_object_get(cfg, "model_type")));
    if (pattern && !(!cls->reads_sliding_window_pattern && pattern == cls->sliding_window_pattern))
        json_object_set_new(cfg, "sliding_window_pattern", json_integer(pattern));
    double base_swa = 0;
    TRY(map_float(c, "rope.freq_base_swa", NULL, 0, &base_swa));
    if (base_swa) json_object_set_new(cfg, "rope_local_base_freq", json_real(base_swa));
    TRY(map_float(c, "attn_logit_softcapping", "attn_logit_softcapping", 0, NULL));
    TRY(map_float(c, "final_logit_softcapping", "final_logit_softcapping", 0, NULL));
    const arch_row *row = arch_of(c->arch);
    if (row && row->scale_27b_layers) {
        /* llama.cpp scales q.k by 1/sqrt(key_length), by 1/sqrt(hidden/heads) for the 27B
         * shapes, as the reference code does */
        int big = layers == row->scale_27b_layers;
        int64_t s = big && heads ? hidden / heads : hd;
        if (s > 0) json_object_set_new(cfg, "query_pre_attn_scalar", json_integer(s));
    }
    /* Granite's multipliers */
    TRY(map_float(c, "embedding_scale", "embedding_multiplier", 0, NULL));
    TRY(map_float(c, "residual_scale", "residual_multiplier", 0, NULL));
    TRY(map_float(c, "logit_scale", "logits_scaling", 0, NULL));
    TRY(map_float(c, "attention.scale", "attention_multiplier", 0, NULL));
    /* mixture of experts, for the classes that route (the others keep the keys, which the
     * table refuses) */
    if (cls->moe) {
        TRY(map_int(c, "expert_count", cls->experts_key, 0, 0, 4096, NULL));
        TRY(map_int(c, "expert_used_count", "num_experts_per_tok", 0, 1, 64, NULL));
        if (cls->moe_size_key)
            TRY(map_int(c, "expert_feed_forward_length", cls->moe_size_key, 0, 1,
                        INT64_C(1) << 24, NULL));
        /* llama.cpp renormalizes the k chosen weights of a qwen3moe file (its
         * build_moe_ffn with norm_w), as Qwen3-MoE's released configs ask */
        if (cls->norm_topk_prob < 0)
            json_object_set_new(cfg, "norm_topk_prob", json_boolean(!strcmp(c->arch, "qwen3moe")));
    }
    if (!strcmp(c->arch, "gpt-oss")) TRY(map_gpt_oss(c, layers));
    TRY(map_vocab(c, m));
    TRY(map_tokens(c));
    return FACET_OK;
}

/* ---- weight facts from the tensor infos --------------------------------------------- */
static const gguf_tensor *layer_tensor(const gguf_model *m, int64_t i, const char *what) {
    char name[96];
    snprintf(name, sizeof name, "blk.%" PRId64 ".%s", i, what);
    return gguf_model_find(m, name);
}

/* Every layer (of those `only` marks, when given) has blk.N.<what>, or none does;
 * *out = 1 for every. */
static facet_status all_or_none_of(const gguf_model *m, int64_t L, const uint8_t *only,
                                   const char *what, const char *alt, int *out,
                                   facet_error *err) {
    int64_t n = 0, first_missing = -1, first_present = -1, want = 0;
    for (int64_t i = 0; i < L; i++) {
        if (only && !only[i]) continue;
        want++;
        int has = layer_tensor(m, i, what) || (alt && layer_tensor(m, i, alt));
        n += has;
        if (has && first_present < 0) first_present = i;
        if (!has && first_missing < 0) first_missing = i;
    }
    if (n && n != want)
        return facet_err(err, FACET_E_FORMAT,
                         "%s: tensor blk.%" PRId64 ".%s is present but blk.%" PRId64
                         ".%s is missing; expected in every layer or none",
                         m->files[0].path, first_present, what, first_missing, what);
    *out = n == want && want > 0;
    return FACET_OK;
}

static facet_status probe(const gguf_model *m, facet_facts *f, facet_error *err) {
    const char *path = m->files[0].path;
    int64_t L = f->num_hidden_layers;
    const char *emb_name = facet_tensor_slot(FACET_TS_EMBED_TOKENS)->gguf;
    const gguf_tensor *emb = gguf_model_find(m, emb_name);
    if (!emb)
        return facet_err(err, FACET_E_NOT_FOUND, "%s: tensor %s is missing", path, emb_name);
    if (emb->n_dims != 2 || emb->ne[0] != f->hidden_size || emb->ne[1] != f->vocab_size)
        return facet_err(err, FACET_E_FORMAT,
                         "%s: tensor %s has ne [%" PRId64 ", %" PRId64
                         "] (n_dims %d), expected [%" PRId64 ", %" PRId64
                         "] (hidden, vocab)",
                         path, emb_name, emb->ne[0], emb->ne[1], emb->n_dims, (int64_t)f->hidden_size,
                         (int64_t)f->vocab_size);
    /* every blk.N.* tensor belongs to a layer below block_count, and each layer has some */
    uint8_t seen[FACET_MAX_LAYERS] = {0};
    for (size_t i = 0; i < m->n_tensors; i++) {
        const char *n = m->by_name[i]->name;
        char *end;
        if (strncmp(n, "blk.", 4)) continue;
        long long k = strtoll(n + 4, &end, 10);
        if (end == n + 4 || *end != '.' || k < 0 || k >= L)
            return facet_err(err, FACET_E_FORMAT,
                             "%s: tensor %s names a layer outside 0..%" PRId64
                             " (block_count %" PRId64 ")",
                             path, n, L - 1, L);
        seen[k] = 1;
    }
    for (int64_t i = 0; i < L; i++)
        if (!seen[i])
            return facet_err(err, FACET_E_NOT_FOUND,
                             "%s: no tensor blk.%" PRId64 ".* (block_count %" PRId64
                             " says layer %" PRId64 " exists)",
                             path, i, L, i);
    int q_bias = 0, o_bias = 0, qk_norm = 0, fused_qkv = 0, has_gate = 0, has_up = 0;
    /* the tensors' GGUF names are the tensor table's (model/tensors.h) */
#define GGUF(slot) facet_tensor_slot(slot)->gguf
    /* the attention tensors: in the layers that attend (a hybrid's recurrent layers and
     * Nemotron-H's MLP layers have none) */
    uint8_t attn[FACET_MAX_LAYERS];
    for (int64_t i = 0; i < L; i++) attn[i] = !f->layer_ssm[i] && f->layer_block[i] != FACET_BLOCK_FFN;
    TRY(all_or_none_of(m, L, attn, GGUF(FACET_TS_Q_BIAS),
                       facet_tensor_fused(FACET_TF_QKV_BIAS)->gguf, &q_bias, err));
    TRY(all_or_none_of(m, L, attn, GGUF(FACET_TS_O_BIAS), NULL, &o_bias, err));
    TRY(all_or_none_of(m, L, attn, GGUF(FACET_TS_Q_NORM), NULL, &qk_norm, err));
    TRY(all_or_none_of(m, L, attn, facet_tensor_fused(FACET_TF_QKV_PROJ)->gguf, NULL,
                       &fused_qkv, err));
    /* the dense MLP's tensors: in the layers that do not route (DeepSeek's leading dense
     * layers beside its sparse ones) and have an FFN (not Nemotron-H's mixer-only ones) */
    uint8_t dense[FACET_MAX_LAYERS];
    for (int64_t i = 0; i < L; i++)
        dense[i] = !f->layer_sparse[i] && f->layer_block[i] != FACET_BLOCK_MIXER;
    TRY(all_or_none_of(m, L, dense, GGUF(FACET_TS_GATE_PROJ), NULL, &has_gate, err));
    TRY(all_or_none_of(m, L, dense, GGUF(FACET_TS_UP_PROJ), NULL, &has_up, err));
#undef GGUF
    f->qkv_bias = q_bias;
    f->o_bias = o_bias;
    f->qk_norm = qk_norm;
    f->fused_qkv = fused_qkv;
    /* Phi-3: ffn_up holds [gate; up]; an ungated MLP (Nemotron-H's relu2) has up alone */
    f->fused_gate_up = has_up && !has_gate && !f->ffn_ungated;
    /* experts: ffn_{gate,up,down}_exps, 3-D, in every sparse layer */
    if (f->n_sparse_layers) {
        for (int64_t i = 0; i < L; i++)
            if (f->layer_sparse[i] && !layer_tensor(m, i, "ffn_gate_exps.weight"))
                return facet_err(err, FACET_E_NOT_FOUND,
                                 "%s: tensor blk.%" PRId64 ".ffn_gate_exps.weight is missing "
                                 "(expert_count says layer %" PRId64 " routes to experts)",
                                 path, i, i);
        f->experts_layout = FACET_EXPERTS_SPLIT3D;
        /* a shared expert the metadata does not count would be left unused, silently
         * (llama.cpp refuses such a file: its tensor count disagrees) */
        if (f->n_shared_experts == 0 && f->shared_expert_intermediate_size == 0)
            for (int64_t i = 0; i < L; i++)
                if (f->layer_sparse[i] && layer_tensor(m, i, "ffn_gate_shexp.weight"))
                    return facet_err(err, FACET_E_FORMAT,
                                     "%s: tensor blk.%" PRId64 ".ffn_gate_shexp.weight is "
                                     "present but the metadata's expert_shared_count is "
                                     "absent or 0; expected a shared expert's tensors only "
                                     "where the metadata counts one",
                                     path, i);
    }
    if (f->fused_gate_up) {
        int64_t first = 0;
        while (first < L - 1 && !dense[first]) first++;
        const gguf_tensor *up = layer_tensor(m, first, facet_tensor_slot(FACET_TS_UP_PROJ)->gguf);
        if (up->ne[1] != 2 * f->intermediate_size)
            return facet_err(err, FACET_E_FORMAT,
                             "%s: tensor %s has ne [%" PRId64 ", %" PRId64
                             "] and no ffn_gate beside it; expected [%" PRId64 ", %" PRId64
                             "] ([gate; up])",
                             path, up->name, up->ne[0], up->ne[1], (int64_t)f->hidden_size,
                             (int64_t)(2 * f->intermediate_size));
    }
    f->has_lm_head = gguf_model_find(m, facet_tensor_slot(FACET_TS_LM_HEAD)->gguf) != NULL;
    if (f->tie_word_embeddings == f->has_lm_head)
        facet_facts_note(f, "tie_word_embeddings=%d from the tensors: output.weight is %s",
                         !f->has_lm_head, f->has_lm_head ? "present" : "absent (tied)");
    f->tie_word_embeddings = !f->has_lm_head;
    f->weight_bytes = 0;
    /* The dtypes are the matrices' (2-D tensors): llama.cpp writes every 1-D tensor (norms,
     * biases, rope_freqs) as F32 whatever the file's type, so an F16 or BF16 file counted
     * whole would read as mixed and `--weights auto` would widen it to f32, where a
     * safetensors checkpoint of that precision runs in it. A file whose matrices are all
     * quantized keeps the F32 of its vectors. */
    uint32_t all = 0, matrices = 0;
    f->dtype_mask = 0;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const gguf_tensor *t = m->by_name[i];
        f->weight_bytes += t->nbytes;
        uint32_t bit = t->type == GGML_F32 ? 1u << ST_F32 : t->type == GGML_F16 ? 1u << ST_F16
                     : t->type == GGML_BF16 ? 1u << ST_BF16 : 0;
        all |= bit;
        if (t->n_dims >= 2) matrices |= bit;
    }
    f->dtype_mask = matrices ? matrices : all;
    f->matrices_q8_0 = facet_gguf_matrices_q8_0(m);
    f->gguf_block_matrices = 0;
    for (size_t i = 0; i < m->n_tensors; i++)
        f->gguf_block_matrices += m->by_name[i]->n_dims >= 2 && facet_qtype_of_ggml(m->by_name[i]->type) >= 0;
    f->probed = 1;
    return FACET_OK;
}

/* The divisor llama3 scaling gives rotary pair i (transformers'
 * _compute_llama3_parameters, as convert_hf_to_gguf.py writes rope_freqs.weight). */
static double llama3_divisor(const facet_facts *f, int i, int rot, double factor, double lo,
                             double hi, double orig) {
    float expo = (float)(2 * i) / (float)rot;
    double v = 1.0 / pow(f->rope_theta, (double)expo);
    double wavelen = 2.0 * M_PI / v;
    if (wavelen < orig / hi) return 1.0;
    if (wavelen > orig / lo) return factor;
    double smooth = (orig / wavelen - lo) / (hi - lo);
    return 1.0 / ((1.0 - smooth) / factor + smooth);
}

/* Llama 3 rope scaling as llama.cpp stores it: rope_freqs.weight, one divisor of
 * inv_freq per rotated pair. The divisors fix factor (the largest) and the two band
 * edges original_max_position_embeddings / low_freq_factor and / high_freq_factor; the
 * common parameter sets are tried and the first that reproduces every divisor (to 1e-5)
 * becomes the facts, so the engine computes the same frequencies. None: rope_type
 * "rope_freqs.weight", which the table refuses. */
static facet_status rope_freqs(const gguf_model *m, facet_facts *f, facet_error *err) {
    const gguf_tensor *t = gguf_model_find(m, "rope_freqs.weight");
    if (!t) return FACET_OK;
    /* linear scaling by 1 is no scaling: the divisors alone are the whole scheme */
    int identity = f->rope_type == FACET_ROPE_LINEAR && f->rope_factor == 1.0;
    if (f->rope_type != FACET_ROPE_DEFAULT && !identity) {
        /* llama.cpp divides by these divisors on top of the declared rope scaling; facet
         * runs one rope type, so taking either alone computes frequencies nobody has */
        char declared[sizeof f->rope_type_name];
        snprintf(declared, sizeof declared, "%s", f->rope_type_name);
        facet_facts_note(f, "rope_freqs.weight and rope scaling '%s' both present: llama.cpp "
                            "applies both, facet runs one rope type",
                         declared);
        f->rope_type = FACET_ROPE_UNKNOWN;
        snprintf(f->rope_type_name, sizeof f->rope_type_name, "rope_freqs.weight+%.12s",
                 declared);
        return FACET_OK;
    }
    int rot = (int)(f->head_dim * f->partial_rotary_factor + 0.5);
    if (t->type != GGML_F32 || t->n_dims != 1 || t->ne[0] != rot / 2 || rot < 2)
        return facet_err(err, FACET_E_FORMAT,
                         "%s: tensor rope_freqs.weight is %s with ne [%" PRId64
                         "], expected F32 with ne [%d] (one divisor per rotated pair)",
                         m->files[0].path, gguf_type_name(t->type), t->ne[0], rot / 2);
    int n = rot / 2;
    double factor = 0;
    for (int i = 0; i < n; i++) {
        float v;
        memcpy(&v, t->data + 4 * i, 4);
        if (!(v > 0) || !isfinite(v))
            return facet_err(err, FACET_E_FORMAT,
                             "%s: tensor rope_freqs.weight[%d] is %g, expected a positive divisor",
                             m->files[0].path, i, v);
        if (v > factor) factor = v;
    }
    static const double origs[] = {8192, 4096, 2048, 16384, 32768, 65536, 131072};
    static const double los[] = {1, 2, 0.5, 4}, his[] = {4, 8, 2, 16, 32};
    for (size_t a = 0; a < sizeof origs / sizeof origs[0]; a++)
        for (size_t b = 0; b < sizeof los / sizeof los[0]; b++)
            for (size_t c = 0; c < sizeof his / sizeof his[0]; c++) {
                if (his[c] <= los[b]) continue;
                int ok = 1;
                for (int i = 0; i < n && ok; i++) {
                    float v;
                    memcpy(&v, t->data + 4 * i, 4);
                    double want = llama3_divisor(f, i, rot, factor, los[b], his[c], origs[a]);
                    ok = fabs(v - want) <= 1e-5 * want;
                }
                if (!ok) continue;
                f->rope_type = FACET_ROPE_LLAMA3;
                snprintf(f->rope_type_name, sizeof f->rope_type_name, "llama3");
                f->rope_factor = factor;
                f->rope_low_freq_factor = los[b];
                f->rope_high_freq_factor = his[c];
                f->rope_original_max_position_embeddings = (int64_t)origs[a];
                facet_facts_note(f, "rope_freqs.weight (%d divisors) is Llama 3 scaling with "
                                    "factor %g, low_freq_factor %g, high_freq_factor %g, "
                                    "original_max_position_embeddings %g (every divisor "
                                    "reproduced)",
                                 n, factor, los[b], his[c], origs[a]);
                return FACET_OK;
            }
    f->rope_type = FACET_ROPE_UNKNOWN;
    snprintf(f->rope_type_name, sizeof f->rope_type_name, "rope_freqs.weight");
    facet_facts_note(f, "rope_freqs.weight (%d divisors, largest %g) matches no Llama 3 "
                        "parameter set facet tries",
                     n, factor);
    return FACET_OK;
}

facet_status facet_facts_from_gguf(const gguf_model *m, facet_facts *f, facet_error *err) {
    memset(f, 0, sizeof *f);
    f->bos_token_id = -1;
    facet_err_clear(err);
    const gguf_file *g = &m->files[0];
    const char *arch = NULL;
    uint64_t alen = 0;
    TRY(gguf_get_str(g, "general.architecture", 1, &arch, &alen, NULL, err));
    int plain = alen > 0 && alen < 64;
    for (uint64_t i = 0; i < alen && plain; i++)
        plain = (arch[i] >= 'a' && arch[i] <= 'z') || (arch[i] >= '0' && arch[i] <= '9') ||
                arch[i] == '_' || arch[i] == '-' || arch[i] == '.';
    if (!plain)
        return facet_err(err, FACET_E_FORMAT,
                         "%s: key general.architecture is \"%s\", expected a name of 1 to 63 "
                         "lowercase letters, digits, '_', '-' or '.' such as \"llama\"",
                         g->path, ascii(arch, alen, (char[72]){0}, 72));
    ctx c = {.g = g, .err = err};
    memcpy(c.arch, arch, alen);
    c.arch[alen] = 0;
    const char *mt = model_type_of(c.arch);
    char key[96];
    snprintf(key, sizeof key, "%s.expert_count", c.arch);
    const gguf_kv *experts = gguf_find_kv(g, key);
    for (size_t i = 0; mt && experts && i < sizeof MOE_ARCHS / sizeof MOE_ARCHS[0]; i++)
        if (!strcmp(MOE_ARCHS[i].arch, c.arch) && gguf_kv_is_int(experts) &&
            gguf_kv_number(experts) > 0)
            mt = MOE_ARCHS[i].model_type;
    c.cfg = json_object();
    if (!c.cfg) return facet_err(err, FACET_E_NOMEM, "out of memory");
    json_object_set_new(c.cfg, "model_type", json_string(mt ? mt : c.arch));
    int64_t head_dim = 0;
    facet_status st = build_config(&c, m, mt != NULL, &head_dim);
    if (st == FACET_OK) {
        keep_rest(&c);
        char what[4200];
        snprintf(what, sizeof what, "%s (GGUF metadata)", g->path);
        st = facet_facts_from_json(c.cfg, NULL, what, f, err);
    }
    json_decref(c.cfg);
    if (st != FACET_OK) return st;
    if (!mt) {
        facet_facts_note(f, "general.architecture=%s is not one facet maps", c.arch);
        return FACET_OK; /* refused by the verdict; weight facts are not judged */
    }
    facet_facts_note(f, "facts from GGUF metadata: general.architecture=%s, %zu tensors in %zu "
                        "file%s",
                     c.arch, m->n_tensors, m->n_files, m->n_files == 1 ? "" : "s");
    if (f->norm_weight_offset) {
        f->norm_weight_offset = 0;
        facet_facts_note(f, "RMSNorm weights hold the + 1 (llama.cpp's Gemma convention): "
                            "norm_weight_offset=0");
    }
    TRY(rope_freqs(m, f, err));
    /* LongRoPE as llama.cpp stores it (Phi-3.5): factor tensors; not mapped yet */
    const char *lr = gguf_model_find(m, "rope_factors_long.weight")    ? "rope_factors_long.weight"
                     : gguf_model_find(m, "rope_factors_short.weight") ? "rope_factors_short.weight"
                                                                       : NULL;
    if (lr) {
        f->rope_type = FACET_ROPE_UNKNOWN;
        snprintf(f->rope_type_name, sizeof f->rope_type_name, "%s", lr);
        facet_facts_note(f, "tensor %s holds LongRoPE factors, which facet does not read from "
                            "GGUF yet", lr);
    }
    return probe(m, f, err);
}

facet_status facet_facts_read_model(const char *path, facet_facts *f, facet_error *err) {
    if (!gguf_path_is_gguf(path)) return facet_facts_read(path, f, err);
    gguf_model m;
    facet_status st = gguf_model_open(path, &m, err);
    if (st != FACET_OK) return st;
    st = facet_facts_from_gguf(&m, f, err);
    gguf_model_close(&m);
    return st;
}

/* ---- the verdict's GGUF part -------------------------------------------------------- */
/* A tensor's name without its "blk.N." layer prefix. */
static const char *layer_kind(const char *name) {
    if (strncmp(name, "blk.", 4)) return name;
    const char *dot = strchr(name + 4, '.');
    return dot ? dot + 1 : name;
}

static void add_refusal(facet_verdict *v, const char *fact, const char *value,
                        const char *supported, const char *text) {
    v->status = FACET_VERDICT_REFUSED;
    if (v->n_refusals >= FACET_MAX_REFUSALS) {
        v->refusals_dropped++;
        return;
    }
    facet_refusal *r = &v->refusals[v->n_refusals++];
    snprintf(r->fact, sizeof r->fact, "%.63s", fact);
    snprintf(r->value, sizeof r->value, "%.95s", value);
    snprintf(r->supported, sizeof r->supported, "%.191s", supported);
    snprintf(r->text, sizeof r->text, "REFUSED: %.390s", text);
}

void facet_gguf_judge(const gguf_model *m, facet_verdict *v) {
    char text[400], value[96];
    const gguf_kv *a = gguf_find_kv(&m->files[0], "general.architecture");
    if (a && a->type == GGUF_T_STRING) {
        char arch[64];
        snprintf(arch, sizeof arch, "%.*s", (int)(a->val_len > 63 ? 63 : a->val_len),
                 (const char *)a->val);
        if (!model_type_of(arch)) {
            char list[192] = "";
            for (size_t i = 0; i < N_ARCHS; i++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                         ARCHS[i].arch);
            snprintf(text, sizeof text,
                     "general.architecture=%s is not supported (supported: %s)", arch, list);
            add_refusal(v, "general.architecture", arch, list, text);
        }
    }
    /* tensors the loader has no place for (names of llama.cpp's outside the table, and
     * expert tensors in a file without <arch>.expert_count): one refusal per kind, blk.N.
     * aside, naming its first tensor and how many there are */
    int routes = 0;
    if (a && a->type == GGUF_T_STRING) {
        char key[96];
        snprintf(key, sizeof key, "%.*s.expert_count", (int)(a->val_len > 63 ? 63 : a->val_len),
                 (const char *)a->val);
        const gguf_kv *e = gguf_find_kv(&m->files[0], key);
        routes = e && gguf_kv_is_int(e) && gguf_kv_number(e) > 0;
    }
    facet_facts none;
    memset(&none, 0, sizeof none);
    for (size_t i = 0; i < m->n_tensors; i++) {
        const char *n = m->by_name[i]->name, *kind = layer_kind(n);
        const facet_tensor_row *row = facet_tensor_from_gguf(kind, kind != n, &none);
        int expert = row && row->scope == FACET_SCOPE_SPARSE;
        if (facet_gguf_tensor_known(n) && (!expert || routes)) continue;
        int first = 1;
        size_t count = 0;
        for (size_t k = 0; k < m->n_tensors; k++) {
            if (strcmp(layer_kind(m->by_name[k]->name), kind)) continue;
            if (k < i) first = 0;
            count++;
        }
        if (!first) continue;
        snprintf(text, sizeof text,
                 "tensor %s (%zu tensor%s of this kind) is not one facet loads: its layer kind "
                 "is outside the table",
                 n, count, count == 1 ? "" : "s");
        add_refusal(v, "tensor", n, "the tensors of the table's families", text);
    }
    /* one refusal per type the engine does not run, naming its first tensor in file order */
    int seen[GGML_TYPE_COUNT] = {0};
    for (size_t i = 0; i < m->n_files; i++)
        for (size_t j = 0; j < m->files[i].n_tensors; j++) {
            const gguf_tensor *t = &m->files[i].tensors[j];
            if (runnable(t->type) || seen[t->type]++) continue;
            size_t n = 0;
            for (size_t k = 0; k < m->n_tensors; k++) n += m->by_name[k]->type == t->type;
            snprintf(value, sizeof value, "%s", gguf_type_name(t->type));
            snprintf(text, sizeof text,
                     "tensor %s has type %s (%zu tensor%s of this type); supported: %s", t->name,
                     gguf_type_name(t->type), n, n == 1 ? "" : "s", facet_gguf_runnable_types());
            add_refusal(v, "tensor type", value, facet_gguf_runnable_types(), text);
        }
}
