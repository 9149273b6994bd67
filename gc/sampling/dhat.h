/*
 * dhat.h: a writer of DHAT's JSON format (`dhatFileVersion` 2), the
 * files valgrind's DHAT writes and its viewer (dh_view.html) and the
 * Firefox Profiler read.
 *
 * Model.  A DHAT file is a frame table (`ftbl`: strings, "[root]"
 * first) and program points (`pps`): each a list of frame indices,
 * innermost first (`fs`), with its values: total bytes and blocks
 * (`tb`, `tbk`), their total lifetime (`tl`: the sum of every block's
 * life, in time units), the most bytes live at once and the blocks then
 * (`mb`, `mbk`), the bytes and blocks live at the global peak, t-gmax
 * (`gb`, `gbk`), and at the end, t-end (`eb`, `ebk`).  Around them:
 * the time unit (`tu`, and `Mtu` for a million of them), the end and the
 * peak's time (`te`, `tg`), the "short-lived" threshold (`tuth`), the
 * command and the pid.  `bklt` is true (lifetimes are here), `bkacc`
 * false (no access counts: `rb`, `wb`, `acc` are left out).
 *
 * The viewer builds a tree from the frame lists and throws on two points
 * with the same list ("repeated location"): this writer interns frames
 * by their text and points by their lists, and adds up the values of
 * points with equal lists.  A point's maximum is not a sum: the caller
 * gives each point's lives (dhat_max_from_lives), and dhat_finish makes
 * every maximum at least the point's bytes at t-gmax and at t-end.
 * Values are doubles (estimates) until written, rounded once per point.
 *
 * The text is JSON: strings escaped, bytes that are not UTF-8 written as
 * U+FFFD, so any JSON reader takes it.
 *
 * Pure C: malloc only, no Ruby, no locking (one builder per writer).
 */
#ifndef SAMPLING_DHAT_H
#define SAMPLING_DHAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dhat;

/* A program point's values (see the model). */
struct dhat_values {
    double tb, tbk;     /* total bytes, blocks */
    double tl;          /* total lifetime: blocks x time units */
    double mb, mbk;     /* most bytes live at once, and the blocks then */
    double gb, gbk;     /* at t-gmax */
    double eb, ebk;     /* at t-end */
};

/* What a file says besides its points. */
struct dhat_header {
    const char *cmd;                /* the command line */
    long pid;
    const char *tu, *Mtu;           /* the time unit, and a million of them */
    double te, tg, tuth;            /* t-end, t-gmax, the short-lived threshold */
};

/* NULL without memory. */
struct dhat *dhat_new(void);
void dhat_free(struct dhat *d);

/* The frame table index of a frame's text (len bytes), stored once;
 * "[root]" is 0.  dhat_frame_at formats a frame as DHAT prints one,
 * "0xADDR: NAME (WHERE)", the address a hash of the rest (stable across
 * runs, never 0) so the Firefox Profiler's parser and dh_view's tree
 * both read it. */
uint32_t dhat_frame(struct dhat *d, const char *text, size_t len);
uint32_t dhat_frame_at(struct dhat *d, const char *name, size_t namelen, const char *where, size_t wherelen);

/* A code location as WHERE: "path:line" ("path" when line is 0; "in C"
 * without a path), the path's bytes as they are (a NUL too).  Writes at most size bytes (NUL included); returns
 * the length it needed. */
size_t dhat_where(char *out, size_t size, const char *path, size_t pathlen, int line);

/* The point with frame list fs[0..n) (innermost first), made with all
 * values 0 if none has that list; UINT32_MAX without memory. */
uint32_t dhat_point(struct dhat *d, const uint32_t *fs, size_t n);

/* Adds v to a point's values (nothing for UINT32_MAX).  mb and mbk of v
 * are ignored (see the model). */
void dhat_add(struct dhat *d, uint32_t point, const struct dhat_values *v);

/* The points so far, and a point's values (for tests and callers that
 * read back). */
size_t dhat_points(const struct dhat *d);
const struct dhat_values *dhat_point_values(const struct dhat *d, uint32_t point);

/* A block (or a sample standing for some) of a point, live from time
 * `from` until `to` (UINT64_MAX: still live).  Times are moments at which
 * the live set was known (GCs): live at t iff from <= t < to. */
struct dhat_life {
    uint32_t point;
    uint64_t from, to;
    double bytes, blocks;
};
#define DHAT_STILL_LIVE UINT64_MAX

/* Sets each point's mb and mbk from its lives: the most bytes live at
 * one moment, and the blocks live then (sorts lives).  False without
 * memory (the maxima stay what they were). */
bool dhat_max_from_lives(struct dhat *d, struct dhat_life *lives, size_t n);

/* The file as JSON text in a malloc'd buffer the caller frees (NUL
 * terminated; *len without it).  False when memory ran out at any
 * point. */
bool dhat_finish(struct dhat *d, const struct dhat_header *h, char **out, size_t *len);

#endif
