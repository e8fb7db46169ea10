/*
 * weights_cache.c — the weight loader's front end: use a valid weight cache when there
 * is one (no conversion), else convert the checkpoint's tensors and write the cache for
 * the next load. A cache that fails any check (a damaged tensor's data checksum
 * included) is never an error, only a note: the weights are converted and the cache
 * rewritten.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/weights_load.h"
#include "kernels/cpu/threadpool.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/str.h"

#define NOTE_MAX 8192

/* Append printf-formatted text to the string in buf (cap bytes), truncating. */
static void append(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t cap, const char *fmt, ...) {
    size_t len = strlen(buf);
    if (len + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, cap - len, fmt, ap);
    va_end(ap);
}

static int cache_disabled(const facet_load_options *o) {
    if (o && o->no_cache) return 1;
    const char *e = getenv("FACET_NO_CACHE");
    return e && *e && strcmp(e, "0") != 0;
}

/*
 * SHA-256 of how this build lays out `format`: small matrices of odd shapes with varied
 * values converted by facet_wtensor_convert, hashed with their struct (pointers
 * cleared) and bytes. A change to the packing, the padding, the int8 rounding or the
 * struct changes the digest, so a cache from another build is rejected without anyone
 * having to remember to bump a version. Both the format and its output projection's
 * (facet_wformat_output, when another; per shape, so q4's int8 and Q6_K outputs both) are
 * probed.
 */
static facet_status layout_digest(facet_wformat format, uint8_t out[32], facet_error *err) {
    static const int shapes[4][2] = {{37, 100}, {16, 64}, {5, 33}, {48, 256}};
    facet_str buf = {0}; /* what is hashed: per shape its struct, byte count and bytes */
    uint32_t rng = 12345u;
    facet_status st = FACET_OK;
    int n_probe = facet_wformat_output(format, 256) != format ? 2 : 1;
    for (int s = 0; s < n_probe * 4 && st == FACET_OK; s++) {
        int rows = shapes[s % 4][0], cols = shapes[s % 4][1];
        facet_wformat probe = s < 4 ? format : facet_wformat_output(format, cols);
        facet_wtensor t;
        memset(&t, 0, sizeof t);
        t.format = FACET_WF_F32;
        t.rows = rows;
        t.cols = cols;
        float *d = malloc(sizeof(float) * (size_t)rows * (size_t)cols);
        if (!d) {
            st = facet_err(err, FACET_E_NOMEM, "weight cache layout probe");
            break;
        }
        for (size_t i = 0; i < (size_t)rows * (size_t)cols; i++) {
            rng = rng * 1664525u + 1013904223u;
            float mag = (float)(1u << ((rng >> 8) % 12)) / 256.0f; /* 2^-8 .. 2^3 */
            d[i] = ((float)(rng >> 9) / 8388608.0f - 0.5f) * mag;
        }
        t.data = d;
        st = facet_wtensor_convert(&t, probe, err);
        if (st == FACET_OK) {
            size_t bytes = facet_wtensor_bytes(&t);
            facet_wtensor meta = t;
            meta.data = NULL;
            meta.scales = NULL;
            facet_str_append(&buf, &meta, sizeof meta);
            facet_str_append(&buf, &bytes, sizeof bytes);
            if (facet_str_append(&buf, t.data, bytes))
                st = facet_err(err, FACET_E_NOMEM, "weight cache layout probe");
        }
        free(t.data);
        free(t.scales);
    }
    if (st == FACET_OK) st = wcache_sha256(buf.data, buf.len, out, err);
    facet_str_free(&buf);
    return st;
}

/* The key a cache for this checkpoint and format must carry. */
static facet_status cache_key(const facet_model *m, const char *dir, const st_checkpoint *ck,
                              facet_wformat format, wcache_key *key, facet_error *err) {
    memset(key, 0, sizeof *key);
    const facet_facts *f = &m->facts;
    int64_t dims[WCACHE_N_DIMS] = {f->hidden_size, f->intermediate_size, f->num_hidden_layers,
                                   f->num_attention_heads, f->num_key_value_heads, f->head_dim,
                                   f->vocab_size, 0};
    memcpy(key->dims, dims, sizeof dims);
    key->wformat = (uint32_t)format;
    facet_status st = layout_digest(format, key->layout, err);
    if (st != FACET_OK) return st;
    char path[4096];
    if (!facet_path_join(path, sizeof path, dir, "config.json"))
        return facet_err(err, FACET_E_IO, "%s: path too long", dir);
    char *config = NULL;
    size_t config_len = 0;
    if ((st = facet_read_file(path, (size_t)64 << 20, &config, &config_len, err)) != FACET_OK)
        return st;
    size_t n = ck->n_files;
    const uint8_t **heads = calloc(n ? n : 1, sizeof *heads);
    uint64_t *lens = calloc(n ? n : 1, sizeof *lens), *sizes = calloc(n ? n : 1, sizeof *sizes);
    int64_t *mtimes = calloc(n ? n : 1, sizeof *mtimes);
    if (!heads || !lens || !sizes || !mtimes) st = facet_err(err, FACET_E_NOMEM, "weight cache key");
    for (size_t i = 0; st == FACET_OK && i < n; i++) {
        const st_file *sf = &ck->files[i];
        if (!sf->map) {
            st = facet_err(err, FACET_E_INTERNAL, "%s: not mapped", sf->path);
            break;
        }
        heads[i] = sf->map;
        lens[i] = 8 + sf->header_len;
        sizes[i] = sf->map_size;
        struct stat sb;
        if (stat(sf->path, &sb) != 0) {
            st = facet_err(err, FACET_E_IO, "%s: %s", sf->path, strerror(errno));
            break;
        }
        mtimes[i] = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    }
    if (st == FACET_OK)
        st = wcache_source_digest(config, config_len, n, heads, lens, sizes, mtimes, key->source,
                                  err);
    free(config);
    free(mtimes);
    free(heads);
    free(lens);
    free(sizes);
    return st;
}

/* wcache_runner over the thread pool */
static void run_on_pool(void *pool, int n_tasks, wcache_task_fn fn, void *ctx) {
    facet_pool_run(pool, n_tasks, fn, ctx);
}

/* Walk the checkpoint with the cache at `path`, its data checksums checked over `runner`
 * (NULL: on this thread): 1 used (m->w filled from it), 0 no file, -1 rejected (the
 * reason in why; m->w is empty again). */
static int try_cache(facet_model *m, wload *ld, const char *path, const wcache_key *key,
                     const wcache_runner *runner, char *why, size_t cap) {
    facet_error e = {0};
    wcache_file *c = calloc(1, sizeof *c);
    if (!c) {
        append(why, cap, "out of memory");
        return -1;
    }
    facet_status st = wcache_open(path, key, runner, c, &e);
    if (st != FACET_OK) {
        free(c);
        if (st == FACET_E_NOT_FOUND) return 0;
        append(why, cap, "%s", e.message);
        return -1;
    }
    m->w.cache = c; /* from here on facet_weights_free unmaps instead of freeing tensors */
    ld->cache = c;
    ld->next = 0;
    facet_load_progress_fn pf = ld->progress;
    ld->progress = NULL; /* a mapping is not a conversion */
    st = facet_weights_walk(m, ld, &e);
    ld->progress = pf;
    ld->cache = NULL;
    ld->done = 0;
    if (st == FACET_OK) return 1;
    append(why, cap, "%s", e.message);
    facet_weights_free(m);
    return -1;
}

typedef struct write_progress {
    facet_load_progress_fn fn;
    void *user;
} write_progress;

static void on_write(void *user, uint64_t done, uint64_t total) {
    write_progress *p = user;
    p->fn(p->user, "writing weight cache", done, total);
}

/* Write the recorded tensors to `path` (creating its folder). */
static facet_status write_cache(const wload *ld, const char *path, const wcache_key *key,
                                facet_error *err) {
    if (wcache_mkdir_for(path) != 0)
        return facet_err(err, FACET_E_IO, "%s: cannot create its folder: %s", path, strerror(errno));
    wcache_item *items = calloc(ld->n_rec ? ld->n_rec : 1, sizeof *items);
    if (!items) return facet_err(err, FACET_E_NOMEM, "weight cache list");
    uint64_t total = 0;
    for (size_t i = 0; i < ld->n_rec; i++) {
        const wload_rec *r = &ld->rec[i];
        items[i] = (wcache_item){r->name, r->kind, r->kind ? (const void *)&r->meta : NULL,
                                 r->kind ? (uint32_t)sizeof r->meta : 0, r->data, r->bytes};
        total += r->bytes;
    }
    write_progress wp = {ld->progress, ld->user};
    if (wp.fn) wp.fn(wp.user, "writing weight cache", 0, total);
    facet_status st = wcache_write(path, key, items, ld->n_rec, wp.fn ? on_write : NULL, &wp, err);
    free(items);
    return st;
}

static void set_note(facet_model *m, facet_weight_cache state, const char *path, const char *note) {
    m->wcache = state;
    free(m->wcache_path);
    free(m->wcache_note);
    m->wcache_path = path && path[0] ? strdup(path) : NULL;
    m->wcache_note = note && note[0] ? strdup(note) : NULL;
}

facet_status facet_weights_load(facet_model *m, const char *dir, const st_checkpoint *ck,
                                facet_wformat format, const facet_load_options *opts,
                                facet_error *err) {
    wload ld;
    memset(&ld, 0, sizeof ld);
    ld.ck = ck;
    ld.format = format;
    ld.native = m->weights == FACET_WEIGHTS_GGUF;
    ld.layer_first = m->layer_first;
    ld.layer_end = m->layer_end;
    ld.stage_inner = m->stage_inner;
    ld.tp = m->tp;
    ld.tp_rank = m->tp_rank;
    int partial = m->layer_first > 0 || m->layer_end < m->facts.num_hidden_layers ||
                  m->stage_inner || m->tp > 1;
    ld.progress = opts ? opts->progress : NULL;
    ld.user = opts ? opts->progress_user : NULL;
    for (size_t i = 0; i < ck->n_tensors; i++) ld.total += ck->by_name[i]->end - ck->by_name[i]->begin;

    char why_local[1100] = "", why_user[1100] = "", note[NOTE_MAX] = "";
    wcache_key key;
    facet_error ke = {0};
    int use_cache = !cache_disabled(opts);
    if (use_cache && partial) { /* the cache holds whole models */
        append(note, sizeof note, "weight cache: off (a parallel rank loads its share: layers "
               "%d..%d, tensor rank %d of %d)", m->layer_first, m->layer_end - 1, m->tp_rank,
               m->tp);
        use_cache = 0;
    }
    if (use_cache && ld.native) { /* the cache holds one format; native weights are mixed */
        append(note, sizeof note, "weight cache: off (gguf weights keep each matrix's type)");
        use_cache = 0;
    }
    char lp[4096], up[4096];
    if (use_cache && cache_key(m, dir, ck, format, &key, &ke) != FACET_OK) {
        append(note, sizeof note, "weight cache: off (%s)", ke.message);
        use_cache = 0;
    }
    if (use_cache && wcache_paths(dir, facet_wformat_name(format), lp, up, sizeof lp) != 0) {
        append(note, sizeof note, "weight cache: off (path of %s too long)", dir);
        use_cache = 0;
    }
    if (!use_cache) {
        set_note(m, FACET_WCACHE_OFF, NULL, note);
        if (ld.progress) ld.progress(ld.user, "converting weights", 0, ld.total);
        facet_status st = facet_weights_walk(m, &ld, err);
        if (st == FACET_OK && ld.progress) ld.progress(ld.user, "converting weights", ld.total, ld.total);
        return st;
    }

    /* 1. a valid cache beside the checkpoint, else in the user's cache folder; its data
     * checksums are verified over the model's pool (without one, on this thread) */
    wcache_runner runner = {run_on_pool, m->pool};
    const wcache_runner *rp = m->pool ? &runner : NULL;
    int r = try_cache(m, &ld, lp, &key, rp, why_local, sizeof why_local);
    int r2 = -1;
    if (r != 1 && up[0] && strcmp(up, lp))
        r2 = try_cache(m, &ld, up, &key, rp, why_user, sizeof why_user);
    if (r != 1 && r2 == 1) {
        append(note, sizeof note, "weight cache: loaded %s%s%s%s", up, r ? " (" : "", r ? lp : "",
               r ? " was rejected)" : "");
        set_note(m, FACET_WCACHE_HIT, up, note);
        return FACET_OK;
    }
    if (r == 1) {
        append(note, sizeof note, "weight cache: loaded %s", lp);
        set_note(m, FACET_WCACHE_HIT, lp, note);
        return FACET_OK;
    }

    /* 2. convert, noting every tensor for the writer */
    ld.recording = 1;
    if (ld.progress) ld.progress(ld.user, "converting weights", 0, ld.total);
    facet_status st = facet_weights_walk(m, &ld, err);
    if (st == FACET_OK && ld.progress) ld.progress(ld.user, "converting weights", ld.total, ld.total);
    if (st != FACET_OK) {
        free(ld.rec);
        return st;
    }

    /* 3. write the cache: beside the checkpoint, else in the user's cache folder */
    char rejected[NOTE_MAX] = "";
    if (why_local[0]) append(rejected, sizeof rejected, "%s was rejected (%s); ", lp, why_local);
    if (why_user[0]) append(rejected, sizeof rejected, "%s was rejected (%s); ", up, why_user);
    if (!ld.recording) {
        append(note, sizeof note, "weight cache: %snot written: %s", rejected, ld.uncacheable);
        set_note(m, FACET_WCACHE_UNWRITTEN, NULL, note);
        free(ld.rec);
        return FACET_OK;
    }
    facet_error we = {0}, we2 = {0};
    const char *written = NULL;
    if (write_cache(&ld, lp, &key, &we) == FACET_OK) written = lp;
    else if (up[0] && write_cache(&ld, up, &key, &we2) == FACET_OK) written = up;
    free(ld.rec);
    if (written) {
        append(note, sizeof note, "weight cache: %s%s %s", rejected,
                 rejected[0] ? "rewrote" : "wrote", written);
        set_note(m, FACET_WCACHE_WRITTEN, written, note);
    } else {
        append(note, sizeof note, "weight cache: %snot written: %s%s%s", rejected, we.message,
                 we2.message[0] ? "; " : "", we2.message);
        set_note(m, FACET_WCACHE_UNWRITTEN, NULL, note);
    }
    return FACET_OK;
}
