/* http_access.c — who may call the server: the API key (Bearer auth) and CORS
 * (allowed origins, OPTIONS preflight). See http.h. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/http.h"

/* Compare the presented key with the configured one in time that depends only on the
 * configured key's length, never on where the two first differ. */
static int key_equal(const char *want, const char *got) {
    size_t nw = strlen(want), ng = strlen(got);
    unsigned diff = (unsigned)(nw != ng);
    for (size_t i = 0; i < nw; i++) {
        unsigned char g = i < ng ? (unsigned char)got[i] : 0;
        diff |= (unsigned)((unsigned char)want[i] ^ g);
    }
    return diff == 0;
}

int srv_auth_ok(const srv_server *s, struct MHD_Connection *c, oai_error *e) {
    const char *key = s->cfg.api_key;
    if (!key || !*key) return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!h) {
        oai_fail(e, 401, "invalid_request_error", NULL, "invalid_api_key",
                 "missing API key: send the header 'Authorization: Bearer KEY' (the "
                 "server was started with --api-key)");
        return 0;
    }
    while (*h == ' ') h++;
    if (strncasecmp(h, "Bearer ", 7) || !key_equal(key, h + 7 + strspn(h + 7, " "))) {
        oai_fail(e, 401, "invalid_request_error", NULL, "invalid_api_key",
                 "incorrect API key in the Authorization header (expected 'Bearer KEY' "
                 "with the server's --api-key)");
        return 0;
    }
    return 1;
}

/* Nonzero when `origin` is in the comma-separated allowed list ("*" allows any). */
static int origin_allowed(const char *list, const char *origin, int *wildcard) {
    *wildcard = 0;
    if (!list || !origin) return 0;
    size_t no = strlen(origin);
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == ',') p++;
        const char *e = p;
        while (*e && *e != ',') e++;
        const char *t = e;
        while (t > p && t[-1] == ' ') t--;
        size_t n = (size_t)(t - p);
        if (n == 1 && *p == '*') {
            *wildcard = 1;
            return 1;
        }
        if (n && n == no && !strncmp(p, origin, n)) return 1;
        p = e;
    }
    return 0;
}

void srv_cors_headers(const srv_server *s, struct MHD_Connection *c, struct MHD_Response *r) {
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    int wildcard;
    if (!origin_allowed(s->cfg.allowed_origins, origin, &wildcard)) return;
    MHD_add_response_header(r, "Access-Control-Allow-Origin", wildcard ? "*" : origin);
    if (!wildcard) MHD_add_response_header(r, "Vary", "Origin");
}

enum MHD_Result srv_preflight(srv_server *s, struct MHD_Connection *c) {
    struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"",
                                                              MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Allow", "GET, HEAD, POST, OPTIONS");
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    int wildcard;
    if (origin_allowed(s->cfg.allowed_origins, origin, &wildcard)) {
        srv_cors_headers(s, c, r);
        MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, HEAD, POST, OPTIONS");
        const char *want = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                       "Access-Control-Request-Headers");
        MHD_add_response_header(r, "Access-Control-Allow-Headers",
                                want && *want ? want : "Authorization, Content-Type");
        MHD_add_response_header(r, "Access-Control-Max-Age", "600");
    }
    enum MHD_Result ok = MHD_queue_response(c, 204, r);
    MHD_destroy_response(r);
    pthread_mutex_lock(&s->metrics.mu);
    s->metrics.requests_total++;
    pthread_mutex_unlock(&s->metrics.mu);
    return ok;
}
