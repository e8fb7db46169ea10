/*
 * test_safetensors.c — the safetensors reader: valid files, exact F16/BF16 widening,
 * the bundled stories260k checkpoint, every malformed-header case, and checkpoint folders
 * (single file, two shards, broken indexes).
 *
 * Files are built byte by byte here following the format's specification
 * (8-byte little-endian header length, JSON header, data section). Expected float values
 * come from the IEEE 754 definitions of binary16/bfloat16 and, for the real checkpoint,
 * from reading the file with Python's json + struct modules (an independent reader).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/safetensors.h"

/* ---- helpers ------------------------------------------------------------------- */

/* A whole file: 8-byte LE length of `header`, the header, then `dlen` data bytes. */
static uint8_t *make_st(const char *header, const void *data, size_t dlen, size_t *len) {
    size_t n = strlen(header);
    uint8_t *b = malloc(8 + n + dlen + 1);
    assert_non_null(b);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)n >> (8 * i));
    memcpy(b + 8, header, n);
    if (dlen) memcpy(b + 8 + n, data, dlen);
    *len = 8 + n + dlen;
    return b;
}

/* Parse header+data expecting failure with `status` and every NULL-terminated
 * substring in the message. */
static void expect_err(const char *header, const void *data, size_t dlen, facet_status status,
                       ...) {
    size_t len;
    uint8_t *b = make_st(header, data, dlen, &len);
    st_file f;
    facet_error err = {0};
    facet_status st = st_parse(b, len, "x/model.safetensors", &f, &err);
    if (st != status) fprintf(stderr, "got %d: %s\n", st, err.message);
    assert_int_equal(st, status);
    assert_int_equal(err.status, status);
    assert_null(strchr(err.message, '\n'));
    va_list ap;
    va_start(ap, status);
    for (const char *s; (s = va_arg(ap, const char *));) {
        if (!strstr(err.message, s)) fprintf(stderr, "message '%s' lacks '%s'\n", err.message, s);
        assert_non_null(strstr(err.message, s));
    }
    va_end(ap);
    free(b);
}

static char tmpdir[64];

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static int setup_dir(void **state) {
    (void)state;
    strcpy(tmpdir, "/tmp/facet_st_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state) {
    (void)state;
    return nftw(tmpdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void write_file(const char *name, const void *buf, size_t len) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    fclose(f);
}

static void write_st(const char *name, const char *header, const void *data, size_t dlen) {
    size_t len;
    uint8_t *b = make_st(header, data, dlen, &len);
    write_file(name, b, len);
    free(b);
}

static void write_text(const char *name, const char *text) {
    write_file(name, text, strlen(text));
}

static void expect_ck_err(facet_status status, const char *s1, const char *s2) {
    st_checkpoint ck;
    facet_error err = {0};
    facet_status st = st_checkpoint_open(tmpdir, &ck, &err);
    if (st != status) fprintf(stderr, "got %d: %s\n", st, err.message);
    assert_int_equal(st, status);
    if (s1 && !strstr(err.message, s1)) fprintf(stderr, "'%s' lacks '%s'\n", err.message, s1);
    if (s1) assert_non_null(strstr(err.message, s1));
    if (s2 && !strstr(err.message, s2)) fprintf(stderr, "'%s' lacks '%s'\n", err.message, s2);
    if (s2) assert_non_null(strstr(err.message, s2));
}

/* ---- valid files ------------------------------------------------------------------ */

/* a: F32 [2,2]; b: F16 [3]; c: BF16 scalar; z: F32 [0, 5] empty; header padded with
 * spaces as writers do to align the data section. */
static const char VALID_HDR[] =
    "{\"__metadata__\":{\"format\":\"pt\"},"
    "\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
    "\"b\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[16,22]},"
    "\"c\":{\"dtype\":\"BF16\",\"shape\":[],\"data_offsets\":[22,24]},"
    "\"z\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[24,24]}}     ";

static void valid_data(uint8_t d[24]) {
    const float a[4] = {1.0f, -2.5f, 0.125f, 3e6f};
    /* little-endian encodings written out byte by byte */
    for (int i = 0; i < 4; i++) {
        uint32_t u;
        memcpy(&u, &a[i], 4);
        for (int k = 0; k < 4; k++) d[4 * i + k] = (uint8_t)(u >> (8 * k));
    }
    const uint16_t h[3] = {0x3C00, 0xC000, 0x7BFF}; /* 1, -2, 65504 */
    for (int i = 0; i < 3; i++) {
        d[16 + 2 * i] = (uint8_t)h[i];
        d[17 + 2 * i] = (uint8_t)(h[i] >> 8);
    }
    d[22] = 0x49, d[23] = 0x40; /* bf16 0x4049 = 3.140625 */
}

static void check_valid(const st_file *f) {
    assert_int_equal(f->n_tensors, 4);
    const st_tensor *a = &f->tensors[0], *b = &f->tensors[1], *c = &f->tensors[2];
    assert_string_equal(a->name, "a");
    assert_string_equal(b->name, "b");
    assert_string_equal(c->name, "c");
    assert_string_equal(f->tensors[3].name, "z");
    assert_int_equal(a->dtype, ST_F32);
    assert_int_equal(b->dtype, ST_F16);
    assert_int_equal(c->dtype, ST_BF16);
    assert_int_equal(a->ndim, 2);
    assert_int_equal(a->shape[0], 2);
    assert_int_equal(a->shape[1], 2);
    assert_int_equal(b->ndim, 1);
    assert_int_equal(b->shape[0], 3);
    assert_int_equal(c->ndim, 0);
    assert_int_equal(st_tensor_numel(c), 1);
    assert_int_equal(st_tensor_numel(&f->tensors[3]), 0);
    assert_int_equal(b->begin, 16);
    assert_int_equal(b->end, 22);
    assert_ptr_equal(st_file_find(f, "b"), b);
    assert_null(st_file_find(f, "__metadata__"));
    assert_null(st_file_find(f, "q"));

    float out[4];
    facet_error err = {0};
    assert_int_equal(st_tensor_to_f32(a, out, &err), FACET_OK);
    assert_true(out[0] == 1.0f && out[1] == -2.5f && out[2] == 0.125f && out[3] == 3e6f);
    assert_int_equal(st_tensor_to_f32(b, out, &err), FACET_OK);
    assert_true(out[0] == 1.0f && out[1] == -2.0f && out[2] == 65504.0f);
    assert_int_equal(st_tensor_to_f32(c, out, &err), FACET_OK);
    assert_true(out[0] == 3.140625f);
    assert_int_equal(st_tensor_to_f32(&f->tensors[3], out, &err), FACET_OK);
}

static void test_valid_buffer(void **state) {
    (void)state;
    uint8_t d[24];
    valid_data(d);
    size_t len;
    uint8_t *buf = make_st(VALID_HDR, d, sizeof d, &len);
    st_file f;
    facet_error err = {0};
    assert_int_equal(st_parse(buf, len, "mem", &f, &err), FACET_OK);
    assert_string_equal(f.path, "mem");
    assert_int_equal(f.header_len, strlen(VALID_HDR));
    assert_null(f.map);
    check_valid(&f);
    assert_ptr_equal(f.tensors[1].data, buf + 8 + strlen(VALID_HDR) + 16);
    st_file_close(&f);
    free(buf);
}

static void test_valid_file_mmap(void **state) {
    (void)state;
    uint8_t d[24];
    valid_data(d);
    write_st("one.safetensors", VALID_HDR, d, sizeof d);
    char p[256];
    snprintf(p, sizeof p, "%s/one.safetensors", tmpdir);
    st_file f;
    facet_error err = {0};
    assert_int_equal(st_open(p, &f, &err), FACET_OK);
    assert_non_null(f.map);
    assert_int_equal(f.map_size, 8 + strlen(VALID_HDR) + 24);
    check_valid(&f);
    st_file_close(&f);
}

static void test_f16_bits(void **state) {
    (void)state;
    assert_true(st_f16_to_f32(0x3C00) == 1.0f);
    assert_true(st_f16_to_f32(0x7BFF) == 65504.0f);
    assert_true(st_f16_to_f32(0x0001) == ldexpf(1.0f, -24)); /* smallest subnormal */
    assert_true(st_f16_to_f32(0x03FF) == 1023.0f * ldexpf(1.0f, -24)); /* largest subnormal */
    assert_true(st_f16_to_f32(0x0400) == ldexpf(1.0f, -14)); /* smallest normal */
    assert_true(st_f16_to_f32(0xC000) == -2.0f);
    assert_true(st_f16_to_f32(0x3555) == 0.333251953125f);
    assert_true(st_f16_to_f32(0x0000) == 0.0f && !signbit(st_f16_to_f32(0x0000)));
    assert_true(st_f16_to_f32(0x8000) == 0.0f && signbit(st_f16_to_f32(0x8000)));
    assert_true(st_f16_to_f32(0x8001) == -ldexpf(1.0f, -24));
    assert_true(isinf(st_f16_to_f32(0x7C00)) && st_f16_to_f32(0x7C00) > 0);
    assert_true(isinf(st_f16_to_f32(0xFC00)) && st_f16_to_f32(0xFC00) < 0);
    assert_true(isnan(st_f16_to_f32(0x7E00)));
    assert_true(isnan(st_f16_to_f32(0x7C01))); /* signalling-NaN pattern stays NaN */
}

static void test_bf16_bits(void **state) {
    (void)state;
    assert_true(st_bf16_to_f32(0x3F80) == 1.0f);
    assert_true(st_bf16_to_f32(0xC000) == -2.0f);
    assert_true(st_bf16_to_f32(0x4049) == 3.140625f);
    assert_true(st_bf16_to_f32(0x7F7F) == 0x1.fep127f); /* largest finite */
    assert_true(st_bf16_to_f32(0x0001) == ldexpf(1.0f, -133)); /* smallest subnormal */
    assert_true(isinf(st_bf16_to_f32(0xFF80)) && st_bf16_to_f32(0xFF80) < 0);
    assert_true(isnan(st_bf16_to_f32(0x7FC0)));
    assert_true(signbit(st_bf16_to_f32(0x8000)));
}

static void test_dtype_table(void **state) {
    (void)state;
    assert_string_equal(st_dtype_name(ST_F8_E4M3), "F8_E4M3");
    assert_string_equal(st_dtype_name(ST_BF16), "BF16");
    assert_int_equal(st_dtype_size(ST_F32), 4);
    assert_int_equal(st_dtype_size(ST_BF16), 2);
    assert_int_equal(st_dtype_size(ST_F64), 8);
    assert_int_equal(st_dtype_size(ST_C64), 8);
    assert_int_equal(st_dtype_size(ST_BOOL), 1);
    assert_int_equal(st_dtype_size(ST_F4), 0);
    assert_int_equal(st_dtype_size(ST_F6_E2M3), 0);
}

/* Every dtype of the format parses; only F32/F16/BF16 convert. */
/* float8 e4m3fn widened exactly (DeepSeek-V3's FP8 release), hand-worked codes: 0x38
 * = 2^(7-7) = 1; 0xB9 = -(1 + 1/8); 0x7E = (1 + 6/8) 2^8 = 448, the largest; 0x01 = 2^-9
 * (subnormal); 0x08 = 2^-6, the smallest normal; 0x7F NaN (no infinities). */
static void test_f8e4m3_widens(void **state) {
    (void)state;
    assert_true(st_f8e4m3_to_f32(0x00) == 0.0f);
    assert_true(st_f8e4m3_to_f32(0x38) == 1.0f);
    assert_true(st_f8e4m3_to_f32(0xB9) == -1.125f);
    assert_true(st_f8e4m3_to_f32(0x7E) == 448.0f);
    assert_true(st_f8e4m3_to_f32(0x01) == 0x1p-9f);
    assert_true(st_f8e4m3_to_f32(0x08) == 0x1p-6f);
    assert_true(isnan(st_f8e4m3_to_f32(0x7F)) && isnan(st_f8e4m3_to_f32(0xFF)));
    const uint8_t data[4] = {0x38, 0xB9, 0x7E, 0x01};
    size_t len;
    uint8_t *b = make_st("{\"w\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,2],\"data_offsets\":[0,4]}}",
                         data, 4, &len);
    st_file f;
    facet_error err = {0};
    assert_int_equal(st_parse(b, len, "m", &f, &err), FACET_OK);
    float out[4];
    assert_int_equal(st_tensor_to_f32(&f.tensors[0], out, &err), FACET_OK);
    assert_true(out[0] == 1.0f && out[1] == -1.125f && out[2] == 448.0f && out[3] == 0x1p-9f);
    st_file_close(&f);
    free(b);
}

static void test_other_dtypes_refused(void **state) {
    (void)state;
    static const struct { const char *name; st_dtype dt; unsigned nbytes; } cases[] = {
        {"F64", ST_F64, 16},        {"I8", ST_I8, 2},           {"U8", ST_U8, 2},
        {"I16", ST_I16, 4},         {"U16", ST_U16, 4},         {"I32", ST_I32, 8},
        {"U32", ST_U32, 8},         {"I64", ST_I64, 16},        {"U64", ST_U64, 16},
        {"BOOL", ST_BOOL, 2},       {"F8_E5M2", ST_F8_E5M2, 2},
        {"F8_E8M0", ST_F8_E8M0, 2}, {"F6_E2M3", ST_F6_E2M3, 3}, {"F6_E3M2", ST_F6_E3M2, 3},
        {"F4", ST_F4, 2},           {"C64", ST_C64, 16},
    };
    uint8_t data[64] = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        /* F6 x 4 elements = 3 bytes; others x 2 elements (x4 for F4) */
        unsigned n = cases[i].dt == ST_F6_E2M3 || cases[i].dt == ST_F6_E3M2 ? 4
                     : cases[i].dt == ST_F4                                 ? 4
                                                                            : 2;
        char hdr[256];
        snprintf(hdr, sizeof hdr,
                 "{\"model.layers.0.mlp.up_proj.weight\":{\"dtype\":\"%s\",\"shape\":[%u],"
                 "\"data_offsets\":[0,%u]}}",
                 cases[i].name, n, cases[i].nbytes);
        size_t len;
        uint8_t *b = make_st(hdr, data, cases[i].nbytes, &len);
        st_file f;
        facet_error err = {0};
        assert_int_equal(st_parse(b, len, "m", &f, &err), FACET_OK);
        assert_int_equal(f.tensors[0].dtype, cases[i].dt);
        float out[8];
        assert_int_equal(st_tensor_to_f32(&f.tensors[0], out, &err), FACET_E_UNSUPPORTED);
        assert_int_equal(err.status, FACET_E_UNSUPPORTED);
        assert_non_null(strstr(err.message, "model.layers.0.mlp.up_proj.weight"));
        char want[64];
        snprintf(want, sizeof want, "dtype %s;", cases[i].name);
        assert_non_null(strstr(err.message, want));
        st_file_close(&f);
        free(b);
    }
}

/* The bundled real checkpoint. Expected values from Python json + struct. */
static void test_real_stories260k(void **state) {
    (void)state;
    st_checkpoint ck;
    facet_error err = {0};
    facet_status st = st_checkpoint_open(FACET_SOURCE_DIR "/models/stories260k", &ck, &err);
    if (st != FACET_OK) fprintf(stderr, "%s\n", err.message);
    assert_int_equal(st, FACET_OK);
    assert_int_equal(ck.n_files, 1);
    assert_int_equal(ck.n_tensors, 47);
    assert_int_equal(ck.files[0].header_len, 4856);
    assert_int_equal(ck.files[0].map_size, 1044992);
    for (size_t i = 0; i < ck.n_tensors; i++) assert_int_equal(ck.by_name[i]->dtype, ST_F32);
    for (size_t i = 1; i < ck.n_tensors; i++)
        assert_true(strcmp(ck.by_name[i - 1]->name, ck.by_name[i]->name) < 0);
    assert_null(st_checkpoint_find(&ck, "lm_head.weight"));
    assert_null(st_checkpoint_find(&ck, "__metadata__"));

    const st_tensor *e = st_checkpoint_find(&ck, "model.embed_tokens.weight");
    assert_non_null(e);
    assert_int_equal(e->ndim, 2);
    assert_int_equal(e->shape[0], 512);
    assert_int_equal(e->shape[1], 64);
    assert_int_equal(e->begin, 0);
    assert_int_equal(e->end, 131072);
    float *w = malloc(512 * 64 * sizeof *w);
    assert_int_equal(st_tensor_to_f32(e, w, &err), FACET_OK);
    assert_true(w[0] == -0x1.2dd2ap-2f);
    assert_true(w[1] == 0x1.1fb0c8p-1f);
    assert_true(w[2] == 0x1.6743eep-3f);
    double sum = 0;
    for (int i = 0; i < 512 * 64; i++) sum += w[i];
    assert_true(fabs(sum - -752.3677446640068) < 1e-9);
    free(w);

    const st_tensor *n = st_checkpoint_find(&ck, "model.norm.weight");
    assert_non_null(n);
    assert_int_equal(n->ndim, 1);
    assert_int_equal(n->shape[0], 64);
    assert_int_equal(n->begin, 1039872);
    float nw[64];
    assert_int_equal(st_tensor_to_f32(n, nw, &err), FACET_OK);
    assert_true(nw[0] == 0x1.3aa9dep+1f);
    sum = 0;
    for (int i = 0; i < 64; i++) sum += nw[i];
    assert_true(fabs(sum - 115.95276230573654) < 1e-9);

    const st_tensor *dp = st_checkpoint_find(&ck, "model.layers.4.mlp.down_proj.weight");
    assert_non_null(dp);
    assert_int_equal(dp->shape[0], 64);
    assert_int_equal(dp->shape[1], 172);
    assert_non_null(st_checkpoint_find(&ck, "model.layers.0.input_layernorm.weight"));
    st_checkpoint_close(&ck);
}

/* ---- malformed files: each names what is wrong ------------------------------------ */

static void test_err_truncated(void **state) {
    (void)state;
    const uint8_t b[5] = {1, 0, 0, 0, 0};
    st_file f;
    facet_error err = {0};
    assert_int_equal(st_parse(b, sizeof b, "x/model.safetensors", &f, &err), FACET_E_FORMAT);
    assert_non_null(strstr(err.message, "x/model.safetensors"));
    assert_non_null(strstr(err.message, "5 bytes"));
    assert_int_equal(st_parse(b, 0, "x/e.safetensors", &f, &err), FACET_E_FORMAT);
    assert_non_null(strstr(err.message, "0 bytes"));
}

static void test_err_header_len_past_eof(void **state) {
    (void)state;
    uint8_t b[20] = {0};
    b[0] = 100; /* N = 100 in a 20-byte file */
    st_file f;
    facet_error err = {0};
    assert_int_equal(st_parse(b, sizeof b, "x/model.safetensors", &f, &err), FACET_E_FORMAT);
    assert_non_null(strstr(err.message, "x/model.safetensors"));
    assert_non_null(strstr(err.message, "header length 100"));
    assert_non_null(strstr(err.message, "20 bytes"));
    /* N near 2^64 must not wrap around when added to 8 */
    memset(b, 0xFF, 8);
    assert_int_equal(st_parse(b, sizeof b, "x/model.safetensors", &f, &err), FACET_E_FORMAT);
    assert_non_null(strstr(err.message, "header length 18446744073709551615"));
}

static void test_err_not_json(void **state) {
    (void)state;
    expect_err("{\"a\": [1, 2", NULL, 0, FACET_E_FORMAT, "x/model.safetensors", "header",
               "JSON", NULL);
    expect_err("{\"a\":{}} junk", NULL, 0, FACET_E_FORMAT, "x/model.safetensors", NULL);
    /* a NUL inside a tensor name would make two names compare equal as C strings */
    expect_err("{\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", "x",
               1, FACET_E_FORMAT, "x/model.safetensors", "NUL", NULL);
    expect_err("", NULL, 0, FACET_E_FORMAT, "header length 0", NULL);
}

static void test_err_not_object(void **state) {
    (void)state;
    expect_err("[1, 2, 3]", NULL, 0, FACET_E_FORMAT, "x/model.safetensors", "array",
               "expected an object", NULL);
    expect_err("{\"t\": 5}", NULL, 0, FACET_E_FORMAT, "tensor 't'", "integer",
               "expected an object", NULL);
}

static void test_err_unknown_dtype(void **state) {
    (void)state;
    expect_err("{\"w.weight\":{\"dtype\":\"Q4_K\",\"shape\":[2],\"data_offsets\":[0,2]}}", "ab",
               2, FACET_E_FORMAT, "x/model.safetensors", "'w.weight'", "Q4_K", NULL);
    expect_err("{\"w\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", "abcd", 4,
               FACET_E_FORMAT, "'w'", "\"f32\"", NULL);
    expect_err("{\"w\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", "abcd", 4,
               FACET_E_FORMAT, "'w'", "dtype is a JSON integer", NULL);
    expect_err("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", "abcd", 4, FACET_E_FORMAT,
               "'w'", "dtype", NULL);
}

static void test_err_size_mismatch(void **state) {
    (void)state;
    static uint8_t d[256];
    expect_err("{\"model.norm.weight\":{\"dtype\":\"F32\",\"shape\":[64],"
               "\"data_offsets\":[0,252]}}",
               d, sizeof d, FACET_E_FORMAT,
               "x/model.safetensors: tensor 'model.norm.weight': shape [64] x 4 bytes = 256 but "
               "data_offsets span 252",
               NULL);
    expect_err("{\"q\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", d, 2,
               FACET_E_FORMAT, "'q'", "shape [3] x 4 bits", "whole number of bytes", NULL);
}

static void test_err_offsets_out_of_range(void **state) {
    (void)state;
    expect_err("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", "12345678", 8,
               FACET_E_FORMAT, "'a'", "[4, 12]", "data section of 8 bytes", NULL);
    expect_err("{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[9,8]}}", "12345678", 8,
               FACET_E_FORMAT, "'a'", "[9, 8]", "begin after end", NULL);
    expect_err("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[-1,0]}}", "1", 1,
               FACET_E_FORMAT, "'a'", "data_offsets[0] is -1", NULL);
}

static void test_err_overlap(void **state) {
    (void)state;
    expect_err("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
               "12345678", 8, FACET_E_FORMAT, "'a'", "'b'", "overlap", "[4, 8]", "[0, 8]",
               NULL);
    /* identical ranges overlap too; an empty tensor anywhere overlaps nothing */
    expect_err("{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]},"
               "\"e\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[3,3]},"
               "\"b\":{\"dtype\":\"I8\",\"shape\":[8],\"data_offsets\":[0,8]}}",
               "12345678", 8, FACET_E_FORMAT, "overlap", NULL);
    size_t len;
    uint8_t *b = make_st("{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]},"
                         "\"e\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[3,3]}}",
                         "12345678", 8, &len);
    st_file f;
    facet_error err = {0};
    assert_int_equal(st_parse(b, len, "m", &f, &err), FACET_OK);
    st_file_close(&f);
    free(b);
}

/* The reference implementation's tiling rule: the non-empty tensors' data covers the data
 * section exactly, in order, from offset 0 to the end of the file. */
static void test_err_gap_and_trailing(void **state) {
    (void)state;
    static const uint8_t d[40];
    /* 16 unused bytes between a [0, 8) and b [24, 32) */
    expect_err("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[24,32]}}",
               d, 32, FACET_E_FORMAT,
               "x/model.safetensors: tensor 'b' data_offsets [24, 32] leave a gap of 16 unused "
               "bytes after tensor 'a' [0, 8]",
               NULL);
    /* the first tensor must begin at 0 */
    expect_err("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]}}", d, 8,
               FACET_E_FORMAT, "tensor 'a' data_offsets [4, 8] leave a gap of 4", "offset 0",
               NULL);
    /* 8 bytes after the last tensor's data */
    expect_err("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
               d, 24, FACET_E_FORMAT,
               "x/model.safetensors: 8 trailing bytes after the last tensor's data: tensor 'b' "
               "data_offsets [8, 16] end at 16 but the data section holds 24 bytes",
               NULL);
    expect_err("{}", d, 3, FACET_E_FORMAT, "3 trailing bytes", "no tensor", NULL);
    /* header order does not matter: b first in the header, a first in the data */
    size_t len;
    uint8_t *b = make_st("{\"b\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[5,8]},"
                         "\"a\":{\"dtype\":\"U8\",\"shape\":[5],\"data_offsets\":[0,5]}}",
                         d, 8, &len);
    st_file f;
    facet_error err = {0};
    assert_int_equal(st_parse(b, len, "m", &f, &err), FACET_OK);
    st_file_close(&f);
    free(b);
}

/* A tensor named twice: jansson would keep the last entry, the reference keeps one of
 * them; either way the logits would depend on the reader. */
static void test_err_duplicate_name(void **state) {
    (void)state;
    static const uint8_t d[16];
    expect_err("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
               d, 16, FACET_E_FORMAT,
               "x/model.safetensors: tensor 'w' is named twice in the header (the second entry "
               "at header byte 54)",
               NULL);
    /* a key repeated inside one entry is refused as a key */
    expect_err("{\"w\":{\"dtype\":\"F32\",\"dtype\":\"I32\",\"shape\":[2],"
               "\"data_offsets\":[0,8]}}",
               d, 8, FACET_E_FORMAT, "key 'dtype' appears twice", NULL);
}

static void test_err_negative_shape(void **state) {
    (void)state;
    expect_err("{\"w\":{\"dtype\":\"F32\",\"shape\":[2,-3],\"data_offsets\":[0,0]}}", NULL, 0,
               FACET_E_FORMAT, "'w'", "shape[1] is -3", "non-negative", NULL);
    expect_err("{\"w\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,0]}}", NULL, 0,
               FACET_E_FORMAT, "'w'", "shape[0] is a JSON number", NULL);
    expect_err("{\"w\":{\"dtype\":\"F32\",\"shape\":{},\"data_offsets\":[0,0]}}", NULL, 0,
               FACET_E_FORMAT, "'w'", "shape is a JSON object", NULL);
    expect_err("{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}",
               "abcd", 4, FACET_E_FORMAT, "'w'", "9 dimensions", NULL);
}

static void test_err_shape_overflow(void **state) {
    (void)state;
    /* 2^32 x 2^32 elements overflow 64 bits */
    expect_err("{\"big\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
               "\"data_offsets\":[0,0]}}",
               NULL, 0, FACET_E_FORMAT, "'big'", "[4294967296, 4294967296]", "64 bits", NULL);
    /* 2^62 elements fit, x 32 bits do not */
    expect_err("{\"big\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904],"
               "\"data_offsets\":[0,0]}}",
               NULL, 0, FACET_E_FORMAT, "'big'", "overflows 64 bits", NULL);
    /* integer beyond int64: jansson refuses it, a header JSON error */
    expect_err("{\"big\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],"
               "\"data_offsets\":[0,0]}}",
               NULL, 0, FACET_E_FORMAT, "x/model.safetensors", NULL);
}

static void test_err_offsets_type(void **state) {
    (void)state;
    expect_err("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":\"0-4\"}}", "abcd", 4,
               FACET_E_FORMAT, "'w'", "data_offsets is a JSON string", NULL);
    expect_err("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", "abcd", 4,
               FACET_E_FORMAT, "'w'", "wrong length", NULL);
    expect_err("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,\"4\"]}}", "abcd", 4,
               FACET_E_FORMAT, "'w'", "data_offsets[1] is a JSON string", NULL);
    expect_err("{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", "abcd", 4, FACET_E_FORMAT, "'w'",
               "data_offsets", NULL);
}

static void test_err_metadata(void **state) {
    (void)state;
    expect_err("{\"__metadata__\":{\"format\":1}}", NULL, 0, FACET_E_FORMAT, "__metadata__",
               "'format'", "integer", NULL);
    expect_err("{\"__metadata__\":[]}", NULL, 0, FACET_E_FORMAT, "__metadata__", "array", NULL);
}

static void test_open_errors(void **state) {
    (void)state;
    st_file f;
    facet_error err = {0};
    char p[256];
    snprintf(p, sizeof p, "%s/absent.safetensors", tmpdir);
    assert_int_equal(st_open(p, &f, &err), FACET_E_IO);
    assert_non_null(strstr(err.message, "absent.safetensors"));
    assert_int_equal(st_open(tmpdir, &f, &err), FACET_E_IO);
    write_file("empty.safetensors", "", 0);
    snprintf(p, sizeof p, "%s/empty.safetensors", tmpdir);
    assert_int_equal(st_open(p, &f, &err), FACET_E_FORMAT);
    assert_non_null(strstr(err.message, "empty.safetensors"));
}

/* ---- checkpoint folders ----------------------------------------------------------- */

static const char SHARD1[] =
    "{\"model.embed_tokens.weight\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
    "\"model.norm.weight\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[16,20]}}";
static const char SHARD2[] =
    "{\"__metadata__\":{\"format\":\"pt\"},"
    "\"lm_head.weight\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}";

static void write_two_shards(void) {
    uint8_t d1[20] = {0};
    const float v[4] = {1, 2, 3, 4};
    memcpy(d1, v, 16); /* host is little-endian (x86-64 / aarch64) */
    d1[16] = 0x80, d1[17] = 0x3F, d1[18] = 0x00, d1[19] = 0xC0; /* bf16 1.0, -2.0 */
    const uint8_t d2[4] = {0x00, 0x3C, 0x01, 0x00};              /* f16 1.0, 2^-24 */
    write_st("model-00001-of-00002.safetensors", SHARD1, d1, sizeof d1);
    write_st("model-00002-of-00002.safetensors", SHARD2, d2, sizeof d2);
}

static void test_ck_two_shards(void **state) {
    (void)state;
    write_two_shards();
    write_text("model.safetensors.index.json",
               "{\"metadata\":{\"total_size\":24},\"weight_map\":{"
               "\"model.embed_tokens.weight\":\"model-00001-of-00002.safetensors\","
               "\"lm_head.weight\":\"model-00002-of-00002.safetensors\","
               "\"model.norm.weight\":\"model-00001-of-00002.safetensors\"}}");
    st_checkpoint ck;
    facet_error err = {0};
    assert_int_equal(st_checkpoint_open(tmpdir, &ck, &err), FACET_OK);
    assert_int_equal(ck.n_files, 2);
    assert_int_equal(ck.n_tensors, 3);
    const st_tensor *e = st_checkpoint_find(&ck, "model.embed_tokens.weight");
    const st_tensor *n = st_checkpoint_find(&ck, "model.norm.weight");
    const st_tensor *l = st_checkpoint_find(&ck, "lm_head.weight");
    assert_non_null(e);
    assert_non_null(n);
    assert_non_null(l);
    assert_null(st_checkpoint_find(&ck, "model.layers.0.self_attn.q_proj.weight"));
    assert_int_equal(e->file_index, n->file_index);
    assert_int_not_equal(e->file_index, l->file_index);
    assert_non_null(strstr(ck.files[l->file_index].path, "model-00002-of-00002.safetensors"));
    float out[4];
    assert_int_equal(st_tensor_to_f32(e, out, &err), FACET_OK);
    assert_true(out[0] == 1 && out[1] == 2 && out[2] == 3 && out[3] == 4);
    assert_int_equal(st_tensor_to_f32(n, out, &err), FACET_OK);
    assert_true(out[0] == 1.0f && out[1] == -2.0f);
    assert_int_equal(st_tensor_to_f32(l, out, &err), FACET_OK);
    assert_true(out[0] == 1.0f && out[1] == ldexpf(1.0f, -24));
    st_checkpoint_close(&ck);
}

static void test_ck_single(void **state) {
    (void)state;
    uint8_t d[24];
    valid_data(d);
    write_st("model.safetensors", VALID_HDR, d, sizeof d);
    st_checkpoint ck;
    facet_error err = {0};
    assert_int_equal(st_checkpoint_open(tmpdir, &ck, &err), FACET_OK);
    assert_int_equal(ck.n_files, 1);
    assert_int_equal(ck.n_tensors, 4);
    assert_string_equal(st_checkpoint_find(&ck, "a")->name, "a");
    assert_string_equal(st_checkpoint_find(&ck, "z")->name, "z");
    assert_null(st_checkpoint_find(&ck, "0"));
    assert_null(st_checkpoint_find(&ck, "zz"));
    st_checkpoint_close(&ck);
}

static void test_ck_neither(void **state) {
    (void)state;
    expect_ck_err(FACET_E_IO, tmpdir, "model.safetensors");
    st_checkpoint ck;
    facet_error err = {0};
    assert_int_equal(st_checkpoint_open("/nonexistent/facet/dir", &ck, &err), FACET_E_IO);
    assert_non_null(strstr(err.message, "/nonexistent/facet/dir"));
}

static void test_ck_missing_shard(void **state) {
    (void)state;
    write_two_shards();
    write_text("model.safetensors.index.json",
               "{\"weight_map\":{"
               "\"model.embed_tokens.weight\":\"model-00001-of-00002.safetensors\","
               "\"lm_head.weight\":\"model-00003-of-00003.safetensors\"}}");
    expect_ck_err(FACET_E_NOT_FOUND,
                  "index names shard 'model-00003-of-00003.safetensors' for tensor "
                  "'lm_head.weight' but ",
                  "/model-00003-of-00003.safetensors does not exist");
}

static void test_ck_shard_lacks_tensor(void **state) {
    (void)state;
    write_two_shards();
    write_text("model.safetensors.index.json",
               "{\"weight_map\":{"
               "\"model.embed_tokens.weight\":\"model-00001-of-00002.safetensors\","
               "\"model.layers.0.mlp.up_proj.weight\":\"model-00002-of-00002.safetensors\"}}");
    expect_ck_err(FACET_E_NOT_FOUND, "model-00002-of-00002.safetensors has no tensor",
                  "'model.layers.0.mlp.up_proj.weight'");
    /* present, but in the other shard than the index says */
    write_text("model.safetensors.index.json",
               "{\"weight_map\":{"
               "\"lm_head.weight\":\"model-00001-of-00002.safetensors\","
               "\"model.norm.weight\":\"model-00002-of-00002.safetensors\"}}");
    expect_ck_err(FACET_E_NOT_FOUND, "model-00001-of-00002.safetensors has no tensor 'lm_head.weight'",
                  "it is in");
}

static void test_ck_index_not_json(void **state) {
    (void)state;
    write_two_shards();
    write_text("model.safetensors.index.json", "{\"weight_map\": {\"a\": ");
    expect_ck_err(FACET_E_PARSE, "model.safetensors.index.json", NULL);
    write_text("model.safetensors.index.json", "{\"metadata\": {}}");
    expect_ck_err(FACET_E_FORMAT, "model.safetensors.index.json", "weight_map");
    write_text("model.safetensors.index.json", "{\"weight_map\": {\"a\": 3}}");
    expect_ck_err(FACET_E_FORMAT, "weight_map[\"a\"]", "integer");
    write_text("model.safetensors.index.json", "{\"weight_map\": {}}");
    expect_ck_err(FACET_E_FORMAT, "weight_map", "empty");
}

static void test_ck_shard_name_path(void **state) {
    (void)state;
    write_two_shards();
    write_text("model.safetensors.index.json",
               "{\"weight_map\":{\"lm_head.weight\":\"../model-00002-of-00002.safetensors\"}}");
    expect_ck_err(FACET_E_FORMAT, "'../model-00002-of-00002.safetensors'", "lm_head.weight");
    write_text("model.safetensors.index.json",
               "{\"weight_map\":{\"lm_head.weight\":\"/etc/passwd\"}}");
    expect_ck_err(FACET_E_FORMAT, "'/etc/passwd'", "plain file name");
    write_text("model.safetensors.index.json", "{\"weight_map\":{\"lm_head.weight\":\"..\"}}");
    expect_ck_err(FACET_E_FORMAT, "'..'", NULL);
}

static void test_ck_duplicate_across_shards(void **state) {
    (void)state;
    write_two_shards();
    write_st("extra.safetensors",
             "{\"lm_head.weight\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}",
             "abcd", 4);
    write_text("model.safetensors.index.json",
               "{\"weight_map\":{\"lm_head.weight\":\"model-00002-of-00002.safetensors\","
               "\"x\":\"extra.safetensors\"}}");
    expect_ck_err(FACET_E_FORMAT, "'lm_head.weight' is in both", "extra.safetensors");
}

static void test_ck_bad_shard_file(void **state) {
    (void)state;
    write_two_shards();
    write_file("model-00002-of-00002.safetensors", "\x05\0\0\0\0\0\0\0{}", 10);
    write_text("model.safetensors.index.json",
               "{\"weight_map\":{\"lm_head.weight\":\"model-00002-of-00002.safetensors\"}}");
    expect_ck_err(FACET_E_FORMAT, "model-00002-of-00002.safetensors", "header length 5");
}

#define DT(t) cmocka_unit_test_setup_teardown(t, setup_dir, teardown_dir)

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_buffer),
        DT(test_valid_file_mmap),
        cmocka_unit_test(test_f16_bits),
        cmocka_unit_test(test_bf16_bits),
        cmocka_unit_test(test_dtype_table),
        cmocka_unit_test(test_other_dtypes_refused),
        cmocka_unit_test(test_f8e4m3_widens),
        cmocka_unit_test(test_real_stories260k),
        cmocka_unit_test(test_err_truncated),
        cmocka_unit_test(test_err_header_len_past_eof),
        cmocka_unit_test(test_err_not_json),
        cmocka_unit_test(test_err_not_object),
        cmocka_unit_test(test_err_unknown_dtype),
        cmocka_unit_test(test_err_size_mismatch),
        cmocka_unit_test(test_err_offsets_out_of_range),
        cmocka_unit_test(test_err_overlap),
        cmocka_unit_test(test_err_gap_and_trailing),
        cmocka_unit_test(test_err_duplicate_name),
        cmocka_unit_test(test_err_negative_shape),
        cmocka_unit_test(test_err_shape_overflow),
        cmocka_unit_test(test_err_offsets_type),
        cmocka_unit_test(test_err_metadata),
        DT(test_open_errors),
        DT(test_ck_two_shards),
        DT(test_ck_single),
        DT(test_ck_neither),
        DT(test_ck_missing_shard),
        DT(test_ck_shard_lacks_tensor),
        DT(test_ck_index_not_json),
        DT(test_ck_shard_name_path),
        DT(test_ck_duplicate_across_shards),
        DT(test_ck_bad_shard_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
