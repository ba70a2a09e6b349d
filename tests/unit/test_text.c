/* Plurals and the edit distance behind "did you mean" (policy/base/text.c). */
#include "testutil.h"

#include <string.h>

#include "text.h"
#include "util.h"

static void
test_plural (void **state)
{
  (void) state;
  assert_string_equal (cp_plural (0, "CPU", "CPUs"), "CPUs");
  assert_string_equal (cp_plural (1, "CPU", "CPUs"), "CPU");
  assert_string_equal (cp_plural (2, "CPU", "CPUs"), "CPUs");
  assert_string_equal (cp_plural (8192, "thread", "threads"), "threads");
}

static void
test_distance (void **state)
{
  (void) state;
  static const struct
  {
    const char *a, *b;
    unsigned d;
  } cases[] = {
    { "plan", "plan", 0 },  { "plam", "plan", 1 },     /* a substitution */
    { "pla", "plan", 1 },   { "pplan", "plan", 1 },    /* a deletion, an insertion */
    { "paln", "plan", 1 },  { "algin", "align", 1 },   /* a swap of neighbours */
    { "cpu", "cpus", 1 },   { "stauts", "status", 1 },
    { "aply", "apply", 1 }, { "relase", "release", 1 },
    { "", "", 0 },          { "", "ab", 2 },
    { "hook", "plan", 3 },  { "x", "status", 3 },      /* past the limit: limit + 1 */
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (cases); i++)
    {
      unsigned d = cp_text_distance (cases[i].a, cases[i].b, 2);
      if (d != cases[i].d)
        fail_msg ("distance `%s` `%s`: %u, expected %u", cases[i].a, cases[i].b, d, cases[i].d);
      assert_int_equal (cp_text_distance (cases[i].b, cases[i].a, 2), d); /* symmetric */
    }
  assert_int_equal (cp_text_distance ("abcdef", "fedcba", 10), 5); /* 4 substitutions, the middle swapped */
  /* Text longer than any name is no typo of one. */
  char long_s[100];
  memset (long_s, 'a', sizeof long_s - 1);
  long_s[sizeof long_s - 1] = '\0';
  assert_int_equal (cp_text_distance (long_s, long_s, 2), 3);
}

static void
test_closest (void **state)
{
  (void) state;
  static const char *const commands[] = { "plan", "hook", "apply", "release", NULL, "status" };
  size_t n = CP_ARRAY_SIZE (commands);
  assert_string_equal (cp_text_closest ("plam", commands, n), "plan");
  assert_string_equal (cp_text_closest ("stat", commands, n), "status");
  assert_string_equal (cp_text_closest ("relaese", commands, n), "release");
  assert_null (cp_text_closest ("frobnicate", commands, n));
  assert_null (cp_text_closest ("x", commands, n));   /* one letter: nothing is that close */
  assert_null (cp_text_closest ("", commands, n));
  static const char *const tie[] = { "cpus", "cpuz" };
  assert_null (cp_text_closest ("cpu", tie, 2)); /* two equally close: no guess */
  static const char *const opts[] = { "cpus", "align", "smt", "mode", "strict" };
  assert_string_equal (cp_text_closest ("cpu", opts, 5), "cpus");
  assert_string_equal (cp_text_closest ("algin", opts, 5), "align");
  assert_string_equal (cp_text_closest ("stric", opts, 5), "strict");
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_plural),
    cmocka_unit_test (test_distance),
    cmocka_unit_test (test_closest),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
