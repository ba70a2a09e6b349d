#define _GNU_SOURCE
#include "cli.h"
#include "bitmap.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cpulist.h"
#include "text.h"
#include "util.h"

int
cp_cli_request_option (int opt, const char *arg, struct cp_request *req, cp_error_t *err)
{
  int r = 0;
  switch (opt)
    {
    case CP_OPT_CPUS:
      if ((r = cp_parse_count (arg, CP_REQUEST_MAX_CPUS, &req->cpus, err)) < 0)
        return cp_error_wrap (err, "--cpus");
      return 1;
    case CP_OPT_ALIGN:
      if ((r = cp_parse_align (arg, &req->align, err)) < 0)
        return cp_error_wrap (err, "--align");
      return 1;
    case CP_OPT_SMT:
      if ((r = cp_parse_smt (arg, &req->smt, err)) < 0)
        return cp_error_wrap (err, "--smt");
      return 1;
    case CP_OPT_MODE:
      if ((r = cp_parse_mode (arg, &req->mode, err)) < 0)
        return cp_error_wrap (err, "--mode");
      return 1;
    case CP_OPT_STRICT:
      req->strict = true;
      return 1;
    default:
      return 0;
    }
}

int
cp_cli_check_count (const struct cp_request *req, hwloc_const_bitmap_t allowed, const char *by, cp_error_t *err)
{
  if (req->cpus <= (unsigned) hwloc_bitmap_weight (allowed))
    return 0;
  cleanup_free char *msg = cp_place_too_many ("--cpus", req->cpus, allowed, by, NULL);
  return cp_fail_unsatisfiable (err, "%s", msg);
}

/* The long option of SPEC closest to the mistyped WORD ("--algin=l3": `align`),
   or NULL (cp_text_closest()). */
static const char *
closest_option (const struct cp_cli_spec *spec, const char *word)
{
  if (strncmp (word, "--", 2) != 0)
    return NULL;
  cleanup_free char *name = cp_xstrndup (word + 2, strcspn (word + 2, "="));
  size_t n = 0;
  while (spec->options[n].name)
    n++;
  cleanup_free const char **names = cp_xcalloc (n ? n : 1, sizeof *names);
  for (size_t i = 0; i < n; i++)
    names[i] = spec->options[i].name;
  return cp_text_closest (name, names, n);
}

int
cp_cli_flag_value_error (const struct cp_cli_spec *spec, const char *word, const char *value, cp_error_t *err)
{
  if (word == NULL || strncmp (word, "--", 2) != 0)
    return 0;
  size_t len = strcspn (word + 2, "=");
  for (const struct option *o = spec->options; o->name; o++)
    if (o->has_arg == no_argument && strlen (o->name) == len && strncmp (o->name, word + 2, len) == 0)
      return cp_fail_input (err, "--%s takes no value, got `%.64s`: give `--%s` alone to turn it on, leave it out "
                                 "for off (see `cachepin %s --help`)",
                            o->name, value, o->name, spec->name);
  return 0;
}

int
cp_cli_option_error (int opt, char **argv, const struct cp_cli_spec *spec, cp_error_t *err)
{
  const char *cmd = spec->name;
  if (opt == ':')
    return cp_fail_input (err, "%s: a value is required", argv[optind - 1]);
  /* An unknown short option inside a cluster ("-qz") leaves optind on its word,
     so argv[optind - 1] would name the previous argument. */
  if (optopt != 0 && optopt >= CHAR_MIN && optopt < 0x100)
    {
      /* glibc keeps the byte as a (signed) char: "-\xc2" gives optopt -62, and
         the message shows that one byte (as '?': policy/base/text.h). */
      return cp_fail_input (err, "-%c: unknown option (see `cachepin %s --help`)", (unsigned char) optopt, cmd);
    }
  const char *word = argv[optind - 1];
  const char *eq = strchr (word, '=');
  if (eq && cp_cli_flag_value_error (spec, word, eq + 1, err) < 0) /* "--strict=yes" */
    return -1;
  const char *near = closest_option (spec, word);
  if (near)
    return cp_fail_input (err, "%s: unknown option (did you mean `--%s`? see `cachepin %s --help`)", word, near, cmd);
  return cp_fail_input (err, "%s: unknown option (see `cachepin %s --help`)", word, cmd);
}

int
cp_cli_cpulist_option (const char *name, const char *arg, hwloc_bitmap_t out, cp_error_t *err)
{
  if (cp_cpulist_parse (arg, CP_CPULIST_ALLOW_EMPTY, out, err) < 0)
    return cp_error_wrap (err, "%s", name);
  return 0;
}

void
cp_cli_merge_defaults (struct cp_request *req, const struct cp_request *given_req, unsigned given,
                       const struct cp_request *defaults)
{
  *req = *defaults;
  req->cpus = given_req->cpus;
#define GIVEN(opt) (given & CP_CLI_GIVEN (opt))
  if (GIVEN (CP_OPT_ALIGN))
    req->align = given_req->align;
  if (GIVEN (CP_OPT_SMT))
    req->smt = given_req->smt;
  if (GIVEN (CP_OPT_MODE))
    req->mode = given_req->mode;
  if (GIVEN (CP_OPT_STRICT))
    req->strict = true;
#undef GIVEN
}
