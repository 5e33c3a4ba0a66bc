/* fault.h - fault injection for the fault tests (tests/test_faults.c).
 *
 * The test executable links the library's static archive with
 *   -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free,
 *   --wrap=strdup,--wrap=strndup and --wrap=<each OpenCL entry point below>
 * so that only clattn's own objects (and the test's) go through the
 * __wrap_* functions of fault.c; PoCL, SQLite, CLBlast and libc keep their
 * own allocator and calls.
 *
 * Host memory: while armed, every allocation (malloc, calloc, realloc,
 * strdup, strndup) is counted and the n-th one fails (returns NULL, errno
 * ENOMEM).  Every block allocated while armed is tracked until it is freed,
 * armed or not, so fault_alloc_live() after the call and its teardown is the
 * number of leaked blocks.
 *
 * OpenCL: while armed, every counted call (creations, builds, enqueues,
 * clFinish, kernel arguments, object queries) whose name matches the filter
 * is counted and the n-th one returns the chosen error code without calling
 * the driver.  cl_mem, cl_kernel and cl_program objects created while armed
 * are tracked with their reference counts until released, so
 * fault_cl_live() after the teardown is the number of leaked objects.  An
 * injected clBuildProgram failure makes clGetProgramBuildInfo's log
 * FAULT_BUILD_LOG for that program.
 *
 * SQLite: with --wrap=sqlite3_exec, the library's statements run through
 * sqlite3_exec (transactions, pragmas, the schema's migration steps) are
 * counted while armed and the n-th one fails with SQLITE_IOERR without
 * running, or ends the process there (_exit, as a kill would). */
#ifndef CLATTN_TESTS_FAULT_H
#define CLATTN_TESTS_FAULT_H

#include <CL/cl.h>

/* The build log an injected clBuildProgram failure reports. */
#define FAULT_BUILD_LOG "fault.c: injected build error\nsecond line\n"

/* Forget every tracked block and object and every count. */
void fault_reset(void);

/* Fail the n-th host allocation from now (n <= 0: count only, fail none). */
void fault_alloc_arm(long n);
/* Stop counting; returns the allocations counted since fault_alloc_arm. */
long fault_alloc_disarm(void);
/* Whether the armed failure happened. */
int fault_alloc_fired(void);
/* The return address of the failed allocation (in its caller). */
const void *fault_alloc_site(void);
/* Blocks allocated while armed and not freed since. */
long fault_alloc_live(void);

/* Fail the n-th counted OpenCL call from now with `code`; only calls whose
 * name contains `only` count (NULL: all). */
void fault_cl_arm(long n, cl_int code, const char *only);
/* Stop counting; returns the calls counted since fault_cl_arm. */
long fault_cl_disarm(void);
/* The name of the call that failed ("" if none). */
const char *fault_cl_fired(void);
/* cl_mem, cl_kernel and cl_program objects created while armed and not
 * released since. */
long fault_cl_live(void);

/* Fail the n-th sqlite3_exec from now (crash: _exit the process with
 * FAULT_SQL_CRASH_STATUS instead). */
#define FAULT_SQL_CRASH_STATUS 86
void fault_sql_arm(long n, int crash);
/* Stop counting; returns the statements counted since fault_sql_arm. */
long fault_sql_disarm(void);
/* The SQL of the statement that failed ("" if none). */
const char *fault_sql_fired(void);

#endif
