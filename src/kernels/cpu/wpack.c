/*
 * wpack.c — converting a loaded float32 weight matrix into a packed run-time format
 * (layouts in matmul_internal.h), its memory (2 MiB-aligned, transparent huge pages
 * asked for with madvise: streaming weights reads about twice as fast on huge pages),
 * and reading rows back (embedding lookup).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/matmul_internal.h"
#include "kernels/cpu/quant.h"
#include "kernels/cpu/quant_kpanel.h"
#include "util/error.h"

#define HUGE_PAGE (2u << 20)

uint16_t facet_f32_to_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float facet_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* round-to-nearest-even shift right of m by s (1 <= s < 32) */
static uint32_t shr_rne(uint32_t m, int s) {
    uint32_t h = m >> s, rem = m & ((1u << s) - 1), half = 1u << (s - 1);
    if (rem > half || (rem == half && (h & 1u))) h++;
    return h;
}

uint16_t facet_f32_to_f16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u;        /* NaN                                */
    if (a >= 0x477ff000u) return sign | 0x7c00u;       /* >= 65520 rounds to infinity        */
    if (a >= 0x38800000u)                              /* normal: rebias 127 -> 15           */
        return sign | (uint16_t)shr_rne(a - 0x38000000u, 13);
    int e = (int)(a >> 23);                            /* subnormal f16: m * 2^-24           */
    if (e < 102) return sign;                          /* below 2^-25: rounds to zero        */
    uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    return sign | (uint16_t)shr_rne(mant, 126 - e);
}

float facet_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
    if (e == 0x1f) u = sign | 0x7f800000u | (m << 13);
    else if (e) u = sign | ((e + 112u) << 23) | (m << 13);
    else {
        float f = (float)m * 0x1p-24f;
        memcpy(&u, &f, 4);
        u |= sign;
    }
    float x;
    memcpy(&x, &u, 4);
    return x;
}

int facet_packed_kp(int cols) { return (cols + FACET_KALIGN - 1) / FACET_KALIGN * FACET_KALIGN; }

size_t facet_panel_bytes(facet_wformat f, int kp) {
    switch (f) {
    case FACET_WF_F32: return (size_t)kp * FACET_PANEL * 4;
    case FACET_WF_BF16:
    case FACET_WF_F16: return (size_t)kp * FACET_PANEL * 2;
    case FACET_WF_Q8: return (size_t)(kp / FACET_Q8_BLOCK) * FACET_Q8_PBLOCK;
    case FACET_WF_Q4: return (size_t)(kp / FACET_Q8_BLOCK) * FACET_Q4_PBLOCK;
    default: return 0; /* GGUF block formats have no panels */
    }
}

/* Panels of FACET_PANEL rows times KALIGN-column slices of facet_panel_bytes each (a
 * panel's bytes are linear in kp, a multiple of FACET_KALIGN): the one size formula,
 * for the allocation (packed_bytes) and for `facet plan` (through the backend). */
uint64_t facet_wtensor_packed_bytes(facet_wformat f, uint64_t rows, uint64_t cols) {
    int qt = facet_wformat_qtype(f);
    if (qt >= 0) { /* rows of blocks */
        const facet_qtype_traits *q = facet_qtype_traits_of((facet_qtype)qt);
        uint64_t per_row = (cols + (uint64_t)q->block - 1) / (uint64_t)q->block;
        if (rows && per_row > UINT64_MAX / rows) return UINT64_MAX;
        uint64_t n = rows * per_row;
        return n && q->block_bytes > UINT64_MAX / n ? UINT64_MAX : n * q->block_bytes;
    }
    uint64_t panels = (rows + FACET_PANEL - 1) / FACET_PANEL;
    uint64_t slices = (cols + FACET_KALIGN - 1) / FACET_KALIGN;
    uint64_t per = facet_panel_bytes(f, FACET_KALIGN);
    if (panels && slices > UINT64_MAX / panels) return UINT64_MAX; /* saturates, never wraps */
    uint64_t n = panels * slices;
    return n && per > UINT64_MAX / n ? UINT64_MAX : n * per;
}

static size_t packed_bytes(facet_wformat f, int rows, int cols) {
    return (size_t)facet_wtensor_packed_bytes(f, (uint64_t)rows, (uint64_t)cols);
}

/* Zeroed memory for a packed tensor; huge-page backed when it spans one. free() frees.
 * Only the whole huge pages inside the tensor are advised huge and only its bytes are
 * written: the tail past the last whole huge page stays in 4 KiB pages, so a matrix
 * holds its own bytes, not its size rounded up to 2 MiB (a 7 MiB FFN matrix held 8 MiB;
 * 241 MB of bf16 weights held 24 MiB more than the plan counts, issue 21). */
static void *weight_alloc(size_t bytes) {
    void *p = NULL;
    if (bytes >= HUGE_PAGE) {
        size_t n = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        if (posix_memalign(&p, HUGE_PAGE, n) != 0) return NULL;
#ifdef MADV_HUGEPAGE
        madvise(p, bytes / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE); /* advisory: failure
                                                                   only costs speed */
#endif
        memset(p, 0, bytes);
    } else {
        if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) return NULL;
        memset(p, 0, bytes ? bytes : 64);
    }
    return p;
}

/* Arena chunks: 32 MiB; a piece that does not fit the open chunk's rest and is larger
 * than half a chunk gets a chunk of its own size (rounded up to huge pages), leaving the
 * open one open. Only the pieces handed out are written, so the resident
 * memory is what the matrices take plus at most one partly used huge page per chunk. */
#define ARENA_CHUNK (32u << 20)

void *facet_warena_alloc(facet_warena *a, size_t bytes) {
    size_t need = (bytes + 63) & ~(size_t)63;
    if (!need) need = 64;
    if (need > a->left) {
        int own = need > ARENA_CHUNK / 2;
        size_t n = own ? (need + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE : ARENA_CHUNK;
        if (a->n_chunks == a->cap) {
            size_t cap = a->cap ? 2 * a->cap : 16;
            facet_warena_chunk *c = realloc(a->chunk, cap * sizeof *c);
            if (!c) return NULL;
            a->chunk = c;
            a->cap = cap;
        }
        void *p = NULL;
        if (posix_memalign(&p, HUGE_PAGE, n) != 0) return NULL;
#ifdef MADV_HUGEPAGE
        madvise(p, n, MADV_HUGEPAGE); /* advisory: failure only costs speed */
#endif
        a->chunk[a->n_chunks++] = (facet_warena_chunk){p, n};
        if (own) { /* a chunk of its own: the open one stays open */
            memset(p, 0, bytes);
            return p;
        }
        a->cur = p;
        a->left = n;
    }
    void *p = a->cur;
    a->cur += need;
    a->left -= need;
    memset(p, 0, bytes);
    return p;
}

int facet_warena_owns(const facet_warena *a, const void *p) {
    uintptr_t u = (uintptr_t)p;
    for (size_t i = 0; i < a->n_chunks; i++) {
        uintptr_t c = (uintptr_t)a->chunk[i].p;
        if (u >= c && u - c < a->chunk[i].bytes) return 1;
    }
    return 0;
}

void facet_warena_free(facet_warena *a) {
    for (size_t i = 0; i < a->n_chunks; i++) free(a->chunk[i].p);
    free(a->chunk);
    memset(a, 0, sizeof *a);
}

/* q8: one block of 32 input values (padded with zeros) of one output row. */
static facet_status q8_block(const float *w, int n, uint8_t *q, int q_stride, uint16_t *scale,
                             facet_error *err) {
    float amax = 0.0f;
    for (int i = 0; i < n; i++) {
        float a = fabsf(w[i]);
        if (!(a <= amax)) amax = a; /* NaN propagates into amax */
    }
    if (!isfinite(amax) || amax / 127.0f > 65504.0f)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "int8 weights: a block's max |w| = %g has no finite f16 scale "
                         "(needs a finite value <= %g)", (double)amax, 65504.0 * 127.0);
    uint16_t h = facet_f32_to_f16(amax / 127.0f);
    float d = facet_f16_to_f32(h);
    *scale = h;
    for (int i = 0; i < FACET_Q8_BLOCK; i++) {
        int v = 0;
        if (i < n && d > 0.0f) {
            float r = nearbyintf(w[i] / d);
            v = r > 127.0f ? 127 : r < -127.0f ? -127 : (int)r;
        }
        q[(size_t)(i / 4) * q_stride + (i % 4)] = (uint8_t)(v + 128);
    }
    return FACET_OK;
}

/* q4: one block of 32 input values (padded with zeros) of lane l, into its panel block
 * (the codes' nibbles and its f16 scale; padding values get code 8, a zero weight). */
static facet_status q4_block(const float *w, int n, uint8_t *blk, int l, facet_error *err) {
    uint8_t q[32];
    uint16_t h;
    if (facet_q4_quantize_block(w, n, q, &h) != 0) {
        float amax = 0.0f;
        for (int i = 0; i < n; i++)
            if (!(fabsf(w[i]) <= amax)) amax = fabsf(w[i]); /* NaN propagates into amax */
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "q4 weights: a block's max |w| = %g has no finite f16 scale "
                         "(needs a finite value <= %g)", (double)amax, 7.0 * 65504.0);
    }
    for (int k = 0; k < 16; k++)
        blk[(k / 4) * 64 + l * 4 + k % 4] = (uint8_t)(q[k] | q[k + 16] << 4);
    memcpy(blk + FACET_Q8_BLOCK * FACET_PANEL / 2 + l * 2, &h, 2);
    return FACET_OK;
}

static facet_status pack(const float *src, int rows, int cols, facet_wformat f, uint8_t *dst,
                         facet_error *err) {
    int kp = facet_packed_kp(cols);
    size_t pb = facet_panel_bytes(f, kp);
    for (int o = 0; o < rows; o++) {
        uint8_t *panel = dst + (size_t)(o / FACET_PANEL) * pb;
        int l = o % FACET_PANEL;
        const float *w = src + (size_t)o * cols;
        switch (f) {
        case FACET_WF_F32:
            for (int k = 0; k < cols; k++) ((float *)panel)[(size_t)k * FACET_PANEL + l] = w[k];
            break;
        case FACET_WF_F16:
            for (int k = 0; k < cols; k++)
                ((uint16_t *)panel)[(size_t)k * FACET_PANEL + l] = facet_f32_to_f16(w[k]);
            break;
        case FACET_WF_BF16:
            for (int k = 0; k < cols; k++)
                ((uint16_t *)panel)[((size_t)(k / 2) * FACET_PANEL + l) * 2 + k % 2] =
                    facet_f32_to_bf16(w[k]);
            break;
        default: /* facet_wtensor_convert packs only facet's own formats */
            return facet_err(err, FACET_E_UNSUPPORTED, "weights: cannot pack into %s",
                             facet_wformat_name(f));
        case FACET_WF_Q8:
            for (int b = 0; b < kp / FACET_Q8_BLOCK; b++) {
                uint8_t *blk = panel + (size_t)b * FACET_Q8_PBLOCK;
                int k0 = b * FACET_Q8_BLOCK, n = cols - k0 < FACET_Q8_BLOCK ? cols - k0 : FACET_Q8_BLOCK;
                uint16_t h = 0;
                facet_status st = q8_block(w + k0, n, blk + l * 4, FACET_PANEL * 4, &h, err);
                if (st != FACET_OK) return st;
                memcpy(blk + FACET_Q8_BLOCK * FACET_PANEL + l * 2, &h, 2);
            }
            break;
        case FACET_WF_Q4: /* padding rows stay zero bytes: d = 0, a zero weight */
            for (int b = 0; b < kp / FACET_Q8_BLOCK; b++) {
                int k0 = b * FACET_Q8_BLOCK, n = cols - k0 < FACET_Q8_BLOCK ? cols - k0 : FACET_Q8_BLOCK;
                facet_status st = q4_block(w + k0, n, panel + (size_t)b * FACET_Q4_PBLOCK, l, err);
                if (st != FACET_OK) return st;
            }
            break;
        }
    }
    /* q8 padding rows: 0 is stored as 128 */
    if (f == FACET_WF_Q8 && rows % FACET_PANEL)
        for (int o = rows; o < (rows + FACET_PANEL - 1) / FACET_PANEL * FACET_PANEL; o++) {
            uint8_t *panel = dst + (size_t)(o / FACET_PANEL) * pb;
            for (int b = 0; b < kp / FACET_Q8_BLOCK; b++)
                for (int i = 0; i < FACET_Q8_BLOCK; i++)
                    panel[(size_t)b * FACET_Q8_PBLOCK + (size_t)(i / 4) * FACET_PANEL * 4 +
                          (o % FACET_PANEL) * 4 + i % 4] = 128;
        }
    /* q8 padding columns of real rows were written as 128 by q8_block */
    return FACET_OK;
}

facet_status facet_wtensor_convert(facet_wtensor *w, facet_wformat to, facet_error *err) {
    if (w->packed) {
        if (w->format == to) return FACET_OK;
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "weights: a tensor already packed as %s cannot be repacked as %s",
                         facet_wformat_name(w->format), facet_wformat_name(to));
    }
    if (w->format != FACET_WF_F32)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "weights: conversion input must be row-major f32, got %s",
                         facet_wformat_name(w->format));
    if (to != FACET_WF_F32 && to != FACET_WF_BF16 && to != FACET_WF_F16 && to != FACET_WF_Q8 &&
        to != FACET_WF_Q4 && to != FACET_WF_GGUF_Q6_K)
        return facet_err(err, FACET_E_UNSUPPORTED, "weights format %d is not built into this version",
                         (int)to);
    if (to == FACET_WF_GGUF_Q6_K && w->cols % 256)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "weights: a [%d, %d] matrix cannot be held in Q6_K blocks (rows of a "
                         "multiple of 256 elements)", w->rows, w->cols);
    if (w->rows <= 0 || w->cols <= 0)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "weights: matrix shape [%d, %d] is empty",
                         w->rows, w->cols);
    size_t bytes = packed_bytes(to, w->rows, w->cols);
    uint8_t *dst = weight_alloc(bytes);
    if (!dst)
        return facet_err(err, FACET_E_NOMEM, "weights: cannot allocate %zu bytes for a [%d, %d] %s matrix",
                         bytes, w->rows, w->cols, facet_wformat_name(to));
    facet_status st = FACET_OK;
    if (to == FACET_WF_GGUF_Q6_K) { /* facet's own Q6_K quantizer, row by row */
        size_t rb = (size_t)(w->cols / 256) * facet_qt_q6_K.block_bytes;
        const float *src = w->data;
        for (int r = 0; r < w->rows; r++) {
            for (int c = 0; c < w->cols; c++)
                if (!isfinite(src[(size_t)r * w->cols + c])) {
                    st = facet_err(err, FACET_E_INVALID_ARGUMENT,
                                   "Q6_K weights: row %d column %d is %g (needs a finite value)", r, c,
                                   (double)src[(size_t)r * w->cols + c]);
                    break;
                }
            if (st != FACET_OK) break;
            facet_quantize_row_q6_K(src + (size_t)r * w->cols, dst + (size_t)r * rb, w->cols);
        }
    } else {
        st = pack(w->data, w->rows, w->cols, to, dst, err);
    }
    if (st != FACET_OK) {
        free(dst);
        return st;
    }
    free(w->data);
    w->data = dst;
    w->format = to;
    w->packed = 1;
    return FACET_OK;
}

facet_status facet_wtensor_blocks(facet_wtensor *w, facet_wformat f, int rows, int cols,
                                  const void *src, facet_warena *arena, facet_error *err) {
    int qt = facet_wformat_qtype(f);
    if (qt < 0 || !facet_qtype_runs((facet_qtype)qt))
        return facet_err(err, FACET_E_UNSUPPORTED, "weights: %s blocks have no kernels",
                         qt < 0 ? facet_wformat_name(f) : facet_qtype_traits_of((facet_qtype)qt)->name);
    int block = facet_qtype_traits_of((facet_qtype)qt)->block;
    if (rows <= 0 || cols <= 0 || cols % block)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "weights: a [%d, %d] matrix cannot be held in %s blocks (rows of a "
                         "multiple of %d elements)", rows, cols, facet_wformat_name(f), block);
    size_t bytes = (size_t)facet_wtensor_packed_bytes(f, (uint64_t)rows, (uint64_t)cols);
    void *data = arena ? facet_warena_alloc(arena, bytes) : weight_alloc(bytes);
    if (!data)
        return facet_err(err, FACET_E_NOMEM, "weights: cannot allocate %zu bytes for a [%d, %d] %s matrix",
                         bytes, rows, cols, facet_wformat_name(f));
    memcpy(data, src, bytes);
    w->format = f;
    w->rows = rows;
    w->cols = cols;
    w->data = data;
    w->scales = NULL;
    w->packed = 1;
    return FACET_OK;
}

int facet_wtensor_kpanel(facet_wtensor *w) {
    int qt = facet_wformat_qtype(w->format);
    if (w->packed != 1 || !facet_kpanel_fits(qt, w->rows, w->cols)) return 0;
    if (facet_kpanel_repack(qt, w->data, w->rows, w->cols)) return 0;
    w->packed = 2;
    return 1;
}

facet_status facet_wtensor_repack_blocks(facet_wtensor *w, facet_wformat from, facet_wformat to,
                                         int rows, int cols, const void *src, facet_warena *arena,
                                         facet_error *err) {
    if (!((from == FACET_WF_GGUF_Q8_0 && to == FACET_WF_Q8) ||
          (from == FACET_WF_GGUF_Q4_0 && to == FACET_WF_Q4)))
        return facet_err(err, FACET_E_UNSUPPORTED, "weights: %s blocks do not repack into %s",
                         facet_wformat_name(from), facet_wformat_name(to));
    if (rows <= 0 || cols <= 0 || cols % FACET_Q8_BLOCK)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "weights: a [%d, %d] matrix cannot be held in %s blocks", rows, cols,
                         facet_wformat_name(from));
    size_t bytes = packed_bytes(to, rows, cols), pb = facet_panel_bytes(to, cols);
    uint8_t *dst = arena ? facet_warena_alloc(arena, bytes) : weight_alloc(bytes);
    if (!dst)
        return facet_err(err, FACET_E_NOMEM, "weights: cannot allocate %zu bytes for a [%d, %d] %s matrix",
                         bytes, rows, cols, facet_wformat_name(to));
    int nb = cols / FACET_Q8_BLOCK, q8 = to == FACET_WF_Q8;
    size_t sb = q8 ? 34 : 18, pblock = q8 ? FACET_Q8_PBLOCK : FACET_Q4_PBLOCK;
    size_t scales = q8 ? FACET_Q8_BLOCK * FACET_PANEL : FACET_Q8_BLOCK * FACET_PANEL / 2;
    const uint8_t *in = src;
    for (int o = 0; o < (rows + FACET_PANEL - 1) / FACET_PANEL * FACET_PANEL; o++) {
        int l = o % FACET_PANEL;
        for (int b = 0; b < nb; b++) {
            uint8_t *blk = dst + (size_t)(o / FACET_PANEL) * pb + (size_t)b * pblock;
            if (o >= rows) { /* padding rows: 0 (stored as 128 in q8; q4: zero bytes as its own packing), d = 0 */
                for (int i = 0; i < (q8 ? 32 : 16); i++)
                    blk[(size_t)(i / 4) * FACET_PANEL * 4 + l * 4 + i % 4] = q8 ? 128 : 0;
                continue;
            }
            const uint8_t *x = in + ((size_t)o * nb + b) * sb;
            memcpy(blk + scales + l * 2, x, 2); /* the block's f16 d, as it is */
            /* q8: element i's int8 + 128 (= its byte ^ 0x80) at [i/4][l][i%4]; q4: Q4_0's
             * qs[i] (elements i and i + 16) at [i/4][l][i%4], byte for byte
             * (matmul_internal.h): 4 bytes at a time */
            for (int c = 0; c < (q8 ? 8 : 4); c++) {
                uint32_t v;
                memcpy(&v, x + 2 + 4 * c, 4);
                if (q8) v ^= 0x80808080u;
                memcpy(blk + (size_t)c * FACET_PANEL * 4 + l * 4, &v, 4);
            }
        }
    }
    w->format = to;
    w->rows = rows;
    w->cols = cols;
    w->data = dst;
    w->scales = NULL;
    w->packed = 1;
    return FACET_OK;
}

size_t facet_wtensor_bytes(const facet_wtensor *w) {
    if (w->packed) return packed_bytes(w->format, w->rows, w->cols);
    return (size_t)w->rows * (size_t)w->cols * sizeof(float);
}

void facet_wtensor_row(const facet_wtensor *w, int row, float *out) {
    int cols = w->cols;
    if (!w->packed) {
        memcpy(out, (const float *)w->data + (size_t)row * cols, sizeof(float) * (size_t)cols);
        return;
    }
    int qt = facet_wformat_qtype(w->format);
    if (qt >= 0 && w->packed == 2) { /* a row of a K panel, one superblock at a time */
        const facet_qtype_traits *q = facet_qtype_traits_of((facet_qtype)qt);
        uint8_t blk[256]; /* one block of the row (Q6_K: 210 bytes) */
        for (int sb = 0; sb < cols / 256; sb++) {
            /* the superblock's 16 rows start sb * 16 blocks into the row's group */
            const uint8_t *grp = (const uint8_t *)w->data +
                                 (size_t)(row / FACET_KPANEL_ROWS) * FACET_KPANEL_ROWS *
                                     (size_t)(cols / 256) * q->block_bytes;
            facet_kpanel_row_blocks(qt, grp + (size_t)sb * FACET_KPANEL_ROWS * q->block_bytes, 256,
                                    row % FACET_KPANEL_ROWS, blk);
            q->dequant_row(blk, out + 256 * sb, 256);
        }
        return;
    }
    if (qt >= 0) { /* one row of blocks */
        size_t bytes = (size_t)facet_wtensor_packed_bytes(w->format, 1, (uint64_t)cols);
        facet_qtype_traits_of((facet_qtype)qt)
            ->dequant_row((const uint8_t *)w->data + (size_t)row * bytes, out, cols);
        return;
    }
    int kp = facet_packed_kp(cols), l = row % FACET_PANEL;
    const uint8_t *panel = (const uint8_t *)w->data +
                           (size_t)(row / FACET_PANEL) * facet_panel_bytes(w->format, kp);
    switch (w->format) {
    case FACET_WF_F32:
        for (int k = 0; k < cols; k++) out[k] = ((const float *)panel)[(size_t)k * FACET_PANEL + l];
        return;
    case FACET_WF_F16:
        for (int k = 0; k < cols; k++)
            out[k] = facet_f16_to_f32(((const uint16_t *)panel)[(size_t)k * FACET_PANEL + l]);
        return;
    case FACET_WF_BF16:
        for (int k = 0; k < cols; k++)
            out[k] = facet_bf16_to_f32(
                ((const uint16_t *)panel)[((size_t)(k / 2) * FACET_PANEL + l) * 2 + k % 2]);
        return;
    case FACET_WF_Q8:
        for (int k = 0; k < cols; k++) {
            const uint8_t *blk = panel + (size_t)(k / FACET_Q8_BLOCK) * FACET_Q8_PBLOCK;
            int i = k % FACET_Q8_BLOCK;
            uint16_t h;
            memcpy(&h, blk + FACET_Q8_BLOCK * FACET_PANEL + l * 2, 2);
            int q = (int)blk[(size_t)(i / 4) * FACET_PANEL * 4 + l * 4 + i % 4] - 128;
            out[k] = (float)q * facet_f16_to_f32(h);
        }
        return;
    case FACET_WF_Q4:
        for (int k = 0; k < cols; k++) {
            const uint8_t *blk = panel + (size_t)(k / FACET_Q8_BLOCK) * FACET_Q4_PBLOCK;
            int i = k % FACET_Q8_BLOCK;
            uint16_t h;
            memcpy(&h, blk + FACET_Q8_BLOCK * FACET_PANEL / 2 + l * 2, 2);
            uint8_t byte = blk[((i % 16) / 4) * 64 + l * 4 + i % 4];
            int q = (i < 16 ? byte & 15 : byte >> 4) - 8;
            out[k] = (float)q * facet_f16_to_f32(h);
        }
        return;
    default: return; /* GGUF block formats: above */
    }
}
