/* args.c — number arguments of the subcommands, each checked fully. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"

int cli_parse_int(const char *opt, const char *v, long lo, long hi, int *out) {
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "facet: %s expects an integer in [%ld, %ld], got '%s'\n", opt, lo, hi,
                v ? v : "(nothing)");
        return 0;
    }
    *out = (int)x;
    return 1;
}

int cli_parse_float(const char *opt, const char *v, float *out) {
    char *end;
    errno = 0;
    float x = v ? strtof(v, &end) : 0;
    if (!v || errno || end == v || *end) {
        fprintf(stderr, "facet: %s expects a number, got '%s'\n", opt, v ? v : "(nothing)");
        return 0;
    }
    *out = x;
    return 1;
}
