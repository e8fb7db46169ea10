/*
 * gguf.h — reading GGUF files (llama.cpp's model container), version 3, little-endian.
 *
 * Layout (the GGUF specification, ggml-org/ggml docs/gguf.md), every integer
 * little-endian:
 *   magic "GGUF" (4 bytes), version (u32, 3), n_tensors (u64), n_kv (u64)
 *   n_kv metadata pairs:   key (string), value type (u32), value
 *   n_tensors infos:       name (string), n_dims (u32), ne[n_dims] (u64 each),
 *                          type (u32, a ggml type id), offset (u64)
 *   padding to general.alignment (u32 key, default 32), then the data section; each
 *   tensor's offset is relative to the data section's start.
 * A string is a u64 byte length and that many bytes (no NUL). A value is one of the
 * scalar types, a string, or an array: element type (u32), count (u64), the elements
 * (arrays may nest).
 *
 * Validation is strict, as src/io/safetensors.c: every count, length, offset and
 * dimension is bounded by the bytes left before it is used; products are checked for
 * 64-bit overflow; keys and tensor names are unique, non-empty, without NUL bytes;
 * tensor names are at most 63 bytes (llama.cpp's limit); a tensor has 1..4 dimensions,
 * each >= 0, ne[0] a multiple of its type's block size, a known type id; its offset is
 * a multiple of general.alignment and each tensor begins where the previous one's
 * data, padded to the alignment, ends (as llama.cpp's reader requires); its data lies
 * inside the file. Every violation is FACET_E_FORMAT with a one-line message naming the
 * file, the key or tensor, the value and what was expected.
 */
#ifndef FACET_IO_GGUF_H
#define FACET_IO_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "facet_status.h"

#define GGUF_MAGIC "GGUF"
#define GGUF_VERSION 3
#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS 4
#define GGUF_MAX_NAME 63        /* bytes in a tensor name (llama.cpp: GGML_MAX_NAME - 1) */
#define GGUF_MAX_ARRAY_DEPTH 8  /* nested arrays deeper than this are refused             */

/* Metadata value types (the u32 after each key). */
typedef enum gguf_vtype {
    GGUF_T_UINT8 = 0, GGUF_T_INT8 = 1, GGUF_T_UINT16 = 2, GGUF_T_INT16 = 3,
    GGUF_T_UINT32 = 4, GGUF_T_INT32 = 5, GGUF_T_FLOAT32 = 6, GGUF_T_BOOL = 7,
    GGUF_T_STRING = 8, GGUF_T_ARRAY = 9, GGUF_T_UINT64 = 10, GGUF_T_INT64 = 11,
    GGUF_T_FLOAT64 = 12,
    GGUF_T_COUNT
} gguf_vtype;

/* Name of a value type ("u32", "string", "array", ...); "?" when out of range. */
const char *gguf_vtype_name(uint32_t t);

/* ---- ggml block types --------------------------------------------------------------
 * Every tensor type id llama.cpp's ggml defines (ggml.h, enum ggml_type): a name, the
 * number of elements per block and the bytes per block. Ids that ggml removed (4, 5,
 * 31..33, 36..38) and ids past the table are unknown: a tensor using one is refused
 * naming the id. */
typedef enum gguf_type {
    GGML_F32 = 0, GGML_F16 = 1, GGML_Q4_0 = 2, GGML_Q4_1 = 3,
    GGML_Q5_0 = 6, GGML_Q5_1 = 7, GGML_Q8_0 = 8, GGML_Q8_1 = 9,
    GGML_Q2_K = 10, GGML_Q3_K = 11, GGML_Q4_K = 12, GGML_Q5_K = 13, GGML_Q6_K = 14,
    GGML_Q8_K = 15, GGML_IQ2_XXS = 16, GGML_IQ2_XS = 17, GGML_IQ3_XXS = 18,
    GGML_IQ1_S = 19, GGML_IQ4_NL = 20, GGML_IQ3_S = 21, GGML_IQ2_S = 22, GGML_IQ4_XS = 23,
    GGML_I8 = 24, GGML_I16 = 25, GGML_I32 = 26, GGML_I64 = 27, GGML_F64 = 28,
    GGML_IQ1_M = 29, GGML_BF16 = 30, GGML_TQ1_0 = 34, GGML_TQ2_0 = 35, GGML_MXFP4 = 39,
    GGML_TYPE_COUNT = 40
} gguf_type;

/* Nonzero when `type` is a ggml type id this table knows. */
int gguf_type_known(uint32_t type);
/* "Q4_K", "F32", ...; NULL for an unknown id. */
const char *gguf_type_name(uint32_t type);
/* Elements per block (1 for the plain types, 32 or 256 for the block formats); 0 when
 * unknown. */
uint32_t gguf_type_block(uint32_t type);
/* Bytes per block; 0 when unknown. */
uint32_t gguf_type_block_bytes(uint32_t type);
/* The ggml type id named `name` (exact spelling), or -1. */
int gguf_type_from_name(const char *name);

/* One metadata pair. `val` points at the value's bytes inside the file: a scalar's
 * little-endian bytes, a string's bytes (val_len of them, not NUL-terminated), or an
 * array's elements (arr_n elements of arr_type, val_len bytes in all; for strings and
 * nested arrays walk them with gguf_arr_str / the spec's layout). */
typedef struct gguf_kv {
    char *key;                  /* owned, NUL-terminated                               */
    uint32_t type;              /* gguf_vtype                                          */
    uint32_t arr_type;          /* element type when type == GGUF_T_ARRAY              */
    uint64_t arr_n;             /* element count when type == GGUF_T_ARRAY             */
    const uint8_t *val;
    uint64_t val_len;
} gguf_kv;

/* One tensor info. `data` points into the file's mapping (read-only), nbytes long. */
typedef struct gguf_tensor {
    char *name;                 /* owned, NUL-terminated, 1..GGUF_MAX_NAME bytes        */
    uint32_t type;              /* a known gguf_type                                   */
    int n_dims;                 /* 1..GGUF_MAX_DIMS                                    */
    int64_t ne[GGUF_MAX_DIMS];  /* elements per dimension, ne[0] fastest; unused = 1    */
    uint64_t offset;            /* in the data section                                 */
    uint64_t nbytes;            /* ne[0] / block * block_bytes * ne[1] * ne[2] * ne[3]   */
    const uint8_t *data;
    int file_index;             /* which part of a split model holds it                */
} gguf_tensor;

/* One parsed GGUF file. */
typedef struct gguf_file {
    char *path;                 /* owned copy of the path (or the `what` name)          */
    void *map;                  /* mmap of the whole file, or NULL (parsed from memory) */
    size_t map_size;
    uint32_t version;
    uint64_t alignment;         /* general.alignment, or 32                             */
    uint64_t data_offset;       /* where the data section starts in the file            */
    size_t n_kv;
    gguf_kv *kv;                /* owned, in file order                                 */
    size_t n_tensors;
    gguf_tensor *tensors;       /* owned, in file order                                 */
} gguf_file;

/* Parse and validate a GGUF file held in memory (`size` bytes; `what` names it in
 * messages). No I/O; the fuzz target's entry. Pointers in *out point into buf; release
 * with gguf_file_close (which does not free buf when map is NULL).
 * Errors: FACET_E_FORMAT (every layout rule above), FACET_E_NOMEM. */
facet_status gguf_parse(const uint8_t *buf, size_t size, const char *what, gguf_file *out,
                        facet_error *err);

/* mmap `path` read-only and gguf_parse it. Errors: FACET_E_IO, or gguf_parse's. */
facet_status gguf_open(const char *path, gguf_file *out, facet_error *err);

/* Unmap and free what a file owns (the struct itself is the caller's). */
void gguf_file_close(gguf_file *f);

/* The pair named `key`, or NULL. */
const gguf_kv *gguf_find_kv(const gguf_file *f, const char *key);
/* The tensor named `name` in this file, or NULL. */
const gguf_tensor *gguf_file_find(const gguf_file *f, const char *name);

/* ---- typed metadata reads -----------------------------------------------------------
 * Each returns FACET_OK with *out set; FACET_E_NOT_FOUND when the key is absent and
 * `required` ("FILE: required key llama.block_count is missing"), FACET_OK leaving *out
 * alone when absent and not required; FACET_E_FORMAT when the value has another type or
 * lies outside [min, max] ("FILE: key llama.block_count is a string, expected an
 * unsigned integer"). *present (may be NULL) says whether the key was given. */

/* Any integer type (u8..u64, i8..i64) whose value lies in [min, max]. */
facet_status gguf_get_int(const gguf_file *f, const char *key, int required, int64_t min,
                          int64_t max, int64_t *out, int *present, facet_error *err);
/* f32 or f64, finite; > 0 when `positive`. */
facet_status gguf_get_float(const gguf_file *f, const char *key, int required, int positive,
                            double *out, int *present, facet_error *err);
/* A bool. */
facet_status gguf_get_bool(const gguf_file *f, const char *key, int required, int *out,
                           int *present, facet_error *err);
/* A string: *s points into the file (not NUL-terminated), *len bytes. */
facet_status gguf_get_str(const gguf_file *f, const char *key, int required, const char **s,
                          uint64_t *len, int *present, facet_error *err);

/* Value of a scalar integer/float/bool pair as a double (0 for other types). */
double gguf_kv_number(const gguf_kv *kv);
/* Nonzero when the pair holds an integer (any width). */
int gguf_kv_is_int(const gguf_kv *kv);

/* Element i of a string array: *s, *len as gguf_get_str. Walks the array (O(i)); for
 * reading every element use a loop with gguf_arr_str_next. Returns 0 when i is out of
 * range or kv is not an array of strings. */
int gguf_arr_str(const gguf_kv *kv, uint64_t i, const char **s, uint64_t *len);
/* Iterate a string array: *pos starts at 0; returns 0 at the end. */
int gguf_arr_str_next(const gguf_kv *kv, uint64_t *pos, const char **s, uint64_t *len);

/* Render a pair's value for messages ("2", "1e-06", "\"llama\"", "[u32 x 2]"). */
void gguf_kv_render(const gguf_kv *kv, char *buf, size_t cap);

/* ---- a model: one file, or every part of a split file --------------------------------
 * A file whose split.count (u16 or any integer) is > 1 is one part of a split model
 * named PREFIX-NNNNN-of-MMMMM.gguf (as llama-gguf-split writes, numbered from 1).
 * gguf_model_open opens every part (given any of them): each must exist (FACET_E_NOT_FOUND
 * naming the missing file), carry split.no equal to its index (0-based) and the same
 * split.count; the total of tensors must equal split.tensors.count when given; a tensor
 * name in two parts is FACET_E_FORMAT. Metadata comes from the first part. */
typedef struct gguf_model {
    size_t n_files;
    gguf_file *files;           /* files[0]: the first part (all metadata)              */
    size_t n_tensors;           /* all parts                                           */
    const gguf_tensor **by_name; /* sorted by name, for gguf_model_find                 */
} gguf_model;

/* Open the GGUF model at `path`: a .gguf file (one part of a split model is enough), or
 * a folder holding exactly one GGUF model (one .gguf file, or the parts of one split
 * model). Errors: FACET_E_IO, FACET_E_NOT_FOUND (no .gguf in the folder; a missing
 * part), FACET_E_INVALID_ARGUMENT (a folder holding several models, naming them),
 * FACET_E_FORMAT (a part's own errors, split keys that disagree). */
facet_status gguf_model_open(const char *path, gguf_model *out, facet_error *err);
void gguf_model_close(gguf_model *m);
/* A model of one file already parsed (gguf_parse / gguf_open): takes ownership of *f
 * (zeroed on return, closed on error) and indexes its tensors. No split checks: for
 * tests and the fuzz target. Errors: FACET_E_NOMEM. */
facet_status gguf_model_wrap(gguf_file *f, gguf_model *out, facet_error *err);
/* A tensor by name across all parts (binary search); NULL if absent. */
const gguf_tensor *gguf_model_find(const gguf_model *m, const char *name);

/* Nonzero when `path` names a .gguf file, or a folder without config.json that holds a
 * *.gguf file: the inputs gguf_model_open takes instead of a Hugging Face folder. */
int gguf_path_is_gguf(const char *path);

#endif
