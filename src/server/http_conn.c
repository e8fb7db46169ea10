/* http_conn.c — the server's TCP connections: the count behind --max-connections and
 * the request deadline that cuts a client still sending one request after --timeout
 * seconds, however it paces its bytes (see http.h). */
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "server/http.h"
#include "util/error.h"

/* One TCP connection (MHD's socket context). Fields are guarded by srv_conns.mu. */
struct srv_conn {
    int fd;
    int receiving;   /* a request (headers and body) is being received                 */
    int cut;         /* shut down by the deadline                                       */
    double start;    /* when receiving began (monotonic seconds)                        */
    struct srv_conn *prev, *next;
};

void srv_conns_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                      enum MHD_ConnectionNotificationCode toe) {
    srv_server *s = cls;
    srv_conns *cs = &s->conns;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        srv_conn *k = calloc(1, sizeof *k);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        pthread_mutex_lock(&cs->mu);
        cs->count++;
        if (k) {
            k->fd = ci ? ci->connect_fd : -1;
            k->receiving = 1;
            k->start = srv_now();
            k->next = cs->head;
            if (cs->head) cs->head->prev = k;
            cs->head = k;
        }
        pthread_mutex_unlock(&cs->mu);
        *socket_context = k;
        return;
    }
    /* CLOSED: MHD closes the socket after this returns, so the reaper (which shuts
     * sockets down under the same lock) never touches a reused descriptor */
    srv_conn *k = *socket_context;
    pthread_mutex_lock(&cs->mu);
    cs->count--;
    if (k) {
        if (k->prev) k->prev->next = k->next;
        else cs->head = k->next;
        if (k->next) k->next->prev = k->prev;
    }
    pthread_mutex_unlock(&cs->mu);
    free(k);
    *socket_context = NULL;
}

static srv_conn *conn_of(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

void srv_conn_receiving(srv_server *s, struct MHD_Connection *c, int receiving) {
    srv_conn *k = conn_of(c);
    if (!k) return;
    pthread_mutex_lock(&s->conns.mu);
    k->receiving = receiving;
    k->start = srv_now();
    pthread_mutex_unlock(&s->conns.mu);
}

int srv_conns_over(srv_server *s) {
    pthread_mutex_lock(&s->conns.mu);
    int over = s->conns.count > s->cfg.max_connections;
    pthread_mutex_unlock(&s->conns.mu);
    return over;
}

int srv_conns_hard_limit(const srv_server *s) {
    int m = s->cfg.max_connections;
    int spare = m / 4 > SRV_CONN_SPARE_MIN ? m / 4 : SRV_CONN_SPARE_MIN;
    return m + spare;
}

/* Every 100 ms: shut down the sockets of connections that began receiving a request
 * more than timeout_s ago and have not finished (MHD's thread then sees the end of
 * the stream and closes the connection). */
static void *reaper_main(void *arg) {
    srv_server *s = arg;
    srv_conns *cs = &s->conns;
    pthread_mutex_lock(&cs->mu);
    while (!cs->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&cs->cv, &cs->mu, &ts);
        double now = srv_now();
        for (srv_conn *k = cs->head; k; k = k->next)
            if (k->receiving && !k->cut && k->fd >= 0 && now - k->start > s->cfg.timeout_s) {
                shutdown(k->fd, SHUT_RDWR);
                k->cut = 1;
                cs->cut++;
            }
    }
    pthread_mutex_unlock(&cs->mu);
    return NULL;
}

facet_status srv_conns_start(srv_server *s, facet_error *err) {
    srv_conns *cs = &s->conns;
    pthread_mutex_init(&cs->mu, NULL);
    pthread_cond_init(&cs->cv, NULL);
    cs->inited = 1;
    if (pthread_create(&cs->reaper, NULL, reaper_main, s))
        return facet_err(err, FACET_E_INTERNAL, "cannot start the connection reaper thread");
    cs->started = 1;
    return FACET_OK;
}

void srv_conns_stop(srv_server *s) {
    srv_conns *cs = &s->conns;
    if (!cs->inited) return;
    if (cs->started) {
        pthread_mutex_lock(&cs->mu);
        cs->stop = 1;
        pthread_cond_signal(&cs->cv);
        pthread_mutex_unlock(&cs->mu);
        pthread_join(cs->reaper, NULL);
        cs->started = 0;
    }
}

void srv_conns_destroy(srv_server *s) {
    srv_conns *cs = &s->conns;
    if (!cs->inited) return;
    srv_conns_stop(s);
    pthread_mutex_destroy(&cs->mu);
    pthread_cond_destroy(&cs->cv);
    cs->inited = 0;
}
