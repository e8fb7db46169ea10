/*
 * fuzz_template_toolcall.c — libFuzzer target for tool-call parsing of generated text
 * (facet_toolcall_parse in every format, and the OpenAI JSON rendering of the result).
 * Seeds (tests/fuzz/seeds/fuzz_template_toolcall/) are well-formed, malformed and partial
 * samples of each format.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "facet_chat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    for (int f = FACET_TOOLCALL_NONE; f <= FACET_TOOLCALL_HARMONY; f++) {
        facet_toolcall_result r;
        if (facet_toolcall_parse((facet_toolcall_format)f, (const char *)data, size, &r, NULL) != FACET_OK) continue;
        free(facet_toolcall_result_json(&r));
        facet_toolcall_result_free(&r);
    }
    return 0;
}
