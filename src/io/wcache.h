/*
 * wcache.h — the weight cache: converted weight tensors written once to a file and
 * mapped read-only by later loads, so a load that finds a valid cache does no
 * conversion at all.
 *
 * File layout (little-endian, this build's x86-64 layout):
 *   [0, 256)             header: magic "FACETWC1", format version, header+index bytes,
 *                        run-time weight format, entry count, expected file size, data
 *                        offset, the key (source digest, layout digest, dims) and a
 *                        SHA-256 over the header (this field zeroed) and the index
 *   [256, data_offset)   index: WCACHE_ENTRY_BYTES per entry (name, kind, meta bytes,
 *                        data offset and length, data checksum)
 *   [data_offset, size)  tensor data; tensors of 2 MiB or more start on a 2 MiB
 *                        boundary (so a 2 MiB-aligned mapping can use huge pages),
 *                        smaller ones on a 4 KiB boundary; gaps are file holes
 *
 * Data checksum (wcache_checksum): XXH3-64 (seed 0) over the little-endian 64-bit XXH3-64
 * hashes of the entry's data in WCACHE_HASH_BLOCK-byte blocks (the last one shorter; no
 * block for an empty entry). The blocks are what lets a load check a gigabyte over all
 * its threads; being in the index, every checksum is covered by the SHA-256.
 *
 * Validity gate (wcache_parse, wcache_open): magic, format version, sizes, the
 * header/index SHA-256 (catches any flipped bit in them), the key (source digest = what
 * the checkpoint is, layout digest = how this build packs the format, the format, the
 * dims), the file size (catches truncation), every entry inside the file, aligned and
 * named, and last every entry's data checksum (catches damaged tensor data; XXH3 reads
 * a gigabyte in the page cache in about 60 ms per core, a small part of what the cache
 * saves). Alignment padding between entries is never read as weights and is not
 * checked. The source digest (wcache_source_digest) still reads no tensor data of the
 * checkpoint: only config.json, the safetensors headers, the file sizes and times.
 *
 * Writing is atomic: a temporary file in the destination folder, fsync, rename over
 * the destination, fsync of the folder. Concurrent writers each write their own
 * temporary file; the last rename wins and a reader sees either file whole. The file is
 * written unnamed (O_TMPFILE) where the file system allows it, so a writer killed
 * mid-write leaves nothing; elsewhere it leaves its temporary file, which the next write
 * or open of that cache removes (wcache_sweep_stale).
 */
#ifndef FACET_IO_WCACHE_H
#define FACET_IO_WCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "facet_status.h"

#define WCACHE_MAGIC "FACETWC1"
#define WCACHE_VERSION 2u            /* bump when the file layout above changes (2: data
                                        checksums)                                      */
#define WCACHE_HEADER_BYTES 256u
#define WCACHE_ENTRY_BYTES 256u
#define WCACHE_NAME_MAX 160u         /* entry name bytes including the NUL               */
#define WCACHE_META_MAX 64u          /* caller bytes stored with each entry              */
#define WCACHE_N_DIMS 8
#define WCACHE_HASH_BLOCK ((uint64_t)4 << 20) /* bytes per block of the data checksum      */

/* What a cache must match to be used. */
typedef struct wcache_key {
    uint8_t source[32];              /* wcache_source_digest of the checkpoint           */
    uint8_t layout[32];              /* the caller's digest of its run-time layout       */
    uint32_t wformat;                /* run-time weight format (facet_wformat value)      */
    int64_t dims[WCACHE_N_DIMS];     /* from the facts: hidden_size, intermediate_size,
                                        num_hidden_layers, num_attention_heads,
                                        num_key_value_heads, head_dim, vocab_size, 0   */
} wcache_key;

/* One tensor to write: `bytes` of `data`, with `meta_len` <= WCACHE_META_MAX bytes of
 * caller data (e.g. a tensor struct without its pointers) and a caller `kind`. */
typedef struct wcache_item {
    const char *name;                /* < WCACHE_NAME_MAX bytes                          */
    uint32_t kind;
    const void *meta;
    uint32_t meta_len;
    const void *data;
    uint64_t bytes;
} wcache_item;

/* One entry of a parsed cache; pointers point into the parsed buffer. */
typedef struct wcache_entry {
    const char *name;                /* NUL-terminated                                   */
    uint32_t kind;
    const uint8_t *meta;
    uint32_t meta_len;
    const uint8_t *data;             /* into the parsed buffer (or mapping)              */
    uint64_t offset, bytes;
    uint64_t checksum;               /* wcache_checksum of the data, as the index says    */
} wcache_entry;

/* A parsed (and, from wcache_open, mapped) cache file. */
typedef struct wcache_file {
    void *map;                       /* mapping of the whole file, or NULL               */
    size_t map_size;
    size_t huge_bytes;               /* of the mapping, mapped with 2 MiB page-table entries
                                      * (0 when not known)                                */
    int refaulted;                   /* wcache_open dropped the file's small-folio pages
                                      * from the page cache and faulted it in again        */
    uint32_t n_entries;
    wcache_entry *entries;           /* owned, in file order                             */
} wcache_file;

/* Progress of a write: `done` of `total` bytes. */
typedef void (*wcache_progress_fn)(void *user, uint64_t done, uint64_t total);

/* A parallel for-loop the data check may run on: run(pool, n_tasks, fn, ctx) calls
 * fn(ctx, task, thread) once for every task in [0, n_tasks), `thread` in
 * [0, threads of the pool), and returns when all are done (facet_pool_run has this
 * shape; the io layer does not know the thread pool). */
typedef void (*wcache_task_fn)(void *ctx, int task, int thread);
typedef struct wcache_runner {
    void (*run)(void *pool, int n_tasks, wcache_task_fn fn, void *ctx);
    void *pool;
} wcache_runner;

/*
 * SHA-256 identifying a checkpoint's content without reading tensor data: over
 * config.json's bytes, then for each safetensors file in order its 8-byte header length
 * and header bytes, its size and its modification time. `config` (config_len bytes) is
 * config.json; headers[i] / header_lens[i] the files' first 8 + N bytes, file_sizes[i]
 * their sizes, mtimes_ns[i] their st_mtime in nanoseconds (NULL: not hashed). The time
 * is there because the checkpoint's tensor data is not hashed: a file rewritten in place
 * with new values but the same header and size (a re-saved fine-tune) must not match an
 * old cache.
 * Errors: FACET_E_INTERNAL when OpenSSL fails.
 */
facet_status wcache_source_digest(const void *config, size_t config_len, size_t n_files,
                                  const uint8_t *const *headers, const uint64_t *header_lens,
                                  const uint64_t *file_sizes, const int64_t *mtimes_ns,
                                  uint8_t out[32], facet_error *err);

/* SHA-256 of `len` bytes (OpenSSL EVP). Errors: FACET_E_INTERNAL. */
facet_status wcache_sha256(const void *data, size_t len, uint8_t out[32], facet_error *err);

/* The data checksum of `bytes` bytes at `data` (XXH3-64 over the XXH3-64 hashes of its
 * WCACHE_HASH_BLOCK-byte blocks; see the file layout above). */
uint64_t wcache_checksum(const void *data, uint64_t bytes);

/* Store, in a buffer holding at least the header and index, the checksums that
 * wcache_parse checks: the data checksum of every entry whose data range lies inside
 * the buffer (the others keep theirs), then the header/index SHA-256 (for the tests and
 * the fuzz target; the writer computes its checksums from the items). Returns 0, or -1
 * when the buffer is too short for the header and index it declares. */
int wcache_seal(uint8_t *buf, size_t size);

/*
 * Validate a cache image: `buf` holds the whole file (`size` bytes). `key` NULL skips
 * the key comparison (the fuzz target). Every entry's data checksum is checked, on the
 * calling thread. On success *out lists the entries, their `data` pointing into buf
 * (out->map stays NULL: buf is the caller's). Every rejection is FACET_E_FORMAT with a
 * one-line reason naming what differs ("config.json or safetensors headers changed",
 * "file is 1000 bytes, header says 2000 (truncated)", "tensor data checksum mismatch in
 * entry 3 'model.norm.weight' (corrupted)"...); FACET_E_NOMEM.
 */
facet_status wcache_parse(const uint8_t *buf, size_t size, const wcache_key *key, wcache_file *out,
                          facet_error *err);

/*
 * Open `path`, map it read-only (MAP_PRIVATE, the mapping 2 MiB-aligned, advised for
 * huge pages and prefaulted) and validate it against `key` as wcache_parse does, the
 * data checksums last and over `runner` (NULL: on the calling thread). Weights stream
 * faster from 2 MiB pages: when some but under 90% of the mapping is on them (pages a
 * write() or read() left in the page cache in small folios), the file's pages are
 * dropped from the page cache (POSIX_FADV_DONTNEED: clean pages no other process maps)
 * and faulted in again, once (out->refaulted); a refault that still falls short marks
 * the file (extended attribute user.facet.no_refault, where the file system keeps them)
 * so that later loads do not reread it each time. out->huge_bytes says how much of the
 * mapping ended on 2 MiB pages. Errors:
 * FACET_E_NOT_FOUND when the file does not exist, FACET_E_IO, or wcache_parse's.
 * Release with wcache_close.
 */
facet_status wcache_open(const char *path, const wcache_key *key, const wcache_runner *runner,
                         wcache_file *out, facet_error *err);

/* Bytes of the mapping that starts at `addr` (a mapping's first byte) which Linux maps with
 * 2 MiB page-table entries: FilePmdMapped + ShmemPmdMapped (tmpfs) of /proc/self/smaps;
 * -1 when unknown. */
long long wcache_pmd_mapped_bytes(const void *addr);

/* Unmap and free a cache (the struct itself is the caller's). */
void wcache_close(wcache_file *f);

/*
 * Write `n` items as the cache `path` atomically (temporary file beside it, fsync,
 * rename, fsync of the folder), each with its data checksum; the folder must exist.
 * When the file takes at most half of MemAvailable, its written pages are then dropped
 * from the page cache and read back through a huge-page-advised mapping, so the page
 * cache holds it in 2 MiB folios and the next wcache_open maps it on 2 MiB pages at
 * once (where the file system and kernel give large folios; elsewhere this only
 * rereads the file).
 * progress (may be NULL) is called after each item. Errors: FACET_E_IO naming the path
 * and the system error (nothing is left behind), FACET_E_INVALID_ARGUMENT for a name or
 * meta too long, FACET_E_NOMEM.
 */
facet_status wcache_write(const char *path, const wcache_key *key, const wcache_item *items,
                          size_t n, wcache_progress_fn progress, void *user, facet_error *err);

/*
 * Remove the temporary files that writers of cache `path` left behind when they were
 * killed mid-write (Ctrl-C during a first load): regular files named
 * ".tmp-PID-N-BASENAME" beside `path` whose process PID no longer exists on this
 * machine and whose writer's lock is free (wcache_write holds an flock on its file from
 * before it is named until after its rename, so a writer in another PID namespace or on
 * another host is never taken for a dead one).
 * wcache_write and wcache_open call it; errors (an unreadable folder, a file that
 * cannot be removed) are ignored. Returns the number of files removed.
 */
int wcache_sweep_stale(const char *path);

/*
 * The cache paths for checkpoint folder `dir` and format name `fmt` ("bf16"): beside the
 * checkpoint, DIR/.facet-cache/FMT.facetcache (`local`), and in the user's cache folder,
 * $XDG_CACHE_HOME/facet (default $HOME/.cache/facet) / HEX-FMT.facetcache where HEX is the
 * first 16 bytes of the SHA-256 of dir's absolute path, in hex (`user`, "" when neither
 * variable is set). Returns 0, or -1 when a path does not fit `cap`.
 */
int wcache_paths(const char *dir, const char *fmt, char *local, char *user, size_t cap);

/* Create the folder holding file `path` (and its parents), mode 0755. Returns 0 or -1
 * with errno set. */
int wcache_mkdir_for(const char *path);

#endif
