/*
 * error.h — filling facet_error values inside the library.
 */
#ifndef FACET_UTIL_ERROR_H
#define FACET_UTIL_ERROR_H

#include "facet_status.h"

/* Set *err (when not NULL) to `status` with a printf-formatted one-line message, and
 * return `status`, so callers can write `return facet_err(err, FACET_E_IO, ...)`.
 * Newlines in the formatted text are replaced by spaces to keep the message one line. */
facet_status facet_err(facet_error *err, facet_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Clear *err to FACET_OK with an empty message (NULL is accepted). */
void facet_err_clear(facet_error *err);

#endif
