/*
 * device_judge.c — `--backend vulkan [--device N]` in conform and plan (cli.h
 * cli_judge_device): the device opened, named, its limits printed, and the checkpoint
 * judged against them (model/device_verdict.h), as the loader does before reading
 * weights.
 */
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "cli/cli.h"
#include "model/device_verdict.h"

int cli_judge_device(FILE *out, const char *cmd, int device, const facet_facts *f,
                     facet_weight_format w, facet_verdict *v, facet_device_limits *seen) {
    if (seen) memset(seen, 0, sizeof *seen);
    if (!facet_vulkan_built()) { /* the table's verdict already says backend=vulkan */
        fprintf(out, "device: none (this binary is built without the Vulkan backend)\n");
        return 0;
    }
    facet_device *d = NULL;
    facet_error err;
    if (facet_device_open("vulkan", device - 1, &d, &err) != FACET_OK) {
        if (device) { /* asked for by number: refused as facet run refuses it */
            fprintf(stderr, "facet: %s: %s\n", cmd, err.message);
            return 2;
        }
        fprintf(out, "device: none (%s)\n", err.message);
        return 0;
    }
    const facet_device_limits *l = facet_device_limits_of(d);
    char line[640], note[320];
    facet_device_limits_line(l, line, sizeof line);
    fprintf(out, "device: %s (of %d on this machine)\n", facet_device_describe(d), l->count);
    fprintf(out, "%s\n", line);
    facet_judge_device(f, &w, l, NULL, v, note, sizeof note);
    if (seen) *seen = *l;
    if (note[0]) fprintf(out, "note: %s\n", note);
    facet_device_free(d);
    return 0;
}
