/*
 * weights_load.h — the weight loader's walk over the checkpoint's tensors (weights.c)
 * and its cache front end (weights_cache.c), shared by the two files only.
 */
#ifndef FACET_ENGINE_WEIGHTS_LOAD_H
#define FACET_ENGINE_WEIGHTS_LOAD_H

#include "engine/model_internal.h"
#include "io/safetensors.h"
#include "io/wcache.h"

/* One converted tensor noted for the cache writer. */
typedef struct wload_rec {
    char name[WCACHE_NAME_MAX];
    uint32_t kind;                 /* 0 float32 vector, 1 matrix                       */
    facet_wtensor meta;            /* matrices: the struct with its pointers cleared    */
    const void *data;              /* borrowed from m->w                                */
    uint64_t bytes;
} wload_rec;

/* State of one walk: tensors come from the checkpoint (converted, and noted in rec
 * when recording) or, when cache != NULL, from the cache's entries in order. */
typedef struct wload {
    const st_checkpoint *ck;
    const facet_facts *facts;      /* the model's (set by the walk): FP8 block sizes    */
    facet_wformat format;          /* run-time format of matrices                       */
    int native;                    /* 1: each matrix in its own type instead (GGUF block
                                    * types as stored, F16/BF16/F32 as f16/bf16/f32)      */
    const wcache_file *cache;      /* take tensors from here (m->w.cache)               */
    facet_warena *arena;           /* GGUF block matrices' memory (m->w.arena)           */
    size_t next;                   /* next cache entry                                  */
    int check_only;                /* find and shape-check tensors, read no data        */
    int l2_rows;                   /* set around one load_mat: divide each row of that
                                    * matrix by its L2 norm before conversion (facts
                                    * lm_head_l2_norm, Baichuan 2's NormHead)          */
    int64_t layer_first, layer_end; /* load only these layers (a pipeline stage)        */
    int stage_inner;               /* and no embeddings, final norm or lm_head         */
    int tp, tp_rank;               /* > 1: keep tensor rank tp_rank's share of each layer */
    int recording;                 /* note converted tensors in rec                     */
    wload_rec *rec;                /* [n_rec], malloc'd                                 */
    size_t n_rec, cap_rec;
    char uncacheable[256];         /* why recording stopped, or ""                     */
    facet_load_progress_fn progress;
    void *user;
    uint64_t done, total;          /* checkpoint tensor bytes read / all of them        */
} wload;

/* Fill m->w by walking every tensor the facts call for (weights.c). On failure m->w
 * holds what was loaded so far, released by facet_weights_free. A cache walk fails
 * with FACET_E_FORMAT when an entry does not match what the checkpoint needs. */
facet_status facet_weights_walk(facet_model *m, wload *ld, facet_error *err);

#endif
