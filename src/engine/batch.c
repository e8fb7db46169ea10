/* batch.c — prefill and batched decode as forms of facet_forward. */
#include <stdlib.h>

#include "engine/model_internal.h"
#include "util/error.h"

facet_status facet_prefill(facet_session *s, int seq, const int32_t *ids, size_t n,
                           float *logits_last, facet_error *err) {
    if (n == 0) return FACET_OK;
    if (n > (size_t)s->n_ctx)
        return facet_err(err, FACET_E_CONTEXT, "prompt of %zu tokens exceeds the context of %d",
                         n, s->n_ctx);
    int32_t *seqs = malloc(n * sizeof *seqs);
    uint8_t *want = calloc(n, 1);
    if (!seqs || !want) {
        free(seqs);
        free(want);
        return facet_err(err, FACET_E_NOMEM, "out of memory for the prefill of %zu tokens", n);
    }
    for (size_t i = 0; i < n; i++) seqs[i] = seq;
    want[n - 1] = logits_last != NULL;
    facet_batch b = {(int)n, ids, seqs, want};
    facet_status st = facet_forward(s, &b, logits_last, err);
    free(seqs);
    free(want);
    return st;
}

facet_status facet_decode(facet_session *s, int n, const int32_t *seq_ids, const int32_t *tokens,
                          float *logits, facet_error *err) {
    facet_batch b = {n, tokens, seq_ids, NULL};
    return facet_forward(s, &b, logits, err);
}
