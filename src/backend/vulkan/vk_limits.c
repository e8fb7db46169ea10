/*
 * vk_limits.c — a device's limits (backend.h facet_device_limits_of), read by
 * vk_device.c when the device was opened.
 */
#include "backend/vulkan/vk_internal.h"

const facet_device_limits *facet_device_limits_of(const facet_device *d) {
    return d ? &d->c.limits : NULL;
}
