/* cachepin: errors with context.
 *
 * A failable function takes a trailing `cp_error_t *err`, returns < 0 on failure and
 * fills *err; callers add context on the way up with cp_error_wrap().  Only main()
 * turns an error into a message and an exit status, choosing it from the kind. */
#ifndef CP_ERROR_H
#define CP_ERROR_H

enum cp_error_kind
{
  CP_ERR_RUNTIME = 0,   /* the system failed us (I/O, kernel): exit 1 */
  CP_ERR_INPUT,         /* the user's input is invalid: exit 2 */
  CP_ERR_UNSATISFIABLE, /* valid request the host cannot meet */
};

struct cp_error
{
  enum cp_error_kind kind;
  int errnum; /* errno, or 0 */
  char *msg;
};

typedef struct cp_error *cp_error_t;

/* Fill *err (freeing any previous error) and return -1. */
int cp_error_set (cp_error_t *err, enum cp_error_kind kind, int errnum, const char *fmt, ...)
    __attribute__ ((format (printf, 4, 5)));

/* The constructors.  The kind is chosen where the error is made, from what failed:
 *   cp_fail_errno    a system call failed (ERRNUM, never 0, is appended);
 *   cp_fail_runtime  the system failed us without an errno (a kernel file's text
 *                    we cannot read, a lock timeout, a short write);
 *   cp_fail_input    the user's input is invalid (an option, annotation, config);
 *   cp_fail_unsatisfiable  a valid request this host cannot meet. */
#define cp_fail_errno(err, errnum, ...) cp_error_set ((err), CP_ERR_RUNTIME, (errnum), __VA_ARGS__)
#define cp_fail_runtime(err, ...) cp_error_set ((err), CP_ERR_RUNTIME, 0, __VA_ARGS__)
#define cp_fail_input(err, ...) cp_error_set ((err), CP_ERR_INPUT, 0, __VA_ARGS__)
#define cp_fail_unsatisfiable(err, ...) cp_error_set ((err), CP_ERR_UNSATISFIABLE, 0, __VA_ARGS__)

/* The errno the error carries (0: none, or no error). */
int cp_error_errno (cp_error_t err);

/* The error's kind (CP_ERR_RUNTIME for no error). */
enum cp_error_kind cp_error_kind (cp_error_t err);

/* Change the kind of an error after the fact.  One caller only: the failure
 * policy (hook/engine/admission.h, cp_admission_host_kind()), which decides whose
 * fault a failure is from the stage it happened at.  Everything else sets the
 * kind where the error is made. */
void cp_error_reclassify (cp_error_t err, enum cp_error_kind kind);

/* Prefix the message with "context: "; returns -1. */
int cp_error_wrap (cp_error_t *err, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));

/* The one-line text of the error, errno description appended when set. */
const char *cp_error_message (cp_error_t err);

void cp_error_free (cp_error_t *err);

#define cleanup_error __attribute__ ((cleanup (cp_error_free)))

#endif
