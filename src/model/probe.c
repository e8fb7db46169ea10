/*
 * probe.c — weight facts from the safetensors headers of a checkpoint (see probe.h).
 * Names follow the Hugging Face modeling code's module paths
 * (model.layers.N.self_attn.q_proj.weight, ...).
 */
#include "model/probe.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "util/error.h"
#include "util/fs.h"

#define NAME_CAP 512

/* First tensor whose name starts with `prefix` (by_name is sorted), or NULL. */
static const st_tensor *find_prefix(const st_checkpoint *ck, const char *prefix) {
    size_t lo = 0, hi = ck->n_tensors, n = strlen(prefix);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(ck->by_name[mid]->name, prefix) < 0) lo = mid + 1;
        else hi = mid;
    }
    if (lo < ck->n_tensors && !strncmp(ck->by_name[lo]->name, prefix, n)) return ck->by_name[lo];
    return NULL;
}

/* The module path before "layers.0." ("model.", "model.language_model.", ...). */
static int layer_prefix(const st_checkpoint *ck, char *out, size_t cap) {
    static const char *const known[] = {"model.", "model.language_model.",
                                        "language_model.model.", "transformer.", ""};
    char probe[NAME_CAP];
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        snprintf(probe, sizeof probe, "%slayers.0.", known[i]);
        if (find_prefix(ck, probe)) {
            snprintf(out, cap, "%s", known[i]);
            return 1;
        }
    }
    return 0;
}

static const st_tensor *layer_tensor(const st_checkpoint *ck, const char *prefix, int64_t layer,
                                     const char *suffix, char *name, size_t cap) {
    snprintf(name, cap, "%slayers.%lld.%s", prefix, (long long)layer, suffix);
    return st_checkpoint_find(ck, name);
}

/* A per-layer fact: present in layer 0 decides; every other layer must agree. */
static facet_status layer_fact(const st_checkpoint *ck, const char *prefix, int64_t L,
                               const char *suffix, int *out, facet_error *err) {
    char name[NAME_CAP];
    int first = layer_tensor(ck, prefix, 0, suffix, name, sizeof name) != NULL;
    for (int64_t i = 1; i < L; i++) {
        int here = layer_tensor(ck, prefix, i, suffix, name, sizeof name) != NULL;
        if (here != first)
            return facet_err(err, FACET_E_FORMAT,
                             "%s is %s but layer 0 %s it: a layer fact must hold for every "
                             "layer", name, here ? "present" : "absent",
                             first ? "has" : "lacks");
    }
    *out = first;
    return FACET_OK;
}

static facet_status expect_shape(const st_tensor *t, int64_t rows, int64_t cols,
                                 const char *why, facet_error *err) {
    if (!t) return FACET_OK;
    if (t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols) return FACET_OK;
    char got[96] = "[";
    for (int d = 0; d < t->ndim; d++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? ", " : "",
                 (long long)t->shape[d]);
    snprintf(got + strlen(got), sizeof got - strlen(got), "]");
    return facet_err(err, FACET_E_FORMAT, "%s has shape %s, expected [%lld, %lld] (%s)",
                     t->name, got, (long long)rows, (long long)cols, why);
}

#define TRY(x)                                                                         \
    do {                                                                               \
        facet_status st_ = (x);                                                        \
        if (st_ != FACET_OK) return st_;                                               \
    } while (0)

facet_status facet_facts_probe(facet_facts *f, const st_checkpoint *ck, facet_error *err) {
    char prefix[64], name[NAME_CAP];
    int64_t L = f->num_hidden_layers;

    /* dtypes and bytes of every tensor */
    f->dtype_mask = 0;
    f->weight_bytes = 0;
    for (size_t i = 0; i < ck->n_tensors; i++) {
        f->dtype_mask |= 1u << ck->by_name[i]->dtype;
        f->weight_bytes += ck->by_name[i]->end - ck->by_name[i]->begin;
    }

    if (!layer_prefix(ck, prefix, sizeof prefix))
        return facet_err(err, FACET_E_NOT_FOUND,
                         "checkpoint has no decoder layer tensors (model.layers.0.*)");
    for (int64_t i = 0; i < L; i++) {
        snprintf(name, sizeof name, "%slayers.%lld.", prefix, (long long)i);
        if (!find_prefix(ck, name))
            return facet_err(err, FACET_E_NOT_FOUND,
                             "checkpoint has no tensors %s* (num_hidden_layers=%lld)", name,
                             (long long)L);
    }
    snprintf(name, sizeof name, "%slayers.%lld.", prefix, (long long)L);
    if (find_prefix(ck, name))
        facet_facts_note(f, "checkpoint has tensors %s* beyond num_hidden_layers=%lld; they "
                            "are not used", name, (long long)L);

    snprintf(name, sizeof name, "%sembed_tokens.weight", prefix);
    const st_tensor *embed = st_checkpoint_find(ck, name);
    if (!embed)
        return facet_err(err, FACET_E_NOT_FOUND, "checkpoint has no %s", name);
    TRY(expect_shape(embed, f->vocab_size, f->hidden_size, "vocab_size, hidden_size", err));

    /* fused projections (Phi-3) */
    int fused_qkv, fused_gate_up;
    TRY(layer_fact(ck, prefix, L, "self_attn.qkv_proj.weight", &fused_qkv, err));
    TRY(layer_fact(ck, prefix, L, "mlp.gate_up_proj.weight", &fused_gate_up, err));
    f->fused_qkv = fused_qkv;
    f->fused_gate_up = fused_gate_up;

    /* projection shapes against the config's head counts and head_dim */
    int64_t H = f->num_attention_heads, KV = f->num_key_value_heads, hd = f->head_dim;
    if (fused_qkv) {
        TRY(expect_shape(layer_tensor(ck, prefix, 0, "self_attn.qkv_proj.weight", name,
                                      sizeof name),
                         (H + 2 * KV) * hd, f->hidden_size,
                         "(num_attention_heads + 2 * num_key_value_heads) * head_dim, "
                         "hidden_size", err));
    } else {
        TRY(expect_shape(layer_tensor(ck, prefix, 0, "self_attn.q_proj.weight", name,
                                      sizeof name),
                         H * hd, f->hidden_size, "num_attention_heads * head_dim, hidden_size",
                         err));
        TRY(expect_shape(layer_tensor(ck, prefix, 0, "self_attn.k_proj.weight", name,
                                      sizeof name),
                         KV * hd, f->hidden_size,
                         "num_key_value_heads * head_dim, hidden_size", err));
    }

    /* biases: q, k, v must come together */
    int qb = 0, kb = 0, vb = 0, ob = 0;
    if (fused_qkv) {
        TRY(layer_fact(ck, prefix, L, "self_attn.qkv_proj.bias", &qb, err));
        kb = vb = qb;
    } else {
        TRY(layer_fact(ck, prefix, L, "self_attn.q_proj.bias", &qb, err));
        TRY(layer_fact(ck, prefix, L, "self_attn.k_proj.bias", &kb, err));
        TRY(layer_fact(ck, prefix, L, "self_attn.v_proj.bias", &vb, err));
    }
    if (qb != kb || qb != vb)
        return facet_err(err, FACET_E_FORMAT,
                         "%slayers.0.self_attn: q/k/v biases present %d/%d/%d; expected all "
                         "three or none", prefix, qb, kb, vb);
    TRY(layer_fact(ck, prefix, L, "self_attn.o_proj.bias", &ob, err));
    int qn = 0, kn = 0;
    TRY(layer_fact(ck, prefix, L, "self_attn.q_norm.weight", &qn, err));
    TRY(layer_fact(ck, prefix, L, "self_attn.k_norm.weight", &kn, err));
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
    if (qn != f->qk_norm)
        facet_facts_note(f, "qk-norm: config class implies %s, tensors %s; tensors win",
                         f->qk_norm ? "present" : "absent", qn ? "present" : "absent");
    f->qkv_bias = qb;
    f->o_bias = ob;
    f->qk_norm = qn;

    /* lm_head: present means untied, whatever tie_word_embeddings says */
    const st_tensor *head = st_checkpoint_find(ck, "lm_head.weight");
    if (!head) head = st_checkpoint_find(ck, "language_model.lm_head.weight");
    f->has_lm_head = head != NULL;
    TRY(expect_shape(head, f->vocab_size, f->hidden_size, "vocab_size, hidden_size", err));
    if (f->has_lm_head == f->tie_word_embeddings)
        facet_facts_note(f, "tie_word_embeddings=%s but lm_head.weight is %s; tensors win "
                            "(%s)", f->tie_word_embeddings ? "true" : "false",
                         f->has_lm_head ? "present" : "absent",
                         f->has_lm_head ? "untied" : "tied to embed_tokens");
    f->tie_word_embeddings = !f->has_lm_head;
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
