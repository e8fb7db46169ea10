/*
 * test_tokenizer_props.c — property and error tests of the tokenizer.
 *
 *  - round trip: for random Unicode strings (all planes, combining marks, ZWJ emoji
 *    sequences, flags, CR/LF mixes, controls), decode(encode(s)) == s for the
 *    SentencePiece-style tokenizers of tests/data (s without U+2581) and for the
 *    byte-level ones of ../shared (qwen3/qwen2.5: == NFC(s) by utf8proc on the whole
 *    string, their normalizer being NFC), gemma3, and llama3.1 (== s after transformers'
 *    clean_up_tokenization, which its config turns on);
 *  - streaming: pushing ids one at a time and flushing gives the whole decode, for
 *    random id sequences (all ids, special and byte tokens included) and for encodings
 *    of random strings, with and without skip_special, for every tokenizer;
 *  - the run-wise NFC/NFD/NFKC/NFKD equals utf8proc over the whole string;
 *  - invalid UTF-8 is FACET_E_UTF8 naming the byte offset; malformed tokenizer.json is
 *    a typed error naming the JSON path; unsupported components are refused by name.
 */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <utf8proc.h>

#include "facet_tokenizer.h"
#include "tokenizer/tokenizer_internal.h"

static unsigned long long rng_state = 12345;
static unsigned rnd(unsigned n) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)((rng_state >> 33) % n);
}

static size_t put_cp(char *o, int32_t cp) { return tok_utf8_encode(cp, o); }

/* A random valid UTF-8 string of about n characters into buf (cap >= 16 * n). */
static size_t random_text(char *buf, size_t n, int allow_2581) {
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t cp;
        switch (rnd(14)) {
        case 0: case 1: case 2: cp = 0x20 + (int32_t)rnd(95); break;         /* ASCII */
        case 3: {                                                             /* whitespace mixes */
            static const char *ws[] = {" ", "  ", "\t", "\r\n", "\n", "\r", "\n\n", " \n "};
            const char *w = ws[rnd(8)];
            memcpy(buf + len, w, strlen(w));
            len += strlen(w);
            continue;
        }
        case 4: cp = 0xA0 + (int32_t)rnd(0x250); break;                      /* Latin */
        case 5: cp = 0x300 + (int32_t)rnd(0x70); break;                      /* combining marks */
        case 6: cp = 0x4E00 + (int32_t)rnd(0x5000); break;                   /* CJK */
        case 7: cp = 0xAC00 + (int32_t)rnd(11172); break;                    /* Hangul */
        case 8: {                                                             /* ZWJ family, skin tone */
            len += put_cp(buf + len, 0x1F468);
            len += put_cp(buf + len, 0x1F3FB + (int32_t)rnd(5));
            len += put_cp(buf + len, 0x200D);
            cp = 0x1F469;
            break;
        }
        case 9: len += put_cp(buf + len, 0x1F1E6 + (int32_t)rnd(26)); cp = 0x1F1E6 + (int32_t)rnd(26); break; /* flag */
        case 10: cp = 0x10000 + (int32_t)rnd(0x100000); break;              /* any astral plane */
        case 11: cp = (int32_t)rnd(0x20); break;                             /* controls, NUL */
        case 12: cp = 0x0600 + (int32_t)rnd(0x100); break;                   /* Arabic */
        default: cp = (int32_t)rnd(0xD800); break;                           /* BMP below surrogates */
        }
        if (cp == 0x2581 && !allow_2581) cp = 'x';
        len += put_cp(buf + len, cp);
    }
    buf[len] = '\0';
    return len;
}

static char *decode_stream(const facet_tokenizer *tok, const int32_t *ids, size_t n, int skip, size_t *out_len) {
    facet_detok_stream *s;
    facet_error err;
    assert_int_equal(facet_detok_stream_create(tok, skip, &s, &err), FACET_OK);
    facet_str acc = {0};
    facet_str_append(&acc, "", 0);
    for (size_t i = 0; i <= n; i++) {
        const char *piece;
        size_t pl;
        facet_status st = i < n ? facet_detok_stream_push(s, ids[i], &piece, &pl, &err)
                                : facet_detok_stream_flush(s, &piece, &pl, &err);
        if (st) fprintf(stderr, "stream: %s\n", err.message);
        assert_int_equal(st, FACET_OK);
        assert_int_equal(strlen(piece) <= pl, 1);
        /* a piece never ends inside a UTF-8 sequence */
        assert_int_equal(tok_utf8_invalid_at(piece, pl), pl);
        facet_str_append(&acc, piece, pl);
    }
    facet_detok_stream_free(s);
    *out_len = acc.len;
    return acc.data;
}

/* facet_detok_stream_mark after k of the n ids (the prompt): what was given out before
 * the mark plus the mark's piece is decode(prompt) = P; the pieces after it (push and
 * flush) are decode(all) = F from j on, j = the longest common prefix of P and F cut back
 * to the start of a UTF-8 character (j = |P| when P is a prefix of F). */
static void check_mark(const facet_tokenizer *tok, const int32_t *ids, size_t n, size_t k, int skip,
                       const char *name) {
    facet_error err;
    char *P, *F;
    size_t pl, fl;
    assert_int_equal(facet_detokenize(tok, ids, k, skip, &P, &pl, &err), FACET_OK);
    assert_int_equal(facet_detokenize(tok, ids, n, skip, &F, &fl, &err), FACET_OK);
    facet_detok_stream *s;
    assert_int_equal(facet_detok_stream_create(tok, skip, &s, &err), FACET_OK);
    facet_str before = {0}, after = {0};
    facet_str_append(&before, "", 0);
    facet_str_append(&after, "", 0);
    const char *piece;
    size_t len;
    for (size_t i = 0; i < k; i++) {
        assert_int_equal(facet_detok_stream_push(s, ids[i], &piece, &len, &err), FACET_OK);
        facet_str_append(&before, piece, len);
    }
    assert_int_equal(facet_detok_stream_mark(s, &piece, &len, &err), FACET_OK);
    facet_str_append(&before, piece, len);
    for (size_t i = k; i <= n; i++) {
        facet_status st = i < n ? facet_detok_stream_push(s, ids[i], &piece, &len, &err)
                                : facet_detok_stream_flush(s, &piece, &len, &err);
        assert_int_equal(st, FACET_OK);
        assert_int_equal(tok_utf8_invalid_at(piece, len), len);
        facet_str_append(&after, piece, len);
    }
    size_t j = 0;
    while (j < pl && j < fl && P[j] == F[j]) j++;
    if (j < pl)
        while (j > 0 && ((unsigned char)F[j] & 0xC0) == 0x80) j--;
    if (before.len != pl || memcmp(before.data, P, pl) || after.len != fl - j ||
        memcmp(after.data, F + j, fl - j)) {
        fprintf(stderr, "%s: mark after %zu of %zu ids (skip=%d): prompt %zu/%zu bytes, completion %zu "
                        "bytes, want %zu\n", name, k, n, skip, before.len, pl, after.len, fl - j);
        fail();
    }
    facet_detok_stream_free(s);
    free(P);
    free(F);
    free(before.data);
    free(after.data);
}

static void check_stream(const facet_tokenizer *tok, const int32_t *ids, size_t n, const char *name) {
    check_mark(tok, ids, n, rnd((unsigned)n + 1), rnd(2), name);
    for (int skip = 0; skip < 2; skip++) {
        char *whole, *streamed;
        size_t wl, sl;
        facet_error err;
        assert_int_equal(facet_detokenize(tok, ids, n, skip, &whole, &wl, &err), FACET_OK);
        streamed = decode_stream(tok, ids, n, skip, &sl);
        if (wl != sl || memcmp(whole, streamed, wl)) {
            fprintf(stderr, "%s: streaming differs (skip=%d, %zu ids)\n  whole %zu bytes, streamed %zu bytes\n", name,
                    skip, n, wl, sl);
            fail();
        }
        free(whole);
        free(streamed);
    }
}

/* transformers' clean_up_tokenization, written out here as its Python source states it:
 * str.replace of each pair in turn over the whole string. Returns a malloc'd string. */
static char *py_cleanup(const char *s, size_t len, size_t *out_len) {
    static const char *const pairs[][2] = {{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
                                           {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    char *cur = malloc(len + 1);
    memcpy(cur, s, len);
    size_t n = len;
    for (size_t k = 0; k < sizeof pairs / sizeof *pairs; k++) {
        size_t pl = strlen(pairs[k][0]), rl = strlen(pairs[k][1]), m = 0;
        char *next = malloc(n + 1);
        for (size_t i = 0; i < n;) {
            if (i + pl <= n && !memcmp(cur + i, pairs[k][0], pl)) {
                memcpy(next + m, pairs[k][1], rl);
                m += rl;
                i += pl;
            } else {
                next[m++] = cur[i++];
            }
        }
        free(cur);
        cur = next;
        n = m;
    }
    *out_len = n;
    return cur;
}

/* Round trip and streaming over one tokenizer folder. mode: 0 = s, 1 = NFC(s),
 * 2 = transformers' clean-up of s, -1 = no round-trip check (streaming only). */
static void props_for(const char *dir, int mode, int iters) {
    facet_tokenizer *tok;
    facet_error err;
    assert_int_equal(facet_tokenizer_load(dir, &tok, &err), FACET_OK);
    char *buf = malloc(16 * 400 + 64);
    size_t trips = 0;
    for (int it = 0; it < iters; it++) {
        size_t len = random_text(buf, 1 + rnd(120), 0);
        int32_t *ids;
        size_t n;
        assert_int_equal(facet_tokenize(tok, buf, len, it & 1, &ids, &n, &err), FACET_OK);
        if (mode >= 0) {
            char *text;
            size_t tl;
            assert_int_equal(facet_detokenize(tok, ids, n, 1, &text, &tl, &err), FACET_OK);
            const char *want = buf;
            size_t wl = len;
            utf8proc_uint8_t *nfc = NULL;
            if (mode == 2) {
                nfc = (utf8proc_uint8_t *)py_cleanup(buf, len, &wl);
                want = (const char *)nfc;
            }
            if (mode == 1) {
                utf8proc_ssize_t k = utf8proc_map((const utf8proc_uint8_t *)buf, (utf8proc_ssize_t)len, &nfc,
                                                  UTF8PROC_STABLE | UTF8PROC_COMPOSE);
                assert_true(k >= 0);
                want = (const char *)nfc;
                wl = (size_t)k;
            }
            if (tl != wl || memcmp(text, want, wl)) {
                fprintf(stderr, "%s: round trip differs for a %zu-byte string (got %zu bytes)\n", dir, wl, tl);
                fail();
            }
            trips++;
            free(nfc);
            free(text);
        }
        check_stream(tok, ids, n, dir);
        free(ids);
        /* random ids: every id, special and byte-fallback tokens included */
        int32_t rid[64];
        size_t rn = 1 + rnd(64);
        for (size_t i = 0; i < rn; i++) {
            unsigned r = rnd(4);
            rid[i] = r == 0 ? (int32_t)rnd(300) : (int32_t)rnd((unsigned)facet_tokenizer_vocab_size(tok));
            if (!facet_tokenizer_id_to_token(tok, rid[i])) rid[i] = 0;
        }
        check_stream(tok, rid, rn, dir);
    }
    printf("  %s: %d random strings, %zu round trips, streaming == whole decode for %d x 2 sequences\n", dir, iters,
           trips, iters);
    free(buf);
    facet_tokenizer_free(tok);
}

static void test_props_bundled(void **state) {
    (void)state;
    props_for(FACET_SOURCE_DIR "/models/stories260k", 0, 300);
    props_for(FACET_TEST_DATA "/tokenizers/tinyllama-1.1b-chat-v1.0", 0, 150);
    props_for(FACET_TEST_DATA "/tokenizers/mistral-v0.1", 0, 150);
    props_for(FACET_TEST_DATA "/tokenizers/phi-3-mini-4k-instruct", 0, 150);
}

static void test_props_shared(void **state) {
    (void)state;
    const char *shared = getenv("FACET_SHARED");
    char root[4096], dir[4200];
    snprintf(root, sizeof root, "%s/corpus/tokenizers", shared ? shared : FACET_SOURCE_DIR "/../shared");
    struct stat st;
    if (stat(root, &st)) {
        printf("SKIPPED: %s is absent: byte-level round trips were NOT tested\n", root);
        skip();
    }
    static const struct { const char *name; int mode; } t[] = {
        {"qwen3", 1}, {"qwen2.5", 1}, {"gpt-oss", 0}, {"deepseek-v3", 0},
        {"llama3.1", 2}, /* clean_up_tokenization_spaces is true: decode gives the cleaned text */
        {"gemma3", 0},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        snprintf(dir, sizeof dir, "%s/%s", root, t[i].name);
        props_for(dir, t[i].mode, 40);
    }
}

static void test_unicode_forms_match_utf8proc(void **state) {
    (void)state;
    static const char *types[] = {"NFC", "NFD", "NFKC", "NFKD"};
    static const utf8proc_option_t opts[] = {UTF8PROC_COMPOSE, UTF8PROC_DECOMPOSE, UTF8PROC_COMPOSE | UTF8PROC_COMPAT,
                                             UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT};
    char *buf = malloc(16 * 200 + 64);
    for (int f = 0; f < 4; f++) {
        tok_normalizer n = {0};
        n.type = (tok_norm_type)(TOK_NORM_NFC + f);
        for (int it = 0; it < 300; it++) {
            size_t len = random_text(buf, 1 + rnd(150), 1);
            facet_str out = {0};
            facet_error err;
            assert_int_equal(tok_normalize(&n, buf, len, &out, &err), FACET_OK);
            utf8proc_uint8_t *want = NULL;
            utf8proc_ssize_t k = utf8proc_map((const utf8proc_uint8_t *)buf, (utf8proc_ssize_t)len, &want,
                                              UTF8PROC_STABLE | opts[f]);
            assert_true(k >= 0);
            if ((size_t)k != out.len || memcmp(want, out.data, out.len)) {
                fprintf(stderr, "%s differs from utf8proc on a %zu-byte string\n", types[f], len);
                fail();
            }
            free(want);
            facet_str_free(&out);
        }
    }
    free(buf);
}

/* Lossy UTF-8 decoding (Rust String::from_utf8_lossy, which the ByteLevel decoder
 * uses): expected outputs from Python's bytes.decode("utf-8", "replace"), which follows
 * the same Unicode "maximal subpart" practice. Also fed one byte at a time through the
 * streaming form. */
static void test_lossy_matches_python(void **state) {
    (void)state;
    static const struct { const char *in; size_t n; const char *want; size_t wn; } c[] = {
        {"\xe6\x97\x61", 3, "\xef\xbf\xbd\x61", 4},
        {"\xf0\x9f\x98", 3, "\xef\xbf\xbd", 3},
        {"\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 9},
        {"\xc0\x80", 2, "\xef\xbf\xbd\xef\xbf\xbd", 6},
        {"\xff\xfe", 2, "\xef\xbf\xbd\xef\xbf\xbd", 6},
        {"\x61\xf4\x90\x80\x80\x62", 6, "\x61\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\x62", 14},
        {"\xe2\x82\xac\xe2\x82", 5, "\xe2\x82\xac\xef\xbf\xbd", 6},
        {"\xf0\x9f\x98\x80\x80", 5, "\xf0\x9f\x98\x80\xef\xbf\xbd", 7},
        {"\xe0\x80\xaf", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 9},
        {"\xf1\x80\x80\xe2\x82\xac", 6, "\xef\xbf\xbd\xe2\x82\xac", 6},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        facet_str out = {0}, pend = {0}, st = {0};
        assert_int_equal(tok_utf8_lossy_append(&out, (const unsigned char *)c[i].in, c[i].n), 0);
        assert_int_equal(out.len, c[i].wn);
        assert_memory_equal(out.data, c[i].want, c[i].wn);
        for (size_t k = 0; k < c[i].n; k++) {
            facet_str_append(&pend, c[i].in + k, 1);
            size_t used = tok_utf8_lossy_decided(&st, (const unsigned char *)pend.data, pend.len);
            memmove(pend.data, pend.data + used, pend.len - used);
            pend.len -= used;
        }
        tok_utf8_lossy_append(&st, (const unsigned char *)(pend.data ? pend.data : ""), pend.len);
        assert_int_equal(st.len, c[i].wn);
        assert_memory_equal(st.data, c[i].want, c[i].wn);
        facet_str_free(&out);
        facet_str_free(&pend);
        facet_str_free(&st);
    }
}

static void test_invalid_utf8(void **state) {
    (void)state;
    facet_tokenizer *tok;
    facet_error err;
    assert_int_equal(facet_tokenizer_load(FACET_SOURCE_DIR "/models/stories260k", &tok, &err), FACET_OK);
    static const struct { const char *s; size_t len, at; } cases[] = {
        {"ab\xff", 3, 2},              {"\xc0\x80", 2, 0},              /* overlong NUL */
        {"x\xed\xa0\x80", 4, 1},       /* surrogate */                  {"hi \xe6\x97", 5, 3}, /* truncated */
        {"\xf4\x90\x80\x80", 4, 0},    /* above U+10FFFF */             {"ok\x80", 3, 2},      /* lone continuation */
        {"\xe2\x82\xac\xe0\x80\xaf", 6, 3}, /* overlong after a valid € */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int32_t *ids = NULL;
        size_t n;
        assert_int_equal(facet_tokenize(tok, cases[i].s, cases[i].len, 1, &ids, &n, &err), FACET_E_UTF8);
        char want[64];
        snprintf(want, sizeof want, "byte offset %zu", cases[i].at);
        if (!strstr(err.message, want)) fprintf(stderr, "message \"%s\" lacks \"%s\"\n", err.message, want);
        assert_non_null(strstr(err.message, want));
        assert_null(ids);
    }
    /* NUL is valid UTF-8 and encodes (byte fallback <0x00>) */
    int32_t *ids;
    size_t n;
    assert_int_equal(facet_tokenize(tok, "a\0b", 3, 0, &ids, &n, &err), FACET_OK);
    free(ids);
    facet_tokenizer_free(tok);
}

/* The bundled tokenizer.json with one substring replaced: a malformed variant. */
static facet_status load_variant(const char *from, const char *to, facet_error *err) {
    char *data;
    size_t len;
    FILE *f = fopen(FACET_SOURCE_DIR "/models/stories260k/tokenizer.json", "rb");
    assert_non_null(f);
    data = malloc(1 << 16);
    len = fread(data, 1, 1 << 16, f);
    fclose(f);
    char *hit = memmem(data, len, from, strlen(from));
    assert_non_null(hit);
    facet_str b = {0};
    facet_str_append(&b, data, (size_t)(hit - data));
    facet_str_append(&b, to, strlen(to));
    facet_str_append(&b, hit + strlen(from), len - (size_t)(hit - data) - strlen(from));
    facet_tokenizer *tok = NULL;
    facet_status st = tok_load_from_memory(b.data, b.len, NULL, 0, "tokenizer.json", &tok, err);
    facet_tokenizer_free(tok);
    facet_str_free(&b);
    free(data);
    return st;
}

static void expect(const char *from, const char *to, facet_status status, const char *needle) {
    facet_error err = {0};
    facet_status st = load_variant(from, to, &err);
    if (st != status || !strstr(err.message, needle))
        fprintf(stderr, "replacing %s by %s: got %s \"%s\", want %s containing \"%s\"\n", from, to,
                facet_status_name(st), err.message, facet_status_name(status), needle);
    assert_int_equal(st, status);
    assert_non_null(strstr(err.message, needle));
}

static void test_malformed_json_paths(void **state) {
    (void)state;
    expect("\"content\": \"<unk>\"", "\"content\": 7", FACET_E_FORMAT, "added_tokens[0].content: expected a string, got integer");
    expect("\"type\": \"Prepend\"", "\"type\": \"Frobnicate\"", FACET_E_UNSUPPORTED, "normalizer.normalizers[0].type: normalizer \"Frobnicate\"");
    expect("\"type\": \"ByteFallback\"", "\"type\": \"Nope\"", FACET_E_UNSUPPORTED, "decoder.decoders[1].type: decoder \"Nope\"");
    expect("\"pre_tokenizer\": null", "\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(\"}}",
           FACET_E_FORMAT, "pre_tokenizer.pattern: regex does not compile");
    expect("\"pre_tokenizer\": null", "\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, \"behavior\": \"Sideways\"}",
           FACET_E_FORMAT, "pre_tokenizer.behavior: \"Sideways\"");
    expect("\"type\": \"BPE\"", "\"type\": \"Unigram\"", FACET_E_UNSUPPORTED, "model type \"Unigram\" is not supported");
    expect("\"type\": \"BPE\"", "\"type\": \"WordLevel\"", FACET_E_UNSUPPORTED, "model type \"WordLevel\"");
    expect("\"fuse_unk\": true", "\"fuse_unk\": \"yes\"", FACET_E_FORMAT, "model.fuse_unk: expected true or false, got string");
    expect("\"unk_token\": \"<unk>\"", "\"unk_token\": \"<nope>\"", FACET_E_FORMAT, "model.unk_token: \"<nope>\" is not in model.vocab");
    expect("\"<unk>\": 0,", "\"<unk>\": 0.5,", FACET_E_FORMAT, "model.vocab[\"<unk>\"]: expected a token id");
    /* the value is shown alone, without the JSON that follows it */
    expect("\"<unk>\": 0,", "\"<unk>\": 1099511627776,", FACET_E_FORMAT,
           "model.vocab[\"<unk>\"]: expected a token id (integer 0..4194303), got '1099511627776'");
    expect("\"\u2581 t\"", "\"\u2581 zz\"", FACET_E_FORMAT, "model.merges[0]: token \"zz\" is not in model.vocab");
    expect("\"\u2581 t\"", "\"\u2581t\"", FACET_E_FORMAT, "model.merges[0]: expected \"A B\"");
    expect("\"version\": \"1.0\",", "\"version\": \"1.0\",,", FACET_E_PARSE, "tokenizer.json:");
    expect("\"ids\": [\n          1\n        ]", "\"ids\": [99999]", FACET_E_FORMAT, "post_processor.special_tokens[\"<s>\"].ids[0]");
}

/* tokenizer_config.json split_special_tokens: true makes "<s>" plain text. Oracle: the
 * SentencePiece ids of tokenizer_expected.json for the same text (SentencePiece never
 * matches special-token literals; the text has single spaces, where the two agree). */
static void test_split_special_tokens(void **state) {
    (void)state;
    FILE *f = fopen(FACET_SOURCE_DIR "/models/stories260k/tokenizer.json", "rb");
    assert_non_null(f);
    char *json = malloc(1 << 16);
    size_t len = fread(json, 1, 1 << 16, f);
    fclose(f);
    static const char cfg[] = "{\"tokenizer_class\": \"LlamaTokenizer\", \"split_special_tokens\": true, \"bos_token\": \"<s>\"}";
    facet_tokenizer *tok;
    facet_error err;
    assert_int_equal(tok_load_from_memory(json, len, cfg, sizeof cfg - 1, "t.json", &tok, &err), FACET_OK);
    static const char text[] = "literal <s> and </s> text";
    static const int32_t want[] = {1, 278, 275, 285, 412, 421, 410, 504, 419, 505, 269, 410, 504, 492, 419, 505, 259, 411, 444, 413};
    int32_t *ids;
    size_t n;
    assert_int_equal(facet_tokenize(tok, text, sizeof text - 1, 1, &ids, &n, &err), FACET_OK);
    assert_int_equal(n, sizeof want / sizeof *want);
    assert_memory_equal(ids, want, sizeof want);
    free(ids);
    facet_tokenizer_free(tok);
    /* a Llama-class config with add_prefix_space would need tokenizer.model: refused */
    static const char cfg2[] = "{\"tokenizer_class\": \"LlamaTokenizerFast\", \"add_prefix_space\": false}";
    assert_int_equal(tok_load_from_memory(json, len, cfg2, sizeof cfg2 - 1, "t.json", &tok, &err), FACET_E_UNSUPPORTED);
    assert_non_null(strstr(err.message, "add_prefix_space"));
    free(json);
}

/* Several threads encoding with one tokenizer (shared word cache) get the ids a single
 * thread gets. */
typedef struct mt_arg {
    const facet_tokenizer *tok;
    const char *text;
    size_t len;
    const int32_t *want;
    size_t n_want;
    int ok;
} mt_arg;

static void *mt_worker(void *p) {
    mt_arg *a = p;
    a->ok = 1;
    for (int r = 0; r < 20 && a->ok; r++) {
        int32_t *ids;
        size_t n;
        facet_error err;
        if (facet_tokenize(a->tok, a->text, a->len, 1, &ids, &n, &err)) {
            a->ok = 0;
            break;
        }
        a->ok = n == a->n_want && !memcmp(ids, a->want, n * sizeof *ids);
        free(ids);
    }
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    facet_tokenizer *tok;
    facet_error err;
    assert_int_equal(facet_tokenizer_load(FACET_TEST_DATA "/tokenizers/tinyllama-1.1b-chat-v1.0", &tok, &err), FACET_OK);
    char *buf = malloc(16 * 3000 + 64);
    size_t len = random_text(buf, 3000, 0);
    int32_t *want;
    size_t n;
    assert_int_equal(facet_tokenize(tok, buf, len, 1, &want, &n, &err), FACET_OK);
    facet_tokenizer_free(tok); /* a fresh tokenizer: the threads fill its cache together */
    assert_int_equal(facet_tokenizer_load(FACET_TEST_DATA "/tokenizers/tinyllama-1.1b-chat-v1.0", &tok, &err), FACET_OK);
    pthread_t th[4];
    mt_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (mt_arg){tok, buf, len, want, n, 0};
        assert_int_equal(pthread_create(&th[i], NULL, mt_worker, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_true(args[i].ok);
    }
    free(want);
    free(buf);
    facet_tokenizer_free(tok);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lossy_matches_python),
        cmocka_unit_test(test_split_special_tokens),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_malformed_json_paths),
        cmocka_unit_test(test_unicode_forms_match_utf8proc),
        cmocka_unit_test(test_props_bundled),
        cmocka_unit_test(test_props_shared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
