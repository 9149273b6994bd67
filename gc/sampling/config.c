/* config.c: see config.h. */
#include "config.h"

#include <stdio.h>
#include <string.h>

void
sampling_params_default(struct sampling_params *params)
{
    memset(params, 0, sizeof(*params));
    params->mode = SAMPLING_MODE_POISSON;
    params->interval = SAMPLING_INTERVAL_DEFAULT;
    params->depth = SAMPLING_DEPTH_DEFAULT;
    params->max_samples = SAMPLING_MAX_SAMPLES_DEFAULT;
}

bool
sampling_parse_size(const char *text, size_t len, bool suffixes, uint64_t *out)
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
        if (!suffixes) return false;
        int shift;
        switch (text[i]) {
          case 'k': case 'K': shift = 10; break;
          case 'm': case 'M': shift = 20; break;
          case 'g': case 'G': shift = 30; break;
          default: return false;
        }
        if (i + 1 != len) return false;
        if (v > (UINT64_MAX >> shift)) return false;
        v <<= shift;
    }
    *out = v;
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

static const char *const known_keys[] = { "interval", "mode", "depth", "max_samples", "seed", "out" };

/* Whether p starts with "key=" for a known key. */
static bool
at_known_key(const char *p)
{
    for (size_t i = 0; i < sizeof(known_keys) / sizeof(known_keys[0]); i++) {
        size_t n = strlen(known_keys[i]);
        if (strncmp(p, known_keys[i], n) == 0 && p[n] == '=') return true;
    }
    return false;
}

/* The end of out='s value: a path may hold commas, so it runs to the
 * next comma that starts another known key ("out=a,b.pb.gz,mode=fixed"). */
static const char *
out_value_end(const char *value)
{
    for (const char *c = strchr(value, ','); c; c = strchr(c + 1, ',')) {
        if (at_known_key(c + 1)) return c;
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
        if (KEY("interval")) {
            if (!sampling_parse_size(value, valuelen, true, &n) || n < SAMPLING_INTERVAL_MIN || n > SAMPLING_INTERVAL_MAX)
                return fail(err, errlen, "%s=%s: expected bytes from 1 to 2**50 (k/m/g suffixes allowed)", p, keylen, value, valuelen);
            params->interval = n;
        }
        else if (KEY("mode")) {
            if (valuelen == 7 && memcmp(value, "poisson", 7) == 0) params->mode = SAMPLING_MODE_POISSON;
            else if (valuelen == 5 && memcmp(value, "fixed", 5) == 0) params->mode = SAMPLING_MODE_FIXED;
            else return fail(err, errlen, "%s=%s: expected poisson or fixed", p, keylen, value, valuelen);
        }
        else if (KEY("depth")) {
            if (!sampling_parse_size(value, valuelen, false, &n) || n < SAMPLING_DEPTH_MIN || n > SAMPLING_DEPTH_MAX)
                return fail(err, errlen, "%s=%s: expected frames from 1 to 4096", p, keylen, value, valuelen);
            params->depth = (uint32_t)n;
        }
        else if (KEY("max_samples")) {
            /* a count: no k/m/g (those are powers of 1024, for bytes) */
            if (!sampling_parse_size(value, valuelen, false, &n) || n < SAMPLING_MAX_SAMPLES_MIN || n > SAMPLING_MAX_SAMPLES_MAX)
                return fail(err, errlen, "%s=%s: expected a count from 1 to 100000000", p, keylen, value, valuelen);
            params->max_samples = (size_t)n;
        }
        else if (KEY("seed")) {
            if (!sampling_parse_size(value, valuelen, false, &n))
                return fail(err, errlen, "%s=%s: expected an integer from 0 to 2**64-1", p, keylen, value, valuelen);
            params->has_seed = true;
            params->seed = n;
        }
        else if (KEY("out")) {
            if (valuelen == 0 || valuelen >= SAMPLING_OUT_MAX)
                return fail(err, errlen, "%s=%s: expected a file path (%%p expands to the pid)", p, keylen, value, valuelen);
            memcpy(params->out, value, valuelen);
            params->out[valuelen] = '\0';
        }
        else {
            return fail(err, errlen, "unknown key '%s'%s (known: interval, mode, depth, max_samples, seed, out)", p, keylen, "", 0);
        }
#undef KEY
        if (!end) break;
        p = end + 1;
        if (!*p) return fail(err, errlen, "trailing comma after '%s'%s", text, strlen(text), "", 0);
    }
    return true;
}

bool
sampling_expand_path(const char *template_, long pid, char *out, size_t outlen)
{
    size_t n = 0;
    for (const char *p = template_; *p; p++) {
        char buf[32];
        const char *piece = buf;
        size_t len;
        if (p[0] == '%' && p[1] == 'p') {
            len = (size_t)snprintf(buf, sizeof(buf), "%ld", pid);
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
