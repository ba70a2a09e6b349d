/* cachepin fuzz targets: what every target shares.
 *
 * A target parses one input the way the hook would, then checks what the
 * parser's header promises (invariants, round trips, a reference model).  A
 * broken promise prints what and where and abort()s: libFuzzer reports that as a
 * crash and saves the input, exactly like a memory error found by ASan/UBSan. */
#ifndef CP_FUZZ_COMMON_H
#define CP_FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                                     \
  do                                                                                                          \
    {                                                                                                         \
      if (!(cond))                                                                                            \
        {                                                                                                     \
          fprintf (stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond);                       \
          abort ();                                                                                           \
        }                                                                                                     \
    }                                                                                                         \
  while (0)

/* Like FUZZ_CHECK, with a message (printf format) saying what was seen. */
#define FUZZ_CHECK_MSG(cond, ...)                                                                            \
  do                                                                                                          \
    {                                                                                                         \
      if (!(cond))                                                                                            \
        {                                                                                                     \
          fprintf (stderr, "%s:%d: invariant broken: %s: ", __FILE__, __LINE__, #cond);                       \
          fprintf (stderr, __VA_ARGS__);                                                                      \
          fputc ('\n', stderr);                                                                               \
          abort ();                                                                                           \
        }                                                                                                     \
    }                                                                                                         \
  while (0)

/* DATA as a NUL-terminated string (it may hold NUL bytes of its own). */
static inline char *
fuzz_cstr (const uint8_t *data, size_t size)
{
  char *s = malloc (size + 1);
  if (s == NULL)
    abort ();
  if (size)
    memcpy (s, data, size);
  s[size] = '\0';
  return s;
}

/* A failure must be an input error with a one-line, printable message that starts
 * with PREFIX (NULL: any): cp_error_set() promises the first, the parsers' headers
 * the rest. */
static inline void
fuzz_check_input_error (int ret, cp_error_t err, const char *prefix)
{
  FUZZ_CHECK (ret < 0);
  FUZZ_CHECK (err != NULL);
  FUZZ_CHECK_MSG (err->kind == CP_ERR_INPUT, "kind %d: %s", (int) err->kind, cp_error_message (err));
  FUZZ_CHECK (err->msg != NULL && err->msg[0] != '\0');
  for (const char *p = err->msg; *p; p++)
    FUZZ_CHECK_MSG ((unsigned char) *p >= 0x20 && *p != 0x7f, "control character in \"%s\"", err->msg);
  if (prefix)
    FUZZ_CHECK_MSG (strncmp (err->msg, prefix, strlen (prefix)) == 0, "\"%s\" does not start with \"%s\"", err->msg,
                    prefix);
}

/* Every byte of P (SIZE bytes) is zero: what the parsers leave in *OUT on failure. */
static inline bool
fuzz_all_zero (const void *p, size_t size)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < size; i++)
    if (b[i])
      return false;
  return true;
}

#endif
