/*
 * fuzz_wcache.c — libFuzzer target for the weight cache's validity gate (wcache_parse).
 *
 * A cache file is untrusted bytes on disk. The header/index SHA-256 would reject almost
 * every mutation at once, so the target reseals each input (wcache_seal recomputes the
 * checksum for the index size the header declares) before parsing: the fuzzer then
 * reaches the size, offset, alignment and entry checks behind it. Inputs are parsed
 * with no key and with a fixed key; every accepted entry's first and last data bytes
 * are read, so a range the gate lets through outside the buffer shows under ASan.
 * Seeds (tests/fuzz/seeds/fuzz_wcache/) are small valid caches.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/wcache.h"

static volatile uint8_t sink;

static void walk(const uint8_t *buf, size_t size, const wcache_key *key) {
    wcache_file f;
    facet_error err;
    if (wcache_parse(buf, size, key, &f, &err) != FACET_OK) return;
    for (uint32_t i = 0; i < f.n_entries; i++) {
        const wcache_entry *e = &f.entries[i];
        sink ^= (uint8_t)e->name[strlen(e->name)];
        for (uint32_t j = 0; j < e->meta_len; j++) sink ^= e->meta[j];
        if (e->bytes) sink ^= e->data[0] ^ e->data[e->bytes - 1];
    }
    wcache_close(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    walk(buf, size, NULL);   /* as given: mostly the checksum's rejection */
    wcache_seal(buf, size);  /* resealed: the checks behind the checksum     */
    walk(buf, size, NULL);
    wcache_key key;
    memset(&key, 0, sizeof key);
    key.wformat = 1;
    walk(buf, size, &key);
    free(buf);
    return 0;
}
