/* vec.c — growth of the typed vectors of vec.h. */
#include "util/vec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int facet_vec_grow_(void *data_ptr, size_t *cap, size_t need, size_t elt_size) {
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 8;
    while (n < need) n = n > SIZE_MAX / 2 ? need : n * 2;
    if (elt_size && n > SIZE_MAX / elt_size) return -1;
    void *old;
    memcpy(&old, data_ptr, sizeof old);
    void *p = realloc(old, n * elt_size);
    if (!p) return -1;
    memcpy(data_ptr, &p, sizeof p);
    *cap = n;
    return 0;
}
