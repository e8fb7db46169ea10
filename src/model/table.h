/*
 * table.h — the capability table and its verdicts (DESIGN.md, "Capability table").
 *
 * The table (table.c) declares, per decoder family profile (keyed by config.json's own
 * model_type, and architectures where one model_type covers several) and per backend,
 * the supported range of every fact. facet_judge() is the only place support is
 * decided: `facet conform`, the loader (facet_load), `facet conform --table` and
 * docs/SUPPORT.md all read it. A checkpoint is never judged by its name.
 *
 * Loader sequence:
 *     facet_facts_read(dir, &f, &err)          config.json + generation_config.json
 *     st_checkpoint_open(dir, &ck, &err)        safetensors headers
 *     facet_facts_probe(&f, &ck, &err)          weight facts (probe.h)
 *     facet_judge(&f, "cpu", &v)                refuse before converting any weight:
 *     if (v.status == FACET_VERDICT_REFUSED)    facet_verdict_error(&v, &err) -> exit 2
 */
#ifndef FACET_MODEL_TABLE_H
#define FACET_MODEL_TABLE_H

#include <stddef.h>

#include "model/facts.h"

#define FACET_MAX_REFUSALS 48
#define FACET_MAX_PENDING 12

typedef enum facet_verdict_status {
    FACET_VERDICT_SUPPORTED = 0,     /* every fact inside the backend's ranges         */
    FACET_VERDICT_PENDING_PROBE = 1, /* config facts supported; weight facts unknown
                                        (no tensor probe ran): conform exits 3         */
    FACET_VERDICT_REFUSED = 2,       /* at least one refusal: conform/run exit 2       */
} facet_verdict_status;

/* One typed refusal: which fact, its value, and the supported range on the backend. */
typedef struct facet_refusal {
    char fact[64];          /* "head_dim", "model_type", "num_local_experts", "backend" */
    char value[96];         /* "96", "mamba", "8"                                       */
    char supported[512];    /* "8..256, even"; "" when the fact has no supported value */
    char text[768];         /* "REFUSED: head_dim=96 is not supported on cpu
                               (supported: 8..256, even)"                               */
} facet_refusal;

typedef struct facet_verdict {
    facet_verdict_status status;
    char backend[16];                     /* "cpu" | "vulkan" | as given                  */
    const char *profile;                  /* matched profile name (static), or NULL      */
    int n_refusals;                       /* all refusals, not only the first            */
    int refusals_dropped;                 /* refusals past FACET_MAX_REFUSALS            */
    facet_refusal refusals[FACET_MAX_REFUSALS];
    int n_pending;                        /* facts that only the tensor probe decides    */
    const char *pending[FACET_MAX_PENDING]; /* static names: "weight dtypes", ...        */
    char ignored[512];                    /* unknown config keys judged inert by name,
                                             comma-separated (printed, never silent)      */
} facet_verdict;

/*
 * Judge facts `f` against the profile of its model_type on `backend` ("cpu" or
 * "vulkan"; anything else is refused naming backend). Fills *out completely; never
 * fails. A verdict is REFUSED when any fact is outside its range (every refusal is
 * listed), else PENDING_PROBE when f->probed is 0, else SUPPORTED.
 */
void facet_judge(const facet_facts *f, const char *backend, facet_verdict *out);

/* Add one refusal to *v ("REFUSED: FACT=VALUE is not supported on v->backend (supported:
 * SUPPORTED)") and make it REFUSED: for what the caller knows beyond the facts (the
 * weight format or KV type a backend runs). Past FACET_MAX_REFUSALS it is counted. */
void facet_verdict_refuse(facet_verdict *v, const char *fact, const char *value,
                          const char *supported);

/* Fill *err with FACET_E_UNSUPPORTED and a one-line message joining the refusals
 * ("REFUSED: a; REFUSED: b"), for the loader. Returns FACET_E_UNSUPPORTED, or FACET_OK
 * (err cleared) when the verdict is not REFUSED. */
facet_status facet_verdict_error(const facet_verdict *v, facet_error *err);

/* Write one line per refusal ("REFUSED: ...\n") into buf (cap bytes, NUL-terminated,
 * truncated when full). Returns the length written. */
size_t facet_verdict_format(const facet_verdict *v, char *buf, size_t cap);

/* Name of a verdict status: "supported", "supported-pending-probe", "refused". */
const char *facet_verdict_status_name(facet_verdict_status s);

/* Nonzero when the table has a profile for `model_type` (on any backend). The fact
 * reader reads shape keys strictly only for these; other model_types are refused by
 * facet_judge naming model_type. */
int facet_table_has_profile(const char *model_type);

#endif
