/*
 * eeb_json.h - what every room writes and reads of JSON (jansson) the same
 * way: a figure that may be unknown, and what a value is, in words.
 */
#ifndef EEB_JSON_H
#define EEB_JSON_H

#include <jansson.h>

/* v as a JSON number, or null when it is NAN (unknown). */
json_t *eeb_json_number(double v);

/* The number at key of o, or NAN when o is not an object, lacks key or
 * holds something else there. */
double eeb_json_number_at(const json_t *o, const char *key);

/* What v is, for an error naming it: "a string", "a number", "null"... */
const char *eeb_json_kind(const json_t *v);

#endif
