/*
 * fault_proxy.h - an HTTP forwarder between eeb and its server, for tests:
 * every request is passed on as it came, except that while told to, the
 * proxy answers 503 itself to requests whose path ends as given.  The
 * network failing exactly where a test needs it to, over real HTTP.
 */
#ifndef TESTS_FAULT_PROXY_H
#define TESTS_FAULT_PROXY_H

struct fault_proxy;

/* A proxy on a free port of 127.0.0.1 in front of upstream
 * ("http://127.0.0.1:PORT"); its own URL into url (64 bytes). */
struct fault_proxy *fault_proxy_start(const char *upstream, char url[64]);

/* From now on, 503 to paths ending in suffix (NULL: pass everything). */
void fault_proxy_fail(struct fault_proxy *p, const char *suffix);

/* Requests answered 503 so far. */
unsigned fault_proxy_refused(const struct fault_proxy *p);

void fault_proxy_stop(struct fault_proxy *p);

#endif
