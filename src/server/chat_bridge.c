/* chat_bridge.c — chat completions over the checkpoint's chat template
 * (facet_chat.h; see chat_bridge.h). */
#include "server/chat_bridge.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "chat/chat_internal.h"
#include "io/gguf.h"
#include "util/error.h"
#include "server/reasoning.h"
#include "util/json.h"

void srv_chat_init(srv_server *s) {
    facet_error err;
    s->chat = NULL;
    s->chat_error[0] = '\0';
    s->toolcall_format = FACET_TOOLCALL_NONE;
    facet_status st = facet_chat_template_load(s->cfg.model_dir, &s->chat, &err);
    if (st == FACET_OK) {
        s->toolcall_format = facet_toolcall_format_detect(s->chat);
        s->reasoning = srv_reasoning_template(facet_chat_template_source(s->chat, 0)) ||
                       srv_reasoning_template(facet_chat_template_source(s->chat, 1));
        return;
    }
    if (st == FACET_E_NOT_FOUND)
        snprintf(s->chat_error, sizeof s->chat_error,
                 "model '%.200s' has no chat template (%s); use /v1/completions", s->model_id,
                 gguf_path_is_gguf(s->cfg.model_dir)
                     ? "the GGUF metadata has no tokenizer.chat_template"
                     : "no chat_template.jinja or tokenizer_config.json chat_template");
    else
        snprintf(s->chat_error, sizeof s->chat_error,
                 "model '%.100s' has a chat template facet cannot use: %.300s", s->model_id,
                 err.message);
}

void srv_chat_free(srv_server *s) {
    facet_chat_template_free(s->chat);
    s->chat = NULL;
}

/* Messages as templates expect them: content parts joined into one string (OpenAI
 * text parts), the "developer" role read as "system", tool_calls' "arguments" strings
 * parsed into objects when they are JSON objects (transformers' templates render
 * arguments as mappings). A new reference. */
static json_t *normalize_messages(json_t *messages) {
    json_t *out = json_array();
    size_t i;
    json_t *m;
    json_array_foreach(messages, i, m) {
        json_t *c = json_deep_copy(m);
        json_t *content = json_object_get(c, "content");
        /* null or absent content (an assistant turn with tool_calls, as the OpenAI SDK
         * returns it) is "" to templates, as vLLM gives it: templates test and slice it
         * as a string */
        if (!content || json_is_null(content))
            json_object_set_new(c, "content", json_string(""));
        if (json_is_array(content)) {
            size_t j, len = 0;
            json_t *part;
            json_array_foreach(content, j, part) len +=
                json_string_length(json_object_get(part, "text"));
            char *joined = malloc(len + 1);
            if (joined) {
                size_t off = 0;
                json_array_foreach(content, j, part) {
                    json_t *t = json_object_get(part, "text");
                    memcpy(joined + off, json_string_value(t), json_string_length(t));
                    off += json_string_length(t);
                }
                json_object_set_new(c, "content", json_stringn_nocheck(joined, len));
                free(joined);
            }
        }
        json_t *role = json_object_get(c, "role");
        if (json_is_string(role) && !strcmp(json_string_value(role), "developer"))
            json_object_set_new(c, "role", json_string("system"));
        json_t *calls = json_object_get(c, "tool_calls");
        size_t k;
        json_t *call;
        json_array_foreach(calls, k, call) {
            json_t *fn = json_object_get(call, "function");
            json_t *args = json_object_get(fn, "arguments");
            if (!json_is_string(args)) continue;
            json_t *parsed = json_loadb(json_string_value(args), json_string_length(args), 0, NULL);
            if (json_is_object(parsed)) json_object_set_new(fn, "arguments", parsed);
            else json_decref(parsed);
        }
        json_array_append_new(out, c);
    }
    return out;
}

/* The assistant turn's opening for tool_choice required / named (see chat_bridge.h). */
static void tool_prefix(facet_toolcall_format fmt, const oai_request *r, char *out, size_t cap) {
    out[0] = '\0';
    if (r->tool_choice != OAI_TOOL_REQUIRED && r->tool_choice != OAI_TOOL_NAMED) return;
    const char *open = fmt == FACET_TOOLCALL_HERMES    ? "<tool_call>\n{\"name\": \""
                       : fmt == FACET_TOOLCALL_MISTRAL ? "[TOOL_CALLS][{\"name\": \""
                                                       : "{\"name\": \"";
    if (r->tool_choice == OAI_TOOL_REQUIRED) {
        snprintf(out, cap, "%s", open);
        return;
    }
    /* the name is JSON-escaped as it would appear in the call */
    json_t *name = json_string(r->tool_name);
    char *quoted = name ? json_dumps(name, JSON_ENCODE_ANY) : NULL;
    json_decref(name);
    if (!quoted) return;
    size_t ql = strlen(quoted);
    snprintf(out, cap, "%s%.*s\", \"%s\": ", open, ql >= 2 ? (int)(ql - 2) : 0, quoted + 1,
             fmt == FACET_TOOLCALL_LLAMA3 ? "parameters" : "arguments");
    free(quoted);
}

int srv_chat_prompt(srv_server *s, oai_request *r, int32_t **ids, size_t *n, oai_error *e) {
    *ids = NULL;
    *n = 0;
    r->tools_active = 0;
    r->tool_prefix[0] = '\0';
    if (!s->chat)
        return oai_fail(e, 400, "invalid_request_error", "messages", "chat_template_unavailable",
                        "%s", s->chat_error);
    int with_tools = r->tools && r->tool_choice != OAI_TOOL_NONE;
    if (with_tools && s->toolcall_format == FACET_TOOLCALL_NONE)
        return oai_fail(e, 400, "invalid_request_error", "tools", NULL,
                        "the chat template of model '%.200s' shows no tool-call syntax, so "
                        "facet cannot parse tool calls; send no 'tools' or tool_choice "
                        "\"none\"",
                        s->model_id);
    json_t *msgs = normalize_messages(r->messages);
    /* the request's integers beyond 64 bits written back exactly (util/json.h) */
    char *mjson = msgs ? facet_json_dumps_exact(msgs) : NULL;
    json_decref(msgs);
    char *tjson = with_tools ? facet_json_dumps_exact(r->tools) : NULL;
    char *vjson = r->template_kwargs ? facet_json_dumps_exact(r->template_kwargs) : NULL;
    if (!mjson || (with_tools && !tjson) || (r->template_kwargs && !vjson)) {
        free(mjson);
        free(tjson);
        free(vjson);
        return oai_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    }
    char *text = NULL;
    size_t len = 0;
    facet_error fe;
    facet_status st = facet_chat_render(s->chat, mjson, tjson, 1, vjson, &text, &len, &fe);
    free(mjson);
    free(tjson);
    free(vjson);
    if (st != FACET_OK)
        return oai_fail_status(e, st, "messages", "chat_template_error",
                               "the chat template failed: %s", fe.message);
    r->think_open = s->reasoning && srv_reasoning_open(text, len);
    if (with_tools) {
        r->tools_active = 1;
        tool_prefix(s->toolcall_format, r, r->tool_prefix, sizeof r->tool_prefix);
        size_t pl = strlen(r->tool_prefix);
        if (pl) {
            char *t = realloc(text, len + pl + 1);
            if (!t) {
                free(text);
                return oai_fail(e, 500, "server_error", NULL, NULL, "out of memory");
            }
            text = t;
            memcpy(text + len, r->tool_prefix, pl + 1);
            len += pl;
            /* the call is enforced by constrained decoding (a request's own grammar wins) */
            if (!r->grammar && srv_tool_grammar(s->toolcall_format, r, &r->grammar, &fe) != FACET_OK) {
                free(text);
                return oai_fail_status(e, fe.status, "tools", NULL, "%s", fe.message);
            }
        }
    }
    /* apply_chat_template tokenizes the rendered text without adding special tokens */
    st = facet_tokenize(s->tok, text, len, 0, ids, n, &fe);
    free(text);
    if (st != FACET_OK) return oai_fail_status(e, st, "messages", NULL, "%s", fe.message);
    return 0;
}

/* splitmix64's output function: distinct inputs give distinct outputs (a bijection). */
static uint64_t mix64(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* A tool-call id unique within this process and unlikely to repeat across restarts:
 * "call_" + 24 hex digits, the mix of a per-process base (start time, pid) and a
 * counter. The parser's own ids hash the output text, so two requests (or two choices)
 * that produce the same call would share one id. */
static void fresh_call_id(char *out, size_t cap) {
    static _Atomic uint64_t counter;
    static _Atomic uint64_t base;
    uint64_t b = atomic_load(&base);
    if (!b) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t want = mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^
                              ((uint64_t)getpid() << 16)) | 1;
        uint64_t zero = 0;
        atomic_compare_exchange_strong(&base, &zero, want);
        b = atomic_load(&base);
    }
    uint64_t n = atomic_fetch_add(&counter, 1);
    snprintf(out, cap, "call_%016llx%08llx", (unsigned long long)mix64(b + n),
             (unsigned long long)(mix64(b ^ (n * 0x9e3779b97f4a7c15ULL)) & 0xffffffffULL));
}

/* Give every call of the array a fresh id. Returns 0, or -1 out of memory. */
static int fresh_ids(json_t *calls) {
    size_t i;
    json_t *c;
    json_array_foreach(calls, i, c) {
        char id[64];
        fresh_call_id(id, sizeof id);
        if (json_object_set_new(c, "id", json_string(id))) return -1;
    }
    return 0;
}

/* Parse prefix + text; *calls is the OpenAI tool_calls array (NULL when none) and
 * *content the remaining text (a new reference, null when empty and calls exist).
 * Returns 0, or -1 out of memory (nothing set). */
static int parse_calls(facet_toolcall_format fmt, const char *prefix, const char *text,
                       size_t len, json_t **calls, json_t **content) {
    *calls = NULL;
    *content = NULL;
    size_t pl = strlen(prefix);
    char *all = malloc(pl + len + 1);
    if (!all) return -1;
    memcpy(all, prefix, pl);
    memcpy(all + pl, text, len);
    all[pl + len] = '\0';
    facet_toolcall_result res;
    facet_error e;
    memset(&res, 0, sizeof res);
    int rc = 0;
    if (facet_toolcall_parse(fmt, all, pl + len, &res, &e) != FACET_OK) {
        rc = -1; /* FACET_E_NOMEM, its only error */
    } else if (res.n_calls > 0) {
        json_t *arr = toolcall_result_array(&res);
        /* whitespace around the calls is not content */
        const char *c = res.content;
        size_t cl = strlen(c);
        while (cl && (c[cl - 1] == ' ' || c[cl - 1] == '\n')) cl--;
        while (cl && (*c == ' ' || *c == '\n')) c++, cl--;
        json_t *ct = cl ? json_stringn(c, cl) : json_null();
        if (!arr || !ct || fresh_ids(arr)) {
            json_decref(arr);
            json_decref(ct);
            rc = -1;
        } else {
            *calls = arr;
            *content = ct;
        }
    }
    facet_toolcall_result_free(&res);
    free(all);
    return rc;
}

json_t *srv_chat_build_message(facet_toolcall_format fmt, int tools_active, const char *prefix,
                               const char *text, size_t len, const char **finish) {
    if (tools_active) {
        json_t *calls, *content;
        if (parse_calls(fmt, prefix, text, len, &calls, &content)) return NULL;
        if (calls) {
            *finish = "tool_calls";
            return json_pack("{s:s,s:o,s:o}", "role", "assistant", "content", content,
                             "tool_calls", calls);
        }
        /* no call recognized: the opening the prompt was given belongs to the text */
        size_t pl = strlen(prefix);
        char *all = malloc(pl + len + 1);
        if (!all) return NULL;
        memcpy(all, prefix, pl);
        memcpy(all + pl, text, len);
        json_t *m = json_pack("{s:s,s:s%}", "role", "assistant", "content", all, pl + len);
        free(all);
        return m;
    }
    return json_pack("{s:s,s:s%}", "role", "assistant", "content", text, len);
}

/* Bytes of text[0, len) before marker m or before a tail that starts m. */
static size_t before_marker(const char *text, size_t len, const char *m) {
    size_t ml = strlen(m);
    const char *at = memmem(text, len, m, ml);
    if (at) return (size_t)(at - text);
    for (size_t k = ml - 1 < len ? ml - 1 : len; k > 0; k--)
        if (!memcmp(text + len - k, m, k)) return len - k;
    return len;
}

size_t srv_chat_stream_safe(facet_toolcall_format fmt, const char *prefix, const char *text,
                            size_t len) {
    if (prefix[0]) return 0;
    switch (fmt) {
    case FACET_TOOLCALL_HERMES: return before_marker(text, len, "<tool_call>");
    case FACET_TOOLCALL_MISTRAL: return before_marker(text, len, "[TOOL_CALLS]");
    case FACET_TOOLCALL_LLAMA3: {
        size_t b = 0;
        while (b < len && strchr(" \t\r\n", text[b])) b++;
        if (b == len || text[b] == '{' || text[b] == '[') return 0;
        return before_marker(text, len, "<|python_tag|>");
    }
    default: return 0;
    }
}

json_t *srv_chat_final_delta(facet_toolcall_format fmt, const char *prefix, const char *text,
                             size_t len, size_t sent, const char **finish) {
    json_t *d = srv_chat_build_delta(fmt, 1, prefix, text, len, finish);
    if (!d || sent == 0) return d;
    json_t *c = json_object_get(d, "content");
    if (!json_object_get(d, "tool_calls")) {
        /* no call: the content is the text itself (no opening: sent > 0 means none) */
        json_t *rest = json_stringn(text + sent, len - sent);
        if (!rest || json_object_set_new(d, "content", rest)) {
            json_decref(d);
            return NULL;
        }
        return d;
    }
    /* calls: the parsed content begins with the text sent (less its leading blanks) */
    const char *s = text;
    size_t sl = sent;
    while (sl && strchr(" \t\r\n", *s)) s++, sl--;
    const char *pc = json_string_value(c);
    size_t pl = json_string_length(c);
    if (pc && pl > sl && !memcmp(pc, s, sl)) {
        json_t *rest = json_stringn(pc + sl, pl - sl);
        if (!rest || json_object_set_new(d, "content", rest)) {
            json_decref(d);
            return NULL;
        }
    } else if (c) {
        json_object_del(d, "content");
    }
    return d;
}

json_t *srv_chat_build_delta(facet_toolcall_format fmt, int tools_active, const char *prefix,
                             const char *text, size_t len, const char **finish) {
    json_t *m = srv_chat_build_message(fmt, tools_active, prefix, text, len, finish);
    if (!m) return NULL;
    json_object_del(m, "role");
    json_t *calls = json_object_get(m, "tool_calls");
    size_t i;
    json_t *c;
    json_array_foreach(calls, i, c) {
        if (json_object_set_new(c, "index", json_integer((json_int_t)i))) {
            json_decref(m);
            return NULL;
        }
    }
    if (calls && json_is_null(json_object_get(m, "content"))) json_object_del(m, "content");
    return m;
}
