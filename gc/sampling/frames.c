/* frames.c: see frames.h.  (Over 450 lines: capture and naming, the two
 * halves of reading the VM's frames, share its internals and rules.) */
#include "ruby/internal/config.h"
#include "vm_core.h"
#include "iseq.h"
#include "internal/class.h"
#include "vm_callinfo.h"
#include "yjit.h"
#include "ruby_version.h"

#include "frames.h"
#include "invariant.h"

#include <inttypes.h>

#if SAMPLING_POINT_ON_CURSOR
# include "zjit.h"
/* A control frame's iseq and pc (ruby_version.h's SAMPLING_CFP_ISEQ and
 * _PC), as zjit.h's CFP_ISEQ and CFP_PC read them: from ZJIT's frame for a
 * frame ZJIT runs.  A C frame ZJIT runs points at one shared frame,
 * rb_zjit_c_frame, which the ruby binary does not export to a GC
 * library: it names no iseq and no pc, so neither is read from it. */
static inline const zjit_jit_frame_t *
sampling_zjit_frame(const rb_control_frame_t *cfp, bool *c_frame)
{
    *c_frame = false;
# if USE_ZJIT
    if (!rb_zjit_enabled_p || cfp->jit_return == NULL) return NULL;
    if ((VALUE)cfp->jit_return == ZJIT_JIT_RETURN_C_FRAME) {
        *c_frame = true;
        return NULL;
    }
    return (const zjit_jit_frame_t *)((VALUE *)cfp->jit_return)[-1];
# else
    return NULL;
# endif
}

static inline const rb_iseq_t *
sampling_cfp_iseq(const rb_control_frame_t *cfp)
{
    bool c_frame;
    const zjit_jit_frame_t *f = sampling_zjit_frame(cfp, &c_frame);
    return c_frame ? NULL : f ? f->iseq : cfp->_iseq;
}

static inline const VALUE *
sampling_cfp_pc(const rb_control_frame_t *cfp)
{
    bool c_frame;
    const zjit_jit_frame_t *f = sampling_zjit_frame(cfp, &c_frame);
    return c_frame ? NULL : f ? f->pc : cfp->pc;
}
#endif

/* As rb_vm_frame_method_entry (vm_insnhelper.c, not exported): the method
 * entry stored in the frame's environment, following block environments
 * out to their method's.  The slot holds false or an imemo (cref, method
 * entry or svar); one load of its flags tells which. */
#define IMEMO_KIND_MASK (RUBY_T_MASK | ((VALUE)0x0f << RUBY_FL_USHIFT))   /* IMEMO_MASK, internal/imemo.h */
#define IMEMO_KIND(kind) (RUBY_T_IMEMO | ((VALUE)(kind) << RUBY_FL_USHIFT))

static inline bool
imemo_kind_p(VALUE v, enum imemo_type kind)
{
    return !RB_SPECIAL_CONST_P(v) && (RBASIC(v)->flags & IMEMO_KIND_MASK) == IMEMO_KIND(kind);
}

/* The method entry of a frame whose own slot v holds none, the rarer
 * cases, out of the capture loop's way.  A local environment (top level,
 * class body, or a method that wrote $~ or $_) may hold it in an svar; a
 * block's is in an outer environment (out of line: a walk). */
static inline uintptr_t
local_method_entry(VALUE v)
{
    if (imemo_kind_p(v, imemo_svar)) {
        v = ((struct vm_svar *)v)->cref_or_me;
        if (imemo_kind_p(v, imemo_ment)) return v;
    }
    return 0;
}

static inline uintptr_t
block_method_entry(const VALUE *ep)
{
    VALUE v;
    do {
        ep = VM_ENV_PREV_EP(ep);
        v = ep[VM_ENV_DATA_INDEX_ME_CREF];
        if (imemo_kind_p(v, imemo_ment)) return v;
    } while (!VM_ENV_LOCAL_P(ep));
    return local_method_entry(v);
}

/* Out of line for the capture loop, so that its common frames stay
 * small; the compare (match_step) has the walk inline, as every stack's
 * bottom frame (<main>, run as an eval frame) and each block takes it. */
static NOINLINE(uintptr_t block_method_entry_call(const VALUE *ep));

static uintptr_t
block_method_entry_call(const VALUE *ep)
{
    return block_method_entry(ep);
}

static inline uintptr_t
frame_method_entry_slow(const VALUE *ep, VALUE v)
{
    return VM_ENV_LOCAL_P(ep) ? local_method_entry(v) : block_method_entry_call(ep);
}

static inline uintptr_t
frame_method_entry_inline(const VALUE *ep, VALUE v)
{
    return VM_ENV_LOCAL_P(ep) ? local_method_entry(v) : block_method_entry(ep);
}

/* A Ruby frame that backtraces show as a C method (ruby_version.h). */
static inline bool
iseq_as_cfunc_p(const rb_iseq_t *iseq)
{
    return SAMPLING_ISEQ_AS_CFUNC_P(iseq);
}

/* A frame running a rescue or ensure clause.  vm_backtrace.c asks the
 * iseq's type (ISEQ_TYPE_RESCUE/ENSURE); vm_exec_handle_exception pushes
 * exactly those iseqs, and only those, with the RESCUE magic, which one
 * load of the frame's flags reads.  Such a frame is pushed with no method
 * entry in its own slot and none is ever written there (svars and crefs
 * go to local environments; a rescue frame's is not local), so a frame
 * whose slot holds a method entry is not one: the capture loop asks only
 * the others. */
static inline bool
rescue_frame_p(const rb_control_frame_t *cfp)
{
    return (cfp->ep[VM_ENV_DATA_INDEX_FLAGS] & VM_FRAME_MAGIC_MASK) == VM_FRAME_MAGIC_RESCUE;
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

/* ---- YJIT: core methods it runs without their frame ----
 *
 * For a few core C methods YJIT emits the method's work inline at the
 * call site (known_cfunc_codegen) and pushes no frame, where the
 * interpreter pushes one: an object such a method allocates would show
 * its caller on top, not the method caller_locations and the interpreter
 * show.  Of YJIT's specialised methods (codegen.rs, reg_method_codegen;
 * the same list in 3.4 and 4.0) these five allocate and are called
 * through a frame by the interpreter; the others allocate nothing, or
 * (Float arithmetic, String#<< and Array#<< through opt_plus, opt_ltlt,
 * ...) run frameless in the interpreter too, so they need no frame here.
 *
 * The frame is given back from what YJIT leaves: before such a call it
 * saves the pc of the instruction after the call in the caller's frame,
 * so when the top frame is a Ruby frame whose pc follows a call
 * instruction (its call data is the instruction's last operand, or the
 * one before it for send's block iseq) named like one of these, with
 * plain arguments (no splat, keywords or block argument: YJIT specialises
 * only those), and what is allocated is a String, the allocation is that
 * method's: a frame would have been pushed for any other method (YJIT's
 * other frameless methods allocate nothing), and the interpreter
 * allocates in that state only the call site's cache (an imemo) and, the
 * first time, room in a class's cache table (malloc).  So a malloc'd
 * block is taken as the method's only once the site's inline cache holds
 * the method, as it does after the interpreter's first call: a site YJIT
 * compiles before the interpreter ever ran it (--yjit-call-threshold=1)
 * gives its buffers to the caller.  The call's inline cache cannot say which
 * method it is (YJIT does its own lookup and may never fill it), so the
 * method entries come from Method objects made once at boot and held
 * for good (rb_gc_register_mark_object: never freed, never moved). */
#define JIT_FRAMELESS_METHODS 5
static ID jit_frameless_ids[JIT_FRAMELESS_METHODS];
static VALUE jit_frameless_methods[JIT_FRAMELESS_METHODS];

static VALUE
method_of_string(VALUE name)
{
    return rb_obj_method(rb_str_new_cstr(""), name);
}

void
sampling_frames_init(void)
{
#if USE_YJIT
    static const char *const names[JIT_FRAMELESS_METHODS] = { "dup", "byteslice", "[]", "slice", "+@" };
    for (int i = 0; i < JIT_FRAMELESS_METHODS; i++) {
        int state = 0;
        VALUE m = rb_protect(method_of_string, ID2SYM(rb_intern(names[i])), &state);
        if (state) {
            rb_set_errinfo(Qnil);
            continue;
        }
        rb_gc_register_mark_object(m);
        jit_frameless_methods[i] = m;
        jit_frameless_ids[i] = rb_intern(names[i]);
    }
#endif
}

/* The method entry a Method object holds (proc.c's struct METHOD, the
 * same in 3.4 and 4.0; a bound method's is a callable one). */
struct sampling_method_data {
    VALUE recv, klass, iclass, owner;
    const rb_method_entry_t *me;
};

static uintptr_t
method_entry_of(VALUE method)
{
    if (!method || !RB_TYPE_P(method, T_DATA) || !RTYPEDDATA_P(method)) return 0;
    const struct sampling_method_data *m = RTYPEDDATA_GET_DATA(method);
    const rb_method_entry_t *me = m ? m->me : NULL;
    if (!me || me->owner != rb_cString || !me->def || me->def->type != VM_METHOD_TYPE_CFUNC) return 0;
    return (uintptr_t)me;
}

static const struct rb_call_data *
call_data_at(const rb_iseq_t *iseq, const VALUE *operand)
{
    const struct rb_iseq_constant_body *body = ISEQ_BODY(iseq);
    const struct rb_call_data *cd = (const struct rb_call_data *)*operand;
    if (cd < body->call_data || cd >= body->call_data + body->ci_size) return NULL;
    return cd;
}

/* The method entry of the C method YJIT runs frameless at cfp, or 0;
 * cached: only if the site's inline cache holds that method. */
static NOINLINE(uintptr_t jit_frameless_cfunc(const rb_control_frame_t *cfp, bool cached));

static uintptr_t
jit_frameless_cfunc(const rb_control_frame_t *cfp, bool cached)
{
    const rb_iseq_t *iseq = SAMPLING_CFP_ISEQ(cfp);
    const VALUE *pc = SAMPLING_CFP_PC(cfp);
    if (!iseq || !pc || !imemo_kind_p((VALUE)iseq, imemo_iseq)) return 0;
    const VALUE *start = ISEQ_BODY(iseq)->iseq_encoded;
    if (pc - start < 2 || pc - start > (ptrdiff_t)ISEQ_BODY(iseq)->iseq_size) return 0;
    const struct rb_call_data *cd = call_data_at(iseq, pc - 1);
    if (!cd) cd = call_data_at(iseq, pc - 2);
    if (!cd || !cd->ci) return 0;
    if (vm_ci_flag(cd->ci) & (VM_CALL_ARGS_SPLAT | VM_CALL_KW_SPLAT | VM_CALL_KWARG | VM_CALL_ARGS_BLOCKARG | VM_CALL_OPT_SEND)) {
        return 0;
    }
    ID mid = vm_ci_mid(cd->ci);
    for (int i = 0; i < JIT_FRAMELESS_METHODS; i++) {
        if (mid != jit_frameless_ids[i] || !mid) continue;
        uintptr_t me = method_entry_of(jit_frameless_methods[i]);
        if (cached && (!cd->cc || !vm_cc_cme(cd->cc) || vm_cc_cme(cd->cc)->def != ((const rb_method_entry_t *)me)->def)) return 0;
        return me;
    }
    return 0;
}

/* Whether YJIT may be running a method frameless at all: the one load
 * the capture pays without YJIT. */
static inline bool
jit_enabled(void)
{
#if USE_YJIT
    return rb_yjit_enabled_p;
#else
    return false;
#endif
}

const void *
sampling_frames_ec(void)
{
    return current_ec();
}

struct capture {
    const rb_control_frame_t *cfp, *end_cfp;
    struct sampling_frame *out, *limit;
    uint64_t hash;          /* sampling_hash_pc of the frames so far */
    bool truncated;
};

/* Captures cfp into *out; true when it is a rescue/ensure frame. */
static inline bool
capture_frame(const rb_control_frame_t *cfp, struct sampling_frame *out)
{
    VALUE v = cfp->ep[VM_ENV_DATA_INDEX_ME_CREF];
    out->iseq = (uintptr_t)SAMPLING_CFP_ISEQ(cfp);
    out->pc = (uintptr_t)SAMPLING_CFP_PC(cfp);
    if (RB_LIKELY(imemo_kind_p(v, imemo_ment))) {
        /* a method or C method: never a rescue frame */
        SAMPLING_ASSERT(!rescue_frame_p(cfp));
        out->cme = v;
        return false;
    }
    out->cme = frame_method_entry_slow(cfp->ep, v);
    return rescue_frame_p(cfp);
}

/* The walk with every rule of rb_ec_partial_backtrace_object, from c->cfp
 * on, the frame before it having been a rescue/ensure frame when
 * skip_next: the frame after one is not shown (it repeats its label). */
static void
capture_rest(struct capture *c, bool skip_next)
{
    for (; c->cfp != c->end_cfp; c->cfp = RUBY_VM_PREVIOUS_CONTROL_FRAME(c->cfp)) {
        if (SAMPLING_CFP_ISEQ(c->cfp)) {
            if (!SAMPLING_CFP_PC(c->cfp)) continue;
            bool skip = skip_next;
            skip_next = rescue_frame_p(c->cfp);
            if (skip) continue;
        }
        if (c->out == c->limit) {
            c->truncated = true;
            return;
        }
        capture_frame(c->cfp, c->out);
        c->hash = sampling_hash_pc(c->hash, c->out++->pc);
    }
}

/* Whether cfp is pred's frame p, for the common frame: the same pc, and
 * a slot that holds p's method entry, non-zero (so not a rescue frame:
 * see match_step).  p may be pred's end mark (its pc is no frame's).
 * (Taking a block in a method here too, its method's entry one
 * environment out, ran the pairs loop out of registers: every deep stack
 * paid more than block frames saved; benchmark/results/optimisations.md,
 * "Tried and left out".) */
static inline bool
plain_match(const rb_control_frame_t *cfp, const struct sampling_frame_node *p)
{
    if (p->frame.pc != (uintptr_t)SAMPLING_CFP_PC(cfp)) return false;
    VALUE v = cfp->ep[VM_ENV_DATA_INDEX_ME_CREF];
    return v == p->frame.cme && v;
}

enum match { MATCH_FRAME, MATCH_HIDDEN, MATCH_STOP };

/* Whether cfp is pred's frame p, by every rule: a frame not shown is
 * passed over, a frame whose slot holds no method entry is resolved as
 * the capture does, and a rescue/ensure frame stops the comparison (the
 * capture applies its rules there).
 *
 * The pc is compared first, before asking whether the frame is shown: a
 * frame not shown (dummy, IFUNC) has pc 0, as pred's C frames do, but
 * its slot holds 0 or a block method's entry, never a C method's, so it
 * matches no C frame of pred on the method entry either, and is told
 * apart on the slower path. */
static inline enum match
match_step(const rb_control_frame_t *cfp, const struct sampling_frame_node *node)
{
    const struct sampling_frame *p = &node->frame;
    const VALUE *pc = SAMPLING_CFP_PC(cfp);
    if (RB_UNLIKELY(p->pc != (uintptr_t)pc)) {
        /* another frame, pred's end mark, or a frame not shown */
        return !pc && SAMPLING_CFP_ISEQ(cfp) ? MATCH_HIDDEN : MATCH_STOP;
    }
    const VALUE *ep = cfp->ep;
    VALUE v = ep[VM_ENV_DATA_INDEX_ME_CREF];
    /* pred's method entry is one (or 0) and alive (a site whose
     * reference died is not a recent one): a slot equal to it and
     * non-zero holds that method entry, so the frame is no rescue
     * frame */
    if (RB_UNLIKELY(v != p->cme || !v)) {
        if (!pc && SAMPLING_CFP_ISEQ(cfp)) return MATCH_HIDDEN;
        if (!imemo_kind_p(v, imemo_ment)) {
            if (rescue_frame_p(cfp)) return MATCH_STOP;
            v = frame_method_entry_inline(ep, v);
        }
        if (v != p->cme) return MATCH_STOP;
    }
    /* Equal pcs are equal iseqs: a pc lies inside its iseq's code,
     * pred's iseq is alive, and a C frame (pc 0) has none. */
    SAMPLING_ASSERT(p->iseq == (uintptr_t)SAMPLING_CFP_ISEQ(cfp));
    return MATCH_FRAME;
}

/* The walk while the stack is pred (a stored site's path, to the end
 * mark: sites.h), from cfp to end.  Returns where the stack departs from pred
 * (the first frame not matched, or end: all of it matched), with
 * *matched the frames of pred it matched.  Each frame takes one step of
 * every rule (match_step); with `pairs`, common frames go two a round
 * first (plain_match: two loads, two compares and a test each), which
 * pays on a deep stack and costs a second look at each other frame, so
 * the capture asks for it on deep stacks only (benchmark/results has
 * the cost of a frame). */
static inline __attribute__((always_inline)) const rb_control_frame_t *
match_pred(const rb_control_frame_t *cfp, const rb_control_frame_t *end, const struct sampling_frame_node *pred,
           uint32_t *matched, bool pairs)
{
    const struct sampling_frame_node *p = pred;
    const rb_control_frame_t *last = end - 1;   /* (frames go up toward end) */
    while (cfp != end) {
        /* (p matched: not the end mark, so its caller is a node) */
        while (pairs && cfp < last && plain_match(cfp, p)) {
            const struct sampling_frame_node *q = p->caller;
            if (!plain_match(cfp + 1, q)) {
                /* the first was: the second takes the step below */
                cfp = RUBY_VM_PREVIOUS_CONTROL_FRAME(cfp);
                p = q;
                break;
            }
            cfp += 2;
            p = q->caller;
        }
        if (pairs && cfp == end) break;
        enum match m = match_step(cfp, p);
        if (m == MATCH_STOP) break;
        if (m == MATCH_FRAME) p = p->caller;
        cfp = RUBY_VM_PREVIOUS_CONTROL_FRAME(cfp);
    }
    *matched = (uint32_t)(pred->depth - p->depth);
    return cfp;
}

/* Control frames from which the compare goes two frames a round. */
#define MATCH_PAIRS_MIN 24

struct sampling_capture
sampling_frames_capture(struct sampling_frame *buf, uint32_t depth, struct sampling_site *const *recent,
                        const void **ec_out, unsigned type)
{
    rb_execution_context_t *ec = current_ec();
    *ec_out = ec;
    /* No thread object yet: the VM is booting.  (cfp is NULL whenever
     * vm_stack is: rb_ec_clear_vm_stack clears it first, as a thread or
     * fiber ends.) */
    if (!ec || !ec->cfp) {
        return (struct sampling_capture){ sampling_hash_end(SAMPLING_HASH_START, 0, false), 0, false,
                                          ec ? SAMPLING_ORIGIN_NO_FRAME : SAMPLING_ORIGIN_BOOT, 0, NULL };
    }

    /* the two dummy top frames are not shown */
    const rb_control_frame_t *cfp = ec->cfp;
    const rb_control_frame_t *end_cfp = RUBY_VM_NEXT_CONTROL_FRAME(RUBY_VM_END_CONTROL_FRAME(ec));
    struct sampling_frame *out = buf;
    uint64_t h = SAMPLING_HASH_START;

    /* A method YJIT runs without its frame: its frame first, as the
     * interpreter's would be, and no recent site compared (the stack's
     * control frames are not its frames). */
    uintptr_t jit_cme = RB_UNLIKELY(jit_enabled()) && (type == T_STRING || type == T_NONE) && depth
                            ? jit_frameless_cfunc(cfp, type == T_NONE) : 0;
    if (jit_cme) {
        *out++ = (struct sampling_frame){ .iseq = 0, .pc = 0, .cme = jit_cme };
        h = sampling_hash_pc(h, 0);
        depth--;
    }

    /* The common walk (a few loads a frame, the hash mixed in), until
     * the first rescue/ensure frame, or the first `depth` control frames
     * (each gives at most one frame, so no depth check); from there on,
     * every rule.  Its body is capture_frame written out: a call here
     * adds a register copy and a jump to every frame (the cost per frame
     * is measured in benchmark/results). */
    uint32_t cfps = (uint32_t)(end_cfp - cfp);
    const rb_control_frame_t *fast_end = cfps > depth ? cfp + depth : end_cfp;
    bool skip_next = false;
    /* A recent site whose stack this is, compared whole (one cut at depth
     * is not: its last frames follow other rules), if it was found for as
     * many control frames (a stack of another depth is not worth
     * comparing).  Ways are asked in turn while none has matched half of
     * the control frames: sites that part after their first frames (one
     * method allocating on several lines, or one C method called from
     * several) sit side by side, and asking the next costs little; past
     * half, the rest costs less to capture than another way to compare.
     * With no whole match, the way that went furthest gives its frames
     * so far. */
    const struct sampling_site *best = NULL;
    const rb_control_frame_t *best_at = cfp;
    uint32_t best_matched = 0;
    for (int i = 0; i < SAMPLING_RECENT_WAYS && !jit_cme; i++) {
        const struct sampling_site *pred = recent[i];
        if (!pred || pred->cfps != cfps || pred->truncated || !pred->nframes) continue;
        uint32_t matched;
        const rb_control_frame_t *at = cfps >= MATCH_PAIRS_MIN ? match_pred(cfp, fast_end, pred->frames, &matched, true)
                                                               : match_pred(cfp, fast_end, pred->frames, &matched, false);
        if (at == end_cfp && matched == pred->nframes) {
            return (struct sampling_capture){ pred->hash, matched, false, SAMPLING_ORIGIN_FRAMES, cfps, pred };
        }
        if (matched > best_matched) {
            best = pred;
            best_at = at;
            best_matched = matched;
            if (2 * (uint32_t)(at - cfp) >= cfps) break;
        }
    }
    if (best) {
        const struct sampling_frame_node *p = best->frames;
        for (uint32_t j = 0; j < best_matched; j++, p = p->caller) {
            *out = p->frame;
            h = sampling_hash_pc(h, out++->pc);
        }
        cfp = best_at;
    }
    for (; cfp != fast_end; cfp = RUBY_VM_PREVIOUS_CONTROL_FRAME(cfp)) {
        const VALUE *pc = SAMPLING_CFP_PC(cfp);
        const rb_iseq_t *iseq = SAMPLING_CFP_ISEQ(cfp);
        if (RB_UNLIKELY(!pc) && iseq) continue;  /* dummy and IFUNC frames: not shown */
        h = sampling_hash_pc(h, (uintptr_t)pc);
        VALUE v = cfp->ep[VM_ENV_DATA_INDEX_ME_CREF];
        out->pc = (uintptr_t)pc;
        out->iseq = (uintptr_t)iseq;
        if (RB_UNLIKELY(!imemo_kind_p(v, imemo_ment))) {
            /* not a method or C method: a block, the top level, a class
             * body, a rescue clause... */
            v = frame_method_entry_slow(cfp->ep, v);
            if (RB_UNLIKELY(rescue_frame_p(cfp))) {
                out++->cme = v;
                skip_next = true;
                cfp = RUBY_VM_PREVIOUS_CONTROL_FRAME(cfp);
                break;
            }
        }
        out++->cme = v;
    }
    struct capture c = { cfp, end_cfp, out, buf + depth + (jit_cme != 0), h, false };
    if (cfp != end_cfp) capture_rest(&c, skip_next);

    uint32_t n = (uint32_t)(c.out - buf);
    /* Cut after C frames: keep the Ruby frame that called them, for their
     * file and line. */
    if (c.truncated && (!buf[n - 1].iseq || iseq_as_cfunc_p((const rb_iseq_t *)buf[n - 1].iseq))) {
        for (; c.cfp != c.end_cfp; c.cfp = RUBY_VM_PREVIOUS_CONTROL_FRAME(c.cfp)) {
            if (SAMPLING_CFP_ISEQ(c.cfp) && SAMPLING_CFP_PC(c.cfp) && !iseq_as_cfunc_p(SAMPLING_CFP_ISEQ(c.cfp))) {
                buf[n].iseq = (uintptr_t)SAMPLING_CFP_ISEQ(c.cfp);
                buf[n].pc = (uintptr_t)SAMPLING_CFP_PC(c.cfp) | SAMPLING_FRAME_LOCATION_ONLY;
                buf[n].cme = 0;
                c.hash = sampling_hash_pc(c.hash, buf[n].pc);
                n++;
                break;
            }
        }
    }
    return (struct sampling_capture){ sampling_hash_end(c.hash, n, c.truncated), n, c.truncated,
                                      n ? SAMPLING_ORIGIN_FRAMES : SAMPLING_ORIGIN_NO_FRAME, cfps, NULL };
}

static uint32_t
pc_offset(const rb_iseq_t *iseq, uintptr_t pc)
{
    const VALUE *start = ISEQ_BODY(iseq)->iseq_encoded;
    ptrdiff_t offset = (const VALUE *)(pc & ~SAMPLING_FRAME_LOCATION_ONLY) - start;
    if (offset < 0 || (size_t)offset > ISEQ_BODY(iseq)->iseq_size) return 0;
    return (uint32_t)offset;
}

uint32_t
sampling_frames_resolve(const struct sampling_frame *frames, uint32_t n, struct sampling_location *out)
{
    uint32_t m = 0, pending_cfuncs = 0;

    for (uint32_t i = 0; i < n; i++) {
        const struct sampling_frame *f = &frames[i];
        const rb_iseq_t *iseq = (const rb_iseq_t *)f->iseq;
        if (iseq && !iseq_as_cfunc_p(iseq)) {
            /* a Ruby frame: C frames before it report its file and line */
            uint32_t pc = pc_offset(iseq, f->pc);
            for (uint32_t j = m - pending_cfuncs; j < m; j++) {
                out[j].iseq = (uintptr_t)iseq;
                out[j].pc = pc;
            }
            pending_cfuncs = 0;
            if (f->pc & SAMPLING_FRAME_LOCATION_ONLY) break;
            out[m++] = (struct sampling_location){ (uintptr_t)iseq, f->cme, pc, false };
        }
        else if (SAMPLING_ONE_INTERNAL_FRAME && iseq) {
            /* (4.0) an internal frame: it replaces the C and internal
             * frames above it since the last Ruby frame, and keeps its own
             * place until a Ruby frame below gives one (vm_backtrace.c) */
            m -= pending_cfuncs;
            out[m++] = (struct sampling_location){ (uintptr_t)iseq, f->cme, pc_offset(iseq, f->pc), f->cme != 0 };
            pending_cfuncs = 1;
        }
        else {
            /* a C method, or a Ruby method that reports like one */
            out[m++] = (struct sampling_location){ 0, f->cme, 0, true };
            pending_cfuncs++;
        }
    }
    return m;
}

/* ---- names: a site as text, without allocating a Ruby object ---- */

static int sampling_location_lineno(const struct sampling_location *loc);

/* A growable text buffer in malloc'd memory; `failed` once memory ran out
 * (then everything after is dropped and the caller gives up). */
struct text {
    char *buf;
    size_t len, cap;
    bool failed;
};

static void
text_add(struct text *t, const char *s, size_t n)
{
    if (t->failed) return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (t->len + n + 1 > cap) cap *= 2;
        char *buf = realloc(t->buf, cap);
        if (!buf) {
            t->failed = true;
            return;
        }
        t->buf = buf;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

static void text_cstr(struct text *t, const char *s) { text_add(t, s, strlen(s)); }

static void
text_str(struct text *t, VALUE str)
{
    if (RB_TYPE_P(str, T_STRING)) text_add(t, RSTRING_PTR(str), (size_t)RSTRING_LEN(str));
}

/* The name of a class for a label, or Qnil when it has no permanent one
 * (anonymous, named under an anonymous module, or set_temporary_name), as
 * rb_mod_name0 decides (variable.c: classname).  Reads, never allocates. */
static VALUE
permanent_name(VALUE mod)
{
    VALUE classpath = SAMPLING_CLASSPATH(mod);
    if (!classpath || !SAMPLING_PERMANENT_CLASSPATH_P(mod)) return Qnil;
    return classpath;
}

/* ":0x000055d5c3a1b2c8>": the end of rb_any_to_s, whose %p prints all
 * 16 digits. */
static void
put_address(sampling_text_put *put, void *ctx, VALUE obj)
{
    char buf[32];
    int n = snprintf(buf, sizeof(buf), ":0x%016" PRIxPTR ">", (uintptr_t)obj);
    put(ctx, buf, (size_t)n, 0);
}

void
sampling_class_name(VALUE klass, sampling_text_put *put, void *ctx)
{
    VALUE classpath = SAMPLING_CLASSPATH(klass);
    if (classpath && RB_TYPE_P(classpath, T_STRING)) {
        put(ctx, RSTRING_PTR(classpath), (size_t)RSTRING_LEN(classpath), classpath);
        return;
    }
    if (FL_TEST(klass, FL_SINGLETON)) {
        /* rb_mod_to_s: a class's singleton by the class's name, any other
         * object's by rb_any_to_s of it */
        VALUE attached = rb_class_attached_object(klass);
        put(ctx, "#<Class:", 8, 0);
        if (RB_TYPE_P(attached, T_CLASS) || RB_TYPE_P(attached, T_MODULE)) {
            sampling_class_name(attached, put, ctx);
        }
        else {
            put(ctx, "#<", 2, 0);
            sampling_class_name(rb_obj_class(attached), put, ctx);
            put_address(put, ctx, attached);
        }
        put(ctx, ">", 1, 0);
        return;
    }
    if (RB_TYPE_P(klass, T_MODULE)) put(ctx, "#<Module", 8, 0);
    else put(ctx, "#<Class", 7, 0);
    put_address(put, ctx, klass);
}

static void
text_put(void *t, const char *s, size_t n, VALUE from)
{
    text_add(t, s, n);
}

/* As rb_gen_method_name (vm_backtrace.c, not exported). */
static void
text_method_label(struct text *t, VALUE owner, VALUE name)
{
    if (RB_TYPE_P(owner, T_CLASS) || RB_TYPE_P(owner, T_MODULE)) {
        if (FL_TEST(owner, FL_SINGLETON)) {
            VALUE v = rb_class_attached_object(owner);
            if (RB_TYPE_P(v, T_CLASS) || RB_TYPE_P(v, T_MODULE)) {
                VALUE vname = permanent_name(v);
                if (!NIL_P(vname)) {
                    text_str(t, vname);
                    text_cstr(t, ".");
                    text_str(t, name);
                    return;
                }
            }
        }
        else {
            VALUE oname = permanent_name(owner);
            if (!NIL_P(oname)) {
                text_str(t, oname);
                text_cstr(t, "#");
                text_str(t, name);
                return;
            }
        }
    }
    text_str(t, name);
}

/* As calculate_iseq_label (vm_backtrace.c). */
static void
text_iseq_label(struct text *t, VALUE owner, const rb_iseq_t *iseq)
{
    for (;;) {
        switch (ISEQ_BODY(iseq)->type) {
          case ISEQ_TYPE_TOP:
          case ISEQ_TYPE_CLASS:
          case ISEQ_TYPE_MAIN:
            text_str(t, ISEQ_BODY(iseq)->location.label);
            return;
          case ISEQ_TYPE_METHOD:
            text_method_label(t, owner, ISEQ_BODY(iseq)->location.label);
            return;
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
            if (iseq == orig) {     /* (no method around it: its own label) */
                text_str(t, ISEQ_BODY(iseq)->location.label);
                return;
            }
            if (level <= 1) {
                text_cstr(t, "block in ");
            }
            else {
                char buf[48];
                snprintf(buf, sizeof(buf), "block (%d levels) in ", level);
                text_cstr(t, buf);
            }
            continue;   /* then the label of the method (or top level) it is in */
          }
          case ISEQ_TYPE_RESCUE:
          case ISEQ_TYPE_ENSURE:
          case ISEQ_TYPE_EVAL:
            iseq = ISEQ_BODY(iseq)->parent_iseq;
            continue;
          default:
            text_cstr(t, "<unknown>");
            return;
        }
    }
}

static void
text_label(struct text *t, const struct sampling_location *loc)
{
    const rb_callable_method_entry_t *cme = (const rb_callable_method_entry_t *)loc->cme;
    if (loc->cfunc) {
        if (!cme) text_cstr(t, "<cfunc>");
        else text_method_label(t, cme->owner, rb_id2str(cme->def->original_id));
        return;
    }
    text_iseq_label(t, cme ? cme->owner : Qnil, (const rb_iseq_t *)loc->iseq);
}

/* Where each string of a name lies in the text, until the text stops
 * moving (offsets; SIZE_MAX: none). */
struct name_at {
    size_t path, label, pathlen, labellen;
    int lineno;
};

static void
name_synthetic(struct text *t, struct name_at *at, const char *label)
{
    at->path = t->len;
    text_cstr(t, label);
    at->pathlen = t->len - at->path;
    at->label = at->path;
    at->labellen = at->pathlen;
    at->lineno = 0;
}

struct sampling_names *
sampling_names_of(const struct sampling_frame *frames, uint32_t nframes, uint8_t origin, uintptr_t klass)
{
    struct text t = { 0 };
    uint32_t n = nframes ? nframes : 1;
    struct sampling_location *locs = malloc(n * sizeof(*locs));
    struct name_at *at = malloc(n * sizeof(*at));
    struct sampling_names *names = NULL;
    if (!locs || !at) goto done;

    size_t klass_at = SIZE_MAX;
    if (klass) {
        klass_at = t.len;
        sampling_class_name((VALUE)klass, text_put, &t);
        text_add(&t, "", 0);
        t.len++;    /* keep the NUL: the class name is a C string */
    }
    uint32_t m = 0;
    if (nframes) {
        m = sampling_frames_resolve(frames, nframes, locs);
        for (uint32_t i = 0; i < m; i++) {
            if (locs[i].iseq) {
                at[i].path = t.len;
                text_str(&t, rb_iseq_path((const rb_iseq_t *)locs[i].iseq));
                at[i].pathlen = t.len - at[i].path;
            }
            else {
                at[i].path = SIZE_MAX;
                at[i].pathlen = 0;
            }
            at[i].lineno = sampling_location_lineno(&locs[i]);
            at[i].label = t.len;
            text_label(&t, &locs[i]);
            at[i].labellen = t.len - at[i].label;
        }
    }
    else {
        m = 1;
        name_synthetic(&t, &at[0], origin == SAMPLING_ORIGIN_BOOT ? "<boot>"
                                   : origin == SAMPLING_ORIGIN_NO_GVL ? "<no GVL>"
                                   : origin == SAMPLING_ORIGIN_GC ? "<GC>" : "<no Ruby frame>");
    }
    text_add(&t, "", 0);
    if (t.failed) goto done;

    size_t head = sizeof(*names) + m * sizeof(names->locs[0]);
    names = malloc(head + t.len + 1);
    if (!names) goto done;
    char *text = (char *)names + head;
    memcpy(text, t.buf ? t.buf : "", t.len + 1);
    names->klass = klass_at == SIZE_MAX ? NULL : text + klass_at;
    names->n = m;
    for (uint32_t i = 0; i < m; i++) {
        struct sampling_name *nm = &names->locs[i];
        nm->path = at[i].path == SIZE_MAX ? NULL : text + at[i].path;
        nm->pathlen = (uint32_t)at[i].pathlen;
        nm->label = text + at[i].label;
        nm->labellen = (uint32_t)at[i].labellen;
        nm->lineno = at[i].lineno;
    }
  done:
    free(t.buf);
    free(locs);
    free(at);
    return names;
}

struct sampling_names *
sampling_site_names(const struct sampling_site *site)
{
    if (site->names) return sampling_named_names(site->names);
    struct sampling_frame *frames = malloc((site->nframes ? site->nframes : 1) * sizeof(*frames));
    if (!frames) return NULL;
    sampling_site_frames(site, frames);
    struct sampling_names *names = sampling_names_of(frames, site->nframes, site->kind.origin, site->klass);
    free(frames);
    return names;
}

static int
sampling_location_lineno(const struct sampling_location *loc)
{
    if (!loc->iseq) return 0;
    const rb_iseq_t *iseq = (const rb_iseq_t *)loc->iseq;
    /* pc points after the instruction being executed (calc_pos in vm_backtrace.c) */
    size_t pos = loc->pc ? loc->pc - 1 : 0;
    return (int)rb_iseq_line_no(iseq, pos);
}
