/*
 * device_verdict.c — the kernels' declared needs judged against a device's limits for a
 * checkpoint's facts (device_verdict.h). Each check is one need and one limit; the
 * refusal's "supported" names the limit, its value and the device.
 */
#include <stdio.h>
#include <string.h>

#include "model/device_verdict.h"

/* "16-bit storage (storageBuffer16BitAccess), ..." for the FACET_DEV_* bits of m. */
static void feature_names(unsigned m, char *buf, size_t cap) {
    static const struct { unsigned bit; const char *name; } names[] = {
        {FACET_DEV_FLOAT16, "16-bit float arithmetic (shaderFloat16)"},
        {FACET_DEV_INT8, "8-bit integer arithmetic (shaderInt8)"},
        {FACET_DEV_STORAGE16, "16-bit storage (storageBuffer16BitAccess)"},
        {FACET_DEV_STORAGE8, "8-bit storage (storageBuffer8BitAccess)"},
    };
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (m & names[i].bit) {
            size_t len = strlen(buf);
            snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", names[i].name);
        }
}

static void workgroup(const facet_device_limits *l, const vk_needs *n, facet_verdict *v) {
    char val[96], sup[512];
    if (l->max_invocations < n->invocations) {
        snprintf(val, sizeof val, "%u invocations", n->invocations);
        snprintf(sup, sizeof sup, "<= %u on %s (maxComputeWorkGroupInvocations)",
                 l->max_invocations, l->name);
        facet_verdict_refuse(v, "workgroup", val, sup);
    }
    if (l->max_group_size[0] < n->group_x || l->max_group_size[1] < n->group_y) {
        snprintf(val, sizeof val, "%u x %u", n->group_x, n->group_y);
        snprintf(sup, sizeof sup, "<= %u x %u on %s (maxComputeWorkGroupSize)",
                 l->max_group_size[0], l->max_group_size[1], l->name);
        facet_verdict_refuse(v, "workgroup size", val, sup);
    }
    if (l->max_shared_bytes < n->matmul_shared_bytes) {
        snprintf(val, sizeof val, "%u bytes", n->matmul_shared_bytes);
        snprintf(sup, sizeof sup, "<= %u bytes on %s (maxComputeSharedMemorySize)",
                 l->max_shared_bytes, l->name);
        facet_verdict_refuse(v, "matmul shared memory", val, sup);
    }
}

static void attention(const facet_facts *f, const facet_device_limits *l, const vk_needs *n,
                      facet_verdict *v) {
    uint64_t need = n->attention_shared_bytes(f->head_dim);
    if (need <= l->max_shared_bytes) return;
    int64_t best = f->head_dim;
    while (best > 0 && n->attention_shared_bytes(best) > l->max_shared_bytes) best--;
    char val[96], sup[512];
    snprintf(val, sizeof val, "%lld", (long long)f->head_dim);
    char served[64] = "no head_dim";
    if (best > 0) snprintf(served, sizeof served, "head_dim <= %lld", (long long)best);
    snprintf(sup, sizeof sup,
             "%s on %s: the attention kernel stages %llu bytes of shared memory for head_dim "
             "%lld, more than its maxComputeSharedMemorySize of %u bytes", served, l->name,
             (unsigned long long)need, (long long)f->head_dim, l->max_shared_bytes);
    facet_verdict_refuse(v, "head_dim", val, sup);
}

/* The largest weight matrix of the checkpoint (one storage binding each). */
static void matrices(const facet_facts *f, facet_weight_format w, const facet_device_limits *l,
                     const vk_needs *n, facet_verdict *v) {
    uint64_t H = (uint64_t)(f->hidden_size > 0 ? f->hidden_size : 0);
    uint64_t q = (uint64_t)(f->num_attention_heads * f->head_dim);
    uint64_t kv = (uint64_t)(f->num_key_value_heads * f->head_dim);
    uint64_t I = (uint64_t)(f->intermediate_size > 0 ? f->intermediate_size : 0);
    const struct { const char *name; uint64_t rows, cols; } m[] = {
        {"lm_head", (uint64_t)(f->vocab_size > 0 ? f->vocab_size : 0), H},
        {"q_proj", q, H}, {"o_proj", H, q}, {"k_proj", kv, H},
        {"gate_proj", I, H}, {"down_proj", H, I},
    };
    /* a matrix is split by rows into parts of what one binding reaches (vk_weights.c,
     * VK_MAX_WEIGHT_PARTS of them at most): the one needing the most parts decides */
    size_t best = 0;
    uint64_t best_parts = 0, range = l->max_storage_range;
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        if (!m[i].rows) continue;
        uint64_t row = n->matrix_bytes(w, 1, m[i].cols), per = row ? range / row : 0;
        uint64_t parts = per ? (m[i].rows + per - 1) / per : UINT64_MAX;
        if (parts > best_parts) best = i, best_parts = parts;
    }
    if (best_parts <= VK_NEEDS_MAX_WEIGHT_PARTS) return;
    uint64_t bytes = n->matrix_bytes(w, m[best].rows, m[best].cols);
    char val[96], sup[512];
    snprintf(val, sizeof val, "%s [%llu][%llu] %s, %llu bytes", m[best].name,
             (unsigned long long)m[best].rows, (unsigned long long)m[best].cols,
             facet_weight_format_name(w), (unsigned long long)bytes);
    snprintf(sup, sizeof sup,
             "<= %d bindings of %llu bytes per matrix on %s (maxStorageBufferRange; a matrix "
             "is split by rows into at most %d buffers)", VK_NEEDS_MAX_WEIGHT_PARTS,
             (unsigned long long)range, l->name, VK_NEEDS_MAX_WEIGHT_PARTS);
    facet_verdict_refuse(v, "weight matrix", val, sup);
}

static void features(facet_weight_format *w, const facet_device_limits *l, const vk_needs *n,
                     facet_verdict *v, char *note, size_t note_cap) {
    if ((int)*w < 0 || (int)*w > FACET_WEIGHTS_GGUF) return;
    unsigned missing = n->weight_features[*w] & ~l->features;
    if (!missing) return;
    char names[256];
    feature_names(missing, names, sizeof names);
    if (*w == FACET_WEIGHTS_BF16 && !(n->weight_features[FACET_WEIGHTS_F16] & ~l->features)) {
        snprintf(note, note_cap, "weights=bf16 run as f16 on %s: its bf16 kernels need %s, "
                 "which the device lacks", l->name, names);
        *w = FACET_WEIGHTS_F16;
        return;
    }
    char sup[512];
    snprintf(sup, sizeof sup, "formats whose kernels need only what %s has; it lacks %s",
             l->name, names);
    facet_verdict_refuse(v, "weights", facet_weight_format_name(*w), sup);
}

void facet_judge_device(const facet_facts *f, facet_weight_format *w,
                        const facet_device_limits *l, const vk_needs *n, facet_verdict *v,
                        char *note, size_t note_cap) {
    if (note_cap) note[0] = '\0';
    if (!n) n = &vk_needs_current;
    workgroup(l, n, v);
    attention(f, l, n, v);
    features(w, l, n, v, note, note_cap);
    matrices(f, *w, l, n, v);
}
