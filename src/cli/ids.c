/* ids.c — token id lists given on the command line or in a file (see cli.h). */
#include "cli/cli.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* An id list file larger than this is refused (16 bytes per id: ~4M ids). */
#define IDS_FILE_MAX ((size_t)64 << 20)

static const char *skip_space(const char *p, const char *end) {
    while (p < end && isspace((unsigned char)*p)) p++;
    return p;
}

/* "facet: OPT: " or "facet: OPT: SOURCE: " */
static void prefix(const char *opt, const char *source) {
    fprintf(stderr, "facet: %s: ", opt);
    if (source) fprintf(stderr, "%s: ", source);
}

int cli_parse_ids(cli_ids *out, const char *opt, const char *source, const char *text,
                  size_t len) {
    const char *p = text, *end = text + len;
    p = skip_space(p, end);
    int array = p < end && *p == '[';
    if (array) p = skip_space(p + 1, end);
    size_t first = out->len;
    while (p < end && !(array && *p == ']')) {
        /* one id: decimal digits only (no sign, no exponent) */
        const char *tok = p;
        while (p < end && !isspace((unsigned char)*p) && *p != ',' && *p != ']' && *p != '[') p++;
        int ok = p > tok && (size_t)(p - tok) <= 10;
        long long v = 0;
        for (const char *q = tok; ok && q < p; q++) {
            if (*q < '0' || *q > '9') ok = 0;
            else v = v * 10 + (*q - '0');
        }
        if (!ok || v > INT32_MAX) {
            int shown = p > tok ? (int)(p - tok > 40 ? 40 : p - tok) : 1;
            prefix(opt, source);
            fprintf(stderr, "bad token '%.*s%s' at index %zu: expected token ids 0 to 2147483647 "
                            "separated by commas or whitespace, or a JSON array of them\n",
                    shown, tok, p - tok > 40 ? "..." : "", out->len);
            return 1;
        }
        if (facet_vec_push(out, (int32_t)v)) {
            prefix(opt, source);
            fprintf(stderr, "out of memory after %zu ids\n", out->len - first);
            return 1;
        }
        /* a separator: whitespace, or one comma with whitespace around it */
        const char *sep = p;
        p = skip_space(p, end);
        if (p < end && *p == ',') {
            p = skip_space(p + 1, end);
            if (p == end || (array && *p == ']')) { /* an id is missing after the comma */
                prefix(opt, source);
                if (source) fprintf(stderr, "unexpected ',' after id %zu at the end\n",
                                    out->len - first);
                else fprintf(stderr, "unexpected ',' in '%.*s'\n", (int)len, text);
                return 1;
            }
        } else if (p < end && p == sep && !(array && *p == ']')) {
            prefix(opt, source);
            if (source) fprintf(stderr, "unexpected '%c' after id %zu\n", *p, out->len - first);
            else fprintf(stderr, "unexpected '%c' in '%.*s'\n", *p, (int)len, text);
            return 1;
        }
    }
    if (array) {
        if (p == end) {
            prefix(opt, source);
            fprintf(stderr, "the JSON array has no closing ']'\n");
            return 1;
        }
        p = skip_space(p + 1, end);
    }
    if (p != end) {
        prefix(opt, source);
        fprintf(stderr, "unexpected '%c' after the ids\n", *p);
        return 1;
    }
    return 0;
}

int cli_read_ids(cli_ids *out, const char *opt, const char *arg) {
    if (arg[0] != '@' && strcmp(arg, "-"))
        return cli_parse_ids(out, opt, NULL, arg, strlen(arg));
    char *data = NULL;
    size_t len = 0;
    const char *source = arg[0] == '@' ? arg + 1 : "standard input";
    if (arg[0] == '@' && !arg[1]) {
        fprintf(stderr, "facet: %s: '@' needs a file name (@FILE)\n", opt);
        return 1;
    }
    facet_error err = {0};
    if (cli_read_input(opt, arg[0] == '@' ? arg + 1 : "-", IDS_FILE_MAX, &data, &len, &err)) {
        /* a file's errors name the file; standard input's name the option already */
        if (arg[0] == '@') fprintf(stderr, "facet: %s: %s\n", opt, err.message);
        else fprintf(stderr, "facet: %s\n", err.message);
        return 1;
    }
    int rc = cli_parse_ids(out, opt, source, data, len);
    free(data);
    return rc;
}
