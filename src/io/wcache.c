/*
 * wcache.c — the weight cache file: its validity gate, its read-only mapping and its
 * atomic writer (layout and rules in wcache.h).
 */
#include "io/wcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/file.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <openssl/evp.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "util/error.h"
#include "util/fs.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the weight cache file is little-endian; this build's byte order is not"
#endif

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif

#define HUGE_PAGE ((uint64_t)2 << 20)
#define PAGE ((uint64_t)4096)
#define MAX_ENTRIES (1u << 20)

/* header field offsets */
enum {
    H_MAGIC = 0, H_VERSION = 8, H_INDEX_END = 12, H_WFORMAT = 16, H_N = 20, H_FILE_SIZE = 24,
    H_DATA_OFF = 32, H_SOURCE = 40, H_LAYOUT = 72, H_DIMS = 104, H_DIGEST = 168, H_END = 200
};
/* entry field offsets */
enum {
    E_NAME = 0, E_KIND = 160, E_META_LEN = 164, E_OFFSET = 168, E_BYTES = 176, E_META = 184,
    E_CHECKSUM = 248, E_END = 256
};
_Static_assert(E_META + WCACHE_META_MAX == E_CHECKSUM && E_END == WCACHE_ENTRY_BYTES,
               "weight cache index entry layout");

static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static void wr32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void wr64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static uint64_t round_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

static void hex(const uint8_t *b, size_t n, char *out) {
    for (size_t i = 0; i < n; i++) snprintf(out + 2 * i, 3, "%02x", b[i]);
}

facet_status wcache_sha256(const void *data, size_t len, uint8_t out[32], facet_error *err) {
    unsigned int n = 0;
    if (EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) != 1 || n != 32)
        return facet_err(err, FACET_E_INTERNAL, "weight cache: OpenSSL SHA-256 failed");
    return FACET_OK;
}

facet_status wcache_source_digest(const void *config, size_t config_len, size_t n_files,
                                  const uint8_t *const *headers, const uint64_t *header_lens,
                                  const uint64_t *file_sizes, const int64_t *mtimes_ns,
                                  uint8_t out[32], facet_error *err) {
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;
    uint8_t le[8];
    wr64(le, config_len);
    ok = ok && EVP_DigestUpdate(ctx, le, 8) == 1 && EVP_DigestUpdate(ctx, config, config_len) == 1;
    wr64(le, n_files);
    ok = ok && EVP_DigestUpdate(ctx, le, 8) == 1;
    for (size_t i = 0; ok && i < n_files; i++) {
        wr64(le, header_lens[i]);
        ok = EVP_DigestUpdate(ctx, le, 8) == 1 &&
             EVP_DigestUpdate(ctx, headers[i], (size_t)header_lens[i]) == 1;
        wr64(le, file_sizes[i]);
        ok = ok && EVP_DigestUpdate(ctx, le, 8) == 1;
        if (mtimes_ns) {
            wr64(le, (uint64_t)mtimes_ns[i]);
            ok = ok && EVP_DigestUpdate(ctx, le, 8) == 1;
        }
    }
    unsigned int n = 0;
    ok = ok && EVP_DigestFinal_ex(ctx, out, &n) == 1 && n == 32;
    EVP_MD_CTX_free(ctx);
    return ok ? FACET_OK : facet_err(err, FACET_E_INTERNAL, "weight cache: OpenSSL SHA-256 failed");
}

/* SHA-256 over the header (digest field zeroed) and the index: buf[0, index_end). */
static int header_digest(const uint8_t *buf, uint64_t index_end, uint8_t out[32]) {
    static const uint8_t zeros[32];
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned int n = 0;
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
             EVP_DigestUpdate(ctx, buf, H_DIGEST) == 1 && EVP_DigestUpdate(ctx, zeros, 32) == 1 &&
             EVP_DigestUpdate(ctx, buf + H_END, (size_t)index_end - H_END) == 1 &&
             EVP_DigestFinal_ex(ctx, out, &n) == 1 && n == 32;
    EVP_MD_CTX_free(ctx);
    return ok ? 0 : -1;
}

/* Store the header/index SHA-256 of buf[0, index_end). */
static int seal_header(uint8_t *buf, uint64_t index_end) {
    uint8_t d[32];
    if (header_digest(buf, index_end, d)) return -1;
    memcpy(buf + H_DIGEST, d, 32);
    return 0;
}

/* blocks of the data checksum in `bytes` bytes */
static uint64_t n_blocks(uint64_t bytes) {
    return (bytes + WCACHE_HASH_BLOCK - 1) / WCACHE_HASH_BLOCK;
}

uint64_t wcache_checksum(const void *data, uint64_t bytes) {
    XXH3_state_t st;
    XXH3_INITSTATE(&st);
    XXH3_64bits_reset(&st);
    const uint8_t *p = data;
    for (uint64_t off = 0; off < bytes; off += WCACHE_HASH_BLOCK) {
        uint64_t len = bytes - off < WCACHE_HASH_BLOCK ? bytes - off : WCACHE_HASH_BLOCK;
        uint8_t le[8];
        wr64(le, XXH3_64bits(p + off, (size_t)len));
        XXH3_64bits_update(&st, le, 8);
    }
    return XXH3_64bits_digest(&st);
}

int wcache_seal(uint8_t *buf, size_t size) {
    if (size < WCACHE_HEADER_BYTES) return -1;
    uint64_t index_end = rd32(buf + H_INDEX_END);
    if (index_end < WCACHE_HEADER_BYTES || index_end > size) return -1;
    for (uint64_t i = WCACHE_HEADER_BYTES; i + WCACHE_ENTRY_BYTES <= index_end;
         i += WCACHE_ENTRY_BYTES) {
        uint8_t *e = buf + i;
        uint64_t off = rd64(e + E_OFFSET), bytes = rd64(e + E_BYTES);
        if (off <= size && bytes <= size - off)
            wr64(e + E_CHECKSUM, wcache_checksum(buf + off, bytes));
    }
    return seal_header(buf, index_end);
}

static const char *dim_name(int i) {
    static const char *names[WCACHE_N_DIMS] = {
        "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "head_dim", "vocab_size", "dims[7]"};
    return names[i];
}

/* Everything wcache_parse checks but the data checksums. */
static facet_status parse_index(const uint8_t *buf, size_t size, const wcache_key *key,
                                wcache_file *out, facet_error *err) {
    memset(out, 0, sizeof *out);
    if (size < WCACHE_HEADER_BYTES)
        return facet_err(err, FACET_E_FORMAT,
                         "file is %zu bytes, shorter than its %u-byte header (truncated)", size,
                         WCACHE_HEADER_BYTES);
    if (memcmp(buf + H_MAGIC, WCACHE_MAGIC, 8))
        return facet_err(err, FACET_E_FORMAT, "bad magic (not a facet weight cache)");
    uint32_t version = rd32(buf + H_VERSION);
    if (version != WCACHE_VERSION)
        return facet_err(err, FACET_E_FORMAT, "file format version %u, this build writes %u",
                         version, WCACHE_VERSION);
    uint32_t n = rd32(buf + H_N);
    uint64_t index_end = rd32(buf + H_INDEX_END);
    uint64_t data_off = rd64(buf + H_DATA_OFF), file_size = rd64(buf + H_FILE_SIZE);
    if (n > MAX_ENTRIES || index_end != WCACHE_HEADER_BYTES + (uint64_t)n * WCACHE_ENTRY_BYTES)
        return facet_err(err, FACET_E_FORMAT, "header declares %u entries and an index ending at %llu",
                         n, (unsigned long long)index_end);
    if (index_end > size)
        return facet_err(err, FACET_E_FORMAT,
                         "file is %zu bytes, its index ends at %llu (truncated)", size,
                         (unsigned long long)index_end);
    uint8_t d[32];
    if (header_digest(buf, index_end, d))
        return facet_err(err, FACET_E_INTERNAL, "weight cache: OpenSSL SHA-256 failed");
    if (memcmp(d, buf + H_DIGEST, 32))
        return facet_err(err, FACET_E_FORMAT, "header or index checksum mismatch (corrupted)");
    if (file_size != size)
        return facet_err(err, FACET_E_FORMAT, "file is %zu bytes, header says %llu (%s)", size,
                         (unsigned long long)file_size, size < file_size ? "truncated" : "extended");
    if (data_off < index_end || data_off % PAGE || data_off > file_size)
        return facet_err(err, FACET_E_FORMAT, "data offset %llu is not a page after the index",
                         (unsigned long long)data_off);
    if (key) {
        if (rd32(buf + H_WFORMAT) != key->wformat)
            return facet_err(err, FACET_E_FORMAT, "weight format %u, this load wants %u",
                             rd32(buf + H_WFORMAT), key->wformat);
        if (memcmp(buf + H_SOURCE, key->source, 32))
            return facet_err(err, FACET_E_FORMAT,
                             "config.json, a safetensors header, a file size or a file "
                             "modification time changed");
        if (memcmp(buf + H_LAYOUT, key->layout, 32))
            return facet_err(err, FACET_E_FORMAT,
                             "written by a build with another weight layout");
        for (int i = 0; i < WCACHE_N_DIMS; i++) {
            int64_t v = (int64_t)rd64(buf + H_DIMS + 8 * i);
            if (v != key->dims[i])
                return facet_err(err, FACET_E_FORMAT, "%s is %lld, the facts say %lld", dim_name(i),
                                 (long long)v, (long long)key->dims[i]);
        }
    }
    out->entries = calloc(n ? n : 1, sizeof *out->entries);
    if (!out->entries) return facet_err(err, FACET_E_NOMEM, "weight cache index of %u entries", n);
    out->n_entries = n;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *e = buf + WCACHE_HEADER_BYTES + (size_t)i * WCACHE_ENTRY_BYTES;
        wcache_entry *x = &out->entries[i];
        x->name = (const char *)e + E_NAME;
        x->kind = rd32(e + E_KIND);
        x->meta_len = rd32(e + E_META_LEN);
        x->meta = e + E_META;
        x->offset = rd64(e + E_OFFSET);
        x->bytes = rd64(e + E_BYTES);
        x->checksum = rd64(e + E_CHECKSUM);
        const char *why = NULL;
        if (!memchr(x->name, 0, WCACHE_NAME_MAX) || !x->name[0]) why = "name";
        else if (x->meta_len > WCACHE_META_MAX) why = "meta length";
        else if (x->offset < data_off || x->offset % PAGE || x->offset > file_size ||
                 x->bytes > file_size - x->offset)
            why = "data range";
        if (why) {
            free(out->entries);
            memset(out, 0, sizeof *out);
            return facet_err(err, FACET_E_FORMAT, "index entry %u has a bad %s", i, why);
        }
        x->data = buf + x->offset;
    }
    return FACET_OK;
}

/* The data check spread over a runner: one task per WCACHE_HASH_BLOCK of every entry. */
typedef struct data_check {
    const wcache_file *f;
    uint64_t *first;         /* [n_entries]: the entry's first task                  */
    uint32_t *entry;         /* [n_tasks]: the task's entry                          */
    uint64_t *hash;          /* [n_tasks]: XXH3-64 of the task's block               */
} data_check;

static void hash_block(void *ctx, int task, int thread) {
    (void)thread;
    const data_check *c = ctx;
    const wcache_entry *e = &c->f->entries[c->entry[task]];
    uint64_t off = ((uint64_t)task - c->first[c->entry[task]]) * WCACHE_HASH_BLOCK;
    uint64_t len = e->bytes - off < WCACHE_HASH_BLOCK ? e->bytes - off : WCACHE_HASH_BLOCK;
    wr64((uint8_t *)&c->hash[task], XXH3_64bits(e->data + off, (size_t)len));
}

/* Compare every entry's data with its checksum: over `runner` when given (and the task
 * list fits in memory and an int), else on this thread. FACET_E_FORMAT names the first
 * entry that differs and how many more do. */
static facet_status check_data(const wcache_file *f, const wcache_runner *runner,
                               facet_error *err) {
    const wcache_entry *es = f->entries;
    uint32_t n = f->n_entries, bad = 0, first_bad = 0;
    uint64_t n_tasks = 0;
    for (uint32_t i = 0; i < n; i++) n_tasks += n_blocks(es[i].bytes);
    data_check c = {f, NULL, NULL, NULL};
    if (runner && runner->run && n_tasks > 1 && n_tasks <= INT_MAX) {
        c.first = malloc(sizeof *c.first * (n ? n : 1));
        c.entry = malloc(sizeof *c.entry * (size_t)n_tasks);
        c.hash = malloc(sizeof *c.hash * (size_t)n_tasks);
    }
    if (c.first && c.entry && c.hash) {
        uint64_t t = 0;
        for (uint32_t i = 0; i < n; i++) {
            c.first[i] = t;
            for (uint64_t b = 0; b < es[i].bytes; b += WCACHE_HASH_BLOCK) c.entry[t++] = i;
        }
        runner->run(runner->pool, (int)n_tasks, hash_block, &c);
        /* each entry's checksum: XXH3-64 over its blocks' hashes (stored little-endian) */
        for (uint32_t i = 0; i < n; i++) {
            uint64_t nb = n_blocks(es[i].bytes);
            uint64_t sum = XXH3_64bits(nb ? (const void *)&c.hash[c.first[i]] : (const void *)"",
                                       (size_t)nb * 8);
            if (sum != es[i].checksum && !bad++) first_bad = i;
        }
    } else {
        for (uint32_t i = 0; i < n; i++)
            if (wcache_checksum(es[i].data, es[i].bytes) != es[i].checksum && !bad++) first_bad = i;
    }
    free(c.first);
    free(c.entry);
    free(c.hash);
    if (!bad) return FACET_OK;
    if (bad == 1)
        return facet_err(err, FACET_E_FORMAT,
                         "tensor data checksum mismatch in entry %u '%s' (corrupted)", first_bad,
                         es[first_bad].name);
    return facet_err(err, FACET_E_FORMAT,
                     "tensor data checksum mismatch in entry %u '%s' and %u more entries "
                     "(corrupted)", first_bad, es[first_bad].name, bad - 1);
}

facet_status wcache_parse(const uint8_t *buf, size_t size, const wcache_key *key, wcache_file *out,
                          facet_error *err) {
    facet_status st = parse_index(buf, size, key, out, err);
    if (st == FACET_OK && (st = check_data(out, NULL, err)) != FACET_OK) wcache_close(out);
    return st;
}

void wcache_close(wcache_file *f) {
    if (f->map) munmap(f->map, f->map_size);
    free(f->entries);
    memset(f, 0, sizeof *f);
}

/* mmap fd (size bytes) read-only at a 2 MiB-aligned address; NULL on failure. */
static void *map_aligned(int fd, size_t size) {
    size_t span = size + HUGE_PAGE;
    uint8_t *res = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (res == MAP_FAILED) return NULL;
    uint8_t *al = (uint8_t *)round_up((uintptr_t)res, HUGE_PAGE);
    void *m = mmap(al, size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
    if (m == MAP_FAILED) {
        munmap(res, span);
        return NULL;
    }
    /* release the reservation around the mapping */
    if (al > res) munmap(res, (size_t)(al - res));
    size_t tail = (size_t)(res + span - (al + round_up(size, PAGE)));
    if (tail) munmap(al + round_up(size, PAGE), tail);
    return m;
}

/* Bytes of the mapping that starts at `addr` which the kernel maps with 2 MiB page-table
 * entries (FilePmdMapped + ShmemPmdMapped in /proc/self/smaps: a file on tmpfs counts
 * in the second); -1 when that cannot be read. */
long long wcache_pmd_mapped_bytes(const void *addr) {
    FILE *f = fopen("/proc/self/smaps", "re");
    if (!f) return -1;
    char line[PATH_MAX + 256]; /* a mapping's first line ends with its file's path */
    int in = 0, seen = 0;
    long long total = 0, kb;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char c;
        if (sscanf(line, "%lx-%lx%c", &lo, &hi, &c) == 3 && c == ' ') { /* a mapping's first line */
            if (in) break;
            in = lo == (unsigned long)(uintptr_t)addr;
        } else if (in && (sscanf(line, "FilePmdMapped: %lld kB", &kb) == 1 ||
                          sscanf(line, "ShmemPmdMapped: %lld kB", &kb) == 1)) {
            total += kb;
            seen++;
        }
    }
    fclose(f);
    return seen ? total * 1024 : -1;
}

/* The mark a cache file gets when a refault left it under 90% on 2 MiB pages (memory
 * too fragmented for 2 MiB folios, another process mapping its small pages): later loads
 * then do not drop and reread it each time. A user extended attribute, where the file
 * system keeps them; elsewhere nothing is remembered. A rewritten cache is a new file
 * without it. */
#define NO_REFAULT_XATTR "user.facet.no_refault"

/* Whether a populated mapping of `size` bytes, `pmd` of them on 2 MiB pages, has under
 * 90% of its whole 2 MiB extents on them. */
static int mostly_small(long long pmd, size_t size) {
    uint64_t want = size / HUGE_PAGE * HUGE_PAGE;
    return pmd >= 0 && (uint64_t)pmd < want / 10 * 9;
}

/* Whether faulting the file (fd) in again could put more of its mapping on 2 MiB pages:
 * some of it is (so this file system gives the page cache 2 MiB folios) but under 90%,
 * and no earlier refault of this file fell short (NO_REFAULT_XATTR). Where none of it is
 * (a file system or kernel without large folios, huge pages off, or a file read entirely
 * in small folios, which then stays so until the kernel evicts it), dropping the pages
 * could only cost a read from disk on every load. */
static int refault_helps(int fd, long long pmd, size_t size) {
    char v;
    return pmd > 0 && mostly_small(pmd, size) && fgetxattr(fd, NO_REFAULT_XATTR, &v, 1) < 0;
}

/* Fault the whole huge-page-advised mapping in now, so the load time is honest and the
 * first token does not pay for it. Where the file's pages are not in the page cache yet,
 * the fault's readahead brings them in as 2 MiB folios (Linux does so for a
 * huge-page-advised mapping), which the mapping then maps with 2 MiB entries. */
static void populate(void *m, size_t size) {
    if (madvise(m, size, MADV_POPULATE_READ) != 0) madvise(m, size, MADV_WILLNEED);
}

facet_status wcache_open(const char *path, const wcache_key *key, const wcache_runner *runner,
                         wcache_file *out, facet_error *err) {
    memset(out, 0, sizeof *out);
    wcache_sweep_stale(path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return facet_err(err, errno == ENOENT ? FACET_E_NOT_FOUND : FACET_E_IO, "%s: %s", path,
                         strerror(errno));
    struct stat s;
    if (fstat(fd, &s) != 0 || !S_ISREG(s.st_mode)) {
        close(fd);
        return facet_err(err, FACET_E_IO, "%s: not a readable regular file", path);
    }
    size_t size = (size_t)s.st_size;
    if (size < WCACHE_HEADER_BYTES) {
        close(fd);
        return facet_err(err, FACET_E_FORMAT,
                         "file is %zu bytes, shorter than its %u-byte header (truncated)", size,
                         WCACHE_HEADER_BYTES);
    }
    facet_status st = FACET_OK;
    int refaulted = 0;
    for (int attempt = 0;; attempt++) {
        void *m = map_aligned(fd, size);
        if (!m) {
            int e = errno;
            close(fd);
            return facet_err(err, FACET_E_IO, "%s: cannot map %zu bytes: %s", path, size, strerror(e));
        }
        /* advised before the index is read: its first fault already reads 2 MiB folios */
        madvise(m, size, MADV_HUGEPAGE);
        if ((st = parse_index(m, size, key, out, err)) != FACET_OK) { /* the index pages only */
            munmap(m, size);
            close(fd);
            return st;
        }
        out->map = m;
        out->map_size = size;
        populate(m, size);
        /* Streaming weights from 4 KiB pages reads up to ~15% slower than from 2 MiB ones
         * (bench/RESULTS-cache.md). Pages that a write() or read() put in the page cache
         * may sit in small folios, which no advice maps with 2 MiB entries: then drop
         * them (clean pages no other process maps) and fault the file in again, once. */
        long long pmd = wcache_pmd_mapped_bytes(m);
        out->huge_bytes = pmd > 0 ? (size_t)pmd : 0;
        if (attempt > 0 && mostly_small(pmd, size)) /* fell short: not again (best effort) */
            (void)fsetxattr(fd, NO_REFAULT_XATTR, "1", 1, 0);
        if (attempt > 0 || !refault_helps(fd, pmd, size)) break;
        wcache_close(out);
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        refaulted = 1;
    }
    close(fd);
    out->refaulted = refaulted;
    /* last, the tensor data against its checksums: every page is read once */
    if ((st = check_data(out, runner, err)) != FACET_OK) wcache_close(out);
    return st;
}

static int write_all(int fd, const void *data, uint64_t len, uint64_t off) {
    const uint8_t *p = data;
    while (len) {
        size_t chunk = len > ((uint64_t)1 << 30) ? (size_t)1 << 30 : (size_t)len;
        ssize_t w = pwrite(fd, p, chunk, (off_t)off);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        p += w;
        off += (uint64_t)w;
        len -= (uint64_t)w;
    }
    return 0;
}

/* fsync the folder holding `path` so the rename itself is durable */
static void sync_dir_of(const char *path) {
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* The writer pid in a temporary file name ".tmp-PID-N-BASE", when `name` is one for
 * destination basename `base`; 0 otherwise. */
static long temp_writer_pid(const char *name, const char *base) {
    if (strncmp(name, ".tmp-", 5)) return 0;
    char *end;
    errno = 0;
    long pid = strtol(name + 5, &end, 10);
    if (errno || pid <= 0 || *end != '-') return 0;
    const char *p = end + 1;
    if (*p < '0' || *p > '9') return 0;
    while (*p >= '0' && *p <= '9') p++;
    return *p == '-' && !strcmp(p + 1, base) ? pid : 0;
}

/* A fresh temporary name ".tmp-PID-N-BASE" beside `path` (dlen: the length of its
 * folder part, with the slash) into tmp[cap]. Returns 0, or -1 when too long. */
static int temp_name(char *tmp, size_t cap, const char *path, int dlen) {
    static unsigned counter;
    unsigned c = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
    return snprintf(tmp, cap, "%.*s.tmp-%ld-%u-%s", dlen, path, (long)getpid(), c, path + dlen) >= (int)cap
               ? -1
               : 0;
}

int wcache_sweep_stale(const char *path) {
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    int dlen = slash ? (int)(slash - path) : 1;
    if (snprintf(dir, sizeof dir, "%.*s", dlen, slash ? path : ".") >= (int)sizeof dir) return 0;
    if (!dir[0]) snprintf(dir, sizeof dir, "/");
    DIR *d = opendir(dir);
    if (!d) return 0;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid = temp_writer_pid(e->d_name, base);
        if (!pid || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive, or not ours to judge */
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0) continue;
        struct stat st;
        /* a writer holds its lock until it exits, also one on another host of a shared
         * folder whose pid means nothing here */
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
            unlinkat(dirfd(d), e->d_name, 0) == 0)
            removed++;
        close(fd);
    }
    closedir(d);
    return removed;
}

facet_status wcache_write(const char *path, const wcache_key *key, const wcache_item *items,
                          size_t n, wcache_progress_fn progress, void *user, facet_error *err) {
    if (n > MAX_ENTRIES)
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "weight cache: %zu entries (at most %u)", n,
                         MAX_ENTRIES);
    uint64_t index_end = WCACHE_HEADER_BYTES + (uint64_t)n * WCACHE_ENTRY_BYTES;
    uint8_t *head = calloc(1, (size_t)index_end);
    if (!head) return facet_err(err, FACET_E_NOMEM, "weight cache index of %zu entries", n);
    /* layout: big tensors on 2 MiB boundaries first, then the small ones on pages */
    uint64_t data_off = round_up(index_end, PAGE), cursor = data_off, total = 0;
    for (int big = 1; big >= 0; big--)
        for (size_t i = 0; i < n; i++) {
            const wcache_item *it = &items[i];
            if ((it->bytes >= HUGE_PAGE) != big) continue;
            size_t nl = strlen(it->name);
            if (!nl || nl >= WCACHE_NAME_MAX || it->meta_len > WCACHE_META_MAX) {
                free(head);
                return facet_err(err, FACET_E_INVALID_ARGUMENT,
                                 "weight cache: entry '%s' has a name or meta too long", it->name);
            }
            uint64_t off = round_up(cursor, big ? HUGE_PAGE : PAGE);
            uint8_t *e = head + WCACHE_HEADER_BYTES + i * WCACHE_ENTRY_BYTES;
            memcpy(e + E_NAME, it->name, nl);
            wr32(e + E_KIND, it->kind);
            wr32(e + E_META_LEN, it->meta_len);
            wr64(e + E_OFFSET, off);
            wr64(e + E_BYTES, it->bytes);
            wr64(e + E_CHECKSUM, wcache_checksum(it->data, it->bytes));
            if (it->meta_len) memcpy(e + E_META, it->meta, it->meta_len);
            cursor = off + it->bytes;
            total += it->bytes;
        }
    memcpy(head + H_MAGIC, WCACHE_MAGIC, 8);
    wr32(head + H_VERSION, WCACHE_VERSION);
    wr32(head + H_INDEX_END, (uint32_t)index_end);
    wr32(head + H_WFORMAT, key->wformat);
    wr32(head + H_N, (uint32_t)n);
    wr64(head + H_FILE_SIZE, cursor);
    wr64(head + H_DATA_OFF, data_off);
    memcpy(head + H_SOURCE, key->source, 32);
    memcpy(head + H_LAYOUT, key->layout, 32);
    for (int i = 0; i < WCACHE_N_DIMS; i++) wr64(head + H_DIMS + 8 * i, (uint64_t)key->dims[i]);
    if (seal_header(head, index_end)) {
        free(head);
        return facet_err(err, FACET_E_INTERNAL, "weight cache: OpenSSL SHA-256 failed");
    }

    wcache_sweep_stale(path);
    /* The file is written unnamed (O_TMPFILE) where the file system allows it, so a
     * writer killed mid-write leaves nothing behind; it is linked under a temporary name
     * only when complete, then renamed. Elsewhere it carries the temporary name from the
     * start. Either way the writer holds an flock on it until after the rename, so
     * wcache_sweep_stale never takes a live writer's file. */
    char tmp[PATH_MAX], dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    int dlen = slash ? (int)(slash - path + 1) : 0;
    snprintf(dir, sizeof dir, "%.*s", dlen ? dlen : 1, dlen ? path : ".");
    int named = 0, fd = -1;
    if (access("/proc/self/fd", X_OK) == 0) /* linkat through /proc names it at the end */
        fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
    if (fd < 0) {
        for (int attempt = 0; fd < 0 && attempt < 100; attempt++) {
            if (temp_name(tmp, sizeof tmp, path, dlen)) {
                free(head);
                return facet_err(err, FACET_E_IO, "%s: path too long", path);
            }
            fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644); /* read back: see below */
            if (fd < 0 && errno != EEXIST) break;
        }
        named = fd >= 0;
    }
    if (fd < 0) {
        int e = errno;
        free(head);
        return facet_err(err, FACET_E_IO, "%s: cannot create a temporary file: %s", path, strerror(e));
    }
    flock(fd, LOCK_EX); /* a new file: nobody else holds it */
    int ok = ftruncate(fd, (off_t)cursor) == 0 && write_all(fd, head, index_end, 0) == 0;
    uint64_t done = 0;
    for (size_t i = 0; ok && i < n; i++) {
        const uint8_t *e = head + WCACHE_HEADER_BYTES + i * WCACHE_ENTRY_BYTES;
        if (items[i].bytes) ok = write_all(fd, items[i].data, items[i].bytes, rd64(e + E_OFFSET)) == 0;
        done += items[i].bytes;
        if (ok && progress) progress(user, done, total);
    }
    ok = ok && fsync(fd) == 0;
    int e = errno;
    /* The written pages may sit in small folios (see wcache_open): drop them and read the
     * file back through a huge-page-advised mapping, so the next load is instant and on
     * 2 MiB pages. Not when it takes more than half of MemAvailable: the page cache would
     * not keep it until the next load anyway. */
    uint64_t avail = 0;
    if (ok && facet_mem_available(&avail, NULL) == FACET_OK && cursor <= avail / 2) {
        void *m = map_aligned(fd, (size_t)cursor); /* before the drop: on failure, keep them */
        if (m) {
            madvise(m, (size_t)cursor, MADV_HUGEPAGE);
            posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED); /* nothing of m is faulted in yet */
            populate(m, (size_t)cursor);
            munmap(m, (size_t)cursor);
        }
    }
    if (ok && !named) { /* complete: give it a temporary name beside the destination */
        char self[64];
        snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
        for (int attempt = 0; ok && !named && attempt < 100; attempt++) {
            if (temp_name(tmp, sizeof tmp, path, dlen)) {
                ok = 0;
                e = ENAMETOOLONG;
            } else if (linkat(AT_FDCWD, self, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) == 0) {
                named = 1;
            } else if (errno != EEXIST) {
                ok = 0;
                e = errno;
            }
        }
        if (ok && !named) {
            ok = 0;
            e = EEXIST;
        }
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        e = errno;
    }
    /* the lock goes with the close, after the rename; the data was fsync'd above */
    if (close(fd) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    free(head);
    if (!ok) {
        if (named) unlink(tmp);
        return facet_err(err, FACET_E_IO, "%s: cannot write: %s", path, strerror(e));
    }
    sync_dir_of(path);
    return FACET_OK;
}

int wcache_paths(const char *dir, const char *fmt, char *local, char *user, size_t cap) {
    if ((size_t)snprintf(local, cap, "%s/.facet-cache/%s.facetcache", dir, fmt) >= cap) return -1;
    user[0] = 0;
    char base[PATH_MAX];
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0] == '/')
        snprintf(base, sizeof base, "%s/facet", xdg);
    else if (home && home[0] == '/')
        snprintf(base, sizeof base, "%s/.cache/facet", home);
    else
        return 0;
    char abs[PATH_MAX];
    if (!realpath(dir, abs)) return 0;
    uint8_t d[32];
    if (wcache_sha256(abs, strlen(abs), d, NULL) != FACET_OK) return 0;
    char h[33];
    hex(d, 16, h);
    if ((size_t)snprintf(user, cap, "%s/%s-%s.facetcache", base, h, fmt) >= cap) {
        user[0] = 0;
        return -1;
    }
    return 0;
}

int wcache_mkdir_for(const char *path) {
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    char *slash = strrchr(buf, '/');
    if (!slash || slash == buf) return 0;
    *slash = 0;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
    return 0;
}
