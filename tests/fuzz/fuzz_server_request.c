/*
 * fuzz_server_request.c — libFuzzer target for the OpenAI request parser of
 * `facet serve` (oai_request_parse: JSON body -> validated request struct), the code
 * every untrusted HTTP body reaches. The first input byte picks the endpoint
 * (completions or chat); the rest is the body. On success the parsed struct is checked
 * against the limits it promises (token ids in range, n, stops, biases), then the
 * error JSON path is exercised too. Seeds (tests/fuzz/seeds/fuzz_server_request/) are
 * small valid and invalid bodies of both endpoints written by hand (chat_tools_bigint and
 * completion_bigint: JSON integers beyond 64 bits, kept exact in tools, refused
 * elsewhere).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/oai_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    oai_kind kind = (data[0] & 1) ? OAI_CHAT : OAI_COMPLETION;
    oai_limits lim = {"stories260k", 512, 16, 16, 20};
    oai_request r;
    oai_error e;
    if (oai_request_parse((const char *)data + 1, size - 1, kind, &lim, &r, &e) == 0) {
        for (size_t i = 0; i < r.n_prompt_ids; i++)
            if (r.prompt_ids[i] < 0 || r.prompt_ids[i] >= lim.n_vocab) abort();
        if (r.n < 1 || r.n > lim.max_n || r.n_stops > lim.max_stops) abort();
        for (int i = 0; i < r.n_stops; i++)
            if (!r.stops[i] || !r.stops[i][0]) abort();
        for (int i = 0; i < r.sampling.n_logit_bias; i++)
            if (r.bias[i].token < 0 || r.bias[i].token >= lim.n_vocab) abort();
        if (kind == OAI_CHAT && (!r.messages || json_array_size(r.messages) == 0)) abort();
        if (kind == OAI_COMPLETION && !r.prompt_text && !r.prompt_ids) abort();
        oai_request_free(&r);
    } else {
        if (e.http_status < 400 || e.http_status > 599) abort();
        char *j = oai_error_json(&e);
        if (!j) abort();
        free(j);
    }
    return 0;
}
