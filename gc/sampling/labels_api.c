/*
 * labels_api.c: ObjectSpace::AllocationSampler.with_labels, and label
 * sets as Ruby Hashes for readers.  labels.h has the model.
 *
 * The current set's id lives in the Fiber storage (labels_fiber.h, the
 * core's side, which owns the process's table and reads the id on the
 * sampling path).  with_labels sets it for its block and restores the
 * outer value on the way out (ensure), so nesting works as Go's
 * pprof.Do: inner keys override outer ones.
 */
#include "ruby/ruby.h"
#include "ruby/encoding.h"

#include "api.h"
#include "labels_api.h"
#include "labels_fiber.h"

#include <stdlib.h>
#include <string.h>

static VALUE cFiber;

/* ---- building a set ---- */

struct pair {
    const char *key, *value;
    uint32_t klen, vlen;
};

struct merge {
    struct pair pairs[2 * SAMPLING_LABELS_PAIRS];
    uint32_t n;
};

/* A label's name in messages: "key :job" (key nil: v is the key as
 * given) or "value of :job". */
static VALUE
label_name(const char *what, VALUE key, VALUE given)
{
    return NIL_P(key) ? rb_sprintf("%s %"PRIsVALUE, what, rb_inspect(given)) : rb_sprintf("%s of %"PRIsVALUE, what, rb_inspect(key));
}

static VALUE
encode_utf8(VALUE v)
{
    return rb_str_encode(v, rb_enc_from_encoding(rb_utf8_encoding()), 0, Qnil);
}

/* v as UTF-8, which every reader (Sample#labels, pprof's string table)
 * takes a label's bytes to be: ASCII as it is; UTF-8 if valid; binary
 * (ASCII-8BIT, as Rack's PATH_INFO) if its bytes are valid UTF-8; any
 * other encoding converted (Latin-1 "caf\xE9" becomes "café").  Else
 * ArgumentError naming the label: bytes that are not text are refused,
 * never stored to come back broken. */
static VALUE
label_utf8(VALUE v, const char *what, VALUE key, VALUE given)
{
    rb_encoding *enc = rb_enc_get(v), *utf8 = rb_utf8_encoding();
    if (enc == utf8 || enc == rb_ascii8bit_encoding()) {
        VALUE u = enc == utf8 ? v : rb_enc_associate(rb_str_dup(v), utf8);
        if (rb_enc_str_coderange(u) != ENC_CODERANGE_BROKEN) return u;
    }
    else if (rb_enc_asciicompat(enc) && rb_enc_str_coderange(v) == ENC_CODERANGE_7BIT) {
        return rb_enc_associate(rb_str_dup(v), utf8);
    }
    else {
        int state = 0;
        VALUE u = rb_protect(encode_utf8, v, &state);
        if (!state) return u;
        rb_set_errinfo(Qnil);
    }
    rb_raise(rb_eArgError, "labels: %"PRIsVALUE" must be text convertible to UTF-8 (got %"PRIsVALUE" in %s)",
             label_name(what, key, given), rb_inspect(v), rb_enc_name(enc));
}

/* Keys the profile writes itself (profile.c, retention_view.c): a label
 * of the same key would mix into them (go tool pprof -tags would count
 * such samples under both). */
static const char *const reserved_keys[] = { SAMPLING_LABELS_RESERVED };

static void
check_key_free(VALUE k, VALUE key)
{
    for (size_t i = 0; i < sizeof(reserved_keys) / sizeof(reserved_keys[0]); i++) {
        if ((size_t)RSTRING_LEN(k) == strlen(reserved_keys[i]) && memcmp(RSTRING_PTR(k), reserved_keys[i], RSTRING_LEN(k)) == 0)
            rb_raise(rb_eArgError, "labels: key %"PRIsVALUE" is reserved: profiles label every sample with its own "
                     SAMPLING_LABELS_RESERVED_TEXT " (use another key, such as job_%s)", rb_inspect(key), reserved_keys[i]);
    }
}

static VALUE
label_string(VALUE v, const char *what, VALUE key)
{
    VALUE given = v;
    if (RB_SYMBOL_P(v)) v = rb_sym2str(v);
    if (!RB_TYPE_P(v, T_STRING)) {
        rb_raise(rb_eArgError, "labels: %s%s%"PRIsVALUE" must be a String or Symbol (got %"PRIsVALUE")", what,
                 NIL_P(key) ? "" : " of ", NIL_P(key) ? rb_str_new_cstr("") : rb_inspect(key), rb_inspect(v));
    }
    v = label_utf8(v, what, key, given);
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
    check_key_free(k, key);
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
    const struct sampling_label_set *s = sampling_labels_set(outer);
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
    uint32_t id = sampling_labels_add(text, len, m.n);
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
    return rb_funcall(fiber_class(), rb_intern("[]="), 2, sampling_labels_key(), value);
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
    VALUE outer = rb_funcall(fiber_class(), rb_intern("[]"), 1, sampling_labels_key());
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
    const struct sampling_label_set *s = sampling_labels_set(id);
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

void
sampling_define_labels(VALUE mSampler)
{
    sampling_labels_init();
    rb_define_singleton_method(mSampler, "with_labels", with_labels_m, -1);
}
