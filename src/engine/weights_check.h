/*
 * weights_check.h — the loader's tensor check without loading (weights.c), for the
 * commands that judge a checkpoint before any weight is read (conform, plan).
 */
#ifndef FACET_ENGINE_WEIGHTS_CHECK_H
#define FACET_ENGINE_WEIGHTS_CHECK_H

#include "io/safetensors.h"
#include "model/facts.h"
#include "util/error.h"

/*
 * Check that checkpoint `ck` holds every tensor the facts `f` call for (f read by
 * facet_facts_read and probed by facet_facts_probe), each with the shape the loader
 * expects: the loader's own walk over the tensor names and shapes, reading headers
 * only (no tensor data, no conversion). `f` and `ck` are only read.
 * Errors, the loader's words: FACET_E_NOT_FOUND "checkpoint: tensor 'NAME' is missing",
 * FACET_E_FORMAT "checkpoint: tensor 'NAME' has shape [..], expected [..] from
 * config.json"; FACET_E_NOMEM.
 */
facet_status facet_weights_check(const facet_facts *f, const st_checkpoint *ck, facet_error *err);

#endif
