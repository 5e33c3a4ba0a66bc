/* out_file.h - internal: the one way the library and the clattn command
 * write an output file the user names (an export, a report, a .npy), and
 * the unique temporary the program cache writes through.
 *
 * A regular file (or a missing one) is written to a temporary of this
 * writer's own beside it (O_CREAT | O_EXCL | O_NOFOLLOW, mode 0666 less the
 * umask, a random name), then renamed over it, so that a reader sees the
 * old file or the whole new one, and nothing planted at a guessable name
 * is followed.  A character device or a FIFO (/dev/stdout, /dev/null, a
 * pipe) is written through, never replaced; a directory, a block device or
 * a socket is refused.  A symbolic link is followed on purpose: its target
 * is what is written (a link to a missing file is refused).  A path that is
 * the same file (device and inode) as one of the inputs is refused before
 * anything is written, so a command never overwrites what it reads.
 *
 * base/out_file.c is compiled into the library (hidden) and into a small
 * archive of its own for the command (host/meson.build): one source. */
#ifndef CLATTN_BASE_OUT_FILE_H
#define CLATTN_BASE_OUT_FILE_H

#include <stddef.h>
#include <stdio.h>

#define CLATTN_OUT_PATH_MAX 4096

/* Creates a new file beside path, named path + ".tmp." + 16 random hex
 * digits (another name on a clash), its name into tmp (cap bytes).
 * Returns the open descriptor (write-only, close-on-exec), or -1 with
 * errno set. */
int clattn__tmp_create(const char *path, char *tmp, size_t cap);

typedef struct clattn__out_file {
  FILE *f;                            /* write here */
  int through;                        /* a device or FIFO, written as is */
  char target[CLATTN_OUT_PATH_MAX];   /* the file written (a link's target) */
  char tmp[CLATTN_OUT_PATH_MAX + 32]; /* the temporary, "" when through */
  const char *path;                   /* the caller's name, for messages */
} clattn__out_file;

/* Opens path for writing as above; inputs[0 .. n_inputs-1] are the files
 * the caller reads (NULL entries and missing files are skipped).  Returns
 * 0, or an errno value with a message naming path in err: EINVAL for a
 * path that is an input, a directory, a block device, a socket or a link
 * to nothing; ENOMEM; what the system call said otherwise. */
int clattn__out_open(clattn__out_file *o, const char *path,
                     const char *const *inputs, int n_inputs, char *err,
                     size_t cap);

/* Ends the write: with ok, flushes, syncs and closes the temporary and
 * renames it over the target (which must still be a regular file or
 * missing), or flushes and closes the device; without ok (the caller's
 * write failed), or when any of that fails, closes and removes the
 * temporary, leaving the target as it was.  Returns 0, or an errno value
 * with a message naming the path in err (ok == 0: 0, err untouched). */
int clattn__out_close(clattn__out_file *o, int ok, char *err, size_t cap);

#endif /* CLATTN_BASE_OUT_FILE_H */
