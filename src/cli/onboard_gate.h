/*
 * onboard_gate.h — the identity gate of `facet onboard PATH --gate` (issue 22).
 *
 * The gate runs the checkpoint in facet's exact path (f32 weights, f32 KV cache, no
 * weight cache, greedy, end-of-sequence ignored) and compares it with a reference that
 * does not come from facet, in this order of preference:
 *   1. --reference FILE.json: token ids, {"prompt_ids" (or "input_ids"), "generated_ids",
 *      optional "margins"} (tests/ref/reference.py prints this; `facet run --json` of
 *      another engine's build does not qualify), or such an object under
 *      "greedy_from_bos" (the bundled model's expected.json);
 *   2. --reference-logits FILE with --prompt-ids: float32 rows of vocab_size as
 *      `facet run --dump-logits` writes them (n_prompt + n - 1 rows): the prompt's rows
 *      are compared by relative error and the greedy ids are their argmax;
 *   3. the checkpoint folder's own expected.json ("published ids", as the bundled
 *      model ships);
 *   4. the float64 NumPy reference, tests/ref/reference.py of the source tree, when it
 *      and /usr/bin/python3 are present.
 * Acceptance (the tests' identity gate): every compared logits row within 1e-4 relative
 * error (||facet - ref|| / ||ref||), and the greedy ids identical up to the first step
 * where the reference's top-1 minus top-2 margin is below 1e-3 (a near tie, where
 * float32 and float64 may rightly choose differently; the gate stops comparing there).
 */
#ifndef FACET_CLI_ONBOARD_GATE_H
#define FACET_CLI_ONBOARD_GATE_H

#include <jansson.h>

typedef struct gate_options {
    const char *reference;        /* --reference FILE.json, or NULL                    */
    const char *reference_logits; /* --reference-logits FILE, or NULL                  */
    const char *prompt_ids;       /* --prompt-ids "1,2,3" (with --reference-logits, or
                                     for the float64 reference), or NULL: default       */
    int n;                        /* greedy steps (-n); 0: 16, or the reference's count */
    int n_threads;                /* 0: all CPUs                                        */
} gate_options;

/*
 * Run the gate on the checkpoint folder `dir`. On return *evidence is a new JSON object
 * for the ledger line: {"level": "validated"|"failed", "oracle", "backend": "cpu",
 * "weights": "f32", "kv_cache": "f32", "prompt_tokens", "steps_compared",
 * "max_relative_error" (null when no logits were compared), "stopped_at_near_tie"
 * (step or null), "first_difference" (step or null)}; NULL when the gate could not run.
 * Returns 0 passed, 4 failed (after printing the first differing step or row on
 * stderr), 2 refused by the capability table, 1 unusable input (both printed).
 */
int onboard_gate(const char *dir, const gate_options *o, json_t **evidence);

#endif
