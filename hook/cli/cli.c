#define _GNU_SOURCE
#include "cli.h"
#include "bitmap.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cpulist.h"
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
cp_cli_option_error (int opt, char **argv, const char *cmd, cp_error_t *err)
{
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
  return cp_fail_input (err, "%s: unknown option (see `cachepin %s --help`)", argv[optind - 1], cmd);
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
