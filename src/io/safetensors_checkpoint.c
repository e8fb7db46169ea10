/*
 * safetensors_checkpoint.c — a checkpoint folder: one model.safetensors, or the shards
 * named by model.safetensors.index.json (the layout Hugging Face's save_pretrained writes:
 * {"metadata": {...}, "weight_map": {"TENSOR": "SHARD-FILE", ...}}).
 *
 * Every distinct shard is opened (mmapped) once. Every weight_map entry is checked: the
 * shard must be a plain file name that exists in the folder and must hold the tensor.
 * Tensors a shard holds that the weight_map does not mention are still included in the
 * checkpoint's name table (harmless: the loader looks tensors up by name and ignores the
 * ones it does not need). A tensor held by two shards is an error, as the name table
 * could not say which one is meant.
 */
#include "io/safetensors.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"

#define ST_INDEX_NAME "model.safetensors.index.json"
#define ST_SINGLE_NAME "model.safetensors"
#define ST_MAX_INDEX_BYTES (256u << 20)

void st_checkpoint_close(st_checkpoint *ck) {
    if (!ck) return;
    for (size_t i = 0; i < ck->n_files; i++) st_file_close(&ck->files[i]);
    free(ck->files);
    free(ck->by_name);
    memset(ck, 0, sizeof *ck);
}

static int cmp_tensor_name(const void *a, const void *b) {
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    return strcmp(x->name, y->name);
}

const st_tensor *st_checkpoint_find(const st_checkpoint *ck, const char *name) {
    size_t lo = 0, hi = ck->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, ck->by_name[mid]->name);
        if (c == 0) return ck->by_name[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

/* Build the sorted name table over all files; a name in two files is an error. */
static facet_status build_name_table(const char *dir, st_checkpoint *ck, facet_error *err) {
    size_t total = 0;
    for (size_t i = 0; i < ck->n_files; i++) total += ck->files[i].n_tensors;
    ck->by_name = malloc((total ? total : 1) * sizeof *ck->by_name);
    if (!ck->by_name)
        return facet_err(err, FACET_E_NOMEM, "%s: out of memory for %zu tensor names", dir,
                         total);
    size_t k = 0;
    for (size_t i = 0; i < ck->n_files; i++)
        for (size_t j = 0; j < ck->files[i].n_tensors; j++) {
            ck->files[i].tensors[j].file_index = (int)i;
            ck->by_name[k++] = &ck->files[i].tensors[j];
        }
    ck->n_tensors = total;
    qsort(ck->by_name, total, sizeof *ck->by_name, cmp_tensor_name);
    for (size_t i = 1; i < total; i++)
        if (strcmp(ck->by_name[i - 1]->name, ck->by_name[i]->name) == 0) {
            const st_tensor *a = ck->by_name[i - 1], *b = ck->by_name[i];
            return facet_err(err, FACET_E_FORMAT, "%s: tensor '%s' is in both %s and %s", dir,
                             a->name, ck->files[a->file_index].path,
                             ck->files[b->file_index].path);
        }
    return FACET_OK;
}

/* A shard name must be a plain file name: non-empty, no '/', no "..", no NUL. */
static int shard_name_ok(const json_t *s) {
    const char *v = json_string_value(s);
    size_t len = json_string_length(s);
    return len > 0 && strlen(v) == len && !strchr(v, '/') && !strstr(v, "..") &&
           strcmp(v, ".") != 0;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static facet_status open_sharded(const char *dir, const char *index_path, st_checkpoint *ck,
                                 facet_error *err) {
    json_t *root;
    facet_status st = facet_json_load_file(index_path, ST_MAX_INDEX_BYTES, &root, err);
    if (st != FACET_OK) return st;
    const char **names = NULL;
    char path[PATH_MAX];

    if (!json_is_object(root)) {
        st = facet_err(err, FACET_E_FORMAT, "%s: a JSON %s, expected an object with weight_map",
                       index_path, facet_json_type_name(root));
        goto done;
    }
    json_t *wm = json_object_get(root, "weight_map");
    if (!wm) {
        st = facet_err(err, FACET_E_FORMAT, "%s: no \"weight_map\" key", index_path);
        goto done;
    }
    if (!json_is_object(wm) || json_object_size(wm) == 0) {
        st = facet_err(err, FACET_E_FORMAT,
                       "%s: weight_map is %s JSON %s, expected a non-empty object of "
                       "tensor name -> shard file",
                       index_path, json_is_object(wm) ? "an empty" : "a",
                       facet_json_type_name(wm));
        goto done;
    }

    /* Validate every entry; collect the shard names. */
    size_t n_entries = json_object_size(wm), n_names = 0;
    names = malloc(n_entries * sizeof *names);
    if (!names) {
        st = facet_err(err, FACET_E_NOMEM, "%s: out of memory", index_path);
        goto done;
    }
    const char *tname;
    json_t *sv;
    json_object_foreach(wm, tname, sv) {
        if (!json_is_string(sv)) {
            st = facet_err(err, FACET_E_FORMAT,
                           "%s: weight_map[\"%s\"] is a JSON %s, expected a shard file name",
                           index_path, tname, facet_json_type_name(sv));
            goto done;
        }
        if (!shard_name_ok(sv)) {
            st = facet_err(err, FACET_E_FORMAT,
                           "%s: weight_map[\"%s\"] names shard '%s', expected a plain file name "
                           "in the folder (no '/' or \"..\")",
                           index_path, tname, json_string_value(sv));
            goto done;
        }
        names[n_names++] = json_string_value(sv);
    }
    qsort(names, n_names, sizeof *names, cmp_str);
    size_t n_unique = 0;
    for (size_t i = 0; i < n_names; i++)
        if (n_unique == 0 || strcmp(names[n_unique - 1], names[i]) != 0)
            names[n_unique++] = names[i];

    /* Every shard must exist; name the first tensor that points at a missing one. */
    json_object_foreach(wm, tname, sv) {
        const char *shard = json_string_value(sv);
        if (!facet_path_join(path, sizeof path, dir, shard)) {
            st = facet_err(err, FACET_E_IO, "%s: path of shard '%s' is too long", dir, shard);
            goto done;
        }
        if (!facet_is_file(path)) {
            st = facet_err(err, FACET_E_NOT_FOUND,
                           "%s: index names shard '%s' for tensor '%s' but %s does not exist",
                           index_path, shard, tname, path);
            goto done;
        }
    }

    ck->files = calloc(n_unique, sizeof *ck->files);
    if (!ck->files) {
        st = facet_err(err, FACET_E_NOMEM, "%s: out of memory", index_path);
        goto done;
    }
    for (size_t i = 0; i < n_unique; i++) {
        facet_path_join(path, sizeof path, dir, names[i]); /* fits: checked above */
        st = st_open(path, &ck->files[i], err);
        if (st != FACET_OK) goto done;
        ck->n_files++;
    }
    st = build_name_table(dir, ck, err);
    if (st != FACET_OK) goto done;

    /* Every weight_map entry must be held by the shard it names. */
    json_object_foreach(wm, tname, sv) {
        const char *shard = json_string_value(sv);
        const st_tensor *t = st_checkpoint_find(ck, tname);
        facet_path_join(path, sizeof path, dir, shard);
        if (!t) {
            st = facet_err(err, FACET_E_NOT_FOUND,
                           "%s: index names shard '%s' for tensor '%s' but %s has no tensor '%s'",
                           index_path, shard, tname, path, tname);
            goto done;
        }
        if (strcmp(ck->files[t->file_index].path, path) != 0) {
            st = facet_err(err, FACET_E_NOT_FOUND,
                           "%s: index names shard '%s' for tensor '%s' but %s has no tensor "
                           "'%s' (it is in %s)",
                           index_path, shard, tname, path, tname, ck->files[t->file_index].path);
            goto done;
        }
    }
    st = FACET_OK;

done:
    free(names);
    json_decref(root);
    return st;
}

facet_status st_checkpoint_open(const char *dir, st_checkpoint *out, facet_error *err) {
    memset(out, 0, sizeof *out);
    if (!facet_is_dir(dir))
        return facet_err(err, FACET_E_IO, "%s: not a directory", dir);
    char index_path[PATH_MAX], single_path[PATH_MAX];
    if (!facet_path_join(index_path, sizeof index_path, dir, ST_INDEX_NAME) ||
        !facet_path_join(single_path, sizeof single_path, dir, ST_SINGLE_NAME))
        return facet_err(err, FACET_E_IO, "%s: path too long", dir);

    facet_status st;
    if (facet_is_file(index_path)) {
        st = open_sharded(dir, index_path, out, err);
    } else if (facet_is_file(single_path)) {
        out->files = calloc(1, sizeof *out->files);
        if (!out->files) return facet_err(err, FACET_E_NOMEM, "%s: out of memory", dir);
        st = st_open(single_path, &out->files[0], err);
        if (st == FACET_OK) {
            out->n_files = 1;
            st = build_name_table(dir, out, err);
        }
    } else {
        return facet_err(err, FACET_E_IO, "%s: no %s and no %s in the folder", dir,
                         ST_SINGLE_NAME, ST_INDEX_NAME);
    }
    if (st != FACET_OK) st_checkpoint_close(out);
    return st;
}
