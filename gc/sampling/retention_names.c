/* retention_names.c: see retention_names.h.  Reads VM internals (an
 * environment's local table, class names) as frames.c does. */
#include "ruby/internal/config.h"
#include "vm_core.h"
#include "iseq.h"
#include "internal/class.h"
#include "internal/imemo.h"
#include "ruby_version.h"
#include "retention_names.h"
#include "frames.h"

#include <string.h>

int rb_objspace_internal_object_p(VALUE obj);
VALUE rb_ident_hash_new(void);   /* internal/hash.h, exported */

const struct retention_imemo_types retention_imemo = { imemo_constcache, imemo_callcache, imemo_iseq, imemo_ment };

bool
retention_names_jit_take(VALUE iseq, struct retention_jit *saved)
{
    struct rb_iseq_constant_body *body = ISEQ_BODY((rb_iseq_t *)iseq);
    if (!body) return false;
    *saved = (struct retention_jit){ NULL, NULL };
#if USE_YJIT
    saved->yjit = body->yjit_payload;
    body->yjit_payload = NULL;
#endif
#if defined(USE_ZJIT) && USE_ZJIT
    saved->zjit = body->zjit_payload;
    body->zjit_payload = NULL;
#endif
    if (saved->yjit || saved->zjit) return true;
    return false;
}

void
retention_names_jit_put(VALUE iseq, const struct retention_jit *saved)
{
    struct rb_iseq_constant_body *body = ISEQ_BODY((rb_iseq_t *)iseq);
#if USE_YJIT
    body->yjit_payload = saved->yjit;
#endif
#if defined(USE_ZJIT) && USE_ZJIT
    body->zjit_payload = saved->zjit;
#endif
    (void)body;
    (void)saved;
}

/* Appends a piece of a class name; a class path as a String, so that
 * the name takes its encoding as inspect's does. */
static void
str_put(void *str, const char *s, size_t len, VALUE from)
{
    if (from) rb_str_append(*(VALUE *)str, from);
    else rb_str_cat(*(VALUE *)str, s, (long)len);
}

/* As a site's class is named (frames.h): Foo, #<Class:0x...>,
 * #<Class:Foo>; a class path is returned as it is (its encoding too). */
static VALUE
module_name(VALUE mod)
{
    VALUE path = SAMPLING_CLASSPATH(mod);
    if (path) return rb_str_dup(path);
    VALUE str = rb_usascii_str_new(NULL, 0);
    sampling_class_name(mod, str_put, &str);
    return str;
}

static const char *
builtin_class_name(VALUE obj)
{
    switch (BUILTIN_TYPE(obj)) {
      case T_ARRAY: return "Array";
      case T_HASH: return "Hash";
      case T_STRING: return "String";
      case T_OBJECT: return "Object";
      case T_CLASS: return "Class";
      case T_MODULE: return "Module";
      case T_DATA: return "Data";
      case T_STRUCT: return "Struct";
      case T_REGEXP: return "Regexp";
      case T_FLOAT: return "Float";
      case T_BIGNUM: return "Integer";
      case T_SYMBOL: return "Symbol";
      default: return "?";
    }
}

VALUE
retention_names_class(VALUE obj)
{
    if (RB_SPECIAL_CONST_P(obj)) return rb_str_new_cstr("(immediate)");
    int type = BUILTIN_TYPE(obj);
    if (type == T_IMEMO) return rb_sprintf("(imemo %s)", rb_imemo_name(imemo_type(obj)));
    if (type == T_ICLASS) return rb_str_new_cstr("(iclass)");
    if (type == T_CLASS || type == T_MODULE) return module_name(obj);
    if (!RBASIC_CLASS(obj)) return rb_sprintf("(hidden %s)", builtin_class_name(obj));
    if (rb_objspace_internal_object_p(obj)) return rb_sprintf("(internal %s)", builtin_class_name(obj));
    return module_name(rb_obj_class(obj));
}

VALUE
retention_names_key(VALUE key)
{
    if (NIL_P(key)) return rb_str_new_cstr("nil");
    if (key == Qtrue) return rb_str_new_cstr("true");
    if (key == Qfalse) return rb_str_new_cstr("false");
    if (FIXNUM_P(key)) return rb_fix2str(key, 10);
    if (RB_SYMBOL_P(key)) return rb_sprintf(":%"PRIsVALUE, rb_sym2str(key));
    if (RB_TYPE_P(key, T_STRING) && RBASIC_CLASS(key) == rb_cString) {
        if (RSTRING_LEN(key) <= 40) return rb_str_inspect(key);
        return rb_str_cat_cstr(rb_str_inspect(rb_str_new(RSTRING_PTR(key), 37)), "...");
    }
    return rb_sprintf("#<%"PRIsVALUE">", retention_names_class(key));
}

struct edges {
    retention_edge_fn *fn;
    void *data;
    VALUE parent;
    bool stop;              /* fn said so */
};

static inline bool
edge(struct edges *e, VALUE child, enum retention_edge kind, VALUE name)
{
    if (!e->stop) e->stop = e->fn(child, kind, name, e->data);
    return e->stop;
}

static int
ivar_i(ID id, VALUE value, st_data_t arg)
{
    struct edges *e = (struct edges *)arg;
    VALUE name = rb_id2str(id);
    bool cvar = name && RSTRING_LEN(name) > 2 && RSTRING_PTR(name)[0] == '@' && RSTRING_PTR(name)[1] == '@';
    return edge(e, value, cvar ? RETENTION_EDGE_CLASS_VARIABLE : RETENTION_EDGE_IVAR, name ? name : Qnil) ? ST_STOP
                                                                                                         : ST_CONTINUE;
}

static int
hash_i(VALUE key, VALUE value, VALUE arg)
{
    struct edges *e = (struct edges *)arg;
    edge(e, value, RETENTION_EDGE_HASH_VALUE, key);
    return edge(e, key, RETENTION_EDGE_HASH_KEY, key) ? ST_STOP : ST_CONTINUE;
}

static void
constants(VALUE mod, struct edges *e)
{
    VALUE inherit = Qfalse;
    VALUE names = rb_mod_constants(1, &inherit, mod);
    for (long i = 0; i < RARRAY_LEN(names) && !e->stop; i++) {
        VALUE sym = RARRAY_AREF(names, i);
        ID id = SYM2ID(sym);
        /* (an autoload not yet loaded has no value: reading it would load it) */
        if (!NIL_P(rb_autoload_p(mod, id))) continue;
        if (!rb_const_defined_at(mod, id)) continue;
        edge(e, rb_const_get_at(mod, id), RETENTION_EDGE_CONSTANT, sym);
    }
    RB_GC_GUARD(names);
}

/* The locals of a captured environment: local i of n is at ep[i - n - 2]
 * (the compiler's getlocal index n - i + VM_ENV_DATA_SIZE - 1). */
static void
env_locals(VALUE env_obj, struct edges *e)
{
    const rb_env_t *env = (const rb_env_t *)env_obj;
    if (!env->iseq || !env->ep) return;
    const struct rb_iseq_constant_body *body = ISEQ_BODY(env->iseq);
    unsigned int n = body->local_table_size;
    if ((unsigned int)(env->ep - env->env) + 1 < n + VM_ENV_DATA_SIZE) return;   /* (not laid out as expected) */
    for (unsigned int i = 0; i < n; i++) {
        VALUE v = env->ep[(long)i - (long)n - (VM_ENV_DATA_SIZE - 1)];
        ID id = body->local_table[i];
        VALUE name = rb_id2str(id);
        if (!RB_SPECIAL_CONST_P(v) && name && edge(e, v, RETENTION_EDGE_LOCAL, ID2SYM(id))) return;
    }
}

void
retention_names_edges(VALUE parent, retention_edge_fn *fn, void *data)
{
    struct edges e = { fn, data, parent, false };
    int type = BUILTIN_TYPE(parent);
    switch (type) {
      case T_CLASS:
      case T_MODULE:
        constants(parent, &e);
        break;
      case T_ARRAY:
        for (long i = 0; i < RARRAY_LEN(parent) && !e.stop; i++) edge(&e, RARRAY_AREF(parent, i), RETENTION_EDGE_INDEX, LONG2FIX(i));
        break;
      case T_HASH:
        rb_hash_foreach(parent, hash_i, (VALUE)&e);
        break;
      case T_STRUCT:
        if (RBASIC_CLASS(parent)) {
            VALUE members = rb_struct_members(parent);
            for (long i = 0; i < RARRAY_LEN(members) && !e.stop; i++) {
                VALUE m = RARRAY_AREF(members, i);
                edge(&e, rb_struct_getmember(parent, SYM2ID(m)), RETENTION_EDGE_MEMBER, m);
            }
        }
        break;
      case T_IMEMO: {
        VALUE owner;
        if (imemo_type(parent) == imemo_env) env_locals(parent, &e);
        else if ((owner = SAMPLING_FIELDS_OWNER(parent)) != Qfalse) rb_ivar_foreach(owner, ivar_i, (st_data_t)&e);
        return;
      }
      default:
        break;
    }
    /* (any other object may have generic instance variables: rb_ivar_foreach
     * looks them up, and finds none on most) */
    if (type != T_ICLASS && !e.stop) rb_ivar_foreach(parent, ivar_i, (st_data_t)&e);
    if (type == T_CLASS) {
        VALUE super = rb_class_get_superclass(parent);
        if (!NIL_P(super) && super) edge(&e, super, RETENTION_EDGE_SUPERCLASS, Qnil);
    }
    if (type != T_ICLASS && RBASIC_CLASS(parent)) edge(&e, RBASIC_CLASS(parent), RETENTION_EDGE_CLASS, Qnil);
}

VALUE
retention_names_edge(VALUE parent, enum retention_edge kind, VALUE name)
{
    switch (kind) {
      case RETENTION_EDGE_IVAR:
      case RETENTION_EDGE_CLASS_VARIABLE:
        return NIL_P(name) ? rb_str_new_cstr("(internal)") : rb_str_dup(name);
      case RETENTION_EDGE_CONSTANT: {
        VALUE id = rb_sym2str(name);
        if (parent == rb_cObject) return rb_str_dup(id);
        return rb_sprintf("%"PRIsVALUE"::%"PRIsVALUE, module_name(parent), id);
      }
      case RETENTION_EDGE_HASH_VALUE:
      case RETENTION_EDGE_HASH_KEY:
        return retention_names_key(name);
      case RETENTION_EDGE_MEMBER:
      case RETENTION_EDGE_LOCAL:
        return rb_sym2str(name);
      default:
        return name;
    }
}

/* Global variables: only plain identifiers are read ($cache, $stdout,
 * $LOAD_PATH); special variables ($~, $_, $!, $@, $0, $;, ...) and
 * $FILENAME (whose getter reads ARGF) are never asked. */
static bool
plain_global_p(VALUE name)
{
    const char *s = RSTRING_PTR(name);
    long n = RSTRING_LEN(name);
    if (n < 2 || s[0] != '$' || !(s[1] == '_' || (s[1] >= 'a' && s[1] <= 'z') || (s[1] >= 'A' && s[1] <= 'Z'))) return false;
    if (n == 2 && s[1] == '_') return false;    /* $_ */
    for (long i = 2; i < n; i++) {
        if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9'))) return false;
    }
    return strcmp(s, "$FILENAME") != 0;
}

VALUE
retention_names_globals(void)
{
    VALUE names = rb_f_global_variables();
    VALUE map = rb_ident_hash_new();
    for (long i = 0; i < RARRAY_LEN(names); i++) {
        VALUE name = rb_sym2str(RARRAY_AREF(names, i));
        if (!plain_global_p(name)) continue;
        VALUE value = rb_gv_get(RSTRING_PTR(name));
        if (RB_SPECIAL_CONST_P(value) || !NIL_P(rb_hash_lookup2(map, value, Qnil))) continue;
        rb_hash_aset(map, value, rb_str_dup(name));
    }
    return map;
}
