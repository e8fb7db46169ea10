/*
 * vec.h — the one growable array of the code base.
 *
 * Declare a typed vector as a struct with `data`, `len` and `cap` members, e.g.
 *     typedef FACET_VEC(int32_t) ids_vec;   ids_vec v = {0};
 * and use the macros, which work for any element type:
 *     if (facet_vec_push(&v, 42)) -> out of memory (v unchanged)
 *     if (facet_vec_reserve(&v, n)) ...          room for n elements in all
 *     free(v.data);
 * Growth doubles the capacity (at least 8 elements); element counts are checked
 * against size overflow. On failure the vector is unchanged and still owns its data.
 */
#ifndef FACET_UTIL_VEC_H
#define FACET_UTIL_VEC_H

#include <stddef.h>

#define FACET_VEC(T)   \
    struct {           \
        T *data;       \
        size_t len;    \
        size_t cap;    \
    }

/* Grow the buffer at *data_ptr (a pointer to the vector's `data` member, any element
 * type) to hold at least `need` elements of elt_size bytes. 0 ok, -1 out of memory or
 * overflow (nothing changed). */
int facet_vec_grow_(void *data_ptr, size_t *cap, size_t need, size_t elt_size);

/* Room for `need` elements in all: 0 ok, -1 out of memory. */
#define facet_vec_reserve(v, need)                                                            \
    ((size_t)(need) <= (v)->cap ? 0                                                           \
                                : facet_vec_grow_(&(v)->data, &(v)->cap, (size_t)(need),      \
                                                  sizeof *(v)->data))

/* Append one element (evaluated once): 0 ok, -1 out of memory (v unchanged). */
#define facet_vec_push(v, item)                                                               \
    (facet_vec_reserve((v), (v)->len + 1) ? -1 : ((v)->data[(v)->len++] = (item), 0))

/* The same growth for an array whose pointer and capacity are kept under other names
 * (`ptr` and `cap` lvalues, e.g. l->off and l->cap): room for `need` elements at ptr.
 * 0 ok, -1 out of memory (nothing changed). Parallel arrays sharing one count grow each
 * with its own copy of the capacity and keep the smaller. */
#define facet_array_reserve(ptr, cap, need)                                                    \
    ((size_t)(need) <= (cap) ? 0 : facet_vec_grow_(&(ptr), &(cap), (size_t)(need), sizeof *(ptr)))

/* Free the elements' buffer and reset to empty. */
#define facet_vec_free(v)          \
    do {                           \
        free((v)->data);           \
        (v)->data = NULL;          \
        (v)->len = (v)->cap = 0;   \
    } while (0)

#endif
