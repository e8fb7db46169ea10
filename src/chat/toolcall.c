/*
 * toolcall.c — tool calls in generated text, to OpenAI-shaped records.
 *
 * Formats (the syntax the chat templates of these families render for tool calls, so
 * the syntax the models were trained to emit):
 *   HERMES   <tool_call>{"name": ..., "arguments": {...}}</tool_call>, any number,
 *            interleaved with text (Hermes 2 Pro, Qwen 2.5 / Qwen 3 templates).
 *   LLAMA3   the whole reply is {"name": ..., "parameters": {...}} (or a JSON list of
 *            them), or <|python_tag|> followed by such JSON (Llama 3.1 / 3.2 templates).
 *   MISTRAL  [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...] (v3 tokenizers), or
 *            [TOOL_CALLS]name[ARGS]{...} (later tokenizers).
 * A block that does not parse (bad JSON, no string "name", arguments not an object or a
 * JSON string, an unclosed tag) stays in the content byte for byte.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "chat/chat_internal.h"
#include "chat/jinja.h"
#include "util/error.h"
#include "util/json.h"

const char *facet_toolcall_format_name(facet_toolcall_format f) {
    switch (f) {
    case FACET_TOOLCALL_HERMES: return "hermes";
    case FACET_TOOLCALL_LLAMA3: return "llama3";
    case FACET_TOOLCALL_MISTRAL: return "mistral";
    case FACET_TOOLCALL_HARMONY: return "harmony";
    default: return "none";
    }
}

facet_toolcall_format facet_toolcall_format_detect(const facet_chat_template *tpl) {
    if (!tpl) return FACET_TOOLCALL_NONE;
    if (chat_template_mentions(tpl, "<tool_call>")) return FACET_TOOLCALL_HERMES;
    if (chat_template_mentions(tpl, "[TOOL_CALLS]")) return FACET_TOOLCALL_MISTRAL;
    if (chat_template_mentions(tpl, "<|python_tag|>")) return FACET_TOOLCALL_LLAMA3;
    const char *src = facet_chat_template_source(tpl, 1);
    if (strstr(src, "<|start_header_id|>") && strstr(src, "\"parameters\"")) return FACET_TOOLCALL_LLAMA3;
    if (chat_template_mentions(tpl, "<|channel|>") && chat_template_mentions(tpl, "<|message|>"))
        return FACET_TOOLCALL_HARMONY;
    return FACET_TOOLCALL_NONE;
}

void facet_toolcall_result_free(facet_toolcall_result *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n_calls; i++) {
        free(r->calls[i].id);
        free(r->calls[i].name);
        free(r->calls[i].arguments);
    }
    free(r->calls);
    free(r->content);
    free(r->reasoning);
    memset(r, 0, sizeof *r);
}

typedef struct parse_state {
    facet_toolcall_result *r;
    facet_str content, reasoning;
    uint32_t hash;
    int oom;
} parse_state;

/* json.dumps form of a JSON value (", " / ": " separators, key order kept). */
static char *dumps_py(const json_t *j) {
    jv v = jv_from_json(j);
    if (v.k == JV_UNDEF) return NULL; /* out of memory */
    facet_str b = {0};
    const char *why;
    int rc = jv_tojson(&b, v, -1, &why);
    jv_unref(v);
    if (rc) {
        facet_str_free(&b);
        return NULL;
    }
    return facet_str_take(&b); /* NULL when out of memory */
}

/* One call object {"name": str, "arguments"|"parameters": object or JSON string}. Returns
 * 1 if it is one (and was added), 0 if it is not, -1 on OOM. */
static int add_call(parse_state *S, const json_t *obj) {
    if (!json_is_object(obj)) return 0;
    const char *name = json_string_value(json_object_get(obj, "name"));
    if (!name || !*name) return 0;
    json_t *args = json_object_get(obj, "arguments");
    if (!args) args = json_object_get(obj, "parameters");
    char *argtext = NULL;
    if (!args || json_is_null(args)) {
        argtext = strdup("{}");
    } else if (json_is_object(args)) {
        argtext = dumps_py(args);
    } else if (json_is_string(args)) {
        json_error_t je;
        json_t *inner = json_loads(json_string_value(args), JSON_DECODE_ANY, &je);
        int ok = json_is_object(inner);
        json_decref(inner);
        if (!inner && facet_json_nomem(&je)) return -1;
        if (!ok) return 0;
        argtext = strdup(json_string_value(args));
    } else {
        return 0;
    }
    if (!argtext) return -1;
    facet_toolcall_result *r = S->r;
    facet_toolcall *nc = realloc(r->calls, (r->n_calls + 1) * sizeof *nc);
    if (!nc) {
        free(argtext);
        return -1;
    }
    r->calls = nc;
    facet_toolcall *c = &r->calls[r->n_calls];
    char id[64];
    snprintf(id, sizeof id, "call_%zu_%08x", r->n_calls, S->hash);
    c->id = strdup(id);
    c->name = strdup(name);
    c->arguments = argtext;
    if (!c->id || !c->name) {
        free(c->id);
        free(c->name);
        free(c->arguments);
        return -1;
    }
    r->n_calls++;
    return 1;
}

/* A call object or a JSON array of call objects: all must be calls, else nothing is
 * added. Returns 1, 0 or -1 as add_call. */
static int add_calls(parse_state *S, const json_t *j) {
    if (json_is_object(j)) return add_call(S, j);
    if (!json_is_array(j) || json_array_size(j) == 0) return 0;
    size_t i;
    json_t *x;
    json_array_foreach(j, i, x) {
        if (!json_is_object(x) || !json_is_string(json_object_get(x, "name"))) return 0;
    }
    size_t before = S->r->n_calls;
    json_array_foreach(j, i, x) {
        int rc = add_call(S, x);
        if (rc <= 0) {
            /* roll back a partial list */
            while (S->r->n_calls > before) {
                facet_toolcall *c = &S->r->calls[--S->r->n_calls];
                free(c->id);
                free(c->name);
                free(c->arguments);
            }
            return rc;
        }
    }
    return 1;
}

/* Parse one JSON value at the start of s (after whitespace); *used = bytes consumed
 * (including leading whitespace). NULL when it does not parse, or (S->oom set) when
 * jansson says it ran out of memory. */
static json_t *json_prefix(parse_state *S, const char *s, size_t n, size_t *used) {
    size_t ws = 0;
    while (ws < n && (s[ws] == ' ' || s[ws] == '\n' || s[ws] == '\t' || s[ws] == '\r')) ws++;
    json_error_t je;
    json_t *j = json_loadb(s + ws, n - ws, JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY, &je);
    if (!j && facet_json_nomem(&je)) S->oom = 1;
    if (!j) return NULL;
    *used = ws + (size_t)je.position;
    return j;
}

static int is_blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!(s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) return 0;
    return 1;
}

static void keep(parse_state *S, const char *s, size_t n) {
    if (facet_str_append(&S->content, s, n)) S->oom = 1;
}

static void parse_hermes(parse_state *S, const char *t, size_t n) {
    static const char OPEN[] = "<tool_call>", CLOSE[] = "</tool_call>";
    size_t pos = 0;
    while (pos < n) {
        const char *o = memmem(t + pos, n - pos, OPEN, sizeof OPEN - 1);
        if (!o) break;
        size_t ob = (size_t)(o - t), ib = ob + sizeof OPEN - 1;
        const char *c = memmem(t + ib, n - ib, CLOSE, sizeof CLOSE - 1);
        if (!c) break; /* partial: an unclosed block stays content */
        size_t ie = (size_t)(c - t), after = ie + sizeof CLOSE - 1;
        size_t used = 0;
        json_t *j = json_prefix(S, t + ib, ie - ib, &used);
        int rc = 0;
        if (j && is_blank(t + ib + used, ie - ib - used)) rc = add_call(S, j);
        json_decref(j);
        if (rc < 0) S->oom = 1;
        keep(S, t + pos, ob - pos);
        if (rc <= 0) keep(S, t + ob, after - ob);
        pos = after;
    }
    keep(S, t + pos, n - pos);
}

static size_t strip_end_tokens(const char *t, size_t n) {
    static const char *const ends[] = {"<|eom_id|>", "<|eot_id|>", NULL};
    for (;;) {
        while (n && (t[n - 1] == ' ' || t[n - 1] == '\n' || t[n - 1] == '\t' || t[n - 1] == '\r')) n--;
        int cut = 0;
        for (int i = 0; ends[i]; i++) {
            size_t l = strlen(ends[i]);
            if (n >= l && !memcmp(t + n - l, ends[i], l)) {
                n -= l;
                cut = 1;
            }
        }
        if (!cut) return n;
    }
}

/* JSON call(s), possibly separated by ';' (Llama 3.2 emits several that way), filling
 * the whole of [t, t+n). Returns 1 when all parsed as calls. */
static int parse_json_calls(parse_state *S, const char *t, size_t n) {
    size_t pos = 0, before = S->r->n_calls;
    int any = 0;
    while (pos < n) {
        size_t used;
        json_t *j = json_prefix(S, t + pos, n - pos, &used);
        int rc = j ? add_calls(S, j) : 0;
        json_decref(j);
        if (rc < 0) S->oom = 1;
        if (rc <= 0) goto undo;
        any = 1;
        pos += used;
        while (pos < n && (t[pos] == ' ' || t[pos] == '\n' || t[pos] == '\t' || t[pos] == '\r' || t[pos] == ';')) pos++;
    }
    if (any) return 1;
undo:
    while (S->r->n_calls > before) {
        facet_toolcall *c = &S->r->calls[--S->r->n_calls];
        free(c->id);
        free(c->name);
        free(c->arguments);
    }
    return 0;
}

static void parse_llama3(parse_state *S, const char *t, size_t n) {
    static const char TAG[] = "<|python_tag|>";
    const char *p = memmem(t, n, TAG, sizeof TAG - 1);
    if (p) {
        size_t b = (size_t)(p - t) + sizeof TAG - 1;
        size_t e = strip_end_tokens(t, n);
        if (e > b && parse_json_calls(S, t + b, e - b)) {
            keep(S, t, (size_t)(p - t));
            return;
        }
        keep(S, t, n);
        return;
    }
    size_t e = strip_end_tokens(t, n);
    size_t b = 0;
    while (b < e && (t[b] == ' ' || t[b] == '\n' || t[b] == '\t' || t[b] == '\r')) b++;
    if (b < e && (t[b] == '{' || t[b] == '[') && parse_json_calls(S, t + b, e - b)) return;
    keep(S, t, n);
}

static void parse_mistral(parse_state *S, const char *t, size_t n) {
    static const char TAG[] = "[TOOL_CALLS]", ARGS[] = "[ARGS]";
    size_t pos = 0;
    while (pos < n) {
        const char *p = memmem(t + pos, n - pos, TAG, sizeof TAG - 1);
        if (!p) break;
        size_t tb = (size_t)(p - t), b = tb + sizeof TAG - 1;
        keep(S, t + pos, tb - pos);
        size_t ws = b;
        while (ws < n && (t[ws] == ' ' || t[ws] == '\n')) ws++;
        size_t used = 0, end = 0;
        int rc = 0;
        if (ws < n && (t[ws] == '[' || t[ws] == '{')) {
            json_t *j = json_prefix(S, t + ws, n - ws, &used);
            rc = j ? add_calls(S, j) : 0;
            json_decref(j);
            end = ws + used;
        } else {
            /* name[ARGS]{...} */
            const char *a = memmem(t + b, n - b, ARGS, sizeof ARGS - 1);
            size_t nl = a ? (size_t)(a - (t + b)) : 0;
            if (a && nl > 0 && nl < 256 && !memchr(t + b, '\n', nl) && !memchr(t + b, ' ', nl)) {
                size_t ab = (size_t)(a - t) + sizeof ARGS - 1;
                json_t *args = json_prefix(S, t + ab, n - ab, &used);
                if (json_is_object(args)) {
                    json_t *obj = json_object();
                    json_object_set_new(obj, "name", json_stringn(t + b, nl));
                    json_object_set(obj, "arguments", args);
                    rc = add_call(S, obj);
                    json_decref(obj);
                    end = ab + used;
                }
                json_decref(args);
            }
        }
        if (rc < 0) S->oom = 1;
        if (rc <= 0) {
            keep(S, t + tb, b - tb); /* not a call: the tag stays content */
            pos = b;
            continue;
        }
        pos = end;
    }
    keep(S, t + pos, n - pos);
}

static const char *find(const char *s, size_t n, const char *what) { return memmem(s, n, what, strlen(what)); }

/* One harmony message: header [h, hb) and body [bb, be). */
static void harmony_message(parse_state *S, const char *h, size_t hn, const char *b, size_t bn, const char *raw,
                            size_t rawn) {
    const char *to = find(h, hn, "to=functions.");
    const char *ch = find(h, hn, "<|channel|>");
    if (to) {
        const char *nm = to + strlen("to=functions.");
        size_t nl = 0;
        while (nm + nl < h + hn && nm[nl] != ' ' && nm[nl] != '<' && nm[nl] != '\n') nl++;
        size_t used = 0;
        json_t *args = nl ? json_prefix(S, b, bn, &used) : NULL;
        int rc = 0;
        if (json_is_object(args) && is_blank(b + used, bn - used)) {
            json_t *obj = json_object();
            json_object_set_new(obj, "name", json_stringn(nm, nl));
            json_object_set(obj, "arguments", args);
            rc = obj ? add_call(S, obj) : -1;
            json_decref(obj);
        }
        json_decref(args);
        if (rc < 0) S->oom = 1;
        if (rc <= 0) keep(S, raw, rawn);
        return;
    }
    size_t cl = 0;
    const char *cn = NULL;
    if (ch) {
        cn = ch + strlen("<|channel|>");
        while (cn + cl < h + hn && cn[cl] != ' ' && cn[cl] != '<') cl++;
    }
    if (cn && cl == 8 && !memcmp(cn, "analysis", 8)) {
        if (facet_str_append(&S->reasoning, b, bn)) S->oom = 1;
    } else {
        keep(S, b, bn);
    }
}

static void parse_harmony(parse_state *S, const char *t, size_t n) {
    size_t pos = 0;
    while (pos < n) {
        const char *m = find(t + pos, n - pos, "<|message|>");
        if (!m) break;
        /* the header starts after the last <|start|> before <|message|> (or at pos) */
        size_t hs = pos;
        const char *st;
        while ((st = find(t + hs, (size_t)(m - (t + hs)), "<|start|>"))) hs = (size_t)(st - t) + strlen("<|start|>");
        /* text before the first <|start|> of this message lies outside any message */
        const char *first = find(t + pos, (size_t)(m - (t + pos)), "<|start|>");
        if (first) keep(S, t + pos, (size_t)(first - (t + pos)));
        size_t bb = (size_t)(m - t) + strlen("<|message|>"), be = n, next = n;
        static const char *const ends[] = {"<|end|>", "<|call|>", "<|return|>", "<|start|>"};
        for (int i = 0; i < 4; i++) {
            const char *e = find(t + bb, n - bb, ends[i]);
            if (e && (size_t)(e - t) < be) {
                be = (size_t)(e - t);
                next = be + (i < 3 ? strlen(ends[i]) : 0);
            }
        }
        harmony_message(S, t + hs, (size_t)(m - (t + hs)), t + bb, be - bb, t + hs, be - hs);
        pos = next;
    }
    keep(S, t + pos, n - pos);
}

facet_status facet_toolcall_parse(facet_toolcall_format format, const char *text, size_t len,
                                  facet_toolcall_result *out, facet_error *err) {
    memset(out, 0, sizeof *out);
    parse_state S = {0};
    S.r = out;
    S.hash = 2166136261u; /* FNV-1a of the text: ids stable for the same output */
    for (size_t i = 0; i < len; i++) S.hash = (S.hash ^ (unsigned char)text[i]) * 16777619u;
    switch (format) {
    case FACET_TOOLCALL_HERMES: parse_hermes(&S, text, len); break;
    case FACET_TOOLCALL_LLAMA3: parse_llama3(&S, text, len); break;
    case FACET_TOOLCALL_MISTRAL: parse_mistral(&S, text, len); break;
    case FACET_TOOLCALL_HARMONY: parse_harmony(&S, text, len); break;
    default: keep(&S, text, len); break;
    }
    if (!S.oom && !S.content.data && facet_str_append(&S.content, "", 0)) S.oom = 1;
    if (!S.oom && S.reasoning.data == NULL && format == FACET_TOOLCALL_HARMONY && facet_str_append(&S.reasoning, "", 0)) S.oom = 1;
    if (S.oom) {
        facet_str_free(&S.content);
        facet_str_free(&S.reasoning);
        facet_toolcall_result_free(out);
        return facet_err(err, FACET_E_NOMEM, "tool-call parse: out of memory");
    }
    if (out->n_calls) {
        /* the text around calls is kept, minus the whitespace that separated them */
        size_t a = 0, b = S.content.len;
        while (a < b && strchr(" \t\r\n", S.content.data[a])) a++;
        while (b > a && strchr(" \t\r\n", S.content.data[b - 1])) b--;
        memmove(S.content.data, S.content.data + a, b - a);
        facet_str_truncate(&S.content, b - a);
    }
    out->content = S.content.data;
    out->reasoning = S.reasoning.data;
    return FACET_OK;
}

json_t *toolcall_result_array(const facet_toolcall_result *r) {
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < r->n_calls; i++) {
        json_t *fn = json_pack("{s:s, s:s}", "name", r->calls[i].name, "arguments", r->calls[i].arguments);
        json_t *c = fn ? json_pack("{s:s, s:s, s:o}", "id", r->calls[i].id, "type", "function", "function", fn) : NULL;
        if (!c || json_array_append_new(arr, c)) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

char *facet_toolcall_result_json(const facet_toolcall_result *r) {
    json_t *arr = toolcall_result_array(r);
    char *s = arr ? json_dumps(arr, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(arr);
    return s;
}
