/*
 * http_client.h - a test's requests to the server over real HTTP on
 * 127.0.0.1 (libcurl), and its answers read as JSON.  Failures assert.
 */
#ifndef EEB_TESTS_HTTP_CLIENT_H
#define EEB_TESTS_HTTP_CLIENT_H

#include <jansson.h>
#include <stddef.h>

struct reply {
    long code;
    char *body; /* NUL-terminated (free it) */
    size_t len;
};

/* method path [body] [token]: the status and the body (free it). */
struct reply request(int port, const char *method, const char *path, const char *body,
                     size_t body_len, const char *token);

/* The reply's JSON field key, as a string; *keep holds the JSON (decref it). */
const char *field(json_t **keep, const struct reply *r, const char *key);

/* The request answers code, and its JSON field key holds value. */
void expect(int port, const char *method, const char *path, const char *body, const char *token,
            long code, const char *key, const char *value);

#endif
