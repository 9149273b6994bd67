/*
 * labels_fiber.c: the process's label sets and the running fiber's set
 * (labels_fiber.h has the model).
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

#include "labels_fiber.h"

#include <pthread.h>

bool sampling_labels_on;
static struct sampling_labels labels;
static pthread_mutex_t labels_lock = PTHREAD_MUTEX_INITIALIZER;  /* writers of `labels` (several Ractors) */
static VALUE storage_key;   /* a static Symbol: an immediate, never moved */

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

void
sampling_labels_init(void)
{
    storage_key = ID2SYM(rb_intern("__allocation_sampler_labels"));
}

VALUE
sampling_labels_key(void)
{
    return storage_key;
}

uint32_t
sampling_labels_add(const char *text, uint32_t len, uint32_t npairs)
{
    pthread_mutex_lock(&labels_lock);
#ifdef SAMPLING_CHECKS
    size_t before = labels.count;
#endif
    uint32_t id = sampling_labels_intern(&labels, text, len, npairs);
#ifdef SAMPLING_CHECKS
    /* with --enable-checks, labels.h's invariants after each new set */
    const char *err = labels.count != before ? sampling_labels_verify(&labels) : NULL;
    if (err) rb_bug("sampling: %s", err);
#endif
    pthread_mutex_unlock(&labels_lock);
    return id;
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

size_t
sampling_labels_bytes(void)
{
    pthread_mutex_lock(&labels_lock);
    size_t bytes = sampling_labels_memsize(&labels);
    pthread_mutex_unlock(&labels_lock);
    return bytes;
}
