/* cachepin: a strict JSON pull reader, for schema-driven readers that must not
 * build a DOM (hook/state/ledger_codec.c reads a ledger of thousands of entries on
 * every hook run).
 *
 * The reader walks its own object and array brackets with cp_jp_skip_space(),
 * cp_jp_expect() and P->buf[P->pos], and reads each value with cp_jp_string() or
 * cp_jp_value().  What this module checks, it checks as policy/base/json.h's strict
 * reader does: no raw control character in a string, only JSON's escapes,
 * \uXXXX decoded (a surrogate pair to its code point, a lone surrogate to
 * U+FFFD, as json-c does), UTF-8 lead and continuation bytes as json-c checks
 * them (the finer rules, overlong forms and surrogates, are the fields' own
 * checks: policy/base/text.h), RFC 8259 numbers only (no NaN, Infinity, leading zero,
 * "1."), the literals true, false and null, nesting at most CP_JSON_MAX_DEPTH.
 * What the caller checks: the NUL bytes of the text (before it starts), its
 * keys (duplicates, an escaped NUL: a decoded key may hold one), and the text
 * after the top value.  Every failure is an input error "invalid JSON at byte
 * N: why" ("unexpected end of data" at the end of the text). */
#ifndef CP_JSONPULL_H
#define CP_JSONPULL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

enum cp_jp_type
{
  CP_JP_ABSENT = 0, /* (for the caller's records: a member not seen) */
  CP_JP_STRING,
  CP_JP_INT,    /* an integer literal (no fraction, no exponent) */
  CP_JP_NUMBER, /* any other number */
  CP_JP_TRUE,
  CP_JP_FALSE,
  CP_JP_NULL,
  CP_JP_OBJECT,
  CP_JP_ARRAY,
};

/* One value as read. */
struct cp_jp_val
{
  enum cp_jp_type type;
  size_t at, raw_len; /* its text: buf[at, at + raw_len), for "got ..." */
  const char *s;      /* CP_JP_STRING: the decoded bytes, NOT NUL-terminated: s[0, slen), */
  size_t slen;        /* in the text or in the arena; they may hold a NUL */
  int64_t i;          /* CP_JP_INT, unless big */
  bool big;           /* CP_JP_INT beyond the int64 range */
};

struct cp_jp
{
  const char *buf;
  size_t len, pos;
  char *arena; /* decoded strings with escapes (a string without points into buf) */
  size_t used;
  cp_error_t *err;
};

/* Frees the arena (the values' strings with escapes). */
void cp_jp_release (struct cp_jp *p);

/* Fail with "invalid JSON at byte AT: WHY" (an input error). */
int cp_jp_fail (struct cp_jp *p, size_t at, const char *why);

/* JSON's white space: space, tab, newline, carriage return. */
bool cp_jp_is_space (char c);

/* Skip white space; fail at the end of the text (something must follow). */
int cp_jp_skip_space (struct cp_jp *p);

/* Skip white space, then the character C, or fail with WHY. */
int cp_jp_expect (struct cp_jp *p, char c, const char *why);

/* At a '"': the string into *V, P->pos after its closing quote. */
int cp_jp_string (struct cp_jp *p, struct cp_jp_val *v);

/* Any value at nesting DEPTH (the top value is 1), after white space: objects and
 * arrays are checked and skipped (their keys are not compared: for values the
 * caller refuses whatever they hold), *V says what and where it was. */
int cp_jp_value (struct cp_jp *p, int depth, struct cp_jp_val *v);

/* V's text for "got ..." in messages: compact (no white space outside strings),
 * cut after 64 bytes, as cp_json_describe() shows a json-c value.  Caller frees. */
char *cp_jp_describe (const struct cp_jp *p, const struct cp_jp_val *v);

#endif
