/*
 * rope.c — rotary position embedding tables from the facts.
 *
 * Follows transformers' ROPE_INIT_FUNCTIONS (modeling_rope_utils.py), each returning
 * inv_freq over the d = head_dim * partial_rotary_factor rotary dims and an attention
 * factor that scales cos and sin:
 *   default:  inv_freq[i] = 1 / theta^(2i / d)
 *   linear:   inv_freq / factor (positions divided by factor)
 *   llama3:   _compute_llama3_parameters — wavelengths above
 *             original_max_position_embeddings / low_freq_factor divided by factor, below
 *             .../high_freq_factor kept, a smooth blend in between
 *   yarn:     _compute_yarn_parameters — interpolation (inv_freq / factor) and
 *             extrapolation (inv_freq) blended by a linear ramp between the correction
 *             dims of beta_fast and beta_slow (floored / ceiled unless "truncate":
 *             false, as gpt-oss); attention factor
 *             given, or 0.1 ln(factor) + 1
 *   longrope: _compute_longrope_parameters — inv_freq / short_factor[i], or / long_factor[i]
 *             when the sequence is longer than original_max_position_embeddings (chosen
 *             per forward call, as transformers' dynamic_rope_update does); attention
 *             factor given, or sqrt(1 + ln(factor) / ln(original_max_position_embeddings))
 * When factor is absent for yarn / longrope it is max_position_embeddings /
 * original_max_position_embeddings. Sliding layers with their own base
 * (rope_local_base_freq, Gemma 3) use default RoPE with that base, no scaling.
 * transformers keeps inv_freq in float32 and computes angles as float32 products.
 */
#include <math.h>
#include <stdlib.h>

#include "engine/model_internal.h"
#include "util/error.h"

static double yarn_correction_dim(double rotations, int dim, double base, double max_pos) {
    return (dim * log(max_pos / (rotations * 2.0 * M_PI))) / (2.0 * log(base));
}

/* Fill inv[0..half) for the global layers; *attn receives the attention factor. */
static facet_status global_table(const facet_facts *f, int rot, float *inv, float *inv_long,
                                 float *attn, facet_error *err) {
    int half = rot / 2;
    double factor = f->rope_factor;
    double orig = (double)f->rope_original_max_position_embeddings;
    *attn = 1.0f;
    if ((f->rope_type == FACET_ROPE_YARN || f->rope_type == FACET_ROPE_LONGROPE) && orig <= 0)
        orig = (double)f->max_position_embeddings;
    if ((f->rope_type == FACET_ROPE_YARN || f->rope_type == FACET_ROPE_LONGROPE) &&
        factor == 1.0 && orig > 0)
        factor = (double)f->max_position_embeddings / orig;

    double yarn_low = 0, yarn_high = 0;
    if (f->rope_type == FACET_ROPE_YARN) {
        double a = f->rope_attention_factor > 0 ? f->rope_attention_factor
                   : factor <= 1.0            ? 1.0
                                              : 0.1 * log(factor) + 1.0;
        *attn = (float)a;
        yarn_low = yarn_correction_dim(f->rope_beta_fast, rot, f->rope_theta, orig);
        yarn_high = yarn_correction_dim(f->rope_beta_slow, rot, f->rope_theta, orig);
        if (!f->rope_yarn_no_truncate) { /* "truncate": true, the default */
            yarn_low = floor(yarn_low);
            yarn_high = ceil(yarn_high);
        }
        if (yarn_low < 0) yarn_low = 0;
        if (yarn_high > rot - 1) yarn_high = rot - 1;
        if (yarn_low == yarn_high) yarn_high += 0.001;
    }
    if (f->rope_type == FACET_ROPE_LONGROPE) {
        if (f->n_rope_short != half || f->n_rope_long != half)
            return facet_err(err, FACET_E_FORMAT,
                             "config.json: rope_scaling short_factor/long_factor have %d/%d "
                             "entries, expected %d (rotary dims / 2)",
                             f->n_rope_short, f->n_rope_long, half);
        double a = f->rope_attention_factor > 0 ? f->rope_attention_factor
                   : factor <= 1.0            ? 1.0
                                              : sqrt(1.0 + log(factor) / log(orig));
        *attn = (float)a;
    }
    for (int i = 0; i < half; i++) {
        /* float32 exponent as torch.arange(0, d, 2).float() / d */
        float expo = (float)(2 * i) / (float)rot;
        double base_pow = pow(f->rope_theta, (double)expo);
        double v = 1.0 / base_pow;
        switch (f->rope_type) {
        case FACET_ROPE_DEFAULT: break;
        case FACET_ROPE_LINEAR: v /= factor; break;
        case FACET_ROPE_LLAMA3: {
            double lo = f->rope_low_freq_factor, hi = f->rope_high_freq_factor;
            double lo_wavelen = orig / lo, hi_wavelen = orig / hi;
            double wavelen = 2.0 * M_PI / v;
            if (wavelen > lo_wavelen) {
                v = v / f->rope_factor;
            } else if (wavelen >= hi_wavelen) { /* medium band: blend */
                double smooth = (orig / wavelen - lo) / (hi - lo);
                v = (1.0 - smooth) * v / f->rope_factor + smooth * v;
            }
            break;
        }
        case FACET_ROPE_YARN: {
            double ramp = (i - yarn_low) / (yarn_high - yarn_low);
            if (ramp < 0) ramp = 0;
            if (ramp > 1) ramp = 1;
            double extrap = 1.0 - ramp; /* weight of the unscaled frequency */
            v = (v / factor) * (1.0 - extrap) + v * extrap;
            break;
        }
        case FACET_ROPE_LONGROPE:
            inv_long[i] = (float)(1.0 / (f->rope_long_factor[i] * base_pow));
            v = 1.0 / (f->rope_short_factor[i] * base_pow);
            break;
        default:
            return facet_err(err, FACET_E_UNSUPPORTED,
                             "config.json: rope_type=%s is not supported by the CPU engine",
                             f->rope_type_name);
        }
        inv[i] = (float)v;
    }
    return FACET_OK;
}

/* ALiBi slopes (Press et al. 2022; BLOOM's build_alibi_tensor, MPT's gen_slopes): for p
 * the least power of two >= heads, slope_k = 2^(-alibi_bias_max * k / p), k = 1..p; when
 * p != heads the odd k come first, then the even, the first `heads` kept (BLOOM's
 * closest-power-of-two base plus its interleaved extra slopes is the same list, and
 * Baichuan-13B's _get_interleave). With alibi_pre_scale (Falcon) each slope is times
 * attn_scale, the factor the bias shares with q.k there. */
static facet_status alibi_init(facet_model *m, facet_error *err) {
    const facet_facts *f = &m->facts;
    int nh = (int)f->num_attention_heads, p = 1;
    while (p < nh) p *= 2;
    m->alibi_slopes = malloc(sizeof(float) * (size_t)nh);
    if (!m->alibi_slopes) return facet_err(err, FACET_E_NOMEM, "alibi slopes");
    for (int h = 0; h < nh; h++) {
        int half = p / 2, k = p == nh ? h + 1 : h < half ? 2 * (h + 1) : 2 * (h - half) + 1;
        double slope = pow(2.0, -f->alibi_bias_max * k / p);
        /* Falcon adds the bias to q.k before the scale: scaled with the scores */
        m->alibi_slopes[h] = (float)(f->alibi_pre_scale ? slope * f->attn_scale : slope);
    }
    return FACET_OK;
}

facet_status facet_rope_init(facet_model *m, facet_error *err) {
    const facet_facts *f = &m->facts;
    if (f->alibi) {
        facet_status st = alibi_init(m, err);
        if (st != FACET_OK) return st;
    }
    if (f->n_ssm_layers == f->num_hidden_layers && f->n_ssm_layers > 0) {
        m->rope_dim = 0; /* no attention layer: no positions to rotate (Mamba) */
        return FACET_OK;
    }
    int rot = (int)(f->head_dim * f->partial_rotary_factor);
    /* latent attention turns the decoupled rope part alone (DeepseekV2Config's head_dim
     * is qk_rope_head_dim) */
    int mla = f->kv_lora_rank > 0;
    if (mla) rot = (int)f->qk_rope_head_dim;
    rot -= rot % 2;
    if (rot <= 0 || (!mla && rot > f->head_dim))
        return facet_err(err, FACET_E_UNSUPPORTED, "rotary dims %d out of range for head_dim=%lld",
                         rot, (long long)f->head_dim);
    int half = rot / 2;
    m->rope_dim = rot;
    m->inv_freq = malloc(sizeof(float) * (size_t)half);
    if (f->rope_type == FACET_ROPE_LONGROPE) m->inv_freq_long = malloc(sizeof(float) * (size_t)half);
    int local = f->rope_local_base_freq > 0 && f->n_sliding_layers > 0;
    if (local) m->inv_freq_local = malloc(sizeof(float) * (size_t)half);
    if (!m->inv_freq || (f->rope_type == FACET_ROPE_LONGROPE && !m->inv_freq_long) ||
        (local && !m->inv_freq_local))
        return facet_err(err, FACET_E_NOMEM, "rope tables");
    facet_status st = global_table(f, rot, m->inv_freq, m->inv_freq_long, &m->rope_attention_scale, err);
    if (st != FACET_OK) return st;
    if (local)
        for (int i = 0; i < half; i++)
            m->inv_freq_local[i] =
                (float)(1.0 / pow(f->rope_local_base_freq, (double)((float)(2 * i) / (float)rot)));
    return FACET_OK;
}

void facet_rope_cos_sin(const facet_model *m, const float *inv_freq, float scale, int pos,
                        float *cos_out, float *sin_out) {
    for (int i = 0; i < m->rope_dim / 2; i++) {
        /* float32 product as transformers computes freqs = inv_freq @ position_ids */
        float angle = (float)pos * inv_freq[i];
        cos_out[i] = cosf(angle) * scale;
        sin_out[i] = sinf(angle) * scale;
    }
}
