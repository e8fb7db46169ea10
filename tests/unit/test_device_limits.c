/*
 * test_device_limits.c — the capability table's vulkan column judged against a device's
 * limits (model/device_verdict.h, issue 24), with hand-made limits: no device needed.
 * The oracle is arithmetic on what the shaders declare: attn_flash.comp's shared arrays
 * (its query, K/V and score tiles by head_dim); a weight matrix is rows x cols
 * float32 words, or rows x ceil(cols / 2) words in bf16/f16; the largest workgroup is
 * 16 x 16. Shapes: Llama-3.2-1B's and Gemma 2's published configs. And the declared
 * workgroup needs against every shader's local_size in the source tree.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/device_verdict.h"

/* an H200 as NVIDIA's Vulkan driver reports the limits the kernels read */
static facet_device_limits h200(void) {
    facet_device_limits l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "Fake H200");
    l.count = 1;
    l.memory_bytes = 143771009024ull;
    l.max_shared_bytes = 49152;
    l.max_invocations = 1024;
    l.max_group_size[0] = l.max_group_size[1] = 1024;
    l.max_group_size[2] = 64;
    l.subgroup_size = 32;
    l.max_storage_range = 4294967295ull;
    l.features = FACET_DEV_FLOAT16 | FACET_DEV_INT8 | FACET_DEV_STORAGE16 | FACET_DEV_STORAGE8;
    return l;
}

static facet_facts facts;

/* Llama-3.2-1B: hidden 2048, 32 heads of 64 (8 kv), intermediate 8192, vocab 128256 */
static const facet_facts *llama_1b(void) {
    memset(&facts, 0, sizeof facts);
    facts.hidden_size = 2048;
    facts.intermediate_size = 8192;
    facts.num_attention_heads = 32;
    facts.num_key_value_heads = 8;
    facts.head_dim = 64;
    facts.vocab_size = 128256;
    return &facts;
}

static void judge(const facet_facts *f, facet_weight_format *w, const facet_device_limits *l,
                  const vk_needs *n, facet_verdict *v, char *note) {
    memset(v, 0, sizeof *v);
    snprintf(v->backend, sizeof v->backend, "vulkan");
    facet_judge_device(f, w, l, n, v, note, 320);
}

static facet_verdict v;
static char note[320];

static void test_h200_serves_llama_1b(void **state) {
    (void)state;
    facet_device_limits l = h200();
    facet_weight_format w = FACET_WEIGHTS_BF16;
    judge(llama_1b(), &w, &l, NULL, &v, note);
    assert_int_equal(v.status, FACET_VERDICT_SUPPORTED);
    assert_int_equal(v.n_refusals, 0);
    assert_int_equal(w, FACET_WEIGHTS_BF16);
    assert_string_equal(note, "");
}

static void test_head_dim_past_shared_memory(void **state) {
    (void)state;
    /* attn_flash.comp's arrays in floats: Qs[BQ * HDMAX] + KV[16 * HDMAX] + S[BQ * 16] +
     * Mx, Lx, Cx[BQ], with (HDMAX, BQ) = (64, 16), (128, 8), (256, 8) */
    assert_int_equal(vk_attention_shared_bytes(64), 4 * (16 * 64 + 16 * 64 + 16 * 16 + 3 * 16));
    assert_int_equal(vk_attention_shared_bytes(65), 4 * (8 * 128 + 16 * 128 + 8 * 16 + 3 * 8));
    assert_int_equal(vk_attention_shared_bytes(256), 25184);
    facet_device_limits l = h200();
    facet_facts *f = (facet_facts *)llama_1b();
    f->head_dim = 256; /* Gemma 2: served by 49152 bytes */
    f->hidden_size = 2304;
    facet_weight_format w = FACET_WEIGHTS_F32;
    judge(f, &w, &l, NULL, &v, note);
    assert_int_equal(v.n_refusals, 0);
    /* Vulkan's guaranteed minimum, 16384 bytes: 256 is past it, 128 the largest served */
    l.max_shared_bytes = 16384;
    judge(f, &w, &l, NULL, &v, note);
    assert_int_equal(v.status, FACET_VERDICT_REFUSED);
    assert_int_equal(v.n_refusals, 1);
    assert_string_equal(v.refusals[0].fact, "head_dim");
    assert_string_equal(v.refusals[0].value, "256");
    assert_string_equal(v.refusals[0].text,
                        "REFUSED: head_dim=256 is not supported on vulkan (supported: head_dim "
                        "<= 128 on Fake H200: the attention kernel stages 25184 bytes of shared "
                        "memory for head_dim 256, more than its maxComputeSharedMemorySize of "
                        "16384 bytes)");
    facet_error err;
    assert_int_equal(facet_verdict_error(&v, &err), FACET_E_UNSUPPORTED);
    assert_non_null(strstr(err.message, "head_dim=256"));
    /* 12000 bytes: 128 (12896) is past it, 64 (9408) served */
    l.max_shared_bytes = 12000;
    f->head_dim = 128;
    judge(f, &w, &l, NULL, &v, note);
    assert_int_equal(v.n_refusals, 1);
    assert_non_null(strstr(v.refusals[0].supported, "head_dim <= 64 on Fake H200"));
    f->head_dim = 64;
    judge(f, &w, &l, NULL, &v, note);
    assert_int_equal(v.n_refusals, 0);
    /* under the smallest tile: no head_dim at all */
    l.max_shared_bytes = 9000;
    judge(f, &w, &l, NULL, &v, note);
    assert_non_null(strstr(v.refusals[0].supported, "no head_dim on Fake H200"));
}

static void test_weight_past_storage_range(void **state) {
    (void)state;
    facet_device_limits l = h200();
    /* a matrix is split by rows into at most 16 bindings of maxStorageBufferRange:
     * lavapipe's 128 MiB holds Llama-3.2-1B's f32 lm_head (1 GB) in 8 parts */
    l.max_storage_range = 134217728;
    facet_weight_format w = FACET_WEIGHTS_F32;
    judge(llama_1b(), &w, &l, NULL, &v, note);
    assert_int_equal(v.n_refusals, 0);
    /* 32 MiB: 4096 rows of 8 KiB a part, 32 parts for 128256 rows */
    l.max_storage_range = 1u << 25;
    judge(llama_1b(), &w, &l, NULL, &v, note);
    assert_int_equal(v.n_refusals, 1);
    assert_string_equal(v.refusals[0].fact, "weight matrix");
    assert_string_equal(v.refusals[0].value, "lm_head [128256][2048] f32, 1050673152 bytes");
    assert_non_null(strstr(v.refusals[0].supported,
                           "<= 16 bindings of 33554432 bytes per matrix on Fake H200"));
    /* bf16 halves the rows: 8192 a part, 16 parts, served */
    w = FACET_WEIGHTS_BF16;
    judge(llama_1b(), &w, &l, NULL, &v, note);
    assert_int_equal(v.n_refusals, 0);
    /* the matrix needing the most parts is named: a wide FFN over a small vocabulary,
     * down_proj's rows of 50001 words 5 a part (410 parts), gate_proj's 256 (391) */
    facet_facts *f = (facet_facts *)llama_1b();
    f->vocab_size = 512;
    f->intermediate_size = 100001;
    l.max_storage_range = 1u << 20;
    judge(f, &w, &l, NULL, &v, note);
    assert_string_equal(v.refusals[0].value, "down_proj [2048][100001] bf16, 409608192 bytes");
    /* a row past one binding cannot be split at all */
    l.max_storage_range = 100000;
    judge(f, &w, &l, NULL, &v, note);
    assert_int_equal(v.n_refusals, 1);
    assert_string_equal(v.refusals[0].value, "down_proj [2048][100001] bf16, 409608192 bytes");
}

static void test_workgroup_and_matmul_tiles(void **state) {
    (void)state;
    facet_device_limits l = h200();
    l.max_invocations = 128; /* Vulkan's guaranteed minimum */
    l.max_group_size[1] = 8;
    l.max_shared_bytes = 2048; /* under the two 16 x 17 float tiles (2176 bytes) */
    facet_weight_format w = FACET_WEIGHTS_F32;
    facet_facts *f = (facet_facts *)llama_1b();
    f->vocab_size = f->hidden_size = f->intermediate_size = 16;
    f->num_attention_heads = f->num_key_value_heads = 1;
    judge(f, &w, &l, NULL, &v, note);
    assert_int_equal(v.n_refusals, 4); /* and the attention's 9408 bytes for head_dim 64 */
    assert_string_equal(v.refusals[3].fact, "head_dim");
    assert_string_equal(v.refusals[0].text,
                        "REFUSED: workgroup=256 invocations is not supported on vulkan "
                        "(supported: <= 128 on Fake H200 (maxComputeWorkGroupInvocations))");
    assert_string_equal(v.refusals[1].value, "64 x 16");
    assert_non_null(strstr(v.refusals[1].supported, "<= 1024 x 8 on Fake H200"));
    assert_string_equal(v.refusals[2].fact, "matmul shared memory");
    assert_string_equal(v.refusals[2].value, "2176 bytes");
}

/* A kernel whose bf16 matmul needs 16-bit storage (as a float16_t / bf16 load would):
 * on a device without it, bf16 weights run as f16 (the rule) when f16's kernels
 * need nothing the device lacks, else bf16 is refused naming the feature. */
static void test_bf16_falls_back_to_f16(void **state) {
    (void)state;
    vk_needs n = vk_needs_current;
    n.weight_features[FACET_WEIGHTS_BF16] = FACET_DEV_STORAGE16 | FACET_DEV_FLOAT16;
    facet_device_limits l = h200();
    l.features = FACET_DEV_FLOAT16;
    facet_weight_format w = FACET_WEIGHTS_BF16;
    judge(llama_1b(), &w, &l, &n, &v, note);
    assert_int_equal(v.n_refusals, 0);
    assert_int_equal(w, FACET_WEIGHTS_F16);
    assert_string_equal(note, "weights=bf16 run as f16 on Fake H200: its bf16 kernels need "
                              "16-bit storage (storageBuffer16BitAccess), which the device lacks");
    /* f32 and f16 weights are not touched */
    w = FACET_WEIGHTS_F32;
    judge(llama_1b(), &w, &l, &n, &v, note);
    assert_int_equal(w, FACET_WEIGHTS_F32);
    assert_string_equal(note, "");
    /* f16's kernels needing it too: bf16 refused by name */
    n.weight_features[FACET_WEIGHTS_F16] = FACET_DEV_STORAGE16;
    w = FACET_WEIGHTS_BF16;
    judge(llama_1b(), &w, &l, &n, &v, note);
    assert_int_equal(w, FACET_WEIGHTS_BF16);
    assert_int_equal(v.n_refusals, 1);
    assert_string_equal(v.refusals[0].text,
                        "REFUSED: weights=bf16 is not supported on vulkan (supported: formats "
                        "whose kernels need only what Fake H200 has; it lacks 16-bit storage "
                        "(storageBuffer16BitAccess))");
    /* the kernels in this tree unpack 16-bit weights from 32-bit words: nothing needed */
    l.features = 0;
    w = FACET_WEIGHTS_BF16;
    judge(llama_1b(), &w, &l, NULL, &v, note);
    assert_int_equal(v.n_refusals, 0);
    assert_int_equal(w, FACET_WEIGHTS_BF16);
}

/* The declared workgroup needs cover every shader in the tree: a shader added or widened
 * without its line in vk_needs.c fails here (read off the GLSL's local_size). */
static void test_needs_cover_the_shaders(void **state) {
    (void)state;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "ls %s/src/backend/vulkan/shaders/*.comp", FACET_SOURCE_DIR);
    FILE *ls = popen(cmd, "r");
    assert_non_null(ls);
    char path[1024];
    int shaders = 0;
    while (fgets(path, sizeof path, ls)) {
        path[strcspn(path, "\n")] = '\0';
        FILE *fp = fopen(path, "r");
        assert_non_null(fp);
        char line[512];
        unsigned x = 1, y = 1;
        while (fgets(line, sizeof line, fp)) {
            const char *lx = strstr(line, "local_size_x = "), *ly = strstr(line, "local_size_y = ");
            if (lx) x = (unsigned)strtoul(lx + 15, NULL, 10);
            if (ly) y = (unsigned)strtoul(ly + 15, NULL, 10);
        }
        fclose(fp);
        if (x > vk_needs_current.group_x || y > vk_needs_current.group_y ||
            x * y > vk_needs_current.invocations)
            fail_msg("%s: workgroup %u x %u is past vk_needs.c's %u x %u, %u invocations", path,
                     x, y, vk_needs_current.group_x, vk_needs_current.group_y,
                     vk_needs_current.invocations);
        shaders++;
    }
    pclose(ls);
    assert_true(shaders >= 8);
}

static void test_limits_line(void **state) {
    (void)state;
    facet_device_limits l = h200();
    l.features = FACET_DEV_STORAGE16;
    l.buffer_heap_bytes = 128ull << 30;
    char line[640];
    facet_device_limits_line(&l, line, sizeof line);
    assert_string_equal(line, "limits: shared memory 49152 B (maxComputeSharedMemorySize), "
                              "workgroup 1024 invocations (1024 x 1024 x 64), subgroup 32, "
                              "storage range 4294967295 B (maxStorageBufferRange), float16 no, "
                              "int8 no, 16-bit storage yes, 8-bit storage no; buffers in "
                              "system (host-visible) memory, heap 128.0 GiB");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h200_serves_llama_1b),
        cmocka_unit_test(test_head_dim_past_shared_memory),
        cmocka_unit_test(test_weight_past_storage_range),
        cmocka_unit_test(test_workgroup_and_matmul_tiles),
        cmocka_unit_test(test_bf16_falls_back_to_f16),
        cmocka_unit_test(test_needs_cover_the_shaders),
        cmocka_unit_test(test_limits_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
