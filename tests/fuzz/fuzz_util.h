/* fuzz_util.h - what the libFuzzer targets share: a private scratch
 * directory (tmpfs when there is one) for the readers that take a path,
 * writing the input to a file there, and an abort that names the broken
 * invariant (libFuzzer keeps the input as a crash). */
#ifndef CLATTN_FUZZ_UTIL_H
#define CLATTN_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* A directory of this process, created on first use and removed at exit. */
const char *fuzz_scratch_dir(void);
/* dir/name, the path of a scratch file (a static buffer per name slot). */
const char *fuzz_scratch_path(const char *name);
/* Write data to path (replaced); aborts when the file cannot be written. */
void fuzz_write_file(const char *path, const uint8_t *data, size_t size);
/* The model's cost functions loop over every sequence and query block, so
 * clattn_model_* on a valid but huge shape runs for minutes to years
 * (batch 2^20 x 4096 queries: 7 s here): a known stall, left to the
 * model.  The targets predict only calls whose largest buffer has at most
 * this many elements, and still validate the larger ones. */
#define FUZZ_MODEL_MAX_ELEMS ((size_t)1 << 22)

/* Print the message and abort(): a finding. */
void fuzz_fail(const char *fmt, ...)
    __attribute__((noreturn, format(printf, 1, 2)));

#endif
