/* config.c: see config.h. */
#include "config.h"

#include <stdio.h>
#include <string.h>

const struct sampling_setting sampling_settings[SAMPLING_SETTINGS] = {
    /* 2**50 bytes (1 PiB) is far beyond any heap */
    [SAMPLING_SETTING_INTERVAL] = { "interval", 524288, 1, (uint64_t)1 << 50, " bytes", 1024 },
    [SAMPLING_SETTING_DEPTH] = { "depth", 128, 1, 4096, " frames", 1000 },
    [SAMPLING_SETTING_MAX_SAMPLES] = { "max_samples", 100000, 1, 100000000, "", 1000 },
    [SAMPLING_SETTING_SEED] = { "seed", 0, 0, UINT64_MAX, "", 0 },
    /* the watcher's (docs/oom.md): 0 (the default) is off; a step below
     * 1 MiB would write a file at every few GCs */
    [SAMPLING_SETTING_GROW] = { "grow", 0, 1048576, (uint64_t)1 << 50, " bytes", 1024 },
    [SAMPLING_SETTING_MAX_FILES] = { "max_files", 16, 1, 100000, "", 1000 },
    [SAMPLING_SETTING_MIN_GCS] = { "min_gcs", 0, 0, UINT32_MAX, " GCs", 1000 },
};

static const char *const mode_names[] = {
    [SAMPLING_MODE_POISSON] = "poisson",
    [SAMPLING_MODE_FIXED] = "fixed",
};

const char *
sampling_mode_name(enum sampling_mode mode)
{
    return mode == SAMPLING_MODE_FIXED ? mode_names[SAMPLING_MODE_FIXED] : mode_names[SAMPLING_MODE_POISSON];
}

bool
sampling_mode_parse(const char *name, size_t len, enum sampling_mode *mode)
{
    for (size_t i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++) {
        if (strlen(mode_names[i]) == len && memcmp(name, mode_names[i], len) == 0) {
            *mode = (enum sampling_mode)i;
            return true;
        }
    }
    return false;
}

void
sampling_params_set(struct sampling_params *params, enum sampling_setting_id id, uint64_t value)
{
    switch (id) {
      case SAMPLING_SETTING_INTERVAL: params->interval = value; break;
      case SAMPLING_SETTING_DEPTH: params->depth = (uint32_t)value; break;
      case SAMPLING_SETTING_MAX_SAMPLES: params->max_samples = (size_t)value; break;
      case SAMPLING_SETTING_SEED: params->seed = value; params->has_seed = true; break;
      case SAMPLING_SETTING_GROW: params->grow = value; break;
      case SAMPLING_SETTING_MAX_FILES: params->max_files = (uint32_t)value; break;
      case SAMPLING_SETTING_MIN_GCS: params->min_gcs = (uint32_t)value; break;
      case SAMPLING_SETTINGS: break;
    }
}

void
sampling_setting_range(enum sampling_setting_id id, char *buf, size_t buflen)
{
    const struct sampling_setting *s = &sampling_settings[id];
    snprintf(buf, buflen, "from %llu to %llu%s", (unsigned long long)s->min, (unsigned long long)s->max, s->unit);
}

void
sampling_params_default(struct sampling_params *params)
{
    memset(params, 0, sizeof(*params));
    params->mode = SAMPLING_MODE_POISSON;
    params->malloc = SAMPLING_MALLOC_DEFAULT;
    params->limit_at = SAMPLING_LIMIT_AT_DEFAULT;
    for (int id = 0; id < SAMPLING_SETTINGS; id++) {
        if (id != SAMPLING_SETTING_SEED) sampling_params_set(params, (enum sampling_setting_id)id, sampling_settings[id].def);
    }
}

bool
sampling_parse_size(const char *text, size_t len, unsigned base, uint64_t *out)
{
    if (len == 0) return false;
    uint64_t v = 0;
    size_t i = 0;
    for (; i < len && text[i] >= '0' && text[i] <= '9'; i++) {
        uint64_t d = (uint64_t)(text[i] - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    if (i == 0) return false;
    if (i < len) {
        if (!base || i + 1 != len) return false;
        int power;
        switch (text[i]) {
          case 'k': case 'K': power = 1; break;
          case 'm': case 'M': power = 2; break;
          case 'g': case 'G': power = 3; break;
          default: return false;
        }
        for (; power > 0; power--) {
            if (v > UINT64_MAX / base) return false;
            v *= base;
        }
    }
    *out = v;
    return true;
}

bool
sampling_parse_fraction(const char *text, size_t len, uint32_t *millionths)
{
    /* digits, an optional point and at most six decimals */
    uint64_t whole = 0, frac = 0;
    size_t i = 0, digits = 0, decimals = 0;
    for (; i < len && text[i] >= '0' && text[i] <= '9' && digits < 3; i++, digits++) whole = whole * 10 + (uint64_t)(text[i] - '0');
    if (i < len && text[i] == '.') {
        for (i++; i < len && text[i] >= '0' && text[i] <= '9' && decimals < 6; i++, decimals++) frac = frac * 10 + (uint64_t)(text[i] - '0');
        if (!decimals) return false;
    }
    if (i != len || (!digits && !decimals)) return false;
    for (size_t d = decimals; d < 6; d++) frac *= 10;
    uint64_t v = whole * 1000000 + frac;
    if (v < SAMPLING_LIMIT_AT_MIN || v > SAMPLING_LIMIT_AT_ONE) return false;
    *millionths = (uint32_t)v;
    return true;
}

static bool
fail(char *err, size_t errlen, const char *fmt, const char *key, size_t keylen, const char *value, size_t valuelen)
{
    char k[64], v[128];
    snprintf(k, sizeof(k), "%.*s", (int)(keylen < 63 ? keylen : 63), key);
    /* keep the message printable whatever bytes the value holds */
    size_t n = 0;
    for (size_t i = 0; i < valuelen && n + 4 < sizeof(v); i++) {
        unsigned char c = (unsigned char)value[i];
        if (c >= 0x20 && c < 0x7f) v[n++] = (char)c;
        else n += (size_t)snprintf(v + n, sizeof(v) - n, "\\x%02x", c);
    }
    v[n] = '\0';
    snprintf(err, errlen, fmt, k, v);
    return false;
}

/* The end of out='s value: a path may hold commas, so it runs to the
 * next comma that starts a key, "name=" ("out=a,b.pb.gz,mode=fixed");
 * an unknown name there is then an error, not part of the path. */
static const char *
out_value_end(const char *value)
{
    for (const char *c = strchr(value, ','); c; c = strchr(c + 1, ',')) {
        const char *k = c + 1;
        while ((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9') || *k == '_') k++;
        if (k > c + 1 && *k == '=') return c;
    }
    return NULL;
}

bool
sampling_params_parse(const char *text, struct sampling_params *params, char *err, size_t errlen)
{
    sampling_params_default(params);
    if (!text || !*text) {
        snprintf(err, errlen, "empty value (expected e.g. interval=512k,mode=poisson,depth=128,out=alloc-%%p.pb.gz)");
        return false;
    }
    const char *p = text;
    while (*p) {
        const char *end = strncmp(p, "out=", 4) == 0 ? out_value_end(p + 4) : strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (!eq) return fail(err, errlen, "'%s%s' is not key=value", p, len, "", 0);
        size_t keylen = (size_t)(eq - p);
        const char *value = eq + 1;
        size_t valuelen = len - keylen - 1;
        uint64_t n;

#define KEY(name) (keylen == sizeof(name) - 1 && memcmp(p, name, keylen) == 0)
        int id;
        for (id = 0; id < SAMPLING_SETTINGS; id++) {
            const char *name = sampling_settings[id].name;
            if (keylen == strlen(name) && memcmp(p, name, keylen) == 0) break;
        }
        if (id < SAMPLING_SETTINGS) {
            const struct sampling_setting *setting = &sampling_settings[id];
            if (!sampling_parse_size(value, valuelen, setting->suffix_base, &n) || n < setting->min || n > setting->max) {
                char range[96], fmt[192];
                sampling_setting_range((enum sampling_setting_id)id, range, sizeof(range));
                snprintf(fmt, sizeof(fmt), "%%s=%%s: expected an integer %s%s", range,
                         setting->suffix_base == 1024 ? " (k/m/g: powers of 1024)"
                         : setting->suffix_base ? " (k/m/g: thousand, million, billion)" : "");
                return fail(err, errlen, fmt, p, keylen, value, valuelen);
            }
            sampling_params_set(params, (enum sampling_setting_id)id, n);
        }
        else if (KEY("mode")) {
            if (!sampling_mode_parse(value, valuelen, &params->mode))
                return fail(err, errlen, "%s=%s: expected poisson or fixed", p, keylen, value, valuelen);
        }
        else if (KEY("malloc")) {
            if (valuelen == 1 && (*value == '0' || *value == '1')) params->malloc = *value == '1';
            else return fail(err, errlen, "%s=%s: expected 0 or 1", p, keylen, value, valuelen);
        }
        else if (KEY("every")) {
            /* seconds, or with a unit: 30s, 5m, 1h */
            unsigned scale = 1;
            size_t digits = valuelen;
            if (valuelen > 1 && (value[valuelen - 1] == 's' || value[valuelen - 1] == 'm' || value[valuelen - 1] == 'h')) {
                scale = value[valuelen - 1] == 'h' ? 3600 : value[valuelen - 1] == 'm' ? 60 : 1;
                digits--;
            }
            if (!sampling_parse_size(value, digits, 0, &n) || n < 1 || n > SAMPLING_EVERY_MAX / scale)
                return fail(err, errlen, "%s=%s: expected seconds from 1 to 86400 (with s, m or h: 60s, 5m, 1h)", p, keylen,
                            value, valuelen);
            params->every = (uint32_t)(n * scale);
        }
        else if (KEY("limit")) {
            /* auto: the memory cgroup's; a size: RSS */
            if (valuelen == 4 && memcmp(value, "auto", 4) == 0) params->limit = SAMPLING_LIMIT_AUTO;
            else if (sampling_parse_size(value, valuelen, 1024, &n) && n >= SAMPLING_LIMIT_BYTES_MIN && n <= ((uint64_t)1 << 50)) {
                params->limit = SAMPLING_LIMIT_SIZE;
                params->limit_bytes = n;
            }
            else return fail(err, errlen, "%s=%s: expected auto (the memory cgroup's limit) or a size of RSS from 1m to "
                             "1125899906842624 bytes (k/m/g: powers of 1024)", p, keylen, value, valuelen);
        }
        else if (KEY("limit_at")) {
            uint32_t f;
            if (!sampling_parse_fraction(value, valuelen, &f))
                return fail(err, errlen, "%s=%s: expected a fraction of the limit from 0.01 to 1 (e.g. 0.9)", p, keylen, value, valuelen);
            params->limit_at = f;
        }
        else if (KEY("out")) {
            if (valuelen == 0 || valuelen >= SAMPLING_OUT_MAX)
                return fail(err, errlen, "%s=%s: expected a file path (%%p expands to the pid)", p, keylen, value, valuelen);
            memcpy(params->out, value, valuelen);
            params->out[valuelen] = '\0';
        }
        else {
            char known[192] = "", fmt[288];
            for (int i = 0; i < SAMPLING_SETTINGS; i++) {
                strcat(known, sampling_settings[i].name);
                strcat(known, ", ");
            }
            snprintf(fmt, sizeof(fmt), "unknown key '%%s'%%s (known: %smode, malloc, out, every, limit, limit_at)", known);
            return fail(err, errlen, fmt, p, keylen, "", 0);
        }
#undef KEY
        if (!end) break;
        p = end + 1;
        if (!*p) return fail(err, errlen, "trailing comma after '%s'%s", text, strlen(text), "", 0);
    }
    /* each delta is a file of its own: one name would overwrite them */
    if (params->every && !strstr(params->out, "%n")) {
        snprintf(err, errlen, "every= needs out= with %%n, the delta file's number (e.g. out=alloc-%%p-%%n.pb.gz)");
        return false;
    }
    /* a delta is pprof (alloc_* since the last one); DHAT files hold a
     * whole run: one at exit */
    size_t outlen = strlen(params->out);
    if (params->every && outlen >= 10 && strcmp(params->out + outlen - 10, ".dhat.json") == 0) {
        snprintf(err, errlen, "every= writes pprof delta files: out= must not end in .dhat.json (a DHAT file is written "
                 "once, at exit, without every=)");
        return false;
    }
    /* the watcher's files go to out= (pprof: go tool pprof -diff_base
     * compares two) */
    if ((params->limit || params->grow) && !params->out[0]) {
        snprintf(err, errlen, "%s needs out=, where its profiles go (e.g. out=heap-%%p-%%n.pb.gz)", params->limit ? "limit=" : "grow=");
        return false;
    }
    if ((params->limit || params->grow) && outlen >= 10 && strcmp(params->out + outlen - 10, ".dhat.json") == 0) {
        snprintf(err, errlen, "limit= and grow= write pprof files: out= must not end in .dhat.json");
        return false;
    }
    return true;
}

/* Whether template_ holds %p (not %%p). */
static bool
has_pid(const char *template_)
{
    for (const char *p = template_; *p; p++) {
        if (p[0] == '%' && p[1] == 'p') return true;
        if (p[0] == '%' && p[1]) p++;
    }
    return false;
}

/* Where a child's pid goes in a template without %p: before the first
 * dot of the file name (not a leading one), else at the end. */
static const char *
child_pid_position(const char *template_)
{
    const char *slash = strrchr(template_, '/');
    const char *name = slash ? slash + 1 : template_;
    const char *dot = *name ? strchr(name + 1, '.') : NULL;
    return dot ? dot : template_ + strlen(template_);
}

bool
sampling_expand_path(const char *template_, long pid, unsigned long seq, bool child, char *out, size_t outlen)
{
    size_t n = 0;
    const char *insert = child && !has_pid(template_) ? child_pid_position(template_) : NULL;
    for (const char *p = template_;; p++) {
        char buf[32];
        const char *piece = buf;
        size_t len;
        if (p == insert) {
            len = (size_t)snprintf(buf, sizeof(buf), "-%ld", pid);
            if (n + len >= outlen) return false;
            memcpy(out + n, piece, len);
            n += len;
        }
        if (!*p) break;
        if (p[0] == '%' && p[1] == 'p') {
            len = (size_t)snprintf(buf, sizeof(buf), "%ld", pid);
            p++;
        }
        else if (p[0] == '%' && p[1] == 'n') {
            len = (size_t)snprintf(buf, sizeof(buf), "%lu", seq);
            p++;
        }
        else if (p[0] == '%' && p[1] == '%') {
            buf[0] = '%';
            len = 1;
            p++;
        }
        else {
            buf[0] = *p;
            len = 1;
        }
        if (n + len >= outlen) return false;
        memcpy(out + n, piece, len);
        n += len;
    }
    out[n] = '\0';
    return true;
}
