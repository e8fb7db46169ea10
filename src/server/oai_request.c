/* oai_request.c — OpenAI request bodies -> oai_request (see oai_request.h). */
#include "server/oai_request.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facet_grammar.h"
#include "util/json.h"
#include "util/utf8.h"

int oai_fail(oai_error *e, int http_status, const char *type, const char *param,
             const char *code, const char *fmt, ...) {
    e->http_status = http_status;
    e->type = type;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    snprintf(e->code, sizeof e->code, "%s", code ? code : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

int oai_http_status(facet_status st, const char **type) {
    switch (st) {
    case FACET_E_NOMEM:
    case FACET_E_INTERNAL:
    case FACET_E_NUMERIC:
    case FACET_E_IO:
        *type = "server_error";
        return 500;
    default:
        *type = "invalid_request_error";
        return 400;
    }
}

int oai_fail_status(oai_error *e, facet_status st, const char *param, const char *code,
                    const char *fmt, ...) {
    const char *type;
    int http = oai_http_status(st, &type);
    oai_fail(e, http, type, param, code, "%s", "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

static int utf8_ok(const char *s) { return facet_utf8_validate(s, strlen(s)) == strlen(s); }

char *oai_error_json(const oai_error *e) {
    json_t *o = NULL;
    /* messages may quote invalid UTF-8 from a body: jansson refuses it, so fall back (and
     * only then: a NULL from json_pack is otherwise out of memory) */
    if (utf8_ok(e->message) && utf8_ok(e->param) && utf8_ok(e->code))
        o = json_pack("{s:{s:s,s:s,s:o,s:o}}", "error", "message", e->message, "type",
                      e->type ? e->type : "invalid_request_error", "param",
                      e->param[0] ? json_string(e->param) : json_null(), "code",
                      e->code[0] ? json_string(e->code) : json_null());
    else
        o = json_pack("{s:{s:s,s:s,s:n,s:n}}", "error", "message", "invalid request", "type",
                      e->type ? e->type : "invalid_request_error", "param", "code");
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}

#define BAD(param, ...) oai_fail(e, 400, "invalid_request_error", param, NULL, __VA_ARGS__)

/* The fields each endpoint accepts. */
static const char *const completion_fields[] = {
    "model", "prompt", "max_tokens", "temperature", "top_p", "n", "stream", "stream_options",
    "logprobs", "echo", "stop", "presence_penalty", "frequency_penalty", "best_of",
    "logit_bias", "user", "seed", "suffix", "top_k", "min_p", "repetition_penalty",
    "response_format", "grammar", NULL};
static const char *const chat_fields[] = {
    "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "n",
    "stream", "stream_options", "stop", "presence_penalty", "frequency_penalty", "logit_bias",
    "logprobs", "top_logprobs", "user", "seed", "tools", "tool_choice", "parallel_tool_calls",
    "response_format", "grammar", "top_k", "min_p", "repetition_penalty", "store", "metadata",
    "chat_template_kwargs", NULL};

static int known(const char *const *list, const char *key) {
    for (; *list; list++)
        if (!strcmp(*list, key)) return 1;
    return 0;
}

/* The field, or NULL when absent or null. */
static json_t *field(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    return v && !json_is_null(v) ? v : NULL;
}

static int get_bool(json_t *o, const char *key, int *out, oai_error *e) {
    json_t *v = field(o, key);
    if (!v) return 0;
    if (!json_is_boolean(v))
        return BAD(key, "'%s' must be a boolean, got %s", key, facet_json_type_name(v));
    *out = json_is_true(v);
    return 0;
}

static int get_int(json_t *o, const char *key, long long lo, long long hi, int *out,
                   oai_error *e) {
    json_t *v = field(o, key);
    if (!v) return 0;
    if (!json_is_integer(v))
        return BAD(key, "'%s' must be an integer, got %s", key, facet_json_type_name(v));
    long long x = json_integer_value(v);
    if (x < lo || x > hi)
        return BAD(key, "'%s'=%lld is out of range (expected %lld <= %s <= %lld)", key, x, lo,
                   key, hi);
    *out = (int)x;
    return 0;
}

/* A number; range checks are the sampler's (facet_sampler_params_validate). */
static int get_num(json_t *o, const char *key, float *out, oai_error *e) {
    json_t *v = field(o, key);
    if (!v) return 0;
    if (!json_is_number(v))
        return BAD(key, "'%s' must be a number, got %s", key, facet_json_type_name(v));
    double x = json_number_value(v);
    if (!facet_sampler_param_from_double(x, out)) /* the CLI's conversion too */
        return BAD(key, "'%s'=%g is out of range (expected a finite number of magnitude at most 1e30)",
                   key, x);
    return 0;
}

static int check_utf8(const char *s, size_t len, const char *param, oai_error *e) {
    size_t ok = facet_utf8_validate(s, len);
    if (ok != len) return BAD(param, "'%s' is not valid UTF-8 (byte %zu)", param, ok);
    return 0;
}

static int parse_stop(oai_request *r, json_t *o, const oai_limits *lim, oai_error *e) {
    json_t *v = field(o, "stop");
    if (!v) return 0;
    size_t n = json_is_string(v) ? 1 : json_is_array(v) ? json_array_size(v) : 0;
    if (!json_is_string(v) && !json_is_array(v))
        return BAD("stop", "'stop' must be a string or an array of strings, got %s",
                   facet_json_type_name(v));
    if (n > (size_t)lim->max_stops)
        return BAD("stop", "'stop' has %zu entries (at most %d)", n, lim->max_stops);
    r->stops = calloc(n + 1, sizeof *r->stops);
    if (!r->stops) return oai_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_is_string(v) ? v : json_array_get(v, i);
        if (!json_is_string(s))
            return BAD("stop", "'stop[%zu]' must be a string, got %s", i,
                       facet_json_type_name(s));
        size_t len = json_string_length(s);
        if (len == 0) return BAD("stop", "'stop[%zu]' is empty", i);
        if (len > 1024) return BAD("stop", "'stop[%zu]' is %zu bytes (at most 1024)", i, len);
        if (memchr(json_string_value(s), 0, len))
            return BAD("stop", "'stop[%zu]' contains a NUL character", i);
        r->stops[i] = strdup(json_string_value(s));
        if (!r->stops[i]) return oai_fail(e, 500, "server_error", NULL, NULL, "out of memory");
        r->n_stops = (int)i + 1;
    }
    return 0;
}

static int parse_logit_bias(oai_request *r, json_t *o, const oai_limits *lim, oai_error *e) {
    json_t *v = field(o, "logit_bias");
    if (!v) return 0;
    if (!json_is_object(v))
        return BAD("logit_bias", "'logit_bias' must be an object, got %s",
                   facet_json_type_name(v));
    size_t n = json_object_size(v);
    if (n > (size_t)lim->n_vocab)
        return BAD("logit_bias", "'logit_bias' has %zu entries (the vocabulary has %d)", n,
                   lim->n_vocab);
    r->bias = calloc(n + 1, sizeof *r->bias);
    if (!r->bias) return oai_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    const char *key;
    json_t *val;
    int i = 0;
    json_object_foreach(v, key, val) {
        char *end;
        long id = strtol(key, &end, 10);
        if (!*key || *end || id < 0 || id >= lim->n_vocab)
            return BAD("logit_bias", "'logit_bias' key '%.64s' is not a token id in [0, %d)",
                       key, lim->n_vocab);
        if (!json_is_number(val))
            return BAD("logit_bias", "'logit_bias[%ld]' must be a number, got %s", id,
                       facet_json_type_name(val));
        double b = json_number_value(val);
        if (!(b >= -100 && b <= 100))
            return BAD("logit_bias", "'logit_bias[%ld]'=%g is out of range [-100, 100]", id, b);
        r->bias[i].token = (int32_t)id;
        r->bias[i].bias = (float)b;
        i++;
    }
    r->sampling.logit_bias = r->bias;
    r->sampling.n_logit_bias = i;
    return 0;
}

static int parse_prompt(oai_request *r, json_t *o, const oai_limits *lim, oai_error *e) {
    json_t *v = field(o, "prompt");
    if (!v) return BAD("prompt", "'prompt' is required");
    int batch_of_one = json_is_array(v) && json_array_size(v) == 1 &&
                       (json_is_string(json_array_get(v, 0)) || json_is_array(json_array_get(v, 0)));
    if (batch_of_one) v = json_array_get(v, 0); /* ["text"] or [[ids]] */
    if (json_is_string(v)) {
        r->prompt_text = json_string_value(v);
        r->prompt_len = json_string_length(v);
        return check_utf8(r->prompt_text, r->prompt_len, "prompt", e);
    }
    if (!json_is_array(v))
        return BAD("prompt", "'prompt' must be a string or an array of token ids, got %s",
                   facet_json_type_name(v));
    size_t n = json_array_size(v);
    if (n == 0) return BAD("prompt", "'prompt' is empty");
    if (!batch_of_one && (json_is_string(json_array_get(v, 0)) || json_is_array(json_array_get(v, 0))))
        return BAD("prompt", "'prompt' with %zu prompts is not supported (send one prompt per "
                   "request)", n);
    r->prompt_ids = malloc(n * sizeof *r->prompt_ids);
    if (!r->prompt_ids) return oai_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_array_get(v, i);
        if (!json_is_integer(t))
            return BAD("prompt", "'prompt[%zu]' must be an integer token id, got %s", i,
                       facet_json_type_name(t));
        json_int_t id = json_integer_value(t);
        if (id < 0 || id >= lim->n_vocab)
            return BAD("prompt", "'prompt[%zu]'=%lld is not a token id in [0, %d)", i,
                       (long long)id, lim->n_vocab);
        r->prompt_ids[i] = (int32_t)id;
    }
    r->n_prompt_ids = n;
    return 0;
}

/* Messages and tools keep integers beyond 64 bits as marker strings (oai_parse_json):
 * a field that must be text is a string that is no such marker, and a value's type is
 * named as the body spelled it. */
static int is_text(const json_t *v) { return json_is_string(v) && !facet_json_exact_int(v); }

static int parse_messages(oai_request *r, json_t *o, oai_error *e) {
    json_t *v = field(o, "messages");
    if (!v) return BAD("messages", "'messages' is required");
    if (!json_is_array(v))
        return BAD("messages", "'messages' must be an array, got %s",
                   facet_json_exact_type_name(v));
    if (json_array_size(v) == 0)
        return BAD("messages", "'messages' must contain at least one message");
    size_t i;
    json_t *m;
    json_array_foreach(v, i, m) {
        if (!json_is_object(m))
            return BAD("messages", "'messages[%zu]' must be an object, got %s", i,
                       facet_json_exact_type_name(m));
        json_t *role = json_object_get(m, "role");
        if (!is_text(role))
            return BAD("messages", "'messages[%zu].role' must be a string", i);
        const char *rs = json_string_value(role);
        if (strcmp(rs, "system") && strcmp(rs, "user") && strcmp(rs, "assistant") &&
            strcmp(rs, "tool") && strcmp(rs, "developer"))
            return BAD("messages", "'messages[%zu].role'='%.32s' is not one of system, "
                       "developer, user, assistant, tool", i, rs);
        json_t *c = json_object_get(m, "content");
        if (c && !json_is_null(c) && !is_text(c) && !json_is_array(c))
            return BAD("messages", "'messages[%zu].content' must be a string or an array, "
                       "got %s", i, facet_json_exact_type_name(c));
        if (json_is_array(c)) {
            size_t j;
            json_t *part;
            json_array_foreach(c, j, part) {
                json_t *type = json_object_get(part, "type");
                if (!json_is_object(part) || !is_text(type) ||
                    strcmp(json_string_value(type), "text") ||
                    !is_text(json_object_get(part, "text")))
                    return BAD("messages", "'messages[%zu].content[%zu]' is not a text part "
                               "(only {\"type\": \"text\", \"text\": ...} is supported)", i, j);
            }
        }
    }
    r->messages = v;
    return 0;
}

static int parse_tools(oai_request *r, json_t *o, oai_error *e) {
    json_t *v = field(o, "tools");
    r->tool_choice = OAI_TOOL_NONE;
    if (v) {
        if (!json_is_array(v))
            return BAD("tools", "'tools' must be an array, got %s",
                       facet_json_exact_type_name(v));
        size_t i;
        json_t *t;
        json_array_foreach(v, i, t) {
            json_t *type = json_object_get(t, "type");
            json_t *fn = json_object_get(t, "function");
            if (!json_is_object(t) || !is_text(type) ||
                strcmp(json_string_value(type), "function") || !json_is_object(fn) ||
                !is_text(json_object_get(fn, "name")))
                return BAD("tools", "'tools[%zu]' must be {\"type\": \"function\", "
                           "\"function\": {\"name\": ...}}", i);
        }
        if (json_array_size(v) > 0) {
            r->tools = v;
            r->tool_choice = OAI_TOOL_AUTO;
        }
    }
    json_t *c = field(o, "tool_choice");
    if (!c) return 0;
    if (json_is_string(c)) {
        const char *s = json_string_value(c);
        if (!strcmp(s, "none")) r->tool_choice = OAI_TOOL_NONE;
        else if (!strcmp(s, "auto")) r->tool_choice = r->tools ? OAI_TOOL_AUTO : OAI_TOOL_NONE;
        else if (!strcmp(s, "required")) r->tool_choice = OAI_TOOL_REQUIRED;
        else
            return BAD("tool_choice", "'tool_choice'='%.32s' is not none, auto, required or "
                       "an object", s);
    } else if (json_is_object(c)) {
        json_t *fn = json_object_get(c, "function");
        json_t *name = json_is_object(fn) ? json_object_get(fn, "name") : NULL;
        if (!json_is_string(name))
            return BAD("tool_choice", "'tool_choice.function.name' must be a string");
        snprintf(r->tool_name, sizeof r->tool_name, "%s", json_string_value(name));
        r->tool_choice = OAI_TOOL_NAMED;
    } else {
        return BAD("tool_choice", "'tool_choice' must be a string or an object, got %s",
                   facet_json_type_name(c));
    }
    if (r->tool_choice == OAI_TOOL_REQUIRED || r->tool_choice == OAI_TOOL_NAMED) {
        if (!r->tools)
            return BAD("tool_choice", "'tool_choice' requires a non-empty 'tools'");
        if (r->tool_choice == OAI_TOOL_NAMED) {
            int found = 0;
            size_t i;
            json_t *t;
            json_array_foreach(r->tools, i, t) found |= !strcmp(
                json_string_value(json_object_get(json_object_get(t, "function"), "name")),
                r->tool_name);
            if (!found)
                return BAD("tool_choice", "'tool_choice' names function '%.64s', which is not "
                           "in 'tools'", r->tool_name);
        }
    }
    return 0;
}

/* response_format (text, json_object, json_schema) and the `grammar` extension (GBNF
 * text, as llama-server takes it): compiled into r->grammar, each error a 400 naming
 * the parameter. */
static int parse_grammar(oai_request *r, json_t *o, oai_error *e) {
    json_t *rf = field(o, "response_format"), *gf = field(o, "grammar");
    char *gbnf = NULL;
    const char *text = NULL, *param = "grammar";
    facet_error fe = {0};
    if (rf) {
        json_t *t = json_is_object(rf) ? json_object_get(rf, "type") : NULL;
        const char *type = json_is_string(t) ? json_string_value(t) : "";
        param = "response_format";
        if (!strcmp(type, "json_object")) {
            text = facet_grammar_json_object_gbnf();
        } else if (!strcmp(type, "json_schema")) {
            json_t *js = json_object_get(rf, "json_schema");
            json_t *schema = json_is_object(js) ? json_object_get(js, "schema") : NULL;
            if (!json_is_object(schema))
                return BAD("response_format", "'response_format.json_schema.schema' must be "
                           "a JSON schema object");
            char *st = facet_json_dumps_exact(schema);
            if (!st) return oai_fail(e, 500, "server_error", NULL, NULL, "out of memory"), -1;
            facet_status rc = facet_json_schema_to_gbnf(st, strlen(st), &gbnf, &fe);
            free(st);
            if (rc != FACET_OK)
                return BAD("response_format", "'response_format.json_schema': %s", fe.message);
            text = gbnf;
        } else if (strcmp(type, "text")) {
            return BAD("response_format", "'response_format.type' must be text, json_object "
                       "or json_schema");
        }
    }
    if (gf) {
        if (!json_is_string(gf)) return BAD("grammar", "'grammar' must be a string (GBNF)");
        if (text) {
            free(gbnf);
            return BAD("grammar", "'grammar' and a JSON 'response_format' exclude each other");
        }
        text = json_string_value(gf);
    }
    if (!text) return 0;
    facet_status rc = facet_grammar_parse(text, strlen(text), &r->grammar, &fe);
    free(gbnf);
    if (rc != FACET_OK) return BAD(param, "'%s': %s", param, fe.message);
    return 0;
}

static int parse_common(oai_request *r, json_t *o, const oai_limits *lim, oai_error *e) {
    facet_sampler_params *sp = &r->sampling;
    facet_sampler_params_default(sp);
    r->max_tokens = -1;
    r->n = 1;
    /* 0 only with echo (completions: score the prompt, generate nothing) */
    if (get_int(o, "max_tokens", r->kind == OAI_COMPLETION ? 0 : 1, 1 << 30, &r->max_tokens, e))
        return -1;
    if (r->kind == OAI_CHAT &&
        get_int(o, "max_completion_tokens", 1, 1 << 30, &r->max_tokens, e))
        return -1;
    if (get_int(o, "n", 1, lim->max_n, &r->n, e)) return -1;
    if (get_bool(o, "stream", &r->stream, e)) return -1;
    json_t *so = field(o, "stream_options");
    if (so) {
        if (!json_is_object(so))
            return BAD("stream_options", "'stream_options' must be an object, got %s",
                       facet_json_type_name(so));
        if (get_bool(so, "include_usage", &r->include_usage, e)) return -1;
    }
    if (get_num(o, "temperature", &sp->temperature, e)) return -1;
    /* OpenAI's range (the sampler itself takes any temperature >= 0) */
    if (sp->temperature > 2.0f)
        return BAD("temperature", "'temperature'=%g is out of range (expected 0 <= "
                   "temperature <= 2)", (double)sp->temperature);
    if (get_num(o, "top_p", &sp->top_p, e)) return -1;
    if (get_num(o, "min_p", &sp->min_p, e)) return -1;
    if (get_num(o, "presence_penalty", &sp->presence_penalty, e)) return -1;
    if (get_num(o, "frequency_penalty", &sp->frequency_penalty, e)) return -1;
    if (get_num(o, "repetition_penalty", &sp->repetition_penalty, e)) return -1;
    if (get_int(o, "top_k", 0, lim->n_vocab, &sp->top_k, e)) return -1;
    json_t *seed = field(o, "seed");
    if (seed) {
        if (!json_is_integer(seed))
            return BAD("seed", "'seed' must be an integer, got %s", facet_json_type_name(seed));
        sp->seed = (uint64_t)json_integer_value(seed);
        r->seed_given = 1;
    }
    if (parse_stop(r, o, lim, e)) return -1;
    if (parse_logit_bias(r, o, lim, e)) return -1;
    json_t *user = field(o, "user");
    if (user && !json_is_string(user))
        return BAD("user", "'user' must be a string, got %s", facet_json_type_name(user));
    return 0;
}

static int parse_completion_only(oai_request *r, json_t *o, const oai_limits *lim,
                                 oai_error *e) {
    if (parse_prompt(r, o, lim, e)) return -1;
    int lp = -1;
    if (get_int(o, "logprobs", 0, lim->max_top_logprobs, &lp, e)) return -1;
    if (lp >= 0) {
        r->logprobs = 1;
        r->top_logprobs = lp;
    }
    if (get_bool(o, "echo", &r->echo, e)) return -1;
    if (r->max_tokens == 0 && !r->echo)
        return BAD("max_tokens", "'max_tokens'=0 needs 'echo': true (the prompt's "
                   "log-probabilities; nothing is generated)");
    if (r->echo && r->stream)
        return BAD("echo", "'echo' is not supported with 'stream'");
    int best_of = r->n;
    if (get_int(o, "best_of", 1, lim->max_n, &best_of, e)) return -1;
    if (best_of != r->n)
        return BAD("best_of", "'best_of'=%d is not supported (only best_of == n)", best_of);
    json_t *suffix = field(o, "suffix");
    if (suffix && !(json_is_string(suffix) && json_string_length(suffix) == 0))
        return BAD("suffix", "'suffix' is not supported");
    if (parse_grammar(r, o, e)) return -1;
    return 0;
}

static int parse_chat_only(oai_request *r, json_t *o, const oai_limits *lim, oai_error *e) {
    if (parse_messages(r, o, e)) return -1;
    if (parse_tools(r, o, e)) return -1;
    r->template_kwargs = field(o, "chat_template_kwargs");
    if (r->template_kwargs && !json_is_object(r->template_kwargs))
        return BAD("chat_template_kwargs", "'chat_template_kwargs' must be an object of "
                   "template variables (e.g. {\"enable_thinking\": false}), got %s",
                   facet_json_type_name(r->template_kwargs));
    if (get_bool(o, "logprobs", &r->logprobs, e)) return -1;
    if (get_int(o, "top_logprobs", 0, lim->max_top_logprobs, &r->top_logprobs, e)) return -1;
    if (r->top_logprobs > 0 && !r->logprobs)
        return BAD("top_logprobs", "'top_logprobs' requires 'logprobs': true");
    if (parse_grammar(r, o, e)) return -1;
    int ptc = 1;
    if (get_bool(o, "parallel_tool_calls", &ptc, e)) return -1;
    int store = 0;
    if (get_bool(o, "store", &store, e)) return -1;
    if (store) return BAD("store", "'store'=true is not supported");
    return 0;
}

/* The first integer beyond 64 bits in v (kept exact by the loader), or NULL. */
static const char *find_bigint(const json_t *v) {
    const char *d = facet_json_exact_int(v);
    size_t i;
    const char *k;
    json_t *x;
    if (json_is_array(v))
        json_array_foreach(v, i, x) if ((d = find_bigint(x))) return d;
    if (json_is_object(v))
        json_object_foreach((json_t *)v, k, x) if ((d = find_bigint(x))) return d;
    return d;
}

json_t *oai_parse_json(const char *body, size_t len, oai_error *e) {
    json_error_t je;
    /* integers beyond 64 bits stay exact (a tool's JSON schema may hold one, for the chat
     * template to print); anywhere but messages and tools they are refused */
    json_t *v = facet_json_loadb_exact(body, len, JSON_REJECT_DUPLICATES, &je);
    const char *k, *big = NULL;
    json_t *x;
    json_object_foreach(v, k, x) {
        if (strcmp(k, "messages") && strcmp(k, "tools") && (big = find_bigint(x))) break;
    }
    if (big) {
        oai_fail(e, 400, "invalid_request_error", k, NULL,
                 "'%s' holds the JSON integer %.40s, which is beyond 64 bits", k, big);
        json_decref(v);
        return NULL;
    }
    if (v) return v;
    if (facet_json_nomem(&je))
        oai_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    else if (json_error_code(&je) == json_error_null_character) /* jansson's text names its flag */
        oai_fail(e, 400, "invalid_request_error", NULL, NULL,
                 "a string in the body holds \\u0000 (NUL), which facet does not accept "
                 "(line %d, column %d)", je.line, je.column);
    else
        oai_fail(e, 400, "invalid_request_error", NULL, NULL,
                 "the body is not valid JSON: %s (line %d, column %d)", je.text, je.line,
                 je.column);
    return NULL;
}

int oai_request_parse(const char *body, size_t len, oai_kind kind, const oai_limits *lim,
                      oai_request *r, oai_error *e) {
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->root = oai_parse_json(body, len, e);
    if (!r->root) return -1;
    json_t *o = r->root;
    int rc = 0;
    if (!json_is_object(o)) {
        rc = BAD(NULL, "the body must be a JSON object, got %s", facet_json_type_name(o));
        goto done;
    }
    const char *key;
    json_t *val;
    json_object_foreach(o, key, val) {
        if (!known(kind == OAI_CHAT ? chat_fields : completion_fields, key)) {
            rc = BAD(key, "Unrecognized request argument supplied: %.64s", key);
            goto done;
        }
    }
    /* one model is served: a request that names none means it (as llama-server and
     * vLLM accept); a name must be the served one */
    json_t *model = field(o, "model");
    if (model && !json_is_string(model)) {
        rc = BAD("model", "'model' must be a string, got %s", facet_json_type_name(model));
        goto done;
    }
    if (model && strcmp(json_string_value(model), lim->model_id)) {
        rc = oai_fail(e, 404, "invalid_request_error", "model", "model_not_found",
                      "The model '%.200s' does not exist (this server serves '%.200s')",
                      json_string_value(model), lim->model_id);
        goto done;
    }
    rc = parse_common(r, o, lim, e);
    if (!rc)
        rc = kind == OAI_CHAT ? parse_chat_only(r, o, lim, e) : parse_completion_only(r, o, lim, e);
    if (!rc) {
        facet_error fe;
        if (facet_sampler_params_validate(&r->sampling, lim->n_vocab, &fe) != FACET_OK) {
            const char *eq = strchr(fe.message, '=');
            char param[64] = "";
            if (eq && eq - fe.message < (long)sizeof param)
                memcpy(param, fe.message, (size_t)(eq - fe.message));
            rc = BAD(param, "%s", fe.message);
        }
    }
done:
    if (rc) oai_request_free(r);
    return rc;
}

void oai_request_free(oai_request *r) {
    json_decref(r->root);
    free(r->prompt_ids);
    free(r->bias);
    if (r->stops)
        for (int i = 0; i < r->n_stops; i++) free(r->stops[i]);
    free(r->stops);
    facet_grammar_free(r->grammar);
    memset(r, 0, sizeof *r);
}
