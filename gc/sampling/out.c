/*
 * out.c: RUBY_GC_SAMPLING's out=: where the files go (%p, %n, a forked
 * child's pid), how they are written (whole or not at all), and what is
 * written there at exit: the profile (pprof, or DHAT for FILE.dhat.json)
 * and the timeline beside it.  every='s delta files and the watcher's
 * (limit=, grow=) are periodic.c's, named and written here too.
 *
 * Every file of a process is numbered in one sequence (%n: 1, 2, ...):
 * every='s, the watcher's, the one at exit; a forked child starts again
 * at 1 (and adds its pid where %p is missing: config.h).
 *
 * A file appears whole under its name: the bytes go to a new file
 * beside it (".NAME.tmp-PID-N", O_EXCL, so no symlink is followed),
 * which is renamed over the name; a symlink at the name is replaced,
 * never followed.  A FIFO, socket or device at the name is written into
 * (a reader waits there; renaming over it would leave the reader
 * nothing).
 *
 * A reader above the writers it picks from (profile.c, dhat_api.c,
 * timeline_api.c), so none of them calls back into another to write at
 * exit (HACKING.md's "Layers").
 */
#include "ruby/ruby.h"

#include "dhat_api.h"
#include "out.h"
#include "profile.h"
#include "timeline_api.h"
#include "write.h"
#include "config.h"
#include "sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The process that read out= (api.c's start_from_environment): any other
 * is a forked child, which adds its pid to a template without %p
 * (config.h). */
static long out_pid;

void
sampling_out_claim(void)
{
    out_pid = (long)getpid();
}

bool
sampling_out_path(unsigned long seq, char *path, size_t size)
{
    long pid = (long)getpid();
    return sampling_expand_path(sampler_params()->out, pid, seq, pid != out_pid, path, size);
}

/* The files this process numbered (with the GVL only), and the process
 * they count for: a forked child starts again. */
static unsigned long out_files;
static long out_files_pid;

bool
sampling_out_next(char *path, size_t size)
{
    long pid = (long)getpid();
    if (out_files_pid != pid) {
        out_files_pid = pid;
        out_files = 0;
    }
    return sampling_out_path(++out_files, path, size);
}

static bool
write_all(int fd, const uint8_t *bytes, size_t len)
{
    for (size_t done = 0; done < len;) {
        ssize_t n = write(fd, bytes + done, len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0) errno = EIO;
            return false;
        }
        done += (size_t)n;
    }
    return true;
}

static bool
out_fail(char *err, size_t errlen, const char *what, const char *path)
{
    snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
    return false;
}

/* (No Ruby: the writer thread calls it without the GVL.) */
bool
sampling_out_write(const char *path, const uint8_t *bytes, size_t len, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode) && !S_ISDIR(st.st_mode)) {
        /* a FIFO, socket or device: written into, as it is */
        int fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) return out_fail(err, errlen, "open", path);
        bool ok = write_all(fd, bytes, len);
        int saved = errno;
        close(fd);
        errno = saved;
        return ok || out_fail(err, errlen, "write", path);
    }
    /* the temporary file beside it: same directory, same file system */
    static unsigned long serial;
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
    char tmp[SAMPLING_OUT_MAX + 128];
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 100; tries++) {
        unsigned long n = __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED);
        if ((size_t)snprintf(tmp, sizeof(tmp), "%.*s.%s.tmp-%ld-%lu", (int)dirlen, path, path + dirlen, (long)getpid(), n)
            >= sizeof(tmp)) {
            errno = ENAMETOOLONG;
            return out_fail(err, errlen, "name a temporary file for", path);
        }
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) return out_fail(err, errlen, "create", tmp);
    }
    if (fd < 0) return out_fail(err, errlen, "create", tmp);
    bool ok = write_all(fd, bytes, len);
    const char *what = "write";
    if (close(fd) != 0 && ok) ok = false;
    if (ok) {
        what = "rename to";
        ok = rename(tmp, path) == 0;
    }
    if (ok) return true;
    int saved = errno;
    unlink(tmp);
    errno = saved;
    return out_fail(err, errlen, what, ok ? tmp : path);
}

/* RUBY_GC_SAMPLING's out=: the profile at exit, %p the pid (resolved
 * against the directory the program started in).  Never raises for a
 * failed write: one warning, and the exit status stays the program's.  A
 * signal that arrives meanwhile waits until the profile is written (unless
 * the write blocks), then ends the program as it would have. */
/* A file at exit: a FIFO (or other special file) through File.binwrite,
 * which waits for a reader without the GVL and can be interrupted;
 * anything else whole, through sampling_out_write. */
static void
write_at_exit_file(VALUE path, VALUE bytes)
{
    struct stat st;
    const char *p = StringValueCStr(path);
    if (lstat(p, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
        sampling_write_out(path, bytes, "out");
        return;
    }
    char err[SAMPLING_OUT_MAX + 256];
    if (!sampling_out_write(p, (const uint8_t *)RSTRING_PTR(bytes), (size_t)RSTRING_LEN(bytes), err, sizeof(err)))
        rb_raise(rb_eIOError, "%s", err);
    RB_GC_GUARD(bytes);
}

static VALUE
write_at_exit_write(RB_BLOCK_CALL_FUNC_ARGLIST(unused, path))
{
    /* out=FILE.dhat.json: DHAT's format (dhat_api.c), else pprof */
    const char *p = StringValueCStr(path);
    VALUE profile = sampling_dhat_path(p) ? sampling_dhat_text(sampler_params()->min_gcs) : sampling_pprof_bytes(NULL);
    write_at_exit_file(path, profile);
    /* the timeline beside it (timeline_api.c) */
    char csv[SAMPLING_OUT_MAX + 64];
    if (sampling_timeline_path(StringValueCStr(path), csv, sizeof(csv))) {
        write_at_exit_file(rb_str_new_cstr(csv), sampling_timeline_csv());
    }
    return Qnil;
}

static VALUE
write_at_exit_body(VALUE path)
{
    VALUE mask = rb_hash_new();
    rb_hash_aset(mask, rb_cObject, ID2SYM(rb_intern("on_blocking")));
    return rb_block_call(rb_cThread, rb_intern("handle_interrupt"), 1, &mask, write_at_exit_write, path);
}

static void
write_at_exit(VALUE unused)
{
    const struct sampling_params *params = sampler_params();
    if (!params->out[0]) return;
    char path[SAMPLING_OUT_MAX + 32];
    if (!sampling_out_next(path, sizeof(path))) {
        fprintf(stderr, "ruby: warning: RUBY_GC_SAMPLING: out=%s is too long; no profile written\n", params->out);
        return;
    }
    int state = 0;
    rb_protect(write_at_exit_body, rb_str_new_cstr(path), &state);
    if (!state) return;
    VALUE err = rb_errinfo();
    if (rb_obj_is_kind_of(err, rb_eSignal)) rb_jump_tag(state);   /* the program ends by its signal */
    rb_set_errinfo(Qnil);
    VALUE msg = rb_check_funcall(err, rb_intern("message"), 0, 0);
    fprintf(stderr, "ruby: warning: RUBY_GC_SAMPLING: could not write the profile to %s: %s\n", path,
            RB_TYPE_P(msg, T_STRING) ? StringValueCStr(msg) : "error");
}

void
sampling_write_at_exit(void)
{
    rb_set_end_proc(write_at_exit, Qnil);
}
