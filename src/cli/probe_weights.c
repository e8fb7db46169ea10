/*
 * probe_weights.c — the weight probe that conform and plan run before judging a
 * checkpoint: facts from the safetensors headers, then (unless the table refuses it) the
 * loader's tensor check, so a verdict of "supported" means the loader finds every
 * tensor with its shape.
 */
#include <stdlib.h>

#include "cli/cli.h"
#include "engine/weights_check.h"
#include "io/gguf.h"
#include "io/safetensors.h"
#include "model/facts_gguf.h"
#include "model/gguf_checkpoint.h"
#include "model/probe.h"
#include "model/table.h"
#include "util/error.h"

int cli_probe_weights(const char *path, facet_facts *f, const char *backend) {
    if (!facet_dir_has_weights(path)) return 0;
    facet_error err;
    st_checkpoint ck;
    if (st_checkpoint_open(path, &ck, &err) != FACET_OK) return cli_fail(&err);
    facet_status st = facet_facts_probe(f, &ck, &err);
    if (st == FACET_OK && f->family_known) {
        /* as the loader: a refused checkpoint is refused before its tensors are walked
         * (a refused feature such as experts changes which tensors exist) */
        facet_verdict *v = malloc(sizeof *v);
        if (!v) st = facet_err(&err, FACET_E_NOMEM, "out of memory");
        else {
            facet_judge(f, backend, v);
            if (v->status != FACET_VERDICT_REFUSED) st = facet_weights_check(f, &ck, &err);
            free(v);
        }
    }
    st_checkpoint_close(&ck);
    /* a family outside the table is refused on model_type, whatever its tensors */
    if (st != FACET_OK && f->family_known) return cli_fail(&err);
    return 0;
}

int cli_probe_gguf_weights(const gguf_model *m, const facet_facts *f, const char *backend) {
    facet_error err;
    facet_verdict *v = malloc(sizeof *v);
    if (!v) {
        facet_err(&err, FACET_E_NOMEM, "out of memory");
        return cli_fail(&err);
    }
    facet_judge(f, backend, v);
    facet_gguf_judge(m, v);
    int refused = v->status == FACET_VERDICT_REFUSED;
    free(v);
    if (refused) return 0; /* the refusals are the answer */
    facet_gguf_checkpoint c;
    facet_status st = facet_gguf_checkpoint_open_headers(m, f, &c, &err);
    if (st == FACET_OK) {
        st = facet_weights_check(f, &c.ck, &err);
        facet_gguf_checkpoint_close(&c);
    }
    return st == FACET_OK ? 0 : cli_fail(&err);
}

int cli_refuse_outside_table(const char *path, const facet_facts *f, const char *backend) {
    if (f->family_known) return 0;
    facet_error err;
    facet_verdict *v = malloc(sizeof *v);
    if (!v) {
        facet_err(&err, FACET_E_NOMEM, "out of memory");
        return cli_fail(&err);
    }
    facet_judge(f, backend, v);
    if (gguf_path_is_gguf(path)) { /* general.architecture's refusal too, as the loader's */
        gguf_model m;
        if (gguf_model_open(path, &m, &err) != FACET_OK) {
            free(v);
            return cli_fail(&err);
        }
        facet_gguf_judge(&m, v);
        gguf_model_close(&m);
    }
    facet_status st = facet_verdict_error(v, &err);
    free(v);
    return st == FACET_OK ? 0 : cli_fail(&err);
}
