/*
 * fuzz_wcache.c — libFuzzer target for the weight cache's validity gate (wcache_parse).
 *
 * A cache file is untrusted bytes on disk. The header/index SHA-256 and the tensor data
 * checksums would reject almost every mutation at once, so the target reseals each
 * input (wcache_seal recomputes the data checksum of every entry whose range lies in the
 * input, then the SHA-256 for the index size the header declares) before parsing: the
 * fuzzer then reaches the size, offset, alignment and entry checks and the data check
 * behind them. Inputs are parsed with no key and with a fixed key; every accepted
 * entry's first and last data bytes are read, so a range the gate lets through outside
 * the buffer shows under ASan; and in every accepted file one flipped byte of an entry's
 * data must be rejected (the data check is not a no-op: otherwise the target traps).
 * Seeds (tests/fuzz/seeds/fuzz_wcache/) are small valid caches of this format version.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/wcache.h"

static volatile uint8_t sink;

/* Parse buf; when accepted, read every entry and, if `flip`, check that flipping a byte
 * in the middle of the first non-empty entry's data gets the file rejected. */
static void walk(uint8_t *buf, size_t size, const wcache_key *key, int flip) {
    wcache_file f;
    facet_error err;
    if (wcache_parse(buf, size, key, &f, &err) != FACET_OK) return;
    uint64_t victim = UINT64_MAX;
    for (uint32_t i = 0; i < f.n_entries; i++) {
        const wcache_entry *e = &f.entries[i];
        sink ^= (uint8_t)e->name[strlen(e->name)];
        for (uint32_t j = 0; j < e->meta_len; j++) sink ^= e->meta[j];
        if (e->bytes) sink ^= e->data[0] ^ e->data[e->bytes - 1];
        if (e->bytes && victim == UINT64_MAX) victim = e->offset + e->bytes / 2;
    }
    wcache_close(&f);
    if (!flip || victim == UINT64_MAX) return;
    buf[victim] ^= 0x20;
    if (wcache_parse(buf, size, key, &f, &err) == FACET_OK) __builtin_trap();
    buf[victim] ^= 0x20;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    walk(buf, size, NULL, 0); /* as given: mostly the checksums' rejection   */
    wcache_seal(buf, size);   /* resealed: the checks behind the checksums    */
    walk(buf, size, NULL, 1);
    wcache_key key;
    memset(&key, 0, sizeof key);
    key.wformat = 1;
    walk(buf, size, &key, 0);
    free(buf);
    return 0;
}
