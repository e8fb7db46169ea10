/* error.c — status names and error filling. */
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *facet_status_name(int code) {
    switch (code) {
    case FACET_OK: return "FACET_OK";
    case FACET_E_INVALID_ARGUMENT: return "FACET_E_INVALID_ARGUMENT";
    case FACET_E_IO: return "FACET_E_IO";
    case FACET_E_PARSE: return "FACET_E_PARSE";
    case FACET_E_FORMAT: return "FACET_E_FORMAT";
    case FACET_E_UNSUPPORTED: return "FACET_E_UNSUPPORTED";
    case FACET_E_NOMEM: return "FACET_E_NOMEM";
    case FACET_E_CONTEXT: return "FACET_E_CONTEXT";
    case FACET_E_UTF8: return "FACET_E_UTF8";
    case FACET_E_TEMPLATE: return "FACET_E_TEMPLATE";
    case FACET_E_LIMIT: return "FACET_E_LIMIT";
    case FACET_E_NOT_FOUND: return "FACET_E_NOT_FOUND";
    case FACET_E_INTERNAL: return "FACET_E_INTERNAL";
    case FACET_E_NUMERIC: return "FACET_E_NUMERIC";
    default: return "FACET_E_UNKNOWN";
    }
}

facet_status facet_err(facet_error *err, facet_status status, const char *fmt, ...) {
    if (!err) return status;
    err->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    for (char *p = err->message; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    return status;
}

void facet_err_clear(facet_error *err) {
    if (!err) return;
    err->status = FACET_OK;
    err->message[0] = '\0';
}
