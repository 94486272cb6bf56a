// common.h - what both halves of the trainer use: fatal errors, checked
// allocation and I/O, clocks, growable arrays, the seeded RNG, threads over
// ranges and the option tables of the subcommands. Static functions: the
// trainer is one translation unit (train.c includes tokenizer.c, which
// includes this), as are the tests that include train.c.
#ifndef TRAIN_COMMON_H
#define TRAIN_COMMON_H
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define HAVE_AVX2 1
#endif
#include "../model.h"

// ----------------------------------------------------------------------------
// utilities: fatal errors, checked allocation and I/O, clock, growable arrays

// Prints "train: " and the message, removes the output being written (its
// temp file: the file it would replace is left as it was) and exits 1.
static void die(const char *fmt, ...) {
    va_list ap;
    if (io_pending()[0]) unlink(io_pending()), io_pending()[0] = '\0';
    va_start(ap, fmt);
    fputs("train: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) die("out of memory allocating %zu bytes", n);
    return p;
}

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) die("out of memory allocating %zu x %zu bytes", n, size);
    return p;
}

// Make room for `need` elements of `elem` bytes in *p (capacity *cap).
static void grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return;
    size_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) die("out of memory growing an array to %zu x %zu bytes", c, elem);
    *p = q;
    *cap = c;
}

static FILE *xfopen(const char *path, const char *mode) {
    FILE *f = fopen(path, mode);
    if (!f)
        die("cannot open %s for %s: %s", path, mode[0] == 'r' ? "reading" : "writing",
            strerror(errno));
    return f;
}

// ----------------------------------------------------------------------------
// the files of a run (model.h's registry): every input registered when it is
// opened, every output planned before any work, then written to a temp file
// that is synced and renamed over it (outputs are whole or absent)

#define IO_MSG (2 * IO_PATH_MAX + 256) // a registry message: two paths and words

// Open an input for reading and register it (exit if it is one of the run's outputs).
static FILE *xfopen_in(const char *path) {
    FILE *f = xfopen(path, "rb");
    char msg[IO_MSG];
    if (note_input(fileno(f), path, msg, sizeof(msg))) die("%s", msg);
    return f;
}

// plan_output, begin_output, commit_output or exit with their message.
static void plan_or_die(OutputFile *o, const char *path) {
    char msg[IO_MSG];
    if (plan_output(o, path, msg, sizeof(msg))) die("%s", msg);
}

static FILE *begin_or_die(OutputFile *o) {
    char msg[IO_MSG];
    FILE *f = begin_output(o, msg, sizeof(msg));
    if (!f) die("%s", msg);
    return f;
}

static void (*commit_hook)(const char *path); // tests: called after each commit, with the output's name

static void commit_or_die(OutputFile *o) {
    char msg[IO_MSG];
    if (commit_output(o, msg, sizeof(msg))) die("%s", msg);
    if (commit_hook) commit_hook(o->name);
}

static void xfread(void *p, size_t size, size_t n, FILE *f, const char *path, const char *what) {
    if (fread(p, size, n, f) != n)
        die("%s: file ends or fails while reading %s (truncated or not this format?)", path, what);
}

static void xfwrite(const void *p, size_t size, size_t n, FILE *f, const char *path) {
    if (fwrite(p, size, n, f) != n) die("%s: write failed: %s (disk full?)", path, strerror(errno));
}

// Whole file into memory, NUL-terminated; *len = its size in bytes.
static char *read_file(const char *path, size_t *len) {
    FILE *f = xfopen_in(path);
    if (fseek(f, 0, SEEK_END) != 0) die("%s: cannot seek: %s", path, strerror(errno));
    long n = ftell(f);
    if (n < 0) die("%s: cannot tell its size: %s", path, strerror(errno));
    rewind(f);
    char *buf = xmalloc((size_t)n + 1);
    xfread(buf, 1, (size_t)n, f, path, "the whole file");
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

static int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static void make_dir(const char *path) {
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        die("cannot create directory %s: %s", path, strerror(errno));
}

static char *join_path(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = xmalloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// FNV-1a: a cheap fingerprint of the training tokens, so a resumed run can
// tell that its data changed underneath it.
// fnv1a_more: the hash h (FNV1A_BASIS at the start) continued over p (n)
#define FNV1A_BASIS 14695981039346656037ull // FNV-1a offset basis

static uint64_t fnv1a_more(uint64_t h, const void *p, size_t n) {
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

static uint64_t fnv1a(const void *p, size_t n) { return fnv1a_more(FNV1A_BASIS, p, n); }

typedef struct { char *p; size_t n, cap; } CharBuf;
typedef struct { int *p; size_t n, cap; } IntBuf;

static void charbuf_add(CharBuf *b, const char *s, size_t n) {
    grow((void **)&b->p, &b->cap, b->n + n + 1, 1);
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void intbuf_push(IntBuf *b, int x) {
    grow((void **)&b->p, &b->cap, b->n + 1, sizeof(int));
    b->p[b->n++] = x;
}

// ----------------------------------------------------------------------------
// random numbers: splitmix64 in a struct, so every stream is seeded and saved

typedef struct { uint64_t state; } Rng;

// splitmix64's finalizer: a 64-bit hash (also keys dropout masks, train.c)
static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rng_next(Rng *r) { return mix64(r->state += 0x9E3779B97F4A7C15ull); }

// uniform in [0, 1) with 53 random bits
static double rng_uniform(Rng *r) { return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

// standard normal by Box-Muller (one value per call; simple beats fast here)
static float rng_normal(Rng *r) {
    double u1 = 1.0 - rng_uniform(r), u2 = rng_uniform(r);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

// ----------------------------------------------------------------------------
// threads: split [0, n) into one contiguous range per thread. Every range
// writes its own slice of the output, so results never depend on scheduling.

#define MAX_THREADS 64

typedef void (*RangeFn)(const void *args, size_t lo, size_t hi);
typedef struct { RangeFn fn; const void *args; size_t lo, hi; } RangeJob;

static void *range_thread(void *p) {
    RangeJob *j = p;
    j->fn(j->args, j->lo, j->hi);
    return NULL;
}

// Run fn over [0, n) in `threads` pieces whose sizes are multiples of `align`.
static void parallel_range(RangeFn fn, const void *args, size_t n, size_t align, int threads) {
    size_t chunks = (n + align - 1) / align, nt = threads > 1 ? (size_t)threads : 1;
    if (nt > chunks) nt = chunks;
    if (nt <= 1) { fn(args, 0, n); return; }
    pthread_t th[MAX_THREADS];
    RangeJob job[MAX_THREADS];
    size_t per = (chunks + nt - 1) / nt * align;
    for (size_t t = 0; t < nt; t++) {
        size_t lo = t * per < n ? t * per : n, hi = lo + per < n ? lo + per : n;
        job[t] = (RangeJob){.fn = fn, .args = args, .lo = lo, .hi = hi};
        if (t > 0 && pthread_create(&th[t], NULL, range_thread, &job[t]) != 0)
            die("cannot start a thread (try -threads 1)");
    }
    fn(args, job[0].lo, job[0].hi);
    for (size_t t = 1; t < nt; t++) pthread_join(th[t], NULL);
}

// ----------------------------------------------------------------------------
// command line: a table of options per subcommand (left out when a test
// includes the trainer with TESTING defined)
#ifndef TESTING

typedef struct {
    const char *flag;
    char type;        // 'i' int, 'f' float, 's' string
    void *dst;
    const char *help;
} Opt;

static void usage(const char *cmd, const char *what, const Opt *opts, int n) {
    printf("usage: ./train %s [options]\n  %s\noptions (default in brackets):\n", cmd, what);
    for (int i = 0; i < n; i++) {
        printf("  %-14s %s [", opts[i].flag, opts[i].help);
        if (opts[i].type == 'i') printf("%d]\n", *(int *)opts[i].dst);
        else if (opts[i].type == 'f') printf("%g]\n", *(float *)opts[i].dst);
        else printf("%s]\n", *(const char **)opts[i].dst ? *(const char **)opts[i].dst : "none");
    }
}

static void parse_opts(int argc, char **argv, const char *cmd, const char *what, const Opt *opts, int n) {
    for (int i = 2; i < argc; i += 2) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(cmd, what, opts, n); exit(0); }
        const Opt *o = NULL;
        for (int j = 0; j < n; j++) if (!strcmp(argv[i], opts[j].flag)) o = &opts[j];
        if (!o) die("%s: unknown option \"%s\" (./train %s -h lists them)", cmd, argv[i], cmd);
        if (i + 1 >= argc) die("%s: option %s needs a value", cmd, argv[i]);
        const char *v = argv[i + 1];
        char *end;
        errno = 0;
        if (o->type == 's') *(const char **)o->dst = v;
        else if (o->type == 'i') {
            long x = strtol(v, &end, 10);
            if (*end || end == v || errno || x < 0 || x > 1000000000)
                die("%s: %s wants a whole number 0..1e9, got \"%s\"", cmd, o->flag, v);
            *(int *)o->dst = (int)x;
        } else {
            float x = strtof(v, &end);
            if (*end || end == v || errno || !isfinite(x)) die("%s: %s wants a number, got \"%s\"", cmd, o->flag, v);
            *(float *)o->dst = x;
        }
    }
}

// -threads n, checked
static int check_threads(int n) {
    if (n < 1 || n > MAX_THREADS) die("-threads %d: want 1..%d", n, MAX_THREADS);
    return n;
}

// "1,2,3" -> ints
static void parse_int_list(IntBuf *out, const char *s, const char *flag) {
    for (const char *p = s; *p; ) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p || (*end && *end != ',')) die("%s: expected numbers separated by commas, got \"%s\"", flag, s);
        intbuf_push(out, (int)x);
        p = *end ? end + 1 : end;
    }
}

#endif // TESTING
#endif // TRAIN_COMMON_H
