/*
 * labels_api.c: ObjectSpace::AllocationSampler.with_labels, the label set
 * of the running fiber (read on the sampling path), and label sets as
 * Ruby Hashes for readers.  labels.h has the model.
 *
 * The current set's id lives in the Fiber storage under a static Symbol
 * key, as a Fixnum: Fiber[] is fiber-local and copied into every fiber
 * and thread started from the fiber (cont.c: inherit_fiber_storage), so
 * labels follow the work into fibers and threads, and a fiber-based
 * server's requests never see one another's.  with_labels sets it for
 * its block and restores the outer value on the way out (ensure), so
 * nesting works as Go's pprof.Do: inner keys override outer ones.
 *
 * The sampling path reads the storage Hash in place (storage_lookup):
 * its keys are Symbols (Fiber[]= checks) and ours is a static Symbol,
 * an immediate, so a pair holds it iff the pair's key is that word.  A
 * Hash of up to 8 pairs (CRuby's ar_table, embedded in the slot: the
 * usual Fiber storage) is a scan of at most 8 words, calling nothing,
 * the same in the fiber that called with_labels and in one that
 * inherited its labels; a bigger one (an st_table) is scanned the same
 * way up to 32 entries, and looked up past that.
 */
#include "ruby/internal/config.h"
#include "vm_core.h"
#include "internal/hash.h"

#include "api.h"
#include "labels.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

bool sampling_labels_on;
static struct sampling_labels labels;
static pthread_mutex_t labels_lock = PTHREAD_MUTEX_INITIALIZER;  /* writers of `labels` (several Ractors) */
static VALUE storage_key;   /* a static Symbol: an immediate, never moved */
static VALUE cFiber;

/* st.c's entry, which ruby/st.h leaves opaque (the same layout since
 * Ruby 2.4's open-addressing tables, in 3.4 and 4.0 alike); a deleted
 * entry keeps its key and has this hash. */
struct storage_st_entry {
    st_data_t hash;     /* st_hash_t, st.c's own typedef of st_data_t */
    st_data_t key;
    st_data_t record;
};
#define STORAGE_ST_DELETED (~(st_data_t)0)
/* A larger table is looked up: a scan of up to 32 entries costs about
 * what a lookup does (benchmark/results/labels.md). */
#define STORAGE_SCAN_MAX 32

/* The value of our key in a Fiber storage Hash, Qnil if none (see the
 * top).  Newest entries first: with_labels sets the key after what the
 * fiber inherited, so it is usually the last.  Reads the Hash, never changes it; calls nothing unless the
 * Hash has more than STORAGE_SCAN_MAX entries. */
static VALUE
storage_lookup(VALUE storage)
{
    if (!RB_TYPE_P(storage, T_HASH)) return Qnil;
    if (RHASH_AR_TABLE_P(storage)) {
        const ar_table *t = RHASH_AR_TABLE(storage);
        unsigned int bound = (unsigned int)((RBASIC(storage)->flags & RHASH_AR_TABLE_BOUND_MASK) >>
                                            RHASH_AR_TABLE_BOUND_SHIFT);
        if (bound > RHASH_AR_TABLE_MAX_SIZE) bound = RHASH_AR_TABLE_MAX_SIZE;
        for (unsigned int i = bound; i-- > 0;) {
            if (t->pairs[i].key == storage_key) return t->pairs[i].val;
        }
        return Qnil;
    }
    const st_table *st = RHASH_ST_TABLE(storage);
    if (st->entries_bound - st->entries_start <= STORAGE_SCAN_MAX) {
        const struct storage_st_entry *e = (const struct storage_st_entry *)st->entries;
        for (st_index_t i = st->entries_bound; i-- > st->entries_start;) {
            if (e[i].key == storage_key && e[i].hash != STORAGE_ST_DELETED) return (VALUE)e[i].record;
        }
        return Qnil;
    }
    return rb_hash_lookup2(storage, storage_key, Qnil);
}

uint32_t
sampling_labels_read(const void *ec_)
{
    const rb_execution_context_t *ec = ec_;
    VALUE id = storage_lookup(ec->storage);
    return FIXNUM_P(id) ? (uint32_t)FIX2ULONG(id) : 0;
}

/* ---- building a set ---- */

struct pair {
    const char *key, *value;
    uint32_t klen, vlen;
};

struct merge {
    struct pair pairs[2 * SAMPLING_LABELS_PAIRS];
    uint32_t n;
};

static VALUE
label_string(VALUE v, const char *what, VALUE key)
{
    if (RB_SYMBOL_P(v)) v = rb_sym2str(v);
    if (!RB_TYPE_P(v, T_STRING)) {
        rb_raise(rb_eArgError, "labels: %s%s%"PRIsVALUE" must be a String or Symbol (got %"PRIsVALUE")", what,
                 NIL_P(key) ? "" : " of ", NIL_P(key) ? rb_str_new_cstr("") : rb_inspect(key), rb_inspect(v));
    }
    if (memchr(RSTRING_PTR(v), 0, (size_t)RSTRING_LEN(v))) {
        rb_raise(rb_eArgError, "labels: %s %"PRIsVALUE" must not contain a NUL byte", what, rb_inspect(v));
    }
    return v;
}

static void
merge_add(struct merge *m, const char *key, uint32_t klen, const char *value, uint32_t vlen)
{
    for (uint32_t i = 0; i < m->n; i++) {
        if (m->pairs[i].klen == klen && memcmp(m->pairs[i].key, key, klen) == 0) {
            m->pairs[i].value = value;      /* the inner with_labels wins */
            m->pairs[i].vlen = vlen;
            return;
        }
    }
    if (m->n >= SAMPLING_LABELS_PAIRS) {
        rb_raise(rb_eArgError, "labels: at most %d labels in effect at once", SAMPLING_LABELS_PAIRS);
    }
    m->pairs[m->n++] = (struct pair){ key, value, klen, vlen };
}

struct merge_arg {
    struct merge *m;
    VALUE keep;     /* the Strings the pairs point into */
};

static int
merge_i(VALUE key, VALUE value, VALUE arg)
{
    struct merge_arg *a = (struct merge_arg *)arg;
    VALUE k = label_string(key, "key", Qnil);
    if (RSTRING_LEN(k) == 0) rb_raise(rb_eArgError, "labels: a key must not be empty");
    VALUE v = label_string(value, "value", key);
    rb_ary_push(a->keep, k);
    rb_ary_push(a->keep, v);
    merge_add(a->m, RSTRING_PTR(k), (uint32_t)RSTRING_LEN(k), RSTRING_PTR(v), (uint32_t)RSTRING_LEN(v));
    return ST_CONTINUE;
}

static int
pair_cmp(const void *a, const void *b)
{
    const struct pair *x = a, *y = b;
    int c = memcmp(x->key, y->key, x->klen < y->klen ? x->klen : y->klen);
    return c ? c : (x->klen > y->klen) - (x->klen < y->klen);
}

/* The id of the set `outer` with opts merged in; outer when the set
 * cannot be interned (counted in stats[:label_sets_dropped]). */
static uint32_t
labels_merge(uint32_t outer, VALUE opts)
{
    struct merge m;
    m.n = 0;
    const struct sampling_label_set *s = sampling_labels_get(&labels, outer);
    if (s) {
        const char *p = s->text;
        for (uint32_t i = 0; i < s->npairs; i++) {
            const char *v = p + strlen(p) + 1;
            merge_add(&m, p, (uint32_t)strlen(p), v, (uint32_t)strlen(v));
            p = v + strlen(v) + 1;
        }
    }
    struct merge_arg arg = { &m, rb_ary_new() };
    if (!NIL_P(opts)) rb_hash_foreach(opts, merge_i, (VALUE)&arg);
    if (m.n == 0) return 0;
    qsort(m.pairs, m.n, sizeof(m.pairs[0]), pair_cmp);
    char text[SAMPLING_LABELS_TEXT];
    uint32_t len = 0;
    for (uint32_t i = 0; i < m.n; i++) {
        if (len + m.pairs[i].klen + m.pairs[i].vlen + 2 > sizeof(text)) {
            rb_raise(rb_eArgError, "labels: keys and values must total at most %d bytes", SAMPLING_LABELS_TEXT - 2 * m.n);
        }
        memcpy(text + len, m.pairs[i].key, m.pairs[i].klen);
        len += m.pairs[i].klen;
        text[len++] = '\0';
        memcpy(text + len, m.pairs[i].value, m.pairs[i].vlen);
        len += m.pairs[i].vlen;
        text[len++] = '\0';
    }
    RB_GC_GUARD(arg.keep);
    pthread_mutex_lock(&labels_lock);
    uint32_t id = sampling_labels_intern(&labels, text, len, m.n);
    pthread_mutex_unlock(&labels_lock);
    return id ? id : outer;
}

/* ---- with_labels ---- */

/* (Fiber is defined after the collector: looked up on first use) */
static VALUE
fiber_class(void)
{
    if (!cFiber) {
        cFiber = rb_const_get(rb_cObject, rb_intern("Fiber"));
        rb_gc_register_mark_object(cFiber);
    }
    return cFiber;
}

static VALUE
fiber_storage_set(VALUE value)
{
    return rb_funcall(fiber_class(), rb_intern("[]="), 2, storage_key, value);
}

static VALUE
labels_restore(VALUE outer)
{
    fiber_storage_set(outer);
    return Qnil;
}

static VALUE
with_labels_yield(VALUE unused)
{
    return rb_yield(Qundef);
}

/* with_labels(**labels) { ... } => the block's value */
static VALUE
with_labels_m(int argc, VALUE *argv, VALUE self)
{
    VALUE opts = Qnil;
    rb_scan_args(argc, argv, "0:", &opts);
    if (!rb_block_given_p()) rb_raise(rb_eArgError, "with_labels: a block is required");
    VALUE outer = rb_funcall(fiber_class(), rb_intern("[]"), 1, storage_key);
    if (!FIXNUM_P(outer)) outer = Qnil;
    uint32_t id = labels_merge(FIXNUM_P(outer) ? (uint32_t)FIX2ULONG(outer) : 0, opts);
    if (!id) return rb_yield(Qundef);
    sampling_labels_on = true;
    fiber_storage_set(UINT2NUM(id));
    return rb_ensure(with_labels_yield, Qnil, labels_restore, outer);
}

/* ---- readers ---- */

VALUE
sampling_labels_hash(uint32_t id)
{
    VALUE h = rb_hash_new();
    const struct sampling_label_set *s = sampling_labels_get(&labels, id);
    if (s) {
        const char *p = s->text;
        for (uint32_t i = 0; i < s->npairs; i++) {
            const char *v = p + strlen(p) + 1;
            rb_hash_aset(h, rb_str_freeze(rb_utf8_str_new_cstr(p)), rb_str_freeze(rb_utf8_str_new_cstr(v)));
            p = v + strlen(v) + 1;
        }
    }
    return rb_hash_freeze(h);
}

const struct sampling_label_set *
sampling_labels_set(uint32_t id)
{
    return sampling_labels_get(&labels, id);
}

void
sampling_labels_stats(uint64_t *count, uint64_t *dropped)
{
    pthread_mutex_lock(&labels_lock);
    *count = labels.count;
    *dropped = labels.dropped;
    pthread_mutex_unlock(&labels_lock);
}

void
sampling_define_labels(VALUE mSampler)
{
    storage_key = ID2SYM(rb_intern("__allocation_sampler_labels"));
    rb_define_singleton_method(mSampler, "with_labels", with_labels_m, -1);
}
