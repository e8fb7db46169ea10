/*
 * device.c — what a binary built without the Vulkan backend answers (backend.h
 * facet_device_*): every device request is refused by name. With FACET_HAVE_VULKAN the
 * functions are vulkan/vk_backend.c's.
 */
#include "backend/backend.h"
#include "util/error.h"

#ifndef FACET_HAVE_VULKAN
int facet_vulkan_built(void) { return 0; }

facet_status facet_device_open(const char *backend, int index, facet_device **out,
                               facet_error *err) {
    (void)index;
    *out = NULL;
    return facet_err(err, FACET_E_UNSUPPORTED,
                     "backend=%s is not built into this binary (built without the Vulkan "
                     "headers and glslc: install libvulkan-dev and glslc, scripts/setup does, "
                     "and rebuild; supported here: cpu)", backend);
}

void facet_device_free(facet_device *d) { (void)d; }

void facet_device_kv_memory(facet_device *d, facet_kv_cache *kv) { (void)d, (void)kv; }

const facet_device_limits *facet_device_limits_of(const facet_device *d) {
    (void)d;
    return NULL;
}

const char *facet_device_describe(const facet_device *d) {
    (void)d;
    return "";
}

uint64_t facet_device_submissions(const facet_device *d) {
    (void)d;
    return 0;
}

facet_status facet_backend_vulkan_create(facet_device *d, facet_backend **out, facet_error *err) {
    (void)d;
    *out = NULL;
    return facet_err(err, FACET_E_UNSUPPORTED, "backend=vulkan is not built into this binary");
}
#endif
