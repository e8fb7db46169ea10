/*
 * probe.c — weight facts from the safetensors headers of a checkpoint (see probe.h).
 * The tensors' names, shapes and prefixes are the table's (tensors.h); this file decides
 * which facts their presence implies.
 */
#include "model/probe.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "model/tensors.h"
#include "util/error.h"
#include "util/fs.h"

#define NAME_CAP 512

/* A per-layer fact: row `r` present in the first layer that holds it (its scope: every
 * layer, the dense-FFN or the mixture-of-experts ones) decides; every other such layer
 * must agree. No layer holds it: absent. */
static facet_status layer_fact(const st_checkpoint *ck, const facet_facts *f, const char *prefix,
                               int64_t L, const facet_tensor_row *r, int *out, facet_error *err) {
    char name[NAME_CAP];
    int64_t l0 = 0;
    while (l0 < L && !facet_tensor_in_layer(r, f, l0)) l0++;
    *out = 0;
    if (l0 == L) return FACET_OK;
    int first = facet_tensor_find(ck, r, prefix, l0, name, sizeof name) != NULL;
    for (int64_t i = l0 + 1; i < L; i++) {
        if (!facet_tensor_in_layer(r, f, i)) continue;
        int here = facet_tensor_find(ck, r, prefix, i, name, sizeof name) != NULL;
        if (here != first)
            return facet_err(err, FACET_E_FORMAT,
                             "%s is %s but layer 0 %s it: a layer fact must hold for every "
                             "layer", name, here ? "present" : "absent",
                             first ? "has" : "lacks");
    }
    *out = first;
    return FACET_OK;
}

/* The shape of row `r` (in the first layer that holds it: a hybrid's layer 0 may be
 * recurrent), when present, against the table's shape for facts f. */
static facet_status expect_shape(const st_checkpoint *ck, const facet_facts *f, const char *prefix,
                                 const facet_tensor_row *r, facet_error *err) {
    char name[NAME_CAP];
    int64_t l0 = 0;
    while (r->root == FACET_TR_LAYER && l0 + 1 < f->num_hidden_layers &&
           !facet_tensor_in_layer(r, f, l0))
        l0++;
    const st_tensor *t = facet_tensor_find(ck, r, prefix, l0, name, sizeof name);
    if (!t) return FACET_OK;
    int64_t rows = facet_tdim_value(r->dims[0], f, 0), cols = facet_tdim_value(r->dims[1], f, 0);
    if (t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols) return FACET_OK;
    char got[96] = "[";
    for (int d = 0; d < t->ndim; d++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? ", " : "",
                 (long long)t->shape[d]);
    snprintf(got + strlen(got), sizeof got - strlen(got), "]");
    return facet_err(err, FACET_E_FORMAT, "%s has shape %s, expected [%lld, %lld] (%s, %s)",
                     t->name, got, (long long)rows, (long long)cols, facet_tdim_name(r->dims[0]),
                     facet_tdim_name(r->dims[1]));
}

#define TRY(x)                                                                         \
    do {                                                                               \
        facet_status st_ = (x);                                                        \
        if (st_ != FACET_OK) return st_;                                               \
    } while (0)

/* A model with recurrent layers (hybrids): each layer's tensors must be of the kind the
 * config gives it (attention or a recurrent mixer). A layer holding only the other kind's
 * tensors means the config's layer kinds disagree with the checkpoint: say so, naming the
 * key that chose the kind, rather than report a missing tensor of the wrong kind later. */
static facet_status check_layer_kinds(const st_checkpoint *ck, const facet_facts *f,
                                      const char *prefix, facet_error *err) {
    static const char *const kinds[] = {"an attention", "a Mamba", "a Mamba-2",
                                        "a short-convolution",
                                        "a gated delta-rule"}; /* by layer_ssm */
    char has[NAME_CAP], other[NAME_CAP];
    for (int64_t i = 0; f->n_ssm_layers && i < f->num_hidden_layers; i++) {
        if (f->layer_block[i] == FACET_BLOCK_FFN) continue; /* no mixer */
        int attn = f->layer_ssm[i] == 0;
        if (facet_tensor_find_mixer(ck, prefix, i, attn, has, sizeof has) ||
            !facet_tensor_find_mixer(ck, prefix, i, !attn, other, sizeof other))
            continue;
        char source[160];
        const char *spell = f->layer_kinds_spelling[attn ? 0 : 1];
        if (f->layer_kinds_key[0] && spell[0])
            snprintf(source, sizeof source, "%s[%lld]=\"%s\"", f->layer_kinds_key,
                     (long long)i, spell);
        else if (f->layer_kinds_key[0])
            snprintf(source, sizeof source, "%s", f->layer_kinds_key);
        else
            snprintf(source, sizeof source, "the config class's default (config.json gives "
                                            "no layer kinds)");
        size_t kind = f->layer_ssm[i];
        if (kind >= sizeof kinds / sizeof kinds[0]) kind = 1;
        return facet_err(err, FACET_E_FORMAT,
                         "%slayers.%lld holds %s layer's tensors (%s) and none of %s layer's, "
                         "but %s makes it %s layer: the config's layer kinds disagree with "
                         "the checkpoint",
                         prefix, (long long)i, attn ? "a recurrent mixer" : "an attention",
                         other, attn ? "an attention" : "a recurrent mixer", source,
                         kinds[kind]);
    }
    return FACET_OK;
}

facet_status facet_facts_probe(facet_facts *f, const st_checkpoint *ck, facet_error *err) {
    char prefix[64], name[NAME_CAP];
    int64_t L = f->num_hidden_layers;

    /* dtypes and bytes of every tensor */
    f->dtype_mask = 0;
    f->weight_bytes = 0;
    for (size_t i = 0; i < ck->n_tensors; i++) {
        const st_tensor *t = ck->by_name[i];
        size_t len = strlen(t->name);
        /* MXFP4 experts: their U8 blocks and scales are read as such (weights.c), not
         * as a dtype of the weights */
        int mx = f->experts_mxfp4 && t->dtype == ST_U8 && len > 7 &&
                 (!strcmp(t->name + len - 7, "_blocks") || !strcmp(t->name + len - 7, "_scales"));
        if (!mx) f->dtype_mask |= 1u << t->dtype;
        f->weight_bytes += ck->by_name[i]->end - ck->by_name[i]->begin;
    }

    if (!facet_tensor_prefix(ck, prefix, sizeof prefix))
        return facet_err(err, FACET_E_NOT_FOUND,
                         "checkpoint has no decoder layer tensors (model.layers.0.*)");
    for (int64_t i = 0; i < L; i++) {
        facet_tensor_layer_path(prefix, i, name, sizeof name);
        if (!facet_tensor_with_prefix(ck, name))
            return facet_err(err, FACET_E_NOT_FOUND,
                             "checkpoint has no tensors %s* (num_hidden_layers=%lld)", name,
                             (long long)L);
    }
    TRY(check_layer_kinds(ck, f, prefix, err));
    /* a shared expert the config does not size (shared_expert_intermediate_size or
     * n_shared_experts 0 / null) would be left unused, silently: the config and the
     * tensors disagree (transformers would refuse the shapes) */
    if (f->shared_expert_intermediate_size == 0) {
        static const char *const shared[] = {"mlp.shared_expert.", "mlp.shared_experts.",
                                             "mixer.shared_experts.", "mlp.shared_expert_gate."};
        for (int64_t i = 0; i < L; i++) {
            if (!f->layer_sparse[i]) continue;
            for (size_t k = 0; k < sizeof shared / sizeof shared[0]; k++) {
                char lp[NAME_CAP];
                facet_tensor_layer_path(prefix, i, lp, sizeof lp);
                snprintf(name, sizeof name, "%s%s", lp, shared[k]);
                const st_tensor *t = facet_tensor_with_prefix(ck, name);
                if (t)
                    return facet_err(err, FACET_E_FORMAT,
                                     "checkpoint has %s, a shared expert's tensor, but the "
                                     "config sizes none (shared_expert_intermediate_size / "
                                     "n_shared_experts absent, null or 0); expected its size "
                                     "in config.json, or no such tensors",
                                     t->name);
            }
        }
    }
    facet_tensor_layer_path(prefix, L, name, sizeof name);
    if (facet_tensor_with_prefix(ck, name))
        facet_facts_note(f, "checkpoint has tensors %s* beyond num_hidden_layers=%lld; they "
                            "are not used", name, (long long)L);

    const facet_tensor_row *embed = facet_tensor_slot(FACET_TS_EMBED_TOKENS);
    if (!facet_tensor_find(ck, embed, prefix, 0, name, sizeof name))
        return facet_err(err, FACET_E_NOT_FOUND, "checkpoint has no %s", name);
    TRY(expect_shape(ck, f, prefix, embed, err));

    /* where the experts are (mixture-of-experts layers): the first sparse layer's names */
    f->experts_layout = FACET_EXPERTS_NONE;
    if (f->n_sparse_layers) {
        static const struct {
            const char *name;
            facet_experts_layout layout;
        } layouts[] = {{"mlp.router.weight", FACET_EXPERTS_GPTOSS},
                       {"block_sparse_moe.experts.0.w1.weight", FACET_EXPERTS_W123},
                       {"mlp.experts.0.gate_proj.weight", FACET_EXPERTS_PROJ},
                       {"feed_forward.experts.0.gate_proj.weight", FACET_EXPERTS_JAMBA},
                       {"mlp.experts.gate_up_proj", FACET_EXPERTS_FUSED},
                       {"mlp.experts.gate_proj", FACET_EXPERTS_SPLIT3D},
                       {"block_sparse_moe.input_linear.weight", FACET_EXPERTS_GRANITE},
                       {"mixer.experts.0.up_proj.weight", FACET_EXPERTS_MIXER},
                       {"mixer.experts.up_proj", FACET_EXPERTS_MIXER3D}};
        int64_t l0 = 0;
        while (!f->layer_sparse[l0]) l0++;
        for (size_t i = 0; i < sizeof layouts / sizeof layouts[0] && !f->experts_layout; i++) {
            char path[256];
            facet_tensor_layer_path(prefix, l0, path, sizeof path);
            snprintf(name, sizeof name, "%s%s", path, layouts[i].name);
            if (st_checkpoint_find(ck, name)) f->experts_layout = layouts[i].layout;
        }
        if (!f->experts_layout)
            return facet_err(err, FACET_E_NOT_FOUND,
                             "checkpoint has no expert tensors in layer %lld, a mixture-of-experts "
                             "layer (expected %slayers.%lld.block_sparse_moe.experts.0.w1.weight, "
                             "mlp.experts.0.gate_proj.weight, feed_forward.experts.0.gate_proj.weight, "
                             "mlp.experts.gate_up_proj, "
                             "mlp.experts.gate_proj, "
                             "block_sparse_moe.input_linear.weight, "
                             "mixer.experts.0.up_proj.weight or mixer.experts.up_proj)",
                             (long long)l0, prefix, (long long)l0);
    }

    /* fused projections (Phi-3) */
    int fused_qkv = 0, fused_gate_up = 0;
    TRY(layer_fact(ck, f, prefix, L, facet_tensor_fused(FACET_TF_QKV_PROJ), &fused_qkv, err));
    TRY(layer_fact(ck, f, prefix, L, facet_tensor_fused(FACET_TF_GATE_UP_PROJ), &fused_gate_up,
                   err));
    /* ChatGLM's mlp.dense_h_to_4h is [gate; up]; NeoX's and Falcon's, of the same name,
     * is an ungated MLP's up projection */
    if (f->ffn_ungated) fused_gate_up = 0;
    f->fused_gate_up = fused_gate_up;
    /* GPT-2's Conv1D projections; QWen's attn.c_attn of the same name is a Linear q|k|v
     * (its config class says so): fused_qkv */
    int c1 = 0;
    TRY(layer_fact(ck, f, prefix, L, facet_tensor_fused(FACET_TF_C_ATTN), &c1, err));
    if (f->c_attn_linear) c1 = 0;
    else if (c1) fused_qkv = 0;
    f->fused_qkv = fused_qkv;
    f->conv1d = c1;
    /* GPT-NeoX's query_key_value (per-head rows) */
    int qkv_heads = 0;
    TRY(layer_fact(ck, f, prefix, L, facet_tensor_fused(FACET_TF_QKV_HEADS), &qkv_heads, err));
    /* self_attention.query_key_value: ChatGLM's (its config class says so) is [q; k; v]
     * blocks, fused_qkv; Falcon's of the same name is in KV groups */
    if (f->qkv_fused_blocks) qkv_heads = 0;
    else if (qkv_heads) fused_qkv = 0;
    f->fused_qkv = fused_qkv;
    f->fused_qkv_heads = qkv_heads;
    if (qkv_heads) TRY(expect_shape(ck, f, prefix, facet_tensor_fused(FACET_TF_QKV_HEADS), err));
    /* LayerNorm biases (every norm of the checkpoint has one or none does) */
    int nb = 0;
    if (f->layer_norm)
        TRY(layer_fact(ck, f, prefix, L, facet_tensor_slot(FACET_TS_INPUT_LAYERNORM_BIAS), &nb,
                       err));
    f->norm_bias = nb;
    /* an ungated MLP's biases are the tensors' to say (NeoX's Linear layers have them) */
    if (f->ffn_ungated) {
        int mb = 0;
        TRY(layer_fact(ck, f, prefix, L, facet_tensor_slot(FACET_TS_DOWN_BIAS), &mb, err));
        f->mlp_bias = mb;
    }

    /* projection shapes against the config's head counts and head_dim */
    if (fused_qkv) {
        TRY(expect_shape(ck, f, prefix, facet_tensor_fused(FACET_TF_QKV_PROJ), err));
    } else if (!qkv_heads && !c1 && !f->kv_lora_rank) {
        TRY(expect_shape(ck, f, prefix, facet_tensor_slot(FACET_TS_Q_PROJ), err));
        TRY(expect_shape(ck, f, prefix, facet_tensor_slot(FACET_TS_K_PROJ), err));
    }

    /* biases: q, k, v must come together */
    int qb = 0, kb = 0, vb = 0, ob = 0;
    if (fused_qkv || qkv_heads || c1) {
        TRY(layer_fact(ck, f, prefix, L,
                       facet_tensor_fused(c1          ? FACET_TF_C_ATTN_BIAS
                                          : qkv_heads ? FACET_TF_QKV_HEADS_BIAS
                                                      : FACET_TF_QKV_BIAS),
                       &qb, err));
        kb = vb = qb;
    } else {
        TRY(layer_fact(ck, f, prefix, L, facet_tensor_slot(FACET_TS_Q_BIAS), &qb, err));
        TRY(layer_fact(ck, f, prefix, L, facet_tensor_slot(FACET_TS_K_BIAS), &kb, err));
        TRY(layer_fact(ck, f, prefix, L, facet_tensor_slot(FACET_TS_V_BIAS), &vb, err));
    }
    if (qb != kb || qb != vb)
        return facet_err(err, FACET_E_FORMAT,
                         "%slayers.0.self_attn: q/k/v biases present %d/%d/%d; expected all "
                         "three or none", prefix, qb, kb, vb);
    const facet_tensor_row *orow = facet_tensor_slot(FACET_TS_O_BIAS);
    for (size_t i = 0; c1 && i < facet_tensor_count; i++) /* GPT-2: attn.c_proj.bias */
        if (facet_tensor_rows[i].slot == FACET_TS_O_BIAS && facet_tensor_rows[i].conv1d)
            orow = &facet_tensor_rows[i];
    TRY(layer_fact(ck, f, prefix, L, orow, &ob, err));
    int qn = 0, kn = 0;
    TRY(layer_fact(ck, f, prefix, L, facet_tensor_slot(FACET_TS_Q_NORM), &qn, err));
    TRY(layer_fact(ck, f, prefix, L, facet_tensor_slot(FACET_TS_K_NORM), &kn, err));
    if (qn != kn)
        return facet_err(err, FACET_E_FORMAT,
                         "%slayers.0.self_attn: q_norm %s but k_norm %s; expected both or "
                         "neither", prefix, qn ? "present" : "absent", kn ? "present" : "absent");

    if (qb != f->qkv_bias)
        facet_facts_note(f, "q/k/v bias: config implies %s, tensors %s; tensors win",
                         f->qkv_bias ? "present" : "absent", qb ? "present" : "absent");
    if (ob != f->o_bias)
        facet_facts_note(f, "o_proj bias: config implies %s, tensors %s; tensors win",
                         f->o_bias ? "present" : "absent", ob ? "present" : "absent");
    /* A norm the modeling code applies but the file lacks: transformers would run it with
     * freshly initialised weights (a warning, not an error); dropping the norm instead
     * would compute something else again. Neither is the checkpoint's model: refuse. An
     * extra norm (or bias) present in the file still wins below. Absent biases are no
     * such case: transformers initialises a missing Linear bias to zero, the same as
     * none. */
    if (f->qk_norm && !qn) {
        facet_tensor_find(ck, facet_tensor_slot(FACET_TS_Q_NORM), prefix, 0, name, sizeof name);
        return facet_err(err, FACET_E_NOT_FOUND,
                         "checkpoint has no %s, but the %s modeling code applies q_norm and "
                         "k_norm in every layer (transformers would initialise them afresh): "
                         "the weights the config promises are missing",
                         name, f->text_model_type[0] ? f->text_model_type : f->model_type);
    }
    if (qn != f->qk_norm)
        facet_facts_note(f, "qk-norm: config class implies %s, tensors %s; tensors win",
                         f->qk_norm ? "present" : "absent", qn ? "present" : "absent");
    f->qkv_bias = qb;
    f->o_bias = ob;
    f->qk_norm = qn;

    /* lm_head: present means untied, whatever tie_word_embeddings says. Absent while the
     * config says untied: transformers would create a randomly initialised head, so there
     * is no right answer to compute (the embeddings are not the head it would use). */
    const facet_tensor_row *head = facet_tensor_slot(FACET_TS_LM_HEAD);
    f->has_lm_head = facet_tensor_find(ck, head, prefix, 0, name, sizeof name) != NULL;
    TRY(expect_shape(ck, f, prefix, head, err));
    if (!f->has_lm_head && !f->tie_word_embeddings)
        return facet_err(err, FACET_E_NOT_FOUND,
                         "checkpoint has no %s, but tie_word_embeddings is false (%s): an "
                         "untied model needs its own output head (transformers would "
                         "initialise one at random)",
                         head->name, f->tie_word_embeddings_given
                                         ? "config.json"
                                         : "the config class's default; config.json omits "
                                           "the key");
    if (f->has_lm_head == f->tie_word_embeddings)
        facet_facts_note(f, "tie_word_embeddings=%s but lm_head.weight is %s; tensors win "
                            "(%s)", f->tie_word_embeddings ? "true" : "false",
                         f->has_lm_head ? "present" : "absent",
                         f->has_lm_head ? "untied" : "tied to embed_tokens");
    f->tie_word_embeddings = !f->has_lm_head;
    f->lm_head_bias = f->has_lm_head &&
                      facet_tensor_find(ck, facet_tensor_slot(FACET_TS_LM_HEAD_BIAS), prefix, 0,
                                        name, sizeof name) != NULL;
    f->probed = 1;
    return FACET_OK;
}

int facet_dir_has_weights(const char *dir) {
    if (!facet_is_dir(dir)) return 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        found = n > 12 && !strcmp(e->d_name + n - 12, ".safetensors");
    }
    closedir(d);
    return found;
}
