/* Output files replaced safely; the rules are in ompc_file.h. */
#define _GNU_SOURCE
#include "ompc_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static ompc_status_t file_fail(ompc_file_out_t *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static ompc_status_t file_fail(ompc_file_out_t *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->why, sizeof(o->why), fmt, ap);
    va_end(ap);
    if (o->fd >= 0)
        close(o->fd);
    o->fd = -1;
    if (o->tmp)
        unlink(o->tmp);
    free(o->tmp);
    free(o->dest);
    o->tmp = o->dest = NULL;
    return OMPC_ERR_INVALID;
}

static const char *file_kind(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISSOCK(m))
        return "a socket";
    if (S_ISLNK(m))
        return "a symlink";
    return "not a regular file";
}

/* The process's umask, read without changing it (umask(2) would, and other
 * threads create files too); 022 when /proc is not there. */
static mode_t file_umask(void)
{
    mode_t m = 022;
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return m;
    char line[256];
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "Umask:", 6) == 0) {
            m = (mode_t)strtoul(line + 6, NULL, 8) & 0777;
            break;
        }
    fclose(f);
    return m;
}

/* A symlink in a world-writable sticky directory (/tmp) that belongs to
 * neither us nor the directory's owner may have been planted to make us
 * overwrite its target: the kernel's protected_symlinks rule, applied even
 * where the sysctl is off. */
static bool file_link_untrusted(const char *path, const struct stat *link)
{
    char *copy = strdup(path);
    if (!copy)
        return true;
    struct stat dir;
    bool bad = stat(dirname(copy), &dir) != 0 ||
               ((dir.st_mode & S_ISVTX) && (dir.st_mode & S_IWOTH) &&
                link->st_uid != geteuid() && link->st_uid != dir.st_uid);
    free(copy);
    return bad;
}

/* True when path leads through /proc (/dev/stdout -> /proc/self/fd/1):
 * such a "file" is one of our open descriptors, not a name to replace. */
static bool file_via_proc(const char *path)
{
    char cur[4096], next[4096];
    snprintf(cur, sizeof(cur), "%s", path);
    for (int hop = 0; hop < 40; hop++) {
        if (strncmp(cur, "/proc/", 6) == 0)
            return true;
        ssize_t n = readlink(cur, next, sizeof(next) - 1);
        if (n < 0)
            return false;
        next[n] = '\0';
        if (next[0] != '/')
            return false;
        memcpy(cur, next, (size_t)n + 1);
    }
    return false;
}

ompc_status_t ompc_file_replace_begin(ompc_file_out_t *o, const char *path)
{
    o->fd = -1;
    o->dest = o->tmp = NULL;
    o->why[0] = '\0';
    if (!path || !*path)
        return file_fail(o, "empty output path");
    struct stat st;
    bool exists = lstat(path, &st) == 0;
    if (!exists && errno != ENOENT)
        return file_fail(o, "cannot examine %s: %s", path, strerror(errno));
    int nofollow = O_NOFOLLOW;
    if (exists && S_ISLNK(st.st_mode)) {
        if (file_link_untrusted(path, &st))
            return file_fail(o,
                             "%s is a symlink owned by another user in a "
                             "shared sticky directory; refused to follow it",
                             path);
        if (stat(path, &st) != 0)
            return file_fail(o,
                             "%s is a symlink to a missing or unreachable "
                             "file (%s); refused to create its target",
                             path, strerror(errno));
        o->dest = strdup(path);
        if (!o->dest)
            return file_fail(o, "out of memory for %s", path);
        if (file_via_proc(path)) {
            /* /dev/stdout, /dev/fd/N: an open descriptor of this process,
             * written in place (appended to, if a file: the process's own
             * output shares it). */
            nofollow = 0;
            if (S_ISREG(st.st_mode)) {
                o->fd = open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
                if (o->fd < 0)
                    return file_fail(o, "cannot open %s: %s", path, strerror(errno));
                return OMPC_OK;
            }
        } else if (S_ISREG(st.st_mode)) {
            /* Through the link: whoever made it wants the file it names
             * kept up to date, and the link kept. */
            free(o->dest);
            o->dest = realpath(path, NULL);
            if (!o->dest)
                return file_fail(o, "cannot resolve the symlink %s: %s", path,
                                 strerror(errno));
            exists = lstat(o->dest, &st) == 0;
            if (!exists && errno != ENOENT)
                return file_fail(o, "cannot examine %s: %s", o->dest, strerror(errno));
        } else {
            /* A link to a device or FIFO: written in place below. */
            nofollow = 0;
        }
    } else {
        o->dest = strdup(path);
        if (!o->dest)
            return file_fail(o, "out of memory for %s", path);
    }
    if (exists && S_ISCHR(st.st_mode)) {
        /* /dev/null, /dev/stdout's tty: the device is the destination;
         * replacing it by a regular file would break it for everyone. */
        o->fd = open(o->dest, O_WRONLY | nofollow | O_NOCTTY | O_CLOEXEC);
        if (o->fd < 0)
            return file_fail(o, "cannot open %s: %s", o->dest, strerror(errno));
        struct stat now;
        if (fstat(o->fd, &now) != 0 || !S_ISCHR(now.st_mode) || now.st_rdev != st.st_rdev)
            return file_fail(o, "%s changed while it was opened; refused", o->dest);
        return OMPC_OK;
    }
    if (exists && S_ISFIFO(st.st_mode)) {
        /* A FIFO is written in place when someone reads it; without a
         * reader a blocking open would hang the run, so refuse instead. */
        o->fd = open(o->dest, O_WRONLY | O_NONBLOCK | nofollow | O_CLOEXEC);
        if (o->fd < 0 && errno == ENXIO)
            return file_fail(o,
                             "%s is a FIFO with no reader; refused (start "
                             "its reader first)",
                             o->dest);
        if (o->fd < 0)
            return file_fail(o, "cannot open %s: %s", o->dest, strerror(errno));
        struct stat now;
        int fl = fcntl(o->fd, F_GETFL);
        if (fstat(o->fd, &now) != 0 || !S_ISFIFO(now.st_mode) ||
            now.st_ino != st.st_ino || now.st_dev != st.st_dev || fl < 0 ||
            fcntl(o->fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
            return file_fail(o, "%s changed while it was opened; refused", o->dest);
        return OMPC_OK;
    }
    if (exists && !S_ISREG(st.st_mode))
        return file_fail(o, "%s is %s; refused to write it", o->dest,
                         file_kind(st.st_mode));
    /* Next to the destination so that rename stays on one file system;
     * mkostemp's O_EXCL name cannot be pre-planted as a symlink. */
    size_t len = strlen(o->dest) + sizeof(".tmp.XXXXXX");
    o->tmp = malloc(len);
    if (!o->tmp)
        return file_fail(o, "out of memory for %s", o->dest);
    snprintf(o->tmp, len, "%s.tmp.XXXXXX", o->dest);
    o->fd = mkostemp(o->tmp, O_CLOEXEC);
    if (o->fd < 0) {
        int e = errno;
        free(o->tmp);
        o->tmp = NULL;
        return file_fail(o, "cannot create a temporary file next to %s: %s", o->dest,
                         strerror(e));
    }
    /* mkostemp makes 0600: keep the replaced file's mode, or the usual
     * mode of a new file. */
    mode_t mode = exists ? (st.st_mode & 0777) : (0666 & ~file_umask());
    if (fchmod(o->fd, mode) != 0)
        return file_fail(o, "cannot set the mode of %s: %s", o->tmp, strerror(errno));
    return OMPC_OK;
}

/* After the descriptor is closed with err its first error: rename. */
static ompc_status_t file_finish(ompc_file_out_t *o, int err)
{
    o->fd = -1;
    if (err)
        return file_fail(o, "cannot write %s: %s", o->dest, strerror(err));
    if (o->tmp) {
        struct stat st;
        if (lstat(o->dest, &st) == 0 && !S_ISREG(st.st_mode))
            return file_fail(o,
                             "%s became %s while it was written; left it "
                             "alone",
                             o->dest, file_kind(st.st_mode));
        if (rename(o->tmp, o->dest) != 0)
            return file_fail(o, "cannot rename %s to %s: %s", o->tmp, o->dest,
                             strerror(errno));
    }
    free(o->tmp);
    free(o->dest);
    o->tmp = o->dest = NULL;
    return OMPC_OK;
}

ompc_status_t ompc_file_replace_commit(ompc_file_out_t *o, int err)
{
    if (o->fd < 0)
        return file_fail(o, "output file not open");
    /* The rename is only as good as the data under it. */
    if (!err && o->tmp && fsync(o->fd) != 0)
        err = errno;
    if (close(o->fd) != 0 && !err)
        err = errno;
    return file_finish(o, err);
}

FILE *ompc_file_replace_stream(ompc_file_out_t *o)
{
    FILE *f = fdopen(o->fd, "w");
    if (!f)
        file_fail(o, "cannot open a stream on %s: %s", o->dest, strerror(errno));
    return f;
}

ompc_status_t ompc_file_replace_commit_stream(ompc_file_out_t *o, FILE *f)
{
    int err = 0;
    if (fflush(f) != 0)
        err = errno ? errno : EIO;
    else if (ferror(f))
        err = EIO;
    if (!err && o->tmp && fsync(fileno(f)) != 0)
        err = errno;
    if (fclose(f) != 0 && !err)
        err = errno;
    return file_finish(o, err);
}

void ompc_file_replace_abort(ompc_file_out_t *o) { file_fail(o, "abandoned"); }

int ompc_file_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        if (n == 0)
            return EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}
