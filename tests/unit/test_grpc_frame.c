/* gRPC's length-prefixed message (hook/grpc/grpc_frame.c), with prefixes written
   byte by byte here as PROTOCOL-HTTP2.md lays them out (flag, then a big-endian
   length), never through the encoder under test. */
#include "testutil.h"

#include <string.h>

#include "grpc_frame.h"

static void
test_prefix_layout (void **state)
{
  (void) state;
  uint8_t p[CP_GRPC_PREFIX_LEN];
  cp_grpc_frame_prefix (p, 0x01020304);
  const uint8_t want[] = { 0, 1, 2, 3, 4 };
  assert_memory_equal (p, want, sizeof want);
  cp_grpc_frame_prefix (p, 0);
  const uint8_t zero[] = { 0, 0, 0, 0, 0 };
  assert_memory_equal (p, zero, sizeof zero);
}

static void
test_unary_exact (void **state)
{
  (void) state;
  const uint8_t body[] = { 0, 0, 0, 0, 3, 'a', 'b', 'c' };
  const uint8_t *msg = NULL;
  size_t len = 99;
  cleanup_error cp_error_t err = NULL;
  assert_int_equal (cp_grpc_frame_unary (body, sizeof body, 16, &msg, &len, &err), 0);
  assert_int_equal (len, 3);
  assert_ptr_equal (msg, body + 5);
  /* An empty message (GetInfo's InfoRequest) is five bytes of prefix. */
  assert_int_equal (cp_grpc_frame_unary (body, 5, 16, &msg, &len, &err) < 0, 1); /* announces 3, has 0 */
  cp_error_free (&err);
  const uint8_t empty[] = { 0, 0, 0, 0, 0 };
  assert_int_equal (cp_grpc_frame_unary (empty, sizeof empty, 16, &msg, &len, &err), 0);
  assert_int_equal (len, 0);
}

/* Each partial body checks clean up to the whole message, byte by byte. */
static void
test_partial_bytewise (void **state)
{
  (void) state;
  const uint8_t body[] = { 0, 0, 0, 0, 2, 'x', 'y' };
  for (size_t n = 0; n <= sizeof body; n++)
    {
      cleanup_error cp_error_t err = NULL;
      assert_int_equal (cp_grpc_frame_check (body, n, 16, &err), 0);
    }
}

static void
expect_refused (const uint8_t *body, size_t n, size_t max, const char *needle)
{
  cleanup_error cp_error_t err = NULL;
  const uint8_t *msg;
  size_t len;
  assert_int_equal (cp_grpc_frame_unary (body, n, max, &msg, &len, &err), -1);
  assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
  if (strstr (cp_error_message (err), needle) == NULL)
    fail_msg ("`%s` lacks `%s`", cp_error_message (err), needle);
  assert_null (strchr (cp_error_message (err), '\n'));
}

static void
test_refusals (void **state)
{
  (void) state;
  /* Compressed (flag 1) and unknown flags: nothing was offered. */
  const uint8_t compressed[] = { 1, 0, 0, 0, 1, 'a' };
  expect_refused (compressed, sizeof compressed, 16, "flags 0x01");
  const uint8_t flags[] = { 0x80, 0, 0, 0, 0 };
  expect_refused (flags, 1, 16, "flags 0x80");
  /* Over the limit, seen from the prefix alone, before the message comes. */
  const uint8_t big[] = { 0, 0, 0, 0, 17 };
  expect_refused (big, sizeof big, 16, "17 bytes, over the limit of 16");
  cleanup_error cp_error_t err = NULL;
  assert_int_equal (cp_grpc_frame_check (big, sizeof big, 16, &err), -1);
  /* The most a length says: refused, no overflow. */
  const uint8_t huge[] = { 0, 0xff, 0xff, 0xff, 0xff };
  expect_refused (huge, sizeof huge, CP_GRPC_MAX_MESSAGE, "4294967295 bytes");
  /* A byte past the one message: a second message, or junk. */
  const uint8_t two[] = { 0, 0, 0, 0, 1, 'a', 0, 0, 0, 0, 0 };
  expect_refused (two, sizeof two, 16, "5 bytes after the one message");
  /* Short: no whole prefix, or the message cut. */
  expect_refused (two, 3, 16, "short of the message prefix");
  expect_refused (two, 0, 16, "short of the message prefix");
  const uint8_t cut[] = { 0, 0, 0, 0, 4, 'a' };
  expect_refused (cut, sizeof cut, 16, "ends 1 bytes into a message of 4");
}

/* The limit itself is allowed. */
static void
test_limit_inclusive (void **state)
{
  (void) state;
  const uint8_t at[] = { 0, 0, 4, 0, 0 }; /* 256 KiB */
  cleanup_error cp_error_t err = NULL;
  assert_int_equal (cp_grpc_frame_check (at, sizeof at, CP_GRPC_MAX_MESSAGE, &err), 0);
  const uint8_t over[] = { 0, 0, 4, 0, 1 };
  assert_int_equal (cp_grpc_frame_check (over, sizeof over, CP_GRPC_MAX_MESSAGE, &err), -1);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_prefix_layout),   cmocka_unit_test (test_unary_exact),
    cmocka_unit_test (test_partial_bytewise), cmocka_unit_test (test_refusals),
    cmocka_unit_test (test_limit_inclusive),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
