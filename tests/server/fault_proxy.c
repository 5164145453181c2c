/*
 * fault_proxy.c - the forwarder of fault_proxy.h: libmicrohttpd in front,
 * libcurl behind, one request at a time.
 */
#include "fault_proxy.h"

#include <criterion/criterion.h>
#include <curl/curl.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fault_proxy {
    struct MHD_Daemon *d;
    char upstream[64];
    pthread_mutex_t lock;
    char suffix[64]; /* "": pass everything */
    unsigned refused;
};

struct buffer {
    char *data;
    size_t len;
};

static void append(struct buffer *b, const char *data, size_t n)
{
    b->data = realloc(b->data, b->len + n + 1);
    cr_assert_not_null(b->data);
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static size_t gather(char *data, size_t size, size_t n, void *arg)
{
    append(arg, data, size * n);
    return size * n;
}

/* Does what the request asked of upstream; the answer as MHD's. */
static enum MHD_Result forward(struct fault_proxy *p, struct MHD_Connection *c, const char *url,
                               const char *method, const struct buffer *body)
{
    char target[4200], content_type[128] = "application/json";
    snprintf(target, sizeof target, "%s%s", p->upstream, url);
    const char *query = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "task");
    if (query) /* the one query a test of eeb's client sends through here */
        snprintf(target + strlen(target), sizeof target - strlen(target), "?task=%s", query);
    CURL *h = curl_easy_init();
    struct curl_slist *headers = NULL;
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    char line[256];
    if (auth) {
        snprintf(line, sizeof line, "Authorization: %s", auth);
        headers = curl_slist_append(headers, line);
    }
    headers = curl_slist_append(headers, "Content-Type: application/json");
    struct buffer answer = {0};
    curl_easy_setopt(h, CURLOPT_URL, target);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body->data ? body->data : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)body->len);
    }
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, gather);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &answer);
    long code = 502;
    char *type = NULL;
    if (curl_easy_perform(h) == CURLE_OK) {
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &type);
        if (type)
            snprintf(content_type, sizeof content_type, "%s", type);
    }
    curl_slist_free_all(headers);
    curl_easy_cleanup(h);
    struct MHD_Response *r = MHD_create_response_from_buffer(
        answer.len, answer.data ? answer.data : (char *)"", MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", content_type);
    enum MHD_Result sent = MHD_queue_response(c, (unsigned)code, r);
    MHD_destroy_response(r);
    free(answer.data);
    return sent;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *size, void **con_cls)
{
    (void)version;
    struct fault_proxy *p = cls;
    struct buffer *body = *con_cls;
    if (!body) {
        *con_cls = calloc(1, sizeof *body);
        return *con_cls ? MHD_YES : MHD_NO;
    }
    if (*size) {
        append(body, data, *size);
        *size = 0;
        return MHD_YES;
    }
    pthread_mutex_lock(&p->lock);
    size_t n = strlen(url), k = strlen(p->suffix);
    int refuse = k && n >= k && strcmp(url + n - k, p->suffix) == 0;
    p->refused += (unsigned)refuse;
    pthread_mutex_unlock(&p->lock);
    if (!refuse)
        return forward(p, c, url, method, body);
    static const char busy[] = "{\"error\": \"the fault proxy refuses this path\"}";
    struct MHD_Response *r =
        MHD_create_response_from_buffer(sizeof busy - 1, (void *)busy, MHD_RESPMEM_PERSISTENT);
    enum MHD_Result sent = MHD_queue_response(c, 503, r);
    MHD_destroy_response(r);
    return sent;
}

static void done(void *cls, struct MHD_Connection *c, void **con_cls,
                 enum MHD_RequestTerminationCode why)
{
    (void)cls, (void)c, (void)why;
    struct buffer *body = *con_cls;
    if (body)
        free(body->data);
    free(body);
    *con_cls = NULL;
}

struct fault_proxy *fault_proxy_start(const char *upstream, char url[64])
{
    struct fault_proxy *p = calloc(1, sizeof *p);
    cr_assert_not_null(p);
    snprintf(p->upstream, sizeof p->upstream, "%s", upstream);
    pthread_mutex_init(&p->lock, NULL);
    p->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                            handle, p, MHD_OPTION_NOTIFY_COMPLETED, done, p, MHD_OPTION_END);
    cr_assert_not_null(p->d, "the fault proxy did not start");
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(p->d, MHD_DAEMON_INFO_BIND_PORT);
    snprintf(url, 64, "http://127.0.0.1:%u", (unsigned)info->port);
    return p;
}

void fault_proxy_fail(struct fault_proxy *p, const char *suffix)
{
    pthread_mutex_lock(&p->lock);
    snprintf(p->suffix, sizeof p->suffix, "%s", suffix ? suffix : "");
    pthread_mutex_unlock(&p->lock);
}

unsigned fault_proxy_refused(const struct fault_proxy *p)
{
    return p->refused;
}

void fault_proxy_stop(struct fault_proxy *p)
{
    MHD_stop_daemon(p->d);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
