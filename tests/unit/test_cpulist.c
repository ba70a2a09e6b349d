/* The strict cpulist parser and the formatter (policy/base/cpulist.c). */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "cpulist.h"
#include "util.h"

/* Parse S with FLAGS, expect success and the set EXPECTED (written as a list of
   single CPUs and ranges checked bit by bit below, not through the formatter). */
static void
expect_ok (const char *s, unsigned flags, const unsigned *cpus, size_t n)
{
  hwloc_bitmap_t out = hwloc_bitmap_alloc ();
  hwloc_bitmap_set (out, 4000); /* must be emptied first */
  cp_error_t err = NULL;
  if (cp_cpulist_parse (s, flags, out, &err) < 0)
    fail_msg ("`%s` refused: %s", s, cp_error_message (err));
  assert_null (err);
  assert_int_equal (hwloc_bitmap_weight (out), (int) n);
  for (size_t i = 0; i < n; i++)
    if (!hwloc_bitmap_isset (out, cpus[i]))
      fail_msg ("`%s`: CPU %u missing", s, cpus[i]);
  hwloc_bitmap_free (out);
}

/* Parse S with FLAGS, expect an input error whose message contains NEEDLE and an
   empty output set. */
static void
expect_refused (const char *s, unsigned flags, const char *needle)
{
  hwloc_bitmap_t out = hwloc_bitmap_alloc ();
  hwloc_bitmap_set (out, 7);
  cp_error_t err = NULL;
  if (cp_cpulist_parse (s, flags, out, &err) == 0)
    {
      char *got = cp_cpulist_format (out);
      fail_msg ("`%s` accepted as `%s`", s, got);
    }
  assert_non_null (err);
  assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
  assert_int_equal (cp_error_errno (err), 0);
  assert_true (hwloc_bitmap_iszero (out));
  const char *msg = cp_error_message (err);
  assert_null (strchr (msg, '\n'));
  tu_assert_contains (msg, needle);
  cp_error_free (&err);
  hwloc_bitmap_free (out);
}

static void
test_accepts (void **state)
{
  (void) state;
  expect_ok ("0", 0, (const unsigned[]){ 0 }, 1);
  expect_ok ("7", 0, (const unsigned[]){ 7 }, 1);
  expect_ok ("0-3,8,10-11", 0, (const unsigned[]){ 0, 1, 2, 3, 8, 10, 11 }, 7);
  expect_ok ("5-5", 0, (const unsigned[]){ 5 }, 1);
  expect_ok ("3,1", 0, (const unsigned[]){ 1, 3 }, 2);     /* order does not matter */
  expect_ok ("1-2,2-3", 0, (const unsigned[]){ 1, 2, 3 }, 3); /* overlaps merge */
  expect_ok ("8191", 0, (const unsigned[]){ 8191 }, 1);      /* the maximum */
  expect_ok ("10", 0, (const unsigned[]){ 10 }, 1);          /* a zero that is not leading */
  expect_ok ("0-3\n", CP_CPULIST_ALLOW_NEWLINE, (const unsigned[]){ 0, 1, 2, 3 }, 4);
  expect_ok ("0-3", CP_CPULIST_ALLOW_NEWLINE, (const unsigned[]){ 0, 1, 2, 3 }, 4);
  expect_ok ("", CP_CPULIST_ALLOW_EMPTY, NULL, 0);
  expect_ok ("\n", CP_CPULIST_ALLOW_EMPTY | CP_CPULIST_ALLOW_NEWLINE, NULL, 0); /* an empty kernel file */
}

static void
test_refuses (void **state)
{
  (void) state;
  expect_refused ("3-1", 0, "range end 1 is before start 3");
  expect_refused ("0-", 0, "missing");
  expect_refused ("1,,2", 0, "expected a number at `,2`");
  expect_refused ("0x3", 0, "unexpected character at `x3`");
  expect_refused ("-1", 0, "expected a number at `-1`");
  expect_refused ("010", 0, "leading zero");
  expect_refused ("00", 0, "leading zero");
  expect_refused ("1-02", 0, "leading zero");
  expect_refused (" 1", 0, "expected a number at ` 1`");
  expect_refused ("1 ", 0, "unexpected character at ` `");
  expect_refused ("5\n", 0, "unexpected character");
  expect_refused ("5\n", CP_CPULIST_ALLOW_EMPTY, "unexpected character");
  expect_refused ("5\n\n", CP_CPULIST_ALLOW_NEWLINE, "unexpected character"); /* only one */
  expect_refused ("\n5", CP_CPULIST_ALLOW_NEWLINE, "expected a number");
  expect_refused ("8192", 0, "above the maximum 8191");
  expect_refused ("0-8192", 0, "above the maximum 8191");
  expect_refused ("99999999999", 0, "above the maximum 8191");
  expect_refused ("99999999999999999999999999999", 0, "above the maximum 8191");
  expect_refused (",1", 0, "expected a number at `,1`");
  expect_refused ("1,", 0, "missing at the end");
  expect_refused ("a", 0, "expected a number at `a`");
  expect_refused ("1-3-5", 0, "unexpected character at `-5`");
  expect_refused ("+1", 0, "expected a number");
  expect_refused ("1;2", 0, "unexpected character");
  expect_refused ("", 0, "empty");
  expect_refused ("\n", CP_CPULIST_ALLOW_NEWLINE, "empty");
  /* The whole list is quoted so the user sees what was refused. */
  expect_refused ("0-3,9-4", 0, "`0-3,9-4`");
}

/* What the kernel takes in cpuset.cpus, as an OCI spec's linux.resources.cpu.cpus
   is written there. */
static void
test_kernel (void **state)
{
  (void) state;
  const unsigned k = CP_CPULIST_KERNEL;
  expect_ok ("01", k, (const unsigned[]){ 1 }, 1);                 /* decimal 1 */
  expect_ok ("010", k, (const unsigned[]){ 10 }, 1);               /* ten, never octal */
  expect_ok ("0008-0009", k, (const unsigned[]){ 8, 9 }, 2);
  expect_ok ("0-1\n", k, (const unsigned[]){ 0, 1 }, 2);           /* a trailing newline */
  expect_ok (" 2 \t\n", k, (const unsigned[]){ 2 }, 1);           /* strstrip() */
  expect_ok ("1,,3", k, (const unsigned[]){ 1, 3 }, 2);            /* empty items */
  expect_ok (",1 3,", k, (const unsigned[]){ 1, 3 }, 2);           /* white space separates */
  expect_ok ("0-3,8\n", k | CP_CPULIST_ALLOW_NEWLINE, (const unsigned[]){ 0, 1, 2, 3, 8 }, 5);
  expect_ok (" \n", k | CP_CPULIST_ALLOW_EMPTY, NULL, 0);
  expect_refused (" \n", k, "empty");
  expect_refused ("0x3", k, "unexpected character at `x3`");
  expect_refused ("1;2", k, "unexpected character at `;2`");
  expect_refused ("-1", k, "expected a number at `-1`");
  expect_refused ("+1", k, "expected a number at `+1`");
  expect_refused ("0-", k, "missing at the end");
  expect_refused ("0- 3", k, "expected a number at ` 3`");
  expect_refused ("3-1", k, "range end 1 is before start 3");
  expect_refused ("08192", k, "above the maximum 8191");
  expect_refused ("1.0", k, "unexpected character at `.0`");
  expect_refused ("all", k, "expected a number at `all`");       /* kernel: every CPU */
  expect_refused ("0-N", k, "expected a number at `N`");         /* kernel: the last CPU */
  expect_refused ("0-7:1/2", k, "unexpected character at `:1/2`"); /* kernel: groups */
  expect_refused ("\xef\xbc\x91", k, "expected a number");          /* fullwidth digit one */
}

static void
test_refuses_too_long (void **state)
{
  (void) state;
  /* "10,0,0,...,0": valid syntax; at the bound it is read, one more character is refused. */
  size_t len = CP_CPULIST_MAX_LEN + 1;
  char *s = cp_xmalloc0 (len + 1);
  s[0] = '1';
  for (size_t i = 1; i < len; i++)
    s[i] = i % 2 ? '0' : ',';
  expect_refused (s, 0, "longer than 65536");
  s[CP_CPULIST_MAX_LEN] = '\0';
  expect_ok (s, 0, (const unsigned[]){ 0, 10 }, 2);
  free (s);
}

/* The message stays one line even when the input has control characters. */
static void
test_message_is_one_line (void **state)
{
  (void) state;
  expect_refused ("1\n2", 0, "`1?2`");
  expect_refused ("1\t", 0, "`1?`");
}

static void
expect_format (hwloc_const_bitmap_t set, const char *expected)
{
  char *s = cp_cpulist_format (set);
  assert_string_equal (s, expected);
  free (s);
}

static void
test_format (void **state)
{
  (void) state;
  hwloc_bitmap_t b = hwloc_bitmap_alloc ();
  expect_format (b, "");
  hwloc_bitmap_set (b, 0);
  expect_format (b, "0");
  hwloc_bitmap_set_range (b, 2, 5);
  expect_format (b, "0,2-5");
  hwloc_bitmap_set (b, 7);
  hwloc_bitmap_set (b, 8);
  expect_format (b, "0,2-5,7-8");
  hwloc_bitmap_zero (b);
  hwloc_bitmap_set_range (b, 8190, 8191);
  expect_format (b, "8190-8191");
  /* Many pieces: the buffer must grow. */
  hwloc_bitmap_zero (b);
  for (unsigned i = 0; i < 2000; i += 2)
    hwloc_bitmap_set (b, i);
  char *s = cp_cpulist_format (b);
  /* digits: 5 one-digit + 45 two-digit + 450 three-digit + 500 four-digit numbers, 999 commas */
  assert_int_equal (strlen (s), 5 * 1 + 45 * 2 + 450 * 3 + 500 * 4 + 999);
  assert_true (strncmp (s, "0,2,4,6,8,10,12", 15) == 0);
  assert_true (strcmp (s + strlen (s) - 10, ",1996,1998") == 0);
  free (s);
  hwloc_bitmap_free (b);
}

/* Text -> set -> text gives back the canonical text; set -> text -> set is identity. */
static void
test_round_trip (void **state)
{
  (void) state;
  static const char *const canonical[] = {
    "0", "7", "0-3,8,10-11", "1,3,5,7", "0-8191", "4095-4097", "0-1,8190-8191",
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (canonical); i++)
    {
      hwloc_bitmap_t b = tu_set (canonical[i]);
      char *s = cp_cpulist_format (b);
      assert_string_equal (s, canonical[i]);
      hwloc_bitmap_t again = tu_set (s);
      assert_true (hwloc_bitmap_isequal (b, again));
      free (s);
      hwloc_bitmap_free (b);
      hwloc_bitmap_free (again);
    }
  /* Non-canonical spellings come back canonical. */
  hwloc_bitmap_t b = tu_set ("3,2,1,0,5-5,6-7");
  tu_assert_set (b, "0-3,5-7");
  hwloc_bitmap_free (b);

  /* Pseudo-random sets, checked bit for bit after the round trip. */
  unsigned seed = 12345;
  for (int round = 0; round < 200; round++)
    {
      hwloc_bitmap_t set = hwloc_bitmap_alloc ();
      for (int k = 0; k < 40; k++)
        {
          seed = seed * 1103515245u + 12345u;
          unsigned cpu = (seed >> 8) % 300;
          hwloc_bitmap_set (set, cpu);
        }
      char *s = cp_cpulist_format (set);
      hwloc_bitmap_t back = hwloc_bitmap_alloc ();
      cp_error_t err = NULL;
      if (cp_cpulist_parse (s, 0, back, &err) < 0)
        fail_msg ("formatted `%s` does not parse: %s", s, cp_error_message (err));
      assert_true (hwloc_bitmap_isequal (set, back));
      /* and hwloc reads the same set from it */
      hwloc_bitmap_t hw = hwloc_bitmap_alloc ();
      assert_int_equal (hwloc_bitmap_list_sscanf (hw, s), 0);
      assert_true (hwloc_bitmap_isequal (set, hw));
      free (s);
      hwloc_bitmap_free (set);
      hwloc_bitmap_free (back);
      hwloc_bitmap_free (hw);
    }
}

/* The formatter must terminate on an infinite set (its comment promises it). */
static void
test_format_infinite (void **state)
{
  (void) state;
  hwloc_bitmap_t b = hwloc_bitmap_alloc ();
  hwloc_bitmap_fill (b);
  char *s = cp_cpulist_format (b);
  assert_string_equal (s, "0-8191");
  free (s);
  hwloc_bitmap_zero (b);
  hwloc_bitmap_set_range (b, 5, -1); /* "5-" */
  hwloc_bitmap_set (b, 1);
  s = cp_cpulist_format (b);
  assert_string_equal (s, "1,5-8191");
  free (s);
  /* A finite set past the parser's cap is still written as ranges. */
  hwloc_bitmap_zero (b);
  hwloc_bitmap_set_range (b, 8190, 8200);
  s = cp_cpulist_format (b);
  assert_string_equal (s, "8190-8200");
  free (s);
  hwloc_bitmap_free (b);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_accepts),
    cmocka_unit_test (test_refuses),
    cmocka_unit_test (test_kernel),
    cmocka_unit_test (test_refuses_too_long),
    cmocka_unit_test (test_message_is_one_line),
    cmocka_unit_test (test_format),
    cmocka_unit_test (test_round_trip),
    cmocka_unit_test (test_format_infinite),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
