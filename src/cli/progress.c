/* progress.c — the load progress bar on stderr (progress.h). */
#include "cli/progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BAR 24

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void cli_progress_init(cli_progress *p) {
    memset(p, 0, sizeof *p);
    p->tty = isatty(STDERR_FILENO);
    const char *e = getenv("FACET_PROGRESS_AFTER_S");
    char *end;
    double v = e ? strtod(e, &end) : 1.0;
    p->after = (e && end != e && v >= 0) ? v : 1.0;
}

void cli_progress_cb(void *user, const char *step, uint64_t done, uint64_t total) {
    cli_progress *p = user;
    double t = now_s();
    if (!p->step || strcmp(p->step, step) || done == 0) {
        if (p->drawn && p->tty) fputc('\n', stderr);
        p->step = step;
        p->t0 = t;
        p->last = 0;
        p->drawn = 0;
        p->ended = 0;
    }
    if (p->ended) return;
    double el = t - p->t0;
    int end = done >= total;
    if (el < p->after && !p->drawn) return; /* short steps print nothing */
    if (!end && t - p->last < (p->tty ? 0.1 : 1.0)) return;
    p->last = t;
    double frac = total ? (double)done / (double)total : 1.0;
    if (frac > 1) frac = 1;
    char bar[BAR + 1];
    int fill = (int)(frac * BAR + 0.5);
    for (int i = 0; i < BAR; i++) bar[i] = i < fill ? '#' : '-';
    bar[BAR] = 0;
    char eta[32] = "";
    if (!end && frac > 0) snprintf(eta, sizeof eta, "  ETA %.0f s", el * (1 - frac) / frac);
    fprintf(stderr, "%sfacet: %s [%s] %7.1f/%.1f MB  %.1f s%s%s", p->tty ? "\r" : "", step, bar,
            (double)done / 1e6, (double)total / 1e6, el, eta, p->tty ? "\033[K" : "");
    if (end || !p->tty) fputc('\n', stderr);
    fflush(stderr);
    p->drawn = !end;
    p->ended = end;
}
