/*
 * split.c — checking and balancing a pipeline x tensor split (split.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/split.h"
#include "util/error.h"

/* "1, 2, 4" : the divisors of v up to 64 (the T values that divide it), into buf. */
static void divisors(int64_t v, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = 0;
    for (int64_t d = 1; d <= v && d <= 64 && n + 8 < cap; d++)
        if (v % d == 0) n += (size_t)snprintf(buf + n, cap - n, "%s%lld", n ? ", " : "", (long long)d);
}

facet_status facet_split_check(const facet_facts *f, int pp, int tp, facet_error *err) {
    if (pp < 1 || tp < 1)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "--pipeline-parallel %d --tensor-parallel %d: both must be >= 1", pp, tp);
    int64_t L = f->num_hidden_layers;
    if (pp > L || pp > FACET_SPLIT_MAX)
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "--pipeline-parallel %d: num_hidden_layers=%lld must be >= the %d "
                         "stages (each stage runs at least one layer); P from 1 to %lld "
                         "would work", pp, (long long)L, pp,
                         (long long)(L < FACET_SPLIT_MAX ? L : FACET_SPLIT_MAX));
    if (tp == 1) return FACET_OK;
    if (f->n_ssm_layers > 0 || f->ssm_parallel)
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "--tensor-parallel %d: the model has %lld recurrent (%s) layers, "
                         "whose state is not split by heads; T = 1 works", tp,
                         f->ssm_parallel ? (long long)f->num_hidden_layers
                                         : (long long)f->n_ssm_layers,
                         f->ssm_version == 4   ? "gated delta-rule"
                         : f->ssm_version == 3 ? "gated short-convolution"
                         : f->ssm_parallel   ? "Mamba-2 beside attention"
                                             : "Mamba");
    if (f->kv_lora_rank > 0)
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "--tensor-parallel %d: kv_lora_rank=%lld (latent attention) is not "
                         "split by heads yet; T = 1 works", tp, (long long)f->kv_lora_rank);
    if (f->alibi) /* rope.c computes the slopes from the head count the facts hold */
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "--tensor-parallel %d: alibi=true (a slope per head of the whole "
                         "model) is not split by heads yet; T = 1 works", tp);
    /* the FFN widths the layers have: dense, each expert's, the shared expert's */
    int dense = (int)f->num_hidden_layers - f->n_sparse_layers - f->n_ssm_layers > 0;
    typedef struct {
        const char *name;
        int64_t v;
    } named;
    named facts[5] = {
        {"num_attention_heads", f->num_attention_heads},
        {"num_key_value_heads", f->num_key_value_heads},
    };
    size_t nf = 2;
    if (dense) facts[nf++] = (named){"intermediate_size", f->intermediate_size};
    if (f->n_sparse_layers > 0)
        facts[nf++] = (named){"moe_intermediate_size", f->moe_intermediate_size};
    if (f->n_sparse_layers > 0 && f->shared_expert_intermediate_size > 0)
        facts[nf++] = (named){"shared_expert_intermediate_size",
                                         f->shared_expert_intermediate_size};
    for (size_t i = 0; i < nf; i++) {
        if (facts[i].v > 0 && facts[i].v % tp == 0) continue;
        /* the T values that divide them all */
        char ok[200] = "";
        size_t n = 0;
        for (int t = 1; t <= 64; t++) {
            int all = 1;
            for (size_t j = 0; j < nf; j++)
                all &= facts[j].v > 0 && facts[j].v % t == 0;
            if (all && n + 8 < sizeof ok)
                n += (size_t)snprintf(ok + n, sizeof ok - n, "%s%d", n ? ", " : "", t);
        }
        char div[200];
        divisors(facts[i].v, div, sizeof div);
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "--tensor-parallel %d: %s=%lld is not divisible by %d (each rank "
                         "takes an equal share); its divisors: %s; T values that divide "
                         "num_attention_heads, num_key_value_heads and the FFN width: %s",
                         tp, facts[i].name, (long long)facts[i].v, tp, div, ok);
    }
    return FACET_OK;
}

/* Parameters of layer l, for its share of the weight bytes. */
static double layer_params(const facet_facts *f, int l) {
    double H = (double)f->hidden_size, hd = (double)f->head_dim;
    if (f->layer_ssm[l]) { /* in/out projections dominate: 2 DI H + DI H */
        double DI = (double)f->ssm_inner;
        return 3 * DI * H + 2 * H;
    }
    double p = 2 * H * hd * (double)(f->num_attention_heads + f->num_key_value_heads) + 2 * H;
    if (f->ssm_parallel) p += 3 * (double)f->ssm_inner * H; /* Falcon-H1's Mamba-2 mixer */
    if (f->layer_sparse[l]) {
        double E = (double)f->num_experts, EI = (double)f->moe_intermediate_size;
        double SI = (double)f->shared_expert_intermediate_size;
        p += E * H + 3 * E * EI * H + 3 * SI * H;
    } else {
        p += 3 * (double)f->intermediate_size * H;
    }
    return p;
}

facet_status facet_split_make(const facet_facts *f, const facet_plan *p, int pp, int tp,
                              facet_split *out, facet_error *err) {
    memset(out, 0, sizeof *out);
    facet_status st = facet_split_check(f, pp, tp, err);
    if (st != FACET_OK) return st;
    out->pp = pp;
    out->tp = tp;
    int L = (int)f->num_hidden_layers;
    double H = (double)f->hidden_size, V = (double)f->vocab_size;
    int untied = f->probed ? f->has_lm_head : !f->tie_word_embeddings;
    /* bytes per parameter of the chosen format, from the plan's own total */
    double io = V * H * (untied ? 2 : 1) + H, all = io;
    for (int l = 0; l < L; l++) all += layer_params(f, l);
    double per = all > 0 ? (double)p->weight_bytes[p->weights] / all : 0;
    /* memory of each layer: weights + KV (attention) or state (Mamba) of the batch */
    int n_attn = L - f->n_ssm_layers;
    double kv_layer = n_attn ? (double)p->kv_bytes_per_sequence * (double)p->batch / n_attn : 0;
    double st_layer = f->n_ssm_layers ? (double)p->state_bytes_per_sequence * (double)p->batch /
                                            f->n_ssm_layers : 0;
    double mem[FACET_MAX_LAYERS], kvm[FACET_MAX_LAYERS], wm[FACET_MAX_LAYERS];
    for (int l = 0; l < L; l++) {
        wm[l] = layer_params(f, l) * per;
        kvm[l] = f->layer_ssm[l] ? st_layer : kv_layer;
        if (f->ssm_parallel) /* Falcon-H1: every layer holds KV and a state */
            kvm[l] += (double)p->state_bytes_per_sequence * (double)p->batch / L;
        mem[l] = wm[l] + kvm[l];
    }
    /* minimize the largest stage: best[s][j] = the best largest stage of layers [0, j)
     * over stages 0..s (stage 0 carries the embeddings and lm_head) */
    size_t W = (size_t)L + 1;
    double *best = malloc(sizeof(double) * W * (size_t)pp);
    int *cut = malloc(sizeof(int) * W * (size_t)pp);
    if (!best || !cut) {
        free(best);
        free(cut);
        return facet_err(err, FACET_E_NOMEM, "pipeline split of %d layers", L);
    }
#define BEST(s, j) best[(size_t)(s) * W + (size_t)(j)]
#define CUT(s, j) cut[(size_t)(s) * W + (size_t)(j)]
    double pre[FACET_MAX_LAYERS + 1];
    pre[0] = 0;
    for (int l = 0; l < L; l++) pre[l + 1] = pre[l] + mem[l];
    for (int j = 1; j <= L; j++) BEST(0, j) = io * per + pre[j];
    for (int s = 1; s < pp; s++)
        for (int j = s + 1; j <= L; j++) {
            BEST(s, j) = -1;
            for (int i = s; i < j; i++) { /* stage s runs [i, j) */
                double m = BEST(s - 1, i) > pre[j] - pre[i] ? BEST(s - 1, i) : pre[j] - pre[i];
                if (BEST(s, j) < 0 || m < BEST(s, j)) {
                    BEST(s, j) = m;
                    CUT(s, j) = i;
                }
            }
        }
    out->first[pp] = L;
    for (int s = pp - 1, j = L; s > 0; s--) {
        j = CUT(s, j);
        out->first[s] = j;
    }
#undef BEST
#undef CUT
    free(best);
    free(cut);
    out->first[0] = 0;
    uint64_t hidden = (uint64_t)f->hidden_size * 4;
    for (int s = 0; s < pp; s++) {
        double w = s == 0 ? io * per : 0, kv = 0;
        int n_layers = out->first[s + 1] - out->first[s];
        for (int l = out->first[s]; l < out->first[s + 1]; l++) {
            w += wm[l];
            kv += kvm[l];
        }
        /* the tensor ranks split the layers' matrices and KV heads (rank 0 keeps the
         * embeddings and lm_head whole) */
        double wl = w - (s == 0 ? io * per : 0);
        out->weight_bytes[s] = (uint64_t)((s == 0 ? io * per : 0) + wl / tp);
        out->kv_bytes[s] = (uint64_t)(kv / tp);
        uint64_t sent = pp > 1 ? hidden : 0; /* to the next stage (the last: to rank 0) */
        if (s == 0) sent += 25 * (uint64_t)(pp * tp - 1); /* the step's command */
        if (tp > 1)
            sent += (uint64_t)(2.0 * n_layers * 2.0 * (tp - 1) / tp * (double)hidden);
        out->sent_per_token[s] = sent;
    }
    return FACET_OK;
}
