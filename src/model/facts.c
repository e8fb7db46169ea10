/*
 * facts.c — config.json (+ generation_config.json) -> the normalized fact manifest.
 *
 * Every key is read with a typed check (an integer where an integer belongs, positive
 * sizes, bounded so later products fit in 64 bits); absent keys take the transformers
 * config class's default (config_class.c); implicit facts are derived the way the
 * modeling code derives them. Keys this reader does not consume are kept in
 * f->config_keys for the capability table to classify, so a math-changing key is never
 * silently dropped.
 */
#include "model/facts.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/config_class.h"
#include "model/table.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"

#define CONFIG_MAX_BYTES (16u << 20)
#define MAX_CONSUMED 128

/* Upper bounds that keep every product the plan computes inside 64 bits. */
#define MAX_HIDDEN (1LL << 20)
#define MAX_HEADS (1LL << 14)
#define MAX_HEAD_DIM (1LL << 16)
#define MAX_VOCAB (1LL << 26)
#define MAX_INTERMEDIATE (1LL << 24)
#define MAX_POSITIONS (1LL << 40)
/* The context a checkpoint declares: positions are int (32-bit) through the engine. */
#define MAX_CONTEXT 2147483647LL

typedef struct reader {
    json_t *obj;            /* object the facts come from (config or its text_config) */
    const char *what;       /* file name for messages                                 */
    const char *prefix;     /* "text_config." or ""                                   */
    const char *consumed[MAX_CONSUMED];
    int n_consumed;
    int strict;             /* 0: errors become notes (family outside the table)     */
    facet_facts *f;
    facet_error *err;
} reader;

void facet_facts_note(facet_facts *f, const char *fmt, ...) {
    if (f->n_notes >= (int)(sizeof f->notes / sizeof f->notes[0])) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->notes[f->n_notes].text, sizeof f->notes[0].text, fmt, ap);
    va_end(ap);
    f->n_notes++;
}

/* Compact JSON of v, truncated with "..." to fit cap. */
static void render(const json_t *v, char *buf, size_t cap) {
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(10));
    if (!s) {
        snprintf(buf, cap, "?");
        return;
    }
    if (strlen(s) >= cap && cap > 4) {
        memcpy(buf, s, cap - 4);
        memcpy(buf + cap - 4, "...", 4);
    } else {
        snprintf(buf, cap, "%s", s);
    }
    free(s);
}

static json_t *take(reader *r, const char *key) {
    if (r->n_consumed < MAX_CONSUMED) r->consumed[r->n_consumed++] = key;
    return json_object_get(r->obj, key);
}

static int consumed(const reader *r, const char *key) {
    for (int i = 0; i < r->n_consumed; i++)
        if (!strcmp(r->consumed[i], key)) return 1;
    return 0;
}

/* A key of the wrong type or out of range. Strict: FACET_E_FORMAT. Otherwise a note. */
static facet_status bad(reader *r, const char *key, const json_t *v, const char *expected) {
    char val[64];
    render(v, val, sizeof val);
    if (!r->strict) {
        facet_facts_note(r->f, "%s%s is %s (%s), expected %s", r->prefix, key, val,
                         facet_json_type_name(v), expected);
        return FACET_OK;
    }
    return facet_err(r->err, FACET_E_FORMAT, "%s: %s%s is %s (%s), expected %s", r->what,
                     r->prefix, key, val, facet_json_type_name(v), expected);
}

/* Which key chose the layers' kinds (a hybrid's attention vs recurrent layers), and in a
 * per-layer list the spellings of the two kinds (NULL: not a list). */
static void layer_kinds_from(facet_facts *f, const char *key, const char *attn,
                             const char *recurrent) {
    snprintf(f->layer_kinds_key, sizeof f->layer_kinds_key, "%s", key);
    snprintf(f->layer_kinds_spelling[0], sizeof f->layer_kinds_spelling[0], "%s",
             attn ? attn : "");
    snprintf(f->layer_kinds_spelling[1], sizeof f->layer_kinds_spelling[1], "%s",
             recurrent ? recurrent : "");
}

static facet_status missing(reader *r, const char *key) {
    if (!r->strict) {
        facet_facts_note(r->f, "%s%s is missing", r->prefix, key);
        return FACET_OK;
    }
    return facet_err(r->err, FACET_E_NOT_FOUND, "%s: required key %s%s is missing", r->what,
                     r->prefix, key);
}

/* Integer key in [min, max]. Absent or null: FACET_E_NOT_FOUND when required, else *out
 * is left unchanged. Sets *present when given. */
static facet_status get_int(reader *r, const char *key, int required, int64_t min, int64_t max,
                            int64_t *out, int *present) {
    json_t *v = take(r, key);
    if (present) *present = 0;
    if (!v || json_is_null(v)) return required ? missing(r, key) : FACET_OK;
    char expected[80];
    snprintf(expected, sizeof expected, "%s integer",
             min >= 1 ? "a positive" : min == 0 ? "a non-negative" : "an");
    if (!json_is_integer(v)) return bad(r, key, v, expected);
    json_int_t x = json_integer_value(v);
    if (x < min) return bad(r, key, v, expected);
    if (x > max) {
        snprintf(expected + strlen(expected), sizeof expected - strlen(expected), " <= %lld",
                 (long long)max);
        return bad(r, key, v, expected);
    }
    *out = (int64_t)x;
    if (present) *present = 1;
    return FACET_OK;
}

/* Number key (integer or real), > 0 when positive is set. */
static facet_status get_num_from(reader *r, json_t *v, const char *key, int positive,
                                 double *out) {
    if (!v || json_is_null(v)) return FACET_OK;
    const char *expected = positive ? "a positive number" : "a number";
    if (!json_is_number(v)) return bad(r, key, v, expected);
    double x = json_number_value(v);
    if (!isfinite(x) || (positive && !(x > 0))) return bad(r, key, v, expected);
    *out = x;
    return FACET_OK;
}

static facet_status get_num(reader *r, const char *key, int positive, double *out) {
    return get_num_from(r, take(r, key), key, positive, out);
}

static facet_status get_bool(reader *r, const char *key, int *out) {
    json_t *v = take(r, key);
    if (!v || json_is_null(v)) return FACET_OK;
    if (!json_is_boolean(v)) return bad(r, key, v, "true or false");
    *out = json_is_true(v);
    return FACET_OK;
}

static facet_status get_str(reader *r, const char *key, char *out, size_t cap, int *present) {
    json_t *v = take(r, key);
    if (present) *present = 0;
    if (!v || json_is_null(v)) return FACET_OK;
    if (!json_is_string(v)) return bad(r, key, v, "a string");
    snprintf(out, cap, "%s", json_string_value(v));
    if (present) *present = 1;
    return FACET_OK;
}

/* +inf as a config spells it: a number past 1e30, "Infinity" / "inf" (a string), or
 * transformers 5's {"__float__": "Infinity"} (json.c reads Python's bare Infinity so). */
static int is_infinity(const json_t *v) {
    if (json_is_number(v)) return json_number_value(v) >= 1e30;
    if (json_is_object(v)) v = json_object_get(v, "__float__");
    const char *s = json_is_string(v) ? json_string_value(v) : "";
    return !strcmp(s, "Infinity") || !strcmp(s, "inf");
}

/* time_step_limit: only the unclamped (0, inf) is built */
static int no_clamp(const json_t *lim) {
    return !lim || json_is_null(lim) ||
           (json_is_array(lim) && json_array_size(lim) == 2 &&
            json_is_number(json_array_get(lim, 0)) && json_number_value(json_array_get(lim, 0)) == 0.0 &&
            is_infinity(json_array_get(lim, 1)));
}

/* Keep a key the reader did not consume, for the table to classify. */
static void keep_key(facet_facts *f, const char *key, const json_t *v) {
    if (f->n_config_keys >= FACET_MAX_CONFIG_KEYS) {
        f->config_keys_overflow = 1;
        return;
    }
    facet_config_key *k = &f->config_keys[f->n_config_keys++];
    snprintf(k->key, sizeof k->key, "%s", key);
    render(v, k->value, sizeof k->value);
    k->is_off = json_is_null(v) || json_is_false(v) ||
                (json_is_integer(v) && json_integer_value(v) == 0) ||
                (json_is_real(v) && json_real_value(v) == 0.0) ||
                (json_is_string(v) && !json_string_length(v)) ||
                (json_is_object(v) && !json_object_size(v)) ||
                (json_is_array(v) && !json_array_size(v));
}

static void keep_unconsumed(reader *r) {
    const char *key;
    json_t *v;
    json_object_foreach(r->obj, key, v) {
        if (!consumed(r, key)) keep_key(r->f, key, v);
    }
}

#define TRY(x)                                                                         \
    do {                                                                               \
        facet_status st_ = (x);                                                        \
        if (st_ != FACET_OK) return st_;                                               \
    } while (0)

/* ---------------------------------------------------------------------------------
 * Activation
 * ------------------------------------------------------------------------------ */
static facet_act act_from_name(const char *s) {
    if (!strcmp(s, "silu") || !strcmp(s, "swish")) return FACET_ACT_SILU;
    if (!strcmp(s, "gelu_pytorch_tanh") || !strcmp(s, "gelu_new") || !strcmp(s, "gelu_fast"))
        return FACET_ACT_GELU_TANH;
    if (!strcmp(s, "gelu")) return FACET_ACT_GELU;
    if (!strcmp(s, "relu2")) return FACET_ACT_RELU2;
    return FACET_ACT_UNKNOWN;
}

static facet_status read_act(reader *r, const facet_config_class *cls) {
    facet_facts *f = r->f;
    snprintf(f->act_name, sizeof f->act_name, "%s", cls->act_default);
    if (cls->act_key) TRY(get_str(r, cls->act_key, f->act_name, sizeof f->act_name, NULL));
    if (cls->act_ignored_key) {
        char ignored[48] = "";
        int present;
        TRY(get_str(r, cls->act_ignored_key, ignored, sizeof ignored, &present));
        if (present && strcmp(ignored, f->act_name))
            facet_facts_note(f, "%s=%s is ignored by the %s modeling code; activation is "
                                "%s=%s", cls->act_ignored_key, ignored, cls->model_type,
                             cls->act_key, f->act_name);
    }
    f->act = act_from_name(f->act_name);
    return FACET_OK;
}

/* ---------------------------------------------------------------------------------
 * RoPE: rope_theta + rope_scaling (v4) or rope_parameters (transformers v5)
 * ------------------------------------------------------------------------------ */
static facet_rope_type rope_from_name(const char *s) {
    if (!strcmp(s, "default")) return FACET_ROPE_DEFAULT;
    if (!strcmp(s, "linear")) return FACET_ROPE_LINEAR;
    if (!strcmp(s, "dynamic")) return FACET_ROPE_DYNAMIC;
    if (!strcmp(s, "llama3")) return FACET_ROPE_LLAMA3;
    if (!strcmp(s, "yarn")) return FACET_ROPE_YARN;
    if (!strcmp(s, "longrope") || !strcmp(s, "su")) return FACET_ROPE_LONGROPE;
    return FACET_ROPE_UNKNOWN;
}

static facet_status read_factor_array(reader *r, const char *key, json_t *v, double *dst,
                                      int *n) {
    if (!v || json_is_null(v)) return FACET_OK;
    if (!json_is_array(v) || json_array_size(v) > FACET_MAX_ROPE_FACTORS)
        return bad(r, key, v, "an array of at most 512 positive numbers");
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) {
        if (!json_is_number(x) || !(json_number_value(x) > 0) ||
            !isfinite(json_number_value(x)))
            return bad(r, key, v, "an array of at most 512 positive numbers");
        dst[i] = json_number_value(x);
    }
    *n = (int)json_array_size(v);
    return FACET_OK;
}

/* Two values of one fact are the same: numbers by value (32 == 32.0), rope type names by
 * the type they name ("su" == "longrope"), anything else by JSON equality. */
static int same_value(const json_t *a, const json_t *b, int is_type) {
    if (json_is_number(a) && json_is_number(b)) return json_number_value(a) == json_number_value(b);
    if (is_type && json_is_string(a) && json_is_string(b)) {
        facet_rope_type ta = rope_from_name(json_string_value(a));
        facet_rope_type tb = rope_from_name(json_string_value(b));
        if (ta != FACET_ROPE_UNKNOWN && tb != FACET_ROPE_UNKNOWN) return ta == tb;
    }
    return json_equal((json_t *)a, (json_t *)b);
}

/* Two spellings of one fact that disagree (k1 = v1, k2 = v2; a NULL value is "absent"):
 * which one transformers reads depends on its version, so the checkpoint is ambiguous.
 * Strict: FACET_E_FORMAT naming both keys and values. Otherwise a note. */
static facet_status conflict(reader *r, const char *k1, const json_t *v1, const char *k2,
                             const json_t *v2, const char *why) {
    char a[64] = "absent", b[64] = "absent";
    if (v1) render(v1, a, sizeof a);
    if (v2) render(v2, b, sizeof b);
    if (!r->strict) {
        facet_facts_note(r->f, "%s%s=%s and %s%s=%s disagree (%s)", r->prefix, k1, a, r->prefix,
                         k2, b, why);
        return FACET_OK;
    }
    return facet_err(r->err, FACET_E_FORMAT,
                     "%s: %s%s=%s and %s%s=%s disagree: two spellings of one fact, and %s; "
                     "remove one or make them equal",
                     r->what, r->prefix, k1, a, r->prefix, k2, b, why);
}

/* A top-level key (rope_theta, partial_rotary_factor, ...) repeated inside the rope object
 * o (named `name`) must agree with it: transformers v4 reads the top-level key, v5's
 * rope standardization keeps the one inside the object. */
static facet_status check_repeated(reader *r, json_t *o, const char *name, const char *key,
                                   const char *top_key) {
    json_t *top = json_object_get(r->obj, top_key);
    json_t *in = json_object_get(o, key);
    if (!top || json_is_null(top) || !in || json_is_null(in) || same_value(top, in, 0))
        return FACET_OK;
    char inner[96];
    snprintf(inner, sizeof inner, "%s.%s", name, key);
    return conflict(r, top_key, top, inner, in,
                    "transformers v4 reads the first, v5 the second");
}

/* rope_scaling and rope_parameters both given: transformers v4 reads only rope_scaling;
 * v5 takes rope_scaling in preference (merged into full_attention for per-layer
 * parameters). They must say the same: the same rope type and the same value for every
 * key either holds (rope_theta and partial_rotary_factor, which v5 moves into
 * rope_parameters, are compared only when both hold them). */
static facet_status check_scaling_vs_params(reader *r, json_t *scaling, json_t *params,
                                            const char *pname) {
    static const char *const type_keys[] = {"rope_type", "type"};
    json_t *ts = NULL, *tp = NULL;
    for (int i = 0; i < 2; i++) {
        if (!ts || json_is_null(ts)) ts = json_object_get(scaling, type_keys[i]);
        if (!tp || json_is_null(tp)) tp = json_object_get(params, type_keys[i]);
    }
    json_t *dflt = json_string("default");
    int same_type = same_value(ts && !json_is_null(ts) ? ts : dflt,
                               tp && !json_is_null(tp) ? tp : dflt, 1);
    json_decref(dflt);
    char k1[96], k2[96];
    if (!same_type) {
        snprintf(k2, sizeof k2, "%s.rope_type", pname);
        return conflict(r, "rope_scaling.rope_type", ts, k2, tp,
                        "transformers v4 reads rope_scaling, v5 prefers it only when present");
    }
    for (int pass = 0; pass < 2; pass++) {
        json_t *from = pass ? params : scaling, *other = pass ? scaling : params;
        const char *k;
        json_t *v;
        json_object_foreach(from, k, v) {
            if (!strcmp(k, "rope_type") || !strcmp(k, "type")) continue;
            json_t *w = json_object_get(other, k);
            int optional = !strcmp(k, "rope_theta") || !strcmp(k, "partial_rotary_factor");
            if (json_is_null(v) || (w && !json_is_null(w) && same_value(v, w, 0)) ||
                ((!w || json_is_null(w)) && optional))
                continue;
            snprintf(k1, sizeof k1, "rope_scaling.%s", k);
            snprintf(k2, sizeof k2, "%s.%s", pname, k);
            return pass ? conflict(r, k1, w, k2, v,
                                   "transformers v4 reads rope_scaling, v5 prefers it")
                        : conflict(r, k1, v, k2, w,
                                   "transformers v4 reads rope_scaling, v5 prefers it");
        }
    }
    return FACET_OK;
}

/* Read one rope parameter object (rope_scaling, rope_parameters or one of its per-layer
 * entries). `name` is its key for messages and for kept unknown keys. */
static facet_status read_rope_object(reader *r, json_t *o, const char *name, int set_theta) {
    facet_facts *f = r->f;
    char key[96];
    const char *k;
    json_t *v;
    json_t *type = json_object_get(o, "rope_type");
    json_t *legacy = json_object_get(o, "type");
    if (type && !json_is_null(type) && legacy && !json_is_null(legacy) &&
        !same_value(type, legacy, 1)) {
        char k1[96], k2[96];
        snprintf(k1, sizeof k1, "%s.rope_type", name);
        snprintf(k2, sizeof k2, "%s.type", name);
        TRY(conflict(r, k1, type, k2, legacy,
                     "transformers v4 lets the legacy type overwrite rope_type, v5 keeps "
                     "rope_type"));
    }
    if (!type || json_is_null(type)) type = legacy;
    if (type && !json_is_null(type)) {
        snprintf(key, sizeof key, "%s.rope_type", name);
        if (!json_is_string(type)) return bad(r, key, type, "a string");
        snprintf(f->rope_type_name, sizeof f->rope_type_name, "%s", json_string_value(type));
        f->rope_type = rope_from_name(f->rope_type_name);
    }
    json_object_foreach(o, k, v) {
        snprintf(key, sizeof key, "%s.%s", name, k);
        if (!strcmp(k, "rope_type") || !strcmp(k, "type")) continue;
        if (!strcmp(k, "rope_theta")) {
            double theta = f->rope_theta;
            TRY(get_num_from(r, v, key, 1, &theta));
            if (set_theta) f->rope_theta = theta;
            else f->rope_local_base_freq = theta;
        } else if (!strcmp(k, "factor")) {
            TRY(get_num_from(r, v, key, 1, &f->rope_factor));
        } else if (!strcmp(k, "low_freq_factor")) {
            TRY(get_num_from(r, v, key, 1, &f->rope_low_freq_factor));
        } else if (!strcmp(k, "high_freq_factor")) {
            TRY(get_num_from(r, v, key, 1, &f->rope_high_freq_factor));
        } else if (!strcmp(k, "original_max_position_embeddings")) {
            if (!json_is_null(v)) {
                if (!json_is_integer(v) || json_integer_value(v) < 1 ||
                    json_integer_value(v) > MAX_POSITIONS)
                    return bad(r, key, v, "a positive integer");
                f->rope_original_max_position_embeddings = json_integer_value(v);
            }
        } else if (!strcmp(k, "beta_fast")) {
            TRY(get_num_from(r, v, key, 1, &f->rope_beta_fast));
        } else if (!strcmp(k, "beta_slow")) {
            TRY(get_num_from(r, v, key, 1, &f->rope_beta_slow));
        } else if (!strcmp(k, "truncate")) {
            if (!json_is_boolean(v)) return bad(r, key, v, "true or false");
            f->rope_yarn_no_truncate = json_is_false(v);
        } else if (!strcmp(k, "attention_factor")) {
            TRY(get_num_from(r, v, key, 1, &f->rope_attention_factor));
        } else if (!strcmp(k, "short_factor")) {
            TRY(read_factor_array(r, key, v, f->rope_short_factor, &f->n_rope_short));
        } else if (!strcmp(k, "long_factor")) {
            TRY(read_factor_array(r, key, v, f->rope_long_factor, &f->n_rope_long));
        } else if (!strcmp(k, "partial_rotary_factor")) {
            TRY(get_num_from(r, v, key, 1, &f->partial_rotary_factor));
        } else {
            keep_key(f, key, v); /* mscale, mrope_section, ...: the table judges them */
        }
    }
    return FACET_OK;
}

/* The keys each rope type needs (transformers' rope config validation). */
static facet_status check_rope_required(reader *r, json_t *o, const char *name) {
    static const char *const llama3[] = {"factor", "low_freq_factor", "high_freq_factor",
                                         "original_max_position_embeddings", NULL};
    static const char *const factor_only[] = {"factor", NULL};
    static const char *const longrope[] = {"short_factor", "long_factor", NULL};
    const char *const *need = NULL;
    switch (r->f->rope_type) {
    case FACET_ROPE_LLAMA3: need = llama3; break;
    case FACET_ROPE_LINEAR:
    case FACET_ROPE_DYNAMIC:
    case FACET_ROPE_YARN: need = factor_only; break;
    case FACET_ROPE_LONGROPE: need = longrope; break;
    default: return FACET_OK;
    }
    for (int i = 0; need[i]; i++) {
        json_t *v = json_object_get(o, need[i]);
        if (!v || json_is_null(v)) {
            char key[96];
            snprintf(key, sizeof key, "%s.%s", name, need[i]);
            if (!r->strict) {
                facet_facts_note(r->f, "%s%s is missing", r->prefix, key);
                continue;
            }
            return facet_err(r->err, FACET_E_NOT_FOUND,
                             "%s: %s%s is missing (required by rope_type %s)", r->what,
                             r->prefix, key, r->f->rope_type_name);
        }
    }
    return FACET_OK;
}

static facet_status read_rope(reader *r, const facet_config_class *cls) {
    facet_facts *f = r->f;
    f->rope_theta = cls->rope_theta;
    f->rope_local_base_freq = cls->rope_local_base_freq;
    f->rope_type = FACET_ROPE_DEFAULT;
    snprintf(f->rope_type_name, sizeof f->rope_type_name, "default");
    f->rope_factor = 1.0;
    f->rope_low_freq_factor = 1.0;
    f->rope_high_freq_factor = 4.0;
    f->rope_beta_fast = 32.0;
    f->rope_beta_slow = 1.0;
    f->rope_attention_factor = 0.0; /* 0: derived from factor as transformers does */
    f->partial_rotary_factor = 1.0;

    TRY(get_num(r, "rope_theta", 1, &f->rope_theta));
    if (cls->rope_theta_key) TRY(get_num(r, cls->rope_theta_key, 1, &f->rope_theta));
    if (cls->rope_ratio_key) { /* ChatGLM: RotaryEmbedding's base = 10000 * rope_ratio */
        double ratio = 1.0;
        TRY(get_num(r, cls->rope_ratio_key, 1, &ratio));
        f->rope_theta *= ratio;
    }
    f->rope_interleaved = cls->rope_interleaved;
    if (cls->rotary_dim_key) { /* GPT-J: a count of dims (null: the whole head) */
        int64_t rd = 0;
        int given = 0;
        TRY(get_int(r, cls->rotary_dim_key, 0, 2, MAX_HEAD_DIM, &rd, &given));
        if (given && (rd > f->head_dim || rd % 2))
            return bad(r, cls->rotary_dim_key, json_object_get(r->obj, cls->rotary_dim_key),
                       "an even count of at most head_dim");
        if (given && f->head_dim > 0) f->partial_rotary_factor = (double)rd / (double)f->head_dim;
    }
    if (cls->rotary_pct_key) {
        f->partial_rotary_factor = cls->rotary_pct_default;
        TRY(get_num(r, cls->rotary_pct_key, 1, &f->partial_rotary_factor));
    }
    if (cls->reads_rope_local_base_freq)
        TRY(get_num(r, "rope_local_base_freq", 1, &f->rope_local_base_freq));
    TRY(get_num(r, "partial_rotary_factor", 1, &f->partial_rotary_factor));
    if (cls->rotary_pct_fixed > 0) f->partial_rotary_factor = cls->rotary_pct_fixed;
    if (f->partial_rotary_factor > 1.0) {
        json_t *v = json_object_get(r->obj, "partial_rotary_factor");
        TRY(bad(r, "partial_rotary_factor", v, "a number in (0, 1]"));
        f->partial_rotary_factor = 1.0;
    }
    int64_t orig = 0;
    TRY(get_int(r, "original_max_position_embeddings", 0, 1, MAX_POSITIONS, &orig, NULL));
    f->rope_original_max_position_embeddings = orig;

    json_t *scaling = take(r, "rope_scaling");
    json_t *params = take(r, "rope_parameters");
    if (scaling && !json_is_null(scaling) && !json_is_object(scaling))
        TRY(bad(r, "rope_scaling", scaling, "an object or null"));
    if (params && !json_is_null(params) && !json_is_object(params))
        TRY(bad(r, "rope_parameters", params, "an object or null"));
    json_t *o = NULL;
    const char *name = NULL;
    if (json_is_object(params)) {
        json_t *full = json_object_get(params, "full_attention");
        if (json_is_object(full)) {
            /* v5 per-layer-type parameters (Gemma 3): global rope from full_attention,
             * the local base from sliding_attention */
            json_t *local = json_object_get(params, "sliding_attention");
            const char *k;
            json_t *v;
            json_object_foreach(params, k, v) {
                if (strcmp(k, "full_attention") && strcmp(k, "sliding_attention")) {
                    char key[96];
                    snprintf(key, sizeof key, "rope_parameters.%s", k);
                    keep_key(f, key, v);
                }
            }
            if (json_is_object(local)) {
                if (cls->reads_rope_local_base_freq)
                    TRY(check_repeated(r, local, "rope_parameters.sliding_attention",
                                       "rope_theta", "rope_local_base_freq"));
                json_t *lt = json_object_get(local, "rope_theta");
                TRY(get_num_from(r, lt, "rope_parameters.sliding_attention.rope_theta", 1,
                                 &f->rope_local_base_freq));
                json_t *ltype = json_object_get(local, "rope_type");
                if (ltype && !(json_is_string(ltype) &&
                               !strcmp(json_string_value(ltype), "default")))
                    keep_key(f, "rope_parameters.sliding_attention.rope_type", ltype);
            }
            o = full;
            name = "rope_parameters.full_attention";
        } else {
            o = params;
            name = "rope_parameters";
        }
        if (json_is_object(scaling)) TRY(check_scaling_vs_params(r, scaling, o, name));
    } else if (json_is_object(scaling)) {
        o = scaling;
        name = "rope_scaling";
    }
    if (o) {
        TRY(check_repeated(r, o, name, "rope_theta", "rope_theta"));
        TRY(check_repeated(r, o, name, "partial_rotary_factor", "partial_rotary_factor"));
        TRY(check_repeated(r, o, name, "original_max_position_embeddings",
                           "original_max_position_embeddings"));
        if (json_is_object(scaling) && o != scaling) {
            TRY(check_repeated(r, scaling, "rope_scaling", "rope_theta", "rope_theta"));
            TRY(check_repeated(r, scaling, "rope_scaling", "partial_rotary_factor",
                               "partial_rotary_factor"));
        }
        TRY(read_rope_object(r, o, name, 1));
        TRY(check_rope_required(r, o, name));
    }
    if (f->rope_type == FACET_ROPE_LONGROPE && f->rope_original_max_position_embeddings == 0)
        f->rope_original_max_position_embeddings = 4096; /* Phi3Config default */
    return FACET_OK;
}

/* ---------------------------------------------------------------------------------
 * Sliding window and the per-layer pattern
 * ------------------------------------------------------------------------------ */
/* SmolLM3Config: no_rope_layers[i] == 1 uses RoPE, 0 does not; absent, it is derived
 * as int((i + 1) % no_rope_layer_interval != 0). */
static facet_status read_no_rope(reader *r, const facet_config_class *cls) {
    facet_facts *f = r->f;
    int64_t L = f->num_hidden_layers;
    if (cls->rope_on_sliding_only) return FACET_OK; /* set by read_window */
    memset(f->layer_no_rope, 0, sizeof f->layer_no_rope);
    f->n_no_rope_layers = 0;
    if (f->no_rope) { /* learned absolute positions (GPT-2): no layer rotates */
        for (int64_t i = 0; i < L; i++) f->layer_no_rope[i] = 1;
        f->n_no_rope_layers = (int)L;
        return FACET_OK;
    }
    if (!cls->reads_no_rope) return FACET_OK;
    int64_t interval = cls->no_rope_layer_interval;
    TRY(get_int(r, "no_rope_layer_interval", 0, 1, FACET_MAX_LAYERS, &interval, NULL));
    json_t *list = take(r, "no_rope_layers");
    if (list && !json_is_null(list)) {
        if (!json_is_array(list) || (int64_t)json_array_size(list) != L) {
            char expected[96];
            snprintf(expected, sizeof expected,
                     "an array of num_hidden_layers (%lld) 0/1 flags", (long long)L);
            return bad(r, "no_rope_layers", list, expected);
        }
        size_t i;
        json_t *v;
        json_array_foreach(list, i, v) {
            if (!json_is_integer(v) || (json_integer_value(v) != 0 && json_integer_value(v) != 1))
                return bad(r, "no_rope_layers", list, "an array of 0/1 flags");
            f->layer_no_rope[i] = json_integer_value(v) == 0;
        }
    } else {
        for (int64_t i = 0; i < L && interval > 0; i++)
            f->layer_no_rope[i] = (i + 1) % interval == 0;
    }
    for (int64_t i = 0; i < L; i++) f->n_no_rope_layers += f->layer_no_rope[i];
    return FACET_OK;
}

/* ---------------------------------------------------------------------------------
 * Mixture of experts: the classes whose modeling code routes (config_class.c moe)
 * ------------------------------------------------------------------------------ */
#define MAX_EXPERTS 4096
#define MAX_EXPERTS_PER_TOK 64

/* GptOssConfig's quantization_config: absent or null (unquantized experts), or
 * {"quant_method": "mxfp4", ...}: the experts' gate_up_proj / down_proj are stored as
 * MXFP4 blocks and scales (transformers' Mxfp4Config; its modules_to_not_convert lists the
 * unquantized modules, which the tensors themselves say: not read). Anything else is
 * refused by name. */
static facet_status read_mxfp4(reader *r) {
    json_t *q = take(r, "quantization_config");
    if (!q || json_is_null(q)) return FACET_OK;
    json_t *m = json_is_object(q) ? json_object_get(q, "quant_method") : NULL;
    if (!m || !json_is_string(m) || strcmp(json_string_value(m), "mxfp4"))
        return bad(r, "quantization_config", m ? m : q,
                   "absent, or an object whose quant_method is \"mxfp4\" (gpt-oss's MXFP4 "
                   "experts)");
    r->f->experts_mxfp4 = 1;
    return FACET_OK;
}

static facet_status read_moe(reader *r, const facet_config_class *cls) {
    facet_facts *f = r->f;
    int64_t L = f->num_hidden_layers;
    /* a class without these keys keeps what its own reader set (Nemotron-H's "E" layers) */
    if (!cls->moe) return FACET_OK;
    memset(f->layer_sparse, 0, sizeof f->layer_sparse);
    f->n_sparse_layers = 0;
    f->moe_router = FACET_ROUTER_NONE;
    f->num_experts = cls->num_experts;
    f->num_experts_per_tok = cls->num_experts_per_tok;
    /* Qwen-MoE: num_experts 0 makes every layer dense (its modeling code's test) */
    /* Qwen-MoE and Granite 4.0-H: num_experts 0 makes every layer dense */
    int may_be_dense = cls->reads_sparse_step || cls->hybrid == 1;
    TRY(get_int(r, cls->experts_key, 0, may_be_dense ? 0 : 1, MAX_EXPERTS, &f->num_experts,
                NULL));
    TRY(get_int(r, "num_experts_per_tok", 0, cls->hybrid == 1 && !f->num_experts ? 0 : 1,
                MAX_EXPERTS_PER_TOK, &f->num_experts_per_tok, NULL));
    if (cls->moe_biases) { /* GptOssConfig also writes experts_per_token: one fact */
        json_t *a = json_object_get(r->obj, "num_experts_per_tok"), *b = take(r, "experts_per_token");
        if (a && b && !json_is_null(b) && !same_value(a, b, 0))
            TRY(conflict(r, "num_experts_per_tok", a, "experts_per_token", b,
                         "the modeling code reads the first"));
    }
    f->moe_biases = cls->moe_biases;
    f->swiglu_limit = cls->swiglu_limit;
    if (cls->swiglu_limit > 0) TRY(get_num(r, "swiglu_limit", 1, &f->swiglu_limit));
    f->experts_mxfp4 = 0;
    if (cls->moe_biases) TRY(read_mxfp4(r));
    if (f->num_experts && f->num_experts_per_tok > f->num_experts &&
        !(cls->hybrid == 5 && f->num_experts == 1)) { /* Jamba's 1: no MoE layer */
        char expected[128];
        json_t *given = json_object_get(r->obj, "num_experts_per_tok");
        snprintf(expected, sizeof expected, "at most %s=%lld%s", cls->experts_key,
                 (long long)f->num_experts, given ? "" : " (the key is absent: the class default)");
        json_t *dflt = given ? NULL : json_integer(f->num_experts_per_tok);
        facet_status st = bad(r, "num_experts_per_tok", given ? given : dflt, expected);
        json_decref(dflt);
        return st;
    }
    f->moe_intermediate_size = cls->moe_size_key ? cls->moe_intermediate_size : f->intermediate_size;
    if (cls->moe_size_key)
        TRY(get_int(r, cls->moe_size_key, 0, 1, MAX_INTERMEDIATE, &f->moe_intermediate_size, NULL));
    f->moe_router = (facet_moe_router)cls->router;
    f->norm_topk_prob = cls->norm_topk_prob >= 0 ? cls->norm_topk_prob : cls->norm_topk_default;
    if (cls->norm_topk_prob < 0) TRY(get_bool(r, "norm_topk_prob", &f->norm_topk_prob));
    f->shared_expert_intermediate_size = cls->shared_key ? cls->shared_default : 0;
    if (cls->shared_key)
        TRY(get_int(r, cls->shared_key, 0, 0, MAX_INTERMEDIATE,
                    &f->shared_expert_intermediate_size, NULL));
    f->shared_expert_gate = cls->shared_gate && f->shared_expert_intermediate_size > 0;
    if (cls->hybrid == 1 && !f->num_experts) { /* Granite 4.0-H dense (h-1b, h-350m): the shared
                                           * MLP alone is each layer's dense FFN */
        f->intermediate_size = f->shared_expert_intermediate_size;
        f->shared_expert_intermediate_size = 0;
        if (f->intermediate_size < 1)
            return bad(r, cls->shared_key, json_object_get(r->obj, cls->shared_key),
                       "a positive integer (with num_local_experts 0 the shared MLP is the FFN)");
    }

    /* which layers route: Qwen-MoE's rule, (i + 1) % decoder_sparse_step == 0 and i not
     * in mlp_only_layers; every layer elsewhere */
    int64_t step = 1;
    uint8_t dense[FACET_MAX_LAYERS] = {0};
    if (cls->reads_sparse_step) {
        TRY(get_int(r, "decoder_sparse_step", 0, 1, FACET_MAX_LAYERS, &step, NULL));
        json_t *list = take(r, "mlp_only_layers");
        if (list && !json_is_null(list)) {
            char expected[96];
            snprintf(expected, sizeof expected, "an array of layer indices in [0, %lld)",
                     (long long)L);
            if (!json_is_array(list)) return bad(r, "mlp_only_layers", list, expected);
            size_t i;
            json_t *v;
            json_array_foreach(list, i, v) {
                if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= L)
                    return bad(r, "mlp_only_layers", list, expected);
                dense[json_integer_value(v)] = 1;
            }
        }
    }
    /* JambaConfig: experts on i % expert_layer_period == expert_layer_offset; num_experts
     * 1 makes each of those a plain MLP (layers_num_experts 1) */
    int64_t e_period = 1, e_offset = 0;
    if (cls->hybrid == 5) {
        e_period = 2, e_offset = 1;
        TRY(get_int(r, "expert_layer_period", 0, 1, FACET_MAX_LAYERS, &e_period, NULL));
        TRY(get_int(r, "expert_layer_offset", 0, 0, FACET_MAX_LAYERS, &e_offset, NULL));
        if (e_offset >= e_period)
            return bad(r, "expert_layer_offset", json_object_get(r->obj, "expert_layer_offset"),
                       "less than expert_layer_period");
    }
    for (int64_t i = 0; i < L && f->num_experts > (cls->hybrid == 5); i++) {
        f->layer_sparse[i] = !dense[i] && (i + 1) % step == 0 && i % e_period == e_offset;
        f->n_sparse_layers += f->layer_sparse[i];
    }
    if (!f->n_sparse_layers) f->moe_router = FACET_ROUTER_NONE;
    return FACET_OK;
}

/* ---------------------------------------------------------------------------------
 * Multi-head latent attention and DeepSeek's routing keys (DeepseekV2Config, issue 25)
 * ------------------------------------------------------------------------------ */
/* Drop a key read_rope_object kept for the table (the class reads it as a fact). */
static void unkeep_key(facet_facts *f, const char *key) {
    for (int i = 0; i < f->n_config_keys; i++)
        if (!strcmp(f->config_keys[i].key, key)) {
            memmove(&f->config_keys[i], &f->config_keys[i + 1],
                    (size_t)(f->n_config_keys - i - 1) * sizeof f->config_keys[0]);
            f->n_config_keys--;
            return;
        }
}

/* DeepSeek's yarn_get_mscale: 0.1 * m * ln(scale) + 1 above scale 1, else 1. */
static double yarn_mscale(double scale, double m) {
    return scale <= 1.0 ? 1.0 : 0.1 * m * log(scale) + 1.0;
}

static facet_status read_mla(reader *r, const facet_config_class *cls) {
    facet_facts *f = r->f;
    if (!cls->mla) return FACET_OK;
    /* DeepseekV2Config / DeepseekV3Config defaults */
    f->q_lora_rank = 1536;
    f->kv_lora_rank = 512;
    f->qk_nope_head_dim = 128;
    f->qk_rope_head_dim = 64;
    f->v_head_dim = 128;
    f->routed_scaling_factor = cls->routed_scaling_factor;
    f->first_k_dense_replace = cls->first_k_dense_replace;
    f->moe_layer_freq = 1;
    snprintf(f->topk_method, sizeof f->topk_method, "%s", cls->topk_method);
    snprintf(f->scoring_func, sizeof f->scoring_func, "%s", cls->scoring_func);
    json_t *q = json_object_get(r->obj, "q_lora_rank");
    if (q && json_is_null(q)) { /* null: a plain q_proj */
        take(r, "q_lora_rank");
        f->q_lora_rank = 0;
    } else {
        TRY(get_int(r, "q_lora_rank", 0, 1, MAX_INTERMEDIATE, &f->q_lora_rank, NULL));
    }
    TRY(get_int(r, "kv_lora_rank", 0, 1, MAX_INTERMEDIATE, &f->kv_lora_rank, NULL));
    TRY(get_int(r, "qk_nope_head_dim", 0, 0, 4096, &f->qk_nope_head_dim, NULL));
    TRY(get_int(r, "qk_rope_head_dim", 0, 0, 4096, &f->qk_rope_head_dim, NULL));
    TRY(get_int(r, "v_head_dim", 0, 1, 4096, &f->v_head_dim, NULL));
    if (f->qk_rope_head_dim % 2)
        TRY(bad(r, "qk_rope_head_dim", json_object_get(r->obj, "qk_rope_head_dim"),
                "an even integer (rope turns pairs)"));
    if (f->qk_nope_head_dim + f->qk_rope_head_dim < 1)
        TRY(bad(r, "qk_nope_head_dim", json_object_get(r->obj, "qk_nope_head_dim"),
                "qk_nope_head_dim + qk_rope_head_dim >= 1"));

    /* routing (FACET_ROUTER_GROUPED): the variants neither class runs are refused by
     * name (facet_judge) */
    TRY(get_num(r, "routed_scaling_factor", 1, &f->routed_scaling_factor));
    TRY(get_int(r, "first_k_dense_replace", 0, 0, FACET_MAX_LAYERS, &f->first_k_dense_replace, NULL));
    TRY(get_int(r, "moe_layer_freq", 0, 1, FACET_MAX_LAYERS, &f->moe_layer_freq, NULL));
    TRY(get_str(r, "topk_method", f->topk_method, sizeof f->topk_method, NULL));
    TRY(get_str(r, "scoring_func", f->scoring_func, sizeof f->scoring_func, NULL));
    f->n_shared_experts = cls->n_shared_experts;
    TRY(get_int(r, "n_shared_experts", 0, 0, MAX_EXPERTS, &f->n_shared_experts, NULL));
    f->shared_expert_intermediate_size = f->n_shared_experts * f->moe_intermediate_size;
    f->shared_expert_gate = 0;
    /* n_group / topk_group (DeepseekV3Config: 8 / 4; DeepseekV2Config: None, read only
     * by group_limited_greedy): greedy routing is one group of every expert */
    int v3 = !strcmp(cls->topk_method, "noaux_tc");
    f->n_group = v3 ? 8 : 1;
    f->topk_group = v3 ? 4 : 1;
    for (int i = 0; i < 2; i++) {
        const char *key = i ? "topk_group" : "n_group";
        int64_t *dst = i ? &f->topk_group : &f->n_group;
        json_t *v = json_object_get(r->obj, key);
        if (v && json_is_null(v)) take(r, key);
        else TRY(get_int(r, key, 0, 1, MAX_EXPERTS, dst, NULL));
    }
    if (!strcmp(f->topk_method, "greedy")) f->n_group = f->topk_group = 1;
    f->moe_sigmoid = !strcmp(f->scoring_func, "sigmoid");
    f->moe_score_bias = !strcmp(f->topk_method, "noaux_tc");
    /* multi-token-prediction layers (DeepSeek-V3's layer 61): weights past the decoder,
     * never run by next-token decoding */
    json_t *mtp = take(r, "num_nextn_predict_layers");
    if (json_is_integer(mtp) && json_integer_value(mtp) > 0)
        facet_facts_note(f, "num_nextn_predict_layers=%lld: multi-token-prediction layers are "
                         "read past, not run", (long long)json_integer_value(mtp));
    /* DeepSeek-V3's FP8 release: block-scaled e4m3 weights, widened at load (the
     * activations are not quantized: what transformers' dequantizing load runs) */
    json_t *qc = json_object_get(r->obj, "quantization_config");
    if (json_is_object(qc)) {
        json_t *m = json_object_get(qc, "quant_method"), *fmt = json_object_get(qc, "fmt");
        json_t *act = json_object_get(qc, "activation_scheme");
        json_t *bs = json_object_get(qc, "weight_block_size");
        int fp8 = json_is_string(m) && !strcmp(json_string_value(m), "fp8") &&
                  (!fmt || (json_is_string(fmt) && !strcmp(json_string_value(fmt), "e4m3"))) &&
                  (!act || (json_is_string(act) && !strcmp(json_string_value(act), "dynamic"))) &&
                  json_object_size(qc) <= 4;
        int ok = fp8 && json_is_array(bs) && json_array_size(bs) == 2;
        for (size_t i = 0; ok && i < 2; i++) {
            json_t *v = json_array_get(bs, i);
            ok = json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) <= 65536;
        }
        /* the release's method with a malformed block size: name that key and value (the
         * table's refusal of the whole quantization_config cut the value short of it) */
        if (fp8 && bs && !ok)
            TRY(bad(r, "quantization_config.weight_block_size", bs,
                    "[rows, columns], two integers in [1, 65536]"));
        if (ok) { /* anything else stays a key the table refuses by name */
            f->fp8_block_rows = json_integer_value(json_array_get(bs, 0));
            f->fp8_block_cols = json_integer_value(json_array_get(bs, 1));
            take(r, "quantization_config");
        }
    }
    /* rope_interleave (DeepseekV3Config, default true): false would rotate halves */
    json_t *ri = take(r, "rope_interleave");
    if (ri && !json_is_true(ri)) keep_key(f, "rope_interleave", ri);
    /* DeepseekV2MoE on layer i: n_routed_experts set, i >= first_k_dense_replace and
     * i % moe_layer_freq == 0 (the verdict refuses moe_layer_freq != 1) */
    f->n_sparse_layers = 0;
    for (int64_t i = 0; i < f->num_hidden_layers && i < FACET_MAX_LAYERS; i++) {
        f->layer_sparse[i] = f->num_experts > 0 && i >= f->first_k_dense_replace &&
                             i % f->moe_layer_freq == 0;
        f->n_sparse_layers += f->layer_sparse[i];
    }
    f->moe_router = f->n_sparse_layers ? FACET_ROUTER_GROUPED : FACET_ROUTER_NONE;
    /* yarn's two mscales (rope_scaling.mscale / mscale_all_dim): cos and sin carry
     * mscale(f, mscale) / mscale(f, mscale_all_dim), the softmax scale
     * mscale(f, mscale_all_dim)^2 (DeepseekV2Attention.softmax_scale) */
    json_t *rs = json_object_get(r->obj, "rope_scaling");
    if (json_is_object(rs)) {
        TRY(get_num_from(r, json_object_get(rs, "mscale"), "rope_scaling.mscale", 0,
                         &f->rope_mscale));
        TRY(get_num_from(r, json_object_get(rs, "mscale_all_dim"), "rope_scaling.mscale_all_dim",
                         0, &f->rope_mscale_all_dim));
        unkeep_key(f, "rope_scaling.mscale");
        unkeep_key(f, "rope_scaling.mscale_all_dim");
        /* each yarn_get_mscale multiplies cos/sin or (squared) the softmax scale: one that
         * is not positive and finite (mscale_all_dim 1e308 squares to inf) gives NaN
         * logits, so name the key here rather than the first step's logits later */
        static const char *const mkeys[2] = {"mscale", "mscale_all_dim"};
        for (int i = 0; i < 2; i++) {
            double ms = yarn_mscale(f->rope_factor, i ? f->rope_mscale_all_dim : f->rope_mscale);
            if (!(isfinite(ms * ms) && ms > 0)) {
                char key[40];
                snprintf(key, sizeof key, "rope_scaling.%s", mkeys[i]);
                TRY(bad(r, key, json_object_get(rs, mkeys[i]),
                        "a value whose yarn_get_mscale, 0.1 x it x ln(factor) + 1, is positive "
                        "and its square finite"));
            }
        }
        if (f->rope_type == FACET_ROPE_YARN && f->rope_attention_factor == 0.0 &&
            (f->rope_mscale != 0.0 || f->rope_mscale_all_dim != 0.0))
            f->rope_attention_factor = yarn_mscale(f->rope_factor, f->rope_mscale) /
                                       yarn_mscale(f->rope_factor, f->rope_mscale_all_dim);
    }
    f->attn_scale = 1.0 / sqrt((double)(f->qk_nope_head_dim + f->qk_rope_head_dim));
    if (json_is_object(rs) && f->rope_mscale_all_dim != 0.0) {
        double m = yarn_mscale(f->rope_factor, f->rope_mscale_all_dim);
        f->attn_scale *= m * m;
    }
    return FACET_OK;
}

/* layer_types and the key older transformers derive the windowed layers from
 * (max_window_layers for Qwen2-style classes, sliding_window_pattern for Gemma 3 and
 * Cohere 2) both given: they must name the same layers (issue 17). typed: the
 * layer_types' sliding flags, or NULL when the config has none. */
static facet_status types_agree(reader *r, const facet_config_class *cls, json_t *types,
                                const uint8_t *typed, int64_t pattern,
                                int64_t max_window_layers) {
    const char *rule = NULL; /* a null older key names no layers: nothing to disagree */
    json_t *mwl = json_object_get(r->obj, "max_window_layers");
    json_t *swp = json_object_get(r->obj, "sliding_window_pattern");
    if (typed && cls->use_sliding_window_flag && mwl && !json_is_null(mwl))
        rule = "max_window_layers";
    else if (typed && cls->reads_sliding_window_pattern && swp && !json_is_null(swp))
        rule = "sliding_window_pattern";
    for (int64_t i = 0; rule && i < r->f->num_hidden_layers; i++) {
        int derived = rule[0] == 'm' ? i >= max_window_layers : ((i + 1) % pattern) != 0;
        if (derived == typed[i]) continue;
        char key[64];
        snprintf(key, sizeof key, "layer_types[%lld]", (long long)i);
        return conflict(r, key, json_array_get(types, (size_t)i), rule,
                        json_object_get(r->obj, rule),
                        "transformers before layer_types derived the windowed layers from the "
                        "second, later versions read the first");
    }
    return FACET_OK;
}

static facet_status read_window(reader *r, const facet_config_class *cls) {
    facet_facts *f = r->f;
    int64_t L = f->num_hidden_layers;
    int64_t window = 0;
    int named = 0;
    if (cls->reads_sliding_window) {
        json_t *v = json_object_get(r->obj, "sliding_window");
        if (!v) window = cls->sliding_window; /* class default applies */
        TRY(get_int(r, "sliding_window", 0, 1, MAX_POSITIONS, &window, &named));
        if (!v && window) named = 1;
    }

    int use = 1;
    int64_t max_window_layers = cls->max_window_layers;
    if (cls->use_sliding_window_flag) {
        use = 0;
        TRY(get_bool(r, "use_sliding_window", &use));
        TRY(get_int(r, "max_window_layers", 0, 0, FACET_MAX_LAYERS, &max_window_layers, NULL));
    }

    /* layer_types: "full_attention" | "sliding_attention"; anything else is kept for
     * the table (a chunked or linear-attention layer changes the math). */
    json_t *types = cls->hybrid ? NULL : take(r, "layer_types"); /* hybrids: mixers */
    int have_types = 0;
    uint8_t typed[FACET_MAX_LAYERS] = {0};
    if (types && !json_is_null(types)) {
        if (!json_is_array(types) || (int64_t)json_array_size(types) != L) {
            char expected[96];
            snprintf(expected, sizeof expected,
                     "an array of num_hidden_layers (%lld) layer type names", (long long)L);
            TRY(bad(r, "layer_types", types, expected));
        } else {
            have_types = 1;
            size_t i;
            json_t *t;
            json_array_foreach(types, i, t) {
                const char *s = json_is_string(t) ? json_string_value(t) : "";
                if (!strcmp(s, "sliding_attention")) typed[i] = 1;
                else if (strcmp(s, "full_attention")) {
                    char key[64];
                    snprintf(key, sizeof key, "layer_types[%zu]", i);
                    keep_key(f, key, t);
                }
            }
        }
    }
    int64_t pattern = cls->sliding_window_pattern;
    if (cls->reads_sliding_window_pattern)
        TRY(get_int(r, "sliding_window_pattern", 0, 1, FACET_MAX_LAYERS, &pattern, NULL));

    f->sliding_window = window;
    memset(f->layer_sliding, 0, sizeof f->layer_sliding);
    f->n_sliding_layers = 0;
    f->window_inert = 0;
    if (cls->rope_on_sliding_only) {
        /* the layer kinds decide the positions too, window or not: agreement first */
        TRY(types_agree(r, cls, types, have_types ? typed : NULL, pattern, max_window_layers));
        /* Cohere2Attention: sliding_window = config.sliding_window on the sliding layers
         * (layer_types, else (i + 1) % sliding_window_pattern != 0), None elsewhere, and
         * RoPE iff it is set: whether or not the window binds (a window past the context
         * still rotates), a null window rotates no layer */
        memset(f->layer_no_rope, 0, sizeof f->layer_no_rope);
        f->n_no_rope_layers = 0;
        for (int64_t i = 0; i < L; i++) {
            int s = have_types ? typed[i] : pattern > 0 ? ((i + 1) % pattern) != 0 : 1;
            f->layer_no_rope[i] = !(window && s);
            f->n_no_rope_layers += f->layer_no_rope[i];
        }
    }
    if (!window) return FACET_OK;
    if (cls->use_sliding_window_flag && !use) {
        /* Qwen2Config: sliding_window = sliding_window if use_sliding_window else None */
        f->window_inert = 1;
        facet_facts_note(f, "sliding_window=%lld is inert: use_sliding_window is false",
                         (long long)window);
        return FACET_OK;
    }
    if (window >= f->max_position_embeddings) {
        f->window_inert = 1;
        facet_facts_note(f, "sliding_window=%lld is inert: >= max_position_embeddings=%lld",
                         (long long)window, (long long)f->max_position_embeddings);
        return FACET_OK;
    }
    if (!cls->rope_on_sliding_only)
        TRY(types_agree(r, cls, types, have_types ? typed : NULL, pattern, max_window_layers));
    for (int64_t i = 0; i < L; i++) {
        int s;
        if (have_types) s = typed[i];
        else if (cls->use_sliding_window_flag) s = i >= max_window_layers;
        else if (pattern > 0) s = ((i + 1) % pattern) != 0;
        else s = 1;
        f->layer_sliding[i] = (uint8_t)s;
        f->n_sliding_layers += s;
    }
    if (!f->n_sliding_layers)
        facet_facts_note(f, "sliding_window=%lld names no windowed layer", (long long)window);
    return FACET_OK;
}

/* ---------------------------------------------------------------------------------
 * Token ids
 * ------------------------------------------------------------------------------ */
static facet_status add_eos(reader *r, const char *what, json_t *v) {
    facet_facts *f = r->f;
    if (!v || json_is_null(v)) return FACET_OK;
    json_t *one = json_is_array(v) ? NULL : v;
    size_t n = one ? 1 : json_array_size(v);
    for (size_t i = 0; i < n; i++) {
        json_t *x = one ? one : json_array_get(v, i);
        if (!json_is_integer(x) || json_integer_value(x) < 0 ||
            json_integer_value(x) > INT32_MAX) {
            if (!r->strict) continue;
            char val[64];
            render(v, val, sizeof val);
            return facet_err(r->err, FACET_E_FORMAT,
                             "%s: eos_token_id is %s (%s), expected a non-negative integer "
                             "or a list of them", what, val, facet_json_type_name(v));
        }
        int32_t id = (int32_t)json_integer_value(x);
        int dup = 0;
        for (int j = 0; j < f->n_eos; j++) dup |= f->eos_token_ids[j] == id;
        if (dup) continue;
        if (f->n_eos >= FACET_MAX_EOS) {
            facet_facts_note(f, "more than %d eos_token_id values; extra ones dropped",
                             FACET_MAX_EOS);
            return FACET_OK;
        }
        f->eos_token_ids[f->n_eos++] = id;
    }
    return FACET_OK;
}

static facet_status read_bos(reader *r, const char *what, json_t *v) {
    if (!v || json_is_null(v) || r->f->bos_token_id >= 0) return FACET_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX) {
        if (!r->strict) return FACET_OK;
        char val[64];
        render(v, val, sizeof val);
        return facet_err(r->err, FACET_E_FORMAT,
                         "%s: bos_token_id is %s (%s), expected a non-negative integer", what,
                         val, facet_json_type_name(v));
    }
    r->f->bos_token_id = (int32_t)json_integer_value(v);
    return FACET_OK;
}

/* ---------------------------------------------------------------------------------
 * The whole manifest
 * ------------------------------------------------------------------------------ */
static facet_status read_shape(reader *r, const facet_config_class *cls) {
    facet_facts *f = r->f;
#define KEY(k, dflt) (cls->k ? cls->k : dflt)
    if (cls->glm_attention) { /* ChatGLM-6B, the first generation: model_type chatglm too */
        json_t *v = take(r, "position_encoding_2d");
        if (v && !json_is_null(v) && !json_is_false(v))
            return bad(r, "position_encoding_2d", v,
                       "absent (ChatGLM-6B's 2-D positions and block are not supported; "
                       "ChatGLM2, ChatGLM3 and GLM-4 are)");
    }
    TRY(get_int(r, KEY(hidden_key, "hidden_size"), 1, 1, MAX_HIDDEN, &f->hidden_size, NULL));
    TRY(get_int(r, KEY(layers_key, "num_hidden_layers"), 1, 1, FACET_MAX_LAYERS,
                &f->num_hidden_layers, NULL));
    TRY(get_int(r, KEY(heads_key, "num_attention_heads"), 1, 1, MAX_HEADS,
                &f->num_attention_heads, NULL));
    TRY(get_int(r, KEY(vocab_key, "vocab_size"), 1, 1, MAX_VOCAB, &f->vocab_size, NULL));
    f->c_attn_linear = cls->c_attn_linear;
    if (cls->ffn_hidden_mult) { /* fixed by the modeling code (BLOOM, MPT) */
        f->intermediate_size = cls->ffn_hidden_mult * f->hidden_size;
    } else if (cls->inner_key) { /* GPT-2's n_inner: null means 4 x n_embd */
        f->intermediate_size = cls->inner_default ? cls->inner_default : 4 * f->hidden_size;
        json_t *v = json_object_get(r->obj, cls->inner_key);
        if (v && json_is_null(v) && cls->inner_default) /* ChatGLM: nn.Linear(h, None) */
            return bad(r, cls->inner_key, v, "a positive integer");
        if (v && json_is_null(v)) take(r, cls->inner_key);
        else TRY(get_int(r, cls->inner_key, 0, 1, MAX_INTERMEDIATE, &f->intermediate_size, NULL));
    } else { /* LFM2: block_ff_dim may say it instead (read_lfm2) */
        if (cls->hybrid == 7) f->intermediate_size = 5632; /* Qwen3NextConfig's default */
        TRY(get_int(r, "intermediate_size", cls->hybrid != 2 && cls->hybrid != 7, 1,
                    MAX_INTERMEDIATE,
                    &f->intermediate_size, NULL));
    }
    if (cls->inner_div) { /* QWen: w1 and w2 are intermediate_size // 2 wide */
        if (f->intermediate_size % cls->inner_div)
            return bad(r, "intermediate_size", json_object_get(r->obj, "intermediate_size"),
                       "an even number (the MLP is intermediate_size / 2 wide)");
        f->intermediate_size /= cls->inner_div;
    }
    f->max_position_embeddings = cls->max_position_embeddings;
    TRY(get_int(r, KEY(positions_key, "max_position_embeddings"),
                cls->max_position_embeddings == 0, 1, MAX_CONTEXT, &f->max_position_embeddings,
                NULL));
    f->pos_embed_learned = cls->pos_embed_learned;
    f->alibi = cls->alibi;
    f->alibi_bias_max = cls->alibi ? 8.0 : 0.0;
    f->no_rope = cls->pos_embed_learned || cls->alibi;
    f->embed_norm = cls->embed_norm;
    if (cls->post_ln_residual_key) {
        int post = 0;
        TRY(get_bool(r, cls->post_ln_residual_key, &post));
        if (post)
            return bad(r, cls->post_ln_residual_key,
                       json_object_get(r->obj, cls->post_ln_residual_key),
                       "false (the residual taken after the LayerNorm is not supported)");
    }

    f->num_key_value_heads = cls->kv_heads_default ? cls->kv_heads_default : f->num_attention_heads;
    TRY(get_int(r, "num_key_value_heads", 0, 1, MAX_HEADS, &f->num_key_value_heads, NULL));

    if (cls->heads_dup_key) { /* the same count spelled twice: they must agree */
        int64_t dup = f->num_attention_heads;
        TRY(get_int(r, cls->heads_dup_key, 0, 1, MAX_HEADS, &dup, NULL));
        if (dup != f->num_attention_heads)
            return bad(r, cls->heads_dup_key, json_object_get(r->obj, cls->heads_dup_key),
                       "the value of num_attention_heads");
    }
    for (const char *const *k = cls->unread_keys; k && *k; k++) take(r, *k);
    if (cls->unit_key) { /* a multiplier facet runs only at 1.0 */
        double u = 1.0;
        TRY(get_num(r, cls->unit_key, 1, &u));
        if (u != 1.0)
            return bad(r, cls->unit_key, json_object_get(r->obj, cls->unit_key),
                       "1.0 (other values are not supported)");
    }
    if (cls->heads_divide_hidden && f->num_attention_heads > 0 &&
        f->hidden_size % f->num_attention_heads) {
        char expected[160];
        snprintf(expected, sizeof expected,
                 "a multiple of %s=%lld (the class's attention splits it into that many "
                 "heads)",
                 KEY(heads_key, "num_attention_heads"), (long long)f->num_attention_heads);
        TRY(bad(r, KEY(hidden_key, "hidden_size"),
                json_object_get(r->obj, KEY(hidden_key, "hidden_size")), expected));
    }
    int explicit_hd = 0;
    int64_t hd = 0;
    TRY(get_int(r, cls->head_dim_key ? cls->head_dim_key : "head_dim", 0, 1, MAX_HEAD_DIM, &hd,
                &explicit_hd));
    if (explicit_hd && cls->head_dim_from_hidden && f->num_attention_heads > 0 &&
        hd != f->hidden_size / f->num_attention_heads) {
        char expected[160];
        snprintf(expected, sizeof expected,
                 "hidden_size / num_attention_heads = %lld (the class overwrites head_dim "
                 "with it; a checkpoint made for another head size would not load)",
                 (long long)(f->hidden_size / f->num_attention_heads));
        TRY(bad(r, "head_dim", json_object_get(r->obj, "head_dim"), expected));
    }
    f->head_dim_explicit = explicit_hd;
    if (explicit_hd) f->head_dim = hd;
    else if (cls->head_dim) f->head_dim = cls->head_dim;
    else if (f->num_attention_heads > 0) {
        f->head_dim = f->hidden_size / f->num_attention_heads;
        if (f->hidden_size % f->num_attention_heads)
            facet_facts_note(f, "hidden_size=%lld is not a multiple of num_attention_heads="
                                "%lld; head_dim=%lld (integer division, as transformers)",
                             (long long)f->hidden_size, (long long)f->num_attention_heads,
                             (long long)f->head_dim);
    }
    if (f->head_dim <= 0) f->head_dim = 0; /* non-strict read of a broken shape */
#undef KEY
    return FACET_OK;
}

static facet_status read_block(reader *r, const facet_config_class *cls) {
    facet_facts *f = r->f;
    f->rms_norm_eps = cls->rms_norm_eps;
    TRY(get_num(r, cls->norm_eps_key ? cls->norm_eps_key : "rms_norm_eps", 1, &f->rms_norm_eps));
    TRY(read_act(r, cls));
    f->norm_weight_offset = cls->norm_weight_offset;
    f->pre_norms = cls->pre_norms;
    f->post_norms = cls->post_norms;
    f->layer_norm = cls->layer_norm;
    f->norm_no_weight = cls->layer_norm && cls->norm_no_weight;
    f->ffn_ungated = cls->ffn_ungated;
    f->parallel_residual = cls->parallel_default;
    if (cls->parallel_key) TRY(get_bool(r, cls->parallel_key, &f->parallel_residual));
    f->parallel_one_norm = f->parallel_residual && cls->parallel_one_norm;

    /* attention */
    f->attn_logit_softcap = cls->attn_logit_softcap;
    f->final_logit_softcap = cls->final_logit_softcap;
    f->query_pre_attn_scalar = cls->query_pre_attn_scalar;
    if (cls->reads_gemma_attention) { /* elsewhere the keys stay unread: the table judges them */
        json_t *v = take(r, "attn_logit_softcapping");
        if (v && json_is_null(v)) f->attn_logit_softcap = 0;
        TRY(get_num_from(r, v, "attn_logit_softcapping", 1, &f->attn_logit_softcap));
        v = take(r, "final_logit_softcapping");
        if (v && json_is_null(v)) f->final_logit_softcap = 0;
        TRY(get_num_from(r, v, "final_logit_softcapping", 1, &f->final_logit_softcap));
        TRY(get_num(r, "query_pre_attn_scalar", 1, &f->query_pre_attn_scalar));
    }
    f->attn_scale = f->query_pre_attn_scalar > 0 ? 1.0 / sqrt(f->query_pre_attn_scalar)
                    : f->head_dim > 0            ? 1.0 / sqrt((double)f->head_dim)
                                                 : 0.0;

    /* multipliers */
    f->embedding_multiplier = cls->embed_scale_sqrt_hidden ? sqrt((double)f->hidden_size) : 1.0;
    f->residual_multiplier = 1.0;
    f->logits_scaling = 1.0;
    if (cls->logit_scale_key) { /* Cohere: logits * logit_scale */
        double scale = cls->logit_scale_default;
        TRY(get_num(r, cls->logit_scale_key, 1, &scale));
        f->logits_scaling = 1.0 / scale;
    }
    for (const char *const *k = cls->require_true_keys; k && *k; k++) {
        int on = 1;
        TRY(get_bool(r, *k, &on));
        if (!on) return bad(r, *k, json_object_get(r->obj, *k), "true (not supported otherwise)");
    }
    if (cls->refuse_true_key) {
        int on = 0;
        TRY(get_bool(r, cls->refuse_true_key, &on));
        if (on)
            return bad(r, cls->refuse_true_key, json_object_get(r->obj, cls->refuse_true_key),
                       "false (not supported)");
    }
    if (cls->reads_multipliers) {
        TRY(get_num(r, "embedding_multiplier", 1, &f->embedding_multiplier));
        TRY(get_num(r, "residual_multiplier", 1, &f->residual_multiplier));
        TRY(get_num(r, "logits_scaling", 1, &f->logits_scaling));
        TRY(get_num(r, "attention_multiplier", 1, &f->attn_scale));
    }
    if (cls->reads_mup) { /* MiniCPM: the same three multipliers, from its muP keys */
        double scale_emb = 1.0, scale_depth = 1.0, dim_model_base = 1.0;
        TRY(get_num(r, "scale_emb", 1, &scale_emb));
        TRY(get_num(r, "scale_depth", 1, &scale_depth));
        TRY(get_num(r, "dim_model_base", 1, &dim_model_base));
        f->embedding_multiplier = scale_emb;
        f->residual_multiplier = scale_depth / sqrt((double)f->num_hidden_layers);
        f->logits_scaling = (double)f->hidden_size / dim_model_base;
    }

    /* biases: config keys, or fixed by the modeling code (probe decides later) */
    f->attention_bias = cls->attention_bias_default;
    TRY(get_bool(r, cls->attention_bias_key ? cls->attention_bias_key : "attention_bias",
                 &f->attention_bias));
    f->mlp_bias = cls->mlp_bias_default;
    if (!cls->mlp_bias_default) TRY(get_bool(r, "mlp_bias", &f->mlp_bias));
    f->qkv_bias = cls->qkv_bias >= 0 ? cls->qkv_bias : f->attention_bias;
    f->o_bias = cls->o_bias >= 0 ? cls->o_bias : f->attention_bias;
    f->qk_norm = cls->qk_norm;
    f->attn_sinks = cls->attn_sinks;
    return FACET_OK;
}

/* A key of an object, or NULL (v not an object). */
static json_t *member(json_t *v, const char *key) {
    return json_is_object(v) ? json_object_get(v, key) : NULL;
}

/* MptConfig (modeling_mpt): MptAttention reads attn_config.softmax_scale (null:
 * 1/sqrt(head_dim)); everything else of the block is fixed by the modeling code (ALiBi with
 * max bias 8, no biases, a 4 x d_model exact-gelu MLP, LayerNorm). llm-foundry keys that
 * would change a real MPT away from that block (clip_qkv, qk_ln, prefix_lm, alibi false,
 * another alibi_bias_max, expansion_ratio, no_bias false, logit_scale, another norm or
 * FFN type) are refused by key: transformers would silently run another model. */
static facet_status read_mpt(reader *r) {
    facet_facts *f = r->f;
    double ratio = 4.0;
    TRY(get_num(r, "expansion_ratio", 1, &ratio));
    if (ratio != 4.0)
        return bad(r, "expansion_ratio", json_object_get(r->obj, "expansion_ratio"),
                   "4 (MptMLP is 4 x d_model wide)");
    int no_bias = 1;
    TRY(get_bool(r, "no_bias", &no_bias));
    if (!no_bias)
        return bad(r, "no_bias", json_object_get(r->obj, "no_bias"),
                   "true (MptModel has no biases)");
    json_t *v = take(r, "logit_scale");
    if (v && !json_is_null(v)) return bad(r, "logit_scale", v, "null (MptForCausalLM does not scale)");
    char norm[48] = "low_precision_layernorm";
    TRY(get_str(r, "norm_type", norm, sizeof norm, NULL));
    if (strcmp(norm, "low_precision_layernorm") && strcmp(norm, "layernorm"))
        return bad(r, "norm_type", json_object_get(r->obj, "norm_type"),
                   "\"layernorm\" or \"low_precision_layernorm\" (MptBlock's LayerNorm)");
    v = take(r, "ffn_config");
    json_t *ft = member(v, "ffn_type");
    if (v && !json_is_null(v) &&
        !(json_is_object(v) && (!ft || (json_is_string(ft) && !strcmp(json_string_value(ft), "mptmlp")))))
        return bad(r, "ffn_config", v, "absent or {\"ffn_type\": \"mptmlp\"} (MptMLP)");
    json_t *a = take(r, "attn_config");
    if (a && !json_is_null(a) && !json_is_object(a)) return bad(r, "attn_config", a, "an object");
    const char *k;
    json_t *x;
    json_object_foreach(json_is_object(a) ? a : NULL, k, x) {
        char key[96];
        snprintf(key, sizeof key, "attn_config.%s", k);
        int off = json_is_null(x) || json_is_false(x);
        if (!strcmp(k, "softmax_scale")) {
            if (!json_is_null(x)) TRY(get_num_from(r, x, key, 1, &f->attn_scale));
        } else if (!strcmp(k, "attn_pdrop") || !strcmp(k, "attn_impl") ||
                   !strcmp(k, "attn_uses_sequence_id")) {
            continue; /* training, a kernel choice */
        } else if (!strcmp(k, "alibi")) {
            if (!json_is_true(x)) return bad(r, key, x, "true (MptModel always adds ALiBi)");
        } else if (!strcmp(k, "alibi_bias_max")) {
            if (!json_is_number(x) || json_number_value(x) != 8.0)
                return bad(r, key, x, "8 (MptModel's ALiBi slopes)");
        } else if (!strcmp(k, "attn_type")) {
            if (!json_is_string(x) || strcmp(json_string_value(x), "multihead_attention"))
                return bad(r, key, x, "\"multihead_attention\"");
        } else if (!strcmp(k, "clip_qkv") || !strcmp(k, "qk_ln") || !strcmp(k, "prefix_lm") ||
                   !strcmp(k, "rope") || !strcmp(k, "qk_gn")) {
            if (!off) return bad(r, key, x, "null or false (MptAttention has no such step)");
        } else if (!off) {
            keep_key(f, key, x); /* the table judges it */
        }
    }
    return FACET_OK;
}

/* FalconConfig's attention layout (modeling_falcon FalconAttention / FalconDecoderLayer):
 * new_decoder_architecture: num_kv_heads KV heads (default num_attention_heads), the
 * parallel block with num_ln_in_parallel_attn norms (null: 2, ln_attn and ln_mlp; 1:
 * input_layernorm); else multi_query: one KV head; else one KV head per head (the
 * per-head [q; k; v] rows), with one input norm when parallel_attn. Combinations the
 * modeling code cannot build (it fails on them) are refused by key. */
static facet_status read_falcon(reader *r) {
    facet_facts *f = r->f;
    int new_arch = 0, mq = 1, alibi = 0;
    /* alibi (falcon-rw-1b / 7b): no rotary; FalconAttention adds build_alibi_tensor's
     * slope_h * key position to q.k BEFORE multiplying by inv_norm_factor =
     * 1/sqrt(head_dim) (the SDPA path the same: the mask is alibi / sqrt(head_dim)), so
     * the bias is scaled with the scores, where BLOOM adds it after. transformers rounds
     * the slopes to bfloat16 and forms slope * position in bfloat16 in every dtype
     * (build_alibi_tensor's slopes.bfloat16()); facet and the float64 reference keep
     * both exact, so a transformers run differs from ours by up to half a bfloat16 ulp
     * of slope * position (2^-9 relative: 0.25 where slope * position is near 100), times
     * 1/sqrt(head_dim), in each score. */
    TRY(get_bool(r, "alibi", &alibi));
    if (alibi) f->alibi = 1, f->alibi_bias_max = 8.0, f->alibi_pre_scale = 1, f->no_rope = 1;
    TRY(get_bool(r, "new_decoder_architecture", &new_arch));
    TRY(get_bool(r, "multi_query", &mq));
    int64_t nkv = f->num_attention_heads, n_ln = 0;
    int n_ln_given = 0;
    TRY(get_int(r, "num_kv_heads", 0, 1, MAX_HEADS, &nkv, NULL));
    TRY(get_int(r, "num_ln_in_parallel_attn", 0, 1, 2, &n_ln, &n_ln_given));
    if (new_arch) {
        if (!f->parallel_residual)
            return bad(r, "parallel_attn", json_object_get(r->obj, "parallel_attn"),
                       "true with new_decoder_architecture (the Falcon block is parallel)");
        f->num_key_value_heads = nkv;
        f->parallel_one_norm = n_ln_given && n_ln == 1;
    } else {
        if (n_ln_given && n_ln == 2)
            return bad(r, "num_ln_in_parallel_attn", json_object_get(r->obj, "num_ln_in_parallel_attn"),
                       "null or 1 without new_decoder_architecture (the block reads "
                       "input_layernorm)");
        if (mq) {
            f->num_key_value_heads = 1;
        } else {
            if (nkv != f->num_attention_heads)
                return bad(r, "num_kv_heads", json_object_get(r->obj, "num_kv_heads"),
                           "num_attention_heads without multi_query or "
                           "new_decoder_architecture (one [q; k; v] per head)");
            f->num_key_value_heads = nkv;
        }
    }
    return FACET_OK;
}

/* ChatGLMConfig's attention and norm keys (modeling_chatglm SelfAttention / GLMBlock /
 * MLP, ChatGLM2/3 and GLM-4 alike): multi_query_attention (default false) makes
 * query_key_value [q (heads); k; v (multi_query_group_num heads each)] rows, else one
 * [q_h; k_h; v_h] group per head (split_tensor_along_last_dim of view(heads, 3 hd));
 * rmsnorm (default true) picks RMSNorm or torch LayerNorm (weight and bias) for every
 * norm; add_bias_linear gives dense, dense_h_to_4h and dense_4h_to_h their biases
 * (add_qkv_bias, query_key_value's, is the class's attention_bias_key). Weights that
 * modeling_chatglm would quantize at load (quantization_bit) and P-tuning's prefix
 * encoder (pre_seq_len) are refused by key. */
static facet_status read_glm(reader *r) {
    facet_facts *f = r->f;
    int mq = 0, rms = 1, bias = 0;
    int64_t groups = 1, qbits = 0;
    TRY(get_bool(r, "multi_query_attention", &mq));
    TRY(get_int(r, "multi_query_group_num", 0, 1, MAX_HEADS, &groups, NULL));
    TRY(get_bool(r, "rmsnorm", &rms));
    TRY(get_bool(r, "add_bias_linear", &bias));
    TRY(get_int(r, "quantization_bit", 0, 0, 64, &qbits, NULL));
    if (qbits)
        return bad(r, "quantization_bit", json_object_get(r->obj, "quantization_bit"),
                   "0 (modeling_chatglm's int4 / int8 weight quantization is not supported)");
    json_t *v = take(r, "pre_seq_len");
    if (v && !json_is_null(v))
        return bad(r, "pre_seq_len", v, "null (P-tuning v2's prefix encoder is not supported)");
    if (mq && f->num_attention_heads % groups)
        return bad(r, "multi_query_group_num", json_object_get(r->obj, "multi_query_group_num"),
                   "a divisor of num_attention_heads");
    f->num_key_value_heads = mq ? groups : f->num_attention_heads;
    f->qkv_fused_blocks = mq;
    f->layer_norm = !rms;
    f->o_bias = bias;
    f->mlp_bias = bias;
    return FACET_OK;
}

/* BaichuanConfig (remote code; four releases share model_type "baichuan" and
 * BaichuanForCausalLM / BaiChuanForCausalLM, and config.json names neither their position
 * scheme nor their output head). Each fact comes from the keys the releases'
 * configuration classes define, as followed in their files:
 *   positions: Baichuan-7B's BaiChuanConfig and Baichuan2-7B's BaichuanConfig define
 *     max_position_embeddings, and their modeling_baichuan.py rotate q and k
 *     (RotaryEmbedding, base 10000, rotate_half); Baichuan-13B's and Baichuan2-13B's
 *     BaichuanConfig define model_max_length and no max_position_embeddings, and their
 *     modeling_baichuan.py adds ALiBi (_gen_alibi_mask: slope_h * key position, after the
 *     1/sqrt(head_dim) scale; _get_interleave's slopes are BLOOM's). So
 *     max_position_embeddings present: rotary (a model_max_length beside it, as
 *     Baichuan2-7B's config.json carries, is the tokenizer's length, never read by that
 *     modeling file); else model_max_length present: ALiBi; neither: refused, since
 *     either class would run with its own default.
 *   output head: Baichuan 2's modeling files (both sizes) hold NormHead (lm_head rows
 *     divided by their L2 norm in eval); Baichuan 1's a plain Linear. Baichuan 2's
 *     configuration classes (both sizes) define z_loss_weight, Baichuan 1's do not; the
 *     released Baichuan 2 config.json files omit it but carry Baichuan 2's 125,696-token
 *     vocabulary (Baichuan 1: 64,000). So z_loss_weight present or vocab_size 125696:
 *     NormHead; vocab_size 64000 without z_loss_weight: plain; any other vocabulary
 *     without z_loss_weight: refused (which release's modeling file runs it is unknown).
 * Files followed: baichuan-inc/Baichuan2-13B-Chat configuration_baichuan.py /
 * modeling_baichuan.py (commit c6f8592 "fix NormHead eval"), Baichuan-13B's
 * configuration_baichuan.py (as vLLM copies it, transformers_utils/configs/baichuan_13b.py),
 * Baichuan2-7B-Base's modeling file as ipex-llm adapts it (cb7fc74), and the Baichuan-7B /
 * Baichuan2-7B configs cited in DESIGN.md (Baichuan). Habana's Baichuan 2 port decides
 * 7B vs 13B the same way: hasattr(config, "max_position_embeddings"). */
static facet_status read_baichuan(reader *r) {
    facet_facts *f = r->f;
    json_t *mpe = json_object_get(r->obj, "max_position_embeddings"); /* read_shape took it */
    int64_t mml = 0;
    int mml_given = 0;
    TRY(get_int(r, "model_max_length", 0, 1, MAX_CONTEXT, &mml, &mml_given));
    if (mpe && !json_is_null(mpe)) {
        f->alibi = 0; /* the 7B files: rotary over the whole head, base 10000 */
    } else if (mml_given) {
        f->alibi = 1, f->alibi_bias_max = 8.0, f->no_rope = 1;
        f->max_position_embeddings = mml;
    } else if (r->strict) {
        return facet_err(r->err, FACET_E_UNSUPPORTED,
                         "%s: a baichuan config without max_position_embeddings (the 7B "
                         "configuration classes: rotary) or model_max_length (the 13B ones: "
                         "ALiBi): which position scheme its modeling file runs is not "
                         "decidable; add the key of the release it is",
                         r->what);
    }
    json_t *z = take(r, "z_loss_weight");
    if (z && !json_is_null(z)) {
        f->lm_head_l2_norm = 1;
    } else if (f->vocab_size == 125696) {
        f->lm_head_l2_norm = 1;
    } else if (f->vocab_size != 64000 && r->strict) {
        return facet_err(r->err, FACET_E_UNSUPPORTED,
                         "%s: a baichuan config with vocab_size %lld and no z_loss_weight: "
                         "neither Baichuan 1 (64000, a plain lm_head) nor Baichuan 2 "
                         "(125696 or z_loss_weight, NormHead's L2-normalised lm_head rows), "
                         "so which output head runs is not decidable; add z_loss_weight "
                         "for a Baichuan 2 model",
                         r->what, (long long)f->vocab_size);
    }
    return FACET_OK;
}

/* MambaConfig (transformers models/mamba/configuration_mamba.py): every layer a Mamba
 * mixer (MambaBlock: x + mixer(RMSNorm(x))), no attention, no FFN. */
static facet_status read_mamba(reader *r, const facet_config_class *cls) {
    facet_facts *f = r->f;
    TRY(get_int(r, "hidden_size", 1, 1, MAX_HIDDEN, &f->hidden_size, NULL));
    TRY(get_int(r, "num_hidden_layers", 1, 1, FACET_MAX_LAYERS, &f->num_hidden_layers, NULL));
    TRY(get_int(r, "vocab_size", 1, 1, MAX_VOCAB, &f->vocab_size, NULL));
    f->max_position_embeddings = cls->max_position_embeddings;
    TRY(get_int(r, "max_position_embeddings", 0, 1, MAX_CONTEXT, &f->max_position_embeddings,
                NULL));
    int v2 = cls->mamba == 2;
    f->ssm_version = cls->mamba;
    f->ssm_state_size = v2 ? 128 : 16, f->ssm_conv_kernel = 4, f->ssm_expand = 2;
    TRY(get_int(r, "state_size", 0, 1, 1 << 16, &f->ssm_state_size, NULL));
    TRY(get_int(r, "conv_kernel", 0, 1, 1 << 10, &f->ssm_conv_kernel, NULL));
    TRY(get_int(r, "expand", 0, 1, 1 << 10, &f->ssm_expand, NULL));
    /* MambaConfig sets intermediate_size = expand * hidden_size itself; the key (written
     * by save_pretrained) must say the same */
    f->ssm_inner = f->ssm_expand * f->hidden_size;
    int64_t inner = f->ssm_inner;
    int given = 0;
    TRY(get_int(r, "intermediate_size", 0, 1, MAX_INTERMEDIATE, &inner, &given));
    if (given && inner != f->ssm_inner) {
        json_t *v = json_object_get(r->obj, "intermediate_size");
        return bad(r, "intermediate_size", v, "expand * hidden_size (MambaConfig derives it)");
    }
    if (v2) { /* Mamba2Config: heads of head_dim channels, B/C in n_groups groups */
        f->ssm_heads = 128, f->ssm_head_dim = 64, f->ssm_groups = 8;
        TRY(get_int(r, "num_heads", 0, 1, 1 << 20, &f->ssm_heads, NULL));
        TRY(get_int(r, "head_dim", 0, 1, 1 << 20, &f->ssm_head_dim, NULL));
        TRY(get_int(r, "n_groups", 0, 1, 1 << 20, &f->ssm_groups, NULL));
        if (f->ssm_heads * f->ssm_head_dim != f->ssm_inner)
            return bad(r, "num_heads", json_object_get(r->obj, "num_heads"),
                       "num_heads * head_dim = expand * hidden_size");
        if (f->ssm_heads % f->ssm_groups)
            return bad(r, "n_groups", json_object_get(r->obj, "n_groups"),
                       "a divisor of num_heads");
        /* time_step_limit clamps dt: only the default (0, inf) is built */
        json_t *lim = take(r, "time_step_limit");
        if (!no_clamp(lim)) return bad(r, "time_step_limit", lim, "[0.0, inf] (no clamp)");
        int64_t chunk = 256;
        TRY(get_int(r, "chunk_size", 0, 1, 1 << 20, &chunk, NULL)); /* a kernel choice */
    }
    f->intermediate_size = f->ssm_inner;
    f->ssm_dt_rank = (f->hidden_size + 15) / 16;
    json_t *v = take(r, "time_step_rank");
    if (v && !json_is_null(v) && !(json_is_string(v) && !strcmp(json_string_value(v), "auto"))) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > MAX_HIDDEN)
            return bad(r, "time_step_rank", v, "\"auto\" or a positive integer");
        f->ssm_dt_rank = (int64_t)json_integer_value(v);
    }
    f->ssm_conv_bias = 1;
    TRY(get_bool(r, "use_conv_bias", &f->ssm_conv_bias));
    TRY(get_bool(r, "use_bias", &f->ssm_proj_bias));
    f->rms_norm_eps = cls->rms_norm_eps;
    TRY(get_num(r, "layer_norm_epsilon", 1, &f->rms_norm_eps));
    TRY(read_act(r, cls));
    /* residual_in_fp32 keeps the residual stream in float32: facet's always is */
    int fp32 = 1;
    TRY(get_bool(r, "residual_in_fp32", &fp32));
    /* keys the state-spaces checkpoints carry that MambaConfig does not read or reads
     * only to initialize training: n_layer (must agree), rms_norm (MambaRMSNorm always),
     * fused_add_norm (a kernel choice), the time_step_* init and rescale_prenorm_residual */
    int64_t n_layer = f->num_hidden_layers;
    TRY(get_int(r, "n_layer", 0, 1, FACET_MAX_LAYERS, &n_layer, NULL));
    if (n_layer != f->num_hidden_layers)
        return bad(r, "n_layer", json_object_get(r->obj, "n_layer"), "num_hidden_layers");
    int rms = 1, fused = 1, rescale = 0;
    TRY(get_bool(r, "rms_norm", &rms));
    if (!rms) return bad(r, "rms_norm", json_object_get(r->obj, "rms_norm"), "true (RMSNorm)");
    TRY(get_bool(r, "fused_add_norm", &fused));
    TRY(get_bool(r, "rescale_prenorm_residual", &rescale));
    static const char *const init_only[] = {"time_step_scale", "time_step_min", "time_step_max",
                                            "time_step_init_scheme", "time_step_floor",
                                            "pad_vocab_size_multiple", "use_mambapy", NULL};
    for (int i = 0; init_only[i]; i++) take(r, init_only[i]);
    f->pre_norms = 1;
    f->embedding_multiplier = f->residual_multiplier = f->logits_scaling = 1.0;
    f->n_ssm_layers = (int)f->num_hidden_layers;
    for (int64_t l = 0; l < f->num_hidden_layers; l++) f->layer_ssm[l] = (uint8_t)cls->mamba;
    return FACET_OK;
}

/* GraniteMoeHybridConfig (transformers models/granitemoehybrid/
 * configuration_granitemoehybrid.py): layer_types ("mamba" / "attention"; absent or null:
 * every layer "mamba") picks each layer's mixer, a Mamba-2 mixer (BambaMixer: mamba_*
 * keys, d_inner = mamba_expand * hidden_size, its gated norm's eps rms_norm_eps, dt never
 * clamped) or GraniteMoeShared's attention; every layer keeps its norm and FFN block.
 * position_embedding_type "rope" rotates the attention layers; null or "nope" does not.
 * BambaConfig (transformers models/bamba/configuration_bamba.py) has the same mamba_* keys
 * and defaults; its attention layers are attn_layer_indices, always rotary. */
static facet_status read_hybrid(reader *r, const facet_config_class *cls) {
    facet_facts *f = r->f;
    int64_t L = f->num_hidden_layers;
    f->ssm_version = 2;
    f->ssm_ffn = 1;
    f->ssm_heads = 128, f->ssm_groups = 1, f->ssm_state_size = 256;
    f->ssm_conv_kernel = 4, f->ssm_expand = 2;
    TRY(get_int(r, "mamba_n_heads", 0, 1, 1 << 20, &f->ssm_heads, NULL));
    TRY(get_int(r, "mamba_n_groups", 0, 1, 1 << 20, &f->ssm_groups, NULL));
    TRY(get_int(r, "mamba_d_state", 0, 1, 1 << 16, &f->ssm_state_size, NULL));
    TRY(get_int(r, "mamba_d_conv", 0, 1, 1 << 10, &f->ssm_conv_kernel, NULL));
    TRY(get_int(r, "mamba_expand", 0, 1, 1 << 10, &f->ssm_expand, NULL));
    f->ssm_inner = f->ssm_expand * f->hidden_size;
    if (f->ssm_inner % f->ssm_heads)
        return bad(r, "mamba_n_heads", json_object_get(r->obj, "mamba_n_heads"),
                   "a divisor of mamba_expand * hidden_size");
    f->ssm_head_dim = f->ssm_inner / f->ssm_heads;
    json_t *hd = take(r, "mamba_d_head");
    if (hd && !json_is_null(hd) && !(json_is_string(hd) && !strcmp(json_string_value(hd), "auto")) &&
        !(json_is_integer(hd) && json_integer_value(hd) == f->ssm_head_dim))
        return bad(r, "mamba_d_head", hd,
                   "\"auto\" or mamba_expand * hidden_size / mamba_n_heads");
    if (f->ssm_heads % f->ssm_groups)
        return bad(r, "mamba_n_groups", json_object_get(r->obj, "mamba_n_groups"),
                   "a divisor of mamba_n_heads");
    int64_t chunk = 256;
    TRY(get_int(r, "mamba_chunk_size", 0, 1, 1 << 20, &chunk, NULL)); /* a kernel choice */
    f->ssm_conv_bias = 1, f->ssm_proj_bias = 0;
    TRY(get_bool(r, "mamba_conv_bias", &f->ssm_conv_bias));
    TRY(get_bool(r, "mamba_proj_bias", &f->ssm_proj_bias));
    /* keys Granite 4.0 and Bamba checkpoints carry that the class never reads: the mixer
     * fixes time_step_limit to (0, inf) and always uses RMSNorm; init_method, the
     * time_step_min/max init range, z_loss_coefficient and num_logits_to_keep are
     * training's or generation's */
    static const char *const unread[] = {"time_step_limit", "normalization_function",
                                         "init_method", "time_step_min", "time_step_max",
                                         "z_loss_coefficient", "num_logits_to_keep", NULL};
    for (int i = 0; unread[i]; i++) take(r, unread[i]);

    memset(f->layer_ssm, 0, sizeof f->layer_ssm);
    f->n_ssm_layers = 0;
    char expected[112];
    if (cls->hybrid == 4) { /* BambaConfig: attn_layer_indices name the attention layers
                             * (absent or null: none); rotary always, over half a head */
        f->no_rope = 0;
        json_t *idx = take(r, "attn_layer_indices");
        snprintf(expected, sizeof expected, "an array of layer indices in [0, %lld)",
                 (long long)L);
        for (int64_t i = 0; i < L; i++) f->layer_ssm[i] = 2;
        if (idx && !json_is_null(idx)) {
            layer_kinds_from(f, "attn_layer_indices", NULL, NULL);
            if (!json_is_array(idx)) return bad(r, "attn_layer_indices", idx, expected);
            size_t i;
            json_t *v;
            json_array_foreach(idx, i, v) {
                if (!json_is_integer(v) || json_integer_value(v) < 0 ||
                    json_integer_value(v) >= L)
                    return bad(r, "attn_layer_indices", idx, expected);
                f->layer_ssm[json_integer_value(v)] = 0;
            }
        }
        for (int64_t i = 0; i < L; i++) f->n_ssm_layers += f->layer_ssm[i] != 0;
        return FACET_OK;
    }
    char pe[16] = "";
    int present = 0;
    json_t *pv = json_object_get(r->obj, "position_embedding_type");
    if (pv && json_is_string(pv) && json_string_length(pv) >= sizeof pe)
        return bad(r, "position_embedding_type", pv, "null, \"nope\" or \"rope\"");
    TRY(get_str(r, "position_embedding_type", pe, sizeof pe, &present));
    if (present && strcmp(pe, "rope") && strcmp(pe, "nope"))
        return bad(r, "position_embedding_type", pv, "null, \"nope\" or \"rope\"");
    f->no_rope = strcmp(pe, "rope") != 0;

    json_t *lt = take(r, "layer_types");
    snprintf(expected, sizeof expected,
             "an array of num_hidden_layers (%lld) entries \"mamba\" or \"attention\"",
             (long long)L);
    if (lt && !json_is_null(lt)) {
        layer_kinds_from(f, "layer_types", "attention", "mamba");
        if (!json_is_array(lt) || (int64_t)json_array_size(lt) != L)
            return bad(r, "layer_types", lt, expected);
        size_t i;
        json_t *v;
        json_array_foreach(lt, i, v) {
            const char *t = json_is_string(v) ? json_string_value(v) : "";
            if (strcmp(t, "mamba") && strcmp(t, "attention"))
                return bad(r, "layer_types", lt, expected);
            f->layer_ssm[i] = !strcmp(t, "mamba") ? 2 : 0;
        }
    } else {
        for (int64_t i = 0; i < L; i++) f->layer_ssm[i] = 2;
    }
    for (int64_t i = 0; i < L; i++) f->n_ssm_layers += f->layer_ssm[i] != 0;
    return FACET_OK;
}

/* A list of n numbers (each > 0) under `key`, or the defaults left when absent or null. */
static facet_status get_num_list(reader *r, const char *key, int n, double *out) {
    json_t *v = take(r, key);
    if (!v || json_is_null(v)) return FACET_OK;
    char expected[64];
    snprintf(expected, sizeof expected, "a list of %d positive numbers", n);
    if (!json_is_array(v) || (int)json_array_size(v) != n) return bad(r, key, v, expected);
    for (int i = 0; i < n; i++) {
        json_t *x = json_array_get(v, (size_t)i);
        if (!json_is_number(x) || !isfinite(json_number_value(x)) || !(json_number_value(x) > 0))
            return bad(r, key, v, expected);
        out[i] = json_number_value(x);
    }
    return FACET_OK;
}

/* FalconH1Config (transformers models/falcon_h1/configuration_falcon_h1.py,
 * modular_falcon_h1.py): every FalconH1DecoderLayer runs FalconH1Attention (Llama's, keys
 * times key_multiplier) and FalconH1Mixer (Mamba-2, mamba_d_ssm wide: 1024 when absent,
 * mamba_expand * hidden_size when null; mamba_d_head "auto" = that / mamba_n_heads; its output
 * norm FalconH1RMSNormGated per group only when mamba_rms_norm, before or after the gate
 * by mamba_norm_before_gate, else y * SiLU(z)) on the same input_layernorm output, then
 * pre_ff_layernorm and FalconH1MLP. muP: the embeddings times embedding_multiplier, the
 * logits times lm_head_multiplier, the attention's input times attention_in_multiplier
 * and output times attention_out_multiplier, the mixer's input times ssm_in_multiplier,
 * in_proj's output times the mup_vector (ssm_multipliers per segment z, x, B, C, dt), its
 * output times ssm_out_multiplier, the MLP's gate times mlp_multipliers[0] and its down
 * projection times mlp_multipliers[1]. in_proj's bias is mamba_proj_bias (added before
 * the mup_vector), out_proj's projectors_bias. */
static facet_status read_falcon_h1(reader *r) {
    facet_facts *f = r->f;
    f->ssm_version = 2;
    f->ssm_ffn = 1; /* the layer keeps input_layernorm and its FFN block */
    f->ssm_parallel = 1;
    f->ssm_heads = 128, f->ssm_groups = 1, f->ssm_state_size = 256;
    f->ssm_conv_kernel = 4, f->ssm_expand = 2;
    TRY(get_int(r, "mamba_n_heads", 0, 1, 1 << 20, &f->ssm_heads, NULL));
    TRY(get_int(r, "mamba_n_groups", 0, 1, 1 << 20, &f->ssm_groups, NULL));
    TRY(get_int(r, "mamba_d_state", 0, 1, 1 << 16, &f->ssm_state_size, NULL));
    TRY(get_int(r, "mamba_d_conv", 0, 1, 1 << 10, &f->ssm_conv_kernel, NULL));
    TRY(get_int(r, "mamba_expand", 0, 1, 1 << 10, &f->ssm_expand, NULL));
    /* mamba_d_ssm: the class default 1024 when absent; null: mamba_expand * hidden_size */
    json_t *dssm = json_object_get(r->obj, "mamba_d_ssm");
    f->ssm_inner = dssm && json_is_null(dssm) ? f->ssm_expand * f->hidden_size : 1024;
    TRY(get_int(r, "mamba_d_ssm", 0, 1, MAX_INTERMEDIATE, &f->ssm_inner, NULL));
    if (f->ssm_inner % f->ssm_heads)
        return bad(r, "mamba_n_heads", json_object_get(r->obj, "mamba_n_heads"),
                   "a divisor of mamba_d_ssm (or mamba_expand * hidden_size)");
    f->ssm_head_dim = f->ssm_inner / f->ssm_heads;
    json_t *hd = take(r, "mamba_d_head");
    if (hd && !json_is_null(hd) && !(json_is_string(hd) && !strcmp(json_string_value(hd), "auto")) &&
        !(json_is_integer(hd) && json_integer_value(hd) == f->ssm_head_dim))
        return bad(r, "mamba_d_head", hd, "\"auto\" or mamba_d_ssm / mamba_n_heads");
    if (f->ssm_heads % f->ssm_groups)
        return bad(r, "mamba_n_groups", json_object_get(r->obj, "mamba_n_groups"),
                   "a divisor of mamba_n_heads");
    int64_t chunk = 256;
    TRY(get_int(r, "mamba_chunk_size", 0, 1, 1 << 20, &chunk, NULL)); /* a kernel choice */
    f->ssm_conv_bias = 1;
    TRY(get_bool(r, "mamba_conv_bias", &f->ssm_conv_bias));
    int in_bias = 0, out_bias = 0, rms = 0, before = 1;
    TRY(get_bool(r, "mamba_proj_bias", &in_bias));
    TRY(get_bool(r, "projectors_bias", &out_bias));
    f->ssm_in_bias = in_bias, f->ssm_out_bias = out_bias;
    TRY(get_bool(r, "mamba_rms_norm", &rms));
    TRY(get_bool(r, "mamba_norm_before_gate", &before));
    f->ssm_norm = !rms ? FACET_SSM_NORM_NONE : before ? FACET_SSM_NORM_BEFORE_GATE
                                                     : FACET_SSM_NORM_GATED;
    json_t *lim = take(r, "time_step_limit");
    if (!no_clamp(lim)) return bad(r, "time_step_limit", lim, "[0.0, inf] (no clamp)");
    /* the muP multipliers */
    f->mup = 1;
    double lm = 1.0, mlp[2] = {1.0, 1.0};
    f->attn_in_multiplier = f->attn_out_multiplier = 1.0;
    f->ssm_in_multiplier = f->ssm_out_multiplier = f->key_multiplier = 1.0;
    for (int i = 0; i < 5; i++) f->ssm_mup[i] = 1.0;
    TRY(get_num(r, "embedding_multiplier", 1, &f->embedding_multiplier));
    TRY(get_num(r, "lm_head_multiplier", 1, &lm));
    f->logits_scaling = 1.0 / lm;
    TRY(get_num(r, "key_multiplier", 1, &f->key_multiplier));
    TRY(get_num(r, "attention_in_multiplier", 1, &f->attn_in_multiplier));
    TRY(get_num(r, "attention_out_multiplier", 1, &f->attn_out_multiplier));
    TRY(get_num(r, "ssm_in_multiplier", 1, &f->ssm_in_multiplier));
    TRY(get_num(r, "ssm_out_multiplier", 1, &f->ssm_out_multiplier));
    TRY(get_num_list(r, "ssm_multipliers", 5, f->ssm_mup));
    TRY(get_num_list(r, "mlp_multipliers", 2, mlp));
    f->mlp_gate_multiplier = mlp[0], f->mlp_down_multiplier = mlp[1];
    /* keys the released checkpoints carry that FalconH1Config never reads: every layer is
     * hybrid and has its MLP whatever mamba_use_mlp says (a checkpoint without the MLP's
     * tensors fails the loader's tensor check by name); an attn_layer_indices other than
     * null is left for the table to refuse; the dt init range, generation's
     * num_logits_to_keep */
    static const char *const unread[] = {"time_step_min", "time_step_max", "time_step_floor",
                                         "num_logits_to_keep", "mamba_use_mlp", NULL};
    for (int i = 0; unread[i]; i++) take(r, unread[i]);
    json_t *v = json_object_get(r->obj, "attn_layer_indices");
    if (v && json_is_null(v)) take(r, "attn_layer_indices");
    memset(f->layer_ssm, 0, sizeof f->layer_ssm);
    f->n_ssm_layers = 0;
    return FACET_OK;
}

/* Qwen3NextConfig (transformers models/qwen3_next/configuration_qwen3_next.py,
 * modular_qwen3_next.py): layer_types ("linear_attention" / "full_attention"), else
 * layer i is full attention iff (i + 1) % full_attention_interval == 0 (default 4). A
 * "linear_attention" layer is Qwen3NextGatedDeltaNet (the linear_* keys: the delta rule
 * over linear_num_value_heads heads of linear_value_head_dim, its keys
 * linear_num_key_heads heads of linear_key_head_dim repeated to the value heads, a
 * causal depthwise conv of linear_conv_kernel_dim taps, no biases); a "full_attention"
 * layer is Qwen3NextAttention, whose q_proj also gives a sigmoid gate on its output.
 * Every layer keeps its norms and FFN (dense or sparse: read_moe). Qwen3NextAttention
 * drops sliding_window, so the window keys are read past. */
static facet_status read_qwen3_next(reader *r) {
    facet_facts *f = r->f;
    int64_t L = f->num_hidden_layers;
    f->ssm_version = 4;
    f->ssm_ffn = 1;
    f->attn_output_gate = 1;
    int64_t nk = 16, nv = 32, dk = 128, dv = 128, K = 4;
    TRY(get_int(r, "linear_num_key_heads", 0, 1, 1 << 16, &nk, NULL));
    TRY(get_int(r, "linear_num_value_heads", 0, 1, 1 << 16, &nv, NULL));
    TRY(get_int(r, "linear_key_head_dim", 0, 1, 1 << 12, &dk, NULL));
    TRY(get_int(r, "linear_value_head_dim", 0, 1, 1 << 12, &dv, NULL));
    TRY(get_int(r, "linear_conv_kernel_dim", 0, 1, 1 << 10, &K, NULL));
    if (nv % nk)
        return bad(r, "linear_num_value_heads", json_object_get(r->obj, "linear_num_value_heads"),
                   "a multiple of linear_num_key_heads (each key head serves "
                   "linear_num_value_heads / linear_num_key_heads value heads)");
    f->ssm_heads = nv, f->ssm_head_dim = dv, f->ssm_groups = nk, f->ssm_state_size = dk;
    f->ssm_inner = nv * dv;
    f->ssm_conv_kernel = K;
    f->ssm_expand = 1;
    f->ssm_conv_bias = 0, f->ssm_proj_bias = 0;
    /* Qwen3NextAttention deletes its sliding_window: these never act */
    static const char *const unread[] = {"use_sliding_window", "sliding_window",
                                         "max_window_layers", NULL};
    for (int i = 0; unread[i]; i++) take(r, unread[i]);

    memset(f->layer_ssm, 0, sizeof f->layer_ssm);
    f->n_ssm_layers = 0;
    char expected[128];
    json_t *lt = take(r, "layer_types");
    int64_t interval = 4;
    int given = 0;
    TRY(get_int(r, "full_attention_interval", 0, 1, FACET_MAX_LAYERS, &interval, &given));
    if (lt && !json_is_null(lt)) {
        layer_kinds_from(f, "layer_types", "full_attention", "linear_attention");
        snprintf(expected, sizeof expected,
                 "an array of num_hidden_layers (%lld) entries \"linear_attention\" or "
                 "\"full_attention\"", (long long)L);
        if (!json_is_array(lt) || (int64_t)json_array_size(lt) != L)
            return bad(r, "layer_types", lt, expected);
        size_t i;
        json_t *v;
        json_array_foreach(lt, i, v) {
            const char *t = json_is_string(v) ? json_string_value(v) : "";
            if (strcmp(t, "linear_attention") && strcmp(t, "full_attention"))
                return bad(r, "layer_types", lt, expected);
            f->layer_ssm[i] = !strcmp(t, "linear_attention") ? 4 : 0;
        }
    } else {
        layer_kinds_from(f, "full_attention_interval", NULL, NULL);
        for (int64_t i = 0; i < L; i++) f->layer_ssm[i] = (i + 1) % interval ? 4 : 0;
    }
    for (int64_t i = 0; i < L; i++) f->n_ssm_layers += f->layer_ssm[i] != 0;
    return FACET_OK;
}

/* JambaConfig (transformers models/jamba/configuration_jamba.py, modular_jamba.py):
 * layer i is attention when i % attn_layer_period == attn_layer_offset, else a
 * JambaMambaMixer (Mamba-1: mamba_d_state, mamba_d_conv, mamba_expand, mamba_dt_rank
 * "auto" = ceil(hidden_size / 16), dt/B/C RMSNorms of eps rms_norm_eps); every layer keeps
 * input_layernorm, pre_ff_layernorm and its FFN (which layers are MoE: read_moe).
 * Attention has no positional encoding. */
static facet_status read_jamba(reader *r) {
    facet_facts *f = r->f;
    int64_t L = f->num_hidden_layers, H = f->hidden_size;
    f->ssm_version = 1;
    f->ssm_ffn = 1;
    f->ssm_dbc_norm = 1;
    f->no_rope = 1;
    f->ssm_state_size = 16, f->ssm_conv_kernel = 4, f->ssm_expand = 2;
    TRY(get_int(r, "mamba_d_state", 0, 1, 1 << 16, &f->ssm_state_size, NULL));
    TRY(get_int(r, "mamba_d_conv", 0, 1, 1 << 10, &f->ssm_conv_kernel, NULL));
    TRY(get_int(r, "mamba_expand", 0, 1, 1 << 10, &f->ssm_expand, NULL));
    f->ssm_inner = f->ssm_expand * H;
    f->ssm_dt_rank = (H + 15) / 16;
    json_t *v = take(r, "mamba_dt_rank");
    if (v && !json_is_null(v) && !(json_is_string(v) && !strcmp(json_string_value(v), "auto"))) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > MAX_HIDDEN)
            return bad(r, "mamba_dt_rank", v, "\"auto\" or a positive integer");
        f->ssm_dt_rank = (int64_t)json_integer_value(v);
    }
    f->ssm_conv_bias = 1, f->ssm_proj_bias = 0;
    TRY(get_bool(r, "mamba_conv_bias", &f->ssm_conv_bias));
    TRY(get_bool(r, "mamba_proj_bias", &f->ssm_proj_bias));
    /* a kernel choice, and training's or generation's keys */
    static const char *const unread[] = {"use_mamba_kernels", "num_logits_to_keep",
                                         "router_aux_loss_coef", "output_router_logits", NULL};
    for (int i = 0; unread[i]; i++) take(r, unread[i]);
    json_t *sw = take(r, "sliding_window");
    if (sw && !json_is_null(sw)) return bad(r, "sliding_window", sw, "null (no window)");
    int64_t period = 8, offset = 4;
    TRY(get_int(r, "attn_layer_period", 0, 1, FACET_MAX_LAYERS, &period, NULL));
    TRY(get_int(r, "attn_layer_offset", 0, 0, FACET_MAX_LAYERS, &offset, NULL));
    if (offset >= period)
        return bad(r, "attn_layer_offset", json_object_get(r->obj, "attn_layer_offset"),
                   "less than attn_layer_period");
    memset(f->layer_ssm, 0, sizeof f->layer_ssm);
    f->n_ssm_layers = 0;
    layer_kinds_from(f, "attn_layer_period/attn_layer_offset", NULL, NULL);
    for (int64_t i = 0; i < L; i++) {
        f->layer_ssm[i] = i % period == offset ? 0 : 1;
        f->n_ssm_layers += f->layer_ssm[i] != 0;
    }
    return FACET_OK;
}

/* Lfm2Config (transformers models/lfm2/configuration_lfm2.py, modular_lfm2.py): each layer
 * an Lfm2ShortConv ("conv": (B, C, x) = h W_in^T; y = C * conv1d_causal(B * x); y W_out^T,
 * a depthwise conv of conv_L_cache taps over hidden_size channels) or GQA attention with
 * q/k RMSNorm per head ("full_attention"), by layer_types, else full_attn_idxs (absent:
 * every layer attention); every layer has operator_norm, ffn_norm and a SwiGLU FFN of
 * block_ff_dim (or intermediate_size) adjusted as Lfm2MLP does: 2/3, times
 * block_ffn_dim_multiplier, rounded up to block_multiple_of. */
static facet_status read_lfm2(reader *r) {
    facet_facts *f = r->f;
    int64_t L = f->num_hidden_layers, H = f->hidden_size;
    int64_t ff = f->intermediate_size ? f->intermediate_size : 12288;
    TRY(get_int(r, "block_ff_dim", 0, 1, MAX_INTERMEDIATE, &ff, NULL));
    int adjust = 1;
    TRY(get_bool(r, "block_auto_adjust_ff_dim", &adjust));
    int64_t multiple = 256;
    TRY(get_int(r, "block_multiple_of", 0, 1, MAX_INTERMEDIATE, &multiple, NULL));
    double mult = 1.0;
    json_t *mv = take(r, "block_ffn_dim_multiplier");
    int has_mult = mv && !json_is_null(mv);
    TRY(get_num_from(r, mv, "block_ffn_dim_multiplier", 1, &mult));
    if (adjust) {
        ff = (int64_t)(2 * ff / 3.0);
        /* the product is checked as a double: a huge multiplier would overflow int64 */
        double scaled = has_mult ? mult * (double)ff : (double)ff;
        if (!(scaled >= 1 && scaled <= (double)MAX_INTERMEDIATE)) {
            char want[160];
            snprintf(want, sizeof want, "a multiplier making 2/3 x block_ff_dim x it (%lld x "
                     "it) an FFN width in [1, %lld]", (long long)ff, (long long)MAX_INTERMEDIATE);
            TRY(bad(r, "block_ffn_dim_multiplier", mv, want)); /* not strict: noted */
            scaled = ff > 0 ? (double)ff : 1;
        }
        ff = (int64_t)scaled;
        ff = multiple * ((ff + multiple - 1) / multiple);
    }
    f->intermediate_size = ff;
    /* the older checkpoints' widths of the blocks: the modeling code uses hidden_size */
    static const char *const widths[] = {"block_dim", "conv_dim", "conv_dim_out", NULL};
    for (int i = 0; widths[i]; i++) {
        int64_t w = H;
        TRY(get_int(r, widths[i], 0, 1, MAX_HIDDEN, &w, NULL));
        if (w != H)
            return bad(r, widths[i], json_object_get(r->obj, widths[i]), "hidden_size");
    }
    /* keys of the original checkpoints the class never reads (init scales, flags the
     * modeling code fixes: SwiGLU, rotary positions, the norms' eps is norm_eps) */
    static const char *const unread[] = {"block_norm_eps", "block_mlp_init_scale",
                                         "block_out_init_scale", "block_use_swiglu",
                                         "block_use_xavier_init", "conv_use_xavier_init",
                                         "use_pos_enc", "tie_embedding", NULL};
    for (int i = 0; unread[i]; i++) take(r, unread[i]);
    f->ssm_version = 3;
    f->ssm_ffn = 1;
    f->ssm_inner = H;
    f->ssm_state_size = 0;
    f->ssm_conv_kernel = 3;
    TRY(get_int(r, "conv_L_cache", 0, 1, 1 << 10, &f->ssm_conv_kernel, NULL));
    f->ssm_conv_bias = 0;
    TRY(get_bool(r, "conv_bias", &f->ssm_conv_bias));
    f->ssm_proj_bias = f->ssm_conv_bias; /* in_proj and out_proj carry one with the conv */

    memset(f->layer_ssm, 0, sizeof f->layer_ssm);
    f->n_ssm_layers = 0;
    char expected[112];
    json_t *lt = take(r, "layer_types"), *idx = take(r, "full_attn_idxs");
    if (lt && !json_is_null(lt)) {
        layer_kinds_from(f, "layer_types", "full_attention", "conv");
        snprintf(expected, sizeof expected,
                 "an array of num_hidden_layers (%lld) entries \"conv\" or \"full_attention\"",
                 (long long)L);
        if (!json_is_array(lt) || (int64_t)json_array_size(lt) != L)
            return bad(r, "layer_types", lt, expected);
        size_t i;
        json_t *v;
        json_array_foreach(lt, i, v) {
            const char *t = json_is_string(v) ? json_string_value(v) : "";
            if (strcmp(t, "conv") && strcmp(t, "full_attention"))
                return bad(r, "layer_types", lt, expected);
            f->layer_ssm[i] = !strcmp(t, "conv") ? 3 : 0;
        }
    } else if (idx && !json_is_null(idx)) {
        snprintf(expected, sizeof expected, "an array of layer indices in [0, %lld)",
                 (long long)L);
        layer_kinds_from(f, "full_attn_idxs", NULL, NULL);
        if (!json_is_array(idx)) return bad(r, "full_attn_idxs", idx, expected);
        for (int64_t i = 0; i < L; i++) f->layer_ssm[i] = 3;
        size_t i;
        json_t *v;
        json_array_foreach(idx, i, v) {
            if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= L)
                return bad(r, "full_attn_idxs", idx, expected);
            f->layer_ssm[json_integer_value(v)] = 0;
        }
    }
    for (int64_t i = 0; i < L; i++) f->n_ssm_layers += f->layer_ssm[i] != 0;
    return FACET_OK;
}

/* The value of `key`, or of its alias when the config has that (NemotronHConfig's
 * __post_init__ takes the alias over the field). */
static json_t *take_alias(reader *r, const char *key, const char *alias, const char **name) {
    json_t *a = take(r, alias), *v = take(r, key);
    *name = a && !json_is_null(a) ? alias : key;
    return a && !json_is_null(a) ? a : v;
}

static facet_status int_alias(reader *r, const char *key, const char *alias, int64_t max,
                              int64_t *out) {
    const char *name;
    json_t *v = take_alias(r, key, alias, &name);
    if (!v || json_is_null(v)) return FACET_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > max)
        return bad(r, name, v, "a positive integer");
    *out = (int64_t)json_integer_value(v);
    return FACET_OK;
}

/* NemotronHMoE, the "E" layers of NemotronHConfig (transformers models/nemotron_h):
 *   logits = h W_gate^T in float32 (NemotronHTopkRouter), s = sigmoid(logits)
 *   ids = top num_experts_per_tok of s + e_score_correction_bias (n_group groups, the
 *         topk_group best by their top-2 sum kept; the others masked to -inf)
 *   w = s[ids] (/ their sum + 1e-20 when norm_topk_prob) * routed_scaling_factor
 *   y = sum_j w_j down_j(relu2(up_j h)) + down_s(relu2(up_s h))
 * Every expert and the shared expert (one NemotronHMLP of
 * moe_shared_expert_intermediate_size; n_shared_experts is not read by the modeling code)
 * are ungated: the class's ffn_ungated fact. DeepSeek-V3's routing
 * (FACET_ROUTER_GROUPED, sigmoid, score bias) but for its mask: facet_moe_route_grouped
 * masks the dropped groups to 0.0 (DeepseekV3's masked_fill), NemotronH to -inf, which
 * differ once a kept expert's biased score is negative: n_group > 1 is refused by value
 * (NemotronHConfig's default, and the released Nano's, is 1). moe_latent_size (the
 * fc1/fc2_latent_proj projections around the experts) is refused unless null, and
 * mlp_bias (the shared expert's biases) with an "E" layer. Without
 * an "E" layer the keys are read (typed) and no expert fact is set. */
static facet_status read_nemotron_moe(reader *r) {
    facet_facts *f = r->f;
    int64_t E = 8, k = 2, ei = 7688, si = 7688, shared = 1, n_group = 1, topk_group = 1;
    double scale = 1.0;
    int norm = 1;
    TRY(int_alias(r, "n_routed_experts", "num_local_experts", MAX_EXPERTS, &E));
    TRY(get_int(r, "num_experts_per_tok", 0, 1, MAX_EXPERTS_PER_TOK, &k, NULL));
    TRY(get_int(r, "moe_intermediate_size", 0, 1, MAX_INTERMEDIATE, &ei, NULL));
    json_t *sv = json_object_get(r->obj, "moe_shared_expert_intermediate_size");
    if (sv && json_is_null(sv)) /* NemotronHMLP: intermediate_size or config.intermediate_size */
        si = f->intermediate_size;
    TRY(get_int(r, "moe_shared_expert_intermediate_size", 0, 1, MAX_INTERMEDIATE, &si, NULL));
    TRY(get_int(r, "n_shared_experts", 0, 0, MAX_EXPERTS, &shared, NULL));
    TRY(get_num(r, "routed_scaling_factor", 1, &scale));
    TRY(get_int(r, "n_group", 0, 1, MAX_EXPERTS, &n_group, NULL));
    TRY(get_int(r, "topk_group", 0, 1, MAX_EXPERTS, &topk_group, NULL));
    TRY(get_bool(r, "norm_topk_prob", &norm));
    json_t *lat = take(r, "moe_latent_size");
    if (!f->n_sparse_layers) return FACET_OK;
    if (lat && !json_is_null(lat))
        return bad(r, "moe_latent_size", lat,
                   "null (the latent projections around the experts are not built)");
    if (n_group != 1)
        return bad(r, "n_group", json_object_get(r->obj, "n_group"),
                   "1 (NemotronH masks the dropped groups to -inf, which facet's grouped "
                   "router does not)");
    if (topk_group != 1)
        return bad(r, "topk_group", json_object_get(r->obj, "topk_group"), "1 (n_group is 1)");
    if (f->mlp_bias) /* NemotronHMLP's biases: the shared expert's are not loaded */
        return bad(r, "mlp_bias", json_object_get(r->obj, "mlp_bias"),
                   "false with MoE layers (the shared expert's biases are not built)");
    if (k > E)
        return bad(r, "num_experts_per_tok", json_object_get(r->obj, "num_experts_per_tok"),
                   "at most n_routed_experts");
    f->num_experts = E, f->num_experts_per_tok = k, f->moe_intermediate_size = ei;
    f->shared_expert_intermediate_size = si, f->shared_expert_gate = 0, f->n_shared_experts = shared;
    f->routed_scaling_factor = scale, f->norm_topk_prob = norm;
    f->n_group = n_group, f->topk_group = topk_group;
    f->moe_router = FACET_ROUTER_GROUPED, f->moe_sigmoid = 1, f->moe_score_bias = 1;
    snprintf(f->topk_method, sizeof f->topk_method, "noaux_tc");
    snprintf(f->scoring_func, sizeof f->scoring_func, "sigmoid");
    return FACET_OK;
}

/* NemotronHConfig (transformers models/nemotron_h): every layer is x + block(RMSNorm(x))
 * with one block, by hybrid_override_pattern ("M" Mamba-2, "*" attention, "-" MLP) or
 * layers_block_type / layer_types ("linear_attention" / "mamba", "full_attention" /
 * "attention", "mlp", "moe"). The Mamba-2 mixer is mamba_num_heads x mamba_head_dim wide
 * (expand unused) with the gated norm per group of n_groups; attention has no rotary
 * embedding; the MLP is down(relu2(up h)); an "E" layer is NemotronHMoE (read_nemotron_moe). */
static facet_status read_nemotron_h(reader *r) {
    facet_facts *f = r->f;
    int64_t L = f->num_hidden_layers;
    f->ssm_version = 2;
    f->ssm_ffn = 0;
    f->no_rope = 1;
    f->ssm_state_size = 128, f->ssm_heads = 128, f->ssm_head_dim = 64, f->ssm_groups = 8;
    f->ssm_conv_kernel = 4, f->ssm_expand = 2;
    TRY(get_int(r, "ssm_state_size", 0, 1, 1 << 16, &f->ssm_state_size, NULL));
    TRY(get_int(r, "mamba_num_heads", 0, 1, 1 << 20, &f->ssm_heads, NULL));
    TRY(get_int(r, "mamba_head_dim", 0, 1, 1 << 20, &f->ssm_head_dim, NULL));
    TRY(int_alias(r, "n_groups", "mamba_n_groups", 1 << 20, &f->ssm_groups));
    TRY(int_alias(r, "conv_kernel", "mamba_d_conv", 1 << 10, &f->ssm_conv_kernel));
    TRY(int_alias(r, "expand", "mamba_expand", 1 << 10, &f->ssm_expand));
    int64_t chunk = 128;
    TRY(int_alias(r, "chunk_size", "mamba_chunk_size", 1 << 20, &chunk)); /* a kernel choice */
    f->ssm_inner = f->ssm_heads * f->ssm_head_dim;
    if (f->ssm_heads % f->ssm_groups)
        return bad(r, "n_groups", json_object_get(r->obj, "n_groups"), "a divisor of mamba_num_heads");
    const char *name;
    json_t *v = take_alias(r, "use_conv_bias", "mamba_conv_bias", &name);
    f->ssm_conv_bias = 1;
    if (v && !json_is_null(v)) {
        if (!json_is_boolean(v)) return bad(r, name, v, "true or false");
        f->ssm_conv_bias = json_is_true(v);
    }
    int pb = 0, ub = 0;
    TRY(get_bool(r, "mamba_proj_bias", &pb));
    TRY(get_bool(r, "use_bias", &ub));
    f->ssm_proj_bias = pb || ub;
    char act[32] = "silu";
    TRY(get_str(r, "mamba_hidden_act", act, sizeof act, NULL));
    if (strcmp(act, "silu") && strcmp(act, "swish"))
        return bad(r, "mamba_hidden_act", json_object_get(r->obj, "mamba_hidden_act"), "\"silu\"");
    json_t *lim = take_alias(r, "time_step_limit", "mamba_dt_limit", &name);
    if (!no_clamp(lim)) return bad(r, name, lim, "[0.0, inf] (no clamp)");
    /* training and kernel choices (moe_shared_expert_overlap: Megatron's overlap of the
     * shared expert's compute), the multi-token-prediction layers (never run by next-token
     * decoding), the state's own dtype (facet's is float32) */
    static const char *const unread[] = {
        "time_step_min", "time_step_max", "time_step_floor", "mamba_dt_min", "mamba_dt_max",
        "mamba_dt_init_floor", "use_mamba_kernels", "num_logits_to_keep", "residual_in_fp32",
        "rescale_prenorm_residual", "hidden_dropout", "mamba_ssm_cache_dtype",
        "moe_shared_expert_overlap", "num_nextn_predict_layers", "mtp_layers_block_type",
        "mtp_hybrid_override_pattern", NULL};
    json_t *mtp = json_object_get(r->obj, "num_nextn_predict_layers");
    if (json_is_integer(mtp) && json_integer_value(mtp) > 0)
        facet_facts_note(f, "num_nextn_predict_layers=%lld: multi-token-prediction layers are "
                         "read past, not run", (long long)json_integer_value(mtp));
    for (int i = 0; unread[i]; i++) take(r, unread[i]);

    char expected[160];
    snprintf(expected, sizeof expected,
             "num_hidden_layers (%lld) layers of M (Mamba-2), * (attention), - (MLP) or "
             "E (MoE)", (long long)L);
    char kind[FACET_MAX_LAYERS];
    json_t *pat = take(r, "hybrid_override_pattern");
    json_t *list = take(r, "layers_block_type"), *lt = take(r, "layer_types");
    const char *lname = "layers_block_type";
    if (!list || json_is_null(list)) list = lt, lname = "layer_types";
    if (list && !json_is_null(list)) {
        layer_kinds_from(f, lname, NULL, NULL);
        if (!json_is_array(list) || (int64_t)json_array_size(list) != L)
            return bad(r, lname, list, expected);
        size_t i;
        json_t *e;
        json_array_foreach(list, i, e) {
            const char *t = json_is_string(e) ? json_string_value(e) : "";
            kind[i] = !strcmp(t, "linear_attention") || !strcmp(t, "mamba") ? 'M'
                      : !strcmp(t, "full_attention") || !strcmp(t, "attention") ? '*'
                      : !strcmp(t, "mlp") ? '-' : !strcmp(t, "moe") ? 'E' : '?';
            if (kind[i] == '?') return bad(r, lname, list, expected);
        }
    } else if (pat && !json_is_null(pat)) {
        layer_kinds_from(f, "hybrid_override_pattern", "*", "M");
        if (!json_is_string(pat) || (int64_t)json_string_length(pat) != L)
            return bad(r, "hybrid_override_pattern", pat, expected);
        const char *p = json_string_value(pat);
        for (int64_t i = 0; i < L; i++) {
            if (p[i] != 'M' && p[i] != '*' && p[i] != '-' && p[i] != 'E')
                return bad(r, "hybrid_override_pattern", pat, expected);
            kind[i] = p[i];
        }
    } else {
        return missing(r, "hybrid_override_pattern");
    }
    memset(f->layer_ssm, 0, sizeof f->layer_ssm);
    memset(f->layer_sparse, 0, sizeof f->layer_sparse);
    f->n_ssm_layers = f->n_ffn_only_layers = f->n_sparse_layers = 0;
    for (int64_t i = 0; i < L; i++) {
        f->layer_ssm[i] = kind[i] == 'M' ? 2 : 0;
        f->layer_block[i] = kind[i] == '-' || kind[i] == 'E' ? FACET_BLOCK_FFN : FACET_BLOCK_MIXER;
        f->layer_sparse[i] = kind[i] == 'E';
        f->n_ssm_layers += kind[i] == 'M';
        f->n_ffn_only_layers += kind[i] == '-' || kind[i] == 'E';
        f->n_sparse_layers += kind[i] == 'E';
    }
    return read_nemotron_moe(r);
}

facet_status facet_facts_from_json(json_t *config, json_t *gen, const char *what,
                                   facet_facts *f, facet_error *err) {
    memset(f, 0, sizeof *f);
    f->bos_token_id = -1;
    facet_err_clear(err);
    if (!json_is_object(config))
        return facet_err(err, FACET_E_FORMAT, "%s: expected a JSON object, found %s", what,
                         facet_json_type_name(config));

    reader top = {.obj = config, .what = what, .prefix = "", .strict = 1, .f = f, .err = err};
    int present = 0;
    TRY(get_str(&top, "model_type", f->model_type, sizeof f->model_type, &present));
    if (!present)
        return facet_err(err, FACET_E_NOT_FOUND, "%s: required key model_type is missing", what);
    json_t *archs = take(&top, "architectures");
    if (archs && !json_is_null(archs)) {
        json_t *a0 = json_is_array(archs) ? json_array_get(archs, 0) : NULL;
        if (!json_is_array(archs) || (json_array_size(archs) && !json_is_string(a0)))
            return bad(&top, "architectures", archs, "an array of class names");
        if (a0) snprintf(f->architecture, sizeof f->architecture, "%s", json_string_value(a0));
        if (json_array_size(archs) > 1)
            facet_facts_note(f, "architectures lists %zu classes; judged by %s",
                             json_array_size(archs), f->architecture);
    }
    f->family_known = facet_table_has_profile(f->model_type);
    top.strict = f->family_known;

    /* Multimodal wrappers (Gemma 3): the decoder's facts live in text_config. */
    json_t *text = take(&top, "text_config");
    reader r = top;
    if (text && !json_is_null(text)) {
        if (!json_is_object(text)) return bad(&top, "text_config", text, "an object");
        f->text_config = 1;
        r.obj = text;
        r.prefix = "text_config.";
        r.n_consumed = 0;
        TRY(get_str(&r, "model_type", f->text_model_type, sizeof f->text_model_type, NULL));
    }
    const facet_config_class *cls =
        facet_config_class_find(f->text_model_type[0] ? f->text_model_type : f->model_type);

    if (cls->mamba) {
        TRY(read_mamba(&r, cls));
    } else {
        TRY(read_shape(&r, cls));
        TRY(read_block(&r, cls));
        if (cls->falcon_attention) TRY(read_falcon(&r));
        if (cls->glm_attention) TRY(read_glm(&r));
        if (cls->mpt) TRY(read_mpt(&r));
        if (cls->baichuan) TRY(read_baichuan(&r));
        if (cls->hybrid == 1 || cls->hybrid == 4) TRY(read_hybrid(&r, cls));
        if (cls->hybrid == 2) TRY(read_lfm2(&r));
        if (cls->hybrid == 3) TRY(read_nemotron_h(&r));
        if (cls->hybrid == 5) TRY(read_jamba(&r));
        if (cls->hybrid == 6) TRY(read_falcon_h1(&r));
        if (cls->hybrid == 7) TRY(read_qwen3_next(&r));
    }
    TRY(read_rope(&r, cls));
    TRY(read_window(&r, cls));
    TRY(read_no_rope(&r, cls));
    TRY(read_moe(&r, cls));
    TRY(read_mla(&r, cls));

    f->tie_word_embeddings = cls->tie_word_embeddings;
    if (f->text_config) {
        /* the wrapper's flag and the decoder's: older transformers tie by the first,
         * newer ones by the second (get_text_config(decoder=True)) */
        json_t *a = json_object_get(config, "tie_word_embeddings");
        json_t *b = json_object_get(text, "tie_word_embeddings");
        if (json_is_boolean(a) && json_is_boolean(b) && !same_value(a, b, 0))
            TRY(conflict(&top, "tie_word_embeddings", a, "text_config.tie_word_embeddings", b,
                         "older transformers tie by the first, newer ones by the second"));
        TRY(get_bool(&top, "tie_word_embeddings", &f->tie_word_embeddings));
    }
    TRY(get_bool(&r, "tie_word_embeddings", &f->tie_word_embeddings));
    f->tie_word_embeddings_given =
        json_is_boolean(json_object_get(r.obj, "tie_word_embeddings")) ||
        (f->text_config && json_is_boolean(json_object_get(config, "tie_word_embeddings")));
    if (f->lm_head_l2_norm && f->tie_word_embeddings) /* Baichuan 2 (read_baichuan) */
        TRY(bad(&r, "tie_word_embeddings", json_object_get(r.obj, "tie_word_embeddings"),
                "false (NormHead normalises the lm_head rows, which tying would share with "
                "the embeddings)"));

    /* stop ids: config (text object, then the wrapper), then generation_config */
    TRY(read_bos(&r, what, take(&r, "bos_token_id")));
    TRY(add_eos(&r, what, take(&r, "eos_token_id")));
    if (f->text_config) {
        TRY(read_bos(&top, what, take(&top, "bos_token_id")));
        TRY(add_eos(&top, what, take(&top, "eos_token_id")));
    }
    if (gen) {
        if (!json_is_object(gen))
            return facet_err(err, FACET_E_FORMAT, "generation_config.json: expected a JSON "
                             "object, found %s", facet_json_type_name(gen));
        reader g = {.obj = gen, .what = "generation_config.json", .prefix = "",
                    .strict = top.strict, .f = f, .err = err};
        TRY(read_bos(&g, g.what, json_object_get(gen, "bos_token_id")));
        TRY(add_eos(&g, g.what, json_object_get(gen, "eos_token_id")));
    }

    keep_unconsumed(&r);
    if (f->text_config) keep_unconsumed(&top);
    return FACET_OK;
}

facet_status facet_facts_read(const char *dir, facet_facts *f, facet_error *err) {
    char cfg_path[4096], gen_path[4096];
    memset(f, 0, sizeof *f);
    f->bos_token_id = -1;
    if (!facet_is_dir(dir) && !facet_is_file(dir))
        return facet_err(err, FACET_E_IO, "%s: no such file or folder (expected a checkpoint "
                         "folder, its config.json or a .gguf file)", dir);
    if (facet_is_dir(dir)) {
        if (!facet_path_join(cfg_path, sizeof cfg_path, dir, "config.json") ||
            !facet_path_join(gen_path, sizeof gen_path, dir, "generation_config.json"))
            return facet_err(err, FACET_E_INVALID_ARGUMENT, "%s: path too long", dir);
    } else {
        snprintf(cfg_path, sizeof cfg_path, "%s", dir);
        const char *slash = strrchr(dir, '/');
        int n = slash ? (int)(slash - dir) : 1;
        snprintf(gen_path, sizeof gen_path, "%.*s/generation_config.json", n,
                 slash ? dir : ".");
    }
    if (!facet_is_file(cfg_path))
        return facet_err(err, FACET_E_IO, "%s: no config.json (expected a checkpoint folder "
                         "or a config.json file)", cfg_path);
    json_t *config = NULL, *gen = NULL;
    facet_status st = facet_json_load_file(cfg_path, CONFIG_MAX_BYTES, &config, err);
    if (st != FACET_OK) return st;
    if (facet_is_file(gen_path)) {
        st = facet_json_load_file(gen_path, CONFIG_MAX_BYTES, &gen, err);
        if (st != FACET_OK) {
            json_decref(config);
            return st;
        }
    }
    st = facet_facts_from_json(config, gen, cfg_path, f, err);
    json_decref(config);
    json_decref(gen);
    return st;
}
