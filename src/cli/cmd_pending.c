/*
 * cmd_pending.c — subcommands whose implementation has not landed in this build.
 * Each is a weak symbol: the subcommand's own file (cmd_NAME.c) overrides it. Until
 * then the command says plainly that it is not built and exits 1.
 */
#include <stdio.h>

#include "cli/cli.h"

#define PENDING(fn, name)                                                              \
    __attribute__((weak)) int fn(int argc, char **argv) {                              \
        (void)argc;                                                                    \
        (void)argv;                                                                    \
        fprintf(stderr, "facet: '%s' is not built into this version of facet\n", name); \
        return 1;                                                                      \
    }

PENDING(cmd_run, "run")
PENDING(cmd_tokenize, "tokenize")
PENDING(cmd_detokenize, "detokenize")
PENDING(cmd_template, "template")
PENDING(cmd_conform, "conform")
PENDING(cmd_onboard, "onboard")
PENDING(cmd_plan, "plan")
PENDING(cmd_bench, "bench")
PENDING(cmd_serve, "serve")
