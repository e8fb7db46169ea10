/* sampler.c — the sampling chain of facet_sampler.h: penalties, logit_bias,
 * temperature, top-k, min-p, top-p, seeded draw. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sampler_rng.h"
#include "facet.h"
#include "facet_sampler.h"
#include "util/error.h"

struct facet_sampler {
    facet_sampler_params p;
    facet_logit_bias *bias; /* [p.n_logit_bias], owned copy                        */
    int n_vocab;
    facet_rng rng;
    uint8_t *seen;          /* [n_vocab] nonzero: in prompt or output               */
    int32_t *count;         /* [n_vocab] times generated                            */
    float *work;            /* [n_vocab] processed logits                           */
    int32_t *cand;          /* [n_vocab] candidate ids, sorted                      */
    double *prob;           /* [n_vocab] probability of each id relative to the best */
    const uint8_t *mask;    /* [n_vocab] allowed ids for the next sample, or NULL   */
};

void facet_sampler_set_mask(facet_sampler *s, const uint8_t *allowed) { s->mask = allowed; }

void facet_sampler_params_default(facet_sampler_params *p) {
    memset(p, 0, sizeof *p);
    p->temperature = 1.0f;
    p->top_p = 1.0f;
    p->repetition_penalty = 1.0f;
}

int facet_sampler_param_from_double(double x, float *out) {
    if (!isfinite(x) || fabs(x) > 1e30) return 0;
    float f = (float)x;
    if (f == 0.0f && x != 0.0) f = x > 0 ? FLT_TRUE_MIN : -FLT_TRUE_MIN;
    *out = f;
    return 1;
}

static facet_status bad(facet_error *err, const char *name, double v, const char *expected) {
    return facet_err(err, FACET_E_INVALID_ARGUMENT, "%s=%g is out of range (expected %s)", name,
                     v, expected);
}

facet_status facet_sampler_params_validate(const facet_sampler_params *p, int n_vocab,
                                           facet_error *err) {
    if (!isfinite(p->temperature) || p->temperature < 0)
        return bad(err, "temperature", p->temperature, "a finite value >= 0");
    if (p->top_k < 0)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "top_k=%d is out of range (expected an integer >= 0; 0 = off)",
                         p->top_k);
    if (!isfinite(p->top_p) || p->top_p < 0 || p->top_p > 1)
        return bad(err, "top_p", p->top_p, "0 <= top_p <= 1");
    if (!isfinite(p->min_p) || p->min_p < 0 || p->min_p > 1)
        return bad(err, "min_p", p->min_p, "0 <= min_p <= 1");
    if (!isfinite(p->repetition_penalty) || p->repetition_penalty <= 0)
        return bad(err, "repetition_penalty", p->repetition_penalty, "a finite value > 0");
    if (!isfinite(p->presence_penalty) || fabsf(p->presence_penalty) > 2)
        return bad(err, "presence_penalty", p->presence_penalty, "-2 <= presence_penalty <= 2");
    if (!isfinite(p->frequency_penalty) || fabsf(p->frequency_penalty) > 2)
        return bad(err, "frequency_penalty", p->frequency_penalty,
                   "-2 <= frequency_penalty <= 2");
    if (p->n_logit_bias < 0 || (p->n_logit_bias > 0 && !p->logit_bias))
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "n_logit_bias=%d without entries",
                         p->n_logit_bias);
    for (int i = 0; i < p->n_logit_bias; i++) {
        const facet_logit_bias *b = &p->logit_bias[i];
        if (b->token < 0 || b->token >= n_vocab)
            return facet_err(err, FACET_E_INVALID_ARGUMENT,
                             "logit_bias token id %d is out of range (expected 0 <= id < %d)",
                             (int)b->token, n_vocab);
        if (!isfinite(b->bias) || b->bias < -100 || b->bias > 100)
            return facet_err(err, FACET_E_INVALID_ARGUMENT,
                             "logit_bias[%d]=%g is out of range (expected -100 <= bias <= 100)",
                             (int)b->token, (double)b->bias);
    }
    return FACET_OK;
}

facet_status facet_sampler_create(const facet_sampler_params *p, int n_vocab,
                                  facet_sampler **out, facet_error *err) {
    *out = NULL;
    if (n_vocab <= 0)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "n_vocab=%d (expected > 0)", n_vocab);
    facet_status st = facet_sampler_params_validate(p, n_vocab, err);
    if (st != FACET_OK) return st;
    facet_sampler *s = calloc(1, sizeof *s);
    if (!s) return facet_err(err, FACET_E_NOMEM, "sampler");
    s->p = *p;
    s->n_vocab = n_vocab;
    size_t n = (size_t)n_vocab;
    s->seen = calloc(n, 1);
    s->count = calloc(n, sizeof *s->count);
    s->work = malloc(n * sizeof *s->work);
    s->cand = malloc(n * sizeof *s->cand);
    s->prob = malloc(n * sizeof *s->prob);
    if (p->n_logit_bias > 0) {
        s->bias = malloc((size_t)p->n_logit_bias * sizeof *s->bias);
        if (s->bias)
            memcpy(s->bias, p->logit_bias, (size_t)p->n_logit_bias * sizeof *s->bias);
    }
    s->p.logit_bias = s->bias;
    if (!s->seen || !s->count || !s->work || !s->cand || !s->prob ||
        (p->n_logit_bias > 0 && !s->bias)) {
        facet_sampler_free(s);
        return facet_err(err, FACET_E_NOMEM, "sampler buffers for a vocabulary of %d", n_vocab);
    }
    facet_rng_seed(&s->rng, p->seed);
    *out = s;
    return FACET_OK;
}

void facet_sampler_free(facet_sampler *s) {
    if (!s) return;
    free(s->bias);
    free(s->seen);
    free(s->count);
    free(s->work);
    free(s->cand);
    free(s->prob);
    free(s);
}

facet_status facet_sampler_accept_prompt(facet_sampler *s, const int32_t *ids, size_t n,
                                         facet_error *err) {
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= s->n_vocab)
            return facet_err(err, FACET_E_INVALID_ARGUMENT,
                             "prompt token %zu is id %d (expected 0 <= id < %d)", i, (int)ids[i],
                             s->n_vocab);
    for (size_t i = 0; i < n; i++) s->seen[ids[i]] = 1;
    return FACET_OK;
}

void facet_sampler_accept(facet_sampler *s, int32_t id) {
    if (id < 0 || id >= s->n_vocab) return;
    s->seen[id] = 1;
    if (s->count[id] < INT32_MAX) s->count[id]++;
}

double facet_logprob_of(const float *logits, int n_vocab, int32_t id) {
    double m = logits[0];
    for (int i = 1; i < n_vocab; i++)
        if (logits[i] > m) m = logits[i];
    double sum = 0;
    for (int i = 0; i < n_vocab; i++) sum += exp((double)logits[i] - m);
    return (double)logits[id] - (m + log(sum));
}

/* Steps 1-3: penalties and logit_bias into s->work. */
static void apply_penalties(facet_sampler *s, const float *logits) {
    const facet_sampler_params *p = &s->p;
    memcpy(s->work, logits, (size_t)s->n_vocab * sizeof *s->work);
    float *w = s->work;
    int rep = p->repetition_penalty != 1.0f;
    int pres = p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f;
    if (rep || pres) {
        for (int j = 0; j < s->n_vocab; j++) {
            if (rep && s->seen[j]) w[j] = w[j] > 0 ? w[j] / p->repetition_penalty
                                                   : w[j] * p->repetition_penalty;
            if (pres && s->count[j] > 0)
                w[j] -= (float)s->count[j] * p->frequency_penalty + p->presence_penalty;
        }
    }
    for (int i = 0; i < p->n_logit_bias; i++) w[p->logit_bias[i].token] += p->logit_bias[i].bias;
    if (s->mask)
        for (int j = 0; j < s->n_vocab; j++)
            if (!s->mask[j]) w[j] = -INFINITY;
}

/* Steps 1-4 again in double, for a row where float32 overflowed (a temperature near 0,
 * an extreme repetition_penalty): the processed logits minus their maximum, divided by
 * t (1 when the choice is greedy), rounded back into s->work. The best logit becomes
 * exactly 0 and the rest are <= 0 (-inf where exp() would give 0 anyway), so the order,
 * the ties and every probability within double's range are those of exact arithmetic:
 * as t -> 0 the chain's distribution tends to the argmax (shared evenly by equal maxima),
 * never to the lowest of the ids float32 saturated to +inf. Uses s->prob as scratch. */
static void process_in_double(facet_sampler *s, const float *logits, double t) {
    const facet_sampler_params *p = &s->p;
    double *d = s->prob;
    double r = p->repetition_penalty;
    for (int j = 0; j < s->n_vocab; j++) {
        double x = logits[j];
        if (s->seen[j]) x = x > 0 ? x / r : x * r;
        if (s->count[j] > 0)
            x -= (double)s->count[j] * p->frequency_penalty + p->presence_penalty;
        d[j] = x;
    }
    for (int i = 0; i < p->n_logit_bias; i++) d[p->logit_bias[i].token] += p->logit_bias[i].bias;
    if (s->mask)
        for (int j = 0; j < s->n_vocab; j++)
            if (!s->mask[j]) d[j] = -INFINITY;
    double m = d[0];
    for (int j = 1; j < s->n_vocab; j++)
        if (d[j] > m) m = d[j];
    for (int j = 0; j < s->n_vocab; j++) s->work[j] = (float)((d[j] - m) / t);
}

/* 1 when the largest entry of w is +inf or NaN, or every entry is -inf: float32 could
 * not hold steps 1-4 and the row must be processed in double. */
static int overflowed(const float *w, int n) {
    float m = -INFINITY;
    int nan = 0;
    for (int j = 0; j < n; j++) {
        m = w[j] > m ? w[j] : m;
        nan |= w[j] != w[j];
    }
    return nan || !isfinite(m);
}

/* Candidate order: logit descending, then id ascending (a strict total order, so the
 * order, and with it every draw, is fully determined). */
static int better(const float *w, int32_t x, int32_t y) {
    return w[x] > w[y] || (w[x] == w[y] && x < y);
}

/* qsort has no context argument in C11: the logits being sorted are passed through a
 * thread-local pointer, so samplers on different threads stay independent. */
static _Thread_local const float *g_cmp_logits;
static int cmp_cand(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return better(g_cmp_logits, x, y) ? -1 : better(g_cmp_logits, y, x) ? 1 : 0;
}

/* Quickselect: arrange c[lo..n) so that c[lo..m) holds its best m - lo entries (in
 * any order) and everything after is worse. Deterministic (median-of-three pivots). */
static void select_best(int32_t *c, int lo, int m, int n, const float *w) {
    int l = lo, r = n - 1, k = m - 1;
    while (r > l) {
        int32_t a = c[l], b = c[l + (r - l) / 2], d = c[r], piv;
        if (better(w, a, b)) piv = better(w, b, d) ? b : better(w, a, d) ? d : a;
        else piv = better(w, a, d) ? a : better(w, b, d) ? d : b;
        int i = l, j = r;
        while (i <= j) {
            while (better(w, c[i], piv)) i++;
            while (better(w, piv, c[j])) j--;
            if (i <= j) {
                int32_t t = c[i];
                c[i++] = c[j];
                c[j--] = t;
            }
        }
        if (k <= j) r = j;
        else if (k >= i) l = i;
        else break;
    }
}

/* Grow the sorted prefix cand[0..*sorted) of the n kept candidates to `want` entries.
 * The prefix always holds the best entries in order, so the chain sorts only as much
 * of the vocabulary as its filters and the draw look at (usually a few dozen ids). */
static void extend_sorted(facet_sampler *s, int *sorted, int want, int n) {
    if (want > n) want = n;
    if (want <= *sorted) return;
    select_best(s->cand, *sorted, want, n, s->work);
    g_cmp_logits = s->work;
    qsort(s->cand + *sorted, (size_t)(want - *sorted), sizeof *s->cand, cmp_cand);
    *sorted = want;
}

static int grow(int sorted) { return sorted < 32 ? 64 : 2 * sorted; }

static int32_t sample_chain(facet_sampler *s, const float *logits);

int32_t facet_sampler_sample(facet_sampler *s, const float *logits) {
    int32_t id = sample_chain(s, logits);
    s->mask = NULL;
    return id;
}

static int32_t sample_chain(facet_sampler *s, const float *logits) {
    const facet_sampler_params *p = &s->p;
    apply_penalties(s, logits);
    float *w = s->work;
    int greedy = p->temperature == 0.0f || p->top_k == 1;
    if (!greedy)
        for (int j = 0; j < s->n_vocab; j++) w[j] /= p->temperature;
    if (overflowed(w, s->n_vocab))
        process_in_double(s, logits, greedy ? 1.0 : (double)p->temperature);
    if (greedy) return facet_sample_greedy(w, s->n_vocab);
    int n = s->n_vocab, sorted = 0;
    for (int32_t i = 0; i < n; i++) s->cand[i] = i;
    /* top-k: the k best, in order */
    if (p->top_k > 0 && p->top_k < n) {
        extend_sorted(s, &sorted, p->top_k, n);
        n = p->top_k;
    }
    extend_sorted(s, &sorted, 1, n);
    /* probabilities of the kept candidates relative to the best one (s->prob by id) */
    double *pw = s->prob;
    double top = w[s->cand[0]];
    if (!isfinite(top)) return s->cand[0];
    double total = 0;
    for (int i = 0; i < n; i++) total += pw[s->cand[i]] = exp((double)w[s->cand[i]] - top);
    /* min-p: keep p_i >= min_p * p_max, i.e. pw >= min_p (pw of the best is 1): a
     * prefix of the order, moved to the front */
    if (p->min_p > 0) {
        int c = 0;
        while (c < sorted && pw[s->cand[c]] >= (double)p->min_p) c++;
        if (c == sorted)
            for (int i = sorted; i < n; i++)
                if (pw[s->cand[i]] >= (double)p->min_p) {
                    int32_t t = s->cand[c];
                    s->cand[c++] = s->cand[i];
                    s->cand[i] = t;
                }
        n = c;
        if (sorted > n) sorted = n;
        total = 0;
        for (int i = 0; i < n; i++) total += pw[s->cand[i]];
    }
    /* top-p: token i stays while the mass before it is below top_p */
    if (p->top_p < 1.0f) {
        double before = 0;
        for (int i = 0; i < n; i++) {
            if (i >= sorted) extend_sorted(s, &sorted, grow(sorted), n);
            if (i > 0 && before >= (double)p->top_p) {
                n = i;
                break;
            }
            before += pw[s->cand[i]] / total;
        }
        total = 0;
        for (int i = 0; i < n; i++) total += pw[s->cand[i]];
    }
    if (n == 1) return s->cand[0];
    /* draw: the first token, in order, whose cumulative mass exceeds u * total */
    double u = facet_rng_uniform(&s->rng) * total;
    double c = 0;
    for (int i = 0; i < n; i++) {
        if (i >= sorted) extend_sorted(s, &sorted, grow(sorted), n);
        c += pw[s->cand[i]];
        if (c > u) return s->cand[i];
    }
    extend_sorted(s, &sorted, n, n);
    return s->cand[n - 1];
}
