/*
 * fuzz_config.c — libFuzzer target for config normalization (config.json -> facts ->
 * verdict -> plan -> JSON renderings).
 *
 * The input is split at the first NUL byte: before it, config.json; after it, an
 * optional generation_config.json. Whatever facet_facts_from_json accepts is judged on
 * both backends, planned (with a fixed machine size, so no /proc read) and rendered, so
 * every fact the reader admits is also exercised by its consumers. Seeds
 * (tests/fuzz/seeds/fuzz_config/) are real configs from tests/data/configs.
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/facts.h"
#include "model/plan.h"
#include "model/report.h"
#include "model/table.h"
#include "util/json.h"

static facet_facts F;
static facet_verdict V;
static facet_plan P;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t n1 = nul ? (size_t)(nul - data) : size;
    facet_error err;
    json_t *cfg = NULL, *gen = NULL;
    if (facet_json_parse((const char *)data, n1, "config.json", &cfg, &err) != FACET_OK) return 0;
    if (nul && facet_json_parse((const char *)nul + 1, size - n1 - 1, "generation_config.json",
                                &gen, &err) != FACET_OK)
        gen = NULL;
    if (facet_facts_from_json(cfg, gen, "config.json", &F, &err) == FACET_OK) {
        char line[4096];
        facet_facts_line(&F, line, sizeof line);
        facet_facts_of_note(&F, line, sizeof line);
        json_decref(facet_facts_json(&F));
        facet_judge(&F, "cpu", &V);
        facet_verdict_format(&V, line, sizeof line);
        (void)facet_verdict_error(&V, &err);
        json_decref(facet_verdict_json(&V));
        facet_judge(&F, "vulkan", &V);
        facet_plan_opts o = {.ctx = 0, .batch = 1, .weights = FACET_PLAN_AUTO,
                             .mem_available = 1ull << 34};
        if (facet_plan_make(&F, &o, &P, &err) == FACET_OK) json_decref(facet_plan_json(&P));
        o.ctx = 1;
        o.batch = 3;
        o.weights = FACET_WF_Q8;
        if (facet_plan_make(&F, &o, &P, &err) == FACET_OK) json_decref(facet_plan_json(&P));
    }
    json_decref(cfg);
    json_decref(gen);
    return 0;
}
