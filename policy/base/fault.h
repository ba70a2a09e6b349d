/* cachepin: test-only fault points (tests/stress/, the *_fault unit tests).
 *
 * A module with fault points declares, in its header and only under
 * CACHEPIN_FAULT_INJECTION, an enum of points, a hook type and a setter; its .c
 * file then says CP_FAULT_HOOK (setter, hook_type); once, and FAULT (point) (a
 * hook returning void) or FAULT_RESULT (point) (a hook returning int, 0 when none
 * is set) where the point is.  The release build compiles all of it away: no hook,
 * no setter, FAULT is nothing and FAULT_RESULT is 0. */
#ifndef CP_FAULT_H
#define CP_FAULT_H

#ifdef CACHEPIN_FAULT_INJECTION
#define CP_FAULT_HOOK(setter, hook_type) \
  static hook_type fault_fn;             \
  static void *fault_data;               \
  void setter (hook_type fn, void *data) \
  {                                      \
    fault_fn = fn;                       \
    fault_data = data;                   \
  }                                      \
  void setter (hook_type fn, void *data)
#define FAULT(point) ((void) (fault_fn ? (fault_fn ((point), fault_data), 0) : 0))
#define FAULT_RESULT(point) (fault_fn ? fault_fn ((point), fault_data) : 0)
#else
#define CP_FAULT_HOOK(setter, hook_type) struct cp_fault_unused
#define FAULT(point) ((void) 0)
#define FAULT_RESULT(point) 0
#endif

#endif
