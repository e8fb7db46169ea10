/*
 * device_limits.c — a device's limits in one line for the user (backend.h
 * facet_device_limits_line), in every build: conform and plan print it, the unit test
 * formats a hand-made one.
 */
#include <stdio.h>

#include "backend/backend.h"

void facet_device_limits_line(const facet_device_limits *l, char *buf, size_t cap) {
    unsigned f = l->features;
    snprintf(buf, cap,
             "limits: shared memory %u B (maxComputeSharedMemorySize), workgroup %u invocations "
             "(%u x %u x %u), subgroup %u, storage range %llu B (maxStorageBufferRange), "
             "float16 %s, int8 %s, 16-bit storage %s, 8-bit storage %s; buffers in %s "
             "memory, heap %.1f GiB",
             l->max_shared_bytes, l->max_invocations, l->max_group_size[0],
             l->max_group_size[1], l->max_group_size[2], l->subgroup_size,
             (unsigned long long)l->max_storage_range, f & FACET_DEV_FLOAT16 ? "yes" : "no",
             f & FACET_DEV_INT8 ? "yes" : "no", f & FACET_DEV_STORAGE16 ? "yes" : "no",
             f & FACET_DEV_STORAGE8 ? "yes" : "no",
             l->buffer_device_local ? "device-local host-visible" : "system (host-visible)",
             (double)l->buffer_heap_bytes / (1024.0 * 1024 * 1024));
}
