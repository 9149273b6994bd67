/*
 * periodic.h: RUBY_GC_SAMPLING's every=: a delta file (delta.h) every N
 * seconds, numbered 1, 2, ... (out='s %n), and the last one at exit;
 * and the watcher (limit=, grow=, and start's limit:, grow:;
 * docs/oom.md): the in-use profile when memory crosses a fraction of its
 * limit or the live estimate reaches a new high by a step.  One native
 * thread does both: it sleeps to the earlier of the next every= deadline
 * and the next poll (watch.h decides, memlimit.h reads the files), so
 * the watch adds nothing to the allocation path.
 *
 * Model.  A native thread (a pthread Ruby does not know) keeps the
 * clock; the program's own threads build the profiles; the native thread
 * writes them.
 *
 *   writer (pthread, no GVL)          a Ruby thread (GVL), at an interrupt check
 *   sleep to deadline k (absolute) --> postponed job: build delta k (malloc'd
 *   [no build after a grace: wake          bytes, no Ruby object kept), hand it over
 *    the main thread if it blocks]  <--
 *   write file k (open/write/close)
 *   deadline k+1 = start + (k+1) x every (missed ones skipped)
 *
 * Why not a Ruby thread: the program sees its own threads.  A Ruby thread
 * sleeping with a timeout is in Thread.list (a `Thread.list.each(&:join)`
 * never returns) and is a live thread to the deadlock check, so
 * `Queue.new.pop` with no other thread hung instead of dying with "No live
 * threads left. Deadlock?".  A pthread is neither.  It never takes the
 * GVL (rb_thread_call_with_gvl refuses threads Ruby does not know): it
 * asks for a build with rb_postponed_job_trigger, which is safe from any
 * thread, and the job runs with the GVL at the next interrupt check of
 * whichever Ruby thread runs, as Ruby's own finalizers do.  When no Ruby
 * thread runs (all sleep or wait on IO) nothing would check, so after a
 * grace (WAKE_GRACE_NS) the writer interrupts the main thread the way a
 * signal does (its unblock function, under its interrupt_lock, only while
 * it is blocked): it runs the job and goes back to its sleep or its read,
 * which Ruby retries; a sleep is not shortened.  Deadlines are absolute
 * (CLOCK_MONOTONIC), so a late build never stretches the periods after it.
 *
 * The job masks pending interrupts (Thread#raise, kill) while it builds,
 * so none is delivered, and lost, inside it; they come at the next check.
 * It allocates Ruby objects (the read's names) but never runs during GC
 * (postponed jobs run at interrupt checks), keeps none, and does no IO.
 *
 * Locking: `lock` (a pthread mutex) guards the hand-over (state, bytes,
 * stop); never held while calling into Ruby or writing a file.  A Ruby
 * Mutex keeps a build and the last build (the end proc) apart: the job
 * only tries it (a job never waits on the program); the end proc takes
 * it, stops and joins the writer (which first writes a build it was
 * handed), then builds and writes the last file itself.  seq (files
 * numbered so far) is touched with the GVL only.
 *
 * Every file is written whole (out.c: a temporary file renamed over
 * the name).  The watcher's builds are skipped while sampling is stopped
 * (nothing new to show); its settings change under `lock` (start), and
 * the thread takes them at its next turn (reconfigured).
 *
 * Forks: Ruby calls rb_gc_impl_after_fork(0) in the child of fork,
 * Process.fork, IO.popen("-") and Process.daemon (after_fork_ruby), where
 * sampling_periodic_after_fork starts a writer of the child's own (its
 * watcher opens its own /proc/self files),
 * numbering from 1 and counting from the fork, as the child's totals do;
 * without %p in out= the child's files carry its pid (config.h).  A C
 * extension's fork(2) goes through no Ruby hook: that child has no writer
 * (the end proc, seeing another pid, joins none and writes the last file
 * under the child's pid).
 */
#ifndef SAMPLING_PERIODIC_H
#define SAMPLING_PERIODIC_H

/* RUBY_GC_SAMPLING's every=: starts the writer of delta files once the
 * VM can run threads, and again in a forked child (periodic.c; called
 * from api.c's rb_gc_impl_set_params and _after_fork). */
void sampling_periodic_boot(void);
void sampling_periodic_after_fork(void);

/* start(limit:, grow:, out:, ...): the watcher takes params's settings
 * (periodic.c). */
struct sampling_params;
void sampling_watch_configure(const struct sampling_params *params);

#endif
