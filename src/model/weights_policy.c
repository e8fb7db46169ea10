/* weights_policy.c — the checkpoint's own precision for `--weights auto`. */
#include "model/weights_policy.h"

#include "kernels/cpu/cpu_features.h"

#include <stdlib.h>
#include <string.h>

#include "io/safetensors.h"

facet_weight_format facet_auto_weights(const facet_facts *f) {
    if (f->probed) {
        /* a GGUF file's block types run as the file stores them, so run, plan and bench
         * agree on what auto loads */
        if (f->gguf_block_matrices) return FACET_WEIGHTS_GGUF;
        uint32_t m = f->dtype_mask;
        if (m == (1u << ST_BF16)) return FACET_WEIGHTS_BF16;
        if (m == (1u << ST_F16)) return FACET_WEIGHTS_F16;
        /* DeepSeek-V3's FP8 release (float8 blocks, bf16 rest, f32 scales): bf16 */
        if ((m & (1u << ST_F8_E4M3)) &&
            !(m & ~((1u << ST_F8_E4M3) | (1u << ST_BF16) | (1u << ST_F32))))
            return FACET_WEIGHTS_BF16;
        return FACET_WEIGHTS_F32;
    }
    for (int i = 0; i < f->n_config_keys; i++) {
        const facet_config_key *k = &f->config_keys[i];
        if (strcmp(k->key, "torch_dtype") && strcmp(k->key, "dtype")) continue;
        if (!strcmp(k->value, "\"bfloat16\"")) return FACET_WEIGHTS_BF16;
        if (!strcmp(k->value, "\"float16\"")) return FACET_WEIGHTS_F16;
        return FACET_WEIGHTS_F32;
    }
    return FACET_WEIGHTS_F32;
}

facet_kv_type facet_auto_kv(facet_weight_format w) {
    switch (w) {
    case FACET_WEIGHTS_F32: return FACET_KV_F32;
    case FACET_WEIGHTS_F16: return FACET_KV_F16;
    default: return FACET_KV_BF16;
    }
}

facet_wformat facet_gguf_block_format(facet_wformat f) {
    const char *keep = getenv("FACET_GGUF_BLOCKS");
    if (keep && !strcmp(keep, "1")) return f;
    return f == FACET_WF_GGUF_Q4_0 ? FACET_WF_Q4 : f == FACET_WF_GGUF_Q8_0 ? FACET_WF_Q8 : f;
}

int facet_gguf_kpanels(void) {
    const char *keep = getenv("FACET_GGUF_BLOCKS");
    if (keep && !strcmp(keep, "1")) return 0;
    const facet_cpu_info *c = facet_cpu();
    return c->level >= FACET_CPU_AVX512 && c->avx512_vnni;
}

uint32_t facet_load_wformats(facet_weight_format w, const facet_facts *f, uint32_t gguf_formats) {
    if (w == FACET_WEIGHTS_GGUF) return gguf_formats;
    facet_wformat m = facet_wformat_of(w);
    return 1u << m | 1u << facet_wformat_output(m, f->hidden_size);
}

const char *facet_weight_format_name(facet_weight_format f) {
    static const char *names[] = {"auto", "f32", "bf16", "f16", "int8", "q4", "gguf"};
    return (unsigned)f < sizeof names / sizeof names[0] ? names[f] : "unknown";
}

const char *facet_kv_type_name(facet_kv_type t) {
    static const char *names[] = {"auto", "f32", "bf16", "f16"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

size_t facet_kv_type_bytes(facet_kv_type t) { return t == FACET_KV_F32 ? 4 : 2; }
