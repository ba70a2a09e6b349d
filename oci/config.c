#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "bitmap.h"
#include "cpulist.h"
#include "util.h"
#include "io.h"
#include "json.h"

/* linux.resources.cpu.KEY's value S, a cpulist as the runtime writes it into
   cpuset.KEY and the kernel reads it, into *OUT (NULL when "" or blank: not set). */
static int
set_cpuset_field (const char *key, const char *s, hwloc_bitmap_t *out, cp_error_t *err)
{
  if (*s == '\0') /* "" is how engines say "not set" */
    return 0;
  if (strlen (s) > CP_CPULIST_MAX_LEN)
    return cp_fail_input (err, "linux.resources.cpu.%s: longer than %d bytes", key, CP_CPULIST_MAX_LEN);
  *out = cp_bitmap_new ();
  if (cp_cpulist_parse (s, CP_CPULIST_KERNEL | CP_CPULIST_ALLOW_EMPTY, *out, err) < 0)
    return cp_error_wrap (err, "linux.resources.cpu.%s", key);
  if (hwloc_bitmap_iszero (*out))
    {
      /* White space only: the kernel's empty list, as "" here. */
      hwloc_bitmap_free (*out);
      *out = NULL;
    }
  return 0;
}

/* linux.resources.cpu.KEY, a cpulist (absent, "" or blank: not set). */
static int
parse_cpuset_field (json_object *cpu, const char *key, hwloc_bitmap_t *out, cp_error_t *err)
{
  json_object *v;
  if (!cp_json_member (cpu, key, true, &v))
    return 0;
  cleanup_free char *field = cp_xasprintf ("linux.resources.cpu.%s", key);
  const char *s;
  if (cp_json_string (v, field, CP_CPULIST_MAX_LEN, true, &s, err) < 0)
    return -1;
  return set_cpuset_field (key, s, out, err);
}

/* linux.resources.cpu */
static int
parse_cpu (json_object *cpu, struct cp_oci_config *out, cp_error_t *err)
{
  json_object *v;
  if (cp_json_object (cpu, "linux.resources.cpu", err) < 0)
    return -1;
  if (parse_cpuset_field (cpu, "cpus", &out->cpus, err) < 0 || parse_cpuset_field (cpu, "mems", &out->mems, err) < 0)
    return -1;
  if (cp_json_member (cpu, "quota", true, &v)
      && cp_json_int (v, "linux.resources.cpu.quota", INT64_MIN, INT64_MAX, &out->quota, err) < 0)
    return -1;
  if (cp_json_member (cpu, "period", true, &v))
    {
      int64_t period;
      if (cp_json_int (v, "linux.resources.cpu.period", 0, INT64_MAX, &period, err) < 0)
        return -1;
      out->period = (uint64_t) period;
    }
  return 0;
}

/* Go's filepath.Clean() of an absolute PATH, as runc and crun resolve an absolute
   cgroupsPath below the hierarchy's mount: no empty or "." components, ".." takes
   one away (never above "/"), no trailing '/'. */
static char *
clean_path (const char *path)
{
  size_t len = strlen (path);
  char *out = cp_xmalloc0 (len + 2);
  size_t n = 0;
  for (const char *p = path; *p;)
    {
      while (*p == '/')
        p++;
      size_t c = strcspn (p, "/");
      if (c == 0 || (c == 1 && p[0] == '.'))
        ;
      else if (c == 2 && p[0] == '.' && p[1] == '.')
        while (n > 0 && out[--n] != '/')
          ;
      else
        {
          out[n++] = '/';
          memcpy (out + n, p, c);
          n += c;
        }
      p += c;
    }
  if (n == 0)
    out[n++] = '/';
  out[n] = '\0';
  return out;
}

/* systemd's expansion of a slice unit name into its cgroup path, as runc's
   ExpandSlice() does it: "a-b-c.slice" is "/a.slice/a-b.slice/a-b-c.slice", "-.slice"
   is "/".  NULL when SLICE is no valid slice name (no ".slice" suffix, a '/', an
   empty or doubled dash component). */
static char *
expand_slice (const char *slice, size_t len)
{
  static const char suffix[] = ".slice";
  const size_t slen = sizeof suffix - 1;
  if (len < slen || memcmp (slice + len - slen, suffix, slen) != 0 || memchr (slice, '/', len))
    return NULL;
  size_t base = len - slen;
  if (base == 1 && slice[0] == '-')
    return cp_xstrdup ("/");
  if (base == 0 || slice[0] == '-' || slice[base - 1] == '-')
    return NULL;
  char *out = cp_xmalloc0 (1);
  for (size_t i = 0; i <= base; i++)
    {
      if (i < base && slice[i] != '-')
        continue;
      if (i > 0 && slice[i - 1] == '-')
        {
          free (out);
          return NULL;
        }
      char *next = cp_xasprintf ("%s/%.*s%s", out, (int) i, slice, suffix);
      free (out);
      out = next;
    }
  return out;
}

/* The cgroup path of a systemd cgroupsPath "slice:prefix:name", as runc and crun's
   systemd drivers make it: the slice expanded, then the unit, "prefix-name.scope"
   (or NAME itself when it is a ".slice").  NULL when it is not of that form, or the
   slice or prefix is empty (the runtimes differ there). */
static char *
systemd_path (const char *s)
{
  const char *c1 = strchr (s, ':');
  const char *c2 = c1 ? strchr (c1 + 1, ':') : NULL;
  if (c1 == NULL || c2 == NULL || strchr (c2 + 1, ':') || c2[1] == '\0' || strchr (c1 + 1, '/')
      || strchr (c2 + 1, '/'))
    return NULL;
  cleanup_free char *slice = expand_slice (s, (size_t) (c1 - s));
  if (slice == NULL)
    return NULL;
  const char *name = c2 + 1;
  size_t nlen = strlen (name);
  const char *sep = strcmp (slice, "/") == 0 ? "" : "/";
  if (nlen > 6 && strcmp (name + nlen - 6, ".slice") == 0)
    return cp_xasprintf ("%s%s%s", slice, sep, name);
  if (c2 == c1 + 1)
    return NULL; /* runc makes "-NAME.scope", others "NAME.scope" */
  return cp_xasprintf ("%s%s%.*s-%s.scope", slice, sep, (int) (c2 - c1 - 1), c1 + 1, name);
}

/* linux.cgroupsPath S (at most CP_OCI_PATH_MAX bytes, checked), as both forms. */
static void
set_cgroups_path (const char *s, struct cp_oci_config *out)
{
  if (*s)
    out->cgroups_path = cp_xstrdup (s);
  if (*s == '/' && strchr (s, ':') == NULL)
    out->cgroupfs_path = clean_path (s);
  else
    out->systemd_path = systemd_path (s);
}

static int
parse_linux (json_object *linux_, struct cp_oci_config *out, cp_error_t *err)
{
  json_object *v, *resources, *cpu;
  if (cp_json_object (linux_, "linux", err) < 0)
    return -1;
  if (cp_json_member (linux_, "cgroupsPath", true, &v))
    {
      const char *s;
      if (cp_json_string (v, "linux.cgroupsPath", CP_OCI_PATH_MAX, true, &s, err) < 0)
        return -1;
      set_cgroups_path (s, out);
    }
  if (!cp_json_member (linux_, "resources", true, &resources))
    return 0;
  if (cp_json_object (resources, "linux.resources", err) < 0)
    return -1;
  if (!cp_json_member (resources, "cpu", true, &cpu))
    return 0;
  return parse_cpu (cpu, out, err);
}

int
cp_oci_config_parse (const char *buf, size_t len, struct cp_oci_config *out, cp_error_t *err)
{
  memset (out, 0, sizeof *out);
  cleanup_json json_object *root = NULL;
  cleanup_json json_object *twice = NULL;
  json_object *v;
  /* Annotations given twice: as in the state (oci/state.c). */
  if (cp_json_parse_object_twice (buf, len, "annotations", &twice, &root, err) < 0)
    return cp_error_wrap (err, "config.json");
  if ((cp_json_member (root, "annotations", true, &v)
       && cp_annotations_from_json (v, twice, "annotations", &out->annotations, err) < 0)
      || (cp_json_member (root, "linux", true, &v) && parse_linux (v, out, err) < 0))
    {
      cp_oci_config_free (out);
      return cp_error_wrap (err, "config.json");
    }
  return 0;
}

int
cp_oci_config_from_values (const struct cp_oci_values *v, struct cp_oci_config *out, cp_error_t *err)
{
  memset (out, 0, sizeof *out);
  int r = 0;
  if (v->cgroups_path && strlen (v->cgroups_path) > CP_OCI_PATH_MAX)
    r = cp_fail_input (err, "linux.cgroupsPath: longer than %d bytes", CP_OCI_PATH_MAX);
  else if (v->cgroups_path)
    set_cgroups_path (v->cgroups_path, out);
  if (r == 0 && v->cpus)
    r = set_cpuset_field ("cpus", v->cpus, &out->cpus, err);
  if (r == 0 && v->mems)
    r = set_cpuset_field ("mems", v->mems, &out->mems, err);
  if (r == 0 && v->quota)
    out->quota = *v->quota;
  if (r == 0 && v->period && *v->period > (uint64_t) INT64_MAX)
    r = cp_fail_input (err, "linux.resources.cpu.period: %" PRIu64 " is out of range", *v->period);
  else if (r == 0 && v->period)
    out->period = *v->period;
  if (r < 0)
    cp_oci_config_free (out);
  return r;
}

int
cp_oci_config_load (const char *bundle, struct cp_oci_config *out, cp_error_t *err)
{
  memset (out, 0, sizeof *out);
  /* The bundle path comes from the runtime and may go through symlinks
     (/var/run -> /run); config.json itself must not be one. */
  cleanup_close int dirfd = open (bundle, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0)
    return cp_fail_errno (err, errno, "bundle %s: open", bundle);
  cleanup_free char *buf = NULL;
  cleanup_free char *name = cp_xasprintf ("%s/config.json", bundle);
  size_t len;
  if (cp_io_read_at (dirfd, "config.json", O_NOFOLLOW, name, CP_OCI_CONFIG_MAX_SIZE, CP_IO_INPUT, &buf, &len, err) < 0)
    return -1;
  return cp_oci_config_parse (buf, len, out, err);
}

const struct cp_limits *
cp_oci_config_limits (const struct cp_oci_config *cfg, struct cp_limits *out)
{
  if (cfg == NULL)
    return NULL;
  *out = (struct cp_limits) { .quota = cfg->quota, .period = cfg->period, .cpus = cfg->cpus, .mems = cfg->mems };
  return out;
}

void
cp_oci_config_free (struct cp_oci_config *cfg)
{
  cp_annotations_free (&cfg->annotations);
  if (cfg->cpus)
    hwloc_bitmap_free (cfg->cpus);
  if (cfg->mems)
    hwloc_bitmap_free (cfg->mems);
  free (cfg->cgroups_path);
  free (cfg->cgroupfs_path);
  free (cfg->systemd_path);
  memset (cfg, 0, sizeof *cfg);
}
