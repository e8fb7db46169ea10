/*
 * vk_pipeline.c — one compute pipeline per (embedded shader, variant), made on first
 * use and kept (the pipeline cache of vk.h). Every shader shares one layout:
 * VK_MAX_BINDINGS storage buffers at set 0 and VK_PUSH_BYTES of push constants; the
 * variant is specialization constant 0 (the weight format of the matmul shaders).
 */
#include "backend/vulkan/vk.h"
#include "util/error.h"

#define SPV(name)                                   \
    extern const uint32_t facet_vk_spv_##name[];    \
    extern const size_t facet_vk_spv_##name##_size;
SPV(matvec)
SPV(matmul_tiled)
SPV(rmsnorm)
SPV(rope)
SPV(gated_act)
SPV(kv_round)
SPV(attn_flash)
SPV(attn_reduce)
SPV(add_scaled)
SPV(kv_store)
SPV(layernorm)
SPV(act)
SPV(copy)
#undef SPV

static const char *const names[VK_SH_COUNT] = {"matvec", "matmul_tiled", "rmsnorm", "rope",
                                               "gated_act", "kv_round", "attn_flash",
                                               "attn_reduce", "add_scaled", "kv_store",
                                               "layernorm", "act", "copy"};

const char *vk_shader_name(vk_shader s) { return names[s]; }

const uint32_t *vk_shader_spirv(vk_shader s, size_t *bytes) {
#define CASE(id, name)                          \
    case id:                                    \
        *bytes = facet_vk_spv_##name##_size;    \
        return facet_vk_spv_##name;
    switch (s) {
        CASE(VK_SH_MATVEC, matvec)
        CASE(VK_SH_MATMUL_TILED, matmul_tiled)
        CASE(VK_SH_RMSNORM, rmsnorm)
        CASE(VK_SH_ROPE, rope)
        CASE(VK_SH_GATED_ACT, gated_act)
        CASE(VK_SH_KV_ROUND, kv_round)
        CASE(VK_SH_ATTN_FLASH, attn_flash)
        CASE(VK_SH_ATTN_REDUCE, attn_reduce)
        CASE(VK_SH_ADD_SCALED, add_scaled)
        CASE(VK_SH_KV_STORE, kv_store)
        CASE(VK_SH_LAYERNORM, layernorm)
        CASE(VK_SH_ACT, act)
        CASE(VK_SH_COPY, copy)
    default:
        *bytes = 0;
        return NULL;
    }
#undef CASE
}

static facet_status layouts(vk_ctx *c, facet_error *err) {
    if (c->pipe_layout) return FACET_OK;
    VkDescriptorSetLayoutBinding b[VK_MAX_BINDINGS];
    for (int i = 0; i < VK_MAX_BINDINGS; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = (uint32_t)i,
                                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              .descriptorCount = 1,
                                              .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo dl = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                          .bindingCount = VK_MAX_BINDINGS, .pBindings = b};
    VkResult r = vkCreateDescriptorSetLayout(c->dev, &dl, NULL, &c->set_layout);
    if (r != VK_SUCCESS)
        return facet_err(err, FACET_E_NOMEM, "vulkan: vkCreateDescriptorSetLayout (VkResult %d)", (int)r);
    VkPushConstantRange pc = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = VK_PUSH_BYTES};
    VkPipelineLayoutCreateInfo pl = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                     .setLayoutCount = 1, .pSetLayouts = &c->set_layout,
                                     .pushConstantRangeCount = 1, .pPushConstantRanges = &pc};
    r = vkCreatePipelineLayout(c->dev, &pl, NULL, &c->pipe_layout);
    if (r != VK_SUCCESS)
        return facet_err(err, FACET_E_NOMEM, "vulkan: vkCreatePipelineLayout (VkResult %d)", (int)r);
    return FACET_OK;
}

/* The pipeline of (s, variant), made now if it is the first use. */
facet_status vk_pipeline(vk_ctx *c, vk_shader s, int variant, VkPipeline *out, facet_error *err);
facet_status vk_pipeline(vk_ctx *c, vk_shader s, int variant, VkPipeline *out, facet_error *err) {
    if (c->pipes[s][variant]) {
        *out = c->pipes[s][variant];
        return FACET_OK;
    }
    facet_status st = layouts(c, err);
    if (st != FACET_OK) return st;
    VkResult r;
    if (!c->modules[s]) {
        size_t bytes;
        const uint32_t *code = vk_shader_spirv(s, &bytes);
        VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                       .codeSize = bytes, .pCode = code};
        if ((r = vkCreateShaderModule(c->dev, &mi, NULL, &c->modules[s])) != VK_SUCCESS)
            return facet_err(err, FACET_E_UNSUPPORTED, "vulkan: shader %s: vkCreateShaderModule "
                             "(VkResult %d)", names[s], (int)r);
    }
    int32_t spec = variant;
    VkSpecializationMapEntry me = {.constantID = 0, .offset = 0, .size = sizeof spec};
    VkSpecializationInfo si = {.mapEntryCount = 1, .pMapEntries = &me, .dataSize = sizeof spec,
                               .pData = &spec};
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT, .module = c->modules[s],
                  .pName = "main", .pSpecializationInfo = &si},
        .layout = c->pipe_layout};
    if ((r = vkCreateComputePipelines(c->dev, VK_NULL_HANDLE, 1, &ci, NULL, &c->pipes[s][variant])) !=
        VK_SUCCESS)
        return facet_err(err, FACET_E_UNSUPPORTED, "vulkan: shader %s variant %d: "
                         "vkCreateComputePipelines (VkResult %d)", names[s], variant, (int)r);
    *out = c->pipes[s][variant];
    return FACET_OK;
}
