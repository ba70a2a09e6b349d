/* cachepin: a placement request and the strict parsing of its option values.
 *
 * The same names and values serve `cachepin plan` options, `cachepin apply`
 * options, the host configuration defaults and the `cachepin.io/` annotations. */
#ifndef CP_REQUEST_H
#define CP_REQUEST_H

#include <stdbool.h>

#include <hwloc.h>

#include "error.h"

/* Domain levels, from the smallest to the whole machine.  Also the `align` values. */
enum cp_level
{
  CP_LEVEL_L2 = 0,
  CP_LEVEL_LLC,
  CP_LEVEL_NUMA,
  CP_LEVEL_PACKAGE,
  CP_LEVEL_MACHINE, /* align=none: the allowed CPUs as one domain */
  CP_LEVEL_COUNT
};

enum cp_smt
{
  CP_SMT_PE0_FIRST = 0, /* default */
  CP_SMT_PE0,
  CP_SMT_CORES,
  CP_SMT_ANY,
};

enum cp_mode
{
  CP_MODE_EXCLUSIVE = 0, /* default */
  CP_MODE_SHARED,
};

/* Largest `cpus` we accept in any request, a bound well above any machine. */
#define CP_REQUEST_MAX_CPUS 8192

struct cp_request
{
  unsigned cpus; /* 0: unset (shared mode: one domain) */
  enum cp_level align;
  enum cp_smt smt;
  enum cp_mode mode;
  bool strict;
};

/* Where cpus came from (cp_container_request.cpus_source). */
#define CP_CPUS_SOURCE_ANNOTATION "annotation"
#define CP_CPUS_SOURCE_QUOTA "quota/period"
#define CP_CPUS_SOURCE_SHARED "shared: one domain"

/* What a container asks of a kernel feature. */
enum cp_ask
{
  CP_ASK_NONE = 0, /* nothing */
  CP_ASK_ON,
  CP_ASK_OFF,
};

struct cp_container_request
{
  struct cp_request req;
  bool mems_keep;            /* cachepin.io/mems=keep: leave cpuset.mems alone */
  bool cpus_from_annotation; /* req.cpus is what the user asked for, not derived */
  const char *cpus_source;   /* one of CP_CPUS_SOURCE_* (static) */
  hwloc_const_bitmap_t bound_cpus; /* the spec's linux.resources.cpu.cpus: the placement
                                      stays within it (NULL: no bound); points into the
                                      input it came from (a cp_oci_config) */
  hwloc_const_bitmap_t bound_mems; /* linux.resources.cpu.mems, the same way */
  enum cp_ask sched_cache;   /* cachepin.io/sched-cache */
  bool core_sched;           /* cachepin.io/core-sched=true */
  bool isolate;
};

/* Defaults: cpus unset, align=llc, smt=pe0-first, mode=exclusive, strict=false. */
void cp_request_init (struct cp_request *req);

/* Each parser accepts the documented spellings and fails with an input error
 * naming the value; the caller wraps it with the field's name.  The CLI options,
 * the annotations and the host config's defaults all parse with these, so they
 * accept the same: align, smt, mode and mems in any case ("L3", "PE0"), align
 * `l3` as `llc` (outputs call the LLC "L3"); bool exactly `true` or `false`. */
int cp_parse_align (const char *s, enum cp_level *out, cp_error_t *err);
int cp_parse_smt (const char *s, enum cp_smt *out, cp_error_t *err);
int cp_parse_mode (const char *s, enum cp_mode *out, cp_error_t *err);
int cp_parse_bool (const char *s, bool *out, cp_error_t *err);
/* The mems setting (cachepin.io/mems, `cachepin apply --mems`): "local" (false:
 * the NUMA nodes local to the CPUs) or "keep" (true: cpuset.mems left alone). */
int cp_parse_mems (const char *s, bool *keep, cp_error_t *err);
/* A decimal count 1..max, no sign, no leading zero, no spaces. */
int cp_parse_count (const char *s, unsigned max, unsigned *out, cp_error_t *err);

/* isolate (cachepin.io/isolate, `--isolate`) asks a cgroup v2 partition of the
 * container's own CPUs: only an exclusive placement has CPUs of its own to give
 * one.  0 when CREQ does not ask it or its mode (given or the host default) is
 * exclusive; else an input error "needs MODE_SPELLING (mode is shared)", which the
 * caller wraps with the name of what asked ("annotation cachepin.io/isolate",
 * "--isolate"). */
int cp_request_check_isolate (const struct cp_container_request *creq, const char *mode_spelling, cp_error_t *err);

/* Names, as accepted by the parsers. */
const char *cp_align_name (enum cp_level level);
const char *cp_smt_name (enum cp_smt smt);
const char *cp_mode_name (enum cp_mode mode);
/* "none", "on", "off": how the ledger and status spell what a container asks. */
const char *cp_ask_name (enum cp_ask ask);
/* How a domain of this level is called in human output: "L3", "L2", "NUMA", ... */
const char *cp_level_label (enum cp_level level);

#endif
