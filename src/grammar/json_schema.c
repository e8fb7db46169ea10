/* json_schema.c — a JSON schema -> GBNF text (facet_grammar.h): each sub-schema becomes
 * a rule; objects list their properties in the schema's order, required ones always and
 * optional ones maybe, through a chain of "head" (nothing written yet) and "tail" (a
 * comma comes first) rules. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "facet_grammar.h"
#include "grammar/grammar_internal.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/vec.h"

enum { MAX_DEPTH = 64, MAX_BOUND = 1000 };

/* The rules every schema grammar may use (the JSON value grammar of RFC 8259, with
 * whitespace bounded so a sampled text cannot drift into endless blanks). */
static const char k_base[] =
    "ws ::= | \" \" | \"\\n\" [ ]{0,8}\n"
    "json-char ::= [^\"\\\\\\x00-\\x1f] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" ( [0-9a-cA-Ce-fE-F] "
    "[0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} ) )\n"
    "json-string ::= \"\\\"\" json-char* \"\\\"\"\n"
    "json-integer ::= \"-\"? ( \"0\" | [1-9] [0-9]{0,15} )\n"
    "json-number ::= json-integer ( \".\" [0-9]{1,15} )? ( [eE] [-+]? [0-9]{1,3} )?\n"
    "json-boolean ::= \"true\" | \"false\"\n"
    "json-null ::= \"null\"\n"
    "json-value ::= json-object | json-array | json-string | json-number | json-boolean | "
    "json-null\n"
    "json-object ::= \"{\" ws ( json-string ws \":\" ws json-value ws ( \",\" ws json-string "
    "ws \":\" ws json-value ws )* )? \"}\"\n"
    "json-array ::= \"[\" ws ( json-value ws ( \",\" ws json-value ws )* )? \"]\"\n";

const char *facet_grammar_json_object_gbnf(void) {
    static char text[sizeof k_base + 32];
    if (!text[0]) {
        memcpy(text, "root ::= json-object\n", 21);
        memcpy(text + 21, k_base, sizeof k_base);
    }
    return text;
}

typedef struct ref_memo {
    char *ref;
    int rule;
} ref_memo;

typedef struct sc {
    facet_str out;       /* the rules written so far                            */
    json_t *root;
    int n_rules;
    FACET_VEC(ref_memo) refs;
    facet_error *err;
    facet_status st;
} sc;

static int fail(sc *c, facet_status st, const char *path, const char *what, const char *detail) {
    if (c->st == FACET_OK)
        c->st = facet_err(c->err, st, "json_schema: %s at %s %s", what, path[0] ? path : "/",
                          detail);
    return -1;
}

/* Append v as a GBNF literal of its compact JSON text. */
static int put_literal(sc *c, facet_str *b, const json_t *v) {
    char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!t) return fail(c, FACET_E_NOMEM, "", "out of memory", "");
    facet_str_putc(b, '"');
    for (const char *p = t; *p; p++) {
        if (*p == '"' || *p == '\\') facet_str_putc(b, '\\');
        facet_str_putc(b, *p);
    }
    facet_str_putc(b, '"');
    free(t);
    return 0;
}

static int gen(sc *c, json_t *s, const char *path, int depth);

/* path + "/" + key, in a fresh buffer (NULL out of memory). */
static char *sub(const char *path, const char *key) {
    size_t n = strlen(path) + strlen(key) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", path, key);
    return p;
}

static int gen_sub(sc *c, json_t *s, const char *path, const char *key, int depth) {
    char *p = sub(path, key);
    if (!p) return fail(c, FACET_E_NOMEM, "", "out of memory", "");
    int r = gen(c, s, p, depth + 1);
    free(p);
    return r;
}

static int new_rule(sc *c) { return ++c->n_rules; }

/* Write "rN ::= body\n". */
static int define(sc *c, int r, facet_str *b) {
    if (b->failed) {
        facet_str_free(b);
        return fail(c, FACET_E_NOMEM, "", "out of memory", "");
    }
    facet_str_appendf(&c->out, "r%d ::= %s\n", r, facet_str_cstr(b));
    facet_str_free(b);
    return r;
}

static int bound(sc *c, json_t *s, const char *key, const char *path, long dflt, long *out) {
    json_t *v = json_object_get(s, key);
    *out = dflt;
    if (!v) return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > MAX_BOUND)
        return fail(c, FACET_E_FORMAT, path, key, "is not an integer in [0, 1000]");
    *out = (long)json_integer_value(v);
    return 0;
}

static int gen_object(sc *c, json_t *s, const char *path, int depth) {
    json_t *props = json_object_get(s, "properties");
    json_t *req = json_object_get(s, "required");
    json_t *addl = json_object_get(s, "additionalProperties");
    if (props && !json_is_object(props))
        return fail(c, FACET_E_FORMAT, path, "properties", "is not an object");
    if (req && !json_is_array(req)) return fail(c, FACET_E_FORMAT, path, "required", "is not an array");
    facet_str b = {0};
    if (!props || json_object_size(props) == 0) {
        if (addl && json_is_object(addl)) { /* a map: string keys, values of one schema */
            int v = gen_sub(c, addl, path, "additionalProperties", depth);
            if (v < 0) return -1;
            facet_str_appendf(&b, "\"{\" ws ( json-string ws \":\" ws r%d ws ( \",\" ws json-string "
                              "ws \":\" ws r%d ws )* )? \"}\"", v, v);
        } else if (addl && json_is_false(addl)) {
            facet_str_appendf(&b, "\"{\" ws \"}\"");
        } else {
            facet_str_appendf(&b, "json-object");
        }
        return define(c, new_rule(c), &b);
    }
    size_t n = json_object_size(props), i = 0;
    int *kv = calloc(n, sizeof *kv), *opt = calloc(n, sizeof *opt);
    if (!kv || !opt) {
        free(kv);
        free(opt);
        return fail(c, FACET_E_NOMEM, "", "out of memory", "");
    }
    const char *key;
    json_t *ps;
    char *ppath = sub(path, "properties");
    int rc = ppath ? 0 : fail(c, FACET_E_NOMEM, "", "out of memory", "");
    json_object_foreach(props, key, ps) {
        if (rc) break;
        int v = gen_sub(c, ps, ppath, key, depth);
        if (v < 0) {
            rc = -1;
            break;
        }
        facet_str k = {0};
        json_t *ks = json_string(key);
        rc = ks ? put_literal(c, &k, ks) : fail(c, FACET_E_NOMEM, "", "out of memory", "");
        json_decref(ks);
        facet_str_appendf(&k, " ws \":\" ws r%d ws", v);
        kv[i] = define(c, new_rule(c), &k);
        opt[i] = 1;
        size_t j;
        json_t *rv;
        json_array_foreach(req, j, rv) if (json_is_string(rv) && strcmp(json_string_value(rv), key) == 0) opt[i] = 0;
        i++;
    }
    free(ppath);
    /* required names must be properties (a required name we never write fails) */
    size_t j;
    json_t *rv;
    json_array_foreach(req, j, rv) {
        if (rc) break;
        if (!json_is_string(rv) || !json_object_get(props, json_string_value(rv)))
            rc = fail(c, FACET_E_UNSUPPORTED, path, "required",
                      "names a property not in 'properties'");
    }
    if (!rc) {
        /* head_i / tail_i for i = n .. 0; head_n = tail_n = nothing */
        int head = 0, tail = 0;
        for (size_t k = n; k-- > 0;) {
            facet_str h = {0}, t = {0};
            facet_str_appendf(&t, "\",\" ws r%d", kv[k]);
            if (tail) facet_str_appendf(&t, " r%d", tail);
            facet_str_appendf(&h, "r%d", kv[k]);
            if (tail) facet_str_appendf(&h, " r%d", tail);
            if (opt[k]) {
                facet_str_appendf(&t, " | %s", tail ? "" : "");
                if (tail) facet_str_appendf(&t, "r%d", tail);
                facet_str_appendf(&h, " | ");
                if (head) facet_str_appendf(&h, "r%d", head);
            }
            int nt = define(c, new_rule(c), &t);
            head = define(c, new_rule(c), &h);
            tail = nt;
        }
        facet_str_appendf(&b, "\"{\" ws r%d \"}\"", head);
    }
    free(kv);
    free(opt);
    if (rc) {
        facet_str_free(&b);
        return -1;
    }
    return define(c, new_rule(c), &b);
}

static int gen_type(sc *c, json_t *s, const char *type, const char *path, int depth) {
    facet_str b = {0};
    if (strcmp(type, "object") == 0) return gen_object(c, s, path, depth);
    if (strcmp(type, "array") == 0) {
        json_t *items = json_object_get(s, "items");
        long lo, hi;
        if (bound(c, s, "minItems", path, 0, &lo) || bound(c, s, "maxItems", path, -1, &hi)) return -1;
        if (hi >= 0 && hi < lo) return fail(c, FACET_E_FORMAT, path, "maxItems", "is below minItems");
        int it = 0;
        if (items) {
            if ((it = gen_sub(c, items, path, "items", depth)) < 0) return -1;
        }
        char item[32];
        snprintf(item, sizeof item, it ? "r%d" : "json-value", it);
        if (hi == 0) facet_str_appendf(&b, "\"[\" ws \"]\"");
        else {
            /* first item, then the rest as ("," item){lo-1, hi-1} */
            long rlo = lo > 0 ? lo - 1 : 0;
            facet_str_appendf(&b, "\"[\" ws %s%s ws ( \",\" ws %s ws ){%ld,", lo == 0 ? "( " : "", item,
                              item, rlo);
            if (hi > 0) facet_str_appendf(&b, "%ld", hi - 1);
            facet_str_appendf(&b, "}%s \"]\"", lo == 0 ? " )?" : "");
        }
        return define(c, new_rule(c), &b);
    }
    if (strcmp(type, "string") == 0) {
        long lo, hi;
        if (bound(c, s, "minLength", path, 0, &lo) || bound(c, s, "maxLength", path, -1, &hi)) return -1;
        if (hi >= 0 && hi < lo) return fail(c, FACET_E_FORMAT, path, "maxLength", "is below minLength");
        if (lo == 0 && hi < 0) return define(c, new_rule(c), (facet_str_appendf(&b, "json-string"), &b));
        facet_str_appendf(&b, "\"\\\"\" json-char{%ld,", lo);
        if (hi >= 0) facet_str_appendf(&b, "%ld", hi);
        facet_str_appendf(&b, "} \"\\\"\"");
        return define(c, new_rule(c), &b);
    }
    const char *base = strcmp(type, "integer") == 0   ? "json-integer"
                       : strcmp(type, "number") == 0  ? "json-number"
                       : strcmp(type, "boolean") == 0 ? "json-boolean"
                       : strcmp(type, "null") == 0    ? "json-null"
                                                      : NULL;
    if (!base) return fail(c, FACET_E_UNSUPPORTED, path, "type", "names an unknown type");
    facet_str_appendz(&b, base);
    return define(c, new_rule(c), &b);
}

static const char *const k_known[] = {
    "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems",
    "minLength", "maxLength", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "$defs",
    "definitions", "title", "description", "default", "examples", "$schema", "$id",
    "$comment", "strict", "name", NULL};

static int gen_ref(sc *c, const char *ref, const char *path, int depth) {
    for (size_t i = 0; i < c->refs.len; i++)
        if (strcmp(c->refs.data[i].ref, ref) == 0) return c->refs.data[i].rule;
    json_t *target = NULL;
    if (strcmp(ref, "#") == 0) target = c->root;
    else if (strncmp(ref, "#/$defs/", 8) == 0) target = json_object_get(json_object_get(c->root, "$defs"), ref + 8);
    else if (strncmp(ref, "#/definitions/", 14) == 0)
        target = json_object_get(json_object_get(c->root, "definitions"), ref + 14);
    if (!target) return fail(c, FACET_E_FORMAT, path, "$ref", "does not resolve (expected #, #/$defs/NAME or #/definitions/NAME)");
    /* the rule's number is taken first, so a recursive reference finds it */
    ref_memo m = {strdup(ref), new_rule(c)};
    if (!m.ref || facet_vec_push(&c->refs, m)) {
        free(m.ref);
        return fail(c, FACET_E_NOMEM, "", "out of memory", "");
    }
    int r = gen(c, target, ref + 1, depth);
    if (r < 0) return -1;
    facet_str_appendf(&c->out, "r%d ::= r%d\n", m.rule, r);
    return m.rule;
}

static int gen(sc *c, json_t *s, const char *path, int depth) {
    if (c->st != FACET_OK) return -1;
    if (depth > MAX_DEPTH) return fail(c, FACET_E_LIMIT, path, "schema", "is nested over 64 deep");
    facet_str b = {0};
    if (json_is_true(s)) return define(c, new_rule(c), (facet_str_appendz(&b, "json-value"), &b));
    if (!json_is_object(s)) return fail(c, FACET_E_FORMAT, path, "schema", "is not an object or true");
    const char *key;
    json_t *v;
    json_object_foreach(s, key, v) {
        int ok = 0;
        for (int i = 0; k_known[i] && !ok; i++) ok = strcmp(k_known[i], key) == 0;
        if (!ok) {
            char what[96];
            snprintf(what, sizeof what, "keyword '%.60s'", key);
            return fail(c, FACET_E_UNSUPPORTED, path, what, "is not supported");
        }
    }
    if ((v = json_object_get(s, "$ref"))) {
        if (!json_is_string(v)) return fail(c, FACET_E_FORMAT, path, "$ref", "is not a string");
        return gen_ref(c, json_string_value(v), path, depth + 1);
    }
    if ((v = json_object_get(s, "const"))) {
        if (put_literal(c, &b, v)) return -1;
        return define(c, new_rule(c), &b);
    }
    if ((v = json_object_get(s, "enum"))) {
        if (!json_is_array(v) || json_array_size(v) == 0)
            return fail(c, FACET_E_FORMAT, path, "enum", "is not a non-empty array");
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            if (i) facet_str_appendz(&b, " | ");
            if (put_literal(c, &b, e)) return -1;
        }
        return define(c, new_rule(c), &b);
    }
    const char *alts[] = {"anyOf", "oneOf", "allOf"};
    for (int a = 0; a < 3; a++) {
        if (!(v = json_object_get(s, alts[a]))) continue;
        if (!json_is_array(v) || json_array_size(v) == 0)
            return fail(c, FACET_E_FORMAT, path, alts[a], "is not a non-empty array");
        if (a == 2 && json_array_size(v) != 1)
            return fail(c, FACET_E_UNSUPPORTED, path, "allOf", "with more than one schema is not supported");
        char *ap = sub(path, alts[a]);
        if (!ap) return fail(c, FACET_E_NOMEM, "", "out of memory", "");
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            char idx[24];
            snprintf(idx, sizeof idx, "%zu", i);
            int r = gen_sub(c, e, ap, idx, depth);
            if (r < 0) {
                free(ap);
                facet_str_free(&b);
                return -1;
            }
            facet_str_appendf(&b, "%sr%d", i ? " | " : "", r);
        }
        free(ap);
        return define(c, new_rule(c), &b);
    }
    json_t *t = json_object_get(s, "type");
    if (json_is_string(t)) return gen_type(c, s, json_string_value(t), path, depth);
    if (json_is_array(t) && json_array_size(t) > 0) {
        size_t i;
        json_t *e;
        json_array_foreach(t, i, e) {
            if (!json_is_string(e)) return fail(c, FACET_E_FORMAT, path, "type", "lists a non-string");
            int r = gen_type(c, s, json_string_value(e), path, depth);
            if (r < 0) {
                facet_str_free(&b);
                return -1;
            }
            facet_str_appendf(&b, "%sr%d", i ? " | " : "", r);
        }
        return define(c, new_rule(c), &b);
    }
    if (t) return fail(c, FACET_E_FORMAT, path, "type", "is not a string or a list of strings");
    if (json_object_get(s, "properties")) return gen_object(c, s, path, depth);
    if (json_object_get(s, "items")) return gen_type(c, s, "array", path, depth);
    return define(c, new_rule(c), (facet_str_appendz(&b, "json-value"), &b));
}

/* Compile into c (rules r1.. and the start rule r<returned>), or -1 with c->st set. */
static int compile(sc *c, const char *schema, size_t len) {
    c->st = facet_json_parse(schema, len, "json_schema", &c->root, c->err);
    if (c->st != FACET_OK) return -1;
    int r = gen(c, c->root, "", 0);
    if (c->st == FACET_OK && c->out.failed)
        c->st = facet_err(c->err, FACET_E_NOMEM, "json_schema: out of memory");
    for (size_t i = 0; i < c->refs.len; i++) free(c->refs.data[i].ref);
    facet_vec_free(&c->refs);
    json_decref(c->root);
    return c->st == FACET_OK ? r : -1;
}

facet_status facet_json_schema_to_gbnf(const char *schema, size_t len, char **gbnf,
                                       facet_error *err) {
    *gbnf = NULL;
    sc c = {.err = err};
    int r = compile(&c, schema, len);
    if (r >= 0) facet_str_appendf(&c.out, "root ::= r%d\n%s", r, k_base);
    if (r < 0 || c.out.failed) {
        facet_str_free(&c.out);
        return r < 0 ? c.st : facet_err(err, FACET_E_NOMEM, "json_schema: out of memory");
    }
    *gbnf = facet_str_take(&c.out);
    return *gbnf ? FACET_OK : facet_err(err, FACET_E_NOMEM, "json_schema: out of memory");
}

const char *facet_grammar_json_base_gbnf(void) { return k_base; }

/* Append GBNF text t to out with every generated rule name rN (outside literals and
 * classes) renamed NAME-rN. */
static void rename_rules(facet_str *out, const char *t, const char *name) {
    for (const char *p = t; *p;) {
        if (*p == '"' || *p == '[') {
            char close = *p == '"' ? '"' : ']';
            const char *q = p + 1;
            while (*q && *q != close) q += (*q == '\\' && q[1]) ? 2 : 1;
            if (*q) q++;
            facet_str_append(out, p, (size_t)(q - p));
            p = q;
        } else if (*p == 'r' && (p == t || !(p[-1] == '-' || p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') ||
                                            (p[-1] >= 'A' && p[-1] <= 'Z') || (p[-1] >= '0' && p[-1] <= '9'))) &&
                   p[1] >= '0' && p[1] <= '9') {
            facet_str_appendf(out, "%s-", name);
            facet_str_putc(out, *p++);
        } else {
            facet_str_putc(out, *p++);
        }
    }
}

facet_status facet_json_schema_gbnf_rule(const char *schema, size_t len, const char *name,
                                         facet_str *out, facet_error *err) {
    sc c = {.err = err};
    int r = compile(&c, schema, len);
    if (r >= 0) {
        facet_str_appendf(out, "%s ::= %s-r%d\n", name, name, r);
        rename_rules(out, facet_str_cstr(&c.out), name);
    }
    facet_str_free(&c.out);
    if (r < 0) return c.st;
    return out->failed ? facet_err(err, FACET_E_NOMEM, "json_schema: out of memory") : FACET_OK;
}
