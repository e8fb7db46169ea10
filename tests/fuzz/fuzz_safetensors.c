/*
 * fuzz_safetensors.c — libFuzzer target for the safetensors header parser.
 *
 * Feeds the input bytes to st_parse as a whole file; for every F32/F16/BF16 tensor it
 * accepts, converts the data to float32 so that the offsets it validated are also read.
 * Seeds (tests/fuzz/seeds/fuzz_safetensors/) are tiny valid files written with Python's
 * json + struct: F32 with __metadata__, mixed F16/BF16/I8/empty, sub-byte F4/F6 + C64,
 * and an empty header "{}"; and three the reader refuses (issue 17): gap (16 unused bytes
 * between two tensors), trailing (8 bytes after the last tensor), duplicate (a name
 * given twice).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    st_file f;
    facet_error err;
    if (st_parse(data, size, "fuzz.safetensors", &f, &err) != FACET_OK) return 0;
    for (size_t i = 0; i < f.n_tensors; i++) {
        const st_tensor *t = &f.tensors[i];
        uint64_t n = st_tensor_numel(t);
        if (t->dtype != ST_F32 && t->dtype != ST_F16 && t->dtype != ST_BF16) {
            (void)st_tensor_to_f32(t, NULL, &err); /* must refuse without touching dst */
            continue;
        }
        /* validated: n x element size <= size, so this allocation is bounded by input */
        float *dst = malloc((n ? n : 1) * sizeof *dst);
        if (!dst) continue;
        (void)st_tensor_to_f32(t, dst, &err);
        free(dst);
    }
    (void)st_file_find(&f, "model.norm.weight");
    st_file_close(&f);
    return 0;
}
