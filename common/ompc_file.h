/* Output files that replace what is at their path without clobbering what
 * must not be clobbered.  Every file the runtime writes at the user's
 * request (OMPC_TRACE, OMPC_PERF_MODEL) and awave's outputs go through
 * these three calls:
 *
 *   ompc_file_out_t o;
 *   if (ompc_file_replace_begin(&o, path) != OMPC_OK) { report o.why; }
 *   write(o.fd, ...);
 *   if (ompc_file_replace_commit(&o, err) != OMPC_OK) { report o.why; }
 *
 * What is at the path decides how it is written:
 *  - nothing, or a regular file: a fresh temporary with an unguessable name
 *    is created next to it (O_EXCL, so a planted symlink is never
 *    followed), filled, synced and renamed over the path, so that a reader
 *    sees the old file or the whole new one;
 *  - a symlink: written through to the file it names, by the same rule in
 *    that file's directory, so the link stays a link (a link someone else
 *    planted in a sticky directory such as /tmp is refused, as the kernel's
 *    protected_symlinks would); a link to a device or FIFO, or one through
 *    /proc (/dev/stdout, /dev/fd/N), is written in place as below;
 *  - a character device or a FIFO with a reader: written in place, never
 *    replaced (/dev/null, /dev/stdout, a pipe to a viewer);
 *  - a FIFO without a reader, a directory, a block device, a socket:
 *    refused, naming the path and what it is, without blocking. */
#ifndef OMPC_FILE_H
#define OMPC_FILE_H

#include "ompc_common.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ompc_file_out {
    int fd;          /* write here; -1 when closed */
    char *dest;      /* the path renamed over (a symlink's target) */
    char *tmp;       /* the temporary, NULL when writing in place */
    char why[512];   /* the reason of the last failure, names the path */
} ompc_file_out_t;

/* Opens the file to write.  On failure o->why says why and nothing is left
 * behind. */
ompc_status_t ompc_file_replace_begin(ompc_file_out_t *o, const char *path);

/* Finishes the file.  err is the first errno the caller's writes met (0
 * when none): a failed write discards the temporary and keeps the old
 * file.  Frees o's resources whatever the outcome. */
ompc_status_t ompc_file_replace_commit(ompc_file_out_t *o, int err);

/* The same through stdio: a stream on o->fd (NULL and o->why on failure),
 * then its commit, which flushes and closes the stream (err from
 * ferror/fflush/fclose). */
FILE *ompc_file_replace_stream(ompc_file_out_t *o);
ompc_status_t ompc_file_replace_commit_stream(ompc_file_out_t *o, FILE *f);

/* Gives up: removes the temporary, keeps the old file. */
void ompc_file_replace_abort(ompc_file_out_t *o);

/* write(2) until all of buf is written; returns 0 or the errno. */
int ompc_file_write_all(int fd, const void *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
