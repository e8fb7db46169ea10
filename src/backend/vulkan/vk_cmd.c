/*
 * vk_cmd.c — recording and submitting (vk.h): one command buffer per submission, a
 * descriptor set per dispatch from a pool reset when recording starts, and the arena of
 * the pending work's buffers. Every dispatch is followed by a compute-to-compute memory
 * barrier, so a chain of operations (a whole forward chunk) is one submission: recording
 * starts at the first dispatch (vk_open) and ends at vk_sync.
 */
#include <assert.h>
#include <string.h>

#include "backend/vulkan/vk.h"
#include "util/error.h"

facet_status vk_pipeline(vk_ctx *c, vk_shader s, int variant, VkPipeline *out, facet_error *err);

#define SETS_PER_POOL 1024

static facet_status desc_pool(vk_ctx *c, uint32_t sets, facet_error *err) {
    if (c->desc_pool && sets <= c->desc_sets_max) return FACET_OK;
    if (c->desc_pool) vkDestroyDescriptorPool(c->dev, c->desc_pool, NULL);
    c->desc_pool = VK_NULL_HANDLE;
    VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                               .descriptorCount = sets * VK_MAX_BINDINGS};
    VkDescriptorPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                     .maxSets = sets, .poolSizeCount = 1, .pPoolSizes = &ps};
    VkResult r = vkCreateDescriptorPool(c->dev, &pi, NULL, &c->desc_pool);
    if (r != VK_SUCCESS)
        return facet_err(err, FACET_E_NOMEM, "vulkan: vkCreateDescriptorPool (VkResult %d)", (int)r);
    c->desc_sets_max = sets;
    return FACET_OK;
}

/* Start recording if nothing is pending. */
facet_status vk_open(vk_ctx *c, facet_error *err) {
    if (c->recording) return FACET_OK;
    facet_status st = desc_pool(c, SETS_PER_POOL, err);
    if (st != FACET_OK) return st;
    vkResetDescriptorPool(c->dev, c->desc_pool, 0);
    c->desc_sets = 0;
    c->n_dispatch = 0;
    vkResetCommandBuffer(c->cmd, 0);
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VkResult r = vkBeginCommandBuffer(c->cmd, &bi);
    if (r != VK_SUCCESS)
        return facet_err(err, FACET_E_IO, "vulkan: vkBeginCommandBuffer (VkResult %d)", (int)r);
    c->recording = 1;
    return FACET_OK;
}

/* The arena is a chain of blocks, each a buffer of its own: a block in use by recorded
 * dispatches is never reallocated, so a take that does not fit moves to the next block
 * (made twice the size of the last, or as large as the take). All are emptied at vk_sync. */
facet_status vk_take(vk_ctx *c, size_t bytes, vk_range *out, void **host, facet_error *err) {
    VkDeviceSize n = (VkDeviceSize)vk_align(c, bytes ? bytes : 4);
    while (c->cur_arena < c->n_arenas && c->arena_used + n > c->arenas[c->cur_arena].size) {
        c->cur_arena++;
        c->arena_used = 0;
    }
    if (c->cur_arena == c->n_arenas) {
        if (c->n_arenas == VK_MAX_ARENAS)
            return facet_err(err, FACET_E_NOMEM, "vulkan: more than %d arena blocks in one "
                             "submission", VK_MAX_ARENAS);
        VkDeviceSize cap = c->n_arenas ? 2 * c->arenas[c->n_arenas - 1].size : (VkDeviceSize)1 << 22;
        while (cap < n) cap *= 2;
        facet_status st = vk_buf_create(c, cap, &c->arenas[c->n_arenas], err);
        if (st != FACET_OK) return st;
        c->n_arenas++;
        c->arena_used = 0;
    }
    vk_buf *a = &c->arenas[c->cur_arena];
    *out = (vk_range){a->buf, c->arena_used, n};
    if (host) *host = (uint8_t *)a->map + c->arena_used;
    c->arena_used += n;
    return FACET_OK;
}

static facet_status submit(vk_ctx *c, facet_error *err);

/* Submit what is recorded so far and begin again, the arena's contents kept: the
 * descriptor pool is full. */
static facet_status flush(vk_ctx *c, facet_error *err) {
    facet_status st = submit(c, err);
    if (st != FACET_OK) return st;
    return vk_open(c, err);
}

facet_status vk_dispatch(vk_ctx *c, vk_shader shader, int variant, const vk_range *ranges,
                         int n, const void *push, size_t push_bytes, uint32_t gx, uint32_t gy,
                         uint32_t gz, facet_error *err) {
    assert(c->recording && n <= VK_MAX_BINDINGS && push_bytes <= VK_PUSH_BYTES);
    if (gx == 0 || gy == 0 || gz == 0) return FACET_OK;
    VkPipeline pipe;
    facet_status st = vk_pipeline(c, shader, variant, &pipe, err);
    if (st == FACET_OK && c->desc_sets == c->desc_sets_max) st = flush(c, err);
    if (st != FACET_OK) return st;
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = c->desc_pool, .descriptorSetCount = 1,
                                      .pSetLayouts = &c->set_layout};
    VkDescriptorSet set;
    VkResult r = vkAllocateDescriptorSets(c->dev, &ai, &set);
    if (r != VK_SUCCESS)
        return facet_err(err, FACET_E_NOMEM, "vulkan: vkAllocateDescriptorSets (VkResult %d)", (int)r);
    c->desc_sets++;
    VkDescriptorBufferInfo bi[VK_MAX_BINDINGS];
    VkWriteDescriptorSet w[VK_MAX_BINDINGS];
    for (int i = 0; i < VK_MAX_BINDINGS; i++) {
        if (i < n && ranges[i].buf)
            bi[i] = (VkDescriptorBufferInfo){ranges[i].buf, ranges[i].off, ranges[i].size};
        else
            bi[i] = (VkDescriptorBufferInfo){c->dummy, 0, VK_WHOLE_SIZE};
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstSet = set, .dstBinding = (uint32_t)i,
                                      .descriptorCount = 1,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = &bi[i]};
    }
    vkUpdateDescriptorSets(c->dev, VK_MAX_BINDINGS, w, 0, NULL);
    uint8_t pc[VK_PUSH_BYTES] = {0};
    if (push_bytes) memcpy(pc, push, push_bytes);
    vkCmdBindPipeline(c->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    vkCmdBindDescriptorSets(c->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, c->pipe_layout, 0, 1, &set, 0,
                            NULL);
    vkCmdPushConstants(c->cmd, c->pipe_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, VK_PUSH_BYTES, pc);
    vkCmdDispatch(c->cmd, gx, gy, gz);
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    vkCmdPipelineBarrier(c->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    c->n_dispatch++;
    return FACET_OK;
}

static facet_status submit(vk_ctx *c, facet_error *err) {
    assert(c->recording);
    c->recording = 0;
    /* the host reads the outputs through the mapping: make the writes visible to it */
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(c->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                         0, 1, &mb, 0, NULL, 0, NULL);
    VkResult r = vkEndCommandBuffer(c->cmd);
    if (r != VK_SUCCESS)
        return facet_err(err, FACET_E_IO, "vulkan: vkEndCommandBuffer (VkResult %d)", (int)r);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1,
                       .pCommandBuffers = &c->cmd};
    vkResetFences(c->dev, 1, &c->fence);
    if ((r = vkQueueSubmit(c->queue, 1, &si, c->fence)) != VK_SUCCESS ||
        (r = vkWaitForFences(c->dev, 1, &c->fence, VK_TRUE, UINT64_MAX)) != VK_SUCCESS)
        return facet_err(err, FACET_E_IO, "vulkan: submission failed on %s (VkResult %d)",
                         c->device_name, (int)r);
    c->n_submits++;
    return FACET_OK;
}

facet_status vk_wait(vk_ctx *c, facet_error *err) {
    return c->recording ? submit(c, err) : FACET_OK;
}

facet_status vk_sync(vk_ctx *c, facet_error *err) {
    facet_status st = c->recording ? submit(c, err) : FACET_OK;
    c->cur_arena = 0;
    c->arena_used = 0;
    return st;
}

void vk_arena_free(vk_ctx *c) {
    for (int i = 0; i < c->n_arenas; i++) vk_buf_destroy(c, &c->arenas[i]);
    c->n_arenas = c->cur_arena = 0;
    c->arena_used = 0;
}
