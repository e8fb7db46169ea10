/*
 * device_verdict.h — the capability table's vulkan column judged against one device's
 * real limits (issue 24): what the kernels need (backend/vulkan/needs/vk_needs.h) of
 * what the device offers (backend.h facet_device_limits), for this checkpoint's facts.
 * The loader runs it after opening the device and before reading any weight;
 * `facet conform --backend vulkan` and `facet plan --backend vulkan` run it on the
 * device they open. A refusal names the fact, its value and the device limit:
 *   REFUSED: head_dim=256 is not supported on vulkan (supported: head_dim <= 128 on
 *   DEVICE: the attention kernel stages 25184 bytes of shared memory for head_dim 256,
 *   more than its maxComputeSharedMemorySize of 16384 bytes)
 */
#ifndef FACET_MODEL_DEVICE_VERDICT_H
#define FACET_MODEL_DEVICE_VERDICT_H

#include <stddef.h>

#include "backend/backend.h"
#include "backend/vulkan/needs/vk_needs.h"
#include "model/table.h"

/*
 * Add to *v (whose backend is "vulkan") a refusal for every need of the kernels that
 * device `l` cannot serve for facts `f` run with weights *w (a resolved format, not
 * AUTO): the workgroup and shared memory of the matmul kernels, the attention kernels'
 * shared memory for f->head_dim, the largest weight matrix against maxStorageBufferRange,
 * and the device features of *w's kernels. bf16 weights whose kernels need a feature
 * the device lacks run as f16 when f16's kernels need none it lacks (the rule):
 * *w becomes FACET_WEIGHTS_F16 and a line saying so is written to note (note_cap bytes;
 * "" when nothing changed). `n`: the needs to judge (NULL: vk_needs_current; a test
 * passes its own). Never fails.
 */
void facet_judge_device(const facet_facts *f, facet_weight_format *w,
                        const facet_device_limits *l, const vk_needs *n, facet_verdict *v,
                        char *note, size_t note_cap);

#endif
