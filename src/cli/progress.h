/*
 * progress.h — a progress bar on stderr for long load steps (facet_load_progress_fn).
 */
#ifndef FACET_CLI_PROGRESS_H
#define FACET_CLI_PROGRESS_H

#include <stdint.h>

/* State of one bar; zero-initialise it (or call cli_progress_init). */
typedef struct cli_progress {
    const char *step;  /* the step being shown                                        */
    double t0;         /* when the step started (seconds, monotonic)                  */
    double last;       /* when the bar was last drawn                                 */
    int drawn;         /* something of this step is on stderr                         */
    int ended;         /* the step's last line is printed                             */
    int tty;           /* stderr is a terminal: redraw one line in place              */
    double after;      /* seconds a step runs before it is shown (default 1)          */
} cli_progress;

void cli_progress_init(cli_progress *p);

/*
 * facet_load_progress_fn for facet_load_options.progress (user = a cli_progress). Steps
 * that end within a second print nothing (FACET_PROGRESS_AFTER_S=SECONDS in the
 * environment changes that second; the tests set 0). Longer ones draw, on a terminal, one line
 * redrawn in place at most 10 times a second,
 *   facet: converting weights [########------------]  412.3/1192.1 MB  3.1 s  ETA 5 s
 * and, when stderr is not a terminal, the same line at most once a second; the step's
 * last line (done == total) ends with a newline.
 */
void cli_progress_cb(void *user, const char *step, uint64_t done, uint64_t total);

#endif
