/*
 * periodic.c: RUBY_GC_SAMPLING's every= writer (periodic.h has the model
 * and why it is a native thread).
 */
#include "ruby/internal/config.h"
#include "vm_core.h"
#include "ruby/debug.h"

#include "config.h"
#include "delta.h"
#include "out.h"
#include "periodic.h"
#include "profile.h"
#include "sampler.h"
#include "timeline.h"
#include "watch.h"

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

#define FOREVER UINT64_MAX

/* What a build makes: every='s delta, or the watcher's in-use profile. */
enum build_kind { BUILD_DELTA, BUILD_INUSE };

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
    enum build_kind kind;           /* WANTED..BUILT: what */
    char why[WATCH_WHY];            /* BUILD_INUSE: the comment that says why */
    uint8_t *bytes;                 /* BUILT: the profile (malloc'd) */
    size_t len;
    char path[SAMPLING_OUT_MAX + 64];   /* BUILT: where it goes */
    rb_thread_t *main_thread;       /* woken when no Ruby thread runs the job */
    uint64_t every_ns;              /* 0: no every= */
    /* the watcher: its settings (set with the GVL, under lock; taken by
     * the writer when `reconfigured`), and the writer's own (watch.h) */
    struct sampling_params watch;
    bool watching, reconfigured;
    struct sampling_watch w;
    /* with the GVL only: */
    struct sampling_delta delta;    /* since start (or the fork) */
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
write_file(const char *path, const uint8_t *bytes, size_t len, const char *what)
{
    char err[256];
    if (!sampling_out_write(path, bytes, len, err, sizeof(err)))
        fprintf(stderr, "ruby: warning: RUBY_GC_SAMPLING: could not write the %s to %s (%s)\n", what, path, err);
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
    if (periodic.kind == BUILD_INUSE) sampling_pprof_malloced(NULL, periodic.why, &b->bytes, &b->len);
    else sampling_pprof_malloced(&periodic.delta, NULL, &b->bytes, &b->len);
    return Qnil;
}

/* The next file's bytes and path (out= numbers every file of the
 * process: every='s, the watcher's, the one at exit), under
 * periodic.mutex (held by the caller); false (one warning) when it
 * cannot be built or named.  periodic.kind says what. */
static bool
build_next(uint8_t **bytes, size_t *len, char *path, size_t pathlen)
{
    if (!sampling_out_next(path, pathlen)) {
        fprintf(stderr, "ruby: warning: RUBY_GC_SAMPLING: out=%s is too long; no profile written\n", sampler_params()->out);
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
        fprintf(stderr, "ruby: warning: RUBY_GC_SAMPLING: no profile written to %s: %s\n", path,
                RB_TYPE_P(msg, T_STRING) ? StringValueCStr(msg) : "error");
        return false;
    }
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
    bool stale = periodic.kind == BUILD_INUSE && !sampler_enabled();    /* stopped: nothing new to show */
    if (!stale && !periodic.done && RTEST(rb_mutex_trylock(periodic.mutex))) {   /* else: the last build runs */
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

/* One file: asks for the build, waits for it (waking the main thread
 * after the grace), writes it.  Under lock; false once stopped; *written
 * (if given) says whether a file was written. */
static bool
period(enum build_kind kind, bool *written)
{
    if (written) *written = false;
    periodic.kind = kind;
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
        write_file(path, bytes, len, kind == BUILD_DELTA ? "delta" : "profile");
        free(bytes);
        pthread_mutex_lock(&periodic.lock);
        if (written) *written = true;
    }
    else if (periodic.state == WANTED) {
        periodic.state = IDLE;      /* stopped: a job that runs later finds nothing asked */
    }
    return !periodic.stop;
}

/* ---- the watcher (in the writer thread, under lock) ---- */

/* One poll (watch.h): a file when one is due.  False once stopped. */
static bool
watch_poll(void)
{
    if (periodic.reconfigured) {
        periodic.reconfigured = false;
        sampling_watch_open(&periodic.w, &periodic.watch);
    }
    /* the highest live estimate at a GC's end (timeline.h), atomic */
    uint64_t live = __atomic_load_n(&sampler_timeline()->peak_live_bytes, __ATOMIC_RELAXED);
    if (!sampling_watch_poll(&periodic.w, live, periodic.why, sizeof(periodic.why))) return true;
    bool written;
    if (!period(BUILD_INUSE, &written)) return false;
    if (written) sampling_watch_written(&periodic.w);
    return true;
}

static void *
writer_main(void *unused)
{
    pthread_mutex_lock(&periodic.lock);
    uint64_t start = monotonic_ns(), k = 1, next_poll = start;
    while (!periodic.stop) {
        if (periodic.reconfigured) {
            next_poll = monotonic_ns();     /* new settings: a poll now */
            if (!periodic.watching) {
                periodic.reconfigured = false;
                sampling_watch_close(&periodic.w);
            }
        }
        uint64_t every = periodic.every_ns ? start + k * periodic.every_ns : FOREVER;
        uint64_t poll = periodic.watching ? next_poll : FOREVER;
        uint64_t now = monotonic_ns(), deadline = every < poll ? every : poll;
        if (now < deadline) {
            if (deadline == FOREVER) pthread_cond_wait(&periodic.cond, &periodic.lock);
            else wait_until(deadline);
            continue;       /* (spurious wake-ups, stop, new settings) */
        }
        if (now >= every) {
            if (!period(BUILD_DELTA, NULL)) break;
            /* the next deadline still to come: a late period shortens none
             * after it, and periods missed entirely are skipped */
            k = (monotonic_ns() - start) / periodic.every_ns + 1;
        }
        if (periodic.watching && now >= poll) {
            if (!watch_poll()) break;
            next_poll = now + periodic.w.poll_ns;
            if (next_poll < monotonic_ns()) next_poll = monotonic_ns() + periodic.w.poll_ns;    /* (a build took longer) */
        }
    }
    pthread_mutex_unlock(&periodic.lock);
    return NULL;
}

/* Starts the writer in this process (the GVL held, or right after a fork
 * in the child: the calling thread is the one that goes on). */
static void
writer_start(VALUE main_thread)
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
    periodic.done = false;
    periodic.reconfigured = true;
    periodic.main_thread = (rb_thread_t *)RTYPEDDATA_GET_DATA(main_thread);

    /* signals go to Ruby's threads, never to this one */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(&periodic.thread, NULL, writer_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err) {
        fprintf(stderr, "ruby: warning: RUBY_GC_SAMPLING: no thread for every=, limit= or grow= (%s); only the file at "
                "exit is written\n", strerror(err));
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
    if (!periodic.every_ns) return Qnil;    /* (the watcher only: out.c writes the file at exit) */
    periodic.kind = BUILD_DELTA;
    uint8_t *bytes;
    size_t len;
    char path[sizeof(periodic.path)];
    if (build_next(&bytes, &len, path, sizeof(path))) {
        write_file(path, bytes, len, "delta");
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

/* Once a process: the Ruby Mutex, the postponed job, the end proc.
 * False (one warning) when no job can be had. */
static bool
periodic_init(void)
{
    if (periodic.mutex) return periodic.job != POSTPONED_JOB_HANDLE_INVALID;
    periodic.mutex = rb_mutex_new();
    rb_gc_register_address(&periodic.mutex);
    periodic.job = rb_postponed_job_preregister(0, periodic_job, NULL);
    if (periodic.job == POSTPONED_JOB_HANDLE_INVALID) {
        fprintf(stderr, "ruby: warning: RUBY_GC_SAMPLING: no postponed job for every=, limit= or grow=; only the file "
                "at exit is written\n");
    }
    rb_set_end_proc(periodic_at_exit, Qnil);
    return periodic.job != POSTPONED_JOB_HANDLE_INVALID;
}

static bool
watches(const struct sampling_params *params)
{
    return params->out[0] && (params->limit != SAMPLING_LIMIT_NONE || params->grow);
}

void
sampling_periodic_boot(void)
{
    const struct sampling_params *params = sampler_params();
    bool every = params->every && params->out[0];
    if ((!every && !watches(params)) || !sampler_enabled()) return;
    if (every) periodic.delta.generation = sampling_sites_generation();   /* since start: the first file has every sample from boot */
    if (!periodic_init()) return;
    periodic.every_ns = every ? (uint64_t)params->every * 1000000000ULL : 0;
    periodic.watch = *params;
    periodic.watching = watches(params);
    writer_start(rb_thread_current());
}

/* start(limit:, grow:, ...): the watcher takes the new settings (and
 * its count of files starts again), starting the writer if none runs;
 * with neither, the writer stops watching (every= goes on). */
void
sampling_watch_configure(const struct sampling_params *params)
{
    bool watching = watches(params);
    if (!periodic.pid && !watching) return;
    if (!periodic_init()) return;
    if (periodic.pid == (long)getpid()) {
        pthread_mutex_lock(&periodic.lock);
        periodic.watch = *params;
        periodic.watching = watching;
        periodic.reconfigured = true;
        pthread_cond_broadcast(&periodic.cond);
        pthread_mutex_unlock(&periodic.lock);
        return;
    }
    periodic.every_ns = 0;      /* (every= is RUBY_GC_SAMPLING's only: its writer would run already) */
    periodic.watch = *params;
    periodic.watching = watching;
    periodic.done = false;
    writer_start(rb_thread_main());
}

/* In the child of a Ruby-level fork (rb_gc_impl_after_fork): the parent's
 * writer is not here; this child's counts from the fork, and its files
 * (the parent's /proc/self) are opened again. */
void
sampling_periodic_after_fork(void)
{
    if (!periodic.mutex || periodic.job == POSTPONED_JOB_HANDLE_INVALID || !periodic.pid) return;
    free(periodic.bytes);   /* the parent's, not written here */
    sampling_watch_close(&periodic.w);     /* (the parent's /proc/self) */
    writer_start(rb_thread_current());
}
