/*
 * safetensors.c — parsing and validating one .safetensors file (see safetensors.h).
 *
 * Layout, as the format's specification (huggingface/safetensors README) defines it:
 *   bytes [0, 8)        N, the header length, unsigned 64-bit little-endian
 *   bytes [8, 8+N)      a JSON object (UTF-8; writers may pad it with trailing spaces)
 *   bytes [8+N, size)   the data section; each tensor's data_offsets are relative to it
 *
 * Nothing in the header is trusted: every number is range-checked before use, every
 * size product is checked for 64-bit overflow, and, as the reference implementation
 * (safetensors' Metadata::validate) requires, the non-empty tensors' byte ranges tile the
 * data section: sorted by offset, the first begins at 0, each begins where the previous
 * one ended, and the last ends where the file ends (no gap, no overlap, no trailing
 * bytes). A key repeated anywhere in the header is refused (the reference's serde keeps
 * one of two same-named tensors; which one a reader keeps must not decide the logits).
 * Deliberately tolerated, as neither can make a read go out of bounds or change a value:
 * an empty tensor's offsets anywhere inside the data section; keys other than dtype,
 * shape and data_offsets inside a tensor entry. Tensor data may be unaligned (N need not
 * be a multiple of 8): read it through st_tensor_to_f32, never through a cast to float *.
 */
#include "io/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"

/* The reference implementation refuses headers above 100 MB; so does facet, so that a
 * hostile header cannot make jansson build a gigabyte-sized tree. */
#define ST_MAX_HEADER_LEN 100000000ull

/* Names and element widths in bits, indexed by st_dtype (order of the enum). */
static const struct {
    const char *name;
    unsigned bits;
} ST_DTYPES[ST_DTYPE_COUNT] = {
    [ST_F32] = {"F32", 32},         [ST_F16] = {"F16", 16},
    [ST_BF16] = {"BF16", 16},       [ST_F64] = {"F64", 64},
    [ST_I8] = {"I8", 8},            [ST_U8] = {"U8", 8},
    [ST_I16] = {"I16", 16},         [ST_U16] = {"U16", 16},
    [ST_I32] = {"I32", 32},         [ST_U32] = {"U32", 32},
    [ST_I64] = {"I64", 64},         [ST_U64] = {"U64", 64},
    [ST_BOOL] = {"BOOL", 8},        [ST_F8_E4M3] = {"F8_E4M3", 8},
    [ST_F8_E5M2] = {"F8_E5M2", 8},  [ST_F8_E8M0] = {"F8_E8M0", 8},
    [ST_F6_E2M3] = {"F6_E2M3", 6},  [ST_F6_E3M2] = {"F6_E3M2", 6},
    [ST_F4] = {"F4", 4},            [ST_C64] = {"C64", 64},
};

const char *st_dtype_name(st_dtype dt) {
    if ((unsigned)dt >= ST_DTYPE_COUNT) return "?";
    return ST_DTYPES[dt].name;
}

size_t st_dtype_size(st_dtype dt) {
    if ((unsigned)dt >= ST_DTYPE_COUNT || ST_DTYPES[dt].bits % 8 != 0) return 0;
    return ST_DTYPES[dt].bits / 8;
}

/* Look up a dtype by its exact name; -1 when unknown. */
static int dtype_from_name(const char *s) {
    for (int i = 0; i < ST_DTYPE_COUNT; i++)
        if (strcmp(s, ST_DTYPES[i].name) == 0) return i;
    return -1;
}

uint64_t st_tensor_numel(const st_tensor *t) {
    uint64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= (uint64_t)t->shape[i];
    return n;
}

/* "[512, 64]" into buf (truncated with "..." if it does not fit). */
static const char *shape_str(const int64_t *shape, int ndim, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = '\0';
    n += (size_t)snprintf(buf + n, cap - n, "[");
    for (int i = 0; i < ndim && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
}

static uint64_t read_le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* Validate one header entry `name` -> `v` into *t (name not yet set). */
static facet_status parse_entry(const char *what, const char *name, json_t *v,
                                uint64_t data_size, st_tensor *t, facet_error *err) {
    if (!json_is_object(v))
        return facet_err(err, FACET_E_FORMAT,
                         "%s: tensor '%s': header entry is a JSON %s, expected an object "
                         "with dtype, shape and data_offsets",
                         what, name, facet_json_type_name(v));

    /* dtype */
    json_t *jd = json_object_get(v, "dtype");
    if (!jd)
        return facet_err(err, FACET_E_FORMAT, "%s: tensor '%s': no \"dtype\" key", what, name);
    if (!json_is_string(jd))
        return facet_err(err, FACET_E_FORMAT,
                         "%s: tensor '%s': dtype is a JSON %s, expected a string such as \"F32\"",
                         what, name, facet_json_type_name(jd));
    const char *ds = json_string_value(jd);
    int dt = strlen(ds) == json_string_length(jd) ? dtype_from_name(ds) : -1;
    if (dt < 0)
        return facet_err(err, FACET_E_FORMAT,
                         "%s: tensor '%s': unknown dtype \"%s\", expected one of F32, F16, BF16, "
                         "F64, I8, U8, I16, U16, I32, U32, I64, U64, BOOL, F8_E4M3, F8_E5M2, "
                         "F8_E8M0, F6_E2M3, F6_E3M2, F4, C64",
                         what, name, ds);
    t->dtype = (st_dtype)dt;

    /* shape */
    json_t *js = json_object_get(v, "shape");
    if (!js)
        return facet_err(err, FACET_E_FORMAT, "%s: tensor '%s': no \"shape\" key", what, name);
    if (!json_is_array(js))
        return facet_err(err, FACET_E_FORMAT,
                         "%s: tensor '%s': shape is a JSON %s, expected an array of "
                         "non-negative integers",
                         what, name, facet_json_type_name(js));
    size_t nd = json_array_size(js);
    if (nd > ST_MAX_DIMS)
        return facet_err(err, FACET_E_FORMAT,
                         "%s: tensor '%s': shape has %zu dimensions, at most %d supported", what,
                         name, nd, ST_MAX_DIMS);
    t->ndim = (int)nd;
    int has_zero = 0;
    for (size_t i = 0; i < nd; i++) {
        json_t *e = json_array_get(js, i);
        if (!json_is_integer(e))
            return facet_err(err, FACET_E_FORMAT,
                             "%s: tensor '%s': shape[%zu] is a JSON %s, expected a non-negative "
                             "integer",
                             what, name, i, facet_json_type_name(e));
        json_int_t d = json_integer_value(e);
        if (d < 0)
            return facet_err(err, FACET_E_FORMAT,
                             "%s: tensor '%s': shape[%zu] is %lld, expected a non-negative "
                             "integer",
                             what, name, i, (long long)d);
        t->shape[i] = (int64_t)d;
        if (d == 0) has_zero = 1;
    }
    char sbuf[256];
    uint64_t numel = 1;
    if (has_zero) {
        numel = 0; /* an empty tensor, however large its other dimensions */
    } else {
        for (size_t i = 0; i < nd; i++) {
            uint64_t d = (uint64_t)t->shape[i];
            if (numel > UINT64_MAX / d)
                return facet_err(err, FACET_E_FORMAT,
                                 "%s: tensor '%s': shape %s has more elements than fit in 64 bits",
                                 what, name, shape_str(t->shape, t->ndim, sbuf, sizeof sbuf));
            numel *= d;
        }
    }
    unsigned bits = ST_DTYPES[dt].bits;
    if (numel > UINT64_MAX / bits)
        return facet_err(err, FACET_E_FORMAT,
                         "%s: tensor '%s': shape %s x %u bits overflows 64 bits", what, name,
                         shape_str(t->shape, t->ndim, sbuf, sizeof sbuf), bits);
    uint64_t nbits = numel * bits;
    if (nbits % 8 != 0)
        return facet_err(err, FACET_E_FORMAT,
                         "%s: tensor '%s': shape %s x %u bits = %llu bits, not a whole number "
                         "of bytes",
                         what, name, shape_str(t->shape, t->ndim, sbuf, sizeof sbuf), bits,
                         (unsigned long long)nbits);
    uint64_t nbytes = nbits / 8;

    /* data_offsets */
    json_t *jo = json_object_get(v, "data_offsets");
    if (!jo)
        return facet_err(err, FACET_E_FORMAT, "%s: tensor '%s': no \"data_offsets\" key", what,
                         name);
    if (!json_is_array(jo) || json_array_size(jo) != 2)
        return facet_err(err, FACET_E_FORMAT,
                         "%s: tensor '%s': data_offsets is a JSON %s%s, expected an array "
                         "[begin, end] of two integers",
                         what, name, facet_json_type_name(jo),
                         json_is_array(jo) ? " of the wrong length" : "");
    json_int_t off[2];
    for (size_t i = 0; i < 2; i++) {
        json_t *e = json_array_get(jo, i);
        if (!json_is_integer(e))
            return facet_err(err, FACET_E_FORMAT,
                             "%s: tensor '%s': data_offsets[%zu] is a JSON %s, expected a "
                             "non-negative integer",
                             what, name, i, facet_json_type_name(e));
        off[i] = json_integer_value(e);
        if (off[i] < 0)
            return facet_err(err, FACET_E_FORMAT,
                             "%s: tensor '%s': data_offsets[%zu] is %lld, expected a "
                             "non-negative integer",
                             what, name, i, (long long)off[i]);
    }
    uint64_t begin = (uint64_t)off[0], end = (uint64_t)off[1];
    if (begin > end)
        return facet_err(err, FACET_E_FORMAT,
                         "%s: tensor '%s': data_offsets [%llu, %llu] has begin after end", what,
                         name, (unsigned long long)begin, (unsigned long long)end);
    if (end > data_size)
        return facet_err(err, FACET_E_FORMAT,
                         "%s: tensor '%s': data_offsets [%llu, %llu] end past the data section "
                         "of %llu bytes",
                         what, name, (unsigned long long)begin, (unsigned long long)end,
                         (unsigned long long)data_size);
    if (end - begin != nbytes) {
        if (bits % 8 == 0)
            return facet_err(err, FACET_E_FORMAT,
                             "%s: tensor '%s': shape %s x %u bytes = %llu but data_offsets span "
                             "%llu",
                             what, name, shape_str(t->shape, t->ndim, sbuf, sizeof sbuf),
                             bits / 8, (unsigned long long)nbytes,
                             (unsigned long long)(end - begin));
        return facet_err(err, FACET_E_FORMAT,
                         "%s: tensor '%s': shape %s x %u bits = %llu bytes but data_offsets "
                         "span %llu",
                         what, name, shape_str(t->shape, t->ndim, sbuf, sizeof sbuf), bits,
                         (unsigned long long)nbytes, (unsigned long long)(end - begin));
    }
    t->begin = begin;
    t->end = end;
    return FACET_OK;
}

/* __metadata__ must be an object whose values are all strings. */
static facet_status check_metadata(const char *what, json_t *m, facet_error *err) {
    if (!json_is_object(m))
        return facet_err(err, FACET_E_FORMAT,
                         "%s: __metadata__ is a JSON %s, expected an object of strings", what,
                         facet_json_type_name(m));
    const char *k;
    json_t *v;
    json_object_foreach(m, k, v) {
        if (!json_is_string(v))
            return facet_err(err, FACET_E_FORMAT,
                             "%s: __metadata__ key '%s' is a JSON %s, expected a string", what, k,
                             facet_json_type_name(v));
    }
    return FACET_OK;
}

static int cmp_by_range(const void *a, const void *b) {
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

/* The non-empty tensors tile the data section [0, data_size): sorted by begin, the first
 * begins at 0, each begins where the previous one ended and the last ends at data_size.
 * Each refusal names the tensor(s) and the offsets. */
static facet_status check_tiling(const char *what, st_tensor *ts, size_t n, uint64_t data_size,
                                 facet_error *err) {
    const st_tensor **order = malloc((n ? n : 1) * sizeof *order);
    if (!order) return facet_err(err, FACET_E_NOMEM, "%s: out of memory sorting tensors", what);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (ts[i].end > ts[i].begin) order[m++] = &ts[i];
    qsort(order, m, sizeof *order, cmp_by_range);
    facet_status st = FACET_OK;
    const st_tensor *p = NULL; /* the previous non-empty tensor */
    for (size_t i = 0; i < m && st == FACET_OK; p = order[i++]) {
        const st_tensor *q = order[i];
        uint64_t expect = p ? p->end : 0;
        if (q->begin < expect)
            st = facet_err(err, FACET_E_FORMAT,
                           "%s: tensor '%s' data_offsets [%llu, %llu] overlap tensor '%s' "
                           "[%llu, %llu]",
                           what, q->name, (unsigned long long)q->begin,
                           (unsigned long long)q->end, p->name, (unsigned long long)p->begin,
                           (unsigned long long)p->end);
        else if (q->begin > expect && p)
            st = facet_err(err, FACET_E_FORMAT,
                           "%s: tensor '%s' data_offsets [%llu, %llu] leave a gap of %llu "
                           "unused bytes after tensor '%s' [%llu, %llu]; each tensor's data "
                           "must begin where the previous one ends",
                           what, q->name, (unsigned long long)q->begin,
                           (unsigned long long)q->end, (unsigned long long)(q->begin - expect),
                           p->name, (unsigned long long)p->begin, (unsigned long long)p->end);
        else if (q->begin > expect)
            st = facet_err(err, FACET_E_FORMAT,
                           "%s: tensor '%s' data_offsets [%llu, %llu] leave a gap of %llu "
                           "unused bytes at the start of the data section; the first tensor's "
                           "data must begin at offset 0",
                           what, q->name, (unsigned long long)q->begin,
                           (unsigned long long)q->end, (unsigned long long)q->begin);
    }
    if (st == FACET_OK && (p ? p->end : 0) != data_size) {
        if (p)
            st = facet_err(err, FACET_E_FORMAT,
                           "%s: %llu trailing bytes after the last tensor's data: tensor '%s' "
                           "data_offsets [%llu, %llu] end at %llu but the data section holds "
                           "%llu bytes",
                           what, (unsigned long long)(data_size - p->end), p->name,
                           (unsigned long long)p->begin, (unsigned long long)p->end,
                           (unsigned long long)p->end, (unsigned long long)data_size);
        else
            st = facet_err(err, FACET_E_FORMAT,
                           "%s: %llu trailing bytes: the data section holds %llu bytes but no "
                           "tensor has data",
                           what, (unsigned long long)data_size, (unsigned long long)data_size);
    }
    free(order);
    return st;
}

/* The header parsed with every repeated key refused. A repeated tensor name is named
 * with the header byte where its second entry starts; a key repeated inside an entry or
 * __metadata__ is named as a key. Other JSON errors read as facet_json_parse's. */
static facet_status parse_header(const char *what, const char *text, size_t n, json_t **out,
                                 facet_error *err) {
    json_error_t je;
    *out = json_loadb(text, n, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &je);
    if (*out) return FACET_OK;
    if (json_error_code(&je) != json_error_duplicate_key)
        return facet_err(err, FACET_E_FORMAT, "%s: header:%d:%d: not valid JSON: %s", what,
                         je.line, je.column, je.text);
    /* je.text: duplicate object key near '"NAME"'; the lenient parse says whether NAME
     * is a tensor (a top-level key) and gives the kept entry's offsets */
    char name[256] = "?";
    int at = je.position; /* where the repeated key token starts */
    const char *q = strstr(je.text, "near '\"");
    if (q) {
        q += 7;
        size_t len = strlen(q);
        if (len >= 2 && q[len - 1] == '\'' && q[len - 2] == '"') len -= 2;
        snprintf(name, sizeof name, "%.*s", (int)len, q);
        if ((size_t)at >= len + 2) at -= (int)len + 2;
    }
    json_t *lenient = json_loadb(text, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    json_t *entry = json_is_object(lenient) ? json_object_get(lenient, name) : NULL;
    facet_status st;
    if (entry && strcmp(name, "__metadata__"))
        st = facet_err(err, FACET_E_FORMAT,
                       "%s: tensor '%s' is named twice in the header (the second entry at "
                       "header byte %d); tensor names must be unique",
                       what, name, at);
    else
        st = facet_err(err, FACET_E_FORMAT,
                       "%s: header:%d:%d: key '%s' appears twice in one object (at header byte "
                       "%d); keys must be unique",
                       what, je.line, je.column, name, at);
    json_decref(lenient);
    return st;
}

void st_file_close(st_file *f) {
    if (!f) return;
    for (size_t i = 0; i < f->n_tensors; i++) free(f->tensors[i].name);
    free(f->tensors);
    free(f->path);
    if (f->map) munmap(f->map, f->map_size);
    memset(f, 0, sizeof *f);
}

facet_status st_parse(const uint8_t *buf, size_t size, const char *what, st_file *out,
                      facet_error *err) {
    memset(out, 0, sizeof *out);
    if (size < 8)
        return facet_err(err, FACET_E_FORMAT,
                         "%s: file is %zu bytes, too short for the 8-byte header length", what,
                         size);
    uint64_t n = read_le64(buf);
    if (n > (uint64_t)size - 8)
        return facet_err(err, FACET_E_FORMAT,
                         "%s: header length %llu runs past the end of the file (%zu bytes, at "
                         "most %llu available for the header)",
                         what, (unsigned long long)n, size, (unsigned long long)(size - 8));
    if (n > ST_MAX_HEADER_LEN)
        return facet_err(err, FACET_E_FORMAT,
                         "%s: header length %llu is larger than the %llu bytes allowed", what,
                         (unsigned long long)n, ST_MAX_HEADER_LEN);
    if (n < 2)
        return facet_err(err, FACET_E_FORMAT,
                         "%s: header length %llu is too short for a JSON object", what,
                         (unsigned long long)n);
    uint64_t data_size = (uint64_t)size - 8 - n;
    const uint8_t *data = buf + 8 + n;

    json_t *root;
    facet_status st = parse_header(what, (const char *)buf + 8, (size_t)n, &root, err);
    if (st != FACET_OK) return st;
    if (!json_is_object(root)) {
        st = facet_err(err, FACET_E_FORMAT, "%s: header is a JSON %s, expected an object", what,
                       facet_json_type_name(root));
        json_decref(root);
        return st;
    }

    out->path = strdup(what);
    size_t cap = json_object_size(root);
    out->tensors = calloc(cap ? cap : 1, sizeof *out->tensors);
    if (!out->path || !out->tensors) {
        json_decref(root);
        st_file_close(out);
        return facet_err(err, FACET_E_NOMEM, "%s: out of memory for %zu tensors", what, cap);
    }
    out->header_len = n;

    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "__metadata__") == 0) {
            st = check_metadata(what, v, err);
            if (st != FACET_OK) break;
            continue;
        }
        st_tensor *t = &out->tensors[out->n_tensors];
        st = parse_entry(what, key, v, data_size, t, err);
        if (st != FACET_OK) break;
        t->name = strdup(key);
        if (!t->name) {
            st = facet_err(err, FACET_E_NOMEM, "%s: out of memory", what);
            break;
        }
        t->data = data + t->begin;
        t->file_index = 0;
        out->n_tensors++;
    }
    json_decref(root);
    if (st == FACET_OK) st = check_tiling(what, out->tensors, out->n_tensors, data_size, err);
    if (st != FACET_OK) {
        st_file_close(out);
        return st;
    }
    return FACET_OK;
}

/* st_parse behind the parser type of facet_map_parse. */
static facet_status parse_file(const uint8_t *buf, size_t size, const char *what, void *out,
                               facet_error *err) {
    return st_parse(buf, size, what, out, err);
}

facet_status st_open(const char *path, st_file *out, facet_error *err) {
    memset(out, 0, sizeof *out);
    return facet_map_parse(path, parse_file, out, &out->map, &out->map_size, err);
}

const st_tensor *st_file_find(const st_file *f, const char *name) {
    for (size_t i = 0; i < f->n_tensors; i++)
        if (strcmp(f->tensors[i].name, name) == 0) return &f->tensors[i];
    return NULL;
}

/* ---- conversion to float32 ------------------------------------------------------ */

/* IEEE 754 binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. */
float st_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1F;
    uint32_t man = h & 0x3FF;
    uint32_t bits;
    if (exp == 0) {
        /* zero or subnormal: man x 2^-24, exact in float32 */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    } else if (exp == 31) {
        bits = sign | 0x7F800000u | (man << 13); /* inf, or NaN keeping its payload */
    } else {
        bits = sign | ((exp + 112) << 23) | (man << 13); /* rebias 15 -> 127 */
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* bfloat16 is the upper 16 bits of a float32. */
float st_bf16_to_f32(uint16_t b) {
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* float8 e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits; exponent 0 is
 * subnormal (m x 2^-9); S.1111.111 is NaN; no infinities. */
float st_f8e4m3_to_f32(uint8_t b) {
    int e = (b >> 3) & 15, m = b & 7;
    float v = e == 15 && m == 7 ? NAN : e == 0 ? (float)m * 0x1p-9f : ldexpf(1.0f + (float)m / 8.0f, e - 7);
    return b & 128 ? -v : v;
}

facet_status st_tensor_to_f32(const st_tensor *t, float *dst, facet_error *err) {
    if (t->dtype != ST_F32 && t->dtype != ST_F16 && t->dtype != ST_BF16 && t->dtype != ST_F8_E4M3)
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "tensor '%s' has dtype %s; readable: F32, F16, BF16, F8_E4M3", t->name,
                         st_dtype_name(t->dtype));
    uint64_t n = st_tensor_numel(t);
    if (n == 0) return FACET_OK;
    if (!t->data)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "tensor '%s' has no data to convert",
                         t->name);
    const uint8_t *p = t->data; /* may be unaligned: read bytes, little-endian */
    switch (t->dtype) {
    case ST_F32:
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        memcpy(dst, p, (size_t)n * 4);
        break;
#endif
        for (uint64_t i = 0; i < n; i++, p += 4) {
            uint32_t b = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                         (uint32_t)p[3] << 24;
            memcpy(&dst[i], &b, 4);
        }
        break;
    case ST_F16:
        for (uint64_t i = 0; i < n; i++, p += 2)
            dst[i] = st_f16_to_f32((uint16_t)(p[0] | p[1] << 8));
        break;
    case ST_BF16:
        for (uint64_t i = 0; i < n; i++, p += 2)
            dst[i] = st_bf16_to_f32((uint16_t)(p[0] | p[1] << 8));
        break;
    case ST_F8_E4M3: /* the raw e4m3 values: a block-scaled matrix is scaled by its caller */
        for (uint64_t i = 0; i < n; i++) dst[i] = st_f8e4m3_to_f32(p[i]);
        break;
    default: break;
    }
    return FACET_OK;
}
