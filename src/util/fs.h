/*
 * fs.h — small file-system helpers (whole-file reads, path joins).
 */
#ifndef FACET_UTIL_FS_H
#define FACET_UTIL_FS_H

#include <stddef.h>
#include <stdint.h>

#include "facet_status.h"

/* Read the whole file `path` into a malloc'd buffer with a NUL appended (not counted in
 * *len). Errors: FACET_E_IO naming the path and the system error, FACET_E_LIMIT when
 * the file is larger than max_bytes, FACET_E_NOMEM. */
facet_status facet_read_file(const char *path, size_t max_bytes, char **data, size_t *len,
                             facet_error *err);

/* Map the whole regular file `path` read-only (MAP_PRIVATE): *map and *size receive the
 * mapping (NULL and 0 for an empty file); the caller releases it with munmap(*map, *size)
 * when *map is not NULL. Errors: FACET_E_IO naming the path and the system error ("cannot
 * open", "cannot stat", "not a regular file", "cannot mmap N bytes"). */
facet_status facet_map_file(const char *path, void **map, size_t *size, facet_error *err);

/* Drop the pages of [p, p + n) inside a facet_map_file mapping from this process's
 * resident set (the whole pages within the range; MADV_DONTNEED). The mapping is
 * read-only and never written, so a later read of the range faults the bytes back in from
 * the file: nothing is lost, only memory freed once a loader has copied the bytes. */
void facet_map_release(const void *p, size_t n);

/* A parser of a whole file's bytes (buf may not be NUL-terminated; size may be 0). */
typedef facet_status (*facet_parse_fn)(const uint8_t *buf, size_t size, const char *what,
                                       void *out, facet_error *err);

/* Map `path` (facet_map_file) and parse its bytes with parse(buf, size, path, out, err);
 * an empty file is parsed as zero bytes. On success *map and *size receive the mapping,
 * which the caller keeps while `out` points into it (munmap(*map, *size) when *map is not
 * NULL); on any failure nothing stays mapped and *map / *size are not written. Errors:
 * facet_map_file's, or the parser's. */
facet_status facet_map_parse(const char *path, facet_parse_fn parse, void *out, void **map,
                             size_t *size, facet_error *err);

/* Join dir and name with one '/' into buf (size cap); returns buf, or NULL if the result
 * does not fit. */
char *facet_path_join(char *buf, size_t cap, const char *dir, const char *name);

/* Nonzero when `path` exists and is a regular file. */
int facet_is_file(const char *path);

/* Nonzero when `path` exists and is a directory. */
int facet_is_dir(const char *path);

/* MemAvailable of /proc/meminfo in bytes (the kernel's estimate of what can be allocated
 * without swapping; cgroup limits not counted). Errors: FACET_E_IO when the file or the
 * line is missing. */
facet_status facet_mem_available(uint64_t *bytes, facet_error *err);

#endif
