/*
 * oai_request.h — OpenAI request bodies (POST /v1/completions, /v1/chat/completions)
 * parsed and validated into a plain struct, and OpenAI's error shape.
 *
 * Field names and meanings follow the OpenAI API reference ("Completions" and "Chat
 * Completions"); extensions: top_k, min_p, repetition_penalty (facet_sampler.h). A
 * field sent as JSON null counts as absent. Unknown fields are refused by name, as the
 * OpenAI API does ("Unrecognized request argument supplied: NAME").
 */
#ifndef FACET_SERVER_OAI_REQUEST_H
#define FACET_SERVER_OAI_REQUEST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "facet_sampler.h"

/* An OpenAI error: HTTP status, and the body's error.type / .param / .code / .message. */
typedef struct oai_error {
    int http_status;       /* 400, 404, 413, 500, 503, ...                              */
    const char *type;      /* "invalid_request_error", "server_error", ...              */
    char param[64];        /* the offending field ("" = null)                           */
    char code[64];         /* e.g. "context_length_exceeded" ("" = null)                */
    char message[1024];
} oai_error;

/* Fill *e and return -1. */
int oai_fail(oai_error *e, int http_status, const char *type, const char *param,
             const char *code, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* The server's one mapping from a library status to an HTTP answer: returns the HTTP
 * status and sets *type to the OpenAI error type. What fails on the server's side —
 * FACET_E_NOMEM, FACET_E_INTERNAL, FACET_E_NUMERIC (an overflowed forward pass),
 * FACET_E_IO — is 500 "server_error"; every other status comes from what the request
 * asked (a bad id, text, template input, a limit) and is 400 "invalid_request_error". */
int oai_http_status(facet_status st, const char **type);

/* oai_fail with the HTTP status and type of `st` (oai_http_status). Returns -1. */
int oai_fail_status(oai_error *e, facet_status st, const char *param, const char *code,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Serialize *e as {"error": {...}} (malloc'd, NUL-terminated). */
char *oai_error_json(const oai_error *e);

typedef enum oai_kind { OAI_COMPLETION = 0, OAI_CHAT = 1 } oai_kind;

/* tool_choice of a chat request. */
typedef enum oai_tool_choice {
    OAI_TOOL_AUTO = 0,     /* default when tools are given                              */
    OAI_TOOL_NONE = 1,     /* default without tools                                     */
    OAI_TOOL_REQUIRED = 2,
    OAI_TOOL_NAMED = 3,    /* {"type": "function", "function": {"name": ...}}           */
} oai_tool_choice;

/* What the server knows when it validates a request. */
typedef struct oai_limits {
    const char *model_id;  /* the one model served (`model` must equal it)              */
    int n_vocab;           /* bounds logit_bias ids and token-id prompts                */
    int max_n;             /* largest n                                                 */
    int max_stops;         /* most stop strings                                         */
    int max_top_logprobs;  /* largest top_logprobs / completions logprobs               */
} oai_limits;

/* A validated request. Pointers into `root` stay valid while the struct lives. */
typedef struct oai_request {
    oai_kind kind;
    json_t *root;              /* the parsed body (owned)                               */
    /* completions: exactly one of prompt_text / prompt_ids */
    const char *prompt_text;
    size_t prompt_len;
    int32_t *prompt_ids;       /* owned                                                 */
    size_t n_prompt_ids;
    /* chat */
    json_t *messages;          /* borrowed from root: a non-empty array of objects      */
    json_t *tools;             /* borrowed; NULL when absent                            */
    oai_tool_choice tool_choice;
    char tool_name[256];       /* for OAI_TOOL_NAMED                                    */
    json_t *template_kwargs;   /* borrowed; chat_template_kwargs (an object) or NULL:
                                  extra variables of the chat template                  */
    /* set when the prompt is built (chat_bridge.c): */
    int tools_active;          /* tools rendered and tool calls parsed from the output  */
    char tool_prefix[512];     /* text the assistant turn was opened with (tool_choice
                                  required / named), prepended before parsing           */
    int think_open;            /* the rendered prompt ends inside <think> (reasoning.h) */
    /* generation */
    int max_tokens;            /* -1 = not given                                        */
    int n;                     /* >= 1                                                  */
    int stream;
    int include_usage;         /* stream_options.include_usage                          */
    int logprobs;              /* completions: 0 off or N+1 (N top entries); chat: bool */
    int top_logprobs;          /* top entries per token (0..max_top_logprobs)           */
    int echo;                  /* completions: the prompt leads the text (and, with
                                  logprobs, its tokens lead the logprobs: the first
                                  token's log-prob null); max_tokens may then be 0      */
    int echo_drop;             /* set by the handler: max_tokens was 0 (oai_echo.h)     */
    int seed_given;
    facet_sampler_params sampling; /* logit_bias points at `bias`                       */
    facet_logit_bias *bias;    /* owned                                                 */
    char **stops;              /* owned strings                                         */
    int n_stops;
    struct facet_grammar *grammar; /* owned; NULL = unconstrained: response_format
                                  json_object / json_schema, or the `grammar` extension
                                  (GBNF), compiled (facet_grammar.h)                    */
} oai_request;

/* Parse a request body as JSON (duplicate keys rejected). Returns a new reference, or
 * NULL with *e set to a 400 invalid_request_error naming the line and column (a
 * \u0000 in a string is named as such). */
json_t *oai_parse_json(const char *body, size_t len, oai_error *e);

/* Parse and validate `len` bytes of `body`. Returns 0, or -1 with *e filled (status
 * 400 for every malformed or invalid body, 404 for an unknown model). On failure *r
 * holds nothing that needs freeing. */
int oai_request_parse(const char *body, size_t len, oai_kind kind, const oai_limits *lim,
                      oai_request *r, oai_error *e);

/* Release what *r owns. Safe on a zeroed struct. */
void oai_request_free(oai_request *r);

#endif
