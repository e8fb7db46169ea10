/*
 * test_gguf.c — the GGUF reader (src/io/gguf.c, gguf_model.c) and the facts read from it
 * (src/model/facts_gguf.c).
 *
 * Files are built byte by byte here following the GGUF specification (magic, version,
 * counts, key/value pairs, tensor infos, padding to general.alignment, data). Each bad
 * input of issue 18 has its own test asserting the status and the words of the one-line
 * message. Block sizes are the ones ggml's block structs give (worked by hand in
 * test_type_table). The corpus models (../shared/corpus/gguf, written by llama.cpp's
 * tools) are checked tensor by tensor against the lists llama.cpp's gguf-py recorded in
 * expected/<model>.json, and the F32 family files against the facts the corpus README
 * states; both are skipped loudly when the corpus is absent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/gguf.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/quant.h"
#include "model/facts_gguf.h"
#include "model/gguf_checkpoint.h"
#include "model/table.h"

/* ---- building files ------------------------------------------------------------- */
typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *src, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void le(buf *b, uint64_t v, int n) {
    uint8_t x[8];
    for (int i = 0; i < n; i++) x[i] = (uint8_t)(v >> (8 * i));
    put(b, x, (size_t)n);
}

static void str(buf *b, const char *s) {
    le(b, strlen(s), 8);
    put(b, s, strlen(s));
}

enum { K_U32, K_F32, K_STR, K_U16, K_RAW };
typedef struct kvdef {
    const char *key;
    int kind;
    uint64_t u;
    double f;
    const char *s;
} kvdef;

typedef struct tdef {
    const char *name;
    int n_dims;
    uint64_t ne[4];
    uint32_t type;
    int64_t offset; /* -1: where the previous tensor's padded data ends */
} tdef;

static void put_kv(buf *b, const kvdef *k) {
    str(b, k->key);
    switch (k->kind) {
    case K_U32: le(b, GGUF_T_UINT32, 4), le(b, k->u, 4); break;
    case K_U16: le(b, GGUF_T_UINT16, 4), le(b, k->u, 2); break;
    case K_F32: {
        float x = (float)k->f;
        uint32_t bits;
        memcpy(&bits, &x, 4);
        le(b, GGUF_T_FLOAT32, 4), le(b, bits, 4);
        break;
    }
    case K_STR: le(b, GGUF_T_STRING, 4), str(b, k->s); break;
    }
}

/* Bytes of a tensor: ne[0] / block * bytes per block * the other dims. */
static uint64_t tbytes(const tdef *t) {
    uint64_t n = t->ne[0] / gguf_type_block(t->type) * gguf_type_block_bytes(t->type);
    for (int d = 1; d < t->n_dims; d++) n *= t->ne[d];
    return n;
}

/* A whole file: header (version), pairs, tensor infos, padding, zero-filled data
 * (each tensor's data padded to `align`). */
static uint8_t *build(uint32_t version, const kvdef *kvs, int nkv, const tdef *ts, int nt,
                      uint64_t align, size_t *len) {
    buf b = {0};
    put(&b, "GGUF", 4);
    le(&b, version, 4);
    le(&b, (uint64_t)nt, 8);
    le(&b, (uint64_t)nkv, 8);
    for (int i = 0; i < nkv; i++) put_kv(&b, &kvs[i]);
    uint64_t off = 0, total = 0;
    for (int i = 0; i < nt; i++) {
        str(&b, ts[i].name);
        le(&b, (uint64_t)ts[i].n_dims, 4);
        for (int d = 0; d < ts[i].n_dims; d++) le(&b, ts[i].ne[d], 8);
        le(&b, ts[i].type, 4);
        uint64_t o = ts[i].offset >= 0 ? (uint64_t)ts[i].offset : off;
        le(&b, o, 8);
        uint64_t n = gguf_type_known(ts[i].type) ? tbytes(&ts[i]) : 4;
        off = (o + n + align - 1) / align * align;
        if (off > total) total = off;
    }
    while (b.n % align) put(&b, "", 1);
    static const uint8_t zero[4096];
    for (uint64_t i = 0; i < total; i += sizeof zero)
        put(&b, zero, total - i < sizeof zero ? (size_t)(total - i) : sizeof zero);
    *len = b.n;
    return b.p;
}

/* The metadata of a 1-layer llama-shaped model; tensors to go with it. */
static const kvdef LLAMA_KV[] = {
    {"general.architecture", K_STR, 0, 0, "llama"},
    {"llama.block_count", K_U32, 1, 0, NULL},
    {"llama.context_length", K_U32, 128, 0, NULL},
    {"llama.embedding_length", K_U32, 64, 0, NULL},
    {"llama.feed_forward_length", K_U32, 96, 0, NULL},
    {"llama.attention.head_count", K_U32, 4, 0, NULL},
    {"llama.attention.head_count_kv", K_U32, 2, 0, NULL},
    {"llama.attention.layer_norm_rms_epsilon", K_F32, 0, 1e-5, NULL},
    {"llama.rope.freq_base", K_F32, 0, 10000.0, NULL},
    {"llama.vocab_size", K_U32, 32, 0, NULL},
};
#define N_LLAMA_KV ((int)(sizeof LLAMA_KV / sizeof LLAMA_KV[0]))

static const tdef LLAMA_T[] = {
    {"token_embd.weight", 2, {64, 32}, GGML_F32, -1},
    {"blk.0.attn_norm.weight", 1, {64}, GGML_F32, -1},
    {"blk.0.attn_q.weight", 2, {64, 64}, GGML_Q8_0, -1},
    {"blk.0.ffn_down.weight", 2, {96, 64}, GGML_Q4_0, -1},
    {"output_norm.weight", 1, {64}, GGML_F32, -1},
};
#define N_LLAMA_T ((int)(sizeof LLAMA_T / sizeof LLAMA_T[0]))

static facet_status parse(const uint8_t *b, size_t n, gguf_file *f, facet_error *err) {
    memset(err, 0, sizeof *err);
    return gguf_parse(b, n, "x/m.gguf", f, err);
}

/* The message has one line and every NULL-terminated word. */
static void expect_words(const facet_error *err, facet_status status, facet_status want, ...) {
    if (status != want) fprintf(stderr, "got %d: %s\n", status, err->message);
    assert_int_equal(status, want);
    assert_int_equal(err->status, want);
    assert_null(strchr(err->message, '\n'));
    va_list ap;
    va_start(ap, want);
    for (const char *s; (s = va_arg(ap, const char *));) {
        if (!strstr(err->message, s)) fprintf(stderr, "message '%s' lacks '%s'\n", err->message, s);
        assert_non_null(strstr(err->message, s));
    }
    va_end(ap);
}

/* Parse expecting failure with `want` and the words. */
#define EXPECT_PARSE(b, n, want, ...)                                                   \
    do {                                                                               \
        gguf_file f_;                                                                  \
        facet_error e_;                                                                \
        facet_status s_ = parse((b), (n), &f_, &e_);                                   \
        if (s_ == FACET_OK) gguf_file_close(&f_);                                      \
        expect_words(&e_, s_, (want), __VA_ARGS__, NULL);                              \
    } while (0)

/* ---- the type table -------------------------------------------------------------- */
static void test_type_table(void **state) {
    (void)state;
    /* bytes per block from ggml's block structs, by hand: */
    struct { uint32_t id; const char *name; uint32_t block, bytes; } want[] = {
        {GGML_F32, "F32", 1, 4},          {GGML_F16, "F16", 1, 2},
        {GGML_BF16, "BF16", 1, 2},        {GGML_Q8_0, "Q8_0", 32, 2 + 32},
        {GGML_Q4_0, "Q4_0", 32, 2 + 16},  {GGML_Q4_1, "Q4_1", 32, 4 + 16},
        {GGML_Q5_0, "Q5_0", 32, 2 + 4 + 16}, {GGML_Q5_1, "Q5_1", 32, 4 + 4 + 16},
        {GGML_Q2_K, "Q2_K", 256, 16 + 64 + 4}, {GGML_Q3_K, "Q3_K", 256, 32 + 64 + 12 + 2},
        {GGML_Q4_K, "Q4_K", 256, 4 + 12 + 128}, {GGML_Q5_K, "Q5_K", 256, 4 + 12 + 32 + 128},
        {GGML_Q6_K, "Q6_K", 256, 128 + 64 + 16 + 2}, {GGML_Q8_K, "Q8_K", 256, 4 + 256 + 32},
        {GGML_IQ4_NL, "IQ4_NL", 32, 2 + 16}, {GGML_IQ4_XS, "IQ4_XS", 256, 2 + 2 + 4 + 128},
        {GGML_IQ2_XXS, "IQ2_XXS", 256, 2 + 64}, {GGML_MXFP4, "MXFP4", 32, 1 + 16},
        {GGML_TQ2_0, "TQ2_0", 256, 64 + 2}, {GGML_I32, "I32", 1, 4},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_string_equal(gguf_type_name(want[i].id), want[i].name);
        assert_int_equal(gguf_type_block(want[i].id), want[i].block);
        assert_int_equal(gguf_type_block_bytes(want[i].id), want[i].bytes);
        assert_int_equal(gguf_type_from_name(want[i].name), (int)want[i].id);
    }
    /* removed from ggml, or past the table */
    uint32_t gone[] = {4, 5, 31, 32, 33, 36, 37, 38, 40, 1000, UINT32_MAX};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) {
        assert_false(gguf_type_known(gone[i]));
        assert_null(gguf_type_name(gone[i]));
        assert_int_equal(gguf_type_block(gone[i]), 0);
    }
    assert_int_equal(gguf_type_from_name("Q4_3"), -1);
}

/* ---- a valid file ---------------------------------------------------------------- */
static void test_valid(void **state) {
    (void)state;
    size_t n;
    uint8_t *b = build(3, LLAMA_KV, N_LLAMA_KV, LLAMA_T, N_LLAMA_T, 32, &n);
    gguf_file f;
    facet_error err;
    assert_int_equal(parse(b, n, &f, &err), FACET_OK);
    assert_int_equal(f.version, 3);
    assert_int_equal(f.alignment, 32);
    assert_int_equal(f.n_kv, N_LLAMA_KV);
    assert_int_equal(f.n_tensors, N_LLAMA_T);
    int64_t v = 0;
    assert_int_equal(gguf_get_int(&f, "llama.block_count", 1, 1, 10, &v, NULL, &err), FACET_OK);
    assert_int_equal(v, 1);
    double x = 0;
    assert_int_equal(gguf_get_float(&f, "llama.rope.freq_base", 1, 1, &x, NULL, &err), FACET_OK);
    assert_true(x == 10000.0);
    const char *s;
    uint64_t len;
    assert_int_equal(gguf_get_str(&f, "general.architecture", 1, &s, &len, NULL, &err), FACET_OK);
    assert_int_equal(len, 5);
    assert_memory_equal(s, "llama", 5);
    /* offsets by hand: 64*32*4 = 8192; norm 256 -> 8192; q8_0 64/32*34*64 = 4352 at 8448;
     * q4_0 96/32*18*64 = 3456 at 12800; norm at 16256 */
    uint64_t off[] = {0, 8192, 8448, 12800, 16256}, nb[] = {8192, 256, 4352, 3456, 256};
    for (int i = 0; i < N_LLAMA_T; i++) {
        assert_string_equal(f.tensors[i].name, LLAMA_T[i].name);
        assert_int_equal(f.tensors[i].offset, off[i]);
        assert_int_equal(f.tensors[i].nbytes, nb[i]);
        assert_ptr_equal(f.tensors[i].data, b + f.data_offset + off[i]);
    }
    assert_int_equal(f.data_offset % 32, 0);
    assert_int_equal(f.tensors[2].ne[0], 64);
    assert_int_equal(f.tensors[2].ne[1], 64);
    assert_int_equal(f.tensors[2].ne[2], 1);
    assert_int_equal(f.data_offset + 16256 + 256, n);
    /* the wrong type, absent required, absent optional */
    expect_words(&err, gguf_get_str(&f, "llama.block_count", 1, &s, &len, NULL, &err),
                 FACET_E_FORMAT, "x/m.gguf", "key llama.block_count is 1", "u32", "expected a string",
                 NULL);
    expect_words(&err, gguf_get_int(&f, "llama.nope", 1, 0, 1, &v, NULL, &err), FACET_E_NOT_FOUND,
                 "x/m.gguf: required key llama.nope is missing", NULL);
    v = 77;
    int present = 1;
    assert_int_equal(gguf_get_int(&f, "llama.nope", 0, 0, 1, &v, &present, &err), FACET_OK);
    assert_int_equal(v, 77);
    assert_int_equal(present, 0);
    expect_words(&err, gguf_get_int(&f, "llama.block_count", 1, 2, 9, &v, NULL, &err),
                 FACET_E_FORMAT, "llama.block_count is 1", "expected an integer in 2..9", NULL);
    gguf_file_close(&f);
    free(b);
}

/* Every value type, a string array and nested arrays parse; nesting past 8 is refused. */
static void test_value_types(void **state) {
    (void)state;
    buf b = {0};
    put(&b, "GGUF", 4);
    le(&b, 3, 4), le(&b, 0, 8), le(&b, 4, 8);
    str(&b, "a.i8"), le(&b, GGUF_T_INT8, 4), le(&b, 0xF9, 1); /* -7 */
    str(&b, "a.tokens"), le(&b, GGUF_T_ARRAY, 4), le(&b, GGUF_T_STRING, 4), le(&b, 3, 8);
    str(&b, "x"), str(&b, ""), str(&b, "yz");
    str(&b, "a.nested"), le(&b, GGUF_T_ARRAY, 4), le(&b, GGUF_T_ARRAY, 4), le(&b, 2, 8);
    le(&b, GGUF_T_UINT16, 4), le(&b, 2, 8), le(&b, 1, 2), le(&b, 2, 2);
    le(&b, GGUF_T_BOOL, 4), le(&b, 1, 8), le(&b, 1, 1);
    str(&b, "a.f64"), le(&b, GGUF_T_FLOAT64, 4), le(&b, 0x3FE0000000000000ull, 8); /* 0.5 */
    gguf_file f;
    facet_error err;
    assert_int_equal(parse(b.p, b.n, &f, &err), FACET_OK);
    int64_t v = 0;
    assert_int_equal(gguf_get_int(&f, "a.i8", 1, -10, 10, &v, NULL, &err), FACET_OK);
    assert_int_equal(v, -7);
    const gguf_kv *kv = gguf_find_kv(&f, "a.tokens");
    assert_int_equal(kv->arr_n, 3);
    const char *s;
    uint64_t len;
    assert_true(gguf_arr_str(kv, 2, &s, &len));
    assert_int_equal(len, 2);
    assert_memory_equal(s, "yz", 2);
    assert_false(gguf_arr_str(kv, 3, &s, &len));
    kv = gguf_find_kv(&f, "a.nested");
    assert_int_equal(kv->arr_type, GGUF_T_ARRAY);
    assert_int_equal(kv->arr_n, 2);
    double d = 0;
    assert_int_equal(gguf_get_float(&f, "a.f64", 1, 1, &d, NULL, &err), FACET_OK);
    assert_true(d == 0.5);
    gguf_file_close(&f);
    free(b.p);

    /* arrays nested 9 deep */
    buf c = {0};
    put(&c, "GGUF", 4);
    le(&c, 3, 4), le(&c, 0, 8), le(&c, 1, 8);
    str(&c, "deep"), le(&c, GGUF_T_ARRAY, 4);
    for (int i = 0; i < 9; i++) le(&c, GGUF_T_ARRAY, 4), le(&c, 1, 8);
    le(&c, GGUF_T_UINT8, 4), le(&c, 0, 8);
    EXPECT_PARSE(c.p, c.n, FACET_E_FORMAT, "key 'deep'", "nested deeper than 8");
    /* a bool that is neither 0 nor 1 */
    buf d2 = {0};
    put(&d2, "GGUF", 4);
    le(&d2, 3, 4), le(&d2, 0, 8), le(&d2, 1, 8);
    str(&d2, "flag"), le(&d2, GGUF_T_BOOL, 4), le(&d2, 2, 1);
    EXPECT_PARSE(d2.p, d2.n, FACET_E_FORMAT, "key 'flag'", "bool value 2", "expected 0 or 1");
    free(c.p);
    free(d2.p);
}

/* ---- bad input, one test each ------------------------------------------------------ */
static void test_bad_magic(void **state) {
    (void)state;
    size_t n;
    uint8_t *b = build(3, LLAMA_KV, N_LLAMA_KV, LLAMA_T, N_LLAMA_T, 32, &n);
    memcpy(b, "GGML", 4);
    EXPECT_PARSE(b, n, FACET_E_FORMAT, "x/m.gguf", "bad magic 47 47 4d 4c", "expected \"GGUF\"");
    EXPECT_PARSE(b, 2, FACET_E_FORMAT, "x/m.gguf", "bad magic", "shorter than 4 bytes");
    free(b);
}

static void test_bad_version(void **state) {
    (void)state;
    for (uint32_t v = 1; v <= 2; v++) {
        size_t n;
        uint8_t *b = build(v, LLAMA_KV, N_LLAMA_KV, LLAMA_T, N_LLAMA_T, 32, &n);
        char want[64];
        snprintf(want, sizeof want, "GGUF version %u, expected 3", v);
        EXPECT_PARSE(b, n, FACET_E_FORMAT, "x/m.gguf", want, "versions 1 and 2 are not read");
        free(b);
    }
    size_t n;
    uint8_t *b = build(0x03000000u, LLAMA_KV, N_LLAMA_KV, LLAMA_T, N_LLAMA_T, 32, &n);
    EXPECT_PARSE(b, n, FACET_E_FORMAT, "big-endian", "expected little-endian version 3");
    free(b);
}

/* Cut anywhere in the header: a one-line "truncated"/"past the end" error, never a
 * read past the buffer (the ASan build checks the reads). */
static void test_truncated(void **state) {
    (void)state;
    size_t n;
    uint8_t *b = build(3, LLAMA_KV, N_LLAMA_KV, LLAMA_T, N_LLAMA_T, 32, &n);
    gguf_file f0;
    facet_error err;
    assert_int_equal(parse(b, n, &f0, &err), FACET_OK);
    size_t header = f0.data_offset;
    gguf_file_close(&f0);
    for (size_t cut = 4; cut < header; cut++) {
        uint8_t *c = malloc(cut);
        memcpy(c, b, cut);
        gguf_file f;
        facet_status st = parse(c, cut, &f, &err);
        if (st == FACET_OK) fprintf(stderr, "cut at %zu parsed\n", cut);
        assert_int_equal(st, FACET_E_FORMAT);
        assert_true(strstr(err.message, "truncated") || strstr(err.message, "past the end") ||
                    strstr(err.message, "remain"));
        free(c);
    }
    EXPECT_PARSE(b, 20, FACET_E_FORMAT, "x/m.gguf: truncated: the metadata count needs 8 bytes at "
                                        "offset 16");
    free(b);
}

static void test_counts_past_end(void **state) {
    (void)state;
    size_t n;
    uint8_t *b = build(3, LLAMA_KV, N_LLAMA_KV, LLAMA_T, N_LLAMA_T, 32, &n);
    uint8_t *c = malloc(n);
    memcpy(c, b, n);
    c[8 + 7] = 0x10; /* n_tensors = 2^60 + 5 */
    EXPECT_PARSE(c, n, FACET_E_FORMAT, "tensor count 1152921504606846981", "bytes remain");
    memcpy(c, b, n);
    c[16 + 4] = 0x01; /* n_kv = 2^32 + 10 */
    EXPECT_PARSE(c, n, FACET_E_FORMAT, "metadata count 4294967306", "bytes remain");
    /* the first key's length (offset 24) past the end */
    memcpy(c, b, n);
    c[24 + 3] = 0x7F;
    EXPECT_PARSE(c, n, FACET_E_FORMAT, "key #0's name has length", "past the end of the file");
    /* a string value's length past the end: general.architecture's value */
    memcpy(c, b, n);
    size_t at = 24 + 8 + strlen("general.architecture") + 4; /* value length */
    c[at + 5] = 0x01;
    EXPECT_PARSE(c, n, FACET_E_FORMAT, "a string value of key 'general.architecture' has length",
                 "past the end of the file");
    free(c);
    free(b);
    /* an array count past the end */
    buf a = {0};
    put(&a, "GGUF", 4);
    le(&a, 3, 4), le(&a, 0, 8), le(&a, 1, 8);
    str(&a, "tokenizer.ggml.scores"), le(&a, GGUF_T_ARRAY, 4), le(&a, GGUF_T_FLOAT32, 4);
    le(&a, 1000000, 8), le(&a, 0, 4);
    EXPECT_PARSE(a.p, a.n, FACET_E_FORMAT, "key 'tokenizer.ggml.scores'",
                 "array of 1000000 f32 elements", "4 bytes remain");
    free(a.p);
}

static void test_tensor_past_end(void **state) {
    (void)state;
    size_t n;
    uint8_t *b = build(3, LLAMA_KV, N_LLAMA_KV, LLAMA_T, N_LLAMA_T, 32, &n);
    /* the last tensor (output_norm, 256 bytes at 16256) loses its last 4 bytes */
    EXPECT_PARSE(b, n - 4, FACET_E_FORMAT, "tensor 'output_norm.weight'",
                 "256 bytes at offset 16256", "runs past the end of the file",
                 "data section holds 16508 bytes");
    free(b);
}

static void test_misaligned(void **state) {
    (void)state;
    tdef t[2] = {{"a.weight", 1, {8}, GGML_F32, -1}, {"b.weight", 1, {8}, GGML_F32, 16}};
    size_t n;
    uint8_t *b = build(3, LLAMA_KV, 1, t, 2, 32, &n);
    EXPECT_PARSE(b, n, FACET_E_FORMAT, "tensor 'b.weight' has offset 16",
                 "not a multiple of general.alignment 32");
    free(b);
    /* general.alignment 64: offset 32 is misaligned there */
    kvdef kv[2] = {{"general.alignment", K_U32, 64, 0, NULL}, {"general.architecture", K_STR, 0, 0, "llama"}};
    t[1].offset = 32;
    b = build(3, kv, 2, t, 2, 64, &n);
    EXPECT_PARSE(b, n, FACET_E_FORMAT, "tensor 'b.weight' has offset 32",
                 "not a multiple of general.alignment 64");
    free(b);
    /* aligned, but not where the previous tensor ends (a gap of 64 bytes) */
    t[1].offset = 128;
    b = build(3, kv, 2, t, 2, 64, &n);
    EXPECT_PARSE(b, n, FACET_E_FORMAT, "tensor 'b.weight' has offset 128, expected 64");
    free(b);
    /* a bad alignment value */
    kv[0].u = 48;
    t[1].offset = -1;
    b = build(3, kv, 2, t, 2, 32, &n);
    EXPECT_PARSE(b, n, FACET_E_FORMAT, "key general.alignment is 48", "power of two");
    free(b);
}

static void test_unknown_type(void **state) {
    (void)state;
    uint32_t ids[] = {4, 33, 40, 12345};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        tdef t[1] = {{"blk.0.ffn_down.weight", 2, {32, 4}, ids[i], -1}};
        size_t n;
        uint8_t *b = build(3, LLAMA_KV, 1, t, 1, 32, &n);
        char want[64];
        snprintf(want, sizeof want, "has type id %u, which is no ggml type", ids[i]);
        EXPECT_PARSE(b, n, FACET_E_FORMAT, "tensor 'blk.0.ffn_down.weight'", want);
        free(b);
    }
}

static void test_dims(void **state) {
    (void)state;
    tdef t[1] = {{"big.weight", 3, {1ull << 32, 1ull << 32, 1ull << 32}, GGML_F32, 0}};
    size_t n;
    buf h = {0}; /* the header only: no data could be written for this */
    put(&h, "GGUF", 4);
    le(&h, 3, 4), le(&h, 1, 8), le(&h, 0, 8);
    str(&h, t[0].name), le(&h, 3, 4);
    for (int d = 0; d < 3; d++) le(&h, t[0].ne[d], 8);
    le(&h, GGML_F32, 4), le(&h, 0, 8);
    EXPECT_PARSE(h.p, h.n, FACET_E_FORMAT, "tensor 'big.weight'",
                 "ne [4294967296, 4294967296, 4294967296]", "product overflows 64 bits");
    free(h.p);
    /* bytes overflow though elements fit: 2^62 elements of Q8_0 bytes... F64 (8 bytes) */
    tdef u[1] = {{"wide.weight", 2, {1ull << 31, 1ull << 31}, GGML_F64, 0}};
    buf g = {0};
    put(&g, "GGUF", 4);
    le(&g, 3, 4), le(&g, 1, 8), le(&g, 0, 8);
    str(&g, u[0].name), le(&g, 2, 4), le(&g, u[0].ne[0], 8), le(&g, u[0].ne[1], 8);
    le(&g, GGML_F64, 4), le(&g, 0, 8);
    EXPECT_PARSE(g.p, g.n, FACET_E_FORMAT, "tensor 'wide.weight'", "byte size as F64 overflows");
    free(g.p);
    /* ne[0] not a multiple of the block; n_dims 0 and 5 */
    tdef q[1] = {{"q.weight", 2, {100, 2}, GGML_Q4_K, -1}};
    uint8_t *b = build(3, NULL, 0, q, 1, 32, &n);
    EXPECT_PARSE(b, n, FACET_E_FORMAT, "tensor 'q.weight' of type Q4_K has ne [100, 2]",
                 "not a multiple of the type's block of 256");
    free(b);
    for (int nd = 0; nd <= 5; nd += 5) {
        tdef z[1] = {{"z.weight", nd, {1, 1, 1, 1}, GGML_F32, -1}};
        buf c = {0};
        put(&c, "GGUF", 4);
        le(&c, 3, 4), le(&c, 1, 8), le(&c, 0, 8);
        str(&c, z[0].name), le(&c, (uint64_t)nd, 4);
        for (int d = 0; d < nd; d++) le(&c, 1, 8);
        le(&c, GGML_F32, 4), le(&c, 0, 8);
        while (c.n % 32) put(&c, "", 1);
        le(&c, 0, 4);
        char want[48];
        snprintf(want, sizeof want, "has n_dims %d, expected 1..4", nd);
        EXPECT_PARSE(c.p, c.n, FACET_E_FORMAT, "tensor 'z.weight'", want);
        free(c.p);
    }
}

static void test_duplicates(void **state) {
    (void)state;
    tdef t[3] = {{"a.weight", 1, {8}, GGML_F32, -1},
                 {"b.weight", 1, {8}, GGML_F32, -1},
                 {"a.weight", 1, {8}, GGML_F32, -1}};
    size_t n;
    uint8_t *b = build(3, LLAMA_KV, 1, t, 3, 32, &n);
    EXPECT_PARSE(b, n, FACET_E_FORMAT, "tensor 'a.weight' is named twice");
    free(b);
    kvdef kv[3] = {LLAMA_KV[0], LLAMA_KV[1], LLAMA_KV[1]};
    b = build(3, kv, 3, t, 2, 32, &n);
    EXPECT_PARSE(b, n, FACET_E_FORMAT, "key 'llama.block_count' is given twice");
    free(b);
    /* a name too long for llama.cpp (64 bytes) and a name holding NUL */
    char longname[65];
    memset(longname, 'w', 64);
    longname[64] = 0;
    tdef l[1] = {{longname, 1, {8}, GGML_F32, -1}};
    b = build(3, NULL, 0, l, 1, 32, &n);
    EXPECT_PARSE(b, n, FACET_E_FORMAT, "has a name of 64 bytes, expected at most 63");
    free(b);
}

/* ---- facts: keys of the wrong type, missing keys ------------------------------------ */
static facet_status facts_of(const uint8_t *b, size_t n, facet_facts *f, facet_error *err) {
    gguf_file g;
    facet_status st = parse(b, n, &g, err);
    if (st != FACET_OK) return st;
    gguf_model m;
    st = gguf_model_wrap(&g, &m, err);
    if (st != FACET_OK) return st;
    st = facet_facts_from_gguf(&m, f, err);
    gguf_model_close(&m);
    return st;
}

static facet_facts facts;

static void test_facts_small(void **state) {
    (void)state;
    size_t n;
    uint8_t *b = build(3, LLAMA_KV, N_LLAMA_KV, LLAMA_T, N_LLAMA_T, 32, &n);
    facet_error err;
    assert_int_equal(facts_of(b, n, &facts, &err), FACET_OK);
    assert_string_equal(facts.model_type, "llama");
    assert_int_equal(facts.num_hidden_layers, 1);
    assert_int_equal(facts.hidden_size, 64);
    assert_int_equal(facts.intermediate_size, 96);
    assert_int_equal(facts.num_attention_heads, 4);
    assert_int_equal(facts.num_key_value_heads, 2);
    assert_int_equal(facts.head_dim, 16); /* no key_length: 64 / 4 */
    assert_int_equal(facts.vocab_size, 32);
    assert_int_equal(facts.max_position_embeddings, 128);
    assert_true(fabs(facts.rms_norm_eps - 1e-5) < 1e-12);
    assert_true(facts.rope_theta == 10000.0);
    assert_int_equal(facts.tie_word_embeddings, 1); /* no output.weight */
    assert_int_equal(facts.probed, 1);
    /* verdict: Q8_0 runs; Q8_1 (no kernels: an activation type) refused by name with the
     * list of the types that run, derived from the kernels' traits table */
    static facet_verdict v;
    facet_judge(&facts, "cpu", &v);
    assert_int_equal(v.n_refusals, 0);
    gguf_file g;
    assert_int_equal(parse(b, n, &g, &err), FACET_OK);
    gguf_model m;
    assert_int_equal(gguf_model_wrap(&g, &m, &err), FACET_OK);
    facet_gguf_judge(&m, &v);
    gguf_model_close(&m);
    assert_int_equal(v.n_refusals, 0); /* Q8_0 and Q4_0 run */
    free(b);
    /* the same file with ffn_down in Q8_1 */
    tdef t[N_LLAMA_T];
    memcpy(t, LLAMA_T, sizeof t);
    t[3].type = GGML_Q8_1;
    b = build(3, LLAMA_KV, N_LLAMA_KV, t, N_LLAMA_T, 32, &n);
    assert_int_equal(parse(b, n, &g, &err), FACET_OK);
    assert_int_equal(gguf_model_wrap(&g, &m, &err), FACET_OK);
    facet_judge(&facts, "cpu", &v);
    facet_gguf_judge(&m, &v);
    gguf_model_close(&m);
    assert_int_equal(v.status, FACET_VERDICT_REFUSED);
    assert_int_equal(v.n_refusals, 1);
    assert_string_equal(v.refusals[0].text, "REFUSED: tensor blk.0.ffn_down.weight has type Q8_1 "
                                            "(1 tensor of this type); supported: F32, F16, BF16, "
                                            "Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, Q2_K, Q3_K, "
                                            "Q4_K, Q5_K, Q6_K, IQ4_XS, MXFP4");
    free(b);
}

/* Gemma 2 conventions llama.cpp keeps outside the file's keys (hand-worked from its
 * llama-model.cpp): q.k scaled by 1/sqrt(key_length), by 1/sqrt(hidden/heads) for the
 * 27B type (block_count 46); sliding_window_pattern 2 is the family's own alternation
 * (no key passed on), another value reaches the table, which judges it. */
static facet_status gemma2_facts(uint64_t layers, uint64_t pattern, facet_facts *f,
                                 facet_verdict *v) {
    kvdef kv[13] = {
        {"general.architecture", K_STR, 0, 0, "gemma2"},
        {"gemma2.block_count", K_U32, layers, 0, NULL},
        {"gemma2.context_length", K_U32, 128, 0, NULL},
        {"gemma2.embedding_length", K_U32, 64, 0, NULL},
        {"gemma2.feed_forward_length", K_U32, 96, 0, NULL},
        {"gemma2.attention.head_count", K_U32, 4, 0, NULL},
        {"gemma2.attention.head_count_kv", K_U32, 2, 0, NULL},
        {"gemma2.attention.key_length", K_U32, 32, 0, NULL},
        {"gemma2.attention.value_length", K_U32, 32, 0, NULL},
        {"gemma2.attention.layer_norm_rms_epsilon", K_F32, 0, 1e-6, NULL},
        {"gemma2.vocab_size", K_U32, 32, 0, NULL},
        {"gemma2.attention.sliding_window", K_U32, 16, 0, NULL},
        {"gemma2.attention.sliding_window_pattern", K_U32, pattern, 0, NULL},
    };
    static char names[64][40];
    tdef t[66];
    int nt = 0;
    t[nt++] = (tdef){"token_embd.weight", 2, {64, 32}, GGML_F32, -1};
    for (uint64_t i = 0; i < layers; i++) {
        snprintf(names[i], sizeof names[i], "blk.%u.attn_norm.weight", (unsigned)i);
        t[nt++] = (tdef){names[i], 1, {64}, GGML_F32, -1};
    }
    t[nt++] = (tdef){"output_norm.weight", 1, {64}, GGML_F32, -1};
    size_t n;
    uint8_t *b = build(3, kv, pattern ? 13 : 12, t, nt, 32, &n);
    facet_error err;
    facet_status st = facts_of(b, n, f, &err);
    free(b);
    if (st == FACET_OK) facet_judge(f, "cpu", v);
    return st;
}

static void test_facts_gemma2_conventions(void **state) {
    (void)state;
    static facet_verdict v;
    assert_int_equal(gemma2_facts(2, 0, &facts, &v), FACET_OK);
    assert_string_equal(facts.model_type, "gemma2");
    assert_true(facts.query_pre_attn_scalar == 32.0); /* key_length */
    assert_int_equal(gemma2_facts(46, 0, &facts, &v), FACET_OK);
    assert_true(facts.query_pre_attn_scalar == 16.0); /* 27B: hidden 64 / 4 heads */
    assert_int_equal(gemma2_facts(4, 2, &facts, &v), FACET_OK);
    for (int i = 0; i < 4; i++) assert_int_equal(facts.layer_sliding[i], (i + 1) % 2 != 0);
    for (int i = 0; i < v.n_refusals; i++)
        assert_null(strstr(v.refusals[i].fact, "sliding_window_pattern"));
    assert_int_equal(gemma2_facts(4, 3, &facts, &v), FACET_OK);
    int judged = 0;
    for (int i = 0; i < v.n_refusals; i++)
        judged |= strstr(v.refusals[i].fact, "sliding_window_pattern") != NULL;
    assert_true(judged);
}

/* Tensors outside the table and LongRoPE factor tensors are refused by name. */
static void test_facts_refused_tensors(void **state) {
    (void)state;
    tdef t[N_LLAMA_T + 2];
    memcpy(t, LLAMA_T, sizeof LLAMA_T);
    t[N_LLAMA_T] = (tdef){"blk.0.ffn_gate_inp.weight", 2, {64, 8}, GGML_F32, -1};
    t[N_LLAMA_T + 1] = (tdef){"rope_factors_long.weight", 1, {8}, GGML_F32, -1};
    size_t n;
    uint8_t *b = build(3, LLAMA_KV, N_LLAMA_KV, t, N_LLAMA_T + 2, 32, &n);
    gguf_file g;
    facet_error err;
    assert_int_equal(parse(b, n, &g, &err), FACET_OK);
    gguf_model m;
    assert_int_equal(gguf_model_wrap(&g, &m, &err), FACET_OK);
    assert_int_equal(facet_facts_from_gguf(&m, &facts, &err), FACET_OK);
    assert_int_equal(facts.rope_type, FACET_ROPE_UNKNOWN);
    static facet_verdict v;
    facet_judge(&facts, "cpu", &v);
    facet_gguf_judge(&m, &v);
    static char buf[FACET_MAX_REFUSALS * 420];
    facet_verdict_format(&v, buf, sizeof buf);
    assert_non_null(strstr(buf, "REFUSED: rope_type=rope_factors_long.weight is not supported"));
    assert_non_null(strstr(buf, "REFUSED: tensor blk.0.ffn_gate_inp.weight (1 tensor of this "
                                "kind) is not one facet loads"));
    assert_non_null(strstr(buf, "REFUSED: tensor rope_factors_long.weight (1 tensor"));
    gguf_model_close(&m);
    free(b);
}

/* rope_freqs.weight on top of a declared rope.scaling (linear or yarn): llama.cpp applies
 * both, so the facts refuse the pair instead of running the divisors' llama3 alone. */
static void test_rope_freqs_with_scaling(void **state) {
    (void)state;
    kvdef kv[N_LLAMA_KV + 2];
    memcpy(kv, LLAMA_KV, sizeof LLAMA_KV);
    tdef t[N_LLAMA_T + 1];
    memcpy(t, LLAMA_T, sizeof LLAMA_T);
    t[N_LLAMA_T] = (tdef){"rope_freqs.weight", 1, {8}, GGML_F32, -1}; /* head_dim 16 */
    for (int scaled = 0; scaled <= 2; scaled++) { /* none, linear x4, linear x1 */
        kv[N_LLAMA_KV] = (kvdef){"llama.rope.scaling.type", K_STR, 0, 0, "linear"};
        kv[N_LLAMA_KV + 1] =
            (kvdef){"llama.rope.scaling.factor", K_F32, 0, scaled == 2 ? 1.0 : 4.0, NULL};
        size_t n;
        uint8_t *b = build(3, kv, N_LLAMA_KV + 2 * !!scaled, t, N_LLAMA_T + 1, 32, &n);
        gguf_file g;
        facet_error err;
        assert_int_equal(parse(b, n, &g, &err), FACET_OK);
        const float one = 1.0f; /* every divisor 1: llama3 with factor 1 reproduces them */
        for (int i = 0; i < 8; i++)
            memcpy(b + g.data_offset + g.tensors[N_LLAMA_T].offset + 4 * i, &one, 4);
        gguf_file_close(&g);
        assert_int_equal(facts_of(b, n, &facts, &err), FACET_OK);
        if (scaled != 1) { /* linear by 1 scales nothing: the divisors are the scheme */
            assert_int_equal(facts.rope_type, FACET_ROPE_LLAMA3);
        } else {
            assert_int_equal(facts.rope_type, FACET_ROPE_UNKNOWN);
            assert_string_equal(facts.rope_type_name, "rope_freqs.weight+linear");
            static facet_verdict v;
            facet_judge(&facts, "cpu", &v);
            assert_int_equal(v.status, FACET_VERDICT_REFUSED);
        }
        free(b);
    }
}

static void test_key_wrong_type(void **state) {
    (void)state;
    kvdef kv[N_LLAMA_KV];
    memcpy(kv, LLAMA_KV, sizeof kv);
    kv[1] = (kvdef){"llama.block_count", K_STR, 0, 0, "two"};
    size_t n;
    uint8_t *b = build(3, kv, N_LLAMA_KV, LLAMA_T, N_LLAMA_T, 32, &n);
    facet_error err;
    expect_words(&err, facts_of(b, n, &facts, &err), FACET_E_FORMAT,
                 "x/m.gguf: key llama.block_count is \"two\" (a string), expected an integer",
                 NULL);
    free(b);
    memcpy(kv, LLAMA_KV, sizeof kv);
    kv[7] = (kvdef){"llama.attention.layer_norm_rms_epsilon", K_U32, 5, 0, NULL};
    b = build(3, kv, N_LLAMA_KV, LLAMA_T, N_LLAMA_T, 32, &n);
    expect_words(&err, facts_of(b, n, &facts, &err), FACET_E_FORMAT,
                 "key llama.attention.layer_norm_rms_epsilon is 5 (a u32), expected a positive "
                 "f32 or f64",
                 NULL);
    free(b);
    memcpy(kv, LLAMA_KV, sizeof kv);
    kv[0] = (kvdef){"general.architecture", K_U32, 1, 0, NULL};
    b = build(3, kv, N_LLAMA_KV, LLAMA_T, N_LLAMA_T, 32, &n);
    expect_words(&err, facts_of(b, n, &facts, &err), FACET_E_FORMAT,
                 "key general.architecture is 1 (a u32), expected a string", NULL);
    free(b);
    memcpy(kv, LLAMA_KV, sizeof kv);
    kv[0] = (kvdef){"general.architecture", K_STR, 0, 0, "Llama\xff"};
    b = build(3, kv, N_LLAMA_KV, LLAMA_T, N_LLAMA_T, 32, &n);
    expect_words(&err, facts_of(b, n, &facts, &err), FACET_E_FORMAT,
                 "key general.architecture is \"Llama?\", expected a name of 1 to 63 lowercase",
                 NULL);
    free(b);
    memcpy(kv, LLAMA_KV, sizeof kv);
    kv[5] = (kvdef){"llama.attention.head_count", K_U32, 0, 0, NULL};
    b = build(3, kv, N_LLAMA_KV, LLAMA_T, N_LLAMA_T, 32, &n);
    expect_words(&err, facts_of(b, n, &facts, &err), FACET_E_FORMAT,
                 "key llama.attention.head_count is 0 (a u32), expected an integer in 1..", NULL);
    free(b);
}

static void test_key_missing(void **state) {
    (void)state;
    const char *required[] = {"general.architecture", "llama.block_count",
                              "llama.context_length", "llama.embedding_length",
                              "llama.feed_forward_length", "llama.attention.head_count",
                              "llama.attention.layer_norm_rms_epsilon"};
    for (size_t r = 0; r < sizeof required / sizeof required[0]; r++) {
        kvdef kv[N_LLAMA_KV];
        int nk = 0;
        for (int i = 0; i < N_LLAMA_KV; i++)
            if (strcmp(LLAMA_KV[i].key, required[r])) kv[nk++] = LLAMA_KV[i];
        size_t n;
        uint8_t *b = build(3, kv, nk, LLAMA_T, N_LLAMA_T, 32, &n);
        facet_error err;
        char want[128];
        snprintf(want, sizeof want, "x/m.gguf: required key %s is missing", required[r]);
        expect_words(&err, facts_of(b, n, &facts, &err), FACET_E_NOT_FOUND, want, NULL);
        free(b);
    }
    /* a required tensor */
    size_t n;
    uint8_t *b = build(3, LLAMA_KV, N_LLAMA_KV, LLAMA_T + 1, N_LLAMA_T - 1, 32, &n);
    facet_error err;
    expect_words(&err, facts_of(b, n, &facts, &err), FACET_E_NOT_FOUND,
                 "tensor token_embd.weight is missing", NULL);
    free(b);
}

/* llama.cpp's Q/K permutation undone: convert_hf_to_gguf.py's permute stores HF row
 * h*d + j*d/2 + i at GGUF row h*d + 2i + j. Rows hold their GGUF index; with 2 heads of
 * d = 6 the HF order is then 0 2 4 1 3 5 6 8 10 7 9 11 (q), and with 1 KV head 0 2 4 1 3 5
 * (k). d = 6, not 4: for d = 4 the permutation is its own inverse, so undoing it the
 * wrong way round would pass too (the inverse gives 0 3 1 4 2 5). */
static void test_checkpoint_unpermute(void **state) {
    (void)state;
    tdef t[6] = {{"token_embd.weight", 2, {2, 4}, GGML_F32, -1},
                 {"blk.0.attn_norm.weight", 1, {2}, GGML_F32, -1},
                 {"blk.0.attn_q.weight", 2, {2, 12}, GGML_F32, -1},
                 {"blk.0.attn_k.weight", 2, {2, 6}, GGML_F32, -1},
                 {"blk.0.ffn_norm.weight", 1, {2}, GGML_F32, -1},
                 {"rope_freqs.weight", 1, {2}, GGML_F32, -1}};
    kvdef kv[1] = {{"general.architecture", K_STR, 0, 0, "llama"}};
    size_t n;
    uint8_t *b = build(3, kv, 1, t, 6, 32, &n);
    gguf_file g;
    facet_error err;
    assert_int_equal(parse(b, n, &g, &err), FACET_OK);
    for (int k = 2; k <= 3; k++) /* row r of q and k holds r, r */
        for (int64_t r = 0; r < g.tensors[k].ne[1]; r++) {
            float v[2] = {(float)r, (float)r};
            memcpy(b + g.data_offset + g.tensors[k].offset + 8 * r, v, 8);
        }
    gguf_model m;
    assert_int_equal(gguf_model_wrap(&g, &m, &err), FACET_OK);
    memset(&facts, 0, sizeof facts);
    facts.num_hidden_layers = 1;
    facts.num_attention_heads = 2;
    facts.num_key_value_heads = 1;
    facet_gguf_checkpoint c;
    assert_int_equal(facet_gguf_checkpoint_open(&m, &facts, &c, &err), FACET_OK);
    assert_int_equal(c.ck.n_tensors, 5); /* rope_freqs.weight is the facts' */
    const st_tensor *q = st_checkpoint_find(&c.ck, "model.layers.0.self_attn.q_proj.weight");
    const st_tensor *k = st_checkpoint_find(&c.ck, "model.layers.0.self_attn.k_proj.weight");
    assert_non_null(q);
    assert_non_null(k);
    assert_int_equal(q->shape[0], 12); /* ne [2, 12] is the matrix [12, 2] */
    assert_int_equal(q->shape[1], 2);
    const float want_q[12] = {0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11}, want_k[6] = {0, 2, 4, 1, 3, 5};
    float got[24];
    memcpy(got, q->data, sizeof got);
    for (int r = 0; r < 12; r++) assert_true(got[2 * r] == want_q[r] && got[2 * r + 1] == want_q[r]);
    memcpy(got, k->data, 12 * 4);
    for (int r = 0; r < 6; r++) assert_true(got[2 * r] == want_k[r]);
    assert_non_null(st_checkpoint_find(&c.ck, "model.embed_tokens.weight"));
    assert_non_null(st_checkpoint_find(&c.ck, "model.layers.0.input_layernorm.weight"));
    assert_non_null(st_checkpoint_find(&c.ck, "model.layers.0.post_attention_layernorm.weight"));
    facet_gguf_checkpoint_close(&c);
    /* a family with post-norms: ffn_norm is the pre-FFN norm */
    facts.post_norms = 1;
    assert_int_equal(facet_gguf_checkpoint_open(&m, &facts, &c, &err), FACET_OK);
    assert_non_null(st_checkpoint_find(&c.ck, "model.layers.0.pre_feedforward_layernorm.weight"));
    facet_gguf_checkpoint_close(&c);
    gguf_model_close(&m);
    free(b);
}

/* ---- split files and folders ------------------------------------------------------- */
static char tmpdir[64];

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static void write_file(const char *dir, const char *name, const uint8_t *b, size_t n) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(b, 1, n, fp), n);
    fclose(fp);
}

/* Part k (0-based) of a 2-part model: the first holds the metadata and 3 tensors. */
static uint8_t *split_part(int k, int no, int count, size_t *n) {
    kvdef kv[N_LLAMA_KV + 3];
    int nk = 0;
    if (k == 0)
        for (int i = 0; i < N_LLAMA_KV; i++) kv[nk++] = LLAMA_KV[i];
    kv[nk++] = (kvdef){"split.no", K_U16, (uint64_t)no, 0, NULL};
    kv[nk++] = (kvdef){"split.count", K_U16, (uint64_t)count, 0, NULL};
    if (k == 0) kv[nk++] = (kvdef){"split.tensors.count", K_U32, N_LLAMA_T, 0, NULL};
    return k == 0 ? build(3, kv, nk, LLAMA_T, 3, 32, n)
                  : build(3, kv, nk, LLAMA_T + 3, N_LLAMA_T - 3, 32, n);
}

static void test_split(void **state) {
    (void)state;
    strcpy(tmpdir, "/tmp/facet_gguf_XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    size_t n0, n1;
    uint8_t *p0 = split_part(0, 0, 2, &n0), *p1 = split_part(1, 1, 2, &n1);
    write_file(tmpdir, "m-00001-of-00002.gguf", p0, n0);
    char path[256], want[256];
    snprintf(path, sizeof path, "%s/m-00001-of-00002.gguf", tmpdir);
    gguf_model m;
    facet_error err;
    snprintf(want, sizeof want, "part 2 of 2 of this split model is missing: %s/m-00002-of-00002.gguf",
             tmpdir);
    expect_words(&err, gguf_model_open(path, &m, &err), FACET_E_NOT_FOUND, path, want, NULL);

    write_file(tmpdir, "m-00002-of-00002.gguf", p1, n1);
    assert_int_equal(gguf_model_open(path, &m, &err), FACET_OK);
    assert_int_equal(m.n_files, 2);
    assert_int_equal(m.n_tensors, N_LLAMA_T);
    assert_int_equal(gguf_model_find(&m, "output_norm.weight")->file_index, 1);
    assert_int_equal(gguf_model_find(&m, "token_embd.weight")->file_index, 0);
    assert_int_equal(facet_facts_from_gguf(&m, &facts, &err), FACET_OK);
    assert_int_equal(facts.hidden_size, 64);
    gguf_model_close(&m);
    /* opened by its second part, and by the folder */
    snprintf(path, sizeof path, "%s/m-00002-of-00002.gguf", tmpdir);
    assert_int_equal(gguf_model_open(path, &m, &err), FACET_OK);
    assert_string_equal(m.files[0].path + strlen(tmpdir), "/m-00001-of-00002.gguf");
    gguf_model_close(&m);
    assert_int_equal(gguf_model_open(tmpdir, &m, &err), FACET_OK);
    assert_int_equal(m.n_tensors, N_LLAMA_T);
    gguf_model_close(&m);
    assert_true(gguf_path_is_gguf(tmpdir));

    /* the second part says it is part 1 */
    free(p1);
    p1 = split_part(1, 0, 2, &n1);
    write_file(tmpdir, "m-00002-of-00002.gguf", p1, n1);
    expect_words(&err, gguf_model_open(tmpdir, &m, &err), FACET_E_FORMAT,
                 "m-00002-of-00002.gguf: key split.no is 0, expected 1", NULL);
    /* a second model in the folder */
    write_file(tmpdir, "other.gguf", p0, n0);
    expect_words(&err, gguf_model_open(tmpdir, &m, &err), FACET_E_INVALID_ARGUMENT,
                 "the folder holds 2 GGUF models", "name the file to use", NULL);
    /* split.count without the part name */
    snprintf(path, sizeof path, "%s/other.gguf", tmpdir);
    expect_words(&err, gguf_model_open(path, &m, &err), FACET_E_FORMAT,
                 "key split.count is 2 but the file name does not end in -NNNNN-of-00002.gguf",
                 NULL);
    free(p0);
    free(p1);
    assert_int_equal(nftw(tmpdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS), 0);
}

/* ---- the corpus: llama.cpp's files ------------------------------------------------- */
static const char *corpus_root(char *buf, size_t cap) {
    const char *shared = getenv("FACET_SHARED");
    snprintf(buf, cap, "%s/corpus/gguf", shared ? shared : FACET_SOURCE_DIR "/../shared");
    struct stat st;
    if (stat(buf, &st)) {
        printf("SKIPPED: %s is absent: llama.cpp's GGUF files were NOT read\n", buf);
        return NULL;
    }
    return buf;
}

/* Every expected/<model>.json: the model opens and its tensors are exactly the listed
 * names, types and ne. */
static void test_corpus_tensors(void **state) {
    (void)state;
    char root[4096], dir[4200];
    if (!corpus_root(root, sizeof root)) skip();
    snprintf(dir, sizeof dir, "%s/expected", root);
    DIR *d = opendir(dir);
    assert_non_null(d);
    int models = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 5, ".json")) continue;
        char jpath[4400], mpath[4400];
        snprintf(jpath, sizeof jpath, "%s/%s", dir, e->d_name);
        json_t *j = json_load_file(jpath, 0, NULL);
        assert_non_null(j);
        snprintf(mpath, sizeof mpath, "%s/%s", root,
                 json_string_value(json_object_get(j, "model")));
        gguf_model m;
        facet_error err;
        facet_status st = gguf_model_open(mpath, &m, &err);
        if (st) fprintf(stderr, "%s\n", err.message);
        assert_int_equal(st, FACET_OK);
        json_t *ts = json_object_get(j, "tensors");
        if (!ts) { /* the split model: names per part in file order, and type counts */
            json_t *parts = json_object_get(j, "tensors_per_part");
            assert_int_equal(json_array_size(parts), m.n_files);
            for (size_t k = 0; k < m.n_files; k++) {
                json_t *names = json_array_get(parts, k);
                assert_int_equal(json_array_size(names), m.files[k].n_tensors);
                for (size_t q = 0; q < m.files[k].n_tensors; q++)
                    assert_string_equal(m.files[k].tensors[q].name,
                                        json_string_value(json_array_get(names, q)));
            }
            const char *tname;
            json_t *cnt;
            size_t total = 0;
            json_object_foreach(json_object_get(j, "tensor_type_counts"), tname, cnt) {
                size_t c = 0;
                for (size_t q = 0; q < m.n_tensors; q++)
                    c += !strcmp(gguf_type_name(m.by_name[q]->type), tname);
                assert_int_equal(c, json_integer_value(cnt));
                total += c;
            }
            assert_int_equal(total, m.n_tensors);
            gguf_model_close(&m);
            json_decref(j);
            models++;
            continue;
        }
        assert_int_equal(json_array_size(ts), m.n_tensors);
        size_t i;
        json_t *t;
        json_array_foreach(ts, i, t) {
            const char *name = json_string_value(json_array_get(t, 0));
            const gguf_tensor *g = gguf_model_find(&m, name);
            if (!g) fprintf(stderr, "%s: no tensor %s\n", mpath, name);
            assert_non_null(g);
            assert_string_equal(gguf_type_name(g->type), json_string_value(json_array_get(t, 1)));
            json_t *ne = json_array_get(t, 2);
            assert_int_equal(json_array_size(ne), g->n_dims);
            for (int k = 0; k < g->n_dims; k++)
                assert_int_equal(json_integer_value(json_array_get(ne, (size_t)k)), g->ne[k]);
        }
        /* the file sizes the JSON records (one per part) */
        json_t *bytes = json_object_get(j, "bytes");
        for (size_t k = 0; k < m.n_files; k++) {
            json_t *bk = json_is_array(bytes) ? json_array_get(bytes, k) : bytes;
            assert_int_equal(json_integer_value(bk), m.files[k].map_size);
        }
        gguf_model_close(&m);
        json_decref(j);
        models++;
    }
    closedir(d);
    assert_true(models >= 40);
    printf("corpus: %d models, every tensor's name, type and ne as recorded\n", models);
}

/* The F32 file of each family: the facts the corpus README states. */
static void test_corpus_facts(void **state) {
    (void)state;
    char root[4096];
    if (!corpus_root(root, sizeof root)) skip();
    struct {
        const char *file, *model_type;
        double theta, local_theta;
        int qkv_bias, qk_norm, tie, fused, window, rope;
        double eps;
    } fam[] = {
        {"llama-F32", "llama", 500000, 0, 0, 0, 0, 0, 0, FACET_ROPE_LLAMA3, 1e-5},
        {"qwen3-F32", "qwen3", 1e6, 0, 0, 1, 1, 0, 0, FACET_ROPE_DEFAULT, 1e-6},
        {"gemma3-F32", "gemma3_text", 1e6, 10000, 0, 1, 1, 0, 16, FACET_ROPE_DEFAULT, 1e-6},
        {"phi3-F32", "phi3", 250000, 0, 0, 0, 0, 1, 0, FACET_ROPE_DEFAULT, 1e-5},
        {"qwen2-F32", "qwen2", 1e6, 0, 1, 0, 1, 0, 0, FACET_ROPE_DEFAULT, 1e-6},
    };
    for (size_t i = 0; i < sizeof fam / sizeof fam[0]; i++) {
        char path[4300];
        snprintf(path, sizeof path, "%s/models/%s.gguf", root, fam[i].file);
        gguf_model m;
        facet_error err;
        assert_int_equal(gguf_model_open(path, &m, &err), FACET_OK);
        facet_status st = facet_facts_from_gguf(&m, &facts, &err);
        if (st) fprintf(stderr, "%s\n", err.message);
        assert_int_equal(st, FACET_OK);
        facet_facts *f = &facts;
        assert_string_equal(f->model_type, fam[i].model_type);
        assert_int_equal(f->hidden_size, 256);
        assert_int_equal(f->intermediate_size, 256);
        assert_int_equal(f->num_hidden_layers, 2);
        assert_int_equal(f->num_attention_heads, 4);
        assert_int_equal(f->num_key_value_heads, 2);
        assert_int_equal(f->head_dim, 64);
        assert_int_equal(f->vocab_size, 512);
        assert_true(f->rope_theta == fam[i].theta);
        assert_int_equal(f->rope_type, fam[i].rope);
        assert_true(fabs(f->rms_norm_eps - fam[i].eps) < fam[i].eps * 1e-6);
        assert_int_equal(f->qkv_bias, fam[i].qkv_bias);
        assert_int_equal(f->qk_norm, fam[i].qk_norm);
        assert_int_equal(f->tie_word_embeddings, fam[i].tie);
        assert_int_equal(f->fused_qkv, fam[i].fused);
        assert_int_equal(f->fused_gate_up, fam[i].fused);
        assert_int_equal(f->sliding_window, fam[i].window);
        assert_int_equal(f->bos_token_id, 1);
        assert_int_equal(f->n_eos, 1);
        assert_int_equal(f->eos_token_ids[0], 2);
        assert_int_equal(f->norm_weight_offset, 0); /* gemma's + 1 is in the file */
        assert_int_equal(f->probed, 1);
        if (fam[i].window) { /* layer 0 sliding, layer 1 full; local base 10000 */
            assert_int_equal(f->layer_sliding[0], 1);
            assert_int_equal(f->layer_sliding[1], 0);
            assert_true(f->rope_local_base_freq == fam[i].local_theta);
            assert_true(fabs(f->attn_scale - 0.125) < 1e-12); /* 1/sqrt(64) */
        }
        if (fam[i].rope == FACET_ROPE_LLAMA3) assert_true(f->rope_factor == 32.0);
        static facet_verdict v;
        facet_judge(f, "cpu", &v);
        assert_int_equal(v.n_refusals, 0); /* the table runs every one of these shapes */
        facet_gguf_judge(&m, &v);
        assert_int_equal(v.n_refusals, 0); /* F32 only: every type runs */
        assert_int_equal(v.status, FACET_VERDICT_SUPPORTED);
        gguf_model_close(&m);
    }
    /* a quantized file: every type runs (K types and Q6_K), and MoE keys refused */
    char path[4300];
    snprintf(path, sizeof path, "%s/models/llama-Q4_K_M.gguf", root);
    gguf_model m;
    facet_error err;
    assert_int_equal(gguf_model_open(path, &m, &err), FACET_OK);
    assert_int_equal(facet_facts_from_gguf(&m, &facts, &err), FACET_OK);
    static facet_verdict v;
    facet_judge(&facts, "cpu", &v);
    facet_gguf_judge(&m, &v);
    assert_int_equal(v.n_refusals, 0);
    assert_int_equal(v.status, FACET_VERDICT_SUPPORTED);
    gguf_model_close(&m);
    /* Mixtral: general.architecture llama with llama.expert_count (issue 27) */
    snprintf(path, sizeof path, "%s/models/mixtral-F32.gguf", root);
    assert_int_equal(gguf_model_open(path, &m, &err), FACET_OK);
    assert_int_equal(facet_facts_from_gguf(&m, &facts, &err), FACET_OK);
    facet_judge(&facts, "cpu", &v);
    facet_gguf_judge(&m, &v);
    assert_int_equal(v.n_refusals, 0);
    assert_string_equal(facts.model_type, "mixtral");
    assert_int_equal(facts.num_experts, 8);
    assert_int_equal(facts.num_experts_per_tok, 2);
    assert_int_equal(facts.n_sparse_layers, 2);
    assert_int_equal(facts.experts_layout, FACET_EXPERTS_SPLIT3D);
    gguf_model_close(&m);
}

/* Q8_0 repacks exactly into facet's int8 format: every Q8_0 matrix of a corpus file,
 * kept in its blocks by the view, dequantized (d * q in float32, facet_qt_q8_0) and packed
 * by facet_wtensor_convert into int8, reads back bit-identical (same f16 scales, same int8
 * values; llama.cpp's quantizer gives each block a largest |q| of 127, so amax / 127 is
 * its own d). */
static void test_corpus_q8_0_is_int8(void **state) {
    (void)state;
    char root[4096], path[4300];
    if (!corpus_root(root, sizeof root)) skip();
    snprintf(path, sizeof path, "%s/models/qwen3-Q8_0.gguf", root);
    gguf_model m;
    facet_error err;
    assert_int_equal(gguf_model_open(path, &m, &err), FACET_OK);
    assert_true(facet_gguf_matrices_q8_0(&m));
    assert_int_equal(facet_facts_from_gguf(&m, &facts, &err), FACET_OK);
    facet_gguf_checkpoint c;
    assert_int_equal(facet_gguf_checkpoint_open(&m, &facts, &c, &err), FACET_OK);
    int n = 0;
    for (size_t i = 0; i < c.ck.n_tensors; i++) {
        const st_tensor *t = c.ck.by_name[i];
        if (t->ndim != 2) continue;
        int rows = (int)t->shape[0], cols = (int)t->shape[1];
        float *w = malloc((size_t)rows * cols * sizeof *w), *back = malloc((size_t)cols * sizeof *back);
        assert_non_null(w);
        assert_int_equal(t->gguf_qtype, 1 + FACET_QT_Q8_0);
        assert_int_equal(t->end - t->begin, (uint64_t)rows * cols / 32 * 34);
        for (int r = 0; r < rows; r++)
            facet_qt_q8_0.dequant_row(t->data + (size_t)r * cols / 32 * 34, w + (size_t)r * cols, cols);
        float *orig = malloc((size_t)rows * cols * sizeof *orig);
        memcpy(orig, w, (size_t)rows * cols * sizeof *orig);
        facet_wtensor wt = {.format = FACET_WF_F32, .rows = rows, .cols = cols, .data = w};
        assert_int_equal(facet_wtensor_convert(&wt, FACET_WF_Q8, &err), FACET_OK);
        for (int r = 0; r < rows; r++) {
            facet_wtensor_row(&wt, r, back);
            assert_memory_equal(back, orig + (size_t)r * cols, (size_t)cols * sizeof *back);
        }
        free(wt.data);
        free(wt.scales);
        free(orig);
        free(back);
        n++;
    }
    assert_int_equal(n, 15); /* token_embd + 7 matrices x 2 layers */
    facet_gguf_checkpoint_close(&c);
    gguf_model_close(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_type_table),      cmocka_unit_test(test_valid),
        cmocka_unit_test(test_value_types),     cmocka_unit_test(test_bad_magic),
        cmocka_unit_test(test_bad_version),     cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_counts_past_end), cmocka_unit_test(test_tensor_past_end),
        cmocka_unit_test(test_misaligned),      cmocka_unit_test(test_unknown_type),
        cmocka_unit_test(test_dims),            cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_facts_small),
        cmocka_unit_test(test_facts_gemma2_conventions),     cmocka_unit_test(test_key_wrong_type),
        cmocka_unit_test(test_facts_refused_tensors), cmocka_unit_test(test_rope_freqs_with_scaling),
        cmocka_unit_test(test_key_missing),     cmocka_unit_test(test_split),
        cmocka_unit_test(test_checkpoint_unpermute),
        cmocka_unit_test(test_corpus_tensors),  cmocka_unit_test(test_corpus_facts),
        cmocka_unit_test(test_corpus_q8_0_is_int8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
