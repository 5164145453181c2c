/*
 * http_client.c - a test's requests to the server over real HTTP on
 * 127.0.0.1 (libcurl), and its answers read as JSON.
 */
#include "tests/server/http_client.h"

#include <criterion/criterion.h>
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

static size_t gather(char *data, size_t size, size_t n, void *arg)
{
    struct reply *r = arg;
    char *grown = realloc(r->body, r->len + size * n + 1);
    cr_assert(grown);
    memcpy(grown + r->len, data, size * n);
    r->body = grown, r->len += size * n;
    r->body[r->len] = '\0';
    return size * n;
}

/* method path [body] [token]: the status and the body (free it). */
struct reply request(int port, const char *method, const char *path, const char *body,
                     size_t body_len, const char *token)
{
    struct reply r = {0};
    char url[256], auth[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    CURL *c = curl_easy_init();
    cr_assert(c);
    struct curl_slist *headers = NULL;
    if (token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        headers = curl_slist_append(headers, auth);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, gather);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    }
    CURLcode rc = curl_easy_perform(c);
    /* a 413 may close the connection while the body is still being sent */
    cr_assert(rc == CURLE_OK || rc == CURLE_SEND_ERROR, "%s %s: %s", method, path,
              curl_easy_strerror(rc));
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.code);
    curl_slist_free_all(headers);
    curl_easy_cleanup(c);
    return r;
}

/* The reply's JSON field key, as a string. */
const char *field(json_t **keep, const struct reply *r, const char *key)
{
    json_error_t je;
    *keep = json_loads(r->body ? r->body : "", 0, &je);
    cr_assert(*keep, "not JSON (%s): %s", je.text, r->body);
    return json_string_value(json_object_get(*keep, key));
}

void expect(int port, const char *method, const char *path, const char *body, const char *token,
            long code, const char *key, const char *value)
{
    struct reply r = request(port, method, path, body, body ? strlen(body) : 0, token);
    cr_expect_eq(r.code, code, "%s %s: %ld %s", method, path, r.code, r.body);
    json_t *o;
    const char *v = field(&o, &r, key);
    cr_expect(v && strstr(v, value), "%s %s: '%s' lacks '%s': %s", method, path, key, value,
              r.body);
    json_decref(o);
    free(r.body);
}
