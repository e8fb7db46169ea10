/*
 * cli.h — the facet command line: one file per subcommand (DESIGN.md, "Command line").
 * Each subcommand takes argc/argv after the subcommand name and returns the process
 * exit code; errors are printed as one line on stderr ("facet: ...").
 */
#ifndef FACET_CLI_H
#define FACET_CLI_H

#include <stdio.h>

#include "facet.h"
#include "backend/backend.h"
#include "facet_chat.h"
#include "model/facts.h"
#include "model/table.h"
#include "util/vec.h"

int cmd_run(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_conform(int argc, char **argv);
int cmd_onboard(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_serve(int argc, char **argv);

/* Print "facet: MESSAGE" for a failed call and return the exit code for its status:
 * 2 for FACET_E_UNSUPPORTED (a refusal), 1 for everything else. */
int cli_fail(const facet_error *err);

/* --json-schema FILE / --grammar FILE (at most one non-NULL): the compiled grammar and
 * the token trie of tok's n_vocab ids, or both NULL when neither is given. Returns 0, or
 * the exit code after printing the error (naming the file). grammar_opt.c. */
struct facet_grammar;
struct facet_grammar_vocab;
int cli_grammar_load(const char *schema_file, const char *grammar_file,
                     const facet_tokenizer *tok, int n_vocab, struct facet_grammar **g,
                     struct facet_grammar_vocab **v);

/* cli_fail with the input it concerns first: "facet: WHERE: MESSAGE" (WHERE a file, or
 * FILE:LINE); WHERE NULL is cli_fail. */
int cli_fail_at(const char *where, const facet_error *err);

/* Parse v as a whole decimal integer in [lo, hi] into *out; on failure print
 * "facet: OPT expects an integer in [lo, hi], got 'V'" and return 0 (1 on success). */
int cli_parse_int(const char *opt, const char *v, long lo, long hi, int *out);

/* Parse v as a KV cache type, "auto|f32|bf16|f16", into *out; on failure print
 * "facet: OPT expects auto, f32, bf16 or f16, got 'V'" and return 0 (1 on success). */
int cli_parse_kv_type(const char *opt, const char *v, facet_kv_type *out);

/* --device N (stored as N + 1; 0 = not given) only means something with --backend vulkan:
 * given with the cpu backend (backend NULL or "cpu") it prints "facet: CMD: --device N
 * selects a Vulkan device; add --backend vulkan ..." and returns 0; else returns 1. */
int cli_check_device(const char *cmd, const char *backend, int device);

/* --backend vulkan in conform and plan: open device --device N (stored as N + 1; 0: the
 * default), print to `out` "device: vulkan device N: NAME, X GiB (of K on this
 * machine)" and its limits line (backend.h facet_device_limits_line), judge facts f run
 * with weights w (resolved, not AUTO) against them into v (model/device_verdict.h: a
 * bf16 -> f16 change is printed as "note: ..."), close the device. Without the Vulkan
 * backend, or without a driver when no --device was given: "device: none (why)" and the
 * table's verdict stands. Returns 0, or 2 after printing "facet: CMD: vulkan: --device N:
 * no such device (this machine has K: 0..K-1)" (or the driver's error) when --device
 * was given and cannot be opened. `seen` (may be NULL): the device's limits, or zeros
 * (name "") when none was opened. */
int cli_judge_device(FILE *out, const char *cmd, int device, const facet_facts *f,
                     facet_weight_format w, facet_verdict *v, facet_device_limits *seen);

/* 1 after printing "facet: CMD: OPT needs a value" when a, the last argument (last != 0),
 * is one of opts (a NULL-terminated list of the options that take a value); else 0. */
int cli_missing_value(const char *cmd, const char *a, int last, const char *const *opts);

/* Parse v as a weight format, "auto|f32|bf16|f16|int8|gguf", into *out; on failure print
 * "facet: OPT expects auto, f32, bf16, f16, int8 or gguf, got 'V'" and return 0 (1 on success;
 * v NULL: 0 and nothing printed, the caller names the missing value). */
int cli_parse_weights(const char *opt, const char *v, facet_weight_format *out);

/* Read the input file `path` of option `opt` whole (NUL-appended, *len bytes, the caller
 * frees *data), or standard input when path is "-": the meaning of "-" for every option
 * that takes an input file (-f, --messages, --tools, --reference, ...). At most
 * max_bytes. Standard input feeds one option per process: a second "-" is
 * FACET_E_INVALID_ARGUMENT naming both options. Errors: as facet_read_file, or for "-"
 * FACET_E_IO / FACET_E_LIMIT / FACET_E_NOMEM naming the option. */
facet_status cli_read_input(const char *opt, const char *path, size_t max_bytes, char **data,
                            size_t *len, facet_error *err);

/* A list of token ids (FACET_VEC of int32_t; free(ids.data)). */
typedef FACET_VEC(int32_t) cli_ids;

/* Append the token ids of text (len bytes, need not be NUL-terminated) to *out: decimal
 * ids 0..2147483647 separated by commas and/or whitespace, or a JSON array of them
 * ("1,2,3", "1 2\n3", "[1, 2, 3]"). Returns 0, or 1 after printing "facet: OPT: SOURCE:
 * MESSAGE" naming the bad token and its position (SOURCE: where the text came from, a
 * file name or "standard input"; NULL for an argument, whose text the message quotes).
 * On failure *out holds the ids before the bad one (the caller frees it). */
int cli_parse_ids(cli_ids *out, const char *opt, const char *source, const char *text,
                  size_t len);

/* cli_parse_ids over an argument of option OPT: the ids themselves, "@FILE" (the file's
 * text) or "-" (standard input's). Returns 0, or 1 after printing the error. */
int cli_read_ids(cli_ids *out, const char *opt, const char *arg);

/* Parse v as a whole number (strtod) into a sampling parameter *out, converted as the
 * server converts JSON numbers (facet_sampler_param_from_double: |x| <= 1e30, a tiny
 * nonzero value stays nonzero); on failure print the error, return 0. */
int cli_parse_float(const char *opt, const char *v, float *out);

/* When folder `path` holds weights: probe them into *f (facet_facts_probe) and, for a
 * family in the table that `backend` does not refuse (facet_judge), check every tensor
 * the loader will need (facet_weights_check), in the loader's order. Returns 0, or 1
 * after printing the error (cli_fail). A folder without weights is left unprobed (its
 * verdict stays pending). */
int cli_probe_weights(const char *path, facet_facts *f, const char *backend);

/* The same check for a GGUF model `m` with facts `f` (facet_facts_from_gguf): unless the
 * verdict (with its GGUF refusals) is refused, every tensor the loader will take is
 * found with its shape in the headers-only view, so conform and plan do not call
 * "supported" a file run refuses. Returns 0, or 1 after printing the error. */
struct gguf_model;
int cli_probe_gguf_weights(const struct gguf_model *m, const facet_facts *f, const char *backend);

/* A checkpoint whose model_type (or GGUF general.architecture) has no profile in the
 * table (f->family_known 0) has no shape facts to check a prompt or a --ctx against:
 * print the verdict's refusals, as the loader and `facet conform` give them, and return
 * 2. Returns 0 for a family in the table (its verdict comes with the load). */
int cli_refuse_outside_table(const char *path, const facet_facts *f, const char *backend);

/* FACET_MEM_AVAILABLE (bytes, 1..CLI_MAX_MEM_BYTES; overrides /proc/meminfo's
 * MemAvailable, for tests and capacity planning) into *out when set. Returns 1 (unset:
 * *out untouched), or 0 after printing the error for a value that is not such a count. */
#define CLI_MAX_MEM_BYTES (1ull << 60)
int cli_env_mem_available(uint64_t *out);

/* Normalize a MODEL argument in place: a path to a config.json file becomes its folder
 * (as conform and plan read it), written into buf[cap]; a folder, or a path that does
 * not exist (the loader names it), is left as is. Returns 1, or 0 after printing an
 * error for any other file (model.safetensors, tokenizer.json, ...). */
int cli_model_folder(const char **path, char *buf, size_t cap);

/* cli_model_folder for the commands that read only text files (tokenize, detokenize,
 * template): a GGUF file is refused by name too, since facet reads no tokenizer or chat
 * template from GGUF metadata yet (the folder lookups said "FILE.gguf/tokenizer.json: no
 * tokenizer.json in this folder" or "no such folder"). */
int cli_text_folder(const char **path, char *buf, size_t cap);

/* Print a facet_chat_render error of template `tpl`: one about the messages or tools JSON
 * ("messages:...", "tools:...") or the template itself ("template line L:C: ...") is
 * prefixed with the file it came from. Returns cli_fail's exit code. */
int cli_chat_fail(const facet_error *err, const facet_chat_template *tpl, const char *messages_path,
                  const char *tools_path);

/* The bundled model folder (models/stories260k of the source tree, or beside the
 * executable). */
const char *cli_bundled_model(void);

#endif
