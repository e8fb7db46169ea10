/*
 * report.c — text and JSON renderings of facts, verdicts, plans and the table.
 */
#include "model/report.h"
#include "model/weights_policy.h"
#include "kernels/cpu/quant.h"

#include <string.h>

#include "io/safetensors.h"
#include "model/table_internal.h"
#include "model/verdict_rows.h"

#define APPEND(buf, cap, ...)                                                          \
    do {                                                                               \
        size_t len_ = strlen(buf);                                                     \
        if (len_ + 1 < (cap)) snprintf((buf) + len_, (cap) - len_, __VA_ARGS__);       \
    } while (0)

void facet_bytes_text(uint64_t b, char *buf, size_t cap) {
    if (b >= (1ull << 30)) snprintf(buf, cap, "%.2f GiB", (double)b / (double)(1ull << 30));
    else if (b >= (1ull << 20)) snprintf(buf, cap, "%.2f MiB", (double)b / (double)(1ull << 20));
    else if (b >= (1ull << 10)) snprintf(buf, cap, "%.2f KiB", (double)b / 1024.0);
    else snprintf(buf, cap, "%llu B", (unsigned long long)b);
}

static const char *window_text(const facet_facts *f, char *buf, size_t cap) {
    if (f->n_sliding_layers)
        snprintf(buf, cap, "%lld on %d/%lld layers", (long long)f->sliding_window,
                 f->n_sliding_layers, (long long)f->num_hidden_layers);
    else if (f->window_inert)
        snprintf(buf, cap, "%lld (inert)", (long long)f->sliding_window);
    else
        snprintf(buf, cap, "none");
    return buf;
}

void facet_facts_line(const facet_facts *f, char *buf, size_t cap) {
    char win[64];
    buf[0] = '\0';
    APPEND(buf, cap, "%s", f->model_type);
    if (f->architecture[0]) APPEND(buf, cap, " (%s)", f->architecture);
    APPEND(buf, cap, ": layers=%lld hidden=%lld heads=%lld kv_heads=%lld head_dim=%lld%s "
                     "intermediate=%lld vocab=%lld max_pos=%lld",
           (long long)f->num_hidden_layers, (long long)f->hidden_size,
           (long long)f->num_attention_heads, (long long)f->num_key_value_heads,
           (long long)f->head_dim, f->head_dim_explicit ? "" : "(derived)",
           (long long)f->intermediate_size, (long long)f->vocab_size,
           (long long)f->max_position_embeddings);
    /* a class without rotary embeddings says what positions it has instead of the rope
     * defaults it never reads (Jamba, Mamba: none; BLOOM, MPT: ALiBi; GPT-2: learned) */
    if (f->no_rope || (f->n_ssm_layers && f->n_ssm_layers == f->num_hidden_layers)) {
        APPEND(buf, cap, " rope=none positions=%s",
               f->alibi ? "alibi" : f->pos_embed_learned ? "learned" : "none");
    } else {
        APPEND(buf, cap, " rope=%s theta=%g", f->rope_type_name, f->rope_theta);
        if (f->rope_type != FACET_ROPE_DEFAULT) APPEND(buf, cap, " factor=%g", f->rope_factor);
        if (f->partial_rotary_factor != 1.0)
            APPEND(buf, cap, " partial=%g", f->partial_rotary_factor);
        if (f->rope_local_base_freq) APPEND(buf, cap, " local_theta=%g", f->rope_local_base_freq);
        if (f->rope_interleaved) APPEND(buf, cap, " interleaved");
        if (f->n_no_rope_layers) /* SmolLM3's NoPE layers, Cohere 2's full layers */
            APPEND(buf, cap, " no_rope_layers=%d/%lld", f->n_no_rope_layers,
                   (long long)f->num_hidden_layers);
    }
    APPEND(buf, cap, " act=%s eps=%g window=%s", f->act_name, f->rms_norm_eps,
           window_text(f, win, sizeof win));
    APPEND(buf, cap, " qkv_bias=%d o_bias=%d qk_norm=%d tie=%d%s", f->qkv_bias, f->o_bias,
           f->qk_norm, f->tie_word_embeddings, f->probed ? " (probed)" : " (config)");
    if (f->lm_head_l2_norm) APPEND(buf, cap, " lm_head=l2-normalised"); /* Baichuan 2 */
    if (f->attn_logit_softcap) APPEND(buf, cap, " attn_softcap=%g", f->attn_logit_softcap);
    if (f->final_logit_softcap) APPEND(buf, cap, " final_softcap=%g", f->final_logit_softcap);
    if (f->n_sparse_layers) {
        APPEND(buf, cap, " experts=%lld top_k=%lld expert_intermediate=%lld router=%s%s "
                         "sparse_layers=%d",
               (long long)f->num_experts, (long long)f->num_experts_per_tok,
               (long long)f->moe_intermediate_size,
               f->moe_router == FACET_ROUTER_TOPK_SOFTMAX ? "topk-softmax"
               : f->moe_router == FACET_ROUTER_GROUPED
                   ? (f->moe_score_bias ? "sigmoid-noaux_tc" : f->n_group > 1 ? "softmax-grouped"
                                                                            : "softmax-greedy")
                   : "softmax-topk",
               f->moe_router != FACET_ROUTER_TOPK_SOFTMAX && f->norm_topk_prob ? "-renorm" : "",
               f->n_sparse_layers);
        if (f->shared_expert_intermediate_size)
            APPEND(buf, cap, " shared_expert=%lld%s", (long long)f->shared_expert_intermediate_size,
                   f->shared_expert_gate ? "(gated)" : "");
    }
    APPEND(buf, cap, " eos=");
    for (int i = 0; i < f->n_eos; i++) APPEND(buf, cap, "%s%d", i ? "," : "", f->eos_token_ids[i]);
    if (!f->n_eos) APPEND(buf, cap, "none");
    if (f->probed) {
        char b[32];
        facet_bytes_text(f->weight_bytes, b, sizeof b);
        APPEND(buf, cap, " weights=%s dtypes=", b);
        int first = 1;
        for (int d = 0; d < ST_DTYPE_COUNT; d++)
            if (f->dtype_mask & (1u << d)) {
                APPEND(buf, cap, "%s%s", first ? "" : ",", st_dtype_name((st_dtype)d));
                first = 0;
            }
    }
}

void facet_facts_of_note(const facet_facts *f, char *buf, size_t cap) {
    char win[64];
    buf[0] = '\0';
    if (!f->family_known && (f->num_hidden_layers <= 0 || f->num_attention_heads <= 0 ||
                             f->hidden_size <= 0 || f->head_dim <= 0)) {
        APPEND(buf, cap, "shape keys outside transformers' standard names");
        return;
    }
    APPEND(buf, cap, "L=%lld, heads %lld/%lld kv, head_dim %lld", (long long)f->num_hidden_layers,
           (long long)f->num_attention_heads, (long long)f->num_key_value_heads,
           (long long)f->head_dim);
    if (f->rope_type != FACET_ROPE_DEFAULT) APPEND(buf, cap, ", rope %s", f->rope_type_name);
    if (f->partial_rotary_factor != 1.0) APPEND(buf, cap, ", partial rotary %g", f->partial_rotary_factor);
    if (f->sliding_window) APPEND(buf, cap, ", window %s", window_text(f, win, sizeof win));
    if (strcmp(f->act_name, "silu")) APPEND(buf, cap, ", %s", f->act_name);
    if (f->qk_norm) APPEND(buf, cap, ", qk-norm");
    if (f->qkv_bias) APPEND(buf, cap, ", qkv bias");
    if (f->o_bias) APPEND(buf, cap, ", o bias");
    if (f->post_norms) APPEND(buf, cap, ", post-norms");
    if (f->attn_logit_softcap || f->final_logit_softcap) APPEND(buf, cap, ", softcaps");
    if (f->n_sparse_layers)
        APPEND(buf, cap, ", MoE %lld experts top-%lld%s", (long long)f->num_experts,
               (long long)f->num_experts_per_tok,
               f->shared_expert_intermediate_size ? " + shared" : "");
    APPEND(buf, cap, ", %s", f->tie_word_embeddings ? "tied" : "untied");
}

static json_t *int_array(const int32_t *v, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_integer(v[i]));
    return a;
}

json_t *facet_facts_json(const facet_facts *f) {
    json_t *o = json_object();
#define SETI(k, v) json_object_set_new(o, k, json_integer((json_int_t)(v)))
#define SETR(k, v) json_object_set_new(o, k, json_real(v))
#define SETS(k, v) json_object_set_new(o, k, json_string(v))
#define SETB(k, v) json_object_set_new(o, k, json_boolean(v))
    SETS("model_type", f->model_type);
    SETS("architecture", f->architecture);
    if (f->text_config) SETS("text_model_type", f->text_model_type);
    SETB("family_known", f->family_known);
    SETI("hidden_size", f->hidden_size);
    SETI("intermediate_size", f->intermediate_size);
    SETI("num_hidden_layers", f->num_hidden_layers);
    SETI("num_attention_heads", f->num_attention_heads);
    SETI("num_key_value_heads", f->num_key_value_heads);
    SETI("head_dim", f->head_dim);
    SETB("head_dim_explicit", f->head_dim_explicit);
    SETI("vocab_size", f->vocab_size);
    SETI("max_position_embeddings", f->max_position_embeddings);
    SETR("rms_norm_eps", f->rms_norm_eps);
    SETS("hidden_act", f->act_name);
    SETB("norm_weight_offset", f->norm_weight_offset);
    SETB("pre_norms", f->pre_norms);
    SETB("post_norms", f->post_norms);
    SETR("attn_scale", f->attn_scale);
    SETR("attn_logit_softcapping", f->attn_logit_softcap);
    SETR("final_logit_softcapping", f->final_logit_softcap);
    SETI("sliding_window", f->sliding_window);
    SETB("window_inert", f->window_inert);
    json_t *ls = json_array();
    for (int64_t i = 0; i < f->num_hidden_layers && i < FACET_MAX_LAYERS; i++)
        json_array_append_new(ls, json_boolean(f->layer_sliding[i]));
    json_object_set_new(o, "layer_sliding", ls);
    SETI("n_sliding_layers", f->n_sliding_layers);
    SETR("rope_theta", f->rope_theta);
    SETR("rope_local_base_freq", f->rope_local_base_freq);
    SETS("rope_type", f->rope_type_name);
    SETR("rope_factor", f->rope_factor);
    SETR("partial_rotary_factor", f->partial_rotary_factor);
    SETR("embedding_multiplier", f->embedding_multiplier);
    SETR("residual_multiplier", f->residual_multiplier);
    SETR("logits_scaling", f->logits_scaling);
    SETB("attention_bias", f->attention_bias);
    SETB("mlp_bias", f->mlp_bias);
    SETB("qkv_bias", f->qkv_bias);
    SETB("o_bias", f->o_bias);
    SETB("qk_norm", f->qk_norm);
    SETB("tie_word_embeddings", f->tie_word_embeddings);
    if (f->alibi) { /* BLOOM, MPT, Baichuan-13B; Falcon's scaled with q.k */
        SETB("alibi", f->alibi);
        SETB("alibi_pre_scale", f->alibi_pre_scale);
    }
    if (f->lm_head_l2_norm) SETB("lm_head_l2_norm", f->lm_head_l2_norm); /* Baichuan 2 */
    SETB("has_lm_head", f->has_lm_head);
    SETB("fused_qkv", f->fused_qkv);
    SETB("fused_gate_up", f->fused_gate_up);
    SETI("num_experts", f->num_experts);
    SETI("num_experts_per_tok", f->num_experts_per_tok);
    SETI("moe_intermediate_size", f->moe_intermediate_size);
    SETI("shared_expert_intermediate_size", f->shared_expert_intermediate_size);
    SETB("shared_expert_gate", f->shared_expert_gate);
    SETB("norm_topk_prob", f->norm_topk_prob);
    SETI("n_sparse_layers", f->n_sparse_layers);
    if (f->kv_lora_rank > 0) { /* multi-head latent attention (DeepSeek-V2, issue 25) */
        SETI("q_lora_rank", f->q_lora_rank);
        SETI("kv_lora_rank", f->kv_lora_rank);
        SETI("qk_nope_head_dim", f->qk_nope_head_dim);
        SETI("qk_rope_head_dim", f->qk_rope_head_dim);
        SETI("v_head_dim", f->v_head_dim);
        SETR("attn_scale", f->attn_scale);
        SETR("routed_scaling_factor", f->routed_scaling_factor);
        SETI("first_k_dense_replace", f->first_k_dense_replace);
        SETI("moe_layer_freq", f->moe_layer_freq);
        SETI("n_shared_experts", f->n_shared_experts);
        SETS("topk_method", f->topk_method);
        SETS("scoring_func", f->scoring_func);
    }
    SETB("probed", f->probed);
    SETI("bos_token_id", f->bos_token_id);
    json_object_set_new(o, "eos_token_id", int_array(f->eos_token_ids, f->n_eos));
    if (f->probed) {
        SETI("weight_bytes", f->weight_bytes);
        json_t *d = json_array();
        for (int i = 0; i < ST_DTYPE_COUNT; i++)
            if (f->dtype_mask & (1u << i)) json_array_append_new(d, json_string(st_dtype_name((st_dtype)i)));
        json_object_set_new(o, "dtypes", d);
    }
    json_t *notes = json_array();
    for (int i = 0; i < f->n_notes; i++) json_array_append_new(notes, json_string(f->notes[i].text));
    json_object_set_new(o, "notes", notes);
    return o;
}

json_t *facet_verdict_json(const facet_verdict *v) {
    json_t *o = json_object();
    json_object_set_new(o, "backend", json_string(v->backend));
    json_object_set_new(o, "status", json_string(facet_verdict_status_name(v->status)));
    json_object_set_new(o, "profile", v->profile ? json_string(v->profile) : json_null());
    json_t *r = json_array();
    for (int i = 0; i < v->n_refusals; i++) {
        const facet_refusal *x = &v->refusals[i];
        json_array_append_new(r, json_pack("{s:s, s:s, s:s, s:s}", "fact", x->fact, "value",
                                           x->value, "supported", x->supported, "text", x->text));
    }
    json_object_set_new(o, "refusals", r);
    json_t *p = json_array();
    for (int i = 0; i < v->n_pending; i++) json_array_append_new(p, json_string(v->pending[i]));
    json_object_set_new(o, "pending_probe", p);
    json_object_set_new(o, "ignored_keys", json_string(v->ignored));
    return o;
}

json_t *facet_plan_json(const facet_plan *p) {
    json_t *o = json_object();
    json_t *w = json_object();
    for (int i = 0; i < FACET_WF_COUNT; i++)
        json_object_set_new(w, facet_plan_format_name(i), json_integer((json_int_t)p->weight_bytes[i]));
    if (p->weights == FACET_PLAN_GGUF) /* a GGUF file in its own types */
        json_object_set_new(w, "gguf", json_integer((json_int_t)p->weight_bytes[FACET_PLAN_GGUF]));
    json_object_set_new(o, "weight_bytes", w);
    json_object_set_new(o, "n_params", json_integer((json_int_t)p->n_params));
    json_object_set_new(o, "n_active_params", json_integer((json_int_t)p->n_active_params));
    json_object_set_new(o, "decode_bytes_per_token",
                        json_integer((json_int_t)p->decode_bytes_per_token));
    json_object_set_new(o, "int8_scales", json_string("one f16 scale per block of 32 inputs and row"));
    json_object_set_new(o, "weights_requested", json_string(facet_plan_format_name(p->requested)));
    json_object_set_new(o, "weights", json_string(facet_plan_format_name(p->weights)));
    json_object_set_new(o, "weights_note", json_string(p->weights_note));
    json_object_set_new(o, "kv_dtype", json_string(facet_kv_type_name(p->kv_type)));
    json_object_set_new(o, "kv_cache", json_string(facet_kv_type_name(p->kv_type)));
    json_object_set_new(o, "kv_bytes_per_layer_position", json_integer((json_int_t)p->kv_bytes_per_layer_position));
    json_object_set_new(o, "kv_bytes_per_token_naive", json_integer((json_int_t)p->kv_bytes_per_token_naive));
    json_object_set_new(o, "kv_bytes_per_token_actual", json_real(p->kv_bytes_per_token_actual));
    json_object_set_new(o, "n_global_layers", json_integer(p->n_global_layers));
    json_object_set_new(o, "n_sliding_layers", json_integer(p->n_sliding_layers));
    json_object_set_new(o, "window", json_integer((json_int_t)p->window));
    json_object_set_new(o, "kv_layout", json_string(p->kv_layout));
    json_object_set_new(o, "ctx", json_integer((json_int_t)p->ctx));
    json_object_set_new(o, "batch", json_integer((json_int_t)p->batch));
    json_object_set_new(o, "kv_bytes_per_sequence", json_integer((json_int_t)p->kv_bytes_per_sequence));
    json_object_set_new(o, "kv_bytes_total", json_integer((json_int_t)(p->kv_bytes_per_sequence * (uint64_t)p->batch)));
    json_object_set_new(o, "state_bytes_per_sequence",
                        json_integer((json_int_t)p->state_bytes_per_sequence));
    json_object_set_new(o, "total_bytes", json_integer((json_int_t)p->total_bytes));
    json_object_set_new(o, "mem_available", json_integer((json_int_t)p->mem_available));
    json_object_set_new(o, "fits", json_boolean(p->fits));
    json_object_set_new(o, "max_ctx_at_batch", json_integer((json_int_t)p->max_ctx_at_batch));
    json_object_set_new(o, "max_batch_at_ctx", json_integer((json_int_t)p->max_batch_at_ctx));
    json_t *k = json_object();
    json_object_set_new(k, "matmul", json_string(p->matmul_path));
    json_object_set_new(k, "norm", json_string(p->norm_path));
    json_object_set_new(k, "rope", json_string(p->rope_path));
    json_object_set_new(k, "ffn", json_string(p->ffn_path));
    json_t *g = json_array();
    for (int i = 0; i < p->n_groups; i++)
        json_array_append_new(g, json_pack("{s:i, s:i, s:b, s:b, s:s, s:s}", "first",
                                           p->groups[i].first, "last", p->groups[i].last,
                                           "sliding", p->groups[i].sliding, "no_rope",
                                           p->groups[i].no_rope, "attention",
                                           p->groups[i].attention, "kernels",
                                           p->groups[i].kernels));
    json_object_set_new(k, "layers", g);
    json_object_set_new(o, "kernels", k);
    return o;
}

/* ---------------------------------------------------------------------------------
 * The declared table
 * ------------------------------------------------------------------------------ */
static void caps_line(const facet_caps *c, const facet_row *row, char *buf, size_t cap) {
    row->range(c, NULL, buf, cap);
}

void facet_table_print(FILE *out) {
    char range[192];
    fprintf(out, "facet capability table (src/model/table.c)\n\n");
    for (int i = 0; i < facet_n_profiles; i++) {
        const facet_profile *p = &facet_profiles[i];
        fprintf(out, "profile model_type=%s architectures=", p->model_type);
        for (int a = 0; a < 4 && p->architectures[a]; a++)
            fprintf(out, "%s%s", a ? "," : "", p->architectures[a]);
        fprintf(out, "\n  %s\n", p->summary);
        const facet_caps *cs[2] = {p->cpu, p->vulkan};
        for (int b = 0; b < 2; b++) {
            const facet_caps *c = cs[b];
            fprintf(out, "  backend %s%s\n", c->backend,
                    c->built ? "" : " (not built into this binary: every verdict refused)");
            for (int r = 0; r < facet_n_rows; r++) {
                caps_line(c, &facet_rows[r], range, sizeof range);
                fprintf(out, "    %-26s %s%s\n", facet_rows[r].fact, range,
                        facet_rows[r].probed ? "   [tensor probe]" : "");
            }
        }
        fprintf(out, "\n");
    }
    fprintf(out, "config keys facet does not model:\n  math-changing (refused unless null "
                 "or false):\n");
    for (int i = 0; i < facet_n_key_rules; i++)
        if (facet_key_rules[i].kind == FACET_KEY_MATH)
            fprintf(out, "    %-30s %s\n", facet_key_rules[i].key, facet_key_rules[i].what);
    fprintf(out, "  inert (bookkeeping):\n    ");
    int col = 4;
    for (int i = 0; i < facet_n_key_rules; i++)
        if (facet_key_rules[i].kind == FACET_KEY_INERT) {
            int n = (int)strlen(facet_key_rules[i].key) + 2;
            if (col + n > 90) {
                fprintf(out, "\n    ");
                col = 4;
            }
            fprintf(out, "%s  ", facet_key_rules[i].key);
            col += n;
        }
    fprintf(out, "\n  any other key of a profiled family: inert when its name contains one of");
    for (int i = 0; facet_inert_words[i]; i++) fprintf(out, "%s %s", i ? "," : "", facet_inert_words[i]);
    fprintf(out, ";\n  else refused when its name contains one of");
    for (int i = 0; facet_math_words[i]; i++) fprintf(out, "%s %s", i ? "," : "", facet_math_words[i]);
    fprintf(out, "; otherwise listed as ignored\n");
}

void facet_table_print_markdown(FILE *out) {
    char range[192];
    fprintf(out, "| fact | backend |");
    for (int i = 0; i < facet_n_profiles; i++) fprintf(out, " %s |", facet_profiles[i].model_type);
    fprintf(out, "\n|---|---|");
    for (int i = 0; i < facet_n_profiles; i++) fprintf(out, "---|");
    fprintf(out, "\n| architectures | all |");
    for (int i = 0; i < facet_n_profiles; i++) {
        for (int a = 0; a < 4 && facet_profiles[i].architectures[a]; a++)
            fprintf(out, "%s%s", a ? ", " : " ", facet_profiles[i].architectures[a]);
        fprintf(out, " |");
    }
    fprintf(out, "\n");
    for (int b = 0; b < 2; b++) {
        fprintf(out, "| backend built | %s |", b ? "vulkan" : "cpu");
        for (int i = 0; i < facet_n_profiles; i++) {
            const facet_caps *c = b ? facet_profiles[i].vulkan : facet_profiles[i].cpu;
            fprintf(out, " %s |", c->built ? "yes" : "no (refused)");
        }
        fprintf(out, "\n");
    }
    for (int r = 0; r < facet_n_rows; r++)
        for (int b = 0; b < 2; b++) {
            fprintf(out, "| %s%s | %s |", facet_rows[r].fact, facet_rows[r].probed ? " (probed)" : "",
                    b ? "vulkan" : "cpu");
            for (int i = 0; i < facet_n_profiles; i++) {
                const facet_caps *c = b ? facet_profiles[i].vulkan : facet_profiles[i].cpu;
                caps_line(c, &facet_rows[r], range, sizeof range);
                fprintf(out, " %s |", range);
            }
            fprintf(out, "\n");
        }
}

void facet_gguf_types_print_markdown(FILE *out) {
    static const char *const xname[] = {"Q8_0", "Q8_1", "Q8_K"};
    fprintf(out, "| type | bits/weight | activations | runs as | kernel paths |\n|---|---|---|---|---|\n");
    fprintf(out, "| F32 | 32 | float32 | f32 panels | f32 (as safetensors) |\n");
    fprintf(out, "| F16 | 16 | float32 | f16 panels | f16 (as safetensors) |\n");
    fprintf(out, "| BF16 | 16 | bf16 or float32 | bf16 panels | bf16 (as safetensors) |\n");
    for (int t = 0; t < FACET_QT_COUNT; t++) {
        if (!facet_qtype_runs((facet_qtype)t)) continue;
        const facet_qtype_traits *q = facet_qtype_traits_of((facet_qtype)t);
        facet_wformat own = (facet_wformat)(FACET_WF_GGUF + t), run = facet_gguf_block_format(own);
        char paths[128];
        snprintf(paths, sizeof paths, "scalar%s%s%s%s", q->dot_avx2 ? ", avx2" : "",
                 q->dot_avx512 ? ", avx512" : "", q->dot_avx512vnni ? ", avx512vnni" : "",
                 q->dotx_avx2 || q->dotx_avx512vnni ? "; 4-row dots for prefill" : "");
        char runs[64];
        if (run == own) snprintf(runs, sizeof runs, "its blocks");
        else snprintf(runs, sizeof runs, "%s panels (exact repack)", facet_wformat_name(run));
        char kern[96];
        snprintf(kern, sizeof kern, "%s's (as --weights %s)", facet_wformat_name(run),
                 facet_wformat_name(run));
        fprintf(out, "| %s | %g | %s | %s | %s |\n", q->name, (double)q->block_bytes * 8 / q->block,
                run == own ? xname[q->xkind] : "int8 per 32 (facet's)", runs,
                run == own ? paths : kern);
    }
}
