#define _GNU_SOURCE
#include "util.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>

void
cp_oom (void)
{
  fputs ("cachepin: out of memory\n", stderr);
  abort ();
}

void *
cp_xmalloc0 (size_t size)
{
  void *p = calloc (1, size ? size : 1);
  if (p == NULL)
    cp_oom ();
  return p;
}

void *
cp_xcalloc (size_t n, size_t size)
{
  void *p = calloc (n ? n : 1, size ? size : 1);
  if (p == NULL)
    cp_oom ();
  return p;
}

void *
cp_xrealloc (void *ptr, size_t size)
{
  void *p = realloc (ptr, size ? size : 1);
  if (p == NULL)
    cp_oom ();
  return p;
}

char *
cp_xstrdup (const char *s)
{
  char *p = strdup (s);
  if (p == NULL)
    cp_oom ();
  return p;
}

char *
cp_xstrndup (const char *s, size_t n)
{
  char *p = strndup (s, n);
  if (p == NULL)
    cp_oom ();
  return p;
}

char *
cp_xasprintf (const char *fmt, ...)
{
  char *p = NULL;
  va_list ap;
  va_start (ap, fmt);
  int r = vasprintf (&p, fmt, ap);
  va_end (ap);
  if (r < 0)
    cp_oom ();
  return p;
}

long long
cp_monotonic_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
