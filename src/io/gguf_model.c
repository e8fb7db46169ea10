/*
 * gguf_model.c — a GGUF model: one file, every part of a split file, or the one model a
 * folder holds (see gguf.h). Split parts are named as llama-gguf-split names them:
 * PREFIX-00001-of-00003.gguf, ...; part k (from 1) carries split.no = k - 1, every part
 * split.count, and the first split.tensors.count (the tensors of all parts).
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf.h"
#include "util/error.h"
#include "util/fs.h"

#define SPLIT_SUFFIX_LEN 20 /* "-00001-of-00002.gguf" */
#define PATH_CAP 4096

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* Parse "-NNNNN-of-MMMMM.gguf" at the end of `name`: part number and count (from 1). */
static int split_name(const char *name, int *no, int *count) {
    size_t n = strlen(name);
    if (n < SPLIT_SUFFIX_LEN) return 0;
    const char *s = name + n - SPLIT_SUFFIX_LEN;
    int a, b;
    char tail[8];
    if (s[0] != '-' || s[6] != '-' || strncmp(s + 7, "of-", 3)) return 0;
    for (int i = 1; i < 6; i++)
        if (s[i] < '0' || s[i] > '9' || s[i + 9] < '0' || s[i + 9] > '9') return 0;
    if (sscanf(s, "-%5d-of-%5d%7s", &a, &b, tail) != 3 || strcmp(tail, ".gguf")) return 0;
    *no = a;
    *count = b;
    return 1;
}

void gguf_model_close(gguf_model *m) {
    if (!m) return;
    for (size_t i = 0; i < m->n_files; i++) gguf_file_close(&m->files[i]);
    free(m->files);
    free(m->by_name);
    memset(m, 0, sizeof *m);
}

static int cmp_tensor_name(const void *a, const void *b) {
    return strcmp((*(const gguf_tensor *const *)a)->name, (*(const gguf_tensor *const *)b)->name);
}

const gguf_tensor *gguf_model_find(const gguf_model *m, const char *name) {
    size_t lo = 0, hi = m->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(m->by_name[mid]->name, name);
        if (!c) return m->by_name[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* The one model in folder `dir`: its .gguf file, or the first part of its split set. */
static facet_status folder_model(const char *dir, char *out, size_t cap, facet_error *err) {
    DIR *d = opendir(dir);
    if (!d) return facet_err(err, FACET_E_IO, "%s: cannot read the folder", dir);
    char found[512] = "", names[1024] = "";
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int no, count;
        if (e->d_name[0] == '.' || !ends_with(e->d_name, ".gguf")) continue;
        if (split_name(e->d_name, &no, &count) && no != 1) continue; /* a later part */
        if (n++ == 0) snprintf(found, sizeof found, "%s", e->d_name);
        size_t len = strlen(names);
        if (n <= 4)
            snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "", e->d_name);
        else if (n == 5)
            snprintf(names + len, sizeof names - len, ", ...");
    }
    closedir(d);
    if (n == 0)
        return facet_err(err, FACET_E_NOT_FOUND,
                         "%s: no .gguf model in the folder (expected NAME.gguf or the parts "
                         "NAME-00001-of-0000N.gguf, ...)",
                         dir);
    if (n > 1)
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "%s: the folder holds %d GGUF models (%s); name the file to use", dir,
                         n, names);
    if (!facet_path_join(out, cap, dir, found))
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "%s: path too long", dir);
    return FACET_OK;
}

/* Checks of part k (0-based) of a split model of `count` parts. */
static facet_status check_part(const gguf_file *f, int k, int64_t count, facet_error *err) {
    int64_t no = -1, c = 0;
    facet_status st = gguf_get_int(f, "split.no", 1, 0, 65535, &no, NULL, err);
    if (st != FACET_OK) return st;
    st = gguf_get_int(f, "split.count", 1, 1, 65535, &c, NULL, err);
    if (st != FACET_OK) return st;
    if (no != k)
        return facet_err(err, FACET_E_FORMAT,
                         "%s: key split.no is %" PRId64 ", expected %d (this is part %d of %" PRId64
                         " by its name)",
                         f->path, no, k, k + 1, count);
    if (c != count)
        return facet_err(err, FACET_E_FORMAT,
                         "%s: key split.count is %" PRId64 ", expected %" PRId64
                         " (as the first part says)",
                         f->path, c, count);
    return FACET_OK;
}

static facet_status open_parts(const char *path, gguf_model *m, facet_error *err) {
    gguf_file first;
    facet_status st = gguf_open(path, &first, err);
    if (st != FACET_OK) return st;
    int64_t count = 1;
    int have = 0;
    st = gguf_get_int(&first, "split.count", 0, 1, 65535, &count, &have, err);
    if (st != FACET_OK || count == 1) {
        if (st != FACET_OK) {
            gguf_file_close(&first);
            return st;
        }
        m->files = malloc(sizeof *m->files);
        if (!m->files) {
            gguf_file_close(&first);
            return facet_err(err, FACET_E_NOMEM, "out of memory");
        }
        m->files[0] = first;
        m->n_files = 1;
        return FACET_OK;
    }
    /* a split model: every part by name, from the name of the one given */
    int no, named_count;
    if (!split_name(path, &no, &named_count) || named_count != count || no < 1 || no > count) {
        st = facet_err(err, FACET_E_FORMAT,
                       "%s: key split.count is %" PRId64
                       " but the file name does not end in -NNNNN-of-%05" PRId64
                       ".gguf (the names llama-gguf-split gives the parts)",
                       path, count, count);
        gguf_file_close(&first);
        return st;
    }
    m->files = calloc((size_t)count, sizeof *m->files);
    if (!m->files) {
        gguf_file_close(&first);
        return facet_err(err, FACET_E_NOMEM, "out of memory");
    }
    m->files[no - 1] = first;
    m->n_files = (size_t)count;
    size_t prefix = strlen(path) - SPLIT_SUFFIX_LEN;
    for (int k = 0; k < count; k++) {
        if (k != no - 1) {
            char part[PATH_CAP];
            if (prefix + SPLIT_SUFFIX_LEN + 1 > sizeof part)
                return facet_err(err, FACET_E_INVALID_ARGUMENT, "%s: path too long", path);
            snprintf(part, sizeof part, "%.*s-%05d-of-%05d.gguf", (int)prefix, path, k + 1,
                     (int)count);
            if (!facet_is_file(part))
                return facet_err(err, FACET_E_NOT_FOUND,
                                 "%s: part %d of %" PRId64 " of this split model is missing: %s",
                                 path, k + 1, count, part);
            st = gguf_open(part, &m->files[k], err);
            if (st != FACET_OK) return st;
        }
        st = check_part(&m->files[k], k, count, err);
        if (st != FACET_OK) return st;
    }
    return FACET_OK;
}

/* Index the tensors of every part by name; a name in two parts is refused. */
static facet_status index_tensors(gguf_model *m, const char *path, facet_error *err) {
    size_t n = 0;
    for (size_t i = 0; i < m->n_files; i++) n += m->files[i].n_tensors;
    m->by_name = malloc((n ? n : 1) * sizeof *m->by_name);
    if (!m->by_name) return facet_err(err, FACET_E_NOMEM, "out of memory");
    for (size_t i = 0; i < m->n_files; i++)
        for (size_t j = 0; j < m->files[i].n_tensors; j++) {
            m->files[i].tensors[j].file_index = (int)i;
            m->by_name[m->n_tensors++] = &m->files[i].tensors[j];
        }
    qsort(m->by_name, m->n_tensors, sizeof *m->by_name, cmp_tensor_name);
    for (size_t i = 1; i < m->n_tensors; i++)
        if (!strcmp(m->by_name[i]->name, m->by_name[i - 1]->name))
            return facet_err(err, FACET_E_FORMAT,
                             "%s: tensor '%s' is in two parts (%s and %s); tensor names must "
                             "be unique",
                             path, m->by_name[i]->name,
                             m->files[m->by_name[i - 1]->file_index].path,
                             m->files[m->by_name[i]->file_index].path);
    return FACET_OK;
}

facet_status gguf_model_wrap(gguf_file *f, gguf_model *out, facet_error *err) {
    memset(out, 0, sizeof *out);
    out->files = malloc(sizeof *out->files);
    if (!out->files) {
        gguf_file_close(f);
        return facet_err(err, FACET_E_NOMEM, "out of memory");
    }
    out->files[0] = *f;
    out->n_files = 1;
    memset(f, 0, sizeof *f);
    facet_status st = index_tensors(out, out->files[0].path, err);
    if (st != FACET_OK) gguf_model_close(out);
    return st;
}

facet_status gguf_model_open(const char *path, gguf_model *out, facet_error *err) {
    memset(out, 0, sizeof *out);
    char file[PATH_CAP];
    if (facet_is_dir(path)) {
        facet_status st = folder_model(path, file, sizeof file, err);
        if (st != FACET_OK) return st;
        path = file;
    }
    facet_status st = open_parts(path, out, err);
    if (st == FACET_OK) st = index_tensors(out, path, err);
    if (st == FACET_OK && out->n_files > 1) {
        int64_t total = 0;
        int have = 0;
        st = gguf_get_int(&out->files[0], "split.tensors.count", 0, 0, INT64_MAX, &total, &have,
                          err);
        if (st == FACET_OK && have && (uint64_t)total != out->n_tensors)
            st = facet_err(err, FACET_E_FORMAT,
                           "%s: key split.tensors.count is %" PRId64 " but the %zu parts hold %zu "
                           "tensors",
                           out->files[0].path, total, out->n_files, out->n_tensors);
    }
    if (st != FACET_OK) gguf_model_close(out);
    return st;
}

int gguf_path_is_gguf(const char *path) {
    if (facet_is_file(path)) return ends_with(path, ".gguf");
    if (!facet_is_dir(path)) return 0;
    char cfg[PATH_CAP];
    if (facet_path_join(cfg, sizeof cfg, path, "config.json") && facet_is_file(cfg)) return 0;
    DIR *d = opendir(path);
    if (!d) return 0;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d))) found = e->d_name[0] != '.' && ends_with(e->d_name, ".gguf");
    closedir(d);
    return found;
}
