/*
 * facet_status.h — the one status vocabulary of the facet library, shared by every
 * subsystem (model loading, tokenizer, chat templates, server). Included by facet.h.
 */
#ifndef FACET_STATUS_H
#define FACET_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------
 * Status codes. Stable numeric values: once released a value keeps its meaning;
 * removed values stay reserved as comments.
 * ------------------------------------------------------------------------------ */
typedef enum facet_status {
    FACET_OK = 0,
    FACET_E_INVALID_ARGUMENT = 1, /* a caller-supplied value is out of its domain      */
    FACET_E_IO = 2,               /* a file is missing, unreadable or cannot be mapped  */
    FACET_E_PARSE = 3,            /* malformed JSON or text (names file, line, column)  */
    FACET_E_FORMAT = 4,           /* well-formed input that breaks its format's rules
                                     (a safetensors header, a config value's type)      */
    FACET_E_UNSUPPORTED = 5,      /* refused: outside the capability table, or a dtype
                                     or construct facet does not implement              */
    FACET_E_NOMEM = 6,            /* an allocation failed                               */
    FACET_E_CONTEXT = 7,          /* a sequence would exceed its context length         */
    FACET_E_UTF8 = 8,             /* invalid UTF-8 (names the byte offset)              */
    FACET_E_TEMPLATE = 9,         /* a chat template failed or called raise_exception   */
    FACET_E_LIMIT = 10,           /* a resource bound was hit (depth, size, iterations) */
    FACET_E_NOT_FOUND = 11,       /* a required tensor, key or file entry is absent     */
    FACET_E_INTERNAL = 12,        /* a broken internal invariant (a bug in facet)       */
    FACET_E_NUMERIC = 13,         /* a computation gave NaN or infinity (an overflowed
                                     forward pass: non-finite logits)                  */
} facet_status;

/* Error detail filled by fallible calls. `message` is a NUL-terminated single line. */
typedef struct facet_error {
    facet_status status;
    char message[1024];
} facet_error;

/* Name of a status code ("FACET_OK", "FACET_E_IO", ...). Any int is accepted; codes
 * this build does not know map to "FACET_E_UNKNOWN". The string is static. */
const char *facet_status_name(int code);

#ifdef __cplusplus
}
#endif

#endif /* FACET_STATUS_H */
