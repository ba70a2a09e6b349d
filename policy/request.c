#include "request.h"

#include <string.h>
#include <strings.h>

static const char *const align_names[CP_LEVEL_COUNT] = {
  [CP_LEVEL_L2] = "l2", [CP_LEVEL_LLC] = "llc", [CP_LEVEL_NUMA] = "numa",
  [CP_LEVEL_PACKAGE] = "package", [CP_LEVEL_MACHINE] = "none",
};

static const char *const level_labels[CP_LEVEL_COUNT] = {
  [CP_LEVEL_L2] = "L2", [CP_LEVEL_LLC] = "LLC", [CP_LEVEL_NUMA] = "NUMA",
  [CP_LEVEL_PACKAGE] = "package", [CP_LEVEL_MACHINE] = "machine",
};

static const char *const smt_names[] = {
  [CP_SMT_PE0_FIRST] = "pe0-first", [CP_SMT_PE0] = "pe0",
  [CP_SMT_CORES] = "cores", [CP_SMT_ANY] = "any",
};

static const char *const mode_names[] = {
  [CP_MODE_EXCLUSIVE] = "exclusive", [CP_MODE_SHARED] = "shared",
};

static const char *const ask_names[] = {
  [CP_ASK_NONE] = "none", [CP_ASK_ON] = "on", [CP_ASK_OFF] = "off",
};

void
cp_request_init (struct cp_request *req)
{
  memset (req, 0, sizeof *req);
  req->align = CP_LEVEL_LLC;
  req->smt = CP_SMT_PE0_FIRST;
  req->mode = CP_MODE_EXCLUSIVE;
}

/* How parse_enum() compares: the values a user types (align, smt, mode, mems)
   in any case, since every output prints "L3#0" and "PE0"; true/false exactly,
   as JSON spells them. */
enum match
{
  MATCH_EXACT,
  MATCH_ANY_CASE,
};

/* Looks S up in NAMES; the error lists what is accepted. */
static int
parse_enum (const char *s, const char *const *names, int n, enum match how, int *out, cp_error_t *err)
{
  *out = 0; /* defined on failure too: GCC -O3 cannot tell that no caller reads it then */
  for (int i = 0; i < n; i++)
    if (names[i] && (how == MATCH_ANY_CASE ? strcasecmp (s, names[i]) : strcmp (s, names[i])) == 0)
      {
        *out = i;
        return 0;
      }
  char accepted[128] = "";
  for (int i = 0; i < n; i++)
    {
      if (i)
        strncat (accepted, "|", sizeof accepted - strlen (accepted) - 1);
      strncat (accepted, names[i], sizeof accepted - strlen (accepted) - 1);
    }
  return cp_fail_input (err, "invalid value `%.64s` (expected %s)", s, accepted);
}

int
cp_parse_align (const char *s, enum cp_level *out, cp_error_t *err)
{
  int v;
  /* The LLC is what outputs call "L3" (cp_topo_level_label()): the name they
     show is a name the user may type. */
  if (strcasecmp (s, "l3") == 0)
    {
      *out = CP_LEVEL_LLC;
      return 0;
    }
  if (parse_enum (s, align_names, CP_LEVEL_COUNT, MATCH_ANY_CASE, &v, err) < 0)
    return -1;
  *out = (enum cp_level) v;
  return 0;
}

int
cp_parse_smt (const char *s, enum cp_smt *out, cp_error_t *err)
{
  int v;
  if (parse_enum (s, smt_names, (int) (sizeof smt_names / sizeof *smt_names), MATCH_ANY_CASE, &v, err) < 0)
    return -1;
  *out = (enum cp_smt) v;
  return 0;
}

int
cp_parse_mode (const char *s, enum cp_mode *out, cp_error_t *err)
{
  int v;
  if (parse_enum (s, mode_names, (int) (sizeof mode_names / sizeof *mode_names), MATCH_ANY_CASE, &v, err) < 0)
    return -1;
  *out = (enum cp_mode) v;
  return 0;
}

int
cp_parse_bool (const char *s, bool *out, cp_error_t *err)
{
  static const char *const names[] = { "false", "true" };
  int v;
  if (parse_enum (s, names, 2, MATCH_EXACT, &v, err) < 0)
    return -1;
  *out = v == 1;
  return 0;
}

int
cp_request_check_isolate (const struct cp_container_request *creq, const char *mode_spelling, cp_error_t *err)
{
  if (!creq->isolate || creq->req.mode == CP_MODE_EXCLUSIVE)
    return 0;
  return cp_fail_input (err, "needs %s (mode is %s)", mode_spelling, cp_mode_name (creq->req.mode));
}

int
cp_parse_mems (const char *s, bool *keep, cp_error_t *err)
{
  static const char *const names[] = { "local", "keep" };
  int v;
  if (parse_enum (s, names, 2, MATCH_ANY_CASE, &v, err) < 0)
    return -1;
  *keep = v == 1;
  return 0;
}

int
cp_parse_count (const char *s, unsigned max, unsigned *out, cp_error_t *err)
{
  if (*s == '\0')
    return cp_fail_input (err, "invalid value ``: expected a number from 1 to %u", max);
  unsigned long v = 0;
  for (const char *p = s; *p; p++)
    {
      if (*p < '0' || *p > '9' || (p == s && *p == '0' && p[1] != '\0') || v > max)
        return cp_fail_input (err, "invalid value `%.64s`: expected a number from 1 to %u", s, max);
      v = v * 10 + (unsigned long) (*p - '0');
    }
  if (v < 1 || v > max)
    return cp_fail_input (err, "invalid value `%.64s`: expected a number from 1 to %u", s, max);
  *out = (unsigned) v;
  return 0;
}

const char *
cp_align_name (enum cp_level level)
{
  return level < CP_LEVEL_COUNT ? align_names[level] : "?";
}

const char *
cp_level_label (enum cp_level level)
{
  return level < CP_LEVEL_COUNT ? level_labels[level] : "?";
}

const char *
cp_smt_name (enum cp_smt smt)
{
  return (unsigned) smt < sizeof smt_names / sizeof *smt_names ? smt_names[smt] : "?";
}

const char *
cp_mode_name (enum cp_mode mode)
{
  return (unsigned) mode < sizeof mode_names / sizeof *mode_names ? mode_names[mode] : "?";
}

const char *
cp_ask_name (enum cp_ask ask)
{
  return (unsigned) ask < sizeof ask_names / sizeof *ask_names ? ask_names[ask] : "?";
}
