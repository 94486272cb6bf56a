// specdec.c - speculative decoding in one C file.
//
// A small DRAFT transformer proposes K tokens, one at a time. The large TARGET
// transformer then scores all K+1 positions in ONE batched forward pass, which
// costs about as much as scoring one position, because a decoder step on a CPU
// is bound by reading the weights, not by arithmetic. Exact rejection sampling
// (Leviathan, Kalman, Matias 2022, arXiv 2211.17192; Chen et al. 2023, arXiv
// 2302.01318) keeps what the draft got right and repairs the first thing it
// got wrong, so the output is distributed EXACTLY as the target's.
//
// Notation (careful: the seed explainers do not agree): p is the TARGET's
// distribution, q is the DRAFT's.
//
// The file reads top to bottom in the order data flows:
//   checkpoint loading -> math kernels -> forward -> sampler -> tokenizer ->
//   the speculative step -> generation loop -> command line.
//
// Build: cc -std=c11 -O3 -mavx2 -mfma -ffp-contract=off specdec.c -lm
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define HAVE_AVX2 1
#else
#define HAVE_AVX2 0
#endif

#include "model.h"

// The longest draft run K. Every buffer is sized once for K_MAX+1 rows.
#define K_MAX 16
#define MAX_ROWS (K_MAX + 1)

// ----------------------------------------------------------------------------
// Errors: one message naming the file or flag, then exit code 1

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "specdec: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(EXIT_FAILURE);
}

static void *xmalloc(size_t n, const char *what) {
    void *p = calloc(n ? n : 1, 1);
    if (!p) die("out of memory allocating %zu bytes for %s", n, what);
    return p;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// ----------------------------------------------------------------------------
// Transformer: config and weights (model.h), the run state, the mmap'd file

// Activations for up to max_rows consecutive positions, allocated once.
typedef struct {
    float *x;           // (T, dim) residual stream
    float *xb;          // (T, dim) normed input / attention output
    float *xb2;         // (T, dim) projection output
    float *hb;          // (T, hidden) FFN gate
    float *hb2;         // (T, hidden) FFN up
    float *q;           // (T, dim) queries
    float *att;         // (T, n_heads, seq_len) attention weights
    float *logits;      // (T, vocab) classifier output
    float *key_cache;   // (L, seq_len, kv_dim) keys by absolute position
    float *value_cache; // (L, seq_len, kv_dim) values by absolute position
} RunState;

typedef struct {
    Config config;              // vocab_size is |vocab_size| here
    TransformerWeights weights; // pointers into the mapping
    RunState state;
    int shared_classifier;      // 1: wcls is token_embedding
    int max_rows;               // rows one forward() may take
    const char *path;
    void *map;                  // the whole file, read-only
    size_t map_bytes;
} Transformer;

// ----------------------------------------------------------------------------
// Loading: mmap a llama2.c checkpoint and check every field before use

// Validate the 7-int header against the file size; fills c, *shared.
static void check_config(Config *c, int *shared, const int32_t *h, size_t file_bytes,
                         const char *path) {
    if (h[0] == 0x616b3432) // "ak42": llama2.c's versioned export
        die("%s: this is a versioned llama2.c export (magic \"ak42\"); specdec reads the legacy "
            "format (export with --version 0)", path);
    const char *names[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads",
                            "vocab_size", "seq_len"};
    for (int i = 0; i < 7; i++) {
        int v = i == 5 ? abs(h[i]) : h[i];
        if (v <= 0 || v > (1 << 24))
            die("%s: header field %s = %d, expected a positive integer below 2^24 "
                "(is this a llama2.c checkpoint?)", path, names[i], (int)h[i]);
    }
    *c = (Config){h[0], h[1], h[2], h[3], h[4], abs(h[5]), h[6]};
    *shared = h[5] > 0;
    if (c->dim % c->n_heads != 0)
        die("%s: dim %d is not a multiple of n_heads %d", path, c->dim, c->n_heads);
    if (c->n_heads % c->n_kv_heads != 0)
        die("%s: n_heads %d is not a multiple of n_kv_heads %d", path, c->n_heads, c->n_kv_heads);
    if ((c->dim / c->n_heads) % 2 != 0)
        die("%s: head size %d is odd; RoPE rotates pairs", path, c->dim / c->n_heads);
    size_t need = CONFIG_HEADER_BYTES + checkpoint_n_floats(c, *shared) * sizeof(float);
    if (file_bytes != need)
        die("%s: file is %zu bytes but its header (dim %d, hidden_dim %d, n_layers %d, n_heads %d, "
            "n_kv_heads %d, vocab_size %d, seq_len %d, %s classifier) needs %zu; the file is %s",
            path, file_bytes, c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads,
            c->vocab_size, c->seq_len, *shared ? "shared" : "unshared", need,
            file_bytes < need ? "truncated" : "longer than a legacy llama2.c checkpoint");
}

static void build_run_state(RunState *s, const Config *c, int T) {
    size_t dim = (size_t)c->dim, hid = (size_t)c->hidden_dim, t = (size_t)T;
    size_t kv_dim = (size_t)c->n_kv_heads * (dim / (size_t)c->n_heads);
    size_t cache = (size_t)c->n_layers * (size_t)c->seq_len * kv_dim * sizeof(float);
    s->x = xmalloc(t * dim * sizeof(float), "x");
    s->xb = xmalloc(t * dim * sizeof(float), "xb");
    s->xb2 = xmalloc(t * dim * sizeof(float), "xb2");
    s->hb = xmalloc(t * hid * sizeof(float), "hb");
    s->hb2 = xmalloc(t * hid * sizeof(float), "hb2");
    s->q = xmalloc(t * dim * sizeof(float), "q");
    s->att = xmalloc(t * (size_t)c->n_heads * (size_t)c->seq_len * sizeof(float), "att");
    s->logits = xmalloc(t * (size_t)c->vocab_size * sizeof(float), "logits");
    s->key_cache = xmalloc(cache, "key cache");
    s->value_cache = xmalloc(cache, "value cache");
}

static void free_run_state(RunState *s) {
    free(s->x); free(s->xb); free(s->xb2); free(s->hb); free(s->hb2);
    free(s->q); free(s->att); free(s->logits); free(s->key_cache); free(s->value_cache);
}

// Map `path` read-only and size the run state for forwards of up to max_rows rows.
static void build_transformer(Transformer *t, const char *path, int max_rows) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) die("%s: cannot open checkpoint: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) die("%s: cannot stat: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) die("%s: not a regular file (expected a llama2.c checkpoint)", path);
    size_t bytes = (size_t)st.st_size;
    if (bytes < CONFIG_HEADER_BYTES)
        die("%s: file is %zu bytes, shorter than the 28-byte llama2.c header", path, bytes);
    void *map = mmap(NULL, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) die("%s: mmap failed: %s", path, strerror(errno));
    memset(t, 0, sizeof(*t));
    check_config(&t->config, &t->shared_classifier, (const int32_t *)map, bytes, path);
    float *p = (float *)((char *)map + CONFIG_HEADER_BYTES);
    map_weights(&t->weights, &t->config, p, t->shared_classifier);
    t->path = path;
    t->map = map;
    t->map_bytes = bytes;
    t->max_rows = max_rows;
    build_run_state(&t->state, &t->config, max_rows);
}

static void free_transformer(Transformer *t) {
    free_run_state(&t->state);
    if (t->map) munmap(t->map, t->map_bytes);
    t->map = NULL;
}

// ----------------------------------------------------------------------------
// Math kernels
//
// Every dot product in specdec uses ONE reduction order, on the AVX2 path and
// on the scalar path alike, so both give the same bits:
//   lane l (0..7) accumulates x[k]*y[k] for k = l, l+8, l+16, ... below
//   n8 = n - n%8, each step one fused multiply-add (one rounding);
//   the lanes are summed as ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7));
//   the tail k = n8..n-1 is added in order, again with fused multiply-adds.
// The order depends only on n, never on how many rows a matmul is given:
// that is what makes the batched forward equal to single-row forwards.

static float sum_lanes(const float l[8]) {
    return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

// x (n) . y (n) -> scalar, canonical order, portable C
static float dot_scalar(const float *x, const float *y, int n) {
    float lane[8] = {0};
    int n8 = n & ~7;
    for (int k = 0; k < n8; k += 8)
        for (int l = 0; l < 8; l++) lane[l] = fmaf(x[k + l], y[k + l], lane[l]);
    float s = sum_lanes(lane);
    for (int k = n8; k < n; k++) s = fmaf(x[k], y[k], s);
    return s;
}

// W (d,n) @ x (T,n) -> out (T,d), portable C. Compiled on every build so the
// tests can compare the two paths.
static void matmul_scalar(float *out, const float *x, const float *w, int T, int n, int d) {
    for (int j = 0; j < d; j++)
        for (int t = 0; t < T; t++)
            out[(size_t)t * d + j] = dot_scalar(w + (size_t)j * n, x + (size_t)t * n, n);
}

#if HAVE_AVX2
// The 8 lanes of v summed in the canonical order.
static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)); // l_i + l_{i+4}
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));      // (l0+l4)+(l2+l6), (l1+l5)+(l3+l7)
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));  // the two halves
    return _mm_cvtss_f32(s);
}

// x (n) . y (n) -> scalar, canonical order, AVX2
static float dot_avx2(const float *x, const float *y, int n) {
    __m256 acc = _mm256_setzero_ps();
    int n8 = n & ~7;
    for (int k = 0; k < n8; k += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), _mm256_loadu_ps(y + k), acc);
    float s = hsum8(acc);
    for (int k = n8; k < n; k++) s = fmaf(x[k], y[k], s);
    return s;
}

// One register tile: R weight rows times B activation rows (R * B <= 12).
// W (R,n) @ x (B,n) -> out (B, row stride d). Each weight chunk is loaded once
// and multiplied into all B rows while it sits in a register; each (r,b) pair
// has its own accumulator, so the sum is the canonical one whatever R and B are.
static inline __attribute__((always_inline)) void
matmul_tile(float *out, const float *x, const float *w, int n, int d, int R, int B) {
    __m256 acc[4][6];
    for (int r = 0; r < R; r++)
        for (int b = 0; b < B; b++) acc[r][b] = _mm256_setzero_ps();
    int n8 = n & ~7;
    for (int k = 0; k < n8; k += 8) {
        __m256 xv[6];
        for (int b = 0; b < B; b++) xv[b] = _mm256_loadu_ps(x + (size_t)b * n + k);
        for (int r = 0; r < R; r++) {
            // the next tile's weights: start their trip from DRAM now (into L2),
            // so the memory stream keeps flowing while this tile computes
            _mm_prefetch((const char *)(w + (size_t)(R + r) * n + k), _MM_HINT_T1);
            __m256 wv = _mm256_loadu_ps(w + (size_t)r * n + k);
            for (int b = 0; b < B; b++) acc[r][b] = _mm256_fmadd_ps(wv, xv[b], acc[r][b]);
        }
    }
    for (int r = 0; r < R; r++)
        for (int b = 0; b < B; b++) {
            float s = hsum8(acc[r][b]);
            for (int k = n8; k < n; k++) s = fmaf(w[(size_t)r * n + k], x[(size_t)b * n + k], s);
            out[(size_t)b * d + r] = s;
        }
}

// 2 weight rows against B = 1..6 activation rows: a tile unrolled for each B
static void matmul_tile2(float *out, const float *x, const float *w, int n, int d, int B) {
    switch (B) {
    case 1: matmul_tile(out, x, w, n, d, 2, 1); break;
    case 2: matmul_tile(out, x, w, n, d, 2, 2); break;
    case 3: matmul_tile(out, x, w, n, d, 2, 3); break;
    case 4: matmul_tile(out, x, w, n, d, 2, 4); break;
    case 5: matmul_tile(out, x, w, n, d, 2, 5); break;
    default: matmul_tile(out, x, w, n, d, 2, 6); break;
    }
}

// W (d,n) @ x (T,n) -> out (T,d), AVX2+FMA. Walks W once from memory.
// One row (decoding): 4 weight rows at a time, 4 independent FMA chains.
// T rows (verification): 2 weight rows at a time against blocks of up to 6
// activation rows, the blocks as even as possible (T = 5: one block of 5;
// T = 9: 5 + 4), so the weights leave DRAM once and are reused from L1.
static void matmul_avx2(float *out, const float *x, const float *w, int T, int n, int d) {
    int j = 0;
    if (T == 1) {
        for (; j + 4 <= d; j += 4) matmul_tile(out + j, x, w + (size_t)j * n, n, d, 4, 1);
        for (; j < d; j++) matmul_tile(out + j, x, w + (size_t)j * n, n, d, 1, 1);
        return;
    }
    int blocks = (T + 5) / 6;
    for (; j < d; j += 2) {
        const float *wj = w + (size_t)j * n;
        for (int b = 0, t = 0; b < blocks; b++) {
            int rows = (T - t) / (blocks - b); // near-equal blocks
            if (j + 2 <= d) matmul_tile2(out + (size_t)t * d + j, x + (size_t)t * n, wj, n, d, rows);
            else for (int i = 0; i < rows; i++) // an odd last weight row
                matmul_tile(out + (size_t)(t + i) * d + j, x + (size_t)(t + i) * n, wj, n, d, 1, 1);
            t += rows;
        }
    }
}
#endif

// x (n) . y (n) -> scalar
static float dot(const float *x, const float *y, int n) {
#if HAVE_AVX2
    return dot_avx2(x, y, n);
#else
    return dot_scalar(x, y, n);
#endif
}

#if HAVE_AVX2
// The canonical sums of 8 accumulators at once: out[j] = hsum8(v[j]), bit for
// bit (m_i = l_i + l_{i+4}, then (m0+m2) + (m1+m3)), but transposed so the 8
// horizontal sums share their shuffles. v[8] -> out (8)
static inline __m256 hsum8x8(const __m256 *v) {
    __m256 h[4];
    for (int j = 0; j < 4; j++) { // m of v[2j] in the low half, of v[2j+1] in the high
        __m256 m = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * j], v[2 * j + 1], 0x20),
                                 _mm256_permute2f128_ps(v[2 * j], v[2 * j + 1], 0x31));
        h[j] = _mm256_permute_ps(m, _MM_SHUFFLE(3, 1, 2, 0)); // m0 m2 m1 m3
    }
    __m256 n01 = _mm256_hadd_ps(h[0], h[1]), n23 = _mm256_hadd_ps(h[2], h[3]); // m0+m2, m1+m3
    __m256 s = _mm256_hadd_ps(n01, n23);           // order: v0 v2 v4 v6 | v1 v3 v5 v7
    return _mm256_permutevar8x32_ps(s, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// 8 dot products q . k_j, j = 0..7, rows of k stride apart, canonical order.
// q (n), k (8,stride) -> out (8); n a multiple of 8
static void dot8_avx2(float *out, const float *q, const float *k, size_t stride, int n) {
    __m256 acc[8];
    for (int j = 0; j < 8; j++) acc[j] = _mm256_setzero_ps();
    for (int c = 0; c < n; c += 8) {
        __m256 qv = _mm256_loadu_ps(q + c);
        for (int j = 0; j < 8; j++)
            acc[j] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + j * stride + c), acc[j]);
    }
    _mm256_storeu_ps(out, hsum8x8(acc));
}
#endif

// Attention scores: a[t] = (q . k_t) * scale for t < n_pos; every score is
// dot() exactly, 8 positions at a time on AVX2. q (hs), k (n_pos,stride) -> a (n_pos)
static void attention_scores(float *a, const float *q, const float *k, size_t stride, int n_pos,
                             int hs, float scale) {
    int t = 0;
#if HAVE_AVX2
    if (hs % 8 == 0)
        for (; t + 8 <= n_pos; t += 8) {
            dot8_avx2(a + t, q, k + (size_t)t * stride, stride, hs);
            for (int j = 0; j < 8; j++) a[t + j] *= scale;
        }
#endif
    for (; t < n_pos; t++) a[t] = dot(q, k + (size_t)t * stride, hs) * scale;
}

#if HAVE_AVX2
// out[0..8B) = sum_t a[t] v_t[0..8B), B <= 4 vectors kept in registers across
// t: B independent add chains per position. a (n_pos), v (n_pos,stride) -> out (8B)
static inline void attention_values_avx2(float *out, const float *a, const float *v,
                                         size_t stride, int n_pos, int B) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                     _mm256_setzero_ps()};
    for (int t = 0; t < n_pos; t++) {
        __m256 at = _mm256_set1_ps(a[t]);
        const float *vt = v + (size_t)t * stride;
        for (int b = 0; b < B; b++)
            acc[b] = _mm256_add_ps(acc[b], _mm256_mul_ps(at, _mm256_loadu_ps(vt + 8 * b)));
    }
    for (int b = 0; b < B; b++) _mm256_storeu_ps(out + 8 * b, acc[b]);
}
#endif

// Attention output: out = sum_t a[t] v_t, summed in order t = 0, 1, ... as a
// product then a sum (no fused multiply-add), so the AVX2 loop, which keeps
// up to 32 outputs in registers across t, gives the scalar loop's bits.
// a (n_pos), v (n_pos,stride) -> out (hs)
static void attention_values(float *out, const float *a, const float *v, size_t stride,
                             int n_pos, int hs) {
    int i = 0;
#if HAVE_AVX2
    // constant block sizes, so the inlined loop keeps its accumulators in registers
    for (; i + 32 <= hs; i += 32) attention_values_avx2(out + i, a, v + i, stride, n_pos, 4);
    for (; i + 8 <= hs; i += 8) attention_values_avx2(out + i, a, v + i, stride, n_pos, 1);
#endif
    for (; i < hs; i++) {
        float acc = 0.0f;
        for (int t = 0; t < n_pos; t++) acc += a[t] * v[(size_t)t * stride + i];
        out[i] = acc;
    }
}

// W (d,n) @ x (T,n) -> out (T,d): the one matmul for every row count 1..K_MAX+1
static void matmul(float *out, const float *x, const float *w, int T, int n, int d) {
#if HAVE_AVX2
    (void)matmul_scalar; // unused here, but built for the tests
    matmul_avx2(out, x, w, T, n, d);
#else
    matmul_scalar(out, x, w, T, n, d);
#endif
}

// RMSNorm: out = weight * x / sqrt(mean(x^2) + 1e-5), for T rows of n.
// x (T,n), weight (n) -> out (T,n)
static void rmsnorm(float *out, const float *x, const float *weight, int T, int n) {
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * n;
        float ss = dot(xt, xt, n) / (float)n + 1e-5f;
        ss = 1.0f / sqrtf(ss);
        for (int i = 0; i < n; i++) out[(size_t)t * n + i] = weight[i] * (ss * xt[i]);
    }
}

// softmax in place: x (n) -> exp(x - max) / sum, summed left to right
static void softmax(float *x, int n) {
    float max = x[0];
    for (int i = 1; i < n; i++) if (x[i] > max) max = x[i];
    float sum = 0.0f;
    for (int i = 0; i < n; i++) { x[i] = expf(x[i] - max); sum += x[i]; }
    for (int i = 0; i < n; i++) x[i] /= sum;
}

// RoPE: rotate each pair (v[2i], v[2i+1]) of every head by angle pos*theta_i,
// theta_i = 10000^(-2i/hs), using the checkpoint's tables.
// v (n_heads*hs) in place; cos_row, sin_row (hs/2) for this position
static void rope(float *v, const float *cos_row, const float *sin_row, int n_heads, int hs) {
    for (int h = 0; h < n_heads; h++)
        for (int i = 0; i < hs / 2; i++) {
            float *pair = v + h * hs + 2 * i;
            float v0 = pair[0], v1 = pair[1], c = cos_row[i], s = sin_row[i];
            pair[0] = v0 * c - v1 * s;
            pair[1] = v0 * s + v1 * c;
        }
}

// SwiGLU: hb = silu(hb) * hb2, silu(x) = x * sigmoid(x). hb, hb2 (n) -> hb (n)
static void swiglu(float *hb, const float *hb2, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float v = hb[i];
        v *= 1.0f / (1.0f + expf(-v));
        hb[i] = v * hb2[i];
    }
}

// ----------------------------------------------------------------------------
// Forward: n_rows consecutive tokens from position pos, in ONE pass

// Causal grouped-query attention for one row at absolute position p:
// each query head h reads key/value head h / (n_heads / n_kv_heads) at
// positions 0..p of the cache. q (dim), att (n_heads, seq_len) -> out (dim)
static void attention_row(float *out, float *att, const float *q, const float *kc,
                          const float *vc, const Config *c, int p) {
    int hs = c->dim / c->n_heads, kv_dim = c->n_kv_heads * hs;
    int group = c->n_heads / c->n_kv_heads;
    float scale = 1.0f / sqrtf((float)hs);
    for (int h = 0; h < c->n_heads; h++) {
        const float *qh = q + h * hs;
        float *a = att + (size_t)h * c->seq_len;
        size_t off = (size_t)(h / group) * hs;
        // scores: a[t] = q . k_t / sqrt(hs), then softmax over t = 0..p
        attention_scores(a, qh, kc + off, (size_t)kv_dim, p + 1, hs, scale);
        softmax(a, p + 1);
        // out = sum_t a[t] v_t
        attention_values(out + h * hs, a, vc + off, (size_t)kv_dim, p + 1, hs);
    }
}

// Runs tokens[0..n_rows) at positions pos..pos+n_rows-1 through the model.
// Row i attends to positions <= pos+i; keys and values for all rows are written
// to the caches at their positions. Returns logits (n_rows, vocab_size), valid
// until the next call. Every row's arithmetic is independent of n_rows, so the
// result equals n_rows single-row calls bit for bit (batch invariance).
static float *forward(Transformer *tr, const int *tokens, int n_rows, int pos) {
    const Config *c = &tr->config;
    const TransformerWeights *w = &tr->weights;
    RunState *s = &tr->state;
    int T = n_rows, dim = c->dim, hid = c->hidden_dim;
    int hs = dim / c->n_heads, kv_dim = c->n_kv_heads * hs;
    if (T < 1 || T > tr->max_rows || pos < 0 || pos + T > c->seq_len)
        die("%s: forward(%d rows at pos %d) outside 1..%d rows and seq_len %d", tr->path, T, pos,
            tr->max_rows, c->seq_len);

    // embed: x[i] = token_embedding[tokens[i]]
    for (int i = 0; i < T; i++)
        memcpy(s->x + (size_t)i * dim, w->token_embedding + (size_t)tokens[i] * dim,
               (size_t)dim * sizeof(float));

    for (int l = 0; l < c->n_layers; l++) {
        size_t L = (size_t)l;
        float *kc = s->key_cache + L * c->seq_len * kv_dim;   // (seq_len, kv_dim)
        float *vc = s->value_cache + L * c->seq_len * kv_dim; // (seq_len, kv_dim)

        // attention block: x += wo @ attn(rope(wq xn), rope(wk xn), wv xn), xn = rmsnorm(x)
        rmsnorm(s->xb, s->x, w->rms_att + L * dim, T, dim);
        matmul(s->q, s->xb, w->wq + L * dim * dim, T, dim, dim);
        matmul(kc + (size_t)pos * kv_dim, s->xb, w->wk + L * kv_dim * dim, T, dim, kv_dim);
        matmul(vc + (size_t)pos * kv_dim, s->xb, w->wv + L * kv_dim * dim, T, dim, kv_dim);
        for (int i = 0; i < T; i++) {
            size_t p = (size_t)(pos + i);
            const float *cr = w->rope_cos + p * hs / 2, *sr = w->rope_sin + p * hs / 2;
            rope(s->q + (size_t)i * dim, cr, sr, c->n_heads, hs);
            rope(kc + p * kv_dim, cr, sr, c->n_kv_heads, hs);
        }
        for (int i = 0; i < T; i++)
            attention_row(s->xb + (size_t)i * dim, s->att + (size_t)i * c->n_heads * c->seq_len,
                          s->q + (size_t)i * dim, kc, vc, c, pos + i);
        matmul(s->xb2, s->xb, w->wo + L * dim * dim, T, dim, dim);
        for (size_t i = 0; i < (size_t)T * dim; i++) s->x[i] += s->xb2[i];

        // feed-forward block: x += w2 @ (silu(w1 xn) * (w3 xn)), xn = rmsnorm(x)
        rmsnorm(s->xb, s->x, w->rms_ffn + L * dim, T, dim);
        matmul(s->hb, s->xb, w->w1 + L * hid * dim, T, dim, hid);
        matmul(s->hb2, s->xb, w->w3 + L * hid * dim, T, dim, hid);
        swiglu(s->hb, s->hb2, (size_t)T * hid);
        matmul(s->xb, s->hb, w->w2 + L * dim * hid, T, hid, dim);
        for (size_t i = 0; i < (size_t)T * dim; i++) s->x[i] += s->xb[i];
    }

    // classifier: logits = wcls @ rmsnorm(x)
    rmsnorm(s->xb, s->x, w->rms_final, T, dim);
    matmul(s->logits, s->xb, w->wcls, T, dim, c->vocab_size);
    return s->logits;
}

// Feed tokens[0..n) at positions start.. in chunks of max_rows rows (prompt
// prefill, draft catch-up). Returns the logits row of the last token.
static float *forward_chunked(Transformer *tr, const int *tokens, int n, int start) {
    float *last = NULL;
    for (int i = 0; i < n; i += tr->max_rows) {
        int rows = n - i < tr->max_rows ? n - i : tr->max_rows;
        float *logits = forward(tr, tokens + i, rows, start + i);
        last = logits + (size_t)(rows - 1) * tr->config.vocab_size;
    }
    return last;
}

// ----------------------------------------------------------------------------
// Sampler: an RNG in a struct, and ONE function from logits to a distribution

typedef struct {
    uint64_t state;
} Rng;

// splitmix64 of the seed, so seeds 0, 1, 2, ... start far apart
static void rng_seed(Rng *r, uint64_t seed) {
    uint64_t z = seed + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    r->state = (z ^ (z >> 31)) | 1; // xorshift must not start at 0
}

// xorshift64*, top 32 bits
static uint32_t rng_u32(Rng *r) {
    r->state ^= r->state >> 12;
    r->state ^= r->state << 25;
    r->state ^= r->state >> 27;
    return (uint32_t)((r->state * 0x2545F4914F6CDD1DULL) >> 32);
}

// a coin in [0, 1) with 24 random bits: exactly representable as a float
static float rng_coin(Rng *r) { return (float)(rng_u32(r) >> 8) / 16777216.0f; }

typedef struct {
    int vocab_size;
    float temperature; // 0: greedy (one-hot argmax)
    float top_p;       // nucleus mass kept; 1 = off
    int top_k;         // keep the k most likely; 0 = off
    struct ProbIndex { float prob; int index; } *order; // (vocab) scratch for top-k/top-p
} Sampler;

static void build_sampler(Sampler *s, int vocab_size, float temperature, float top_p, int top_k) {
    s->vocab_size = vocab_size;
    s->temperature = temperature;
    s->top_p = top_p;
    s->top_k = top_k;
    s->order = xmalloc((size_t)vocab_size * sizeof(*s->order), "sampler order");
}

static void free_sampler(Sampler *s) { free(s->order); }

// index of the largest value; ties go to the lowest index
static int argmax(const float *v, int n) {
    int best = 0;
    for (int i = 1; i < n; i++) if (v[i] > v[best]) best = i;
    return best;
}

// descending probability, then ascending index: a total order, so the kept set is deterministic
static int cmp_prob_desc(const void *a, const void *b) {
    const struct ProbIndex *x = a, *y = b;
    if (x->prob != y->prob) return x->prob > y->prob ? -1 : 1;
    return x->index - y->index;
}

// Keep the top_k most likely tokens, then the smallest prefix of them whose mass
// reaches top_p; zero the rest and renormalise. probs (n) in place.
static void truncate_distribution(Sampler *s, float *probs) {
    int n = s->vocab_size, m = 0;
    // a token below (1-top_p)/(n-1) can never be in the nucleus: all of them
    // together hold less than 1-top_p, so skip sorting them
    float cutoff = s->top_p < 1.0f ? (1.0f - s->top_p) / (float)(n - 1) : 0.0f;
    for (int i = 0; i < n; i++)
        if (probs[i] >= cutoff && probs[i] > 0.0f) s->order[m++] = (struct ProbIndex){probs[i], i};
    if (m == 0) { // a tiny top_p on a flat distribution: keep the most likely token
        int best = argmax(probs, n);
        s->order[m++] = (struct ProbIndex){probs[best], best};
    }
    qsort(s->order, (size_t)m, sizeof(*s->order), cmp_prob_desc);
    int keep = s->top_k > 0 && s->top_k < m ? s->top_k : m;
    float mass = 0.0f;
    for (int i = 0; i < keep && s->top_p < 1.0f; i++) {
        mass += s->order[i].prob;
        if (mass >= s->top_p) { keep = i + 1; break; }
    }
    mass = 0.0f;
    for (int i = 0; i < keep; i++) mass += s->order[i].prob;
    for (int i = 0; i < n; i++) probs[i] = 0.0f;
    for (int i = 0; i < keep; i++) probs[s->order[i].index] = s->order[i].prob / mass;
}

// THE function from logits to the distribution a token is drawn from. Target
// (p) and draft (q) both go through it, so they can never be processed
// differently. Temperature 0 gives the one-hot argmax: greedy decoding is
// sampling from a one-hot distribution. logits (n) -> probs (n)
static void probs_from_logits(Sampler *s, float *probs, const float *logits) {
    int n = s->vocab_size;
    if (s->temperature == 0.0f) {
        memset(probs, 0, (size_t)n * sizeof(float));
        probs[argmax(logits, n)] = 1.0f;
        return;
    }
    for (int i = 0; i < n; i++) probs[i] = logits[i] / s->temperature;
    softmax(probs, n);
    if (s->top_p < 1.0f || s->top_k > 0) truncate_distribution(s, probs);
}

// Inverse CDF: the first i with coin < probs[0] + ... + probs[i]. If rounding
// leaves the total below the coin, the last token with nonzero mass.
static int sample(const float *probs, int n, float coin) {
    float cdf = 0.0f;
    int last = 0;
    for (int i = 0; i < n; i++) {
        if (probs[i] <= 0.0f) continue;
        cdf += probs[i];
        last = i;
        if (coin < cdf) return i;
    }
    return last;
}

// ----------------------------------------------------------------------------
// Tokenizer: llama2.c's tokenizer.bin, BPE by merge score with byte fallback

typedef struct {
    const char *str;
    int id;
} TokenIndex;

typedef struct {
    char **vocab;         // (vocab_size) NUL-terminated pieces
    float *scores;        // (vocab_size) merge priority: higher merges first
    int vocab_size;
    int max_token_length;
    TokenIndex *sorted;   // (vocab_size) pieces in strcmp order, for lookup
    char *merge_buffer;   // (2 * max_token_length + 2) scratch for pair lookups
    unsigned char byte_pieces[512]; // "\x00\0\x01\0..." the 256 one-byte strings
} Tokenizer;

static int cmp_token_index(const void *a, const void *b) {
    return strcmp(((const TokenIndex *)a)->str, ((const TokenIndex *)b)->str);
}

// Read a whole file (with a NUL after its n bytes); die naming it on any error.
static unsigned char *read_file(const char *path, const char *what, size_t *n_out) {
    FILE *f = fopen(path, "rb");
    if (!f) die("%s: cannot open %s: %s", path, what, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0) die("%s: cannot seek", path);
    long n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) die("%s: cannot tell its size", path);
    unsigned char *buf = xmalloc((size_t)n + 1, path);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) die("%s: read failed", path);
    fclose(f);
    *n_out = (size_t)n;
    return buf;
}

// Walk the (score, len, bytes) records after the 4-byte header; returns how
// many there are, dies naming the first malformed one.
static int count_tokens(const unsigned char *buf, size_t n, int maxlen, const char *path) {
    size_t off = 4;
    int count = 0;
    while (off < n) {
        int32_t len;
        if (n - off < 8) die("%s: token %d: file ends inside its score/length fields", path, count);
        memcpy(&len, buf + off + 4, 4);
        if (len < 0 || len > maxlen)
            die("%s: token %d: length %d outside 0..max_token_length %d", path, count, len, maxlen);
        off += 8;
        if (n - off < (size_t)len) die("%s: token %d: file ends inside its %d bytes", path, count, len);
        off += (size_t)len;
        count++;
    }
    return count;
}

// Check the byte-fallback ids and build the lookup structures.
static void index_tokenizer(Tokenizer *t, const char *path) {
    int vocab_size = t->vocab_size;
    // byte fallback emits id 3 + byte: those ids must be the byte tokens
    for (int b = 0; b < 256; b++) {
        char want[8];
        snprintf(want, sizeof(want), "<0x%02X>", b);
        if (TOKEN_BYTE0 + b >= vocab_size || strcmp(t->vocab[TOKEN_BYTE0 + b], want) != 0)
            die("%s: token id %d must be the byte token %s (ids 3..258 are llama2.c's byte "
                "fallback)", path, TOKEN_BYTE0 + b, want);
        t->byte_pieces[2 * b] = (unsigned char)b;
        t->byte_pieces[2 * b + 1] = '\0';
    }
    t->sorted = xmalloc((size_t)vocab_size * sizeof(TokenIndex), "sorted vocab");
    for (int i = 0; i < vocab_size; i++) t->sorted[i] = (TokenIndex){t->vocab[i], i};
    qsort(t->sorted, (size_t)vocab_size, sizeof(TokenIndex), cmp_token_index);
    t->merge_buffer = xmalloc((size_t)t->max_token_length * 2 + 2, "merge buffer");
}

// Parse a tokenizer file for a model with vocab_size tokens. The file does not
// store its size, so count its tokens and compare.
static void build_tokenizer(Tokenizer *t, const char *path, int vocab_size) {
    size_t n, off = 4;
    unsigned char *buf = read_file(path, "tokenizer (-z FILE)", &n);
    if (n < 4) die("%s: %zu bytes, too short for the max_token_length field", path, n);
    int32_t maxlen;
    memcpy(&maxlen, buf, 4);
    if (maxlen <= 0 || maxlen > 1024)
        die("%s: max_token_length = %d, expected 1..1024 (is this a tokenizer.bin?)", path, maxlen);
    int count = count_tokens(buf, n, maxlen, path);
    if (count != vocab_size)
        die("%s: has %d tokens but the model's vocab_size is %d (hint: use the tokenizer the "
            "model was trained with, -z)", path, count, vocab_size);
    t->vocab = xmalloc((size_t)vocab_size * sizeof(char *), "vocab");
    t->scores = xmalloc((size_t)vocab_size * sizeof(float), "scores");
    for (int i = 0; i < vocab_size; i++) {
        int32_t len;
        memcpy(&t->scores[i], buf + off, 4);
        memcpy(&len, buf + off + 4, 4);
        t->vocab[i] = xmalloc((size_t)len + 1, "token");
        memcpy(t->vocab[i], buf + off + 8, (size_t)len);
        off += 8 + (size_t)len;
    }
    free(buf);
    t->vocab_size = vocab_size;
    t->max_token_length = maxlen;
    index_tokenizer(t, path);
}

static void free_tokenizer(Tokenizer *t) {
    for (int i = 0; i < t->vocab_size; i++) free(t->vocab[i]);
    free(t->vocab); free(t->scores); free(t->sorted); free(t->merge_buffer);
}

// id of the piece str, or -1
static int lookup_token(const Tokenizer *t, const char *str) {
    TokenIndex key = {str, 0};
    const TokenIndex *hit = bsearch(&key, t->sorted, (size_t)t->vocab_size, sizeof(TokenIndex),
                                    cmp_token_index);
    return hit ? hit->id : -1;
}

// The text of `token` following `prev`: a piece right after BOS loses its
// leading space (the dummy prefix encode added); byte tokens become their byte.
static const char *decode_piece(const Tokenizer *t, int prev, int token) {
    if (token >= TOKEN_BYTE0 && token < TOKEN_BYTE0 + 256)
        return (const char *)t->byte_pieces + 2 * (token - TOKEN_BYTE0);
    const char *piece = t->vocab[token];
    if (prev == TOKEN_BOS && piece[0] == ' ') piece++;
    return piece;
}

// Split UTF-8 text into codepoint tokens (byte tokens where the vocab lacks
// the codepoint). Returns the number of ids written to out.
static int encode_codepoints(const Tokenizer *t, int *out, const char *text) {
    char cp[5];
    int n = 0, len = 0;
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if ((*c & 0xC0) != 0x80) len = 0; // a new codepoint starts
        cp[len++] = (char)*c;
        cp[len] = '\0';
        if ((c[1] & 0xC0) == 0x80 && len < 4) continue; // continuation byte follows
        int id = lookup_token(t, cp);
        if (id >= 0) out[n++] = id;
        else for (int i = 0; i < len; i++) out[n++] = TOKEN_BYTE0 + (unsigned char)cp[i];
        len = 0;
    }
    return n;
}

// BPE encode as llama2.c: optional BOS, a dummy-prefix " " before non-empty
// text, codepoints, then repeatedly merge the adjacent pair whose concatenation
// is in the vocab with the highest score. out needs strlen(text) + 3 slots.
static int encode(Tokenizer *t, int *out, const char *text, int bos, int eos) {
    int n = 0;
    if (bos) out[n++] = TOKEN_BOS;
    if (text[0] != '\0') {
        int space = lookup_token(t, " ");
        out[n++] = space >= 0 ? space : TOKEN_BYTE0 + ' ';
    }
    n += encode_codepoints(t, out + n, text);
    for (;;) {
        float best_score = -1e10f;
        int best_id = -1, best_at = -1;
        for (int i = 0; i + 1 < n; i++) {
            snprintf(t->merge_buffer, (size_t)t->max_token_length * 2 + 2, "%s%s",
                     t->vocab[out[i]], t->vocab[out[i + 1]]);
            int id = lookup_token(t, t->merge_buffer);
            if (id >= 0 && t->scores[id] > best_score) {
                best_score = t->scores[id];
                best_id = id;
                best_at = i;
            }
        }
        if (best_at < 0) break;
        out[best_at] = best_id;
        memmove(out + best_at + 1, out + best_at + 2, (size_t)(n - best_at - 2) * sizeof(int));
        n--;
    }
    if (eos) out[n++] = TOKEN_EOS;
    return n;
}

// print a piece, skipping lone unprintable bytes (control codes from byte tokens)
static void print_piece(const char *piece) {
    if (piece[0] == '\0') return;
    if (piece[1] == '\0') {
        unsigned char b = (unsigned char)piece[0];
        if (!(isprint(b) || isspace(b) || b >= 0x80)) return;
    }
    fputs(piece, stdout);
}

// ----------------------------------------------------------------------------
// The speculative step: the seed equations, one function each
//
// Why it is exact (Leviathan et al. 2022, Thm 1 / Appendix A.1): a draft token
// x ~ q is kept with probability min(1, p(x)/q(x)), so it is EMITTED with
// probability q(x) min(1, p(x)/q(x)) = min(q(x), p(x)). It is rejected with
// total probability beta = sum_x (q(x) - min(q(x), p(x))) = sum_x max(0, p(x) - q(x)),
// and then a token is drawn from norm(max(0, p - q)), which adds exactly
// max(0, p(x) - q(x)) to each x. min(q,p) + max(0, p-q) = p(x). The next draft
// position is only examined after an acceptance, and then the context is the
// same one the target would have seen, so the argument repeats position by
// position; when all K drafts pass, p_{K+1} is the target's distribution for
// the next position and a draw from it (the bonus) is a free extra token.

// Accept x with probability min(1, p(x)/q(x)): the test is u < p(x)/q(x).
// q(x) > 0 always, since x was drawn from q.
static float acceptance_ratio(float p_x, float q_x) {
    if (q_x <= 0.0f) return 1.0f; // unreachable for x ~ q; accept rather than divide by 0
    float r = p_x / q_x;
    return r < 1.0f ? r : 1.0f;
}

// The residual distribution norm(max(0, p - q)) a rejected position resamples
// from. p, q (n) -> out (n). Returns the mass before normalising.
//
// Zero residual: sum max(0, p - q) = 0 means p <= q everywhere; both sum to 1,
// so p == q up to rounding. If p == q exactly, every ratio is 1 and no draft is
// ever rejected. A rejection can only happen where rounding left the float p
// summing to S < 1 while q sums to 1: then x is emitted with probability
// min(p(x), q(x)) = p(x) and rejected with probability 1 - S. Drawing the
// replacement from p (normalised) emits x with p(x) + (1 - S) p(x)/S = p(x)/S,
// exactly the normalised target. Any other choice (the argmax, say) biases it.
static float residual_distribution(float *out, const float *p, const float *q, int n) {
    float mass = 0.0f;
    for (int i = 0; i < n; i++) {
        out[i] = p[i] > q[i] ? p[i] - q[i] : 0.0f;
        mass += out[i];
    }
#ifdef SPECDEC_WRONG_RESIDUAL // test/test_spec.c builds this deliberate bug to prove its power
    mass = 0.0f;
#endif
    if (mass <= 0.0f) {
        memcpy(out, p, (size_t)n * sizeof(float));
        return mass;
    }
    for (int i = 0; i < n; i++) out[i] /= mass;
    return mass;
}

// What happened at one draft position, for the statistics and the -v trace.
typedef struct {
    float q, p, u; // q_i(x_i), p_i(x_i), the coin
    int accepted;
} Verdict;

// Verification (Leviathan et al. 2022, Algorithm 1). Given k drafts x (k),
// their draft distributions q (k, n) and the target's p (k+1, n): walk left to
// right, keep x_i while u_i < min(1, p_i(x_i)/q_i(x_i)); at the first rejection
// emit a draw from norm(max(0, p_i - q_i)) and stop; if all k pass, emit a
// bonus draw from p_{k+1}. Writes out[0..j] (j accepted drafts + 1 token) and
// verdicts (k); returns j + 1. residual (n) is scratch.
//
// RNG order: one coin u_i per examined draft (u_1, u_2, ... up to the first
// rejection), then exactly one coin for the replacement or the bonus.
// Greedy decoding is this same code: with one-hot p and q the ratio is 1 when
// the argmaxes agree and 0 otherwise, and the residual is the target's one-hot.
static int accept_reject(int *out, Verdict *verdicts, const int *x, const float *q,
                         const float *p, float *residual, int k, int n, Rng *rng) {
    for (int i = 0; i < k; i++) {
        const float *p_i = p + (size_t)i * n, *q_i = q + (size_t)i * n;
        Verdict *v = &verdicts[i];
        v->p = p_i[x[i]];
        v->q = q_i[x[i]];
        v->u = rng_coin(rng);
        v->accepted = v->u < acceptance_ratio(v->p, v->q);
        if (!v->accepted) {
            residual_distribution(residual, p_i, q_i, n);
            out[i] = sample(residual, n, rng_coin(rng));
            return i + 1;
        }
        out[i] = x[i];
    }
    out[k] = sample(p + (size_t)k * n, n, rng_coin(rng)); // bonus from p_{k+1}
    return k + 1;
}

// Expected tokens per round for acceptance rate a and k drafts (Leviathan et
// al. 2022, Eq. 1): 1 + a + a^2 + ... + a^k = (1 - a^(k+1)) / (1 - a).
static double expected_tokens_per_round(double a, int k) {
    if (a >= 1.0) return k + 1;
    return (1.0 - pow(a, k + 1)) / (1.0 - a);
}

// Predicted walltime speedup over target-only decoding (Leviathan et al. 2022,
// Thm 3.8, with the verify pass costing r target steps instead of 1): a round
// costs k draft steps (c each) plus one verify pass (r), and yields
// (1 - a^(k+1)) / (1 - a) tokens, against 1 token per target step.
static double predicted_speedup(double a, int k, double c, double r) {
    return expected_tokens_per_round(a, k) / (k * c + r);
}

// ----------------------------------------------------------------------------
// The speculative round: draft K, verify K+1 positions in one pass, commit
//
// Both KV caches are indexed by absolute position, so nothing is ever copied
// or rolled back: a rejected position is simply overwritten by the next round.
// With n committed tokens t_0..t_{n-1} at the start of a round:
//
//   position:   ...  n-2   n-1   n    n+1  ...  n+K-1
//   committed:  ...  t    t_last
//   draft runs:            t_last x_1  x_2  ... (x_K never run: nothing needs q_{K+1})
//               -> q_1 ... q_K, x_i ~ q_i
//   target runs (ONE pass, K+1 rows): t_last x_1 ... x_K -> p_1 ... p_{K+1}
//
//   j accepted, j < K: commit x_1..x_j, y ~ norm(max(0, p_{j+1} - q_{j+1}))
//       target cache valid to n+j-1, draft cache valid to n+j-1: both lack only y,
//       which the next round feeds as its first row.
//   j = K: commit x_1..x_K and the bonus b ~ p_{K+1}
//       the draft never ran x_K, so the next round feeds it [x_K, b] as ONE
//       2-row forward and uses the last row for q_1.
//
// Invariant at a round's start: the target's cache holds t_0..t_{n-2}, the
// draft's holds t_0..t_{draft_pos-1} with draft_pos in {n-2, n-1}.

typedef struct {
    long rounds, drafted, accepted;
    long target_forwards, draft_forwards;
    long reached[K_MAX];       // rounds that examined draft position i
    long accepted_at[K_MAX];   // ... and accepted it
    long histogram[K_MAX + 1]; // rounds that accepted j drafts
    long k_used[K_MAX + 1];    // rounds run with each K
    int k_hi;                  // the largest K any round used
    long plain_tokens;         // tokens decoded by the target alone (a context was full)
    int draft_full_at;         // position where the draft's context ran out, or -1
    double draft_seconds;      // drafting: forwards, q, sampling
    double verify_seconds;     // verify passes and their p rows
    double plain_seconds;      // target-alone steps
} SpecStats;

// Auto-K (-k 0) state: running estimates that forget old rounds (see choose_k)
typedef struct {
    double accepted, examined; // decayed counts; a = accepted / examined
    double c;                  // decayed mean of a draft step / target step
    double rho;                // decayed mean of (verify / target step - 1) / K
    double target_step;        // seconds of a 1-row target step (calibrated)
    int last_k;
} AutoK;

typedef struct {
    Transformer *target, *draft;
    Sampler *sampler;
    Rng *rng;
    int k;                  // drafts per round (1..K_MAX), or 0: choose it (auto-K)
    AutoK autok;
    float *q;               // (K_MAX, V) draft distributions of this round, kept for the ratio
    float *p;               // (K_MAX+1, V) target distributions of this round
    float *residual;        // (V) scratch
    int x[K_MAX];           // this round's drafts
    int rows[K_MAX + 1];    // the verify pass input: t_last, x_1..x_K
    Verdict verdicts[K_MAX];
    int draft_pos;          // the draft's cache holds committed tokens 0..draft_pos-1
    SpecStats stats;
    const Tokenizer *trace; // non-NULL: print the -v teaching trace to stderr
} Speculator;

static void build_speculator(Speculator *sp, Transformer *target, Transformer *draft,
                             Sampler *sampler, Rng *rng, int k) {
    size_t V = (size_t)target->config.vocab_size;
    if (draft->config.vocab_size != target->config.vocab_size)
        die("%s: vocab_size %d differs from the target's %d (%s); draft and target must share "
            "one vocabulary", draft->path, draft->config.vocab_size, target->config.vocab_size,
            target->path);
    memset(sp, 0, sizeof(*sp));
    sp->target = target;
    sp->draft = draft;
    sp->sampler = sampler;
    sp->rng = rng;
    sp->k = k;
    sp->q = xmalloc(K_MAX * V * sizeof(float), "draft distributions");
    sp->p = xmalloc((K_MAX + 1) * V * sizeof(float), "target distributions");
    sp->residual = xmalloc(V * sizeof(float), "residual");
    sp->stats.draft_full_at = -1;
}

static void free_speculator(Speculator *sp) {
    free(sp->q); free(sp->p); free(sp->residual);
}

// a piece made safe for one line of the trace: newlines shown as \n, byte
// tokens by their name (<0xC9>) since a lone byte is no printable text
static void trace_piece(const Tokenizer *t, int token) {
    if (token >= TOKEN_BYTE0 && token < TOKEN_BYTE0 + 256 && t->vocab[token][0] == '<') {
        fprintf(stderr, "%s", t->vocab[token]);
        return;
    }
    fputc('"', stderr);
    for (const char *c = decode_piece(t, -1, token); *c; c++) {
        if (*c == '\n') fputs("\\n", stderr);
        else fputc(*c, stderr);
    }
    fputc('"', stderr);
}

// the -v teaching trace of one round
static void print_trace(const Speculator *sp, const int *out, int emitted, int n, int k) {
    const Tokenizer *t = sp->trace;
    fflush(stdout); // the text so far, then the trace on lines of its own
    fprintf(stderr, "\nround %ld at position %d, K=%d\n", sp->stats.rounds, n, k);
    for (int i = 0; i < emitted && i < k; i++) {
        const Verdict *v = &sp->verdicts[i];
        fprintf(stderr, "  draft %d  ", i + 1);
        trace_piece(t, sp->x[i]);
        fprintf(stderr, "  q=%.3f p=%.3f p/q=%.3f u=%.3f  %s\n", v->q, v->p,
                v->q > 0 ? v->p / v->q : 0.0, v->u, v->accepted ? "accept" : "REJECT");
    }
    int last = out[emitted - 1];
    if (emitted <= k) fprintf(stderr, "  -> resample from norm(max(0, p%d - q%d)): ", emitted, emitted);
    else fprintf(stderr, "  -> all %d accepted, bonus from p%d: ", k, k + 1);
    trace_piece(t, last);
    fputc('\n', stderr);
}

// Bring the draft up to date with every committed token but the last, then
// propose x_1..x_k. Leaves q_i in sp->q. tokens (n) are the committed ones.
static void draft_tokens(Speculator *sp, const int *tokens, int n, int k) {
    int V = sp->target->config.vocab_size;
    double t0 = now_seconds();
    for (int i = 0; i < k; i++) {
        float *logits;
        if (i == 0) // catch up: t_last, or [x_K, bonus] after a fully accepted round
            logits = forward_chunked(sp->draft, tokens + sp->draft_pos, n - sp->draft_pos,
                                     sp->draft_pos);
        else
            logits = forward(sp->draft, &sp->x[i - 1], 1, n + i - 1); // x_i sits at n+i-1
        sp->stats.draft_forwards++;
        float *q_i = sp->q + (size_t)i * V;
        probs_from_logits(sp->sampler, q_i, logits);
        sp->x[i] = sample(q_i, V, rng_coin(sp->rng));
    }
    sp->stats.draft_seconds += now_seconds() - t0;
}

// One round with k drafts (1 <= k <= K_MAX). tokens (n committed, room for
// n+k+1); appends the round's tokens and returns how many (1..k+1).
//
// RNG order per round: k coins for the drafts x_1..x_k, then accept_reject's
// coins (u_1.. up to the first rejection, then one for the replacement/bonus).
static int speculative_step(Speculator *sp, int *tokens, int n, int k) {
    int V = sp->target->config.vocab_size;

    // 1. draft: x_i ~ q_i, i = 1..k
    draft_tokens(sp, tokens, n, k);

    // 2. verify: ONE target pass over [t_last, x_1..x_k] at positions n-1..n+k-1
    double t0 = now_seconds();
    sp->rows[0] = tokens[n - 1];
    memcpy(sp->rows + 1, sp->x, (size_t)k * sizeof(int));
    float *logits = forward(sp->target, sp->rows, k + 1, n - 1);
    for (int i = 0; i <= k; i++)
        probs_from_logits(sp->sampler, sp->p + (size_t)i * V, logits + (size_t)i * V);
    sp->stats.verify_seconds += now_seconds() - t0;
    sp->stats.target_forwards++;

    // 3. accept / reject / resample / bonus
    int emitted = accept_reject(tokens + n, sp->verdicts, sp->x, sp->q, sp->p, sp->residual, k,
                                V, sp->rng);

    // 4. bookkeeping: the draft's cache is valid up to the last draft it ran
    // (x_{k-1} at n+k-2) or the last committed token before the new one
    int accepted = emitted - 1;
    sp->draft_pos = n + k - 1 < n + accepted ? n + k - 1 : n + accepted;
    SpecStats *st = &sp->stats;
    st->rounds++;
    st->k_used[k]++;
    if (k > st->k_hi) st->k_hi = k;
    st->drafted += k;
    st->accepted += accepted;
    st->histogram[accepted]++;
    for (int i = 0; i < k && i <= accepted; i++) {
        st->reached[i]++;
        st->accepted_at[i] += i < accepted;
    }
    if (sp->trace) print_trace(sp, tokens + n, emitted, n, k);
    return emitted;
}

// ----------------------------------------------------------------------------
// Auto-K (-k 0): the K that maximises the predicted speedup, re-chosen each round
//
// Leviathan et al. 2022, Thm 3.8 / Cor 3.9: a round of K drafts yields
// (1 - a^(K+1)) / (1 - a) tokens for K c + r(K) target steps, so the best K is
// the argmax of predicted_speedup over K. The verify pass is modelled as
// r(K) = 1 + rho K: one pass over the weights plus a compute cost per row.
// a, c and rho are running estimates in which each round's weight decays by
// AUTO_DECAY per round (a window of ~10 rounds), so K follows a as it drifts.
#define AUTO_DECAY 0.9

// argmax over K = 1..k_max of the predicted speedup; ties go to the smaller K
static int choose_k(double a, double c, double rho, int k_max) {
    int best = 1;
    double best_speedup = -1;
    for (int k = 1; k <= k_max; k++) {
        double s = predicted_speedup(a, k, c, 1.0 + rho * k);
        if (s > best_speedup * (1 + 1e-9)) { best_speedup = s; best = k; }
    }
    return best;
}

// median of 3 timings of a forward over `rows` tokens at position 0 (scratch:
// generation overwrites those cache entries before it reads them)
static double time_forward(Transformer *tr, int rows) {
    int tokens[MAX_ROWS] = {0};
    double t[3];
    for (int i = 0; i < 3; i++) {
        double t0 = now_seconds();
        forward(tr, tokens, rows, 0);
        t[i] = now_seconds() - t0;
    }
    double lo = fmin(t[0], fmin(t[1], t[2])), hi = fmax(t[0], fmax(t[1], t[2]));
    return t[0] + t[1] + t[2] - lo - hi;
}

// Starting estimates: c and rho from timed forwards, a = 1/2 from a prior
// of one accepted and one rejected draft.
static void start_auto_k(AutoK *ak, Transformer *target, Transformer *draft) {
    int rows = target->config.seq_len < MAX_ROWS ? target->config.seq_len : MAX_ROWS;
    ak->target_step = time_forward(target, 1);
    ak->c = time_forward(draft, 1) / ak->target_step;
    ak->rho = rows > 1 ? (time_forward(target, rows) / ak->target_step - 1) / (rows - 1) : 0;
    if (ak->rho < 0) ak->rho = 0;
    ak->accepted = 1;
    ak->examined = 2;
}

// Fold one round in: accepted of examined drafts, its draft and verify seconds.
static void update_auto_k(AutoK *ak, int k, int accepted, int examined, double draft_s,
                          double verify_s) {
    double d = AUTO_DECAY, rho = (verify_s / ak->target_step - 1) / k;
    ak->accepted = d * ak->accepted + accepted;
    ak->examined = d * ak->examined + examined;
    ak->c = d * ak->c + (1 - d) * draft_s / k / ak->target_step;
    ak->rho = d * ak->rho + (1 - d) * (rho > 0 ? rho : 0);
}

// ----------------------------------------------------------------------------
// Generation loop: prompt, then plain or speculative decoding, streamed out

typedef struct {
    const Tokenizer *tok;
    int quiet;        // -q: no text on stdout
    int *generated;   // (max_new) the generated ids
    int n_generated, max_new;
    int prev;         // last token printed, for the leading-space rule
    int done;         // BOS/EOS seen or max_new reached
} Output;

// Print the prompt (tokens[1..n) after BOS) as llama2.c's run does.
static void start_output(Output *o, const int *tokens, int n) {
    for (int i = 1; i < n; i++)
        if (!o->quiet) print_piece(decode_piece(o->tok, tokens[i - 1], tokens[i]));
    o->prev = tokens[n - 1];
    o->done = o->max_new == 0;
    if (!o->quiet) fflush(stdout);
}

// Take one new token: stop at BOS/EOS (not printed) or after max_new tokens.
static void emit(Output *o, int token) {
    if (o->done) return;
    if (token == TOKEN_BOS || token == TOKEN_EOS) { o->done = 1; return; }
    o->generated[o->n_generated++] = token;
    if (!o->quiet) {
        print_piece(decode_piece(o->tok, o->prev, token));
        fflush(stdout);
    }
    o->prev = token;
    if (o->n_generated >= o->max_new) o->done = 1;
}

// One plain decoding step: the next token after tokens[0..n) from tr alone
// (whose cache holds tokens 0..n-2). RNG: one coin. Returns n + 1.
static int plain_step(Transformer *tr, Sampler *s, Rng *rng, float *probs, int *tokens, int n,
                      Output *o) {
    float *logits = forward(tr, &tokens[n - 1], 1, n - 1);
    probs_from_logits(s, probs, logits);
    tokens[n] = sample(probs, tr->config.vocab_size, rng_coin(rng));
    emit(o, tokens[n]);
    return n + 1;
}

// Plain decoding with one model from n committed tokens (the prompt); tokens
// has room for seq_len. Returns the number of committed tokens.
static int generate_plain(Transformer *tr, Sampler *s, Rng *rng, float *probs, int *tokens, int n,
                          Output *o) {
    if (n > 1) forward_chunked(tr, tokens, n - 1, 0); // prefill all but the last prompt token
    while (!o->done && n < tr->config.seq_len) n = plain_step(tr, s, rng, probs, tokens, n, o);
    return n;
}

// Speculative decoding from n committed tokens (the prompt); tokens has room
// for the target's seq_len. Rounds shrink K near the end of either context;
// once the draft's context is full the target decodes alone.
static int generate_spec(Speculator *sp, float *probs, int *tokens, int n, Output *o) {
    int St = sp->target->config.seq_len, Sd = sp->draft->config.seq_len;
    AutoK *ak = &sp->autok;
    if (sp->k == 0) start_auto_k(ak, sp->target, sp->draft);
    if (n > 1) forward_chunked(sp->target, tokens, n - 1, 0);
    if (n > 1 && n <= Sd) forward_chunked(sp->draft, tokens, n - 1, 0);
    sp->draft_pos = n - 1;
    while (!o->done && n < St) {
        int k = sp->k;
        if (k == 0) k = ak->last_k = choose_k(ak->accepted / ak->examined, ak->c, ak->rho, K_MAX);
        // target verifies positions n-1..n+k-1 and may commit up to n+k: n+k < St;
        // the draft runs positions up to n+k-2: n+k-2 < Sd
        if (k > St - 1 - n) k = St - 1 - n;
        if (k > Sd + 1 - n) k = Sd + 1 - n;
        if (k >= 1) {
            double d0 = sp->stats.draft_seconds, v0 = sp->stats.verify_seconds;
            int m = speculative_step(sp, tokens, n, k);
            if (sp->k == 0)
                update_auto_k(ak, k, m - 1, m <= k ? m : k, sp->stats.draft_seconds - d0,
                              sp->stats.verify_seconds - v0);
            for (int i = 0; i < m; i++) emit(o, tokens[n + i]);
            n += m;
            continue;
        }
        if (Sd + 1 - n < 1 && sp->stats.draft_full_at < 0) sp->stats.draft_full_at = n;
        double t0 = now_seconds();
        n = plain_step(sp->target, sp->sampler, sp->rng, probs, tokens, n, o);
        sp->stats.plain_seconds += now_seconds() - t0;
        sp->stats.target_forwards++;
        sp->stats.plain_tokens++;
    }
    return n;
}

// ----------------------------------------------------------------------------
// Statistics: the measurement beside the seeds' theory, on stderr and in JSON

typedef struct {
    const char *mode;
    int k;
    float temperature, top_p;
    int top_k;
    unsigned long long seed;
    int prompt_tokens;
    const Output *out;
    double seconds;          // generation only (prefill + decoding), not loading
    const Speculator *sp;    // spec mode only
    double target_step;      // spec: seconds of one target-alone step (calibrated)
} Report;

// Seconds of one target-alone decoding step (1-row forward + its distribution)
// at position pos: the median of 5, measured after generation so it is not
// counted in it. The cache entry at pos is overwritten, which is harmless then.
static double time_target_step(Transformer *tr, Sampler *s, float *probs, int token, int pos) {
    double t[5];
    for (int i = 0; i < 5; i++) {
        double t0 = now_seconds();
        probs_from_logits(s, probs, forward(tr, &token, 1, pos));
        t[i] = now_seconds() - t0;
    }
    for (int i = 1; i < 5; i++) // insertion sort, 5 values
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) { double x = t[j]; t[j] = t[j - 1]; t[j - 1] = x; }
    return t[2];
}

// The derived numbers of a spec run: a, c, r and the predictions.
//   acceptance_rate = accepted / drafted (every drafted token counts)
//   a = accepted / examined: the chance a draft passes once it is examined
//       (drafts after a rejection are never examined); the theory's alpha
typedef struct {
    int k;                  // K of the formulas: -k, or the one auto-K used most
    double acceptance_rate, a, c, r;
    double tokens_per_round, expected_per_round; // measured, and (1-a^(K+1))/(1-a)
    double predicted, measured, tokens_per_forward;
} SpecSummary;

static double per_position(const SpecStats *st, int i) {
    return st->reached[i] ? (double)st->accepted_at[i] / (double)st->reached[i] : 0.0;
}

static SpecSummary summarize(const Report *rp) {
    const SpecStats *st = &rp->sp->stats;
    SpecSummary m = {0};
    long examined = 0;
    for (int i = 0; i < K_MAX; i++) examined += st->reached[i];
    m.k = rp->k;
    for (int k = 1; k <= K_MAX && rp->k == 0; k++)
        if (st->k_used[k] > st->k_used[m.k]) m.k = k;
    if (m.k == 0) m.k = 1;
    m.acceptance_rate = st->drafted ? (double)st->accepted / (double)st->drafted : 0;
    m.a = examined ? (double)st->accepted / (double)examined : 0;
    if (st->draft_forwards && rp->target_step > 0)
        m.c = st->draft_seconds / (double)st->draft_forwards / rp->target_step;
    if (st->rounds && rp->target_step > 0)
        m.r = st->verify_seconds / (double)st->rounds / rp->target_step;
    if (st->rounds) m.tokens_per_round = (double)(st->accepted + st->rounds) / (double)st->rounds;
    m.expected_per_round = expected_tokens_per_round(m.a, m.k);
    m.predicted = m.r > 0 ? predicted_speedup(m.a, m.k, m.c, m.r) : 0;
    m.measured = rp->seconds > 0 ? rp->out->n_generated / rp->seconds * rp->target_step : 0;
    if (st->target_forwards)
        m.tokens_per_forward = (double)(st->accepted + st->rounds + st->plain_tokens) /
                               (double)st->target_forwards;
    return m;
}

static void print_auto_k(const Speculator *sp) {
    const AutoK *ak = &sp->autok;
    fprintf(stderr, "  auto-K: rounds per K =");
    for (int k = 1; k <= sp->stats.k_hi; k++) fprintf(stderr, " %ld", sp->stats.k_used[k]);
    double a = ak->accepted / ak->examined;
    fprintf(stderr, "\n  auto-K: last K = %d, the argmax of the predicted speedup %.2fx at the "
            "running a = %.3f, c = %.3f, r(K) = 1 + %.3f K\n", ak->last_k,
            predicted_speedup(a, ak->last_k, ak->c, 1 + ak->rho * ak->last_k), a, ak->c, ak->rho);
}

static void print_report(const Report *rp) {
    const Output *o = rp->out;
    fprintf(stderr, "%s: %d tokens in %.3f s, %.1f tok/s\n", rp->mode, o->n_generated, rp->seconds,
            rp->seconds > 0 ? o->n_generated / rp->seconds : 0.0);
    if (!rp->sp) return;
    const SpecStats *st = &rp->sp->stats;
    SpecSummary m = summarize(rp);
    fprintf(stderr, "  K=%d%s: %ld rounds, %ld target forwards, %ld draft forwards\n", m.k,
            rp->k ? "" : " (auto, most used)", st->rounds, st->target_forwards, st->draft_forwards);
    fprintf(stderr, "  accepted %ld of %ld drafts (%.3f); a = %.3f per examined draft\n",
            st->accepted, st->drafted, m.acceptance_rate, m.a);
    fprintf(stderr, "  tokens per round %.2f, theory (1-a^(K+1))/(1-a) = %.2f; tokens per target "
            "forward %.2f\n", m.tokens_per_round, m.expected_per_round, m.tokens_per_forward);
    fprintf(stderr, "  per-position acceptance:");
    for (int i = 0; i < st->k_hi; i++) fprintf(stderr, " %.3f", per_position(st, i));
    fprintf(stderr, "\n  rounds accepting 0..K drafts:");
    for (int i = 0; i <= st->k_hi; i++) fprintf(stderr, " %ld", st->histogram[i]);
    fprintf(stderr, "\n  time: draft %.3f s, verify %.3f s, target alone %.3f s, other %.3f s\n",
            st->draft_seconds, st->verify_seconds, st->plain_seconds,
            rp->seconds - st->draft_seconds - st->verify_seconds - st->plain_seconds);
    fprintf(stderr, "  costs per target step (%.3f ms): c = %.3f, r = %.3f; speedup predicted "
            "%.2fx, measured %.2fx\n", 1e3 * rp->target_step, m.c, m.r, m.predicted, m.measured);
    if (rp->k == 0) print_auto_k(rp->sp);
    if (st->draft_full_at >= 0)
        fprintf(stderr, "  the draft's context (seq_len %d) filled at position %d: %ld tokens "
                "decoded by the target alone\n", rp->sp->draft->config.seq_len, st->draft_full_at,
                st->plain_tokens);
}

static void json_longs(FILE *f, const char *key, const long *v, int n) {
    fprintf(f, ", \"%s\": [", key);
    for (int i = 0; i < n; i++) fprintf(f, "%s%ld", i ? ", " : "", v[i]);
    fputc(']', f);
}

static void write_json_spec(FILE *f, const Report *rp) {
    const SpecStats *st = &rp->sp->stats;
    SpecSummary m = summarize(rp);
    fprintf(f, ", \"k\": %d, \"auto_k\": %s, \"target_forwards\": %ld, \"draft_forwards\": %ld, "
            "\"drafted\": %ld, \"accepted\": %ld, \"acceptance_rate\": %.6f, \"alpha\": %.6f, "
            "\"tokens_per_target_forward\": %.6f, \"tokens_per_round\": %.6f",
            m.k, rp->k ? "false" : "true", st->target_forwards, st->draft_forwards, st->drafted,
            st->accepted, m.acceptance_rate, m.a, m.tokens_per_forward, m.tokens_per_round);
    fprintf(f, ", \"per_position_acceptance\": [");
    for (int i = 0; i < st->k_hi; i++) fprintf(f, "%s%.6f", i ? ", " : "", per_position(st, i));
    fputc(']', f);
    json_longs(f, "accepted_histogram", st->histogram, st->k_hi + 1);
    json_longs(f, "rounds_per_k", st->k_used + 1, K_MAX);
    fprintf(f, ", \"rounds\": %ld, \"draft_seconds\": %.6f, \"verify_seconds\": %.6f, "
            "\"plain_target_tokens\": %ld, \"draft_context_full_at\": %d, "
            "\"target_step_seconds\": %.6f, \"c\": %.6f, \"r\": %.6f, "
            "\"expected_tokens_per_round\": %.6f, \"predicted_speedup\": %.6f, "
            "\"measured_speedup\": %.6f", st->rounds, st->draft_seconds, st->verify_seconds,
            st->plain_tokens, st->draft_full_at, rp->target_step, m.c, m.r,
            m.expected_per_round, m.predicted, m.measured);
}

static void write_json(const char *path, const Report *rp) {
    FILE *f = fopen(path, "w");
    if (!f) die("-j %s: cannot write: %s", path, strerror(errno));
    const Output *o = rp->out;
    fprintf(f, "{\"mode\": \"%s\", \"seed\": %llu, \"temperature\": %g, \"top_p\": %g, "
            "\"top_k\": %d, \"prompt_tokens\": %d, \"generated_tokens\": %d, \"tokens\": [",
            rp->mode, rp->seed, rp->temperature, rp->top_p, rp->top_k, rp->prompt_tokens,
            o->n_generated);
    for (int i = 0; i < o->n_generated; i++) fprintf(f, "%s%d", i ? ", " : "", o->generated[i]);
    fprintf(f, "], \"seconds\": %.6f, \"tokens_per_second\": %.3f", rp->seconds,
            rp->seconds > 0 ? o->n_generated / rp->seconds : 0.0);
    if (rp->sp) write_json_spec(f, rp);
    fprintf(f, "}\n");
    if (fclose(f) != 0) die("-j %s: write failed", path);
}

// ----------------------------------------------------------------------------
// Command line

typedef struct {
    const char *target_path, *draft_path, *tokenizer_path, *mode, *prompt, *json_path;
    int n_new, k, top_k, quiet, verbose;
    float temperature, top_p;
    unsigned long long seed;
} Options;

static void usage(void) {
    printf(
            "usage: specdec [target.bin] [options]\n"
            "  -d FILE   draft checkpoint (default weights/draft.bin)\n"
            "  -z FILE   tokenizer (default tokenizer.bin)\n"
            "  -m MODE   spec | target | draft (default spec)\n"
            "  -i TEXT   prompt (default \"\")\n"
            "  -n N      new tokens, >= 0 (default 256)\n"
            "  -k K      drafts per round, 1..%d; 0 chooses K as it goes (default 4)\n"
            "  -t T      temperature, >= 0; 0 is greedy (default 1.0)\n"
            "  -p P      top-p in (0, 1]; 1 is off (default 1.0)\n"
            "  --top-k N keep the N most likely tokens; 0 is off (default 0)\n"
            "  -s SEED   random seed (default 42)\n"
            "  -j FILE   write statistics as one JSON object\n"
            "  -q        no text on stdout     -v  teaching trace of every round on stderr\n",
            K_MAX);
}

static void bad_flag(const char *flag, const char *value, const char *expected) {
    die("%s %s: expected %s (see specdec -h)", flag, value, expected);
}

static long parse_long(const char *flag, const char *v, long lo, long hi, const char *expected) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end != '\0' || errno || x < lo || x > hi) bad_flag(flag, v, expected);
    return x;
}

static float parse_float(const char *flag, const char *v, float lo, float hi, const char *expected) {
    char *end;
    errno = 0;
    float x = strtof(v, &end);
    if (end == v || *end != '\0' || errno || !isfinite(x) || x < lo || x > hi)
        bad_flag(flag, v, expected);
    return x;
}

static void parse_options(Options *o, int argc, char **argv) {
    *o = (Options){"weights/target.bin", "weights/draft.bin", "tokenizer.bin", "spec", "", NULL,
                   256, 4, 0, 0, 0, 1.0f, 1.0f, 42};
    int i = 1;
    if (argc > 1 && argv[1][0] != '-') o->target_path = argv[i++];
    for (; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "-q")) { o->quiet = 1; continue; }
        if (!strcmp(f, "-v")) { o->verbose = 1; continue; }
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) { usage(); exit(EXIT_SUCCESS); }
        int known = strlen(f) == 2 && strchr("dzminktpsj", f[1]) && f[0] == '-';
        if (!known && strcmp(f, "--top-k")) die("unknown flag %s (see specdec -h)", f);
        if (i + 1 >= argc) bad_flag(f, "(missing)", "a value after the flag");
        const char *v = argv[++i];
        if (!strcmp(f, "--top-k")) o->top_k = (int)parse_long(f, v, 0, 1 << 24, "an integer >= 0");
        else switch (f[1]) {
            case 'd': o->draft_path = v; break;
            case 'z': o->tokenizer_path = v; break;
            case 'i': o->prompt = v; break;
            case 'j': o->json_path = v; break;
            case 'm':
                if (strcmp(v, "spec") && strcmp(v, "target") && strcmp(v, "draft"))
                    bad_flag(f, v, "a mode: spec, target or draft");
                o->mode = v;
                break;
            case 'n': o->n_new = (int)parse_long(f, v, 0, 1 << 24, "an integer >= 0"); break;
            case 'k': o->k = (int)parse_long(f, v, 0, K_MAX, "an integer in 0..16 (0: auto, 16: K_MAX)"); break;
            case 't': o->temperature = parse_float(f, v, 0.0f, 1e6f, "a number >= 0"); break;
            case 'p': o->top_p = parse_float(f, v, FLT_MIN, 1.0f, "a number in (0, 1]"); break;
            case 's': o->seed = (unsigned long long)parse_long(f, v, 0, LONG_MAX, "an integer >= 0"); break;
        }
    }
}

// Load what the mode needs: the decoding model (the target, or the draft alone
// for -m draft) and, for spec, the draft; returns the decoding model.
static Transformer *load_models(Transformer *target, Transformer *draft, const Options *o) {
    if (!strcmp(o->mode, "draft")) {
        build_transformer(draft, o->draft_path, MAX_ROWS);
        return draft;
    }
    build_transformer(target, o->target_path, MAX_ROWS);
    if (!strcmp(o->mode, "spec")) build_transformer(draft, o->draft_path, MAX_ROWS);
    return target;
}

// BOS then the prompt's tokens into tokens (room for seq_len); returns the count
static int encode_prompt(Tokenizer *tok, int *tokens, const char *prompt, const Transformer *tr) {
    int *buf = xmalloc((strlen(prompt) + 3) * sizeof(int), "prompt tokens");
    int n = encode(tok, buf, prompt, 1, 0);
    if (n > tr->config.seq_len)
        die("-i: the prompt is %d tokens but %s has seq_len %d; shorten the prompt", n, tr->path,
            tr->config.seq_len);
    memcpy(tokens, buf, (size_t)n * sizeof(int));
    free(buf);
    return n;
}

#ifndef TESTING
int main(int argc, char **argv) {
    Options opt;
    parse_options(&opt, argc, argv);
    int spec = !strcmp(opt.mode, "spec");
    Transformer target, draft;
    Transformer *model = load_models(&target, &draft, &opt);
    int V = model->config.vocab_size;
    Tokenizer tok;
    build_tokenizer(&tok, opt.tokenizer_path, V);
    Sampler sampler;
    build_sampler(&sampler, V, opt.temperature, opt.top_p, opt.top_k);
    Rng rng;
    rng_seed(&rng, opt.seed);
    Speculator sp;
    if (spec) build_speculator(&sp, &target, &draft, &sampler, &rng, opt.k);
    if (spec && opt.verbose) sp.trace = &tok;
    int *tokens = xmalloc((size_t)model->config.seq_len * sizeof(int), "tokens");
    float *probs = xmalloc((size_t)V * sizeof(float), "probs");
    int n = encode_prompt(&tok, tokens, opt.prompt, model);
    Output out = {&tok, opt.quiet, xmalloc((size_t)opt.n_new * sizeof(int) + 1, "output"), 0,
                  opt.n_new, 0, 0};
    start_output(&out, tokens, n);

    // generate; the clock covers prefill and decoding, not loading
    Report rp = {opt.mode, opt.k, opt.temperature, opt.top_p, opt.top_k, opt.seed, n, &out, 0,
                 NULL, 0};
    double t0 = now_seconds();
    if (spec) {
        n = generate_spec(&sp, probs, tokens, n, &out);
        rp.seconds = now_seconds() - t0;
        rp.sp = &sp;
        rp.target_step = time_target_step(&target, &sampler, probs, tokens[n - 1], n - 1);
    } else {
        n = generate_plain(model, &sampler, &rng, probs, tokens, n, &out);
        rp.seconds = now_seconds() - t0;
    }
    if (!opt.quiet) printf("\n");
    fflush(stdout);
    print_report(&rp);
    if (opt.json_path) write_json(opt.json_path, &rp);

    if (spec) { free_speculator(&sp); free_transformer(&draft); }
    free(probs); free(out.generated); free(tokens);
    free_sampler(&sampler);
    free_tokenizer(&tok);
    free_transformer(model);
    return 0;
}
#endif
