/*
 * periodic.c: RUBY_GC_SAMPLING's every= writer (periodic.h has the model
 * and why it is a native thread).
 */
#include "ruby/internal/config.h"
#include "vm_core.h"
#include "ruby/debug.h"

#include "api.h"
#include "config.h"
#include "delta.h"
#include "periodic.h"
#include "sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How long a build may wait for a running Ruby thread's interrupt check
 * before the writer wakes the main thread (periodic.h).  A thread running
 * Ruby code checks within microseconds; this only spares a busy program
 * the wake-up. */
#define WAKE_GRACE_NS (50 * 1000 * 1000ULL)

enum build_state {
    IDLE,       /* nothing asked */
    WANTED,     /* the writer asked; the job has not started */
    BUILDING,   /* the job builds */
    BUILT,      /* bytes and path are the writer's to write */
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;            /* on CLOCK_MONOTONIC; any change of state or stop */
    pthread_t thread;
    long pid;                       /* the process the writer runs in; 0: none */
    bool stop;
    enum build_state state;
    uint8_t *bytes;                 /* BUILT: the profile (malloc'd) */
    size_t len;
    char path[SAMPLING_OUT_MAX + 64];   /* BUILT: where it goes */
    rb_thread_t *main_thread;       /* woken when no Ruby thread runs the job */
    uint64_t every_ns;
    /* with the GVL only: */
    struct sampling_delta delta;    /* since start (or the fork) */
    unsigned long seq;              /* files numbered so far */
    VALUE mutex;                    /* a build and the last one apart (a GC root) */
    bool done;                      /* the last file is written */
    rb_postponed_job_handle_t job;
} periodic;

static uint64_t
monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Waits on cond until ns (CLOCK_MONOTONIC) or a signal; under lock. */
static void
wait_until(uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL) };
    pthread_cond_timedwait(&periodic.cond, &periodic.lock, &ts);
}

/* ---- the file ---- */

static void
write_file(const char *path, const uint8_t *bytes, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    const char *what = NULL;
    int err = 0;
    if (fd < 0) {
        what = "open";
        err = errno;
    }
    else {
        for (size_t done = 0; done < len;) {
            ssize_t n = write(fd, bytes + done, len - done);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                what = "write";
                err = n < 0 ? errno : EIO;
                break;
            }
            done += (size_t)n;
        }
        if (close(fd) != 0 && !what) {
            what = "close";
            err = errno;
        }
    }
    if (what) fprintf(stderr, "ruby: warning: RUBY_GC_SAMPLING: could not write the delta to %s (%s: %s)\n", path, what, strerror(err));
}

/* ---- the build (GVL) ---- */

struct built {
    uint8_t *bytes;
    size_t len;
};

static VALUE
build_body(VALUE arg)
{
    struct built *b = (struct built *)arg;
    sampling_pprof_malloced(&periodic.delta, &b->bytes, &b->len);
    return Qnil;
}

/* The next delta's bytes and path, under periodic.mutex (held by the
 * caller); false (one warning) when it cannot be built or named. */
static bool
build_next(uint8_t **bytes, size_t *len, char *path, size_t pathlen)
{
    if (!sampling_out_path(periodic.seq + 1, path, pathlen)) {
        fprintf(stderr, "ruby: warning: RUBY_GC_SAMPLING: out=%s is too long; no delta written\n", sampler_params()->out);
        return false;
    }
    /* no Thread#raise or kill inside: postponed jobs drop what jumps out of them */
    rb_thread_t *th = (rb_thread_t *)RTYPEDDATA_GET_DATA(rb_thread_current());
    rb_execution_context_t *ec = th->ec;
    rb_atomic_t mask = ec->interrupt_mask;
    ec->interrupt_mask |= PENDING_INTERRUPT_MASK;
    struct built out = { NULL, 0 };
    int state = 0;
    rb_protect(build_body, (VALUE)&out, &state);
    ec->interrupt_mask = mask;
    if (state) {
        VALUE err = rb_errinfo();
        rb_set_errinfo(Qnil);
        VALUE msg = rb_check_funcall(err, rb_intern("message"), 0, 0);
        fprintf(stderr, "ruby: warning: RUBY_GC_SAMPLING: no delta written to %s: %s\n", path,
                RB_TYPE_P(msg, T_STRING) ? StringValueCStr(msg) : "error");
        return false;
    }
    periodic.seq++;
    *bytes = out.bytes;
    *len = out.len;
    return true;
}

/* The postponed job: builds what the writer asked for, if it still wants
 * it, and hands it over.  Runs in any Ruby thread, with the GVL. */
static void
periodic_job(void *unused)
{
    pthread_mutex_lock(&periodic.lock);
    bool wanted = periodic.state == WANTED && periodic.pid == (long)getpid();
    if (wanted) periodic.state = BUILDING;
    pthread_mutex_unlock(&periodic.lock);
    if (!wanted) return;

    uint8_t *bytes = NULL;
    size_t len = 0;
    char path[sizeof(periodic.path)];
    bool built = false;
    if (!periodic.done && RTEST(rb_mutex_trylock(periodic.mutex))) {   /* else: the last build runs */
        built = build_next(&bytes, &len, path, sizeof(path));
        rb_mutex_unlock(periodic.mutex);
    }

    pthread_mutex_lock(&periodic.lock);
    if (built) {
        periodic.bytes = bytes;
        periodic.len = len;
        memcpy(periodic.path, path, sizeof(path));
        periodic.state = BUILT;
    }
    else {
        periodic.state = IDLE;
    }
    pthread_cond_broadcast(&periodic.cond);
    pthread_mutex_unlock(&periodic.lock);
}

/* ---- the writer thread (no GVL, never calls Ruby but the two below) ---- */

/* Interrupts the main thread as a signal would, if it is blocked (its
 * unblock function is set, under its interrupt_lock, exactly while it
 * sleeps or waits: its ec does not change meanwhile), so that it runs the
 * postponed job at the check that follows; a running thread will check
 * by itself. */
static void
wake_main_thread(void)
{
    rb_thread_t *th = periodic.main_thread;
    rb_native_mutex_lock(&th->interrupt_lock);
    if (th->unblock.func) {
        RUBY_VM_SET_POSTPONED_JOB_INTERRUPT(th->ec);
        (th->unblock.func)(th->unblock.arg);
    }
    rb_native_mutex_unlock(&th->interrupt_lock);
}

/* One period's file: asks for the build, waits for it (waking the main
 * thread after the grace), writes it.  Under lock; false once stopped. */
static bool
period(void)
{
    periodic.state = WANTED;
    rb_postponed_job_trigger(periodic.job);
    uint64_t grace = monotonic_ns() + WAKE_GRACE_NS;
    bool woke = false;
    while (!periodic.stop && (periodic.state == WANTED || periodic.state == BUILDING)) {
        if (periodic.state == WANTED && !woke && monotonic_ns() >= grace) {
            woke = true;
            pthread_mutex_unlock(&periodic.lock);
            wake_main_thread();
            pthread_mutex_lock(&periodic.lock);
            continue;
        }
        /* (woken again every second: a main thread that was running at
         * the first try may block later) */
        wait_until(monotonic_ns() + (woke ? 1000000000ULL : WAKE_GRACE_NS));
        if (woke && periodic.state == WANTED) woke = false;
    }
    if (periodic.state == BUILT) {
        uint8_t *bytes = periodic.bytes;
        size_t len = periodic.len;
        char path[sizeof(periodic.path)];
        memcpy(path, periodic.path, sizeof(path));
        periodic.bytes = NULL;
        periodic.state = IDLE;
        pthread_mutex_unlock(&periodic.lock);
        write_file(path, bytes, len);
        free(bytes);
        pthread_mutex_lock(&periodic.lock);
    }
    else if (periodic.state == WANTED) {
        periodic.state = IDLE;      /* stopped: a job that runs later finds nothing asked */
    }
    return !periodic.stop;
}

static void *
writer_main(void *unused)
{
    pthread_mutex_lock(&periodic.lock);
    uint64_t start = monotonic_ns(), k = 1;
    while (!periodic.stop) {
        uint64_t deadline = start + k * periodic.every_ns;
        if (monotonic_ns() < deadline) {
            wait_until(deadline);
            continue;       /* (spurious wake-ups, stop) */
        }
        if (!period()) break;
        /* the next deadline still to come: a late period shortens none
         * after it, and periods missed entirely are skipped */
        uint64_t now = monotonic_ns();
        k = (now - start) / periodic.every_ns + 1;
    }
    pthread_mutex_unlock(&periodic.lock);
    return NULL;
}

/* Starts the writer in this process (the GVL held, or right after a fork
 * in the child: the calling thread is the one that goes on). */
static void
writer_start(void)
{
    pthread_condattr_t attr;
    pthread_mutex_init(&periodic.lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&periodic.cond, &attr);
    pthread_condattr_destroy(&attr);
    periodic.stop = false;
    periodic.state = IDLE;
    periodic.bytes = NULL;
    periodic.seq = 0;
    periodic.done = false;
    periodic.main_thread = (rb_thread_t *)RTYPEDDATA_GET_DATA(rb_thread_current());
    periodic.every_ns = (uint64_t)sampler_params()->every * 1000000000ULL;

    /* signals go to Ruby's threads, never to this one */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(&periodic.thread, NULL, writer_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err) {
        fprintf(stderr, "ruby: warning: RUBY_GC_SAMPLING: no thread for every= (%s); the last delta is written at exit\n",
                strerror(err));
        periodic.pid = 0;
        return;
    }
    periodic.pid = (long)getpid();
}

/* Stops and joins this process's writer, which first writes a build it
 * was handed; the caller holds periodic.mutex, so none is in progress. */
static void
writer_stop(void)
{
    if (periodic.pid != (long)getpid()) return;     /* none here (a fork(2) from C: the parent's) */
    pthread_mutex_lock(&periodic.lock);
    periodic.stop = true;
    pthread_cond_broadcast(&periodic.cond);
    pthread_mutex_unlock(&periodic.lock);
    pthread_join(periodic.thread, NULL);
    periodic.pid = 0;
}

/* ---- the last file, at exit ---- */

static VALUE
last_locked(VALUE unused)
{
    writer_stop();
    if (periodic.done) return Qnil;
    periodic.done = true;
    uint8_t *bytes;
    size_t len;
    char path[sizeof(periodic.path)];
    if (build_next(&bytes, &len, path, sizeof(path))) {
        write_file(path, bytes, len);
        free(bytes);
    }
    return Qnil;
}

static void
periodic_at_exit(VALUE unused)
{
    rb_mutex_synchronize(periodic.mutex, last_locked, Qnil);
}

/* ---- starts ---- */

void
sampling_api_booted(void)
{
    const struct sampling_params *params = sampler_params();
    if (!params->every || !params->out[0] || !sampler_enabled()) return;
    periodic.mutex = rb_mutex_new();
    rb_gc_register_address(&periodic.mutex);
    periodic.delta.generation = sampling_sites_generation();   /* since start: the first file has every sample from boot */
    periodic.job = rb_postponed_job_preregister(0, periodic_job, NULL);
    if (periodic.job == POSTPONED_JOB_HANDLE_INVALID) {
        fprintf(stderr, "ruby: warning: RUBY_GC_SAMPLING: no postponed job for every=; the last delta is written at exit\n");
    }
    rb_set_end_proc(periodic_at_exit, Qnil);
    if (periodic.job != POSTPONED_JOB_HANDLE_INVALID) writer_start();
}

/* In the child of a Ruby-level fork (rb_gc_impl_after_fork): the parent's
 * writer is not here; this child's counts from the fork. */
void
sampling_periodic_after_fork(void)
{
    if (!periodic.mutex || periodic.job == POSTPONED_JOB_HANDLE_INVALID) return;
    free(periodic.bytes);   /* the parent's, not written here */
    writer_start();
}
