/*
 * rope.c — rotary position embedding tables from the facts.
 *
 * Follows transformers' ROPE_INIT_FUNCTIONS (modeling_rope_utils.py):
 *   default: inv_freq[i] = 1 / theta^(2i / d), d = rotary dims
 *   linear:  inv_freq / factor (equivalent to dividing positions by factor)
 *   llama3:  _compute_llama3_parameters — low frequencies divided by factor, high ones
 *            kept, a smooth blend in between, bands from original_max_position_embeddings.
 * The other rope types are refused by the capability table before a model gets here.
 */
#include <math.h>
#include <stdlib.h>

#include "engine/model_internal.h"
#include "util/error.h"

facet_status facet_rope_init(facet_model *m, facet_error *err) {
    const facet_facts *f = &m->facts;
    int rot = (int)(f->head_dim * f->partial_rotary_factor);
    rot -= rot % 2;
    if (rot <= 0 || rot > f->head_dim)
        return facet_err(err, FACET_E_UNSUPPORTED, "rotary dims %d out of range for head_dim=%lld",
                         rot, (long long)f->head_dim);
    m->rope_dim = rot;
    m->rope_attention_scale = 1.0f;
    m->inv_freq = malloc(sizeof(float) * (size_t)(rot / 2));
    if (!m->inv_freq) return facet_err(err, FACET_E_NOMEM, "rope tables");
    for (int i = 0; i < rot / 2; i++) {
        double inv = 1.0 / pow(f->rope_theta, (2.0 * i) / rot);
        switch (f->rope_type) {
        case FACET_ROPE_DEFAULT: break;
        case FACET_ROPE_LINEAR: inv /= f->rope_factor; break;
        case FACET_ROPE_LLAMA3: {
            double factor = f->rope_factor, lo = f->rope_low_freq_factor,
                   hi = f->rope_high_freq_factor;
            double old = (double)f->rope_original_max_position_embeddings;
            double lo_wavelen = old / lo, hi_wavelen = old / hi;
            double wavelen = 2.0 * M_PI / inv;
            if (wavelen > lo_wavelen) {
                inv = inv / factor;
            } else if (wavelen >= hi_wavelen) { /* medium band: blend */
                double smooth = (old / wavelen - lo) / (hi - lo);
                inv = (1.0 - smooth) * inv / factor + smooth * inv;
            }
            break;
        }
        default:
            free(m->inv_freq);
            m->inv_freq = NULL;
            return facet_err(err, FACET_E_UNSUPPORTED,
                             "config.json: rope_type=%s is not supported by the CPU engine",
                             f->rope_type_name);
        }
        /* transformers keeps inv_freq in float32 */
        m->inv_freq[i] = (float)inv;
    }
    return FACET_OK;
}

void facet_rope_cos_sin(const facet_model *m, int pos, float *cos_out, float *sin_out) {
    for (int i = 0; i < m->rope_dim / 2; i++) {
        /* float32 product as transformers computes freqs = inv_freq @ position_ids */
        float angle = (float)pos * m->inv_freq[i];
        cos_out[i] = cosf(angle) * m->rope_attention_scale;
        sin_out[i] = sinf(angle) * m->rope_attention_scale;
    }
}
