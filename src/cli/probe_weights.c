/*
 * probe_weights.c — the weight probe that conform and plan run before judging a
 * checkpoint: facts from the safetensors headers, then the loader's tensor check, so a
 * verdict of "supported" means the loader finds every tensor with its shape.
 */
#include "cli/cli.h"
#include "engine/weights_check.h"
#include "io/safetensors.h"
#include "model/probe.h"

int cli_probe_weights(const char *path, facet_facts *f) {
    if (!facet_dir_has_weights(path)) return 0;
    facet_error err;
    st_checkpoint ck;
    if (st_checkpoint_open(path, &ck, &err) != FACET_OK) return cli_fail(&err);
    facet_status st = facet_facts_probe(f, &ck, &err);
    if (st == FACET_OK && f->family_known) st = facet_weights_check(f, &ck, &err);
    st_checkpoint_close(&ck);
    /* a family outside the table is refused on model_type, whatever its tensors */
    if (st != FACET_OK && f->family_known) return cli_fail(&err);
    return 0;
}
