/* main.c — subcommand dispatch for the facet CLI. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/fs.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} commands[] = {
    {"run", cmd_run, "generate text from a checkpoint (the bundled model by default)"},
    {"tokenize", cmd_tokenize, "text -> JSON array of token ids"},
    {"detokenize", cmd_detokenize, "token ids -> text"},
    {"template", cmd_template, "render a chat template"},
    {"chat", cmd_chat, "interactive chat in the terminal (the chat template)"},
    {"conform", cmd_conform, "judge a checkpoint against the capability table"},
    {"onboard", cmd_onboard, "support-matrix row for a checkpoint"},
    {"plan", cmd_plan, "memory and kernel plan for a checkpoint"},
    {"bench", cmd_bench, "benchmark prefill and decode"},
    {"serve", cmd_serve, "OpenAI-compatible HTTP server"},
};

static void usage(FILE *out) {
    fprintf(out, "usage: facet COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nfacet COMMAND --help shows a command's options.\n");
}

int cli_fail_at(const char *where, const facet_error *err) {
    const char *msg = err->message[0] ? err->message : facet_status_name(err->status);
    if (where) fprintf(stderr, "facet: %s: %s\n", where, msg);
    else fprintf(stderr, "facet: %s\n", msg);
    return err->status == FACET_E_UNSUPPORTED ? 2 : 1;
}

int cli_fail(const facet_error *err) { return cli_fail_at(NULL, err); }

const char *cli_bundled_model(void) {
    static char path[4096];
    if (facet_is_dir(FACET_BUNDLED_MODEL)) return FACET_BUNDLED_MODEL;
    /* an installed or moved binary: look beside it */
    char exe[2048];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        snprintf(path, sizeof path, "%s/../models/stories260k", exe);
        if (facet_is_dir(path)) return path;
    }
    return FACET_BUNDLED_MODEL;
}

int main(int argc, char **argv) {
    const char *cpu_note = facet_cpu_note();
    if (cpu_note) fprintf(stderr, "facet: %s\n", cpu_note);
    /* the parallel job's knobs (README, "Micro-batches"): a value they do not take is
     * named, never silently read as another (atoi read "abc" as 0 and "-3" as 1) */
    const char *mb = getenv("FACET_MICRO_BATCHES");
    if (mb && *mb) {
        char *end;
        long n = strtol(mb, &end, 10);
        if (*end || n < 0 || n > 1048576)
            fprintf(stderr, "facet: FACET_MICRO_BATCHES='%.60s' is not an integer in [0, "
                            "1048576]: ignored (micro-batches chosen by the rows)\n", mb);
    }
    const char *wait = getenv("FACET_MPI_WAIT");
    if (wait && *wait && strcmp(wait, "spin"))
        fprintf(stderr, "facet: FACET_MPI_WAIT='%.60s' is not 'spin': ignored (yield, then "
                        "sleep)\n", wait);
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 1 : 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) {
            int rc = commands[i].fn(argc - 2, argv + 2);
            /* output that did not reach stdout (a full disk, a closed file) is a failure,
             * not exit 0 with the file cut short: stdio reports it only here (a command
             * that failed has said why already) */
            int flush_failed = rc == 0 && fflush(stdout) != 0, e = errno;
            if (rc == 0 && (flush_failed || ferror(stdout))) {
                fprintf(stderr, "facet: %s: writing standard output failed: %s\n",
                        commands[i].name, flush_failed ? strerror(e) : "an earlier write failed");
                rc = 1;
            }
            return rc;
        }
    fprintf(stderr, "facet: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 1;
}
