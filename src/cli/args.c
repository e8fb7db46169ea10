/* args.c — number arguments of the subcommands, each checked fully. */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "io/gguf.h"
#include "facet_sampler.h"
#include "util/str.h"
#include "util/error.h"
#include "util/fs.h"

int cli_parse_int(const char *opt, const char *v, long lo, long hi, int *out) {
    char *end;
    errno = 0;
    if (!v) return 0; /* the caller says the value is missing */
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "facet: %s expects an integer in [%ld, %ld], got '%s'\n", opt, lo, hi, v);
        return 0;
    }
    *out = (int)x;
    return 1;
}

int cli_parse_kv_type(const char *opt, const char *v, facet_kv_type *out) {
    static const facet_kv_type types[] = {FACET_KV_AUTO, FACET_KV_F32, FACET_KV_BF16, FACET_KV_F16};
    for (size_t i = 0; v && i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(v, facet_kv_type_name(types[i]))) {
            *out = types[i];
            return 1;
        }
    if (v) fprintf(stderr, "facet: %s expects auto, f32, bf16 or f16, got '%s'\n", opt, v);
    return 0; /* v NULL: the caller says the value is missing */
}

int cli_missing_value(const char *cmd, const char *a, int last, const char *const *opts) {
    if (!last) return 0;
    for (; *opts; opts++)
        if (!strcmp(a, *opts)) {
            fprintf(stderr, "facet: %s: %s needs a value\n", cmd, a);
            return 1;
        }
    return 0;
}

int cli_parse_weights(const char *opt, const char *v, facet_weight_format *out) {
    for (int f = FACET_WEIGHTS_AUTO; v && f <= FACET_WEIGHTS_GGUF; f++)
        if (!strcmp(v, facet_weight_format_name((facet_weight_format)f))) {
            *out = (facet_weight_format)f;
            return 1;
        }
    if (v) fprintf(stderr, "facet: %s expects auto, f32, bf16, f16, int8, q4 or gguf, got '%s'\n", opt, v);
    return 0; /* v NULL: the caller says the value is missing */
}

int cli_parse_float(const char *opt, const char *v, float *out) {
    char *end;
    errno = 0;
    if (!v) return 0; /* the caller says the value is missing */
    double x = strtod(v, &end);
    if (end == v || *end || (errno == ERANGE && fabs(x) > 1)) {
        fprintf(stderr, "facet: %s expects a number, got '%s'\n", opt, v);
        return 0;
    }
    if (errno == ERANGE && x == 0) { /* below double's range: a tiny nonzero value */
        const char *p = v;
        while (isspace((unsigned char)*p)) p++;
        x = *p == '-' ? -DBL_TRUE_MIN : DBL_TRUE_MIN;
    }
    /* the server's conversion too (facet_sampler_param_from_double): one accepted range */
    if (!facet_sampler_param_from_double(x, out)) {
        fprintf(stderr, "facet: %s=%s is out of range (expected a finite number of magnitude "
                        "at most 1e30)\n", opt, v);
        return 0;
    }
    return 1;
}

/* The option that read standard input, so that a second "-" is refused instead of
 * reading an empty stream. */
static const char *g_stdin_reader;

facet_status cli_read_input(const char *opt, const char *path, size_t max_bytes, char **data,
                            size_t *len, facet_error *err) {
    *data = NULL;
    *len = 0;
    if (strcmp(path, "-")) return facet_read_file(path, max_bytes, data, len, err);
    if (g_stdin_reader)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "%s -: standard input is already read by %s -; at most one option "
                         "can read it", opt, g_stdin_reader);
    g_stdin_reader = opt;
    facet_str in = {.limit = max_bytes};
    char chunk[1 << 16];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, stdin)) > 0 && !in.failed)
        facet_str_append(&in, chunk, got);
    if (ferror(stdin)) {
        facet_str_free(&in);
        return facet_err(err, FACET_E_IO, "%s -: cannot read standard input: %s", opt,
                         strerror(errno));
    }
    if (in.failed == FACET_STR_OVER) {
        facet_str_free(&in);
        return facet_err(err, FACET_E_LIMIT, "%s -: standard input is larger than %zu bytes",
                         opt, max_bytes);
    }
    *len = in.len;
    *data = facet_str_take(&in);
    if (!*data)
        return facet_err(err, FACET_E_NOMEM, "%s -: out of memory reading standard input", opt);
    return FACET_OK;
}

int cli_env_mem_available(uint64_t *out) {
    const char *v = getenv("FACET_MEM_AVAILABLE");
    if (!v) return 1;
    char *end;
    errno = 0;
    unsigned long long x = v[0] >= '0' && v[0] <= '9' ? strtoull(v, &end, 10) : 0;
    if (x == 0 || errno || *end || x > CLI_MAX_MEM_BYTES) {
        fprintf(stderr, "facet: FACET_MEM_AVAILABLE expects a byte count in [1, %llu], got '%s'\n",
                (unsigned long long)CLI_MAX_MEM_BYTES, v);
        return 0;
    }
    *out = (uint64_t)x;
    return 1;
}

int cli_model_folder(const char **path, char *buf, size_t cap) {
    const char *p = *path;
    if (!p || facet_is_dir(p) || !facet_is_file(p)) return 1; /* folders; missing: the loader says */
    if (gguf_path_is_gguf(p)) return 1; /* a .gguf file is a model */
    const char *slash = strrchr(p, '/');
    const char *base = slash ? slash + 1 : p;
    if (strcmp(base, "config.json")) {
        fprintf(stderr, "facet: %s is a file; MODEL is the checkpoint folder (the one holding "
                        "config.json)\n", p);
        return 0;
    }
    size_t n = slash ? (size_t)(slash - p) : 0;
    if (n + 2 > cap) {
        fprintf(stderr, "facet: %s: path too long\n", p);
        return 0;
    }
    if (slash && n == 0) n = 1; /* "/config.json": the root */
    memcpy(buf, slash ? p : ".", slash ? n : 1);
    buf[slash ? n : 1] = 0;
    *path = buf;
    return 1;
}

int cli_text_folder(const char **path, char *buf, size_t cap) {
    /* a GGUF file passes as it is: its metadata holds the tokenizer and chat template */
    return cli_model_folder(path, buf, cap);
}

int cli_chat_fail(const facet_error *err, const facet_chat_template *tpl, const char *messages_path,
                  const char *tools_path) {
    const char *m = err->message;
    const char *path = !strncmp(m, "messages:", 9)     ? messages_path
                       : !strncmp(m, "tools:", 6)      ? tools_path
                       : !strncmp(m, "template line", 13) ? facet_chat_template_origin(tpl)
                                                       : NULL;
    return cli_fail_at(path, err);
}

int cli_check_device(const char *cmd, const char *backend, int device) {
    if (!device || (backend && strcmp(backend, "cpu"))) return 1;
    fprintf(stderr, "facet: %s: --device %d selects a Vulkan device; add --backend vulkan (the "
                    "cpu backend has no devices)\n", cmd, device - 1);
    return 0;
}
