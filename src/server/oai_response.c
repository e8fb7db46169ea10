/* oai_response.c — OpenAI response shapes (see oai_response.h). */
#include "server/oai_response.h"

#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

const char *oai_finish_name(srv_finish f) {
    switch (f) {
    case SRV_FINISH_STOP: return "stop";
    case SRV_FINISH_LENGTH: return "length";
    case SRV_FINISH_CANCEL: return "length";
    case SRV_FINISH_ERROR: return "error";
    default: return NULL;
    }
}

json_t *oai_usage(int prompt_tokens, int completion_tokens, int cached_tokens) {
    return json_pack("{s:i,s:i,s:i,s:{s:i}}", "prompt_tokens", prompt_tokens,
                     "completion_tokens", completion_tokens, "total_tokens",
                     prompt_tokens + completion_tokens, "prompt_tokens_details",
                     "cached_tokens", cached_tokens);
}

/* Append v to array a (taking v's reference). A NULL v (a builder out of memory) or a
 * failed append sets *bad: the caller then returns NULL rather than a response with an
 * element missing. */
static void push(json_t *a, json_t *v, int *bad) {
    if (!v || json_array_append_new(a, v)) *bad = 1;
}

/* A JSON string of len bytes (U+FFFD when they are not valid UTF-8: a token that ends
 * inside a character), and optionally its "bytes" array. NULL (and *bytes NULL) when out
 * of memory. */
static json_t *text_json(const char *text, size_t len, json_t **bytes) {
    if (!text) text = "";
    int bad = 0;
    if (bytes) {
        *bytes = json_array();
        for (size_t i = 0; *bytes && i < len; i++)
            push(*bytes, json_integer((unsigned char)text[i]), &bad);
        if (!*bytes) bad = 1;
    }
    json_t *s = NULL;
    if (!bad)
        s = facet_utf8_validate(text, len) == len ? json_stringn(text, len)
                                                   : json_string("\xef\xbf\xbd");
    if (!s && bytes) {
        json_decref(*bytes);
        *bytes = NULL;
    }
    return s;
}

/* The text chosen token i added to the detokenized stream. */
static json_t *chosen_text(const srv_output *o, int i, json_t **bytes) {
    size_t a = i > 0 ? o->raw_end.data[i - 1] : 0, b = o->raw_end.data[i];
    if (b < a) b = a;
    return text_json(facet_str_cstr(&o->raw) + a, b - a, bytes);
}

/* The text token `alt` would add after token `prev`: decode([prev, alt]) minus
 * decode([prev]), so leading-space rules of the decoder apply as in the stream. NULL
 * when out of memory. */
static json_t *alt_text(const facet_tokenizer *tok, int32_t prev, int32_t alt, json_t **bytes) {
    int32_t pair[2] = {prev, alt};
    char *both = NULL, *one = NULL;
    size_t lb = 0, lo = 0;
    facet_error e;
    json_t *r = NULL;
    facet_status st = prev >= 0 ? facet_detokenize(tok, pair, 2, 0, &both, &lb, &e) : FACET_E_INVALID_ARGUMENT;
    if (st == FACET_OK) st = facet_detokenize(tok, pair, 1, 0, &one, &lo, &e);
    if (st == FACET_OK && lo <= lb && !memcmp(both, one, lo)) {
        r = text_json(both + lo, lb - lo, bytes);
    } else if (st != FACET_E_NOMEM) {
        free(both);
        both = NULL;
        st = facet_detokenize(tok, &alt, 1, 0, &both, &lb, &e);
        if (st != FACET_E_NOMEM) r = text_json(both, st == FACET_OK ? lb : 0, bytes);
    }
    if (!r && bytes) *bytes = NULL;
    free(both);
    free(one);
    return r;
}

json_t *oai_logprobs(const oai_meta *m, const srv_output *c, int from, int to,
                     int32_t prompt_last, size_t *text_offset) {
    if (!m->logprobs) return NULL;
    int bad = 0;
    if (m->kind == OAI_CHAT) {
        json_t *content = json_array();
        for (int i = from; content && i < to; i++) {
            json_t *bytes;
            json_t *tokstr = chosen_text(c, i, &bytes);
            int32_t prev = i > 0 ? c->ids.data[i - 1] : prompt_last;
            json_t *tops = json_array();
            for (int k = 0; tops && k < m->top_n; k++) {
                int32_t tid = c->top_ids.data[(size_t)i * m->top_n + k];
                if (tid < 0) continue;
                json_t *tb;
                json_t *ts = alt_text(m->tok, prev, tid, &tb);
                push(tops, ts ? json_pack("{s:o,s:f,s:o}", "token", ts, "logprob",
                                          c->top_lp.data[(size_t)i * m->top_n + k], "bytes", tb)
                              : NULL,
                     &bad);
            }
            push(content,
                 tokstr && tops ? json_pack("{s:o,s:f,s:o,s:o}", "token", tokstr, "logprob",
                                            c->logprob.data[i], "bytes", bytes, "top_logprobs",
                                            tops)
                                : (json_decref(tokstr), json_decref(bytes), json_decref(tops), NULL),
                 &bad);
        }
        if (bad || !content) {
            json_decref(content);
            return NULL;
        }
        return json_pack("{s:o}", "content", content);
    }
    json_t *tokens = json_array(), *lps = json_array(), *tops = json_array(),
           *offs = json_array();
    if (!tokens || !lps || !tops || !offs) bad = 1;
    for (int i = from; !bad && i < to; i++) {
        json_t *ts = chosen_text(c, i, NULL);
        int32_t prev = i > 0 ? c->ids.data[i - 1] : prompt_last;
        size_t tlen = json_string_length(ts);
        push(tokens, ts, &bad);
        push(lps, json_real(c->logprob.data[i]), &bad);
        json_t *top = json_object();
        for (int k = 0; top && k < m->top_n; k++) {
            int32_t tid = c->top_ids.data[(size_t)i * m->top_n + k];
            if (tid < 0) continue;
            json_t *s = alt_text(m->tok, prev, tid, NULL);
            if (!s) bad = 1;
            else if (!json_object_get(top, json_string_value(s)) &&
                     json_object_set_new(top, json_string_value(s),
                                         json_real(c->top_lp.data[(size_t)i * m->top_n + k])))
                bad = 1;
            json_decref(s);
        }
        push(tops, top, &bad);
        push(offs, json_integer((json_int_t)*text_offset), &bad);
        *text_offset += tlen;
    }
    if (bad) {
        json_decref(tokens);
        json_decref(lps);
        json_decref(tops);
        json_decref(offs);
        return NULL;
    }
    return json_pack("{s:o,s:o,s:o,s:o}", "tokens", tokens, "token_logprobs", lps,
                     "top_logprobs", tops, "text_offset", offs);
}

json_t *oai_response(const oai_meta *m, const srv_job *j, json_t **messages,
                     const char **finish) {
    json_t *choices = json_array();
    int completion = 0, bad = !choices;
    for (int i = 0; i < j->n_choices; i++) { /* every message is taken, even after a failure */
        const srv_output *c = &j->choices[i].out;
        completion += (int)c->ids.len;
        size_t off = 0;
        json_t *lp = oai_logprobs(m, c, 0, (int)c->ids.len, j->prompt[j->n_prompt - 1], &off);
        if (!lp && m->logprobs) bad = 1;
        if (!lp) lp = json_null();
        json_t *ch;
        if (m->kind == OAI_CHAT)
            ch = json_pack("{s:i,s:o,s:o,s:s}", "index", i, "message", messages[i], "logprobs",
                           lp, "finish_reason", finish[i]);
        else
            ch = json_pack("{s:i,s:o,s:o,s:s}", "index", i, "text",
                           json_stringn(facet_str_cstr(&c->text), c->text.len), "logprobs", lp, "finish_reason",
                           finish[i]);
        if (choices) push(choices, ch, &bad);
        else json_decref(ch);
    }
    if (bad) {
        json_decref(choices);
        return NULL;
    }
    return json_pack("{s:s,s:s,s:I,s:s,s:o,s:o}", "id", m->id, "object",
                     m->kind == OAI_CHAT ? "chat.completion" : "text_completion", "created",
                     (json_int_t)m->created, "model", m->model, "choices", choices, "usage",
                     oai_usage(j->n_prompt, completion, j->n_cached));
}

json_t *oai_chunk(const oai_meta *m, int index, const char *text, size_t len,
                  json_t *delta_obj, json_t *logprobs, const char *finish) {
    json_t *ch;
    if (!logprobs) logprobs = json_null();
    json_t *fin = finish ? json_string(finish) : json_null();
    if (m->kind == OAI_CHAT) {
        if (!delta_obj) delta_obj = json_object();
        ch = json_pack("{s:i,s:o,s:o,s:o}", "index", index, "delta", delta_obj, "logprobs",
                       logprobs, "finish_reason", fin);
    } else {
        ch = json_pack("{s:i,s:o,s:o,s:o}", "index", index, "text", json_stringn(text, len),
                       "logprobs", logprobs, "finish_reason", fin);
    }
    json_t *chunk = json_pack("{s:s,s:s,s:I,s:s,s:[o]}", "id", m->id, "object",
                              m->kind == OAI_CHAT ? "chat.completion.chunk" : "text_completion",
                              "created", (json_int_t)m->created, "model", m->model, "choices",
                              ch);
    if (chunk && m->include_usage && json_object_set_new(chunk, "usage", json_null())) {
        json_decref(chunk);
        return NULL;
    }
    return chunk;
}

json_t *oai_token_text(const facet_tokenizer *tok, int32_t prev, int32_t id) {
    return alt_text(tok, prev, id, NULL);
}
