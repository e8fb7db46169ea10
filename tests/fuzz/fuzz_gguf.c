/*
 * fuzz_gguf.c — libFuzzer target for the GGUF reader and the facts read from it.
 *
 * Feeds the input bytes to gguf_parse as a whole file; on success renders every
 * metadata value, walks every string array, reads every tensor's bytes (so the offsets
 * it validated are also read), then derives the facts (facet_facts_from_gguf) and the
 * verdict with its GGUF refusals, and builds the checkpoint view the loader reads
 * (names mapped, block types kept as stored, llama.cpp's Q/K permutation undone), reading the
 * first and last byte of every view tensor. Seeds (tests/fuzz/seeds/fuzz_gguf/, written by
 * tests/fuzz/gguf_seeds.py): a llama-shaped model with F32/F16/Q8_0 tensors and every
 * value type incl. a nested array, the same with Q4_K, a vocabulary-only file,
 * general.alignment 64, the first part of a split model; and three the reader refuses:
 * a misaligned tensor, a name given twice, a removed type id. regress_*.gguf: inputs the
 * fuzzer found (an architecture name that is not UTF-8; a u64 key past INT64_MAX kept
 * for the table), kept so they stay fixed.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "io/gguf.h"
#include "model/facts_gguf.h"
#include "model/gguf_checkpoint.h"
#include "model/table.h"

static facet_facts facts;
static facet_verdict verdict;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gguf_file f;
    facet_error err;
    if (gguf_parse(data, size, "fuzz.gguf", &f, &err) != FACET_OK) return 0;
    volatile unsigned sink = 0;
    char buf[128];
    for (size_t i = 0; i < f.n_kv; i++) {
        const gguf_kv *kv = &f.kv[i];
        gguf_kv_render(kv, buf, sizeof buf);
        uint64_t pos = 0, len;
        const char *s;
        while (gguf_arr_str_next(kv, &pos, &s, &len))
            if (len) sink += (unsigned char)s[len - 1];
    }
    for (size_t i = 0; i < f.n_tensors; i++) {
        const gguf_tensor *t = &f.tensors[i];
        for (uint64_t b = 0; b < t->nbytes; b += 4096) sink += t->data[b];
        if (t->nbytes) sink += t->data[t->nbytes - 1];
    }
    gguf_model m;
    if (gguf_model_wrap(&f, &m, &err) != FACET_OK) return 0;
    if (facet_facts_from_gguf(&m, &facts, &err) == FACET_OK) {
        facet_judge(&facts, "cpu", &verdict);
        facet_gguf_judge(&m, &verdict);
        facet_gguf_checkpoint c;
        if (facet_gguf_checkpoint_open(&m, &facts, &c, &err) == FACET_OK) {
            for (size_t i = 0; i < c.ck.n_tensors; i++) {
                const st_tensor *t = c.ck.by_name[i];
                if (t->end > t->begin) sink += t->data[0] + t->data[t->end - t->begin - 1];
            }
            facet_gguf_checkpoint_close(&c);
        }
    }
    (void)sink;
    (void)gguf_model_find(&m, "token_embd.weight");
    gguf_model_close(&m);
    return 0;
}
