/* oai_echo.c — completions with "echo": the prompt ahead of each choice's text and, with
 * logprobs, the prompt's tokens ahead of its logprobs (see oai_echo.h). */
#include "server/oai_echo.h"

#include <stdlib.h>
#include <string.h>

/* Whether `id` is a special token: one that decodes to nothing with special tokens
 * skipped (a BOS the tokenizer added, a chat marker). 1 or 0; -1 out of memory. */
static int is_special(const facet_tokenizer *tok, int32_t id) {
    char *t = NULL;
    size_t n = 0;
    facet_error e;
    if (facet_detokenize(tok, &id, 1, 1, &t, &n, &e) != FACET_OK) return -1;
    free(t);
    return n == 0;
}

/* The prompt's part of a logprobs object: tokens, token_logprobs (null first),
 * top_logprobs (null first), text_offset from 0 into the echoed prompt text: each token
 * advances the offset by its text's length in bytes where the text is there; a special
 * token whose text is not (the BOS added to a text prompt) takes no room, nor does the
 * space SentencePiece's dummy prefix puts ahead of the first word. Returns 0, or -1 out of memory. */
static int prompt_part(const oai_meta *m, const srv_job *j, const char *prompt,
                       size_t prompt_len, json_t *tokens, json_t *lps, json_t *tops,
                       json_t *offs, size_t *off) {
    for (int t = 0; t < j->n_prompt; t++) {
        int32_t prev = t > 0 ? j->prompt[t - 1] : -1;
        json_t *ts = oai_token_text(m->tok, prev, j->prompt[t]);
        size_t tl = json_string_length(ts);
        int given = t > 0 && j->p_lp;
        json_t *lp = given ? json_real(j->p_lp[t]) : json_null();
        json_t *top = given ? json_object() : json_null();
        int bad = !ts || !lp || !top;
        for (int k = 0; !bad && given && k < m->top_n; k++) {
            int32_t id = j->p_top_ids[(size_t)t * (size_t)m->top_n + k];
            if (id < 0) continue;
            json_t *s = oai_token_text(m->tok, prev, id);
            if (!s) {
                bad = 1;
            } else if (!json_object_get(top, json_string_value(s))) {
                bad = json_object_set_new(
                    top, json_string_value(s),
                    json_real(j->p_top_lp[(size_t)t * (size_t)m->top_n + k]));
            }
            json_decref(s);
        }
        if (bad) {
            json_decref(ts);
            json_decref(lp);
            json_decref(top);
            return -1;
        }
        /* each append takes its value, failed or not: all four run */
        if (json_array_append_new(tokens, ts) | json_array_append_new(lps, lp) |
            json_array_append_new(tops, top) |
            json_array_append_new(offs, json_integer((json_int_t)*off)))
            return -1;
        const char *at = json_string_value(ts);
        if (*off + tl <= prompt_len && memcmp(prompt + *off, at, tl) == 0)
            *off += tl;
        else if (tl > 0 && at[0] == ' ' && *off + tl - 1 <= prompt_len &&
                 memcmp(prompt + *off, at + 1, tl - 1) == 0)
            *off += tl - 1; /* SentencePiece's dummy prefix: the space is not in the text */
        else {
            int sp = is_special(m->tok, j->prompt[t]);
            if (sp < 0) return -1;
            if (!sp) *off += tl;
        }
    }
    return 0;
}

/* Put the prompt's part ahead of a choice's logprobs object `lp` (its generated part,
 * dropped when `drop`), the generated offsets moved past the prompt text. */
static int patch_logprobs(const oai_meta *m, const srv_job *j, json_t *ch,
                          const char *prompt, size_t text_len, int drop) {
    json_t *lp = json_object_get(ch, "logprobs");
    if (!json_is_object(lp)) return 0;
    json_t *tokens = json_array(), *lps = json_array(), *tops = json_array(),
           *offs = json_array();
    size_t off = 0;
    int bad = !tokens || !lps || !tops || !offs ||
              prompt_part(m, j, prompt, text_len, tokens, lps, tops, offs, &off);
    if (!bad && !drop) {
        json_t *go = json_object_get(lp, "text_offset");
        bad = json_array_extend(tokens, json_object_get(lp, "tokens")) ||
              json_array_extend(lps, json_object_get(lp, "token_logprobs")) ||
              json_array_extend(tops, json_object_get(lp, "top_logprobs"));
        size_t i;
        json_t *v;
        json_array_foreach(go, i, v) bad |= json_array_append_new(
            offs, json_integer(json_integer_value(v) + (json_int_t)text_len));
    }
    if (bad) {
        json_decref(tokens);
        json_decref(lps);
        json_decref(tops);
        json_decref(offs);
        return -1;
    }
    return json_object_set_new(lp, "tokens", tokens) |
           json_object_set_new(lp, "token_logprobs", lps) |
           json_object_set_new(lp, "top_logprobs", tops) |
           json_object_set_new(lp, "text_offset", offs);
}

int oai_echo_patch(json_t *resp, const oai_meta *m, const srv_job *j, const char *prompt,
                   size_t prompt_len, int drop) {
    json_t *choices = json_object_get(resp, "choices");
    size_t i;
    json_t *ch;
    json_array_foreach(choices, i, ch) {
        const char *t = json_string_value(json_object_get(ch, "text"));
        size_t tl = json_string_length(json_object_get(ch, "text"));
        if (drop) tl = 0;
        char *joined = malloc(prompt_len + tl + 1);
        if (!joined) return -1;
        memcpy(joined, prompt, prompt_len);
        if (tl) memcpy(joined + prompt_len, t, tl);
        json_t *text = json_stringn_nocheck(joined, prompt_len + tl);
        free(joined);
        if (!text || json_object_set_new(ch, "text", text)) return -1;
        if (drop && json_object_set_new(ch, "finish_reason", json_string("length"))) return -1;
        if (patch_logprobs(m, j, ch, prompt, prompt_len, drop)) return -1;
    }
    if (drop) {
        json_t *u = json_object_get(resp, "usage");
        if (json_object_set_new(u, "completion_tokens", json_integer(0)) ||
            json_object_set_new(u, "total_tokens", json_integer(j->n_prompt)))
            return -1;
    }
    return 0;
}
