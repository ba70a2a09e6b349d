#define _GNU_SOURCE
#include "error.h"
#include "text.h"
#include "util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static char *vformat (const char *fmt, va_list ap) __attribute__ ((format (printf, 1, 0)));

static char *
vformat (const char *fmt, va_list ap)
{
  char *s = NULL;
  if (vasprintf (&s, fmt, ap) < 0)
    abort ();
  return s;
}

/* Messages must stay one line a terminal shows as it is: a runtime shows the
 * hook's stderr as is, and logs are line-oriented (policy/base/text.h). */
static void
flatten (char *s)
{
  cp_text_sanitize (s);
}

int
cp_error_set (cp_error_t *err, enum cp_error_kind kind, int errnum, const char *fmt, ...)
{
  if (err == NULL)
    return -1;
  cp_error_free (err);
  va_list ap;
  va_start (ap, fmt);
  char *body = vformat (fmt, ap);
  va_end (ap);
  struct cp_error *e = cp_xmalloc0 (sizeof *e);
  e->kind = kind;
  e->errnum = errnum;
  if (errnum)
    {
      e->msg = cp_xasprintf ("%s: %s", body, strerror (errnum));
      free (body);
    }
  else
    e->msg = body;
  flatten (e->msg);
  *err = e;
  return -1;
}

int
cp_error_wrap (cp_error_t *err, const char *fmt, ...)
{
  if (err == NULL || *err == NULL)
    return -1;
  va_list ap;
  va_start (ap, fmt);
  cleanup_free char *ctx = vformat (fmt, ap);
  va_end (ap);
  char *msg = cp_xasprintf ("%s: %s", ctx, (*err)->msg);
  flatten (msg);
  free ((*err)->msg);
  (*err)->msg = msg;
  return -1;
}

int
cp_error_errno (cp_error_t err)
{
  return err ? err->errnum : 0;
}

enum cp_error_kind
cp_error_kind (cp_error_t err)
{
  return err ? err->kind : CP_ERR_RUNTIME;
}

void
cp_error_reclassify (cp_error_t err, enum cp_error_kind kind)
{
  if (err)
    err->kind = kind;
}

const char *
cp_error_message (cp_error_t err)
{
  return err && err->msg ? err->msg : "unknown error";
}

void
cp_error_free (cp_error_t *err)
{
  if (err == NULL || *err == NULL)
    return;
  free ((*err)->msg);
  free (*err);
  *err = NULL;
}
