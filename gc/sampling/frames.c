/* frames.c: see frames.h. */
#include "ruby/internal/config.h"
#include "vm_core.h"
#include "iseq.h"

#include "frames.h"

/* As rb_vm_frame_method_entry (vm_insnhelper.c, not exported): the method
 * entry stored in the frame's environment, following block environments
 * out to their method's. */
static const rb_callable_method_entry_t *
env_method_entry(VALUE v, bool can_be_svar)
{
    if (!v || RB_SPECIAL_CONST_P(v) || !RB_TYPE_P(v, T_IMEMO)) return NULL;
    switch (imemo_type(v)) {
      case imemo_ment:
        return (const rb_callable_method_entry_t *)v;
      case imemo_svar:
        return can_be_svar ? env_method_entry(((struct vm_svar *)v)->cref_or_me, false) : NULL;
      default:
        return NULL;
    }
}

static const rb_callable_method_entry_t *
frame_method_entry(const rb_control_frame_t *cfp)
{
    const VALUE *ep = cfp->ep;
    const rb_callable_method_entry_t *me;
    while (!VM_ENV_LOCAL_P(ep)) {
        if ((me = env_method_entry(ep[VM_ENV_DATA_INDEX_ME_CREF], false)) != NULL) return me;
        ep = VM_ENV_PREV_EP(ep);
    }
    return env_method_entry(ep[VM_ENV_DATA_INDEX_ME_CREF], true);
}

static inline bool
iseq_c_trace_p(const rb_iseq_t *iseq)
{
    return (ISEQ_BODY(iseq)->builtin_attrs & BUILTIN_ATTR_C_TRACE) != 0;
}

static inline bool
rescue_or_ensure_p(const rb_iseq_t *iseq)
{
    enum rb_iseq_type type = ISEQ_BODY(iseq)->type;
    return type == ISEQ_TYPE_RESCUE || type == ISEQ_TYPE_ENSURE;
}

static rb_execution_context_t *
current_ec(void)
{
    VALUE thread = rb_thread_current();
    /* Before Init_Thread the main thread has no Ruby object yet. */
    if (!thread || RB_SPECIAL_CONST_P(thread) || !RB_TYPE_P(thread, T_DATA)) return NULL;
    rb_thread_t *th = (rb_thread_t *)RTYPEDDATA_GET_DATA(thread);
    return th ? th->ec : NULL;
}

uint32_t
sampling_frames_capture(struct sampling_frame *buf, uint32_t depth, bool *truncated)
{
    *truncated = false;
    rb_execution_context_t *ec = current_ec();
    if (!ec || !ec->vm_stack || !ec->cfp) return 0;

    const rb_control_frame_t *cfp = ec->cfp;
    /* the two dummy top frames are not shown */
    const rb_control_frame_t *end_cfp = RUBY_VM_NEXT_CONTROL_FRAME(RUBY_VM_END_CONTROL_FRAME(ec));
    uint32_t n = 0, pending_cfuncs = 0;
    bool skip_next = false;

    for (; cfp != end_cfp; cfp = RUBY_VM_PREVIOUS_CONTROL_FRAME(cfp)) {
        const rb_iseq_t *iseq = cfp->iseq;
        if (iseq) {
            if (!cfp->pc) continue;
            bool skip = skip_next;
            skip_next = rescue_or_ensure_p(iseq);
            if (skip) continue;
            bool c_trace = iseq_c_trace_p(iseq);
            if (!c_trace && pending_cfuncs) {
                /* C frames report the file and line of their Ruby caller */
                uint32_t pc = (uint32_t)(cfp->pc - ISEQ_BODY(iseq)->iseq_encoded);
                for (uint32_t i = n - pending_cfuncs; i < n; i++) {
                    buf[i].iseq = (uintptr_t)iseq;
                    buf[i].pc = pc;
                }
                pending_cfuncs = 0;
            }
            if (n == depth) {
                *truncated = true;
                break;
            }
            struct sampling_frame *f = &buf[n++];
            f->cme = (uintptr_t)frame_method_entry(cfp);
            if (c_trace) {
                f->iseq = 0;
                f->pc = 0;
                f->cfunc = 1;
                pending_cfuncs++;
            }
            else {
                f->iseq = (uintptr_t)iseq;
                f->pc = (uint32_t)(cfp->pc - ISEQ_BODY(iseq)->iseq_encoded);
                f->cfunc = 0;
            }
        }
        else {
            if (n == depth) {
                *truncated = true;
                if (!pending_cfuncs) break;
                continue; /* keep looking for the Ruby caller of the last C frames */
            }
            struct sampling_frame *f = &buf[n++];
            f->cme = (uintptr_t)frame_method_entry(cfp);
            f->iseq = 0;
            f->pc = 0;
            f->cfunc = 1;
            pending_cfuncs++;
        }
    }
    return n;
}

VALUE
sampling_frame_path(const struct sampling_frame *frame)
{
    if (!frame->iseq) return Qnil;
    return rb_iseq_path((const rb_iseq_t *)frame->iseq);
}

int
sampling_frame_lineno(const struct sampling_frame *frame)
{
    if (!frame->iseq) return 0;
    const rb_iseq_t *iseq = (const rb_iseq_t *)frame->iseq;
    /* pc points after the instruction being executed (calc_pos in vm_backtrace.c) */
    size_t pos = frame->pc ? frame->pc - 1 : 0;
    return (int)rb_iseq_line_no(iseq, pos);
}

/* The name of a class for a label, or Qnil when it has no permanent one
 * (anonymous, or named under an anonymous module), as rb_mod_name0 decides. */
static VALUE
permanent_name(VALUE mod)
{
    VALUE name = rb_mod_name(mod);
    if (NIL_P(name) || RSTRING_LEN(name) == 0 || RSTRING_PTR(name)[0] == '#') return Qnil;
    return name;
}

/* As rb_gen_method_name (vm_backtrace.c, not exported). */
static VALUE
method_label(VALUE owner, VALUE name)
{
    if (RB_TYPE_P(owner, T_CLASS) || RB_TYPE_P(owner, T_MODULE)) {
        if (FL_TEST(owner, FL_SINGLETON)) {
            VALUE v = rb_class_attached_object(owner);
            if (RB_TYPE_P(v, T_CLASS) || RB_TYPE_P(v, T_MODULE)) {
                VALUE vname = permanent_name(v);
                if (!NIL_P(vname)) return rb_sprintf("%"PRIsVALUE".%"PRIsVALUE, vname, name);
            }
        }
        else {
            VALUE oname = permanent_name(owner);
            if (!NIL_P(oname)) return rb_sprintf("%"PRIsVALUE"#%"PRIsVALUE, oname, name);
        }
    }
    return rb_str_dup(name);
}

/* As calculate_iseq_label (vm_backtrace.c). */
static VALUE
iseq_label(VALUE owner, const rb_iseq_t *iseq)
{
    for (;;) {
        switch (ISEQ_BODY(iseq)->type) {
          case ISEQ_TYPE_TOP:
          case ISEQ_TYPE_CLASS:
          case ISEQ_TYPE_MAIN:
            return rb_str_dup(ISEQ_BODY(iseq)->location.label);
          case ISEQ_TYPE_METHOD:
            return method_label(owner, ISEQ_BODY(iseq)->location.label);
          case ISEQ_TYPE_BLOCK:
          case ISEQ_TYPE_PLAIN: {
            int level = 0;
            const rb_iseq_t *orig = iseq;
            if (ISEQ_BODY(orig)->parent_iseq != 0) {
                while (ISEQ_BODY(orig)->local_iseq != iseq) {
                    if (ISEQ_BODY(iseq)->type == ISEQ_TYPE_BLOCK) level++;
                    iseq = ISEQ_BODY(iseq)->parent_iseq;
                }
            }
            VALUE base = iseq_label(owner, iseq);
            if (level <= 1) return rb_sprintf("block in %"PRIsVALUE, base);
            return rb_sprintf("block (%d levels) in %"PRIsVALUE, level, base);
          }
          case ISEQ_TYPE_RESCUE:
          case ISEQ_TYPE_ENSURE:
          case ISEQ_TYPE_EVAL:
            iseq = ISEQ_BODY(iseq)->parent_iseq;
            continue;
          default:
            return rb_str_new_cstr("<unknown>");
        }
    }
}

VALUE
sampling_frame_label(const struct sampling_frame *frame)
{
    const rb_callable_method_entry_t *cme = (const rb_callable_method_entry_t *)frame->cme;
    if (frame->cfunc) {
        if (!cme) return rb_str_new_cstr("<cfunc>");
        return method_label(cme->owner, rb_id2str(cme->def->original_id));
    }
    return iseq_label(cme ? cme->owner : Qnil, (const rb_iseq_t *)frame->iseq);
}
