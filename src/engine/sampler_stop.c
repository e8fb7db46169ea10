/* sampler_stop.c — stop strings over streamed text with hold-back (facet_sampler.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "facet_sampler.h"
#include "util/error.h"
#include "util/utf8.h"
#include "util/vec.h"

struct facet_stop_matcher {
    int n;
    char **stops;
    size_t *lens;
    char *pending;      /* held text, not yet released                          */
    size_t n_pending, cap_pending;
    char *out;          /* released text of the last call                       */
    size_t cap_out;
    int stopped;        /* index of the matched stop string, or -1             */
};

void facet_stop_matcher_free(facet_stop_matcher *m) {
    if (!m) return;
    for (int i = 0; i < m->n; i++) free(m->stops[i]);
    free(m->stops);
    free(m->lens);
    free(m->pending);
    free(m->out);
    free(m);
}

facet_status facet_stop_matcher_create(const char *const *stops, int n_stops,
                                       facet_stop_matcher **out, facet_error *err) {
    *out = NULL;
    if (n_stops < 0)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "n_stops=%d (expected >= 0)", n_stops);
    for (int i = 0; i < n_stops; i++) {
        size_t len = strlen(stops[i]);
        if (len == 0)
            return facet_err(err, FACET_E_INVALID_ARGUMENT,
                             "stop[%d] is an empty string (expected non-empty)", i);
        size_t ok = facet_utf8_validate(stops[i], len);
        if (ok != len)
            return facet_err(err, FACET_E_UTF8, "stop[%d] is invalid UTF-8 at byte %zu", i, ok);
    }
    facet_stop_matcher *m = calloc(1, sizeof *m);
    if (!m) return facet_err(err, FACET_E_NOMEM, "stop matcher");
    m->stopped = -1;
    m->stops = calloc((size_t)n_stops + 1, sizeof *m->stops);
    m->lens = calloc((size_t)n_stops + 1, sizeof *m->lens);
    m->out = malloc(m->cap_out = 64);
    if (!m->stops || !m->lens || !m->out) goto nomem;
    m->out[0] = '\0';
    for (int i = 0; i < n_stops; i++) {
        m->lens[i] = strlen(stops[i]);
        m->stops[i] = malloc(m->lens[i] + 1);
        if (!m->stops[i]) goto nomem;
        memcpy(m->stops[i], stops[i], m->lens[i] + 1);
        m->n = i + 1;
    }
    *out = m;
    return FACET_OK;
nomem:
    facet_stop_matcher_free(m);
    return facet_err(err, FACET_E_NOMEM, "stop matcher of %d strings", n_stops);
}

/* Move the first n bytes of pending into out (replacing out's content). push keeps out
 * at least as large as pending, so this never allocates. */
static void release(facet_stop_matcher *m, size_t n) {
    m->out[0] = '\0';
    if (n == 0) return;
    memcpy(m->out, m->pending, n);
    m->out[n] = '\0';
    memmove(m->pending, m->pending + n, m->n_pending - n);
    m->n_pending -= n;
}

/* Earliest occurrence of any stop string in pending: its position, or SIZE_MAX. */
static size_t find_stop(const facet_stop_matcher *m, int *which) {
    size_t best = SIZE_MAX;
    for (int i = 0; i < m->n; i++) {
        if (m->lens[i] > m->n_pending) continue;
        for (size_t pos = 0; pos + m->lens[i] <= m->n_pending && pos < best; pos++)
            if (!memcmp(m->pending + pos, m->stops[i], m->lens[i])) {
                best = pos;
                *which = i;
                break;
            }
    }
    return best;
}

/* Length of the longest tail of pending that is a proper prefix of some stop string. */
static size_t hold_length(const facet_stop_matcher *m) {
    size_t hold = 0;
    for (int i = 0; i < m->n; i++) {
        size_t k = m->lens[i] - 1 < m->n_pending ? m->lens[i] - 1 : m->n_pending;
        for (; k > hold; k--)
            if (!memcmp(m->pending + m->n_pending - k, m->stops[i], k)) {
                hold = k;
                break;
            }
    }
    return hold;
}

facet_status facet_stop_matcher_push(facet_stop_matcher *m, const char *text, size_t len,
                                     const char **out, size_t *out_len, int *stopped,
                                     facet_error *err) {
    m->out[0] = '\0';
    *out = m->out;
    *out_len = 0;
    *stopped = m->stopped;
    if (m->stopped >= 0) return FACET_OK;
    if (len > SIZE_MAX - 1 - m->n_pending ||
        facet_array_reserve(m->pending, m->cap_pending, m->n_pending + len + 1) ||
        facet_array_reserve(m->out, m->cap_out, m->n_pending + len + 1))
        return facet_err(err, FACET_E_NOMEM, "stop matcher buffer of %zu bytes",
                         m->n_pending + len);
    memcpy(m->pending + m->n_pending, text, len);
    m->n_pending += len;
    int which = -1;
    size_t pos = find_stop(m, &which);
    size_t n_release;
    if (pos != SIZE_MAX) {
        n_release = pos;
        m->stopped = which;
    } else {
        n_release = m->n_pending - hold_length(m);
    }
    release(m, n_release);
    if (m->stopped >= 0) m->n_pending = 0;
    *out = m->out;
    *out_len = n_release;
    *stopped = m->stopped;
    return FACET_OK;
}

void facet_stop_matcher_flush(facet_stop_matcher *m, const char **out, size_t *out_len) {
    size_t n = m->n_pending;
    release(m, n);
    *out = m->out;
    *out_len = n;
}
