/* http_embed.c — POST /v1/embeddings over a decoder model: pooled, normalised final
 * hidden states (see http.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/http.h"

#define EMBED_MAX_INPUTS 256

void srv_embed_init(srv_server *s) {
    s->pooling = SRV_POOL_LAST;
    s->pooling_config = 0;
    snprintf(s->pooling_name, sizeof s->pooling_name, "last");
    char path[4096];
    snprintf(path, sizeof path, "%s/1_Pooling/config.json", s->cfg.model_dir);
    json_error_t je;
    json_t *c = json_load_file(path, 0, &je);
    if (!c) return; /* no sentence-transformers pooling config: last-token */
    s->pooling_config = 1;
    if (json_is_true(json_object_get(c, "pooling_mode_lasttoken"))) {
        s->pooling = SRV_POOL_LAST;
    } else if (json_is_true(json_object_get(c, "pooling_mode_mean_tokens"))) {
        s->pooling = SRV_POOL_MEAN;
        snprintf(s->pooling_name, sizeof s->pooling_name, "mean");
    } else if (json_is_true(json_object_get(c, "pooling_mode_cls_token"))) {
        s->pooling = SRV_POOL_CLS;
        snprintf(s->pooling_name, sizeof s->pooling_name, "cls");
    } else {
        s->pooling = -1;
        snprintf(s->pooling_name, sizeof s->pooling_name, "unsupported");
        srv_log(s, "embeddings unavailable: %s asks for a pooling mode facet does not "
                "implement (facet: lasttoken, mean_tokens, cls_token)", path);
    }
    json_decref(c);
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The little-endian float32 bytes of v[0..n) in base64 (OpenAI's encoding_format
 * "base64"). NULL when out of memory. */
static json_t *base64_floats(const float *v, int n) {
    size_t nb = (size_t)n * 4, no = (nb + 2) / 3 * 4;
    unsigned char *b = malloc(nb ? nb : 1);
    char *o = malloc(no + 1);
    json_t *r = NULL;
    if (b && o) {
        for (int i = 0; i < n; i++) {
            uint32_t u;
            memcpy(&u, &v[i], 4);
            for (int k = 0; k < 4; k++) b[(size_t)i * 4 + (size_t)k] = (unsigned char)(u >> (8 * k));
        }
        size_t w = 0;
        for (size_t i = 0; i < nb; i += 3) {
            uint32_t x = (uint32_t)b[i] << 16 | (i + 1 < nb ? (uint32_t)b[i + 1] << 8 : 0) |
                         (i + 2 < nb ? b[i + 2] : 0);
            o[w++] = B64[x >> 18 & 63];
            o[w++] = B64[x >> 12 & 63];
            o[w++] = i + 1 < nb ? B64[x >> 6 & 63] : '=';
            o[w++] = i + 2 < nb ? B64[x & 63] : '=';
        }
        r = json_stringn(o, w);
    }
    free(b);
    free(o);
    return r;
}

typedef struct embed_req {
    json_t *root;
    int n;             /* inputs                                                     */
    int32_t **ids;     /* [n]                                                        */
    int *len;          /* [n]                                                        */
    float *out;        /* [n][hidden]                                                */
} embed_req;

static void embed_free(embed_req *q) {
    for (int i = 0; q->ids && i < q->n; i++) free(q->ids[i]);
    free(q->ids);
    free(q->len);
    free(q->out);
    json_decref(q->root);
}

/* One input: a string (tokenized with the special tokens, as sentence-transformers'
 * tokenizer call) or an array of token ids. */
static int one_input(srv_server *s, json_t *v, size_t i, int32_t **ids, int *len,
                     oai_error *e) {
    if (json_is_string(v)) {
        size_t n = 0;
        facet_error fe;
        if (facet_tokenize(s->tok, json_string_value(v), json_string_length(v), 1, ids, &n,
                           &fe) != FACET_OK)
            return oai_fail_status(e, fe.status, "input", NULL, "%s", fe.message);
        *len = (int)n;
    } else {
        size_t n = json_array_size(v);
        *ids = malloc((n ? n : 1) * sizeof **ids);
        if (!*ids) return oai_fail(e, 500, "server_error", NULL, NULL, "out of memory");
        for (size_t k = 0; k < n; k++) {
            json_t *x = json_array_get(v, k);
            if (!json_is_integer(x) || json_integer_value(x) < 0 ||
                json_integer_value(x) >= s->n_vocab)
                return oai_fail(e, 400, "invalid_request_error", "input", NULL,
                                "'input[%zu][%zu]' is not a token id in [0, %d)", i, k,
                                s->n_vocab);
            (*ids)[k] = (int32_t)json_integer_value(x);
        }
        *len = (int)n;
    }
    if (*len == 0)
        return oai_fail(e, 400, "invalid_request_error", "input", NULL,
                        "input %zu is empty (0 tokens)", i);
    if (*len > s->n_ctx)
        return oai_fail(e, 400, "invalid_request_error", "input", "context_length_exceeded",
                        "input %zu has %d tokens; this model's maximum context length is %d",
                        i, *len, s->n_ctx);
    return 0;
}

static int embed_parse(srv_server *s, const char *body, size_t len, embed_req *q,
                       int *base64, int *dims, oai_error *e) {
    q->root = oai_parse_json(body, len, e);
    if (!q->root) return -1;
    if (!json_is_object(q->root))
        return oai_fail(e, 400, "invalid_request_error", NULL, NULL,
                        "the body must be a JSON object");
    const char *key;
    json_t *v;
    json_object_foreach(q->root, key, v) {
        if (strcmp(key, "model") && strcmp(key, "input") && strcmp(key, "encoding_format") &&
            strcmp(key, "dimensions") && strcmp(key, "user"))
            return oai_fail(e, 400, "invalid_request_error", key, NULL,
                            "Unrecognized request argument supplied: %.64s", key);
    }
    json_t *model = json_object_get(q->root, "model");
    if (model && !json_is_null(model) &&
        (!json_is_string(model) || strcmp(json_string_value(model), s->model_id)))
        return oai_fail(e, 404, "invalid_request_error", "model", "model_not_found",
                        "The model does not exist (this server serves '%.200s')", s->model_id);
    json_t *fmt = json_object_get(q->root, "encoding_format");
    *base64 = 0;
    if (fmt && !json_is_null(fmt)) {
        if (json_is_string(fmt) && !strcmp(json_string_value(fmt), "base64")) *base64 = 1;
        else if (!json_is_string(fmt) || strcmp(json_string_value(fmt), "float"))
            return oai_fail(e, 400, "invalid_request_error", "encoding_format", NULL,
                            "'encoding_format' must be \"float\" or \"base64\"");
    }
    json_t *d = json_object_get(q->root, "dimensions");
    *dims = s->n_embd;
    if (d && !json_is_null(d)) {
        if (!json_is_integer(d) || json_integer_value(d) < 1 ||
            json_integer_value(d) > s->n_embd)
            return oai_fail(e, 400, "invalid_request_error", "dimensions", NULL,
                            "'dimensions' must be an integer in [1, %d]", s->n_embd);
        *dims = (int)json_integer_value(d);
    }
    json_t *in = json_object_get(q->root, "input");
    /* a string, an array of strings, an array of ids, or an array of id arrays */
    int single = json_is_string(in) ||
                 (json_is_array(in) && json_array_size(in) > 0 &&
                  json_is_integer(json_array_get(in, 0)));
    if (!single && (!json_is_array(in) || json_array_size(in) == 0 ||
                    json_array_size(in) > EMBED_MAX_INPUTS))
        return oai_fail(e, 400, "invalid_request_error", "input", NULL,
                        "'input' must be a string, an array of 1..%d strings, an array of "
                        "token ids, or an array of token-id arrays", EMBED_MAX_INPUTS);
    q->n = single ? 1 : (int)json_array_size(in);
    q->ids = calloc((size_t)q->n, sizeof *q->ids);
    q->len = calloc((size_t)q->n, sizeof *q->len);
    q->out = malloc((size_t)q->n * (size_t)s->n_embd * sizeof *q->out);
    if (!q->ids || !q->len || !q->out)
        return oai_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    for (int i = 0; i < q->n; i++) {
        json_t *x = single ? in : json_array_get(in, (size_t)i);
        if (!json_is_string(x) && !json_is_array(x))
            return oai_fail(e, 400, "invalid_request_error", "input", NULL,
                            "'input[%d]' must be a string or an array of token ids", i);
        if (one_input(s, x, (size_t)i, &q->ids[i], &q->len[i], e)) return -1;
    }
    return 0;
}

static json_t *embed_json(srv_server *s, const embed_req *q, int base64, int dims) {
    json_t *data = json_array();
    long tokens = 0;
    for (int i = 0; data && i < q->n; i++) {
        float *v = q->out + (size_t)i * (size_t)s->n_embd;
        if (dims < s->n_embd) { /* Matryoshka: the leading dims, normalised again */
            double norm = 0;
            for (int k = 0; k < dims; k++) norm += (double)v[k] * v[k];
            norm = sqrt(norm);
            for (int k = 0; norm > 0 && k < dims; k++) v[k] = (float)(v[k] / norm);
        }
        json_t *emb;
        if (base64) {
            emb = base64_floats(v, dims);
        } else {
            emb = json_array();
            for (int k = 0; emb && k < dims; k++)
                if (json_array_append_new(emb, json_real(v[k]))) {
                    json_decref(emb);
                    emb = NULL;
                }
        }
        tokens += q->len[i];
        if (!emb || json_array_append_new(data, json_pack("{s:s,s:i,s:o}", "object", "embedding",
                                                          "index", i, "embedding", emb))) {
            json_decref(data);
            return NULL;
        }
    }
    return data ? json_pack("{s:s,s:o,s:s,s:{s:I,s:I}}", "object", "list", "data", data,
                            "model", s->model_id, "usage", "prompt_tokens", (json_int_t)tokens,
                            "total_tokens", (json_int_t)tokens)
                : NULL;
}

enum MHD_Result srv_handle_embeddings(srv_server *s, struct MHD_Connection *c,
                                      const char *body, size_t len) {
    embed_req q;
    memset(&q, 0, sizeof q);
    oai_error e;
    int base64 = 0, dims = 0;
    enum MHD_Result r;
    if (s->pooling < 0) {
        oai_fail(&e, 400, "invalid_request_error", NULL, "embeddings_unavailable",
                 "model '%.200s' asks for a pooling mode facet does not implement "
                 "(1_Pooling/config.json; facet: lasttoken, mean_tokens, cls_token)",
                 s->model_id);
        return srv_respond_error(s, c, &e);
    }
    if (embed_parse(s, body, len, &q, &base64, &dims, &e)) {
        r = srv_respond_error(s, c, &e);
    } else {
        facet_error fe;
        facet_status st = srv_sched_embed(s->sched, (const int32_t *const *)q.ids, q.len, q.n,
                                          (srv_pooling)s->pooling, q.out, &fe);
        if (st != FACET_OK) {
            oai_fail_status(&e, st, NULL, NULL, "embeddings failed: %s", fe.message);
            r = srv_respond_error(s, c, &e);
        } else {
            r = srv_respond_json(s, c, 200, embed_json(s, &q, base64, dims));
        }
    }
    embed_free(&q);
    return r;
}
