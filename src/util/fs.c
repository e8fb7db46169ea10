/* fs.c — whole-file reads and path helpers. */
#include "util/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"

facet_status facet_read_file(const char *path, size_t max_bytes, char **data, size_t *len,
                             facet_error *err) {
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return facet_err(err, FACET_E_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return facet_err(err, FACET_E_IO, "%s: not a regular file", path);
    }
    if ((unsigned long long)st.st_size > max_bytes) {
        fclose(f);
        return facet_err(err, FACET_E_LIMIT, "%s: %lld bytes, more than the %zu allowed", path,
                         (long long)st.st_size, max_bytes);
    }
    size_t n = (size_t)st.st_size;
    char *buf = malloc(n + 1);
    if (!buf) {
        fclose(f);
        return facet_err(err, FACET_E_NOMEM, "%s: cannot allocate %zu bytes", path, n + 1);
    }
    size_t got = fread(buf, 1, n, f);
    int rerr = ferror(f);
    fclose(f);
    if (got != n || rerr) {
        free(buf);
        return facet_err(err, FACET_E_IO, "%s: short read (%zu of %zu bytes)", path, got, n);
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return FACET_OK;
}

char *facet_path_join(char *buf, size_t cap, const char *dir, const char *name) {
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/') dl--;
    int n = snprintf(buf, cap, "%.*s/%s", (int)dl, dir, name);
    if (n < 0 || (size_t)n >= cap) return NULL;
    return buf;
}

int facet_is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int facet_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

facet_status facet_mem_available(uint64_t *bytes, facet_error *err) {
    /* procfs files report size 0, so read line by line */
    FILE *fp = fopen("/proc/meminfo", "r");
    if (!fp) return facet_err(err, FACET_E_IO, "/proc/meminfo: cannot open");
    char line[256];
    unsigned long long kb = 0;
    int ok = 0;
    while (!ok && fgets(line, sizeof line, fp)) ok = sscanf(line, "MemAvailable: %llu kB", &kb) == 1;
    fclose(fp);
    if (!ok) return facet_err(err, FACET_E_IO, "/proc/meminfo: no MemAvailable line");
    *bytes = kb > UINT64_MAX / 1024 ? UINT64_MAX : (uint64_t)kb * 1024;
    return FACET_OK;
}

facet_status facet_map_file(const char *path, void **map, size_t *size, facet_error *err) {
    *map = NULL;
    *size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return facet_err(err, FACET_E_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return facet_err(err, FACET_E_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return facet_err(err, FACET_E_IO, "%s: not a regular file", path);
    }
    size_t n = (size_t)sb.st_size;
    if (n > 0) {
        void *p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            return facet_err(err, FACET_E_IO, "%s: cannot mmap %zu bytes: %s", path, n, strerror(e));
        }
        *map = p;
        *size = n;
    }
    close(fd);
    return FACET_OK;
}

void facet_map_release(const void *p, size_t n) {
    long ps = sysconf(_SC_PAGESIZE);
    if (!p || ps <= 0) return;
    uintptr_t a = ((uintptr_t)p + (uintptr_t)ps - 1) & ~((uintptr_t)ps - 1);
    uintptr_t b = ((uintptr_t)p + n) & ~((uintptr_t)ps - 1);
    if (b > a) (void)madvise((void *)a, b - a, MADV_DONTNEED); /* advisory */
}

facet_status facet_map_parse(const char *path, facet_parse_fn parse, void *out, void **map,
                             size_t *size, facet_error *err) {
    void *m;
    size_t n;
    facet_status st = facet_map_file(path, &m, &n, err);
    if (st != FACET_OK) return st;
    static const uint8_t empty[1];
    st = parse(m ? (const uint8_t *)m : empty, n, path, out, err);
    if (st != FACET_OK) {
        if (m) munmap(m, n);
        return st;
    }
    *map = m;
    *size = n;
    return FACET_OK;
}
