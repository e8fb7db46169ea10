/*
 * ffn_moe.c — the mixture-of-experts FFN kind (layer.h): transformers'
 * MixtralSparseMoeBlock, Qwen2MoeSparseMoeBlock, Qwen3MoeSparseMoeBlock,
 * OlmoeSparseMoeBlock, GraniteMoe(Shared)MoE and GptOssMLP, every variation a fact:
 *   logits = h W_router^T (+ bias)                (E per token)
 *   (ids, w) = route(logits)                      k experts, moe_route.h
 *   y = sum over the k of w_j * down_j(act(gate_j h) * up_j h)   (experts in id order;
 *       gpt-oss: biases on gate, up and down, and its clamped SwiGLU)
 *   y += [sigmoid(h . g)] * shared(h)             [shared expert; gate: Qwen2-MoE]
 * With the ffn_ungated fact (Nemotron-H's NemotronHExperts and its shared NemotronHMLP)
 * every expert and the shared one is down(act(up h)), no gate projection.
 * DeepSeek's routers (DeepseekV2Moe, DeepseekV3TopkRouter: FACET_ROUTER_GROUPED) choose
 * inside groups, with sigmoid scores and a per-expert bias of the choice (V3), and scale
 * the weights by routed_scaling_factor (facet_moe_route_grouped); their shared experts
 * are one gated MLP of n_shared_experts x moe_intermediate_size, ungated.
 *
 * Grouping. The chunk's (token, expert) pairs are sorted by expert (a counting sort,
 * token order kept within an expert); each expert that any token chose runs once over
 * the gathered rows of its tokens, so its weights are read once per chunk (prefill) or
 * once per decode step for every sequence that chose it; an expert nobody chose is not
 * read. Each expert's matmuls are the backend's, split over the threads by output rows;
 * a token's result is summed over its experts in expert order, so it does not depend on
 * which other tokens share the chunk (batched decode and chunked prefill give the bits
 * of one sequence alone). A lone entry (one sequence decoding) runs its k experts
 * together instead (experts_entry: three parallel runs per layer, not three per
 * expert), with the same bits.
 *
 * Where the activations live. The layer's input is copied to moe_in and xn receives the
 * weighted sum (add_scaled, from 0), so every step is the backend's: on a device backend
 * (Vulkan: moe_in, moe_x, moe_y are its memory) the host waits once a layer, for the
 * router logits, and records the rest (each entry's experts by experts_entry: no host
 * gather). The host's own steps (the grouped path's gathers, gpt-oss's clamped SwiGLU)
 * are preceded by facet_sync.
 */
#include <math.h>
#include <string.h>

#include "backend/backend.h"
#include "engine/layer.h"
#include "engine/moe_route.h"

static int moe_takes(const facet_facts *f, int l) {
    return f->num_experts > 0 && l >= 0 && l < FACET_MAX_LAYERS && f->layer_sparse[l];
}

void facet_moe_route(const float *logits, int E, int k, facet_moe_router router, int norm,
                     int *ids, float *w) {
    /* selection: k passes of argmax over the experts not yet taken (k is small) */
    for (int j = 0; j < k; j++) {
        int best = -1;
        for (int e = 0; e < E; e++) {
            int taken = 0;
            for (int i = 0; i < j && !taken; i++) taken = ids[i] == e;
            if (taken || isnan(logits[e])) continue;
            if (best < 0 || logits[e] > logits[best]) best = e;
        }
        if (best < 0) /* only NaNs left: the lowest index not taken */
            for (int e = 0; e < E && best < 0; e++) {
                int taken = 0;
                for (int i = 0; i < j && !taken; i++) taken = ids[i] == e;
                if (!taken) best = e;
            }
        ids[j] = best;
    }
    double m = logits[ids[0]], chosen = 0, all = 0;
    for (int j = 0; j < k; j++) chosen += exp((double)logits[ids[j]] - m);
    int over_all = router == FACET_ROUTER_SOFTMAX_TOPK && !norm;
    if (over_all)
        for (int e = 0; e < E; e++) all += exp((double)logits[e] - m);
    double denom = over_all ? all : chosen;
    for (int j = 0; j < k; j++) w[j] = (float)(exp((double)logits[ids[j]] - m) / denom);
}

/* The index of the largest of x[0..n) not yet taken (taken[i] != 0), ties to the lower
 * index; -1 when every one is taken. */
static int argmax_free(const double *x, const unsigned char *taken, int n) {
    int best = -1;
    for (int i = 0; i < n; i++)
        if (!taken[i] && (best < 0 || x[i] > x[best])) best = i;
    return best;
}

#define GROUPED_MAX 4096 /* experts (MAX_EXPERTS of the facts) */

void facet_moe_route_grouped(const float *logits, const float *bias, int E, int k, int sigmoid,
                             int n_group, int topk_group, int norm, double scaling, int *ids,
                             float *w) {
    double score[GROUPED_MAX], choice[GROUPED_MAX], gscore[GROUPED_MAX];
    unsigned char taken[GROUPED_MAX], keep[GROUPED_MAX];
    double m = -INFINITY, total = 0;
    if (!sigmoid)
        for (int e = 0; e < E; e++) m = logits[e] > m ? logits[e] : m;
    for (int e = 0; e < E; e++) {
        score[e] = sigmoid ? 1.0 / (1.0 + exp(-(double)logits[e])) : exp((double)logits[e] - m);
        total += score[e];
    }
    for (int e = 0; e < E; e++) {
        if (!sigmoid) score[e] /= total;
        choice[e] = score[e] + (bias ? (double)bias[e] : 0.0);
    }
    if (n_group > 1) {
        int per = E / n_group;
        for (int g = 0; g < n_group; g++) {
            const double *c = choice + (size_t)g * per;
            int a = 0, b = -1; /* the group's best, and its second */
            for (int i = 1; i < per; i++)
                if (c[i] > c[a]) a = i;
            for (int i = 0; i < per; i++)
                if (i != a && (b < 0 || c[i] > c[b])) b = i;
            gscore[g] = bias ? c[a] + (b >= 0 ? c[b] : 0.0) : c[a];
        }
        memset(taken, 0, (size_t)n_group);
        memset(keep, 0, (size_t)n_group);
        for (int j = 0; j < topk_group; j++) {
            int g = argmax_free(gscore, taken, n_group);
            taken[g] = keep[g] = 1;
        }
        for (int e = 0; e < E; e++)
            if (!keep[e / per]) choice[e] = 0.0;
    }
    memset(taken, 0, (size_t)E);
    double chosen = 0;
    for (int j = 0; j < k; j++) {
        ids[j] = argmax_free(choice, taken, E);
        taken[ids[j]] = 1;
        chosen += score[ids[j]];
    }
    for (int j = 0; j < k; j++)
        w[j] = (float)((norm ? score[ids[j]] / (chosen + 1e-20) : score[ids[j]]) * scaling);
}

/* Route entry r: its k expert ids and weights from the router logits. */
static void route_row(facet_session *s, int l, int r) {
    const facet_facts *f = &s->model->facts;
    int E = (int)f->num_experts, k = (int)f->num_experts_per_tok;
    if (f->moe_router == FACET_ROUTER_GROUPED) {
        facet_moe_route_grouped(s->moe_logits + (size_t)r * E, s->model->w.layers[l].router_score_bias,
                                E, k, f->moe_sigmoid, (int)f->n_group, (int)f->topk_group,
                                f->norm_topk_prob, f->routed_scaling_factor,
                                s->moe_ids + (size_t)r * k, s->moe_w + (size_t)r * k);
        return;
    }
    facet_moe_route(s->moe_logits + (size_t)r * E, E, k, f->moe_router, f->norm_topk_prob,
                    s->moe_ids + (size_t)r * k, s->moe_w + (size_t)r * k);
}

/* gate = act(gate) * up (ungated: up = act(up)) over rows [0, n) of width `width`, in
 * parallel when many. */
typedef struct {
    facet_session *s;
    int width, per, n, ungated;
} act_job;

/* gpt-oss's GptOssExperts: g = min(gate, limit), u = clamp(up, -limit, limit),
 * gate = (u + 1) * g * sigmoid(alpha g), alpha = 1.702, over one row of n. */
static void clamped_swiglu(float *gate, const float *up, int n, float limit) {
    const float alpha = 1.702f;
    for (int i = 0; i < n; i++) {
        float g = gate[i] < limit ? gate[i] : limit;
        float u = up[i] < -limit ? -limit : up[i] > limit ? limit : up[i];
        gate[i] = (u + 1.0f) * (g / (1.0f + expf(-alpha * g)));
    }
}

static void act_task(void *ctx, int task, int thread) {
    (void)thread;
    const act_job *j = ctx;
    facet_session *s = j->s;
    int act = (int)s->model->facts.act;
    float limit = (float)s->model->facts.swiglu_limit;
    int r1 = (task + 1) * j->per < j->n ? (task + 1) * j->per : j->n;
    for (int r = task * j->per; r < r1; r++) {
        float *g = s->gate + (size_t)r * j->width;
        float *u = s->up + (size_t)r * j->width;
        if (j->ungated) s->be->ops->act(s->be, u, j->width, act);
        else if (limit > 0) clamped_swiglu(g, u, j->width, limit);
        else s->be->ops->gated_act(s->be, g, u, j->width, act);
    }
}

static void act_rows(facet_session *s, int n, int width, int ungated) {
    facet_backend *be = s->be;
    if (!ungated && s->model->facts.swiglu_limit > 0) facet_sync(s); /* the host's */
    int threads = be->ops->threads(be);
    int tasks = threads > 1 && n >= 8 ? threads * 2 : 1;
    act_job j = {s, width, (n + tasks - 1) / tasks, n, ungated};
    be->ops->run(be, (n + j.per - 1) / j.per, act_task, &j);
}

/* y (n, H) = down(act(gate x + gb) * (up x + ub)) + db for rows x (n, H) of a gated FFN
 * of width I (biases NULL: none); with the ffn_ungated fact down(act(up x + ub)) + db
 * (gate and gb unused). */
static void gated_ffn(facet_session *s, float *y, const float *x, const facet_wtensor *gate,
                      const facet_wtensor *up, const facet_wtensor *down, const float *gb,
                      const float *ub, const float *db, int n) {
    facet_backend *be = s->be;
    if (s->model->facts.ffn_ungated) {
        be->ops->matmul(be, s->up, x, up, ub, n);
        act_rows(s, n, up->rows, 1);
        be->ops->matmul(be, y, s->up, down, db, n);
        return;
    }
    float *const out[2] = {s->gate, s->up};
    const facet_wtensor *const w[2] = {gate, up};
    const float *const b[2] = {gb, ub};
    be->ops->matmul_multi(be, 2, out, x, w, b, n);
    act_rows(s, n, gate->rows, 0);
    be->ops->matmul(be, y, s->gate, down, db, n);
}

/* One entry's k experts together, in three backend runs instead of three per expert.
 * The 2k gate and up projections share the input row: one matmul_multi (on the CPU one
 * run per 8 matrices, their rows spread over the threads); each expert's activation; the
 * k down projections, each on its own row, in one matmul_each run (CPU tasks = slices of
 * the k matrices, so with k of 4-8 small experts every thread streams weights without
 * waiting at a barrier per expert; Vulkan: a matvec dispatch each); the k results added
 * to acc (add_scaled) in expert-id order. Every output is one dot of its weight row with
 * its input row, as in the grouped path, and the sum is in the same order: the same
 * bits. The CPU takes it for a lone entry (one sequence decoding) when it runs threads;
 * a device backend (sync: its operations are recorded) for every entry, so the experts
 * run on its memory without the host gathering rows. in, acc: the entry's rows (H). */
#define MOE_ONE_ROW_MAX 64
static void experts_entry(facet_session *s, const facet_layer_weights *L, int k, int r,
                          const float *in, float *acc) {
    facet_backend *be = s->be;
    const facet_facts *f = &s->model->facts;
    int act = (int)f->act;
    size_t H = (size_t)f->hidden_size;
    float limit = (float)f->swiglu_limit;
    int ids[MOE_ONE_ROW_MAX], slot[MOE_ONE_ROW_MAX], n = 0;
    if (k < 1 || k > MOE_ONE_ROW_MAX) return; /* (moe_forward's condition) */
    for (int j = 0; j < k; j++) { /* the entry's experts in id order (distinct: top-k) */
        int id = s->moe_ids[(size_t)r * k + j], at = n++;
        for (; at > 0 && ids[at - 1] > id; at--) ids[at] = ids[at - 1], slot[at] = slot[at - 1];
        ids[at] = id, slot[at] = r * k + j;
    }
    int ungated = f->ffn_ungated, m = ungated ? 1 : 2; /* first-stage matrices an expert */
    size_t I = (size_t)L->experts[ids[0]].up.rows; /* the expert width (this rank's share) */
    float *yg[2 * MOE_ONE_ROW_MAX], *yd[MOE_ONE_ROW_MAX];
    const float *bg[2 * MOE_ONE_ROW_MAX], *xd[MOE_ONE_ROW_MAX], *bd[MOE_ONE_ROW_MAX];
    const facet_wtensor *wg[2 * MOE_ONE_ROW_MAX], *wd[MOE_ONE_ROW_MAX];
    for (int j = 0; j < n; j++) {
        const facet_expert *x = &L->experts[ids[j]];
        float *g = s->gate + (size_t)j * I, *u = s->up + (size_t)j * I;
        if (ungated) { /* up alone */
            yg[j] = u, wg[j] = &x->up, bg[j] = x->up_bias;
        } else {
            yg[2 * j] = g, yg[2 * j + 1] = u;
            wg[2 * j] = &x->gate, wg[2 * j + 1] = &x->up;
            bg[2 * j] = x->gate_bias, bg[2 * j + 1] = x->up_bias;
        }
        yd[j] = s->moe_y + (size_t)j * H, xd[j] = ungated ? u : g;
        wd[j] = &x->down, bd[j] = x->down_bias;
    }
    be->ops->matmul_multi(be, m * n, yg, in, wg, bg, 1);
    if (!ungated && limit > 0) facet_sync(s); /* the clamped SwiGLU is the host's */
    for (int j = 0; j < n; j++) {
        if (ungated) be->ops->act(be, yg[j], (int)I, act);
        else if (limit > 0) clamped_swiglu(yg[2 * j], yg[2 * j + 1], (int)I, limit);
        else be->ops->gated_act(be, yg[2 * j], yg[2 * j + 1], (int)I, act);
    }
    be->ops->matmul_each(be, n, yd, xd, wd, bd);
    for (int j = 0; j < n; j++) be->ops->add_scaled(be, acc, yd[j], H, s->moe_w[slot[j]]);
}

/* xn (the FFN's input norm) -> xn (its output) for entries [0, n) of layer l.
 * On a device backend the host waits once: for the router logits (and Qwen2-MoE's shared
 * expert gate, in the same matmul_multi), from which it picks the experts; the experts,
 * the shared expert and the weighted sum are then recorded after it (experts_entry). */
static void moe_forward(facet_session *s, int l, int n) {
    facet_backend *be = s->be;
    const facet_facts *f = &s->model->facts;
    const facet_layer_weights *L = &s->model->w.layers[l];
    int E = (int)f->num_experts, k = (int)f->num_experts_per_tok;
    size_t H = (size_t)f->hidden_size;

    float *sgl = s->moe_logits + (size_t)n * E; /* (n) the shared expert's gate logits */
    if (L->shared_expert_gate.data) {
        float *const y[2] = {s->moe_logits, sgl};
        const facet_wtensor *const w[2] = {&L->router, &L->shared_expert_gate};
        const float *const b[2] = {L->router_bias, NULL};
        be->ops->matmul_multi(be, 2, y, s->xn, w, b, n);
    } else {
        be->ops->matmul(be, s->moe_logits, s->xn, &L->router, L->router_bias, n);
    }
    facet_sync(s); /* the host reads xn (copied to in) and writes it (the sum starts at 0) */
    facet_for_rows(s, l, n, route_row);

    /* counting sort of the n * k (entry, slot) pairs by expert, entry order kept */
    int *start = s->moe_start; /* [E + 1] */
    memset(start, 0, sizeof(int) * (size_t)(E + 1));
    for (int i = 0; i < n * k; i++) start[s->moe_ids[i] + 1]++;
    for (int e = 0; e < E; e++) start[e + 1] += start[e];
    for (int i = 0; i < n * k; i++) s->moe_pair[start[s->moe_ids[i]]++] = i;
    for (int e = E; e > 0; e--) start[e] = start[e - 1];
    start[0] = 0;

    const float *in = s->moe_in;
    float *acc = s->xn;
    memcpy(s->moe_in, s->xn, sizeof(float) * (size_t)n * H);
    memset(acc, 0, sizeof(float) * (size_t)n * H);
    int device = be->ops->sync != NULL; /* operations recorded: host access costs a wait */
    int per_entry = be->ops->matmul_each && k <= MOE_ONE_ROW_MAX && s->scratch_rows >= k &&
                    (device || (n == 1 && be->ops->threads(be) >= 2));
    for (int r = 0; r < n && per_entry; r++)
        experts_entry(s, L, k, r, in + (size_t)r * H, acc + (size_t)r * H);
    for (int e = 0; e < E && !per_entry; e++) {
        int c = start[e + 1] - start[e];
        if (!c) continue; /* nobody chose it: its weights are not read */
        const int *pairs = s->moe_pair + start[e];
        facet_sync(s); /* the host gathers into moe_x, which the last expert may read */
        for (int i = 0; i < c; i++)
            memcpy(s->moe_x + (size_t)i * H, in + (size_t)(pairs[i] / k) * H, sizeof(float) * H);
        const facet_expert *x = &L->experts[e];
        gated_ffn(s, s->moe_y, s->moe_x, &x->gate, &x->up, &x->down, x->gate_bias, x->up_bias,
                  x->down_bias, c);
        for (int i = 0; i < c; i++)
            be->ops->add_scaled(be, acc + (size_t)(pairs[i] / k) * H, s->moe_y + (size_t)i * H, H,
                                s->moe_w[pairs[i]]);
    }
    if (L->shared_down.data) { /* the shared expert: every entry */
        gated_ffn(s, s->moe_y, in, &L->shared_gate, &L->shared_up, &L->shared_down, NULL, NULL,
                  NULL, n);
        if (!L->shared_expert_gate.data)
            be->ops->add_scaled(be, acc, s->moe_y, (size_t)n * H, 1.0f);
        for (int r = 0; r < n && L->shared_expert_gate.data; r++)
            be->ops->add_scaled(be, acc + (size_t)r * H, s->moe_y + (size_t)r * H, H,
                                1.0f / (1.0f + expf(-sgl[r])));
    }
}

const facet_ffn_kind facet_ffn_moe = {"moe", moe_takes, moe_forward};
