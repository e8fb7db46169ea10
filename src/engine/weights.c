/*
 * weights.c — read every tensor the facts call for, check its shape, convert weight
 * matrices to the run-time format (vectors stay float32). Which tensors, their names,
 * shapes and order come from the tensor table (model/tensors.h). The same walk takes the tensors from a
 * weight cache instead when one is given (weights_cache.c decides), so the shape checks
 * and the order of tensors are one code path for both.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/weights_check.h"
#include "engine/weights_load.h"
#include "io/safetensors.h"
#include "kernels/cpu/quant.h"
#include "model/tensors.h"
#include "model/weights_policy.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/vec.h"

/* entry kinds of the weight cache */
enum { KIND_VECTOR = 0, KIND_MATRIX = 1 };

_Static_assert(sizeof(facet_wtensor) <= WCACHE_META_MAX,
               "facet_wtensor no longer fits a weight cache entry's meta bytes");

/* A GGUF file is seen under Hugging Face names (model/gguf_checkpoint.c): for an error
 * about tensor `name` of such a view, " (blk.N.attn_q.weight in FILE)" names it as the
 * file does (`shape`: adding that GGUF's ne lists the shape reversed); "" for safetensors. */
static const char *gguf_named(const st_checkpoint *ck, const char *name, int shape, char *out,
                              size_t cap) {
    out[0] = '\0';
    const char *path = ck->n_files ? ck->files[0].path : NULL;
    size_t n = path ? strlen(path) : 0;
    if (n < 5 || strcmp(path + n - 5, ".gguf")) return out;
    long long layer = -1;
    const char *rest = name;
    if (!strncmp(name, "model.layers.", 13)) {
        char *end;
        layer = strtoll(name + 13, &end, 10);
        if (*end != '.') layer = -1;
        else rest = end + 1;
    } else if (!strncmp(name, "model.", 6)) {
        rest = name + 6;
    }
    for (size_t i = 0; i < facet_tensor_count; i++) {
        const facet_tensor_row *r = &facet_tensor_rows[i];
        int in_layer = r->root == FACET_TR_LAYER;
        const char *want = r->root == FACET_TR_TOP ? name : rest;
        if (!r->gguf || !r->name || strcmp(r->name, want) || in_layer != (layer >= 0)) continue;
        char blk[32] = "";
        if (in_layer) snprintf(blk, sizeof blk, "blk.%lld.", layer);
        snprintf(out, cap, " (%s%s%s%s%s in %s%s)", blk, r->gguf, r->gguf_post ? " or " : "",
                 r->gguf_post ? blk : "", r->gguf_post ? r->gguf_post : "", path,
                 shape ? ", whose ne lists the shape reversed" : "");
        return out;
    }
    snprintf(out, cap, " (in %s)", path);
    return out;
}

/* What a view's expected shapes come from: config.json, or a GGUF file's metadata. */
static const char *shape_source(const st_checkpoint *ck) {
    const char *path = ck->n_files ? ck->files[0].path : NULL;
    size_t n = path ? strlen(path) : 0;
    return n >= 5 && !strcmp(path + n - 5, ".gguf") ? "the GGUF metadata" : "config.json";
}

/* Check that tensor `name` exists with shape (d0) or (d0, d1) (d1 = 0 for 1-D), or
 * (d0, 1, d1) when conv3d (a depthwise conv1d weight). */
static facet_status find_tensor3(const st_checkpoint *ck, const char *name, int64_t d0,
                                 int64_t d1, int conv3d, const st_tensor **out, facet_error *err) {
    const st_tensor *t = *out = st_checkpoint_find(ck, name);
    char named[4400];
    if (!t)
        return facet_err(err, FACET_E_NOT_FOUND, "checkpoint: tensor '%s'%s is missing", name,
                         gguf_named(ck, name, 0, named, sizeof named));
    int want_ndim = conv3d ? 3 : d1 ? 2 : 1;
    int64_t last = t->ndim > 0 ? t->shape[t->ndim - 1] : 0;
    if (t->ndim != want_ndim || t->shape[0] != d0 || (conv3d && t->shape[1] != 1) ||
        (d1 && last != d1)) {
        char got[128] = "", want[64];
        size_t off = 0;
        for (int i = 0; i < t->ndim && off < sizeof got - 24; i++)
            off += (size_t)snprintf(got + off, sizeof got - off, "%s%lld", i ? ", " : "",
                                    (long long)t->shape[i]);
        if (conv3d)
            snprintf(want, sizeof want, "[%lld, 1, %lld]", (long long)d0, (long long)d1);
        else if (d1)
            snprintf(want, sizeof want, "[%lld, %lld]", (long long)d0, (long long)d1);
        else
            snprintf(want, sizeof want, "[%lld]", (long long)d0);
        return facet_err(err, FACET_E_FORMAT,
                         "checkpoint: tensor '%s'%s has shape [%s], expected %s from %s", name,
                         gguf_named(ck, name, 1, named, sizeof named), got, want, shape_source(ck));
    }
    return FACET_OK;
}

static facet_status find_tensor(const st_checkpoint *ck, const char *name, int64_t d0, int64_t d1,
                                const st_tensor **out, facet_error *err) {
    return find_tensor3(ck, name, d0, d1, 0, out, err);
}

/* Bytes of one row of a 2-D GGUF block tensor (its rows of blocks). */
static size_t block_row_bytes(const st_tensor *t) {
    return t->shape[0] > 0 ? (size_t)((t->end - t->begin) / (uint64_t)t->shape[0]) : 0;
}

/* A GGUF block tensor widened to float32 by its type's dequantizer, row by row (rows of
 * its last axis: a 3-D expert tensor has experts x rows of them). */
static facet_status dequant_blocks(const st_tensor *t, float *dst, facet_error *err) {
    const facet_qtype_traits *q = facet_qtype_traits_of((facet_qtype)(t->gguf_qtype - 1));
    int64_t cols = t->shape[t->ndim - 1], rows = cols > 0 ? st_tensor_numel(t) / cols : 0;
    if (!q || !t->data || cols % q->block || rows < 1)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "tensor '%s': cannot dequantize (rows of %lld elements)", t->name,
                         (long long)cols);
    size_t rb = (size_t)((t->end - t->begin) / (uint64_t)rows);
    for (int64_t r = 0; r < rows; r++) q->dequant_row(t->data + (size_t)r * rb, dst + r * cols, cols);
    return FACET_OK;
}

/* Read tensor `t` as a malloc'd float32 array. A float8 tensor is refused here: its
 * values mean something only with their block scales (read_mat_f32). */
static facet_status read_f32(const st_tensor *t, float **out, facet_error *err) {
    if (t->dtype == ST_F8_E4M3 && !t->gguf_qtype)
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "tensor '%s' is F8_E4M3 where facet reads float8 only as a 2-D weight "
                         "matrix with block scales (NAME_scale_inv)", t->name);
    size_t n = (size_t)st_tensor_numel(t);
    float *buf = malloc(n * sizeof(float));
    if (!buf) return facet_err(err, FACET_E_NOMEM, "cannot allocate %zu floats for '%s'", n, t->name);
    facet_status st = t->gguf_qtype ? dequant_blocks(t, buf, err) : st_tensor_to_f32(t, buf, err);
    if (st != FACET_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    return FACET_OK;
}

static void progress(wload *ld, const st_tensor *t) {
    ld->done += t->end - t->begin;
    /* its bytes are copied or converted by now: drop the file's pages, so a model about as
     * large as RAM does not hold its file and its run-time copy at once (peak RSS) */
    if (t->data) facet_map_release(t->data, (size_t)(t->end - t->begin));
    if (ld->progress) ld->progress(ld->user, "converting weights", ld->done, ld->total);
}

/* Note a converted tensor for the cache writer (recording on). A tensor the cache cannot
 * hold turns recording off with the reason in ld->uncacheable. */
static facet_status record(wload *ld, const char *name, int kind, const facet_wtensor *meta,
                           const void *data, uint64_t bytes, facet_error *err) {
    if (!ld->recording) return FACET_OK;
    if (strlen(name) >= WCACHE_NAME_MAX || (meta && meta->scales)) {
        snprintf(ld->uncacheable, sizeof ld->uncacheable, "tensor '%.200s' %s", name,
                 meta && meta->scales ? "keeps separate scales" : "has too long a name");
        ld->recording = 0;
        return FACET_OK;
    }
    if (facet_array_reserve(ld->rec, ld->cap_rec, ld->n_rec + 1))
        return facet_err(err, FACET_E_NOMEM, "weight cache list of %zu tensors", ld->n_rec + 1);
    wload_rec *r = &ld->rec[ld->n_rec++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->kind = (uint32_t)kind;
    if (meta) {
        r->meta = *meta;
        r->meta.data = NULL;
        r->meta.scales = NULL;
    }
    r->data = data;
    r->bytes = bytes;
    return FACET_OK;
}

/* The next cache entry, which must be `name` of `kind`. */
static facet_status next_entry(wload *ld, const char *name, int kind, const wcache_entry **out,
                               facet_error *err) {
    if (ld->next >= ld->cache->n_entries)
        return facet_err(err, FACET_E_FORMAT, "holds %u tensors, the checkpoint needs '%s' too",
                         ld->cache->n_entries, name);
    const wcache_entry *e = &ld->cache->entries[ld->next++];
    if (strcmp(e->name, name) || e->kind != (uint32_t)kind)
        return facet_err(err, FACET_E_FORMAT, "entry %zu is '%s', expected '%s'", ld->next - 1,
                         e->name, name);
    *out = e;
    return FACET_OK;
}

/* A float32 array of d0 (d1 0), d0 x d1 or (conv3d) d0 x 1 x d1 elements (norm weights,
 * biases, Mamba's A_log and conv1d weight), row-major. */
static facet_status load_vec(wload *ld, const char *name, int64_t d0, int64_t d1, int conv3d,
                             float **out, uint64_t *bytes, facet_error *err) {
    const st_tensor *t;
    int64_t n = d1 ? d0 * d1 : d0;
    facet_status st = find_tensor3(ld->ck, name, d0, d1, conv3d, &t, err);
    if (st != FACET_OK || ld->check_only) return st;
    if (ld->cache) {
        const wcache_entry *e = NULL;
        if ((st = next_entry(ld, name, KIND_VECTOR, &e, err)) != FACET_OK) return st;
        if (e->bytes != (uint64_t)n * sizeof(float))
            return facet_err(err, FACET_E_FORMAT, "'%s' holds %llu bytes, expected %llu", name,
                             (unsigned long long)e->bytes, (unsigned long long)n * sizeof(float));
        *out = (float *)(uintptr_t)e->data; /* read-only mapping: the engine never writes */
    } else {
        if ((st = read_f32(t, out, err)) != FACET_OK) return st;
        if ((st = record(ld, name, KIND_VECTOR, NULL, *out, (uint64_t)n * sizeof(float), err)))
            return st;
    }
    *bytes += (uint64_t)n * sizeof(float);
    progress(ld, t);
    return FACET_OK;
}

/* Take a matrix from the cache: the entry's meta is the tensor struct as the writer's
 * build left it (pointers cleared), the data lies in the mapping. */
static facet_status cached_mat(wload *ld, const char *name, int64_t rows, int64_t cols,
                               facet_wformat fmt, facet_wtensor *wt, facet_error *err) {
    const wcache_entry *e = NULL;
    facet_status st = next_entry(ld, name, KIND_MATRIX, &e, err);
    if (st != FACET_OK) return st;
    if (e->meta_len != sizeof *wt)
        return facet_err(err, FACET_E_FORMAT, "'%s' has %u meta bytes, expected %zu", name,
                         e->meta_len, sizeof *wt);
    memcpy(wt, e->meta, sizeof *wt);
    wt->data = (void *)(uintptr_t)e->data;
    wt->scales = NULL;
    if (wt->format != fmt || wt->rows != rows || wt->cols != cols ||
        facet_wtensor_bytes(wt) != e->bytes) {
        facet_status s = facet_err(err, FACET_E_FORMAT,
                                   "'%s' is a [%d, %d] %s matrix of %llu bytes, expected [%lld, %lld] %s",
                                   name, wt->rows, wt->cols, facet_wformat_name(wt->format),
                                   (unsigned long long)e->bytes, (long long)rows, (long long)cols,
                                   facet_wformat_name(fmt));
        memset(wt, 0, sizeof *wt);
        return s;
    }
    return FACET_OK;
}

/* Error `st` of converting tensor `name`, its message prefixed with the name (the values
 * that failed are in it); out of memory stays as it is. */
static facet_status name_tensor(const char *name, facet_status st, facet_error *err) {
    if (st == FACET_E_NOMEM) return st;
    char why[sizeof err->message];
    memcpy(why, err->message, sizeof why);
    why[sizeof why - 1] = 0;
    return facet_err(err, st, "tensor %s: %s", name, why);
}

/* The run-time format of matrix t: fmt (the walk's), or with native weights its own type
 * (a GGUF block type as stored; F16, BF16 as f16, bf16; anything else f32). */
static facet_wformat mat_format(const wload *ld, const st_tensor *t, facet_wformat fmt) {
    if (!ld->native) return fmt;
    if (t->gguf_qtype) return (facet_wformat)(FACET_WF_GGUF + t->gguf_qtype - 1);
    return t->dtype == ST_F16 ? FACET_WF_F16 : t->dtype == ST_BF16 ? FACET_WF_BF16 : FACET_WF_F32;
}

/* Convert a row-major float32 [rows, cols] buffer (taken over) into a run-time matrix of
 * format fmt. */
static facet_status convert_mat(wload *ld, const char *name, float *data, int64_t rows,
                                int64_t cols, facet_wformat fmt, facet_wtensor *wt,
                                facet_error *err) {
    wt->format = FACET_WF_F32;
    wt->rows = (int)rows;
    wt->cols = (int)cols;
    wt->data = data;
    wt->scales = NULL;
    facet_status st = facet_wtensor_convert(wt, fmt, err);
    if (st != FACET_OK) return name_tensor(name, st, err);
    return record(ld, name, KIND_MATRIX, wt, wt->data, facet_wtensor_bytes(wt), err);
}

/* Rows [r0, r0 + rows) of GGUF block tensor t kept in its block type (copied as stored), or
 * repacked exactly into facet's panels where that runs faster (facet_gguf_block_format). */
static facet_status block_mat(wload *ld, const char *name, const st_tensor *t, int64_t r0,
                              int64_t rows, int64_t cols, facet_wtensor *wt, facet_error *err) {
    facet_wformat f = mat_format(ld, t, ld->format), to = facet_gguf_block_format(f);
    const uint8_t *src = t->data + (size_t)r0 * block_row_bytes(t);
    facet_status st = to == f ? facet_wtensor_blocks(wt, f, (int)rows, (int)cols, src, ld->arena, err)
                              : facet_wtensor_repack_blocks(wt, f, to, (int)rows, (int)cols, src,
                                                            ld->arena, err);
    if (st != FACET_OK) return name_tensor(name, st, err);
    if (to == f && facet_gguf_kpanels()) facet_wtensor_kpanel(wt);
    return record(ld, name, KIND_MATRIX, wt, wt->data, facet_wtensor_bytes(wt), err);
}

/* Matrix t (rows x cols) as a malloc'd float32 array; a float8 e4m3 one (DeepSeek-V3's
 * FP8 release, facts fp8_block_rows/cols) times its float32 NAME_scale_inv, one scale
 * per block of fp8_block_rows x fp8_block_cols (the last blocks partial). */
static facet_status read_mat_f32(const wload *ld, const facet_facts *f, const st_tensor *t,
                                 int64_t rows, int64_t cols, float **out, facet_error *err) {
    if (t->dtype != ST_F8_E4M3 || t->gguf_qtype) return read_f32(t, out, err);
    int64_t br = f->fp8_block_rows, bc = f->fp8_block_cols;
    if (br <= 0 || bc <= 0)
        return facet_err(err, FACET_E_UNSUPPORTED, "tensor '%s' is F8_E4M3 but config.json has "
                         "no fp8 quantization_config with weight_block_size", t->name);
    char sname[300];
    snprintf(sname, sizeof sname, "%s_scale_inv", t->name);
    const st_tensor *st;
    int64_t nr = (rows + br - 1) / br, nc = (cols + bc - 1) / bc;
    facet_status s = find_tensor(ld->ck, sname, nr, nc, &st, err);
    if (s != FACET_OK) return s;
    float *scale = NULL, *w = malloc(sizeof(float) * (size_t)rows * (size_t)cols);
    if (!w) return facet_err(err, FACET_E_NOMEM, "cannot allocate '%s' as float32", t->name);
    if ((s = st_tensor_to_f32(t, w, err)) != FACET_OK || (s = read_f32(st, &scale, err)) != FACET_OK) {
        free(w);
        return s;
    }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) w[r * cols + c] *= scale[(r / br) * nc + c / bc];
    free(scale);
    *out = w;
    return FACET_OK;
}

/* Each row of a [rows][cols] divided by its L2 norm, as torch's F.normalize(w) (dim 1,
 * eps 1e-12: w / max(||w||, eps)); the norm and the quotient in float64, so the only
 * rounding is the float32 result's (Baichuan 2's NormHead, applied in eval). */
static void l2_normalize_rows(float *a, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        float *row = a + (size_t)r * (size_t)cols;
        double ss = 0.0;
        for (int64_t c = 0; c < cols; c++) ss += (double)row[c] * (double)row[c];
        double n = sqrt(ss);
        if (n < 1e-12) n = 1e-12;
        for (int64_t c = 0; c < cols; c++) row[c] = (float)((double)row[c] / n);
    }
}

/* A weight matrix of shape (rows, cols) in run-time format fmt (its rows L2-normalised
 * first when ld->l2_rows). */
static facet_status load_mat(wload *ld, const char *name, int64_t rows, int64_t cols,
                             facet_wformat fmt, facet_wtensor *wt, uint64_t *bytes,
                             facet_error *err) {
    const st_tensor *t;
    facet_status st = find_tensor(ld->ck, name, rows, cols, &t, err);
    if (st != FACET_OK || ld->check_only) return st;
    if (ld->cache) {
        st = cached_mat(ld, name, rows, cols, fmt, wt, err);
    } else if (ld->native && t->gguf_qtype) {
        if (ld->l2_rows)
            return facet_err(err, FACET_E_UNSUPPORTED, "'%s': its rows are L2-normalised at "
                             "load (NormHead), which a block-quantized tensor kept as stored "
                             "cannot be", name);
        st = block_mat(ld, name, t, 0, rows, cols, wt, err);
    } else {
        float *f = NULL;
        if ((st = read_mat_f32(ld, ld->facts, t, rows, cols, &f, err)) != FACET_OK) return st;
        if (ld->l2_rows) l2_normalize_rows(f, rows, cols);
        st = convert_mat(ld, name, f, rows, cols, mat_format(ld, t, fmt), wt, err);
    }
    if (st != FACET_OK) return st;
    *bytes += facet_wtensor_bytes(wt);
    progress(ld, t);
    return FACET_OK;
}

/* *a [r][c] (malloc'd) replaced by its transpose [c][r]; *a freed either way on error. */
static facet_status transpose_f32(float **a, int64_t r, int64_t c, const char *name,
                                  facet_error *err) {
    float *t = malloc(sizeof(float) * (size_t)r * (size_t)c);
    if (!t) {
        free(*a);
        *a = NULL;
        return facet_err(err, FACET_E_NOMEM, "cannot transpose '%s'", name);
    }
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++) t[(size_t)j * (size_t)r + (size_t)i] = (*a)[(size_t)i * (size_t)c + (size_t)j];
    free(*a);
    *a = t;
    return FACET_OK;
}

/* A matrix of (rows, cols) stored as GPT-2's Conv1D weight [cols, rows] (x @ W):
 * transposed at load, then as load_mat. */
static facet_status load_mat_conv1d(wload *ld, const char *name, int64_t rows, int64_t cols,
                                    facet_wformat fmt, facet_wtensor *wt, uint64_t *bytes,
                                    facet_error *err) {
    const st_tensor *t;
    facet_status st = find_tensor(ld->ck, name, cols, rows, &t, err);
    if (st != FACET_OK || ld->check_only) return st;
    if (ld->cache) {
        st = cached_mat(ld, name, rows, cols, fmt, wt, err);
    } else if (t->gguf_qtype) {
        return facet_err(err, FACET_E_UNSUPPORTED, "'%s': a Conv1D weight in a block format "
                         "is not supported", name);
    } else {
        float *f = NULL;
        if ((st = read_f32(t, &f, err)) != FACET_OK) return st;
        if ((st = transpose_f32(&f, cols, rows, name, err)) != FACET_OK) return st;
        st = convert_mat(ld, name, f, rows, cols, mat_format(ld, t, fmt), wt, err);
    }
    if (st != FACET_OK) return st;
    *bytes += facet_wtensor_bytes(wt);
    progress(ld, t);
    return FACET_OK;
}

/* Reorder the rows (of `cols` floats; cols 1 for a vector) of a fused tensor whose n
 * parts (parts[p] rows each) interleave in `groups` KV groups, group j holding
 * parts[0] / groups rows of part 0, then parts[1] / groups of part 1, ..., into
 * part-major order (NeoX query_key_value: one head per group, [q_h; k_h; v_h]; Falcon:
 * [q x g; k; v]). Every part must split evenly into the groups. */
static facet_status heads_to_parts(float *a, const int64_t *parts, int n, int64_t cols,
                                   int64_t groups, const char *name, facet_error *err) {
    int64_t rows = 0;
    for (int p = 0; p < n; p++) {
        if (parts[p] % groups)
            return facet_err(err, FACET_E_FORMAT, "'%s': part %d of %lld rows does not split "
                             "into %lld KV groups", name, p, (long long)parts[p],
                             (long long)groups);
        rows += parts[p];
    }
    size_t row = sizeof(float) * (size_t)cols;
    float *tmp = malloc(row * (size_t)rows);
    if (!tmp) return facet_err(err, FACET_E_NOMEM, "cannot reorder the rows of '%s'", name);
    int64_t src = 0;
    for (int64_t j = 0; j < groups; j++) {
        int64_t dst = 0;
        for (int p = 0; p < n; p++) {
            int64_t share = parts[p] / groups;
            memcpy(tmp + (size_t)((dst + j * share) * cols), a + (size_t)(src * cols),
                   row * (size_t)share);
            src += share;
            dst += parts[p];
        }
    }
    memcpy(a, tmp, row * (size_t)rows);
    free(tmp);
    return FACET_OK;
}

/* A fused vector (NeoX's query_key_value bias) split into n parts of parts[i] elements,
 * each a vector of its own ("NAME[r0:r1]" in the cache); hd > 0: the parts interleave
 * in hd KV groups (heads_to_parts). */
static facet_status load_split_vec(wload *ld, const char *name, const int64_t *parts, int n,
                                   int64_t hd, float ***out, uint64_t *bytes, facet_error *err) {
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += parts[i];
    const st_tensor *t;
    facet_status st = find_tensor(ld->ck, name, total, 0, &t, err);
    if (st != FACET_OK || ld->check_only) return st;
    float *fused = NULL;
    if (!ld->cache) {
        if ((st = read_f32(t, &fused, err)) != FACET_OK) return st;
        if (hd > 0 && (st = heads_to_parts(fused, parts, n, 1, hd, name, err)) != FACET_OK) {
            free(fused);
            return st;
        }
    }
    int64_t r0 = 0;
    for (int i = 0; i < n && st == FACET_OK; i++) {
        char part[300];
        snprintf(part, sizeof part, "%s[%lld:%lld]", name, (long long)r0, (long long)(r0 + parts[i]));
        size_t sz = sizeof(float) * (size_t)parts[i];
        if (ld->cache) {
            const wcache_entry *e = NULL;
            if ((st = next_entry(ld, part, KIND_VECTOR, &e, err)) != FACET_OK) break;
            if (e->bytes != sz) {
                st = facet_err(err, FACET_E_FORMAT, "'%s' holds %llu bytes, expected %zu", part,
                               (unsigned long long)e->bytes, sz);
                break;
            }
            *out[i] = (float *)(uintptr_t)e->data;
        } else {
            if (!(*out[i] = malloc(sz))) {
                st = facet_err(err, FACET_E_NOMEM, "cannot allocate a slice of '%s'", name);
                break;
            }
            memcpy(*out[i], fused + r0, sz);
            st = record(ld, part, KIND_VECTOR, NULL, *out[i], sz, err);
        }
        if (st == FACET_OK) *bytes += sz;
        r0 += parts[i];
    }
    free(fused);
    if (st == FACET_OK) progress(ld, t);
    return st;
}

/* A fused matrix (Phi-3's qkv_proj, gate_up_proj) split by rows into n parts of
 * parts[i] rows each, every part a matrix of its own ("NAME[r0:r1]" in the cache); hd > 0:
 * the parts interleave in hd KV groups (NeoX, Falcon; reordered first: heads_to_parts). */
static facet_status load_split(wload *ld, const char *name, const int64_t *parts, int n, int64_t cols,
                               int64_t hd, int conv1d, facet_wtensor **out, uint64_t *bytes,
                               facet_error *err) {
    int64_t rows = 0;
    for (int i = 0; i < n; i++) rows += parts[i];
    const st_tensor *t;
    facet_status st = conv1d ? find_tensor(ld->ck, name, cols, rows, &t, err) /* [in, out] */
                             : find_tensor(ld->ck, name, rows, cols, &t, err);
    if (st != FACET_OK || ld->check_only) return st;
    float *fused = NULL;
    int blocks = ld->native && t->gguf_qtype; /* parts sliced from the rows of blocks */
    if ((hd > 0 || conv1d) && blocks)
        return facet_err(err, FACET_E_UNSUPPORTED, "'%s': per-head or Conv1D fused rows in a "
                         "block format are not supported", name);
    if (!ld->cache && !blocks && (st = read_f32(t, &fused, err)) != FACET_OK) return st;
    if (fused && conv1d && (st = transpose_f32(&fused, cols, rows, name, err)) != FACET_OK)
        return st;
    if (fused && hd > 0 && (st = heads_to_parts(fused, parts, n, cols, hd, name, err)) != FACET_OK) {
        free(fused);
        return st;
    }
    int64_t r0 = 0;
    for (int i = 0; i < n && st == FACET_OK; i++) {
        char part[300];
        snprintf(part, sizeof part, "%s[%lld:%lld]", name, (long long)r0, (long long)(r0 + parts[i]));
        if (ld->cache) {
            st = cached_mat(ld, part, parts[i], cols, ld->format, out[i], err);
        } else if (blocks) {
            st = block_mat(ld, part, t, r0, parts[i], cols, out[i], err);
        } else {
            size_t count = (size_t)parts[i] * (size_t)cols;
            float *d = malloc(sizeof(float) * count);
            if (!d) st = facet_err(err, FACET_E_NOMEM, "cannot allocate a slice of '%s'", name);
            else {
                memcpy(d, fused + (size_t)r0 * (size_t)cols, sizeof(float) * count);
                st = convert_mat(ld, part, d, parts[i], cols, mat_format(ld, t, ld->format), out[i], err);
            }
        }
        if (st == FACET_OK) *bytes += facet_wtensor_bytes(out[i]);
        r0 += parts[i];
    }
    free(fused);
    if (st == FACET_OK) progress(ld, t);
    return st;
}

/* Row r of expert e's logical matrix (rows R = the parts' sum, cols C) out of its stored
 * slice S: S's row r, or its column r when the slice is W^T (x @ W, gpt-oss). */
static void expert_row(const float *S, int transposed, int64_t R, int64_t C, int64_t r, float *out) {
    if (!transposed) {
        memcpy(out, S + (size_t)r * (size_t)C, sizeof(float) * (size_t)C);
        return;
    }
    for (int64_t c = 0; c < C; c++) out[c] = S[(size_t)c * (size_t)R + (size_t)r];
}

/* A 3-D tensor of every expert's matrix of one kind ([E, d0, d1] as stored; [E, d1, d0]
 * holding W^T when transposed), each expert's d0 logical rows split into n parts of
 * parts[i] rows (following each other, or alternating when interleaved), part i going to
 * out[i][e] ("NAME[e][i]" in the cache). Matrices only; a vector row ([E, d0]) is
 * load_expert_vecs'. */
static facet_status load_experts3d(wload *ld, const facet_tensor_row *row, const char *name,
                                   int64_t E, const int64_t *parts, int n, int64_t d1,
                                   facet_wtensor *const *out, size_t stride, uint64_t *bytes,
                                   facet_error *err) {
    int64_t d0 = 0;
    for (int i = 0; i < n; i++) d0 += parts[i];
    int tr = row->transposed, il = row->interleaved;
    int64_t s0 = tr ? d1 : d0, s1 = tr ? d0 : d1; /* the stored slice's shape */
    const st_tensor *t = st_checkpoint_find(ld->ck, name);
    if (!t) return facet_err(err, FACET_E_NOT_FOUND, "checkpoint: tensor '%s' is missing", name);
    if (t->ndim != 3 || t->shape[0] != E || t->shape[1] != s0 || t->shape[2] != s1) {
        char got[128] = "";
        size_t off = 0;
        for (int i = 0; i < t->ndim && off < sizeof got - 24; i++)
            off += (size_t)snprintf(got + off, sizeof got - off, "%s%lld", i ? ", " : "",
                                    (long long)t->shape[i]);
        return facet_err(err, FACET_E_FORMAT,
                         "checkpoint: tensor '%s' has shape [%s], expected [%lld, %lld, %lld] "
                         "from config.json (experts, rows, columns)",
                         name, got, (long long)E, (long long)s0, (long long)s1);
    }
    if (ld->check_only) return FACET_OK;
    float *all = NULL;
    facet_status st = FACET_OK;
    /* GGUF block tensors with native weights: each slice kept in its blocks, rows of rb
     * bytes (the experts' rows one after another), or repacked exactly into facet's panels
     * where those run faster, as block_mat does for a 2-D matrix (Q4_0 -> q4, Q8_0 -> int8) */
    int blocks = ld->native && t->gguf_qtype && !tr && !il;
    size_t rb = blocks ? (size_t)((t->end - t->begin) / (uint64_t)(E * d0)) : 0;
    facet_wformat fmt = mat_format(ld, t, ld->format);
    facet_wformat to = blocks ? facet_gguf_block_format(fmt) : fmt;
    if (!ld->cache && !blocks && (st = read_f32(t, &all, err)) != FACET_OK) return st;
    for (int64_t e = 0; e < E && st == FACET_OK; e++) {
        int64_t r0 = 0;
        const float *S = all ? all + (size_t)e * (size_t)d0 * (size_t)d1 : NULL;
        for (int i = 0; i < n && st == FACET_OK; i++) {
            facet_wtensor *wt = (facet_wtensor *)((char *)out[i] + (size_t)e * stride);
            char part[300];
            if (il) snprintf(part, sizeof part, "%.200s[%lld][%d::%d]", name, (long long)e, i, n);
            else snprintf(part, sizeof part, "%.200s[%lld][%lld:%lld]", name, (long long)e,
                          (long long)r0, (long long)(r0 + parts[i]));
            if (ld->cache) {
                st = cached_mat(ld, part, parts[i], d1, fmt, wt, err);
            } else if (blocks) {
                const uint8_t *src = t->data + ((size_t)e * (size_t)d0 + (size_t)r0) * rb;
                st = to == fmt ? facet_wtensor_blocks(wt, fmt, (int)parts[i], (int)d1, src,
                                                      ld->arena, err)
                               : facet_wtensor_repack_blocks(wt, fmt, to, (int)parts[i], (int)d1,
                                                             src, ld->arena, err);
                if (st == FACET_OK && to == fmt && facet_gguf_kpanels()) facet_wtensor_kpanel(wt);
                if (st != FACET_OK) st = name_tensor(part, st, err);
                else st = record(ld, part, KIND_MATRIX, wt, wt->data, facet_wtensor_bytes(wt), err);
            } else {
                size_t count = (size_t)parts[i] * (size_t)d1;
                float *d = malloc(sizeof(float) * count);
                if (!d) st = facet_err(err, FACET_E_NOMEM, "cannot allocate a slice of '%s'", name);
                else {
                    for (int64_t r = 0; r < parts[i]; r++)
                        expert_row(S, tr, d0, d1, il ? r * n + i : r0 + r, d + (size_t)r * (size_t)d1);
                    st = convert_mat(ld, part, d, parts[i], d1, fmt, wt, err);
                }
            }
            if (st == FACET_OK) *bytes += facet_wtensor_bytes(wt);
            r0 += parts[i];
        }
    }
    free(all);
    if (st == FACET_OK) progress(ld, t);
    return st;
}

/* Shape check of an MXFP4 pair's tensor t: U8 with dims want[0..nd). */
static facet_status mx_shape(const st_tensor *t, const char *name, const int64_t *want, int nd,
                             facet_error *err) {
    if (!t) return facet_err(err, FACET_E_NOT_FOUND, "checkpoint: tensor '%s' is missing", name);
    int ok = t->dtype == ST_U8 && t->ndim == nd;
    for (int i = 0; ok && i < nd; i++) ok = t->shape[i] == want[i];
    if (ok) return FACET_OK;
    char got[128] = "", exp[96] = "";
    size_t off = 0, eo = 0;
    for (int i = 0; i < t->ndim && off < sizeof got - 24; i++)
        off += (size_t)snprintf(got + off, sizeof got - off, "%s%lld", i ? ", " : "",
                                (long long)t->shape[i]);
    for (int i = 0; i < nd && eo < sizeof exp - 24; i++)
        eo += (size_t)snprintf(exp + eo, sizeof exp - eo, "%s%lld", i ? ", " : "", (long long)want[i]);
    return facet_err(err, FACET_E_FORMAT,
                     "checkpoint: tensor '%s' is %s [%s], expected U8 [%s] (MXFP4: experts, "
                     "rows, blocks of 32 columns%s)", name, st_dtype_name(t->dtype), got, exp,
                     nd == 4 ? ", 16 bytes" : "");
}

/* gpt-oss's MXFP4 experts (facts experts_mxfp4): NAME_blocks [E, R, C/32, 16] and
 * NAME_scales [E, R, C/32], U8, where [R, C] is each expert's matrix in nn.Linear's layout
 * (rows = outputs; transformers' convert_moe_packed_tensors reads them as W^T after its
 * transpose). Block b of row r holds columns 32b..32b+31: byte j's low nibble is column
 * 32b + 2j, its high nibble 32b + 2j + 1, E2M1 codes; the scale byte is an E8M0 exponent,
 * w = e2m1 * 2^(scale - 127). Each expert's rows, split into n parts of parts[i] (gate, up
 * alternating when interleaved), are repacked without rounding into GGUF MXFP4 blocks
 * (quant.h: the same exponent byte, element j < 16 in qs[j]'s low nibble, j >= 16 in
 * qs[j - 16]'s high one: 2 x e2m1 * 2^(e - 128) is the same value), so the matmuls run
 * on the 4-bit blocks ("NAME_blocks[e][i::n]" in the cache). */
static facet_status load_experts_mxfp4(wload *ld, const facet_tensor_row *row, const char *name,
                                       int64_t E, const int64_t *parts, int n, int64_t C,
                                       facet_wtensor *const *out, size_t stride, uint64_t *bytes,
                                       facet_error *err) {
    int64_t R = 0;
    for (int i = 0; i < n; i++) R += parts[i];
    char bn[300], sn[300];
    snprintf(bn, sizeof bn, "%.200s_blocks", name);
    snprintf(sn, sizeof sn, "%.200s_scales", name);
    if (C % 32)
        return facet_err(err, FACET_E_FORMAT, "'%s': %lld columns, not a multiple of MXFP4's "
                         "block of 32", bn, (long long)C);
    const st_tensor *tb = st_checkpoint_find(ld->ck, bn), *ts = st_checkpoint_find(ld->ck, sn);
    const int64_t wb[4] = {E, R, C / 32, 16}, ws[3] = {E, R, C / 32};
    facet_status st = mx_shape(tb, bn, wb, 4, err);
    if (st == FACET_OK) st = mx_shape(ts, sn, ws, 3, err);
    if (st != FACET_OK || ld->check_only) return st;
    size_t nb = (size_t)(C / 32);
    for (int64_t e = 0; e < E && st == FACET_OK; e++) {
        int64_t r0 = 0;
        for (int i = 0; i < n && st == FACET_OK; i++) {
            facet_wtensor *wt = (facet_wtensor *)((char *)out[i] + (size_t)e * stride);
            char part[320];
            if (row->interleaved) snprintf(part, sizeof part, "%.200s[%lld][%d::%d]", bn, (long long)e, i, n);
            else snprintf(part, sizeof part, "%.200s[%lld][%lld:%lld]", bn, (long long)e,
                          (long long)r0, (long long)(r0 + parts[i]));
            if (ld->cache) {
                st = cached_mat(ld, part, parts[i], C, FACET_WF_GGUF_MXFP4, wt, err);
            } else {
                uint8_t *buf = malloc((size_t)parts[i] * nb * 17);
                if (!buf) {
                    st = facet_err(err, FACET_E_NOMEM, "cannot repack '%s'", part);
                    break;
                }
                for (int64_t r = 0; r < parts[i]; r++) {
                    int64_t sr = e * R + (row->interleaved ? r * n + i : r0 + r);
                    const uint8_t *src = tb->data + (size_t)sr * nb * 16;
                    const uint8_t *sc = ts->data + (size_t)sr * nb;
                    for (size_t b = 0; b < nb; b++) {
                        uint8_t *dst = buf + ((size_t)r * nb + b) * 17;
                        const uint8_t *q = src + b * 16;
                        dst[0] = sc[b];
                        for (int j = 0; j < 16; j++) { /* element j and j + 16 */
                            int lo = (q[j / 2] >> (4 * (j & 1))) & 15;
                            int hi = (q[(j + 16) / 2] >> (4 * (j & 1))) & 15;
                            dst[1 + j] = (uint8_t)(lo | hi << 4);
                        }
                    }
                }
                st = facet_wtensor_blocks(wt, FACET_WF_GGUF_MXFP4, (int)parts[i], (int)C, buf, ld->arena, err);
                free(buf);
                if (st != FACET_OK) st = name_tensor(part, st, err);
                else st = record(ld, part, KIND_MATRIX, wt, wt->data, facet_wtensor_bytes(wt), err);
            }
            if (st == FACET_OK) *bytes += facet_wtensor_bytes(wt);
            r0 += parts[i];
        }
    }
    if (st == FACET_OK) {
        progress(ld, tb);
        progress(ld, ts);
    }
    return st;
}

/* A 2-D tensor [E, d0] of every expert's vector of one kind (gpt-oss's biases), split
 * into n parts of parts[i] elements (following each other, or alternating when
 * interleaved), part i going to out[i][e] (float32, "NAME[e][i]" in the cache). */
static facet_status load_expert_vecs(wload *ld, const facet_tensor_row *row, const char *name,
                                     int64_t E, const int64_t *parts, int n, float **const *out,
                                     size_t stride, uint64_t *bytes, facet_error *err) {
    int64_t d0 = 0;
    for (int i = 0; i < n; i++) d0 += parts[i];
    const st_tensor *t;
    facet_status st = find_tensor(ld->ck, name, E, d0, &t, err);
    if (st != FACET_OK || ld->check_only) return st;
    float *all = NULL;
    if (!ld->cache && (st = read_f32(t, &all, err)) != FACET_OK) return st;
    for (int64_t e = 0; e < E && st == FACET_OK; e++) {
        int64_t r0 = 0;
        for (int i = 0; i < n && st == FACET_OK; i++) {
            float **dst = (float **)((char *)out[i] + (size_t)e * stride);
            char part[300];
            snprintf(part, sizeof part, "%.200s[%lld][%d]", name, (long long)e, i);
            uint64_t nb = (uint64_t)parts[i] * sizeof(float);
            if (ld->cache) {
                const wcache_entry *ce = NULL;
                st = next_entry(ld, part, KIND_VECTOR, &ce, err);
                if (st == FACET_OK && ce->bytes != nb)
                    st = facet_err(err, FACET_E_FORMAT, "'%s' holds %llu bytes, expected %llu",
                                   part, (unsigned long long)ce->bytes, (unsigned long long)nb);
                if (st == FACET_OK) *dst = (float *)(uintptr_t)ce->data;
            } else if (!(*dst = malloc(nb))) {
                st = facet_err(err, FACET_E_NOMEM, "cannot allocate a slice of '%s'", name);
            } else {
                for (int64_t k = 0; k < parts[i]; k++)
                    (*dst)[k] = all[(size_t)e * (size_t)d0 +
                                    (size_t)(row->interleaved ? k * n + i : r0 + k)];
                st = record(ld, part, KIND_VECTOR, NULL, *dst, nb, err);
            }
            if (st == FACET_OK) *bytes += nb;
            r0 += parts[i];
        }
    }
    free(all);
    if (st == FACET_OK) progress(ld, t);
    return st;
}

#define TRY(call)                                                           \
    do {                                                                    \
        facet_status s_ = (call);                                           \
        if (s_ != FACET_OK) return s_;                                      \
    } while (0)

/* Where each slot of the tensor table lands: a field of facet_layer_weights for LAYER
 * rows, of facet_weights for the others. A float32 vector field is a float *, a matrix
 * field a facet_wtensor (the row's `matrix` says which). */
static const size_t slot_field[FACET_TS_COUNT] = {
    [FACET_TS_EMBED_TOKENS] = offsetof(facet_weights, embed_tokens),
    [FACET_TS_INPUT_LAYERNORM] = offsetof(facet_layer_weights, input_layernorm),
    [FACET_TS_Q_PROJ] = offsetof(facet_layer_weights, q_proj),
    [FACET_TS_K_PROJ] = offsetof(facet_layer_weights, k_proj),
    [FACET_TS_V_PROJ] = offsetof(facet_layer_weights, v_proj),
    [FACET_TS_Q_BIAS] = offsetof(facet_layer_weights, q_bias),
    [FACET_TS_K_BIAS] = offsetof(facet_layer_weights, k_bias),
    [FACET_TS_V_BIAS] = offsetof(facet_layer_weights, v_bias),
    [FACET_TS_O_PROJ] = offsetof(facet_layer_weights, o_proj),
    [FACET_TS_O_BIAS] = offsetof(facet_layer_weights, o_bias),
    [FACET_TS_Q_NORM] = offsetof(facet_layer_weights, q_norm),
    [FACET_TS_K_NORM] = offsetof(facet_layer_weights, k_norm),
    [FACET_TS_POST_ATTENTION_LAYERNORM] = offsetof(facet_layer_weights, post_attention_layernorm),
    [FACET_TS_PRE_FEEDFORWARD_LAYERNORM] = offsetof(facet_layer_weights, pre_feedforward_layernorm),
    [FACET_TS_POST_FEEDFORWARD_LAYERNORM] =
        offsetof(facet_layer_weights, post_feedforward_layernorm),
    [FACET_TS_GATE_PROJ] = offsetof(facet_layer_weights, gate_proj),
    [FACET_TS_UP_PROJ] = offsetof(facet_layer_weights, up_proj),
    [FACET_TS_DOWN_PROJ] = offsetof(facet_layer_weights, down_proj),
    [FACET_TS_GATE_BIAS] = offsetof(facet_layer_weights, gate_bias),
    [FACET_TS_UP_BIAS] = offsetof(facet_layer_weights, up_bias),
    [FACET_TS_DOWN_BIAS] = offsetof(facet_layer_weights, down_bias),
    [FACET_TS_ROUTER] = offsetof(facet_layer_weights, router),
    [FACET_TS_EXPERT_GATE] = offsetof(facet_expert, gate),
    [FACET_TS_EXPERT_UP] = offsetof(facet_expert, up),
    [FACET_TS_EXPERT_DOWN] = offsetof(facet_expert, down),
    [FACET_TS_EXPERT_GATE_BIAS] = offsetof(facet_expert, gate_bias),
    [FACET_TS_EXPERT_UP_BIAS] = offsetof(facet_expert, up_bias),
    [FACET_TS_EXPERT_DOWN_BIAS] = offsetof(facet_expert, down_bias),
    [FACET_TS_SINKS] = offsetof(facet_layer_weights, sinks),
    [FACET_TS_ROUTER_BIAS] = offsetof(facet_layer_weights, router_bias),
    [FACET_TS_SHARED_GATE] = offsetof(facet_layer_weights, shared_gate),
    [FACET_TS_SHARED_UP] = offsetof(facet_layer_weights, shared_up),
    [FACET_TS_SHARED_DOWN] = offsetof(facet_layer_weights, shared_down),
    [FACET_TS_SHARED_EXPERT_GATE] = offsetof(facet_layer_weights, shared_expert_gate),
    [FACET_TS_SSM_IN_PROJ] = offsetof(facet_layer_weights, ssm_in_proj),
    [FACET_TS_SSM_CONV_W] = offsetof(facet_layer_weights, ssm_conv_w),
    [FACET_TS_SSM_CONV_B] = offsetof(facet_layer_weights, ssm_conv_b),
    [FACET_TS_SSM_X_PROJ] = offsetof(facet_layer_weights, ssm_x_proj),
    [FACET_TS_SSM_DT_PROJ] = offsetof(facet_layer_weights, ssm_dt_proj),
    [FACET_TS_SSM_DT_BIAS] = offsetof(facet_layer_weights, ssm_dt_bias),
    [FACET_TS_SSM_A_LOG] = offsetof(facet_layer_weights, ssm_a_log),
    [FACET_TS_SSM_D] = offsetof(facet_layer_weights, ssm_d),
    [FACET_TS_SSM_OUT_PROJ] = offsetof(facet_layer_weights, ssm_out_proj),
    [FACET_TS_SSM_GNORM] = offsetof(facet_layer_weights, ssm_gnorm),
    [FACET_TS_SSM_DT_NORM] = offsetof(facet_layer_weights, ssm_dt_norm),
    [FACET_TS_SSM_B_NORM] = offsetof(facet_layer_weights, ssm_b_norm),
    [FACET_TS_SSM_C_NORM] = offsetof(facet_layer_weights, ssm_c_norm),
    [FACET_TS_SSM_IN_BIAS] = offsetof(facet_layer_weights, ssm_in_bias),
    [FACET_TS_SSM_OUT_BIAS] = offsetof(facet_layer_weights, ssm_out_bias),
    [FACET_TS_SSM_BA] = offsetof(facet_layer_weights, ssm_ba),
    [FACET_TS_NORM] = offsetof(facet_weights, norm),
    [FACET_TS_NORM_BIAS] = offsetof(facet_weights, norm_bias),
    [FACET_TS_LM_HEAD_BIAS] = offsetof(facet_weights, lm_head_bias),
    [FACET_TS_POS_EMBED] = offsetof(facet_weights, pos_embed),
    [FACET_TS_EMBED_NORM] = offsetof(facet_weights, embed_norm),
    [FACET_TS_EMBED_NORM_BIAS] = offsetof(facet_weights, embed_norm_bias),
    [FACET_TS_INPUT_LAYERNORM_BIAS] = offsetof(facet_layer_weights, input_layernorm_bias),
    [FACET_TS_POST_ATTENTION_LAYERNORM_BIAS] =
        offsetof(facet_layer_weights, post_attention_layernorm_bias),
    [FACET_TS_LM_HEAD] = offsetof(facet_weights, lm_head),
    /* latent attention's q_proj / o_proj: other shapes, the same fields (freed once: a
     * freed matrix is cleared) */
    [FACET_TS_MLA_Q_PROJ] = offsetof(facet_layer_weights, q_proj),
    [FACET_TS_MLA_O_PROJ] = offsetof(facet_layer_weights, o_proj),
    [FACET_TS_Q_A_PROJ] = offsetof(facet_layer_weights, q_a_proj),
    [FACET_TS_Q_A_NORM] = offsetof(facet_layer_weights, q_a_norm),
    [FACET_TS_Q_B_PROJ] = offsetof(facet_layer_weights, q_b_proj),
    [FACET_TS_KV_A_PROJ] = offsetof(facet_layer_weights, kv_a_proj),
    [FACET_TS_KV_A_NORM] = offsetof(facet_layer_weights, kv_a_norm),
    [FACET_TS_KV_B_PROJ] = offsetof(facet_layer_weights, kv_b_proj),
    [FACET_TS_ROUTER_SCORE_BIAS] = offsetof(facet_layer_weights, router_score_bias),
};

static int expert_slot(facet_tslot s) {
    return s == FACET_TS_EXPERT_GATE || s == FACET_TS_EXPERT_UP || s == FACET_TS_EXPERT_DOWN ||
           s == FACET_TS_EXPERT_GATE_BIAS || s == FACET_TS_EXPERT_UP_BIAS ||
           s == FACET_TS_EXPERT_DOWN_BIAS;
}

/* The field of slot `s` (row root `root`): in layer L (expert 0's for the expert slots:
 * the next expert's is sizeof(facet_expert) further), or in w. */
static void *slot_ptr(facet_weights *w, facet_layer_weights *L, facet_troot root, facet_tslot s) {
    if (expert_slot(s)) return (char *)L->experts + slot_field[s];
    return (char *)(root == FACET_TR_LAYER ? (void *)L : (void *)w) + slot_field[s];
}

/* 1 when row r (of layer `layer`) belongs to another pipeline stage (wload's range). */
static int skip_row(const wload *ld, const facet_tensor_row *r, int64_t layer) {
    if (r->root == FACET_TR_LAYER) return layer < ld->layer_first || layer >= ld->layer_end;
    return ld->stage_inner;
}

/* Load row `r` (of layer `layer` for LAYER rows, L its weights) when the facts call for
 * it, counting its bytes into w->bytes. */
static facet_status load_row(wload *ld, const facet_facts *f, facet_weights *w,
                             facet_layer_weights *L, const facet_tensor_row *r, const char *prefix,
                             int64_t layer, facet_error *err) {
    if (!r->when || !r->when(f)) return FACET_OK;
    if (r->root == FACET_TR_LAYER && !facet_tensor_in_layer(r, f, layer)) return FACET_OK;
    if (!ld->check_only && skip_row(ld, r, layer)) return FACET_OK; /* another stage's */
    char name[256];
    facet_tensor_find(ld->ck, r, prefix, layer, name, sizeof name);
    int full = L ? L->qk_norm_full : 0;
    int64_t d0 = facet_tdim_value(r->dims[0], f, full), d1 = facet_tdim_value(r->dims[1], f, full);
    if (r->tail) { /* one matrix per expert */
        for (int64_t e = 0; e < f->num_experts; e++) {
            facet_tensor_find_expert(ld->ck, r, prefix, layer, e, name, sizeof name);
            facet_wtensor *dst = (facet_wtensor *)((char *)slot_ptr(w, L, r->root, r->slot) +
                                                   (size_t)e * sizeof(facet_expert));
            TRY(load_mat(ld, name, d0, d1, ld->format, dst, &w->bytes, err));
        }
        return FACET_OK;
    }
    if (r->experts3d) { /* [E, d0, d1]: each expert's slice split into its parts */
        int64_t parts[FACET_TENSOR_SPLIT_MAX];
        void *outs[FACET_TENSOR_SPLIT_MAX];
        for (int p = 0; p < r->n_split; p++) {
            /* a vector row's parts are equal (their slots have no row of their own) */
            parts[p] = r->matrix ? facet_tdim_value(facet_tensor_slot(r->split[p])->dims[0], f, full)
                                 : d0 / r->n_split;
            outs[p] = slot_ptr(w, L, r->root, r->split[p]);
        }
        if (!r->matrix)
            return load_expert_vecs(ld, r, name, f->num_experts, parts, r->n_split,
                                    (float **const *)outs, sizeof(facet_expert), &w->bytes, err);
        if (f->experts_mxfp4)
            return load_experts_mxfp4(ld, r, name, f->num_experts, parts, r->n_split,
                                      r->transposed ? d0 : d1, (facet_wtensor *const *)outs,
                                      sizeof(facet_expert), &w->bytes, err);
        return load_experts3d(ld, r, name, f->num_experts, parts, r->n_split,
                              r->transposed ? d0 : d1, (facet_wtensor *const *)outs,
                              sizeof(facet_expert), &w->bytes, err);
    }
    if (r->slot == FACET_TS_FUSED) { /* split by rows into its parts' slots */
        int64_t parts[FACET_TENSOR_SPLIT_MAX];
        facet_wtensor *outs[FACET_TENSOR_SPLIT_MAX];
        float **vouts[FACET_TENSOR_SPLIT_MAX];
        for (int p = 0; p < r->n_split; p++) {
            const facet_tensor_row *part = facet_tensor_slot(r->split[p]);
            parts[p] = facet_tdim_value(part->dims[0], f, full);
            outs[p] = slot_ptr(w, L, part->root, r->split[p]);
            vouts[p] = slot_ptr(w, L, part->root, r->split[p]);
        }
        int64_t hd = r->heads_interleaved ? f->num_key_value_heads : 0; /* KV groups */
        if (!r->matrix) return load_split_vec(ld, name, parts, r->n_split, hd, vouts, &w->bytes, err);
        return load_split(ld, name, parts, r->n_split, d1, hd, r->conv1d, outs, &w->bytes, err);
    }
    void *dst = slot_ptr(w, L, r->root, r->slot);
    /* the output projection (lm_head, or the embedding that serves as it when tied) in
     * its own format (facet_wformat_output) */
    int output = r->slot == FACET_TS_LM_HEAD || (r->slot == FACET_TS_EMBED_TOKENS && !f->has_lm_head);
    facet_wformat fmt = output ? facet_wformat_output(ld->format, d1) : ld->format;
    /* the router stays float32: its ranking picks the experts, and a rounded score flips
     * the choice where two experts are close (E x H floats per layer) */
    if (r->slot == FACET_TS_ROUTER) fmt = FACET_WF_F32;
    if (r->matrix && r->conv1d) return load_mat_conv1d(ld, name, d0, d1, fmt, dst, &w->bytes, err);
    if (r->matrix && r->slot == FACET_TS_LM_HEAD && f->lm_head_l2_norm) { /* NormHead */
        ld->l2_rows = 1;
        facet_status st = load_mat(ld, name, d0, d1, fmt, dst, &w->bytes, err);
        ld->l2_rows = 0;
        return st;
    }
    if (r->matrix) return load_mat(ld, name, d0, d1, fmt, dst, &w->bytes, err);
    return load_vec(ld, name, d0, d1, r->conv3d, dst, &w->bytes, err);
}

facet_status facet_weights_walk(facet_model *m, wload *ld, facet_error *err) {
    const facet_facts *f = &m->facts;
    ld->facts = f;
    facet_weights *w = &m->w;
    char prefix[64] = "model."; /* the probe refused a checkpoint without one */
    facet_tensor_prefix(ld->ck, prefix, sizeof prefix);

    ld->arena = &w->arena;
    w->layers = calloc((size_t)f->num_hidden_layers, sizeof *w->layers);
    if (!w->layers) return facet_err(err, FACET_E_NOMEM, "layer table");

    /* the table's order: rows before the layers, each layer's rows, the rest */
    for (size_t i = 0; i < facet_tensor_count;) {
        if (facet_tensor_rows[i].root != FACET_TR_LAYER) {
            TRY(load_row(ld, f, w, NULL, &facet_tensor_rows[i], prefix, 0, err));
            i++;
            continue;
        }
        size_t end = i;
        while (end < facet_tensor_count && facet_tensor_rows[end].root == FACET_TR_LAYER) end++;
        for (int64_t l = 0; l < f->num_hidden_layers; l++) {
            facet_layer_weights *L = &w->layers[l];
            if (f->layer_sparse[l] && f->num_experts > 0) {
                L->experts = calloc((size_t)f->num_experts, sizeof *L->experts);
                if (!L->experts) return facet_err(err, FACET_E_NOMEM, "expert table");
            }
            /* the norm's length says its scope: one head, or the whole projection */
            if (f->qk_norm) L->qk_norm_full = facet_tensor_qk_norm_full(ld->ck, f, prefix, l);
            for (size_t k = i; k < end; k++)
                TRY(load_row(ld, f, w, L, &facet_tensor_rows[k], prefix, l, err));
            /* a tensor rank keeps its share, before the next layer loads */
            if (ld->tp > 1 && !ld->check_only && !ld->cache && l >= ld->layer_first &&
                l < ld->layer_end)
                TRY(facet_weights_tp_slice(m, (int)l, ld->tp, ld->tp_rank, err));
        }
        i = end;
    }
    if (f->has_lm_head) {
        w->lm_head_tied = 0;
    } else {
        w->lm_head = w->embed_tokens; /* same data: freed once */
        w->lm_head_tied = 1;
    }
    if (ld->cache && ld->next != ld->cache->n_entries)
        return facet_err(err, FACET_E_FORMAT, "holds %u tensors, the checkpoint %zu",
                         ld->cache->n_entries, ld->next);
    return FACET_OK;
}

facet_status facet_weights_check(const facet_facts *f, const st_checkpoint *ck, facet_error *err) {
    facet_model *m = calloc(1, sizeof *m);
    if (!m) return facet_err(err, FACET_E_NOMEM, "cannot allocate the tensor check");
    m->facts = *f;
    wload ld = {.ck = ck, .check_only = 1};
    facet_status st = facet_weights_walk(m, &ld, err);
    for (int64_t l = 0; m->w.layers && l < f->num_hidden_layers; l++) free(m->w.layers[l].experts);
    free(m->w.layers); /* a check walk fills no tensor */
    free(m);
    return st;
}

/* t's memory, unless it lies in arena a (freed with it) */
static void wtensor_free(const facet_warena *a, facet_wtensor *t) {
    if (!facet_warena_owns(a, t->data)) free(t->data);
    free(t->scales);
    t->data = NULL;
    t->scales = NULL;
}

void facet_weights_free(facet_model *m) {
    facet_weights *w = &m->w;
    if (w->cache) { /* every tensor lies in the cache's mapping */
        wcache_close(w->cache);
        free(w->cache);
        for (int64_t l = 0; w->layers && l < m->facts.num_hidden_layers; l++) {
            free(w->layers[l].experts);
            free(w->layers[l].kv_b_f32); /* derived at load, never in the cache */
        }
        free(w->layers);
        facet_warena_free(&w->arena);
        memset(w, 0, sizeof *w);
        return;
    }
    if (w->layers) {
        for (int64_t l = 0; l < m->facts.num_hidden_layers; l++) {
            facet_layer_weights *L = &w->layers[l];
            /* by slot, not row: several rows (a layout's spellings) may fill one slot */
            for (int s = 0; s < FACET_TS_COUNT; s++) {
                if (expert_slot((facet_tslot)s)) continue; /* below */
                const facet_tensor_row *r = facet_tensor_slot((facet_tslot)s);
                if (!r || r->root != FACET_TR_LAYER) continue;
                void *p = slot_ptr(w, L, r->root, (facet_tslot)s);
                if (r->matrix) wtensor_free(&w->arena, p);
                else free(*(float **)p);
            }
            for (int64_t e = 0; L->experts && e < m->facts.num_experts; e++) {
                wtensor_free(&w->arena, &L->experts[e].gate);
                wtensor_free(&w->arena, &L->experts[e].up);
                wtensor_free(&w->arena, &L->experts[e].down);
                free(L->experts[e].gate_bias);
                free(L->experts[e].up_bias);
                free(L->experts[e].down_bias);
            }
            free(L->experts);
            free(L->kv_b_f32);
        }
        free(w->layers);
    }
    if (!w->lm_head_tied) wtensor_free(&w->arena, &w->lm_head);
    wtensor_free(&w->arena, &w->embed_tokens);
    free(w->norm);
    free(w->norm_bias);
    free(w->lm_head_bias);
    wtensor_free(&w->arena, &w->pos_embed);
    free(w->embed_norm);
    free(w->embed_norm_bias);
    facet_warena_free(&w->arena);
    memset(w, 0, sizeof *w);
}
