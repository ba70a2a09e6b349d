/* cachepin: strict JSON input on top of json-c.
 *
 * Everything cachepin reads as JSON (the OCI state on stdin, the bundle's
 * config.json, the host configuration) comes from someone else and is read by a
 * root process, and json-c 0.16 is lenient even with JSON_TOKENER_STRICT:
 *   - a duplicate key silently replaces the earlier value ({"a":1,"a":2} is {"a":2});
 *   - a key is cut at an escaped NUL ("a\u0000x" becomes "a", and may so collide
 *     with another key);
 *   - single-quoted keys ({'a':1}), NaN, Infinity, -Infinity, "1.", "-01" and "00"
 *     are accepted; raw control characters (tab, newline) are accepted in strings;
 *   - a raw NUL byte ends the input: "{...}\0garbage" parses as "{...}";
 *   - integers beyond the 64-bit range are clamped (99999999999999999999 reads as
 *     UINT64_MAX, json_object_get_int64() then says INT64_MAX with errno 0);
 *   - string values keep an escaped NUL (json_object_get_string_len() counts it,
 *     strlen() stops there).
 * cp_json_parse_object() refuses all of the above but the last two, which the
 * typed getters below handle (and cp_json_parse_object_twice() lets one member
 * repeat a key, for a reader that judges those keys itself). */
#ifndef CP_JSON_H
#define CP_JSON_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Deepest nesting accepted (config.json needs about 6). */
#define CP_JSON_MAX_DEPTH 32

/* Parse BUF (LEN bytes; a NUL byte inside is refused) as exactly one JSON object,
 * with only whitespace after it, and with none of json-c's leniencies listed above.
 * Errors are input errors such as "invalid JSON at byte 12: unexpected character"
 * or "annotations: duplicate key \"a\"".  *OUT is the caller's (json_object_put).
 * Out of memory inside json-c goes the way of every allocation failure, cp_oom()
 * ("cachepin: out of memory"): it is never reported as bad JSON. */
int cp_json_parse_object (const char *buf, size_t len, json_object **out, cp_error_t *err);

/* cp_json_parse_object(), but in the top object's member MEMBER (NULL: none) a key
 * given more than once is not refused, in its object nor in any object inside it:
 * json-c keeps the last value (at the first one's place), as Go's encoding/json
 * does.  *TWICE (the caller's, json_object_put; may be NULL when the caller needs
 * no list) is NULL, or a set (an object whose values are null) of MEMBER's own
 * keys that were given more than once, in document order.  For a member whose
 * reader judges its keys itself: the OCI annotations, where only the cachepin.io/
 * keys are ours (oci/annotations.h).  A duplicate anywhere else, MEMBER itself
 * given twice included, is refused as by cp_json_parse_object(). */
int cp_json_parse_object_twice (const char *buf, size_t len, const char *member, json_object **twice,
                                json_object **out, cp_error_t *err);

/* Whether more text after BUF (LEN bytes) cannot change what it parses to: a whole
 * JSON value is there (what follows it is for cp_json_parse_object() to judge), or
 * an error already.  False while the value is still unfinished. */
bool cp_json_complete (const char *buf, size_t len);

/* The value as compact JSON for "got ..." in messages, cut after 64 bytes.
 * Caller frees. */
char *cp_json_describe (json_object *v);

static inline void
cp_json_putp (json_object **v)
{
  json_object_put (*v);
}
#define cleanup_json __attribute__ ((cleanup (cp_json_putp)))

/* Typed getters.  FIELD names the value in the error ("pid", "linux.resources.cpu.quota"). */

/* A string without NUL, of at most MAX_LEN bytes, non-empty unless ALLOW_EMPTY.
 * *OUT points into V.  "FIELD: expected a string, got 5", "FIELD: contains a NUL
 * character", "FIELD: longer than N bytes", "FIELD: empty". */
int cp_json_string (json_object *v, const char *field, size_t max_len, bool allow_empty, const char **out,
                    cp_error_t *err);

/* A JSON integer (not a double, not a string) in MIN..MAX: "FIELD: expected an
 * integer from MIN to MAX, got -5" ("FIELD: expected an integer, got 1.5" for the
 * whole int64 range).  Integers json-c clamped to INT64_MAX are refused; one
 * clamped to INT64_MIN cannot be told from -9223372036854775808 itself, so keep
 * MIN above INT64_MIN where that matters. */
int cp_json_int (json_object *v, const char *field, int64_t min, int64_t max, int64_t *out, cp_error_t *err);

/* An object: "FIELD: expected an object, got [1]". */
int cp_json_object (json_object *v, const char *field, cp_error_t *err);

/* Member KEY of object OBJ: true and *OUT set when present, false when absent.
 * With NULL_IS_ABSENT a JSON null counts as absent, as Go's encoding/json (which
 * runtimes and engines use) reads it for optional fields. */
bool cp_json_member (json_object *obj, const char *key, bool null_is_absent, json_object **out);

#endif
