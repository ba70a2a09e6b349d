/* cachepin: text that is safe to show on one line of a log or a terminal.
 *
 * Ids, paths, annotation keys and values come from users and end up in error
 * lines, syslog and `cachepin status`.  A raw ESC can rewrite a terminal, a
 * newline (or U+0085, U+2028, U+2029) can forge a log line, and U+202A..U+202E or
 * U+2066..U+2069 can make a line read backwards.  One definition of "safe" serves
 * every place that checks or cleans such text. */
#ifndef CP_TEXT_H
#define CP_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* Is the code point CP one that must not reach a log line: C0 and C1 control
 * characters, DEL, the line and paragraph separators, and the bidirectional
 * formatting characters (embeddings, overrides, isolates, LRM, RLM, ALM)? */
bool cp_text_unsafe_codepoint (unsigned cp);

/* Whether S[0..LEN) is well-formed UTF-8 (no overlong forms, surrogates or values
 * past U+10FFFF) without any unsafe code point. */
bool cp_text_valid (const char *s, size_t len);

/* Rewrite S in place so that cp_text_valid() holds: every unsafe code point and
 * every byte that is not part of a well-formed sequence becomes '?'.  Never
 * lengthens S. */
void cp_text_sanitize (char *s);

/* ONE when N is 1, else MANY: "%u %s", n, cp_plural (n, "CPU", "CPUs").  Every
 * count a message prints goes through it, so that no line says "1 CPUs". */
const char *cp_plural (unsigned long n, const char *one, const char *many);

/* The optimal-string-alignment distance between A and B (insertions, deletions,
 * substitutions and swaps of two neighbours, each 1), as far as LIMIT: a result
 * above LIMIT is LIMIT + 1.  For "did you mean": `plam` is 1 from `plan`. */
unsigned cp_text_distance (const char *a, const char *b, unsigned limit);

/* Of the NAMES (N of them, NULL entries skipped), the one closest to S, at a
 * distance of at most 2 and less than S's length (so that `x` suggests nothing);
 * NULL when none is that close, or when two are equally close. */
const char *cp_text_closest (const char *s, const char *const *names, size_t n);

/* A copy of S cut to at most MAX bytes at a character boundary, then sanitized
 * (cp_text_sanitize()), for text from users that is kept (a container's name):
 * never longer than MAX.  S NULL: "".  The caller frees. */
char *cp_text_clean_copy (const char *s, size_t max);

#endif
