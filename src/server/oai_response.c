/* oai_response.c — OpenAI response shapes (see oai_response.h). */
#include "server/oai_response.h"

#include <stdlib.h>
#include <string.h>

const char *oai_finish_name(srv_finish f) {
    switch (f) {
    case SRV_FINISH_STOP: return "stop";
    case SRV_FINISH_LENGTH: return "length";
    case SRV_FINISH_CANCEL: return "length";
    case SRV_FINISH_ERROR: return "error";
    default: return NULL;
    }
}

json_t *oai_usage(int prompt_tokens, int completion_tokens) {
    return json_pack("{s:i,s:i,s:i}", "prompt_tokens", prompt_tokens, "completion_tokens",
                     completion_tokens, "total_tokens", prompt_tokens + completion_tokens);
}

/* A JSON string of len bytes (U+FFFD when they are not valid UTF-8: a token that ends
 * inside a character), and optionally its "bytes" array. */
static json_t *text_json(const char *text, size_t len, json_t **bytes) {
    if (bytes) {
        *bytes = json_array();
        for (size_t i = 0; i < len; i++)
            json_array_append_new(*bytes, json_integer((unsigned char)text[i]));
    }
    json_t *s = json_stringn(text ? text : "", len);
    return s ? s : json_string("\xef\xbf\xbd");
}

/* The text chosen token i added to the detokenized stream. */
static json_t *chosen_text(const srv_output *o, int i, json_t **bytes) {
    size_t a = i > 0 ? o->raw_end.data[i - 1] : 0, b = o->raw_end.data[i];
    if (b < a) b = a;
    return text_json(facet_str_cstr(&o->raw) + a, b - a, bytes);
}

/* The text token `alt` would add after token `prev`: decode([prev, alt]) minus
 * decode([prev]), so leading-space rules of the decoder apply as in the stream. */
static json_t *alt_text(const facet_tokenizer *tok, int32_t prev, int32_t alt, json_t **bytes) {
    int32_t pair[2] = {prev, alt};
    char *both = NULL, *one = NULL;
    size_t lb = 0, lo = 0;
    facet_error e;
    json_t *r;
    if (prev >= 0 && facet_detokenize(tok, pair, 2, 0, &both, &lb, &e) == FACET_OK &&
        facet_detokenize(tok, pair, 1, 0, &one, &lo, &e) == FACET_OK && lo <= lb &&
        !memcmp(both, one, lo)) {
        r = text_json(both + lo, lb - lo, bytes);
    } else {
        free(both);
        both = NULL;
        if (facet_detokenize(tok, &alt, 1, 0, &both, &lb, &e) != FACET_OK) lb = 0;
        r = text_json(both, lb, bytes);
    }
    free(both);
    free(one);
    return r;
}

json_t *oai_logprobs(const oai_meta *m, const srv_output *c, int from, int to,
                     int32_t prompt_last, size_t *text_offset) {
    if (!m->logprobs) return NULL;
    if (m->kind == OAI_CHAT) {
        json_t *content = json_array();
        for (int i = from; i < to; i++) {
            json_t *bytes;
            json_t *tokstr = chosen_text(c, i, &bytes);
            int32_t prev = i > 0 ? c->ids.data[i - 1] : prompt_last;
            json_t *tops = json_array();
            for (int k = 0; k < m->top_n; k++) {
                int32_t tid = c->top_ids.data[(size_t)i * m->top_n + k];
                if (tid < 0) continue;
                json_t *tb;
                json_t *ts = alt_text(m->tok, prev, tid, &tb);
                json_array_append_new(tops, json_pack("{s:o,s:f,s:o}", "token", ts, "logprob",
                                                      c->top_lp.data[(size_t)i * m->top_n + k],
                                                      "bytes", tb));
            }
            json_array_append_new(content,
                                  json_pack("{s:o,s:f,s:o,s:o}", "token", tokstr, "logprob",
                                            c->logprob.data[i], "bytes", bytes, "top_logprobs",
                                            tops));
        }
        return json_pack("{s:o}", "content", content);
    }
    json_t *tokens = json_array(), *lps = json_array(), *tops = json_array(),
           *offs = json_array();
    for (int i = from; i < to; i++) {
        json_t *ts = chosen_text(c, i, NULL);
        int32_t prev = i > 0 ? c->ids.data[i - 1] : prompt_last;
        size_t tlen = json_string_length(ts);
        json_array_append_new(tokens, ts);
        json_array_append_new(lps, json_real(c->logprob.data[i]));
        json_t *top = json_object();
        for (int k = 0; k < m->top_n; k++) {
            int32_t tid = c->top_ids.data[(size_t)i * m->top_n + k];
            if (tid < 0) continue;
            json_t *s = alt_text(m->tok, prev, tid, NULL);
            if (!json_object_get(top, json_string_value(s)))
                json_object_set_new(top, json_string_value(s),
                                    json_real(c->top_lp.data[(size_t)i * m->top_n + k]));
            json_decref(s);
        }
        json_array_append_new(tops, top);
        json_array_append_new(offs, json_integer((json_int_t)*text_offset));
        *text_offset += tlen;
    }
    return json_pack("{s:o,s:o,s:o,s:o}", "tokens", tokens, "token_logprobs", lps,
                     "top_logprobs", tops, "text_offset", offs);
}

json_t *oai_response(const oai_meta *m, const srv_job *j, json_t **messages,
                     const char **finish) {
    json_t *choices = json_array();
    int completion = 0;
    for (int i = 0; i < j->n_choices; i++) {
        const srv_output *c = &j->choices[i].out;
        completion += (int)c->ids.len;
        size_t off = 0;
        json_t *lp = oai_logprobs(m, c, 0, (int)c->ids.len, j->prompt[j->n_prompt - 1], &off);
        if (!lp) lp = json_null();
        json_t *ch;
        if (m->kind == OAI_CHAT)
            ch = json_pack("{s:i,s:o,s:o,s:s}", "index", i, "message", messages[i], "logprobs",
                           lp, "finish_reason", finish[i]);
        else
            ch = json_pack("{s:i,s:o,s:o,s:s}", "index", i, "text",
                           json_stringn(facet_str_cstr(&c->text), c->text.len), "logprobs", lp, "finish_reason",
                           finish[i]);
        json_array_append_new(choices, ch);
    }
    return json_pack("{s:s,s:s,s:I,s:s,s:o,s:o}", "id", m->id, "object",
                     m->kind == OAI_CHAT ? "chat.completion" : "text_completion", "created",
                     (json_int_t)m->created, "model", m->model, "choices", choices, "usage",
                     oai_usage(j->n_prompt, completion));
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
    return json_pack("{s:s,s:s,s:I,s:s,s:[o]}", "id", m->id, "object",
                     m->kind == OAI_CHAT ? "chat.completion.chunk" : "text_completion",
                     "created", (json_int_t)m->created, "model", m->model, "choices", ch);
}
