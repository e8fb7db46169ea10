/* budget.c — the KV-cache token budget of `facet serve` (see budget.h). */
#include "server/budget.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf.h"
#include "io/safetensors.h"
#include "model/facts.h"
#include "model/facts_gguf.h"
#include "model/gguf_checkpoint.h"
#include "model/plan.h"
#include "model/probe.h"
#include "model/report.h"
#include "util/error.h"

static int clamp_int(int64_t v) { return v > INT_MAX ? INT_MAX : v < 0 ? 0 : (int)v; }

void srv_kv_budget_choose(int requested, int max_batch, int n_ctx, uint64_t mem_available,
                          uint64_t weight_bytes, double kv_bytes_per_token,
                          srv_kv_budget *out) {
    memset(out, 0, sizeof *out);
    out->requested = requested;
    out->max_batch = max_batch;
    out->n_ctx = n_ctx;
    out->mem_available = mem_available;
    out->weight_bytes = weight_bytes;
    out->kv_bytes_per_token = kv_bytes_per_token;
    out->default_tokens = (int64_t)max_batch * n_ctx; /* both int: no overflow in 64 bits */
    int want = requested > 0 ? requested : clamp_int(out->default_tokens);
    out->tokens = want;
    if (!mem_available || !(kv_bytes_per_token > 0)) return; /* not checked */
    out->margin = mem_available / 100 * SRV_MEM_MARGIN_PCT;
    uint64_t used = weight_bytes > UINT64_MAX - out->margin ? UINT64_MAX
                                                            : out->margin + weight_bytes;
    out->kv_room = mem_available > used ? mem_available - used : 0;
    double fit = floor((double)out->kv_room / kv_bytes_per_token);
    out->fit_tokens = fit >= (double)INT64_MAX ? INT64_MAX : (int64_t)fit;
    if (out->fit_tokens >= want) return;
    if (requested > 0) out->over = 1; /* honoured: the operator asked for it */
    else {
        out->capped = 1;
        out->tokens = clamp_int(out->fit_tokens);
    }
}

/* "1.50 GiB" of a byte count held in a double (saturating). */
static void bytes_text(double b, char *buf, size_t cap) {
    facet_bytes_text(b >= 1.8e19 ? UINT64_MAX : (uint64_t)llround(b < 0 ? 0 : b), buf, cap);
}

void srv_kv_budget_describe(const srv_kv_budget *b, const char *unchecked, char *buf,
                            size_t cap) {
    if (!b->mem_available || !(b->kv_bytes_per_token > 0)) {
        if (b->requested > 0)
            snprintf(buf, cap, "KV budget %d tokens (--kv-budget; memory not checked: %s)",
                     b->tokens, unchecked ? unchecked : "no memory figures");
        else
            snprintf(buf, cap, "KV budget %d tokens = max batch %d x ctx %d (memory not "
                     "checked: %s)", b->tokens, b->max_batch, b->n_ctx,
                     unchecked ? unchecked : "no memory figures");
        return;
    }
    char mem[32], weights[32], room[32], per[32], need[32];
    bytes_text((double)b->mem_available, mem, sizeof mem);
    bytes_text((double)b->weight_bytes, weights, sizeof weights);
    bytes_text((double)b->kv_room, room, sizeof room);
    bytes_text(b->kv_bytes_per_token, per, sizeof per);
    /* what the memory gives: "MemAvailable 22.83 GiB - 10% margin - weights 1.11 GiB
     * leaves 19.44 GiB" */
    char left[256], state[96] = "";
    if (b->state_bytes && b->state_bytes <= b->weight_bytes) {
        char sb[32];
        bytes_text((double)b->state_bytes, sb, sizeof sb);
        bytes_text((double)(b->weight_bytes - b->state_bytes), weights, sizeof weights);
        snprintf(state, sizeof state, " - recurrent state %s (%d sequences)", sb,
                 b->max_batch > 0 ? b->max_batch : 1);
    }
    snprintf(left, sizeof left, "MemAvailable %s - %d%% margin - weights %s%s leaves %s", mem,
             SRV_MEM_MARGIN_PCT, weights, state, room);
    if (b->tokens == 0) {
        snprintf(buf, cap, "no memory left for the KV cache: %s, less than one token's KV "
                 "cache (%s); free memory, load smaller weights (--weights int8) or set "
                 "--kv-budget TOKENS", left, per);
    } else if (b->over) {
        bytes_text((double)b->tokens * b->kv_bytes_per_token, need, sizeof need);
        snprintf(buf, cap, "warning: --kv-budget %d tokens needs %s of KV cache at %s/token; "
                 "%s, about %lld tokens: under load the server may run out of memory before "
                 "the budget makes requests wait", b->tokens, need, per, left,
                 (long long)b->fit_tokens);
    } else if (b->capped) {
        bytes_text((double)b->default_tokens * b->kv_bytes_per_token, need, sizeof need);
        snprintf(buf, cap, "KV budget %d tokens, lowered from max batch %d x ctx %d = %lld "
                 "tokens (%s of KV cache at %s/token) to what fits: %s; --kv-budget "
                 "overrides", b->tokens, b->max_batch, b->n_ctx, (long long)b->default_tokens,
                 need, per, left);
    } else {
        bytes_text((double)b->tokens * b->kv_bytes_per_token, need, sizeof need);
        char what[64];
        if (b->requested > 0) snprintf(what, sizeof what, "--kv-budget");
        else snprintf(what, sizeof what, "max batch %d x ctx %d", b->max_batch, b->n_ctx);
        snprintf(buf, cap, "KV budget %d tokens (%s; %s of KV cache at %s/token; %s)",
                 b->tokens, what, need, per, left);
    }
}

facet_status srv_kv_plan(const char *dir, int n_ctx, facet_weight_format weights,
                         facet_kv_type kv_cache, uint64_t mem_available, int *ctx,
                         uint64_t *mem, uint64_t *weight_bytes, double *kv_bytes_per_token,
                         uint64_t *state_bytes, facet_error *err) {
    facet_facts *f = malloc(sizeof *f);
    facet_plan *p = malloc(sizeof *p);
    if (!f || !p) {
        free(f);
        free(p);
        return facet_err(err, FACET_E_NOMEM, "memory plan");
    }
    facet_plan_opts o = {.ctx = n_ctx, .batch = 1, .weights = facet_plan_weights(weights),
                         .mem_available = mem_available, .kv_cache = kv_cache};
    facet_status st;
    if (gguf_path_is_gguf(dir)) { /* facts and run-time bytes from the file, as facet plan */
        gguf_model gm;
        st = gguf_model_open(dir, &gm, err);
        if (st == FACET_OK) {
            st = facet_facts_from_gguf(&gm, f, err);
            for (size_t i = 0; st == FACET_OK && i < gm.n_tensors; i++) {
                int fmt;
                uint64_t b = facet_gguf_tensor_run_bytes(gm.by_name[i], &fmt);
                o.gguf_weight_bytes += b;
                if (b && fmt >= 0) o.gguf_formats |= 1u << fmt;
            }
            gguf_model_close(&gm);
        }
    } else if ((st = facet_facts_read(dir, f, err)) == FACET_OK &&
               facet_dir_has_weights(dir)) { /* the probe, as the loader does */
        st_checkpoint ck;
        st = st_checkpoint_open(dir, &ck, err);
        if (st == FACET_OK) {
            st = facet_facts_probe(f, &ck, err);
            st_checkpoint_close(&ck);
        }
    }
    if (st == FACET_OK) st = facet_plan_make(f, &o, p, err);
    if (st == FACET_OK) {
        *ctx = (int)p->ctx;
        *mem = p->mem_available;
        *weight_bytes = p->weight_bytes[p->weights];
        *kv_bytes_per_token = p->kv_bytes_per_token_actual;
        if (state_bytes) *state_bytes = p->state_bytes_per_sequence;
    }
    free(f);
    free(p);
    return st;
}
