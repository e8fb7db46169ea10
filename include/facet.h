/*
 * facet.h — the public C API of facet, an LLM inference engine for Hugging Face decoder
 * checkpoints (a folder with config.json, *.safetensors and tokenizer.json).
 *
 * The flow a caller follows:
 *
 *   facet_model_load(dir)          facts judged, weights read and converted
 *   facet_session_create(model)    KV caches for up to n_seq_max sequences
 *   facet_forward / facet_prefill / facet_decode
 *                                  append tokens to sequences, get logits
 *   facet_sample_greedy / facet_top_logprobs, or a facet_generator (facet_generate.h)
 *                                  per sequence: logits -> token, text, finish reason
 *   facet_tokenize / facet_detokenize (facet_tokenizer.h)
 *   facet_session_free, facet_model_free
 *
 * Conventions for every function here:
 *  - Fallible calls return a facet_status and, when `err` is not NULL, fill it with the
 *    same status and a one-line message naming the file, field or tensor, the value and
 *    what was expected. Nothing in the library prints or exits.
 *  - Token ids are int32_t. Logits are float32, one row of vocab_size per position.
 *  - Objects are not thread-safe; one thread drives a session at a time (the library
 *    uses its own worker threads inside a call).
 */
#ifndef FACET_H
#define FACET_H

#include <stddef.h>
#include <stdint.h>

#include "facet_status.h"
#include "facet_tokenizer.h"
#include "facet_sampler.h"
#include "facet_chat.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------
 * Model: facts + weights.
 * ------------------------------------------------------------------------------ */
typedef struct facet_model facet_model;

/* Weight storage format at run time. FACET_WEIGHTS_AUTO lets facet choose. */
typedef enum facet_weight_format {
    FACET_WEIGHTS_AUTO = 0,
    FACET_WEIGHTS_F32 = 1,
    FACET_WEIGHTS_BF16 = 2,
    FACET_WEIGHTS_F16 = 3,
    FACET_WEIGHTS_INT8 = 4,
    FACET_WEIGHTS_Q4 = 5, /* 4 bits + an f16 scale per 32 inputs (GGUF Q4_0's values)   */
    /* each matrix in the checkpoint's own type: a GGUF file's block types (Q4_0, Q8_0,
     * ...) run as the file stores them, F32/F16/BF16 matrices as f32/f16/bf16; what AUTO
     * picks for a GGUF file with block-type matrices */
    FACET_WEIGHTS_GGUF = 6,
} facet_weight_format;

/* Why the FACET_CPU environment variable did not take effect (an unknown name, or a path
 * this CPU lacks), as a static sentence for the caller to show; NULL when it is unset or
 * took effect. The library never prints; `facet` prints this on stderr. */
const char *facet_cpu_note(void);

/* Name of a weight format: "auto", "f32", "bf16", "f16", "int8", "q4", "gguf" ("unknown"
 * out of range), as the CLI's --weights spells it. */
const char *facet_weight_format_name(facet_weight_format f);

/*
 * Progress of a long load step, for a caller that wants to show it (the library never
 * prints). `step` is a static string: "converting weights" (done/total in bytes of
 * checkpoint tensor data read) or "writing weight cache" (bytes written). Called with
 * done = 0 when a step starts, after each tensor, and with done = total when it ends.
 */
typedef void (*facet_load_progress_fn)(void *user, const char *step, uint64_t done,
                                       uint64_t total);

/* Options for facet_model_load. Zero-initialised means defaults. */
typedef struct facet_load_options {
    int n_threads;               /* worker threads; 0 = number of online CPUs          */
    facet_weight_format weights; /* run-time weight format; AUTO = the checkpoint's own
                                    precision (bf16 / f16 / f32; a GGUF file with block-
                                    type matrices: GGUF, its own types), never int8    */
    int no_cache;                /* 1: neither read nor write the weight cache (so does
                                    the environment variable FACET_NO_CACHE=1)         */
    facet_load_progress_fn progress; /* NULL: no progress reports                      */
    void *progress_user;         /* passed to progress                                 */
    facet_tokenizer *tokenizer;  /* the folder's tokenizer, already loaded by the caller
                                    (facet_tokenizer_load): the model takes it over,
                                    also when the load fails, instead of parsing
                                    tokenizer.json again; NULL: loaded if present      */
    /* one stage of a pipeline (`facet run --pipeline-parallel`, src/parallel): only
     * layers [layer_first, layer_end) are read (their byte ranges of the checkpoint)
     * and held, and the session holds only their KV cache; 0, 0: every layer. With
     * stage_inner = 1 (a stage after the first) neither the embeddings, the final norm,
     * lm_head nor the tokenizer are loaded. A partial load neither reads nor writes the
     * weight cache. Forward passes of such a model run only inside a parallel job. */
    int layer_first, layer_end;
    int stage_inner;
    /* one of tensor_parallel ranks of a stage (tensor_parallel > 1): rank tensor_rank
     * keeps its share of each layer's heads and FFN columns (src/engine/weights_tp.c);
     * 0 or 1: the whole layers */
    int tensor_parallel, tensor_rank;
    const char *backend;         /* the compute backend: NULL or "cpu", or "vulkan"
                                    (issue 24; a binary built without it refuses it by
                                    name). The capability table judges the facts on it
                                    before any weight is read.                          */
    int device;                  /* the backend's device: its index + 1 (0: the
                                    default device; 1: device 0, as --device 0)         */
} facet_load_options;

/* What the weight cache did during a load (facet_model_info.weight_cache). The cache
 * holds the converted weights: DIR/.facet-cache/FORMAT.facetcache beside the
 * checkpoint, or $XDG_CACHE_HOME/facet (default ~/.cache/facet) when the checkpoint
 * folder is not writable. */
typedef enum facet_weight_cache {
    FACET_WCACHE_OFF = 0,        /* disabled (no_cache, FACET_NO_CACHE=1)              */
    FACET_WCACHE_HIT = 1,        /* weights mapped from a valid cache, nothing converted */
    FACET_WCACHE_WRITTEN = 2,    /* converted, then written to the cache               */
    FACET_WCACHE_UNWRITTEN = 3,  /* converted; the cache could not be written (note)   */
} facet_weight_cache;

/* Summary of a loaded model, for callers that do not need the full facts. */
typedef struct facet_model_info {
    int vocab_size;              /* rows of the logits (config vocab_size)             */
    int max_position_embeddings; /* the longest context the model declares             */
    int hidden_size;
    int num_hidden_layers;
    int32_t bos_token_id;        /* -1 when the config names none                      */
    int n_eos;                   /* number of valid entries in eos_token_ids           */
    int32_t eos_token_ids[16];   /* from config.json and generation_config.json        */
    int n_threads;               /* worker threads the model computes with             */
    uint64_t weight_bytes;       /* bytes of the run-time weights                      */
    uint64_t decode_bytes;       /* of them, what one decoded token reads (the memory-
                                    bound ceiling): all but an untied embedding table,
                                    of which a token reads one row; a mixture-of-
                                    experts layer's k chosen experts of E, on average,
                                    instead of all E                                   */
    facet_weight_format weights; /* the run-time format chosen (never AUTO)           */
    uint64_t layer_matrix_params; /* weights of the decoder layers' projections (q, k, v,
                                    o, gate, up, down; on a mixture-of-experts layer the
                                    router, k experts and the shared expert) a token
                                    multiplies: a prefill of T tokens costs 2 * this * T
                                    flops in them (lm_head and attention not counted)  */
    facet_weight_cache weight_cache; /* what the weight cache did during the load      */
    const char *weight_cache_path;   /* the cache file used or written, or NULL         */
    const char *weight_cache_note;   /* one line for the user (the cache used, written,
                                        rejected and why, or why not written), or NULL;
                                        strings owned by the model                     */
    uint64_t weight_cache_huge_bytes; /* FACET_WCACHE_HIT: bytes of the mapped cache file
                                        on 2 MiB pages (streaming from 4 KiB pages reads
                                        slower); 0 otherwise or where Linux cannot tell */
    const char *backend;         /* "cpu" or "vulkan" (static)                         */
    const char *device_note;     /* the device used ("vulkan device 0: NAME, X GiB"),
                                    or NULL on the CPU; owned by the model              */
    uint64_t device_submissions; /* command buffers submitted to the device so far (a
                                    forward chunk is one: its operations are recorded
                                    and submitted together); 0 on the CPU               */
    int n_notes;                 /* lines in notes (at most 16)                        */
    const char *notes[16];       /* what reading the checkpoint noticed and resolved, as
                                    `facet conform` prints them ("tensors win" where a
                                    config key disagrees with the tensors, tensors beyond
                                    num_hidden_layers not used, keys ignored); owned by
                                    the model                                          */
} facet_model_info;

/*
 * Load the checkpoint in folder `dir`: config.json (+ generation_config.json) read into
 * facts, the facts judged by the capability table, then every tensor validated against
 * the shapes the facts imply and converted to the run-time format. The converted
 * weights are kept in a weight cache (facet_weight_cache) keyed by a SHA-256 over
 * config.json, the safetensors headers and the files' sizes and modification times
 * (not their tensor data), the format, the dims and this build's weight layout; a later
 * load with a valid cache maps it instead of converting (the verdict is still judged
 * first) and checks every tensor's data against the XXH3-64 checksum written with it.
 * A cache that is stale, truncated or corrupted (tensor data included) is not an
 * error: the weights are converted and the cache rewritten, and
 * facet_model_info.weight_cache_note says so. A tokenizer.json in the folder is loaded
 * too (facet_model_tokenizer). On success *out owns everything and
 * is released by facet_model_free. Errors: FACET_E_IO (no config.json, unreadable
 * files), FACET_E_PARSE / FACET_E_FORMAT (bad JSON, bad safetensors), FACET_E_NOT_FOUND
 * (missing tensor or shard), FACET_E_UNSUPPORTED (refused by the table; the message
 * lists every refusal), FACET_E_NOMEM.
 */
facet_status facet_model_load(const char *dir, const facet_load_options *opts,
                              facet_model **out, facet_error *err);

/* Release a model and everything it owns. NULL is accepted. Sessions created from the
 * model must be freed first. */
void facet_model_free(facet_model *model);

/* Fill *info with the model's summary. */
void facet_model_get_info(const facet_model *model, facet_model_info *info);

/* The tokenizer loaded from the checkpoint folder's tokenizer.json, or NULL when the
 * folder has none. Owned by the model. */
facet_tokenizer *facet_model_tokenizer(facet_model *model);

/* ---------------------------------------------------------------------------------
 * Sessions: KV caches for several sequences that share one sweep over the weights.
 * ------------------------------------------------------------------------------ */
typedef struct facet_session facet_session;

/* Options for facet_session_create. Zero-initialised means defaults. */
/*
 * Element type of the KV cache. Keys and values are computed in float32 and rounded to
 * the cache type when stored (round to nearest even; bf16 keeps float32's range, f16
 * saturates to +-inf beyond 65504); attention widens them back to float32 exactly, so
 * f32 reproduces the float32 reference and the 16-bit types halve the cache's memory
 * and the bytes each decode step reads from it.
 */
typedef enum facet_kv_type {
    FACET_KV_AUTO = 0, /* f32 for f32 weights, f16 for f16 weights, bf16 otherwise       */
    FACET_KV_F32 = 1,
    FACET_KV_BF16 = 2,
    FACET_KV_F16 = 3,
} facet_kv_type;

/* Name of a KV type: "auto", "f32", "bf16", "f16" ("unknown" out of range). */
const char *facet_kv_type_name(facet_kv_type t);

typedef struct facet_session_options {
    int n_seq_max; /* sequences this session can hold at once (ids 0..n_seq_max-1); 0 = 1 */
    int n_ctx;     /* context cap per sequence in tokens; 0 = max_position_embeddings.
                      KV memory grows on demand up to this cap, never allocated at the
                      cap up front.                                                     */
    facet_kv_type kv_type; /* KV cache element type; AUTO follows the loaded weights'
                              format (see facet_kv_type)                               */
} facet_session_options;

/* Create a session over `model` (borrowed: it must outlive the session). Errors:
 * FACET_E_INVALID_ARGUMENT (n_ctx above max_position_embeddings, negative values),
 * FACET_E_NOMEM. */
facet_status facet_session_create(facet_model *model, const facet_session_options *opts,
                                  facet_session **out, facet_error *err);

/* Release a session and its KV caches. NULL is accepted. */
void facet_session_free(facet_session *session);

/* Forget sequence `seq`'s tokens (its KV memory is kept for reuse). Errors:
 * FACET_E_INVALID_ARGUMENT (seq outside [0, n_seq_max)). */
facet_status facet_seq_reset(facet_session *session, int seq, facet_error *err);

/* Forget sequence `seq`'s tokens and free its KV memory (every layer's keys, values and
 * window ring); the next tokens grow it again from nothing. For a server whose slots
 * serve requests of varied lengths: resident KV memory then follows the live sequences
 * rather than the longest each slot ever held. Errors: FACET_E_INVALID_ARGUMENT (seq
 * outside [0, n_seq_max)). */
facet_status facet_seq_release(facet_session *session, int seq, facet_error *err);

/* Keep the first n_keep tokens of sequence `seq` and forget the rest: the next token goes
 * at position n_keep; the KV memory is kept. A server's prefix cache uses it to start a
 * new request from a finished one's shared prefix. Errors: FACET_E_INVALID_ARGUMENT
 * (seq outside [0, n_seq_max), n_keep outside [0, length]), FACET_E_UNSUPPORTED (the
 * model has sliding-window ring layers, the sequence is longer than their ring and
 * n_keep < length: the ring has overwritten rows the kept positions need; the sequence
 * is unchanged). */
facet_status facet_seq_truncate(facet_session *session, int seq, int n_keep, facet_error *err);

/* Make sequence dst hold a copy of the first n tokens of sequence src (dst's own tokens
 * are forgotten): dst continues as if it had been fed src's first n tokens (the same
 * logits, bit for bit). A server's prefix cache uses it to start a request from a
 * running one's shared prefix. Errors: FACET_E_INVALID_ARGUMENT (ids outside [0,
 * n_seq_max) or equal, n outside [0, src's length]), FACET_E_UNSUPPORTED (sliding-window
 * ring layers and src longer than its ring), FACET_E_NOMEM (dst then holds no tokens). */
facet_status facet_seq_copy(facet_session *session, int src, int dst, int n, facet_error *err);

/* Number of tokens sequence `seq` holds in its KV cache (its next position); -1 if
 * `seq` is out of range. */
int facet_seq_length(const facet_session *session, int seq);

/* Context cap of the session's sequences in tokens. */
int facet_session_n_ctx(const facet_session *session);

/* The KV cache element type the session resolved (never FACET_KV_AUTO). */
facet_kv_type facet_session_kv_type(const facet_session *session);

/*
 * A batch of tokens to run through the model in one sweep over the weights. Entry i
 * appends tokens[i] to sequence seq_ids[i] at that sequence's next position; entries of
 * one sequence must appear in order. Any mix is allowed: one sequence's whole prompt
 * (prefill), one token for each of several sequences (batched decode), or both.
 */
typedef struct facet_batch {
    int n_tokens;                /* entries in the arrays below                         */
    const int32_t *tokens;       /* [n_tokens] token ids, each in [0, vocab_size)       */
    const int32_t *seq_ids;      /* [n_tokens] sequence ids, each in [0, n_seq_max)     */
    const uint8_t *want_logits;  /* [n_tokens] nonzero: write this entry's logits;
                                    NULL: logits for every entry                        */
} facet_batch;

/*
 * Run a batch. `logits` receives one float32 row of vocab_size per entry that wants
 * logits, in batch order (caller-owned, at least n_wanted * vocab_size floats).
 * The logits are those of the next token after the entry's position. Errors:
 * FACET_E_INVALID_ARGUMENT (token id or sequence id out of range), FACET_E_CONTEXT
 * (a sequence would pass n_ctx; nothing of the batch is applied), FACET_E_NOMEM.
 */
facet_status facet_forward(facet_session *session, const facet_batch *batch, float *logits,
                           facet_error *err);

/* facet_forward, except that each entry that wants logits gets instead the last hidden
 * state after the final norm: one float32 row of hidden_size per such entry, in batch
 * order (what an embedding model pools). Same errors as facet_forward. */
facet_status facet_forward_hidden(facet_session *session, const facet_batch *batch,
                                  float *hidden, facet_error *err);

/* Prefill: append ids[0..n) to sequence `seq`; write the logits after the last one into
 * `logits_last` (vocab_size floats; may be NULL). Same errors as facet_forward. */
facet_status facet_prefill(facet_session *session, int seq, const int32_t *ids, size_t n,
                           float *logits_last, facet_error *err);

/* Batched decode: append tokens[i] to sequence seq_ids[i] for i in [0, n), one sweep
 * over the weights for all; logits is [n][vocab_size]. Same errors as facet_forward. */
facet_status facet_decode(facet_session *session, int n, const int32_t *seq_ids,
                          const int32_t *tokens, float *logits, facet_error *err);

/* ---------------------------------------------------------------------------------
 * Sampling.
 * ------------------------------------------------------------------------------ */

/* Greedy choice: the index of the largest logit (the lowest index among equal maxima,
 * as torch.argmax). n_vocab must be > 0. */
int32_t facet_sample_greedy(const float *logits, int n_vocab);

/* The k most likely ids and their natural-log probabilities, log_softmax(logits)
 * computed in double, sorted by descending probability (ties: lower id first).
 * ids and logprobs are caller-owned arrays of k entries; k is clamped to n_vocab.
 * Returns the number of entries written. */
int facet_top_logprobs(const float *logits, int n_vocab, int k, int32_t *ids,
                       double *logprobs);

/* Index of the first NaN or infinite value among logits[0..n_vocab), or -1 when all are
 * finite. A non-finite logit means the forward pass overflowed (e.g. an f16 KV cache
 * holding a key or value beyond +-65504); sampling from such a row is meaningless, so
 * facet_generator_step (used by `facet run` and `facet serve`) checks each row before it
 * samples and fails with FACET_E_NUMERIC naming the step. */
int facet_logits_nonfinite(const float *logits, int n_vocab);

#ifdef __cplusplus
}
#endif

#endif /* FACET_H */
