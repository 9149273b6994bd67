/*
 * out.c: RUBY_GC_SAMPLING's out=: where the files go (%p, %n, a forked
 * child's pid), and what is written there at exit: the profile (pprof,
 * or DHAT for FILE.dhat.json) and the timeline beside it.  every='s
 * delta files are periodic.c's, named here too.
 *
 * A reader above the writers it picks from (profile.c, dhat_api.c,
 * timeline_api.c), so none of them calls back into another to write at
 * exit (HACKING.md's "Layers").
 */
#include "ruby/ruby.h"

#include "api.h"
#include "config.h"
#include "delta.h"
#include "sampler.h"

#include <stdio.h>
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

/* RUBY_GC_SAMPLING's out=: the profile at exit, %p the pid (resolved
 * against the directory the program started in).  Never raises for a
 * failed write: one warning, and the exit status stays the program's.  A
 * signal that arrives meanwhile waits until the profile is written (unless
 * the write blocks), then ends the program as it would have. */
static VALUE
write_at_exit_write(RB_BLOCK_CALL_FUNC_ARGLIST(unused, path))
{
    /* out=FILE.dhat.json: DHAT's format (dhat_api.c), else pprof */
    VALUE profile = sampling_dhat_path(StringValueCStr(path)) ? sampling_dhat_text() : sampling_pprof_bytes(NULL);
    VALUE written = sampling_write_out(path, profile, "out");
    /* the timeline beside it (timeline_api.c) */
    char csv[SAMPLING_OUT_MAX + 64];
    if (sampling_timeline_path(StringValueCStr(path), csv, sizeof(csv))) {
        sampling_write_out(rb_str_new_cstr(csv), sampling_timeline_csv(), "out");
    }
    return written;
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
    if (!sampling_out_path(1, path, sizeof(path))) {
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
