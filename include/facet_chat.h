/*
 * facet_chat.h — chat templates and tool-call parsing.
 *
 * A chat model behaves as trained only when its prompt is byte-identical to what Hugging
 * Face transformers' `tokenizer.apply_chat_template(messages, tools=..., tokenize=False,
 * add_generation_prompt=..., **kwargs)` renders. facet renders the checkpoint's own
 * Jinja template natively with Jinja2 3.1's semantics as transformers configures it
 * (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, no
 * keep_trailing_newline; filter tojson = json.dumps(ensure_ascii=False); globals
 * raise_exception and strftime_now).
 *
 * Template variables, in the order transformers builds them (later ones win):
 *   messages, tools (None when absent), documents (None), add_generation_prompt,
 *   bos_token, eos_token, unk_token, sep_token, pad_token, cls_token, mask_token and
 *   additional_special_tokens from tokenizer_config.json (AddedToken objects reduced to
 *   their "content"; null ones left undefined), then the caller's variables.
 *
 * strftime_now(fmt) formats the current local time (Python's datetime.now()), or, when
 * the SOURCE_DATE_EPOCH environment variable holds an integer, that instant in UTC
 * (reproducible renders: the corpus oracle used 1721952000 = 2024-07-26 00:00:00).
 */
#ifndef FACET_CHAT_H
#define FACET_CHAT_H

#include <stddef.h>

#include "facet_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A loaded chat template (one or two parsed Jinja sources plus the special-token
 * variables of its tokenizer_config.json). Immutable after loading; one may be rendered
 * from several threads at once. */
typedef struct facet_chat_template facet_chat_template;

/* Load the chat template of the checkpoint folder `dir`. Sources, first found wins:
 *   1. DIR/chat_template.jinja (the file transformers >= 4.50 saves, and prefers);
 *   2. DIR/tokenizer_config.json "chat_template": a string, or a list of
 *      {"name", "template"} entries ("default" is used, "tool_use" when tools are given);
 *   3. DIR/chat_template.json {"chat_template": "..."} (processor format).
 * Special tokens come from DIR/tokenizer_config.json when it exists. No tokenizer.json
 * is needed. When none of these is there and `dir` is a GGUF model (a .gguf file, a
 * split part, or a folder holding one), the template is its tokenizer.chat_template
 * metadata (tokenizer.chat_template.tool_use when tools are given), and bos_token,
 * eos_token, unk_token, sep_token and pad_token are the tokenizer.ggml.tokens of the
 * tokenizer.ggml.*_token_id keys. On success *out is owned by the caller (facet_chat_template_free).
 * Errors: FACET_E_NOT_FOUND when `dir` is not a folder or has no chat template; FACET_E_IO /
 * FACET_E_PARSE / FACET_E_FORMAT for unreadable or malformed files; FACET_E_PARSE or
 * FACET_E_UNSUPPORTED (construct named, with template line:column) when the template
 * does not compile. */
facet_status facet_chat_template_load(const char *dir, facet_chat_template **out, facet_error *err);

/* Build a template from Jinja source text (NUL-terminated). `special_tokens_json` is an
 * optional JSON object of extra variables in the same role as the special tokens of
 * tokenizer_config.json (e.g. {"bos_token": "<s>"}); NULL for none. Errors as
 * facet_chat_template_load, plus FACET_E_PARSE for bad JSON. */
facet_status facet_chat_template_from_string(const char *source, const char *special_tokens_json,
                                             facet_chat_template **out, facet_error *err);

/* Where `tpl` was read from: the path of chat_template.jinja, tokenizer_config.json or
 * chat_template.json, or "template" for facet_chat_template_from_string. Owned by tpl.
 * Render errors say "template line L:C: ..." without it (the server sends them to
 * clients); a command line tool may prefix it. */
const char *facet_chat_template_origin(const facet_chat_template *tpl);

/* Free a template (NULL is accepted). */
void facet_chat_template_free(facet_chat_template *tpl);

/* Render the conversation.
 *   messages_json  JSON array of message objects ({"role", "content", ...}), passed to
 *                  the template unchanged (key order kept, ints and floats distinct).
 *   tools_json     JSON array of tool definitions, or NULL (the template sees None).
 *   add_generation_prompt  nonzero to open the assistant turn.
 *   vars_json      JSON object of extra variables (e.g. {"enable_thinking": false}),
 *                  overriding everything else; NULL for none.
 * On success *out_text is a malloc'd NUL-terminated UTF-8 string the caller frees, and
 * *out_len (when not NULL) its length in bytes (the text may not contain NUL unless the
 * input did).
 * Errors: FACET_E_PARSE for malformed JSON inputs (naming which one); FACET_E_TEMPLATE
 * when the template raises (raise_exception's message is carried verbatim after
 * "TemplateError: ") or hits an error Jinja2 would raise (TypeError, UndefinedError,
 * SecurityError ... named as Python names them), with the template line:column;
 * FACET_E_UNSUPPORTED for a construct facet does not implement (named);
 * FACET_E_LIMIT when the render exceeds a bound: 100 nested macro calls, 1,000,000 loop
 * iterations, or 64 MiB of output. Never crashes or hangs on any template or input. */
facet_status facet_chat_render(const facet_chat_template *tpl, const char *messages_json, const char *tools_json,
                               int add_generation_prompt, const char *vars_json, char **out_text, size_t *out_len,
                               facet_error *err);

/* The special-token variable `name` ("bos_token", "eos_token", ...) the template is
 * rendered with, or NULL when it is not set. Borrowed; valid until the free. Callers
 * tokenizing a rendered prompt use it as transformers does: the text is encoded with
 * add_special_tokens=False (the template already wrote any BOS it wants), and a caller
 * that must add specials can check whether the text starts with the bos_token. */
const char *facet_chat_template_token(const facet_chat_template *tpl, const char *name);

/* The Jinja source the template would use (with_tools selects "tool_use" when the
 * tokenizer_config.json has named templates). Borrowed; valid until the free. */
const char *facet_chat_template_source(const facet_chat_template *tpl, int with_tools);

/* ---------------------------------------------------------------------------------
 * Tool calls in generated text.
 * ------------------------------------------------------------------------------ */

/* The tool-call syntax a model was trained to emit. Chosen from facts of the template
 * and its special tokens (facet_toolcall_format_detect), never from a model name. */
typedef enum facet_toolcall_format {
    FACET_TOOLCALL_NONE = 0,    /* the template shows no tool-call syntax              */
    FACET_TOOLCALL_HERMES = 1,  /* <tool_call>{"name":..., "arguments":...}</tool_call>
                                   (Hermes, Qwen 2.5/3)                                */
    FACET_TOOLCALL_LLAMA3 = 2,  /* a bare JSON {"name":..., "parameters":...} turn, or
                                   <|python_tag|> followed by such JSON (Llama 3.1+)   */
    FACET_TOOLCALL_MISTRAL = 3, /* [TOOL_CALLS][{"name":..., "arguments":...}, ...]    */
    FACET_TOOLCALL_HARMONY = 4, /* gpt-oss harmony messages: a message addressed
                                   "to=functions.NAME" whose body is the JSON arguments;
                                   channel "final" is content, "analysis" reasoning     */
} facet_toolcall_format;

/* Name of a format ("none", "hermes", "llama3", "mistral", "harmony"); static string. */
const char *facet_toolcall_format_name(facet_toolcall_format f);

/* Decide the format from facts of the template: its source(s) and the added/special
 * tokens of its tokenizer_config.json. "<tool_call>" -> HERMES; "[TOOL_CALLS]" ->
 * MISTRAL; "<|python_tag|>" or a Llama-3 header token
 * ("<|start_header_id|>") together with "parameters" -> LLAMA3; "<|channel|>" with
 * "<|message|>" -> HARMONY; else NONE. */
facet_toolcall_format facet_toolcall_format_detect(const facet_chat_template *tpl);

/* One parsed call, OpenAI-shaped: {"id", "type": "function", "function": {"name",
 * "arguments": JSON string}}. */
typedef struct facet_toolcall {
    char *id;        /* "call_<index>_<8 hex of a hash of the text>" (stable per text) */
    char *name;      /* function name                                                */
    char *arguments; /* JSON text of the arguments object in json.dumps form (", " and
                        ": " separators, key order kept, floats as Python repr); a
                        JSON-string "arguments" that holds an object is kept verbatim */
} facet_toolcall;

/* The result of parsing one generated text. */
typedef struct facet_toolcall_result {
    char *content;          /* the text that is not a tool call (may be ""), malloc'd */
    char *reasoning;        /* HARMONY: the analysis-channel text, else NULL; malloc'd */
    facet_toolcall *calls;  /* n_calls entries                                       */
    size_t n_calls;
} facet_toolcall_result;

/* Split generated `text` (len bytes) into plain content and tool calls of `format`.
 * Malformed or partial blocks (bad JSON, no "name", an unclosed <tool_call>) stay in
 * the content unchanged; text around well-formed blocks is kept in order (when calls
 * were found, whitespace at the ends of the content is trimmed). HARMONY: the text
 * after the prompt's "<|start|>assistant" is split into messages ("<|channel|>C ...
 * <|message|>BODY" ended by <|end|>, <|call|>, <|return|> or the end of the text);
 * final-channel bodies (and text outside any message) form the content, analysis bodies
 * the reasoning, and a message to "functions.NAME" with a JSON object body a call; a
 * call whose body does not parse stays in the content verbatim. The caller
 * frees *out with facet_toolcall_result_free. Errors: FACET_E_NOMEM only. */
facet_status facet_toolcall_parse(facet_toolcall_format format, const char *text, size_t len,
                                  facet_toolcall_result *out, facet_error *err);

/* The calls as an OpenAI "tool_calls" JSON array text (malloc'd; "[]" when none), or
 * NULL on OOM. */
char *facet_toolcall_result_json(const facet_toolcall_result *r);

/* Free what facet_toolcall_parse filled (the struct itself is the caller's). */
void facet_toolcall_result_free(facet_toolcall_result *r);

#ifdef __cplusplus
}
#endif

#endif /* FACET_CHAT_H */
