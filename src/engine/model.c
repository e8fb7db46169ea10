/*
 * model.c — loading a checkpoint: facts -> probe -> verdict -> weights.
 *
 * The loader judges the checkpoint with the same verdict function as `facet conform`
 * (src/model/table.c) and refuses before converting any weight, or mapping a weight
 * cache (weights_cache.c).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "engine/layer.h"
#include "engine/model_internal.h"
#include "io/safetensors.h"
#include "io/gguf.h"
#include "io/wcache.h"
#include "model/device_verdict.h"
#include "model/facts_gguf.h"
#include "model/gguf_checkpoint.h"
#include "model/probe.h"
#include "model/table.h"
#include "model/weights_policy.h"
#include "util/error.h"
#include "util/fs.h"

/* The device's verdict (device_verdict.h) on m's facts and weights; bf16 weights may
 * become f16, which the device's line says (facet_model_info.device_note: the library
 * prints nothing, the CLI and the server print that line). */
static facet_status facet_judge_loaded_device(facet_model *m, facet_error *err) {
    facet_verdict *v = calloc(1, sizeof *v);
    if (!v) return facet_err(err, FACET_E_NOMEM, "verdict");
    snprintf(v->backend, sizeof v->backend, "vulkan");
    char note[320];
    facet_judge_device(&m->facts, &m->weights, facet_device_limits_of(m->device), NULL, v,
                       note, sizeof note);
    snprintf(m->device_line, sizeof m->device_line, "%s%s%s", facet_device_describe(m->device),
             note[0] ? "; " : "", note);
    facet_status st = facet_verdict_error(v, err);
    free(v);
    return st;
}

facet_status facet_model_load(const char *dir, const facet_load_options *opts,
                              facet_model **out, facet_error *err) {
    *out = NULL;
    facet_load_options o = {0};
    if (opts) o = *opts;
    /* the run-time format of weight matrices; AUTO is float32 in this build */
    facet_model *m = NULL;
    if ((int)o.weights < 0 || (int)o.weights > FACET_WEIGHTS_GGUF) {
        facet_tokenizer_free(o.tokenizer);
        return facet_err(err, FACET_E_INVALID_ARGUMENT, "unknown weights format %d", (int)o.weights);
    }
    if (!(m = calloc(1, sizeof *m))) {
        facet_tokenizer_free(o.tokenizer);
        return facet_err(err, FACET_E_NOMEM, "model");
    }
    m->tokenizer = o.tokenizer; /* owned from here (freed with the model) */
    m->backend = !o.backend || !strcmp(o.backend, "cpu") ? "cpu"
                 : !strcmp(o.backend, "vulkan")          ? "vulkan"
                                                         : NULL;
    if (!m->backend) {
        facet_model_free(m);
        return facet_err(err, FACET_E_UNSUPPORTED,
                         "REFUSED: backend=%s is not supported (supported: cpu, vulkan)", o.backend);
    }
    st_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    /* a GGUF file (or a folder holding one): facts from its metadata, its tensors seen
     * under Hugging Face names (gguf_checkpoint.h) */
    int is_gguf = gguf_path_is_gguf(dir);
    if (!is_gguf && o.weights == FACET_WEIGHTS_GGUF) {
        facet_model_free(m);
        return facet_err(err, FACET_E_INVALID_ARGUMENT,
                         "%s: --weights gguf keeps a GGUF file's own block types, and this "
                         "checkpoint is not a GGUF file (expected auto, f32, bf16, f16, int8 or q4)",
                         dir);
    }
    if (is_gguf) o.no_cache = 1; /* the weight cache keys on config.json: a GGUF model is
                                    converted at each load (issue 18) */
    gguf_model gg;
    facet_gguf_checkpoint gck;
    memset(&gg, 0, sizeof gg);
    memset(&gck, 0, sizeof gck);
    facet_status st = is_gguf ? gguf_model_open(dir, &gg, err) : facet_facts_read(dir, &m->facts, err);
    if (st == FACET_OK && is_gguf) st = facet_facts_from_gguf(&gg, &m->facts, err);
    if (st == FACET_OK && !is_gguf) st = st_checkpoint_open(dir, &ck, err);
    if (st == FACET_OK && !is_gguf) st = facet_facts_probe(&m->facts, &ck, err);
    if (st == FACET_OK) {
        /* the same verdict as `facet conform`: refuse before converting any weight, and
         * before the layer range below is checked (a family outside the table has no
         * layer count to check it against: model_type is the answer) */
        facet_verdict *v = malloc(sizeof *v);
        if (!v) st = facet_err(err, FACET_E_NOMEM, "verdict");
        else {
            facet_judge(&m->facts, m->backend, v);
            if (is_gguf) facet_gguf_judge(&gg, v);
            st = facet_verdict_error(v, err);
            free(v);
        }
    }
    if (st == FACET_OK) { /* a pipeline stage's layers (facet_load_options) */
        int64_t L = m->facts.num_hidden_layers;
        m->layer_first = o.layer_first;
        m->layer_end = o.layer_end ? o.layer_end : (int)L;
        m->stage_inner = o.stage_inner;
        m->tp = o.tensor_parallel > 1 ? o.tensor_parallel : 1;
        m->tp_rank = m->tp > 1 ? o.tensor_rank : 0;
        if (m->tp > 1 && (m->tp_rank < 0 || m->tp_rank >= m->tp))
            st = facet_err(err, FACET_E_INVALID_ARGUMENT,
                           "load options: tensor rank %d of %d", o.tensor_rank, m->tp);
        if (o.layer_first < 0 || m->layer_end > L || m->layer_first >= m->layer_end)
            st = facet_err(err, FACET_E_INVALID_ARGUMENT,
                           "load options: layers [%d, %d) are not a range of the model's %lld",
                           o.layer_first, o.layer_end, (long long)L);
    }
    if (st == FACET_OK && is_gguf) {
        st = facet_gguf_checkpoint_open(&gg, &m->facts, &gck, err);
        ck = gck.ck; /* borrowed: closed with gck below */
    }
    /* auto: the checkpoint's own precision, decided by the probed dtypes (a GGUF file's
     * own block types when its matrices have any) */
    m->weights = o.weights == FACET_WEIGHTS_AUTO ? facet_auto_weights(&m->facts) : o.weights;
    /* a format no Vulkan shader reads (the output projection's and, for a GGUF file's own
     * blocks, every matrix's counted) is refused before the weights are read, and the
     * device is opened (named on failure) before they are */
    if (st == FACET_OK && !strcmp(m->backend, "vulkan")) {
        uint32_t gguf_formats = 0;
        for (size_t i = 0; is_gguf && i < gg.n_tensors; i++) {
            int fmt;
            if (facet_gguf_tensor_run_bytes(gg.by_name[i], &fmt) && fmt >= 0)
                gguf_formats |= 1u << fmt;
        }
        int bad = facet_vulkan_unread_format(facet_load_wformats(m->weights, &m->facts,
                                                                 gguf_formats));
        if (bad >= 0)
            st = facet_err(err, FACET_E_UNSUPPORTED,
                           "REFUSED: weights=%s is not supported on vulkan (supported: %s)",
                           facet_wformat_name((facet_wformat)bad), FACET_VULKAN_WEIGHTS);
    }
    if (st == FACET_OK && !strcmp(m->backend, "vulkan") &&
        (o.layer_first || o.layer_end || o.tensor_parallel > 1))
        st = facet_err(err, FACET_E_UNSUPPORTED, "REFUSED: backend=vulkan in a parallel job is "
                       "not supported (supported: one process, the whole model)");
    if (st == FACET_OK && !strcmp(m->backend, "vulkan"))
        st = facet_device_open("vulkan", o.device - 1, &m->device, err);
    /* the vulkan column against this device's real limits, still before any weight */
    if (st == FACET_OK && m->device) st = facet_judge_loaded_device(m, err);
    /* the pool first: the weight cache's checksums are verified over it */
    if (st == FACET_OK) {
        m->pool = facet_pool_create(o.n_threads);
        if (!m->pool) st = facet_err(err, FACET_E_NOMEM, "cannot start %d worker threads", o.n_threads);
    }
    if (st == FACET_OK) st = facet_weights_load(m, dir, &ck, facet_wformat_of(m->weights), &o, err);
    if (is_gguf) {
        facet_gguf_checkpoint_close(&gck);
        gguf_model_close(&gg);
    } else {
        st_checkpoint_close(&ck);
    }
    /* the conversion's float32 buffers are freed, but glibc keeps the heap they grew:
     * give it back, so resident memory is the weights (what `facet plan` counts) */
    if (st == FACET_OK) malloc_trim(0);
    if (st == FACET_OK && m->tp > 1) facet_weights_tp_facts(&m->facts, m->tp);
    if (st == FACET_OK) st = facet_rope_init(m, err);
    if (st == FACET_OK && m->facts.kv_lora_rank > 0) st = facet_mla_prepare(m, err);
    if (st == FACET_OK) {
        if (!m->tokenizer && !m->stage_inner &&
            facet_tokenizer_present(dir)) /* tokenizer.json or GGUF metadata */
            st = facet_tokenizer_load(dir, &m->tokenizer, err);
    }
    if (st != FACET_OK) {
        facet_model_free(m);
        return st;
    }
    *out = m;
    return FACET_OK;
}

void facet_model_free(facet_model *m) {
    if (!m) return;
    facet_weights_free(m);
    facet_device_free(m->device);
    facet_pool_free(m->pool);
    facet_tokenizer_free(m->tokenizer);
    free(m->inv_freq);
    free(m->inv_freq_long);
    free(m->inv_freq_local);
    free(m->alibi_slopes);
    free(m->wcache_path);
    free(m->wcache_note);
    free(m);
}

void facet_model_get_info(const facet_model *m, facet_model_info *info) {
    const facet_facts *f = &m->facts;
    memset(info, 0, sizeof *info);
    info->vocab_size = (int)f->vocab_size;
    info->max_position_embeddings = (int)f->max_position_embeddings;
    info->hidden_size = (int)f->hidden_size;
    info->num_hidden_layers = (int)f->num_hidden_layers;
    info->backend = m->backend;
    info->device_note = m->device ? m->device_line : NULL;
    info->device_submissions = m->device ? facet_device_submissions(m->device) : 0;
    info->bos_token_id = f->bos_token_id;
    info->n_eos = f->n_eos;
    for (int i = 0; i < f->n_eos && i < 16; i++) info->eos_token_ids[i] = f->eos_token_ids[i];
    info->n_threads = m->pool ? facet_pool_size(m->pool) : 0;
    info->weight_bytes = m->w.bytes;
    info->weights = m->weights;
    uint64_t H = (uint64_t)f->hidden_size, I = (uint64_t)f->intermediate_size;
    uint64_t qd = (uint64_t)(f->num_attention_heads * f->head_dim);
    uint64_t kvd = (uint64_t)(f->num_key_value_heads * f->head_dim);
    uint64_t S = (uint64_t)f->n_sparse_layers, D = (uint64_t)f->num_hidden_layers - S;
    info->layer_matrix_params = (uint64_t)f->num_hidden_layers * (2 * qd * H + 2 * kvd * H) +
                                D * 3 * I * H;
    info->decode_bytes = m->w.bytes;
    if (!m->w.lm_head_tied && m->w.embed_tokens.rows > 0) {
        /* an untied embedding table is looked up, one row a token: the rest is not read */
        uint64_t eb = facet_wtensor_bytes(&m->w.embed_tokens);
        info->decode_bytes -= eb - eb / (uint64_t)m->w.embed_tokens.rows;
    }
    if (S) { /* a token reads k of each sparse layer's E experts */
        uint64_t E = (uint64_t)f->num_experts, K = (uint64_t)f->num_experts_per_tok;
        uint64_t EI = (uint64_t)f->moe_intermediate_size;
        uint64_t SI = (uint64_t)f->shared_expert_intermediate_size;
        uint64_t per = f->ffn_ungated ? 2 : 3; /* up and down (ungated), or with gate */
        info->layer_matrix_params += S * (E * H + K * per * EI * H + per * SI * H +
                                          (f->shared_expert_gate ? H : 0));
        for (int64_t l = 0; l < f->num_hidden_layers; l++) {
            const facet_layer_weights *L = &m->w.layers[l];
            if (!L->experts) continue;
            uint64_t all = 0;
            for (uint64_t e = 0; e < E; e++)
                all += facet_wtensor_bytes(&L->experts[e].gate) +
                       facet_wtensor_bytes(&L->experts[e].up) +
                       facet_wtensor_bytes(&L->experts[e].down) +
                       (L->experts[e].down_bias ? (2 * EI + H) * sizeof(float) : 0);
            info->decode_bytes -= all - all / E * K;
        }
    }
    info->weight_cache = m->wcache;
    info->weight_cache_path = m->wcache_path;
    info->weight_cache_note = m->wcache_note;
    info->weight_cache_huge_bytes = m->w.cache ? m->w.cache->huge_bytes : 0;
    info->n_notes = f->n_notes < 16 ? f->n_notes : 16;
    for (int i = 0; i < info->n_notes; i++) info->notes[i] = f->notes[i].text;
}

facet_tokenizer *facet_model_tokenizer(facet_model *m) { return m->tokenizer; }
