/*
 * safetensors.h — reading .safetensors files and multi-shard checkpoints.
 *
 * Format (https://github.com/huggingface/safetensors): an 8-byte little-endian header
 * length N, N bytes of a JSON object {"NAME": {"dtype": "F32", "shape": [..],
 * "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}}, then the data section;
 * offsets are relative to the start of the data section.
 *
 * Validation is strict: N bounded by the file size; the header a JSON object; every
 * tensor with a known dtype name, a shape of non-negative integers, shape product x
 * element size == end - begin, begin <= end <= data section size, no key named twice,
 * and the non-empty tensors tiling the data section as the reference implementation
 * requires (no overlap, no gap, no trailing bytes). Every violation is FACET_E_FORMAT
 * naming the file, tensor and values.
 */
#ifndef FACET_IO_SAFETENSORS_H
#define FACET_IO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "facet_status.h"

/* Every dtype name the safetensors format defines. Only F32, F16 and BF16 are readable
 * as weights; the rest are recognized (so refusals can name them) but refused. */
typedef enum st_dtype {
    ST_F32, ST_F16, ST_BF16,
    ST_F64, ST_I8, ST_U8, ST_I16, ST_U16, ST_I32, ST_U32, ST_I64, ST_U64, ST_BOOL,
    ST_F8_E4M3, ST_F8_E5M2, ST_F8_E8M0, ST_F6_E2M3, ST_F6_E3M2, ST_F4, ST_C64,
    ST_DTYPE_COUNT
} st_dtype;

#define ST_MAX_DIMS 8

/* One tensor of a file. `data` points into the file's mapping (read-only). */
typedef struct st_tensor {
    char *name;                 /* owned, NUL-terminated                              */
    st_dtype dtype;
    int ndim;                   /* 0..ST_MAX_DIMS                                      */
    int64_t shape[ST_MAX_DIMS];
    uint64_t begin, end;        /* byte offsets in the data section                    */
    const uint8_t *data;        /* NULL when parsed from a buffer without data         */
    int file_index;             /* which shard of a checkpoint holds it                */
    int gguf_qtype;             /* GGUF view only (model/gguf_checkpoint.h): 1 + the
                                 * facet_qtype of a tensor kept in its GGUF block type
                                 * (data: rows of blocks, end - begin bytes; dtype F32 is
                                 * what it widens to); 0 for every other tensor          */
} st_tensor;

/* One parsed safetensors file. */
typedef struct st_file {
    char *path;                 /* owned copy of the path (or the `what` name)        */
    void *map;                  /* mmap of the whole file, or NULL                    */
    size_t map_size;
    uint64_t header_len;        /* N                                                  */
    size_t n_tensors;
    st_tensor *tensors;         /* owned, in header order                             */
} st_file;

/* Name of a dtype as the format spells it ("F32", "BF16", "F8_E4M3", ...). */
const char *st_dtype_name(st_dtype dt);

/* Bytes per element, or 0 for sub-byte types (F4, F6_*). */
size_t st_dtype_size(st_dtype dt);

/*
 * Parse and validate a safetensors file held in memory: `buf` is the whole file
 * (`size` bytes), `what` names it in messages. No I/O; this is the fuzz target's entry.
 * On success *out owns its tensors; their `data` point into buf. Release with
 * st_file_close (which does not free buf when map is NULL).
 */
facet_status st_parse(const uint8_t *buf, size_t size, const char *what, st_file *out,
                      facet_error *err);

/* mmap `path` read-only and st_parse it. Errors: FACET_E_IO, or st_parse's. */
facet_status st_open(const char *path, st_file *out, facet_error *err);

/* Unmap and free a file's contents (the struct itself is the caller's). */
void st_file_close(st_file *f);

/* Find a tensor by name in one file; NULL if absent. */
const st_tensor *st_file_find(const st_file *f, const char *name);

/*
 * A checkpoint folder: model.safetensors, or the shards listed by
 * model.safetensors.index.json ({"weight_map": {"TENSOR": "SHARD-FILE", ...}}). Every
 * weight_map entry must name an existing shard (FACET_E_NOT_FOUND naming the shard and
 * the tensor) that holds that tensor (FACET_E_NOT_FOUND naming both); a tensor present in
 * two shards is FACET_E_FORMAT. Shard names must be plain file names inside the folder
 * (no '/' and no "..").
 */
typedef struct st_checkpoint {
    size_t n_files;
    st_file *files;
    size_t n_tensors;           /* all tensors of all shards                          */
    const st_tensor **by_name;  /* sorted by name, for st_checkpoint_find              */
} st_checkpoint;

/* Open the checkpoint in `dir`. Errors: FACET_E_IO (no model.safetensors and no index),
 * FACET_E_PARSE (index not JSON), FACET_E_FORMAT / FACET_E_NOT_FOUND as above. */
facet_status st_checkpoint_open(const char *dir, st_checkpoint *out, facet_error *err);

/* Release everything a checkpoint owns. */
void st_checkpoint_close(st_checkpoint *ck);

/* Find a tensor by name across all shards (binary search); NULL if absent. */
const st_tensor *st_checkpoint_find(const st_checkpoint *ck, const char *name);

/* Number of elements of a tensor (product of its shape; 1 for a scalar). */
uint64_t st_tensor_numel(const st_tensor *t);

/*
 * Convert tensor `t` to float32 into `dst` (numel floats, caller-owned). F32 copies,
 * F16, BF16 and F8_E4M3 widen exactly (F8_E4M3: the raw values, before any block
 * scale). Other dtypes: FACET_E_UNSUPPORTED naming the tensor and its dtype
 * ("model.layers.0.mlp.up_proj.weight has dtype I8; readable: F32, F16, BF16, F8_E4M3").
 */
facet_status st_tensor_to_f32(const st_tensor *t, float *dst, facet_error *err);

/* IEEE half and bfloat16 to float32 (exact). */
float st_f16_to_f32(uint16_t h);
float st_bf16_to_f32(uint16_t b);
/* float8 e4m3fn (1 sign, 4 exponent bits of bias 7, 3 mantissa bits; no infinities). */
float st_f8e4m3_to_f32(uint8_t b);

#endif
