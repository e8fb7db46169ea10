/*
 * gguf.c — parsing and validating one GGUF file (see gguf.h for the layout and rules).
 *
 * Nothing in the file is trusted. A cursor walks the header; every read first checks
 * the bytes left, every count is bounded by the bytes its smallest elements would need
 * before anything is allocated or walked, and every size product is overflow-checked.
 * The split-model reader (several parts) is gguf_model.c.
 */
#include "io/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"
#include "util/fs.h"

/* ---- the ggml type table ------------------------------------------------------------
 * Bytes per block follow ggml's block structs: e.g. Q4_0 = f16 scale + 16 bytes of
 * nibbles (18 per 32 weights); Q4_K = two f16 + 12 scale bytes + 128 nibble bytes (144
 * per 256); Q6_K = 128 + 64 + 16 + f16 (210 per 256). */
static const struct {
    const char *name;
    uint32_t block, bytes;
} TYPES[GGML_TYPE_COUNT] = {
    [GGML_F32] = {"F32", 1, 4},          [GGML_F16] = {"F16", 1, 2},
    [GGML_Q4_0] = {"Q4_0", 32, 18},      [GGML_Q4_1] = {"Q4_1", 32, 20},
    [GGML_Q5_0] = {"Q5_0", 32, 22},      [GGML_Q5_1] = {"Q5_1", 32, 24},
    [GGML_Q8_0] = {"Q8_0", 32, 34},      [GGML_Q8_1] = {"Q8_1", 32, 36},
    [GGML_Q2_K] = {"Q2_K", 256, 84},     [GGML_Q3_K] = {"Q3_K", 256, 110},
    [GGML_Q4_K] = {"Q4_K", 256, 144},    [GGML_Q5_K] = {"Q5_K", 256, 176},
    [GGML_Q6_K] = {"Q6_K", 256, 210},    [GGML_Q8_K] = {"Q8_K", 256, 292},
    [GGML_IQ2_XXS] = {"IQ2_XXS", 256, 66}, [GGML_IQ2_XS] = {"IQ2_XS", 256, 74},
    [GGML_IQ3_XXS] = {"IQ3_XXS", 256, 98}, [GGML_IQ1_S] = {"IQ1_S", 256, 50},
    [GGML_IQ4_NL] = {"IQ4_NL", 32, 18},  [GGML_IQ3_S] = {"IQ3_S", 256, 110},
    [GGML_IQ2_S] = {"IQ2_S", 256, 82},   [GGML_IQ4_XS] = {"IQ4_XS", 256, 136},
    [GGML_I8] = {"I8", 1, 1},            [GGML_I16] = {"I16", 1, 2},
    [GGML_I32] = {"I32", 1, 4},          [GGML_I64] = {"I64", 1, 8},
    [GGML_F64] = {"F64", 1, 8},          [GGML_IQ1_M] = {"IQ1_M", 256, 56},
    [GGML_BF16] = {"BF16", 1, 2},        [GGML_TQ1_0] = {"TQ1_0", 256, 54},
    [GGML_TQ2_0] = {"TQ2_0", 256, 66},   [GGML_MXFP4] = {"MXFP4", 32, 17},
};

int gguf_type_known(uint32_t t) { return t < GGML_TYPE_COUNT && TYPES[t].name != NULL; }
const char *gguf_type_name(uint32_t t) { return gguf_type_known(t) ? TYPES[t].name : NULL; }
uint32_t gguf_type_block(uint32_t t) { return gguf_type_known(t) ? TYPES[t].block : 0; }
uint32_t gguf_type_block_bytes(uint32_t t) { return gguf_type_known(t) ? TYPES[t].bytes : 0; }

int gguf_type_from_name(const char *name) {
    for (int i = 0; i < GGML_TYPE_COUNT; i++)
        if (TYPES[i].name && !strcmp(TYPES[i].name, name)) return i;
    return -1;
}

/* ---- value types --------------------------------------------------------------------- */
static const char *const VTYPE_NAMES[GGUF_T_COUNT] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64",
    "f64"};
static const uint8_t VTYPE_SIZE[GGUF_T_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

const char *gguf_vtype_name(uint32_t t) { return t < GGUF_T_COUNT ? VTYPE_NAMES[t] : "?"; }

/* ---- the cursor ----------------------------------------------------------------------- */
typedef struct cursor {
    const uint8_t *buf;
    uint64_t size, pos;
    const char *what;
    facet_error *err;
} cursor;

static uint64_t le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static uint64_t left(const cursor *c) { return c->size - c->pos; }

/* `n` bytes for `ctx` must remain. */
static facet_status need(cursor *c, uint64_t n, const char *ctx) {
    if (n <= left(c)) return FACET_OK;
    return facet_err(c->err, FACET_E_FORMAT,
                     "%s: truncated: %s needs %" PRIu64 " bytes at offset %" PRIu64
                     " but the file ends %" PRIu64 " bytes later",
                     c->what, ctx, n, c->pos, left(c));
}

static facet_status rd(cursor *c, int n, const char *ctx, uint64_t *out) {
    facet_status st = need(c, (uint64_t)n, ctx);
    if (st != FACET_OK) return st;
    *out = le(c->buf + c->pos, n);
    c->pos += (uint64_t)n;
    return FACET_OK;
}

/* A string: u64 length, bytes. `ctx` names it in messages. */
static facet_status rd_str(cursor *c, const char *ctx, const uint8_t **s, uint64_t *len) {
    uint64_t n;
    char buf[200];
    snprintf(buf, sizeof buf, "the length of %.150s", ctx);
    facet_status st = rd(c, 8, buf, &n);
    if (st != FACET_OK) return st;
    if (n > left(c))
        return facet_err(c->err, FACET_E_FORMAT,
                         "%s: %s has length %" PRIu64 " at offset %" PRIu64
                         ", past the end of the file (%" PRIu64 " bytes remain)",
                         c->what, ctx, n, c->pos - 8, left(c));
    *s = c->buf + c->pos;
    *len = n;
    c->pos += n;
    return FACET_OK;
}

#define TRY(x)                                 \
    do {                                       \
        facet_status st_ = (x);                \
        if (st_ != FACET_OK) return st_;       \
    } while (0)

/* Walk one value of type `t` (for key `key`), checking its bytes and bools. */
static facet_status skip_value(cursor *c, uint32_t t, int depth, const char *key) {
    char ctx[160];
    if (t >= GGUF_T_COUNT)
        return facet_err(c->err, FACET_E_FORMAT,
                         "%s: key '%s' has value type %" PRIu32 ", expected 0..12 (u8 .. f64)",
                         c->what, key, t);
    if (t == GGUF_T_STRING) {
        const uint8_t *s;
        uint64_t n;
        snprintf(ctx, sizeof ctx, "a string value of key '%s'", key);
        return rd_str(c, ctx, &s, &n);
    }
    if (t == GGUF_T_BOOL) {
        snprintf(ctx, sizeof ctx, "the bool value of key '%s'", key);
        TRY(need(c, 1, ctx));
        uint8_t b = c->buf[c->pos++];
        if (b > 1)
            return facet_err(c->err, FACET_E_FORMAT,
                             "%s: key '%s': bool value %u at offset %" PRIu64 ", expected 0 or 1",
                             c->what, key, b, c->pos - 1);
        return FACET_OK;
    }
    if (t != GGUF_T_ARRAY) {
        snprintf(ctx, sizeof ctx, "the %s value of key '%s'", VTYPE_NAMES[t], key);
        TRY(need(c, VTYPE_SIZE[t], ctx));
        c->pos += VTYPE_SIZE[t];
        return FACET_OK;
    }
    if (depth >= GGUF_MAX_ARRAY_DEPTH)
        return facet_err(c->err, FACET_E_FORMAT,
                         "%s: key '%s': arrays nested deeper than %d levels", c->what, key,
                         GGUF_MAX_ARRAY_DEPTH);
    uint64_t at, n;
    snprintf(ctx, sizeof ctx, "the array header of key '%s'", key);
    TRY(rd(c, 4, ctx, &at));
    TRY(rd(c, 8, ctx, &n));
    if (at >= GGUF_T_COUNT)
        return facet_err(c->err, FACET_E_FORMAT,
                         "%s: key '%s': array element type %" PRIu64 ", expected 0..12 (u8 .. f64)",
                         c->what, key, at);
    /* the least bytes one element takes: a fixed size, 8 (string length), 12 (array) */
    uint64_t min = at == GGUF_T_STRING ? 8 : at == GGUF_T_ARRAY ? 12 : VTYPE_SIZE[at];
    if (n > left(c) / min)
        return facet_err(c->err, FACET_E_FORMAT,
                         "%s: key '%s': array of %" PRIu64 " %s elements needs at least %" PRIu64
                         " bytes each but %" PRIu64 " bytes remain",
                         c->what, key, n, VTYPE_NAMES[at], min, left(c));
    if (at != GGUF_T_STRING && at != GGUF_T_ARRAY && at != GGUF_T_BOOL) {
        c->pos += n * min;
        return FACET_OK;
    }
    for (uint64_t i = 0; i < n; i++) TRY(skip_value(c, (uint32_t)at, depth + 1, key));
    return FACET_OK;
}

/* A key or tensor name: non-empty, no NUL byte, at most `max` bytes. Copied to *out. */
static facet_status take_name(cursor *c, const char *kind, uint64_t index, uint64_t max,
                              char **out) {
    const uint8_t *s = NULL;
    uint64_t n = 0;
    char ctx[64];
    snprintf(ctx, sizeof ctx, "%s #%" PRIu64 "'s name", kind, index);
    TRY(rd_str(c, ctx, &s, &n));
    if (n == 0)
        return facet_err(c->err, FACET_E_FORMAT, "%s: %s #%" PRIu64 " has an empty name",
                         c->what, kind, index);
    if (memchr(s, 0, n))
        return facet_err(c->err, FACET_E_FORMAT,
                         "%s: %s #%" PRIu64 "'s name '%.*s...' holds a NUL byte", c->what,
                         kind, index, (int)strnlen((const char *)s, 64), (const char *)s);
    if (n > max)
        return facet_err(c->err, FACET_E_FORMAT,
                         "%s: %s '%.64s...' has a name of %" PRIu64
                         " bytes, expected at most %" PRIu64,
                         c->what, kind, (const char *)s, n, max);
    *out = malloc(n + 1);
    if (!*out) return facet_err(c->err, FACET_E_NOMEM, "%s: out of memory", c->what);
    memcpy(*out, s, n);
    (*out)[n] = 0;
    return FACET_OK;
}

static int cmp_str_ptr(const void *a, const void *b) {
    return strcmp(**(char *const *const *)a, **(char *const *const *)b);
}

/* First name given twice among n names at stride `stride` from `first` (NULL: none). */
static const char *duplicate(const void *first, size_t n, size_t stride, int *nomem) {
    const char ***order = malloc((n ? n : 1) * sizeof *order);
    *nomem = order == NULL;
    if (!order) return NULL;
    for (size_t i = 0; i < n; i++) order[i] = (const char **)((const char *)first + i * stride);
    qsort(order, n, sizeof *order, cmp_str_ptr);
    const char *dup = NULL;
    for (size_t i = 1; i < n && !dup; i++)
        if (!strcmp(*order[i], *order[i - 1])) dup = *order[i];
    free(order);
    return dup;
}

void gguf_file_close(gguf_file *f) {
    if (!f) return;
    for (size_t i = 0; i < f->n_kv; i++) free(f->kv[i].key);
    for (size_t i = 0; i < f->n_tensors; i++) free(f->tensors[i].name);
    free(f->kv);
    free(f->tensors);
    free(f->path);
    if (f->map) munmap(f->map, f->map_size);
    memset(f, 0, sizeof *f);
}

static facet_status parse_kvs(cursor *c, gguf_file *out, uint64_t n_kv) {
    for (uint64_t i = 0; i < n_kv; i++) {
        gguf_kv *kv = &out->kv[i];
        TRY(take_name(c, "key", i, UINT64_MAX, &kv->key));
        out->n_kv++;
        uint64_t t;
        char ctx[128];
        snprintf(ctx, sizeof ctx, "the value type of key '%.64s'", kv->key);
        TRY(rd(c, 4, ctx, &t));
        kv->type = (uint32_t)t;
        uint64_t start = c->pos;
        if (t == GGUF_T_ARRAY) { /* peek at the element type and count */
            if (left(c) >= 12) {
                kv->arr_type = (uint32_t)le(c->buf + c->pos, 4);
                kv->arr_n = le(c->buf + c->pos + 4, 8);
            }
        }
        TRY(skip_value(c, (uint32_t)t, 0, kv->key));
        if (t == GGUF_T_ARRAY) start += 12;
        else if (t == GGUF_T_STRING) start += 8;
        kv->val = c->buf + start;
        kv->val_len = c->pos - start;
    }
    return FACET_OK;
}

/* "[256, 512]" */
static const char *ne_str(const int64_t *ne, int n, char *buf, size_t cap) {
    size_t len = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%" PRId64, i ? ", " : "", ne[i]);
    if (len < cap) snprintf(buf + len, cap - len, "]");
    return buf;
}

static facet_status parse_tensor_info(cursor *c, gguf_tensor *t) {
    char ctx[128], sb[128];
    snprintf(ctx, sizeof ctx, "the info of tensor '%s'", t->name);
    uint64_t nd;
    TRY(rd(c, 4, ctx, &nd));
    if (nd < 1 || nd > GGUF_MAX_DIMS)
        return facet_err(c->err, FACET_E_FORMAT,
                         "%s: tensor '%s' has n_dims %" PRIu64 ", expected 1..%d", c->what,
                         t->name, nd, GGUF_MAX_DIMS);
    t->n_dims = (int)nd;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (int d = 0; d < (int)nd; d++) {
        uint64_t v;
        TRY(rd(c, 8, ctx, &v));
        if (v > (uint64_t)INT64_MAX)
            return facet_err(c->err, FACET_E_FORMAT,
                             "%s: tensor '%s' has ne[%d] = %" PRIu64 ", expected at most %" PRId64,
                             c->what, t->name, d, v, INT64_MAX);
        t->ne[d] = (int64_t)v;
    }
    uint64_t type, off;
    TRY(rd(c, 4, ctx, &type));
    TRY(rd(c, 8, ctx, &off));
    t->offset = off;
    if (!gguf_type_known((uint32_t)type)) /* rd of 4 bytes: type fits uint32 */
        return facet_err(c->err, FACET_E_FORMAT,
                         "%s: tensor '%s' has type id %" PRIu64
                         ", which is no ggml type (known: 0..%d less the removed 4, 5, 31-33, "
                         "36-38)",
                         c->what, t->name, type, GGML_TYPE_COUNT - 1);
    t->type = (uint32_t)type;
    uint32_t blk = TYPES[type].block, bytes = TYPES[type].bytes;
    ne_str(t->ne, t->n_dims, sb, sizeof sb);
    if (t->ne[0] % blk)
        return facet_err(c->err, FACET_E_FORMAT,
                         "%s: tensor '%s' of type %s has ne %s: ne[0] = %" PRId64
                         " is not a multiple of the type's block of %" PRIu32,
                         c->what, t->name, TYPES[type].name, sb, t->ne[0], blk);
    /* elements fit in int64 (as ggml counts them); bytes fit in uint64 */
    uint64_t numel = 1, rows_bytes = (uint64_t)(t->ne[0] / blk) * bytes;
    int zero = 0;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) zero |= t->ne[d] == 0;
    for (int d = 0; d < GGUF_MAX_DIMS && !zero; d++) {
        uint64_t v = (uint64_t)t->ne[d];
        if (numel > (uint64_t)INT64_MAX / v)
            return facet_err(c->err, FACET_E_FORMAT,
                             "%s: tensor '%s' has ne %s, whose product overflows 64 bits",
                             c->what, t->name, sb);
        numel *= v;
        if (d > 0) {
            if (rows_bytes > UINT64_MAX / v)
                return facet_err(c->err, FACET_E_FORMAT,
                                 "%s: tensor '%s' has ne %s, whose byte size as %s overflows "
                                 "64 bits",
                                 c->what, t->name, sb, TYPES[type].name);
            rows_bytes *= v;
        }
    }
    t->nbytes = zero ? 0 : rows_bytes;
    return FACET_OK;
}

/* Pad x up to a multiple of a (a power of two); 0 on overflow. */
static int pad_to(uint64_t x, uint64_t a, uint64_t *out) {
    if (x > UINT64_MAX - (a - 1)) return 0;
    *out = (x + a - 1) & ~(a - 1);
    return 1;
}

static facet_status check_alignment_key(cursor *c, gguf_file *out) {
    out->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv *kv = gguf_find_kv(out, "general.alignment");
    if (!kv) return FACET_OK;
    if (kv->type != GGUF_T_UINT32)
        return facet_err(c->err, FACET_E_FORMAT,
                         "%s: key general.alignment is a %s, expected a u32 power of two",
                         c->what, gguf_vtype_name(kv->type));
    uint64_t a = le(kv->val, 4);
    if (a == 0 || (a & (a - 1)) || a > (1u << 30))
        return facet_err(c->err, FACET_E_FORMAT,
                         "%s: key general.alignment is %" PRIu64
                         ", expected a power of two from 1 to 2^30",
                         c->what, a);
    out->alignment = a;
    return FACET_OK;
}

/* Offsets: aligned, inside the file, and each tensor where the previous one's padded
 * data ends (llama.cpp's gguf reader computes them so and refuses any other layout). */
static facet_status check_layout(cursor *c, gguf_file *out) {
    uint64_t a = out->alignment, data = 0, expect = 0;
    if (!pad_to(c->pos, a, &data) || (data > c->size && out->n_tensors))
        return facet_err(c->err, FACET_E_FORMAT,
                         "%s: truncated: the data section would start at offset %" PRIu64
                         " (header end %" PRIu64 " padded to general.alignment %" PRIu64
                         ") but the file is %" PRIu64 " bytes",
                         c->what, data, c->pos, a, c->size);
    out->data_offset = data;
    uint64_t data_size = data <= c->size ? c->size - data : 0;
    for (size_t i = 0; i < out->n_tensors; i++) {
        gguf_tensor *t = &out->tensors[i];
        if (t->offset % a)
            return facet_err(c->err, FACET_E_FORMAT,
                             "%s: tensor '%s' has offset %" PRIu64
                             ", not a multiple of general.alignment %" PRIu64,
                             c->what, t->name, t->offset, a);
        if (t->offset > data_size || t->nbytes > data_size - t->offset)
            return facet_err(c->err, FACET_E_FORMAT,
                             "%s: tensor '%s' (%s, %" PRIu64 " bytes at offset %" PRIu64
                             ") runs past the end of the file: the data section holds %" PRIu64
                             " bytes",
                             c->what, t->name, TYPES[t->type].name, t->nbytes, t->offset,
                             data_size);
        if (t->offset != expect)
            return facet_err(c->err, FACET_E_FORMAT,
                             "%s: tensor '%s' has offset %" PRIu64 ", expected %" PRIu64
                             " (where the previous tensor's data, padded to %" PRIu64 ", ends)",
                             c->what, t->name, t->offset, expect, a);
        if (!pad_to(t->offset + t->nbytes, a, &expect))
            return facet_err(c->err, FACET_E_FORMAT, "%s: tensor '%s': offsets overflow",
                             c->what, t->name);
        t->data = c->buf + data + t->offset;
    }
    return FACET_OK;
}

facet_status gguf_parse(const uint8_t *buf, size_t size, const char *what, gguf_file *out,
                        facet_error *err) {
    memset(out, 0, sizeof *out);
    cursor c = {.buf = buf, .size = size, .pos = 0, .what = what, .err = err};
    if (size < 4 || memcmp(buf, GGUF_MAGIC, 4))
        return facet_err(err, FACET_E_FORMAT,
                         "%s: bad magic %s%02x %02x %02x %02x, expected \"GGUF\" (47 47 55 46)",
                         what, size < 4 ? "(file shorter than 4 bytes) " : "",
                         size > 0 ? buf[0] : 0, size > 1 ? buf[1] : 0, size > 2 ? buf[2] : 0,
                         size > 3 ? buf[3] : 0);
    c.pos = 4;
    uint64_t version, n_tensors, n_kv;
    TRY(rd(&c, 4, "the version", &version));
    if (version != GGUF_VERSION) {
        if ((version & 0xFFFF) == 0 && version)
            return facet_err(err, FACET_E_FORMAT,
                             "%s: version 0x%08" PRIx64
                             " reads as a big-endian GGUF file; expected little-endian "
                             "version 3",
                             what, version);
        return facet_err(err, FACET_E_FORMAT, "%s: GGUF version %" PRIu64 ", expected 3%s",
                         what, version,
                         version == 1 || version == 2 ? " (versions 1 and 2 are not read)" : "");
    }
    out->version = (uint32_t)version;
    TRY(rd(&c, 8, "the tensor count", &n_tensors));
    TRY(rd(&c, 8, "the metadata count", &n_kv));
    /* each pair takes at least 8 + 1 + 4 + 1 bytes, each tensor info 8 + 1 + 4 + 8 + 4 + 8 */
    if (n_kv > left(&c) / 14)
        return facet_err(err, FACET_E_FORMAT,
                         "%s: metadata count %" PRIu64 " needs at least %d bytes each but %" PRIu64
                         " bytes remain",
                         what, n_kv, 14, left(&c));
    if (n_tensors > left(&c) / 33)
        return facet_err(err, FACET_E_FORMAT,
                         "%s: tensor count %" PRIu64 " needs at least %d bytes each but %" PRIu64
                         " bytes remain",
                         what, n_tensors, 33, left(&c));
    out->path = strdup(what);
    out->kv = calloc(n_kv ? n_kv : 1, sizeof *out->kv);
    out->tensors = calloc(n_tensors ? n_tensors : 1, sizeof *out->tensors);
    facet_status st = FACET_OK;
    if (!out->path || !out->kv || !out->tensors)
        st = facet_err(err, FACET_E_NOMEM, "%s: out of memory", what);
    if (st == FACET_OK) st = parse_kvs(&c, out, n_kv);
    int nomem = 0;
    const char *dup = NULL;
    if (st == FACET_OK && (dup = duplicate(&out->kv[0].key, out->n_kv, sizeof *out->kv, &nomem)))
        st = facet_err(err, FACET_E_FORMAT, "%s: key '%s' is given twice; keys must be unique",
                       what, dup);
    if (st == FACET_OK && nomem) st = facet_err(err, FACET_E_NOMEM, "%s: out of memory", what);
    if (st == FACET_OK) st = check_alignment_key(&c, out);
    for (uint64_t i = 0; st == FACET_OK && i < n_tensors; i++) {
        gguf_tensor *t = &out->tensors[i];
        st = take_name(&c, "tensor", i, GGUF_MAX_NAME, &t->name);
        if (st != FACET_OK) break;
        out->n_tensors++;
        st = parse_tensor_info(&c, t);
    }
    if (st == FACET_OK &&
        (dup = duplicate(&out->tensors[0].name, out->n_tensors, sizeof *out->tensors, &nomem)))
        st = facet_err(err, FACET_E_FORMAT,
                       "%s: tensor '%s' is named twice; tensor names must be unique", what, dup);
    if (st == FACET_OK && nomem) st = facet_err(err, FACET_E_NOMEM, "%s: out of memory", what);
    if (st == FACET_OK) st = check_layout(&c, out);
    if (st != FACET_OK) gguf_file_close(out);
    return st;
}

/* gguf_parse behind the parser type of facet_map_parse. */
static facet_status parse_file(const uint8_t *buf, size_t size, const char *what, void *out,
                               facet_error *err) {
    return gguf_parse(buf, size, what, out, err);
}

facet_status gguf_open(const char *path, gguf_file *out, facet_error *err) {
    memset(out, 0, sizeof *out);
    return facet_map_parse(path, parse_file, out, &out->map, &out->map_size, err);
}

const gguf_kv *gguf_find_kv(const gguf_file *f, const char *key) {
    for (size_t i = 0; i < f->n_kv; i++)
        if (!strcmp(f->kv[i].key, key)) return &f->kv[i];
    return NULL;
}

const gguf_tensor *gguf_file_find(const gguf_file *f, const char *name) {
    for (size_t i = 0; i < f->n_tensors; i++)
        if (!strcmp(f->tensors[i].name, name)) return &f->tensors[i];
    return NULL;
}

/* ---- typed reads ------------------------------------------------------------------- */
int gguf_kv_is_int(const gguf_kv *kv) {
    switch (kv->type) {
    case GGUF_T_UINT8: case GGUF_T_INT8: case GGUF_T_UINT16: case GGUF_T_INT16:
    case GGUF_T_UINT32: case GGUF_T_INT32: case GGUF_T_UINT64: case GGUF_T_INT64: return 1;
    default: return 0;
    }
}

/* A scalar integer: *u for the unsigned types, *s for the signed ones. */
static int kv_int(const gguf_kv *kv, int *is_signed, uint64_t *u, int64_t *s) {
    if (!gguf_kv_is_int(kv)) return 0;
    int n = VTYPE_SIZE[kv->type];
    uint64_t raw = le(kv->val, n);
    *is_signed = kv->type == GGUF_T_INT8 || kv->type == GGUF_T_INT16 ||
                 kv->type == GGUF_T_INT32 || kv->type == GGUF_T_INT64;
    if (*is_signed) {
        if (n < 8 && (raw >> (8 * n - 1)) & 1) raw |= ~0ull << (8 * n); /* sign-extend */
        memcpy(s, &raw, 8);
    }
    *u = raw;
    return 1;
}

double gguf_kv_number(const gguf_kv *kv) {
    int sg;
    uint64_t u;
    int64_t s;
    if (kv_int(kv, &sg, &u, &s)) return sg ? (double)s : (double)u;
    if (kv->type == GGUF_T_FLOAT32) {
        uint32_t b = (uint32_t)le(kv->val, 4);
        float f;
        memcpy(&f, &b, 4);
        return f;
    }
    if (kv->type == GGUF_T_FLOAT64) {
        uint64_t b = le(kv->val, 8);
        double d;
        memcpy(&d, &b, 8);
        return d;
    }
    if (kv->type == GGUF_T_BOOL) return kv->val[0];
    return 0;
}

void gguf_kv_render(const gguf_kv *kv, char *buf, size_t cap) {
    int sg;
    uint64_t u;
    int64_t s;
    if (kv_int(kv, &sg, &u, &s)) {
        if (sg) snprintf(buf, cap, "%" PRId64, s);
        else snprintf(buf, cap, "%" PRIu64, u);
    } else if (kv->type == GGUF_T_FLOAT32 || kv->type == GGUF_T_FLOAT64) {
        snprintf(buf, cap, "%.9g", gguf_kv_number(kv));
    } else if (kv->type == GGUF_T_BOOL) {
        snprintf(buf, cap, "%s", kv->val[0] ? "true" : "false");
    } else if (kv->type == GGUF_T_STRING) {
        int n = kv->val_len > 48 ? 48 : (int)kv->val_len;
        snprintf(buf, cap, "\"%.*s%s\"", n, (const char *)kv->val, kv->val_len > 48 ? "..." : "");
    } else {
        snprintf(buf, cap, "[%s x %" PRIu64 "]", gguf_vtype_name(kv->arr_type), kv->arr_n);
    }
}

static facet_status wrong_type(const gguf_file *f, const gguf_kv *kv, const char *expected,
                               facet_error *err) {
    char v[80];
    gguf_kv_render(kv, v, sizeof v);
    return facet_err(err, FACET_E_FORMAT, "%s: key %s is %s (a %s), expected %s", f->path,
                     kv->key, v, gguf_vtype_name(kv->type), expected);
}

static const gguf_kv *lookup(const gguf_file *f, const char *key, int required,
                             int *present, facet_status *st, facet_error *err) {
    const gguf_kv *kv = gguf_find_kv(f, key);
    if (present) *present = kv != NULL;
    *st = FACET_OK;
    if (!kv && required)
        *st = facet_err(err, FACET_E_NOT_FOUND, "%s: required key %s is missing", f->path, key);
    return kv;
}

facet_status gguf_get_int(const gguf_file *f, const char *key, int required, int64_t min,
                          int64_t max, int64_t *out, int *present, facet_error *err) {
    facet_status st;
    const gguf_kv *kv = lookup(f, key, required, present, &st, err);
    if (!kv) return st;
    char expected[96];
    snprintf(expected, sizeof expected, "an integer in %" PRId64 "..%" PRId64, min, max);
    int sg;
    uint64_t u;
    int64_t s;
    if (!kv_int(kv, &sg, &u, &s)) return wrong_type(f, kv, expected, err);
    if (!sg) {
        if (u > (uint64_t)INT64_MAX) return wrong_type(f, kv, expected, err);
        s = (int64_t)u;
    }
    if (s < min || s > max) return wrong_type(f, kv, expected, err);
    *out = s;
    return FACET_OK;
}

facet_status gguf_get_float(const gguf_file *f, const char *key, int required, int positive,
                            double *out, int *present, facet_error *err) {
    facet_status st;
    const gguf_kv *kv = lookup(f, key, required, present, &st, err);
    if (!kv) return st;
    const char *expected = positive ? "a positive f32 or f64" : "a finite f32 or f64";
    if (kv->type != GGUF_T_FLOAT32 && kv->type != GGUF_T_FLOAT64)
        return wrong_type(f, kv, expected, err);
    double x = gguf_kv_number(kv);
    if (!isfinite(x) || (positive && !(x > 0))) return wrong_type(f, kv, expected, err);
    *out = x;
    return FACET_OK;
}

facet_status gguf_get_bool(const gguf_file *f, const char *key, int required, int *out,
                           int *present, facet_error *err) {
    facet_status st;
    const gguf_kv *kv = lookup(f, key, required, present, &st, err);
    if (!kv) return st;
    if (kv->type != GGUF_T_BOOL) return wrong_type(f, kv, "a bool", err);
    *out = kv->val[0] != 0;
    return FACET_OK;
}

facet_status gguf_get_str(const gguf_file *f, const char *key, int required, const char **s,
                          uint64_t *len, int *present, facet_error *err) {
    facet_status st;
    const gguf_kv *kv = lookup(f, key, required, present, &st, err);
    if (!kv) return st;
    if (kv->type != GGUF_T_STRING) return wrong_type(f, kv, "a string", err);
    *s = (const char *)kv->val;
    *len = kv->val_len;
    return FACET_OK;
}

int gguf_arr_str_next(const gguf_kv *kv, uint64_t *pos, const char **s, uint64_t *len) {
    if (kv->type != GGUF_T_ARRAY || kv->arr_type != GGUF_T_STRING) return 0;
    if (*pos + 8 > kv->val_len) return 0; /* validated at parse: lengths stay inside */
    uint64_t n = le(kv->val + *pos, 8);
    *s = (const char *)kv->val + *pos + 8;
    *len = n;
    *pos += 8 + n;
    return 1;
}

int gguf_arr_str(const gguf_kv *kv, uint64_t i, const char **s, uint64_t *len) {
    if (kv->type != GGUF_T_ARRAY || kv->arr_type != GGUF_T_STRING || i >= kv->arr_n) return 0;
    uint64_t pos = 0;
    for (uint64_t k = 0; k <= i; k++)
        if (!gguf_arr_str_next(kv, &pos, s, len)) return 0;
    return 1;
}
