// specdec.c - speculative decoding in one C file.
//
// THE IDEA. A small DRAFT model proposes K tokens, one at a time. The large
// TARGET model then scores all K+1 positions in ONE batched forward pass, which
// costs about as much as scoring one: a decoder step on a CPU is bound by
// reading the weights, and a (K+1)-row pass reads them once and multiplies each
// into K+1 rows while it sits in a register. Exact rejection sampling
// (Leviathan, Kalman, Matias 2022, arXiv 2211.17192; Chen et al. 2023, arXiv
// 2302.01318) keeps what the draft got right and repairs the first thing it got
// wrong, so the output is distributed EXACTLY as the target's; at temperature 0
// it is the target's greedy output, bit for bit.
//
// NOTATION (careful: the papers and explainers do not agree). p is the TARGET's
// distribution, q is the DRAFT's; nowhere in this file do p and q mean anything
// else. K: drafts per round. x_i ~ q_i: the i-th proposal. A position is a
// token's index in the whole sequence, prompt included. a: the chance that an
// examined proposal is accepted. c, r: a draft step and a (K+1)-row verify
// pass, in units of one target step.
//
// ONE ROUND (Leviathan et al. 2022, Algorithm 1), from n committed tokens:
//   1. draft:  x_i ~ q_i for positions n .. n+K-1 (the draft runs K steps)
//   2. verify: ONE target pass over [t_{n-1}, x_1 .. x_K] -> p_1 .. p_{K+1}
//   3. decide: keep x_i while u_i < min(1, p_i(x_i) / q_i(x_i)); at the first
//      rejection draw from norm(max(0, p_i - q_i)) and stop; if all K pass,
//      the draft proposes position n+K too, decided the same way against
//      p_{K+1}. Algorithm 1 draws that "bonus" token from p_{K+1} instead; one
//      rule for every position makes the text the same for every K, at the cost
//      of one more draft step in a round whose K drafts all pass.
//   4. commit 1 .. K+1 tokens; both KV caches are indexed by position, so a
//      rejected position is simply overwritten next round
//
// HOW TO READ. Part I is the chain, a complete program, its sections in the
// order of the CONTENTS below. Part II adds the extensions, each built on
// Part I: drafters without a second model (prompt lookup, Medusa heads, EAGLE
// features) and draft trees. The implementations follow as appendices A-I.
// Every result is defined by a reduction order (Appendix C), so every build
// gives the same bits; docs/PORTING.md gives every rule a port needs.
//
// CONTENTS (line numbers; test/cli.sh checks them)
// Part I. The chain
//   128-188   The data
//   191-242   The kernel contract
//   245-417   Forward
//   420-507   Sampler
//   510-575   The speculative step
//   578-624   Drafters
//   627-733   The speculative round
//   736-812   Generation
//   815-930   main
// Part II. The extensions
//   933-1071  Drafters without a second model
//  1074-1078  Lenience
//  1081-1375  Tree speculation
// Appendices
//  1378-1553  Appendix A. Errors and memory
//  1556-2060  Appendix B. Loading
//  2063-2722  Appendix C. Math kernels
//  2725-2981  Appendix D. Threads
//  2984-3127  Appendix E. Tokenizer
//  3130-3206  Appendix F. Auto-K (-k 0)
//  3209-3547  Appendix G. Statistics
//  3550-3595  Appendix H. The text on stdout
//  3598-3900  Appendix I. Command line
//
// Build: cc -std=c11 -O3 -mavx2 -mfma -ffp-contract=off -pthread specdec.c -lm
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE // madvise's MADV_HUGEPAGE (Linux); guarded where used
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
// The build's SIMD (Appendix C holds each one's kernels; all give the same bits)
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define HAVE_AVX2 1
#else
#define HAVE_AVX2 0
#endif
#if HAVE_AVX2 && defined(__AVX512F__)
#define HAVE_AVX512 1 // 16-lane matmul tiles (a panel is one register); the same bits
#else
#define HAVE_AVX512 0
#endif
#if HAVE_AVX512 && defined(__AVX512VNNI__)
#define HAVE_VNNI 1 // int8 dot products for int8 models; the same bits
#else
#define HAVE_VNNI 0
#endif
#if !HAVE_AVX2 && defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define HAVE_NEON 1 // ARM64: 4-lane tiles of the same chains (int8: sdot where built for it); the same bits
#else
#define HAVE_NEON 0
#endif
// Positions per block of the key cache and outputs per group of the attention kernels: 16 with
// AVX-512 (one register), else 8 (Appendix C); only the layout changes, no score's chain.
#define LANES (HAVE_AVX512 ? 16 : 8)

#include "model.h"

#if defined(__GNUC__)
#define UNUSED_OK __attribute__((unused)) // helpers only the tests call
#else
#define UNUSED_OK
#endif

// The longest draft run K and the rows of its verify pass: a round's buffers are sized for them
#define K_MAX 16
#define MAX_ROWS (K_MAX + 1)
#define MAX_THREADS 64

// ----------------------------------------------------------------------------
// The data: a transformer (config and weights as in model.h, packed matrices,
// the run state), its thread pool, the tokenizer

#define PANEL 16 // output rows per panel of a packed matrix: 16 floats, one 64-byte line

typedef struct ThreadPool ThreadPool;
typedef void (*Job)(void *arg, int tid, int n_threads);

// A weight matrix W (d, n), repacked at load for the matmul kernel: panel i holds rows 16i..16i+15
// k-major, w[(i*n + k)*16 + j] = W[16i + j][k], so a step along k reads a line of 16 outputs'
// weights and a matmul streams W once. Rows past d are zero. No result depends on it (Appendix C).
typedef struct {
    float *w;     // (n_panels, n, PANEL)
    int8_t *w8;   // or, in an int8 model, W in groups of gs steps with their scales (q8_group_at)
    int gs;       // 0: float
    int d, n;     // the logical W (d, n)
    int n_panels; // ceil(d / PANEL)
    int streamed; // 1: its model outgrows the caches, so a one-row matmul reads one panel at a time
} Matrix;

typedef struct {
    Matrix qkv; // [wq; wk; wv] (dim + 2 kv_dim, dim): q, k and v in one pass
    Matrix wo;  // (dim, dim)
    Matrix w13; // w1 and w3 (hidden, dim) each, panels interleaved (w1 panel 0, w3 panel 0, w1 panel 1, ...)
                // so whoever computes a panel pair can apply SwiGLU to it at once
    Matrix w2;  // (dim, hidden)
} Layer;

// Activations for up to max_rows consecutive positions, allocated once.
typedef struct {
    float *x;           // (T, dim) residual stream
    float *xn;          // (threads, T, dim) rmsnorm(x): every thread keeps its own copy
    float *qkv;         // (T, qkv_stride = dim + 2 kv_dim) each row's query | key | value
    float *xb;          // (T, dim) attention output
    float *xb2;         // (T, dim) output of wo or w2, before the residual add
    float *h13;         // (T, h13_stride = w13.d) w1 and w3 outputs, 16-column blocks interleaved
    float *hb;          // (T, hidden) silu(w1 x) * (w3 x)
    float *att;         // (T, n_heads, seq_pad) attention scores, then exp(score - max)
    float *logits;      // (T, vocab) classifier output
    float *key_cache;   // (L, n_kv_heads, seq_pad/LANES, hs, LANES): LANES positions side by side
    float *value_cache; // (L, n_kv_heads, seq_len, hs)
    int qkv_stride, h13_stride, seq_pad;
} RunState;

typedef struct {
    Config config;              // vocab_size is |vocab_size|; seq_len the positions this run reaches (Appendix B)
    TransformerWeights weights; // the norms and RoPE tables it reads (model.h's pointers)
    Layer *layers;              // (n_layers) the packed matrices
    Matrix wcls;                // the classifier (vocab, dim), packed
    Matrix embedding;           // token_embedding, packed the same way (a copy of wcls when shared)
    int gs;                     // 0: float; else an int8 model (version 2) in groups of gs
    int shared_classifier;      // 1: wcls is token_embedding
    RunState state;
    int max_rows;               // rows one forward() may take
    ThreadPool *pool;           // NULL: one thread
    int n_threads;              // threads a forward() uses (<= the pool's)
    const char *path;
    void *packed, *tables;      // what loading allocated: the matrices, the norms and RoPE tables
} Transformer;

typedef struct Tokenizer Tokenizer; // llama2.c's tokenizer.bin, BPE with byte fallback (Appendix E)

// ----------------------------------------------------------------------------
// The kernel contract: what the method calls, implemented in the appendices
//
// Every number is defined by a REDUCTION ORDER (Appendix C), not by the code that computes it: a
// matmul output or an attention score is ONE chain of fused multiply-adds over k = 0, 1, ..., n-1;
// RMSNorm's and softmax's sums take 8 lanes combined in a fixed order; exp is exp_canonical. So the
// AVX-512, AVX2, NEON and plain C paths, any number of rows and any number of threads give the same
// bits, and a (K+1)-row verify pass equals K+1 one-row steps.

// W (d,n) @ x (T,n) -> out (T,d): output panels [i0, i1) of m (16 rows each); an int8
// model's W and x are int8 groups, summed exactly within a group (Appendix C, int8 matmul)
static void matmul_panels(float *out, const float *x, int T, const Matrix *m, int i0, int i1);
// row j of m (d, n) -> out (n): its floats, or int8 values times their groups' scales (Appendix B)
static void matrix_row(float *out, const Matrix *m, int j);
// silu(v) = v * (1 / (1 + exp(-v))), exp by a fixed polynomial (Appendix C)
static float silu(float v);
// x (T,n), weight (n) -> out (T,n): s = 1 / sqrtf(dot(x, x) / n + 1e-5), out = weight * (s * x),
// each product rounded in that order (dot: the 8-lane sum)
static void rmsnorm(float *out, const float *x, const float *weight, int T, int n);
// v (n_heads*hs) in place: each pair (v[2i], v[2i+1]) rotated by the position's angle
static void rope(float *v, const float *cos_row, const float *sin_row, int n_heads, int hs);
// h1, h3 (n) -> out (n) = silu(h1) * h3, silu as above
static void swiglu(float *out, const float *h1, const float *h3, int n);
// query (Q <= 6) pointers to (hs), kc (n_blocks, hs, LANES) -> s (Q) pointers to (LANES n_blocks):
// s[i][t] = query[i] . key_t
static void attention_scores(float *const *s, const float *const *query, int Q, const float *kc, int n_blocks, int hs);
// e (Q <= 6) pointers to (n_pos), v (n_pos, hs) -> out (Q) pointers to (hs): sum_t e[i][t] v_t
static void attention_values(float *const *out, const float *const *e, int Q, const float *v, int n_pos, int hs);
// x (n) in place: x[i] = exp(x[i] - max); returns their sum
static float exp_and_sum(float *x, int n, float max);
// the largest of x (n)
static float max_of(const float *x, int n);
typedef struct Sampler Sampler;
typedef struct { float prob; int index; } ProbIndex;
// probs (n) in place: all but the top_k most likely and the top_p nucleus zeroed, the rest renormalised
static void truncate_distribution(Sampler *s, float *probs);

// Threads (Appendix D): run job(arg, tid, n) for tid = 0..n-1, the caller as 0 (on one
// thread while jobs keep stalling); threads meet at barriers; share splits n items by thread
static void pool_run(ThreadPool *pool, int n, Job job, void *arg);
static void pool_barrier(ThreadPool *pool, int tid, int n);
static void share(int *lo, int *hi, int n, int tid, int nth);
static void prefetch_shared(const float *x, size_t n, int nth);

// Errors and memory (Appendix A): die() prints one message, frees everything, exits 1;
// every allocation is owned by one list: the blocks allocated since a mark go in one call
static void die(const char *fmt, ...);
static void die_logits(const Transformer *tr, int pos, float temperature); // not finite: die naming pos
static void *xmalloc(size_t n, const char *what);
static void xfree(void *block);
static void *owned_mark(void);
static void release_since(void *mark);
static double now_seconds(void);

// ----------------------------------------------------------------------------
// Forward: n_rows consecutive tokens from position pos, in ONE pass

// A pass: T rows, row i at position pos + i. attention is what a pass runs for
// layer l's kv head g over its rows: attention_head (Part II's trees bring their own).
typedef struct ForwardJob {
    Transformer *tr;
    int T, pos;
    void (*attention)(const struct ForwardJob *job, int l, int g);
} ForwardJob;

// Row i's queries of kv head g and its key, turned by RoPE at position `at` in place; returns the key
static float *rope_row(Transformer *tr, int i, int g, size_t at) {
    const Config *c = &tr->config;
    int hs = c->dim / c->n_heads, group = c->n_heads / c->n_kv_heads;
    float *row = tr->state.qkv + (size_t)i * tr->state.qkv_stride, *k = row + c->dim + g * hs;
    const float *cr = tr->weights.rope_cos + at * hs / 2, *sr = tr->weights.rope_sin + at * hs / 2;
    rope(row + (size_t)g * group * hs, cr, sr, group, hs);
    rope(k, cr, sr, 1, hs);
    return k;
}

// A key k (hs, after RoPE) and value v (hs) into the caches of layer l, kv head g, at position `at`.
static void put_kv(Transformer *tr, int l, int g, size_t at, const float *k, const float *v) {
    const Config *c = &tr->config;
    RunState *s = &tr->state;
    size_t hs = (size_t)(c->dim / c->n_heads), head = (size_t)l * c->n_kv_heads + (size_t)g;
    float *slot = s->key_cache + head * s->seq_pad * hs + at / LANES * hs * LANES + at % LANES;
    for (size_t d = 0; d < hs; d++) slot[d * LANES] = k[d];
    memcpy(s->value_cache + (head * (size_t)c->seq_len + at) * hs, v, hs * sizeof(float));
}

// Causal attention of rows first..first+T-1 (at positions pos..pos+T-1) for the query heads of
// key/value head g (heads g*group .. g*group+group-1 share its keys and values), against the cache
// up to each row's own position: every query of the group is scored against the cache in one pass:
// score_t = (query . key_t) / sqrt(hs), w = softmax of the scores over t <= its own position, out =
// sum_t w_t value_t / sum_t w_t. Positions after a row's own are computed (the block is shared) but
// get weight exactly 0, and 0 * v adds nothing, so each row's bits are those of a one-row pass.
static void attend(Transformer *tr, int l, int g, int first, int T, int pos) {
    const Config *c = &tr->config;
    RunState *s = &tr->state;
    int hs = c->dim / c->n_heads, group = c->n_heads / c->n_kv_heads;
    size_t sp = (size_t)s->seq_pad, head = (size_t)l * c->n_kv_heads + (size_t)g;
    float *kc = s->key_cache + head * sp * hs;                // (seq_pad/LANES, hs, LANES)
    float *vc = s->value_cache + head * (size_t)c->seq_len * hs; // (seq_len, hs)
    int n_all = pos + T, Q = T * group, chunks = (Q + 5) / 6;
    float scale = 1.0f / sqrtf((float)hs);
    for (int ch = 0, q0 = 0; ch < chunks; ch++) { // query vectors 6 at most at a time
        int nq = (Q - q0) / (chunks - ch);
        const float *qv[6];
        float *a[6], *out[6], sum[6];
        for (int j = 0; j < nq; j++) { // query vector q0+j: row i, head h
            int i = first + (q0 + j) / group, h = g * group + (q0 + j) % group;
            qv[j] = s->qkv + (size_t)i * s->qkv_stride + (size_t)h * hs;
            a[j] = s->att + ((size_t)i * c->n_heads + h) * sp;
            out[j] = s->xb + (size_t)i * c->dim + (size_t)h * hs;
        }
        attention_scores(a, qv, nq, kc, (n_all + LANES - 1) / LANES, hs);
        for (int j = 0; j < nq; j++) { // softmax numerators over t <= pos + i
            int valid = pos + (q0 + j) / group + 1;
            for (int t = 0; t < valid; t++) a[j][t] *= scale;
            sum[j] = exp_and_sum(a[j], valid, max_of(a[j], valid));
            for (int t = valid; t < n_all; t++) a[j][t] = 0.0f;
        }
        attention_values(out, (const float *const *)a, nq, vc, n_all, hs);
        for (int j = 0; j < nq; j++)
            for (int d = 0; d < hs; d++) out[j][d] /= sum[j];
        q0 += nq;
    }
}

// Grouped-query attention of the pass's T rows for kv head g: RoPE turns the head's queries and key
// at each row's position, the keys and values go into the caches, then all rows attend at once.
static void attention_head(const ForwardJob *job, int l, int g) {
    Transformer *tr = job->tr;
    int kv_dim = tr->config.n_kv_heads * (tr->config.dim / tr->config.n_heads);
    for (int i = 0; i < job->T; i++) {
        const float *k = rope_row(tr, i, g, (size_t)(job->pos + i));
        put_kv(tr, l, g, (size_t)(job->pos + i), k, k + kv_dim);
    }
    attend(tr, l, g, 0, job->T, job->pos);
}

// x[t][lo..hi) += y[t][lo..hi) for T rows of width n: a thread's residual add
static void add_columns(float *x, const float *y, int T, int n, int lo, int hi) {
    for (int t = 0; t < T; t++)
        for (int j = lo; j < hi && j < n; j++) x[(size_t)t * n + j] += y[(size_t)t * n + j];
}

// The layers, then the classifier, on thread tid of nth. Phases end at a barrier; in a phase a thread
// writes only its own outputs, and first asks for the lines of its inputs (prefetch_shared).
static void forward_job(void *arg, int tid, int nth) {
    const ForwardJob *job = arg;
    Transformer *tr = job->tr;
    const Config *c = &tr->config;
    const TransformerWeights *w = &tr->weights;
    RunState *s = &tr->state;
    int T = job->T, dim = c->dim, hid = c->hidden_dim, lo, hi;
    float *xn = s->xn + (size_t)tid * tr->max_rows * dim; // (T, dim) this thread's rmsnorm(x)
    for (int l = 0; l < c->n_layers; l++) {
        const Layer *ly = &tr->layers[l];

        // attention block: x += wo @ attn(rope(wq xn), rope(wk xn), wv xn), xn = rmsnorm(x)
        prefetch_shared(s->x, (size_t)T * dim, nth);
        rmsnorm(xn, s->x, w->rms_att + (size_t)l * dim, T, dim);
        share(&lo, &hi, ly->qkv.n_panels, tid, nth);
        matmul_panels(s->qkv, xn, T, &ly->qkv, lo, hi);
        pool_barrier(tr->pool, tid, nth);
        prefetch_shared(s->qkv, (size_t)T * s->qkv_stride, nth);
        share(&lo, &hi, c->n_kv_heads, tid, nth);
        for (int g = lo; g < hi; g++) job->attention(job, l, g);
        pool_barrier(tr->pool, tid, nth);
        prefetch_shared(s->xb, (size_t)T * dim, nth);
        share(&lo, &hi, ly->wo.n_panels, tid, nth);
        matmul_panels(s->xb2, s->xb, T, &ly->wo, lo, hi);
        add_columns(s->x, s->xb2, T, dim, lo * PANEL, hi * PANEL);
        pool_barrier(tr->pool, tid, nth);

        // feed-forward block: x += w2 @ (silu(w1 xn) * (w3 xn)), xn = rmsnorm(x)
        prefetch_shared(s->x, (size_t)T * dim, nth);
        rmsnorm(xn, s->x, w->rms_ffn + (size_t)l * dim, T, dim);
        share(&lo, &hi, ly->w13.n_panels / 2, tid, nth); // panel pairs (w1, w3)
        matmul_panels(s->h13, xn, T, &ly->w13, 2 * lo, 2 * hi);
        for (int t = 0; t < T; t++)
            for (int i = lo; i < hi; i++) {
                const float *h1 = s->h13 + (size_t)t * s->h13_stride + (size_t)i * 2 * PANEL;
                int n = hid - i * PANEL < PANEL ? hid - i * PANEL : PANEL;
                swiglu(s->hb + (size_t)t * hid + (size_t)i * PANEL, h1, h1 + PANEL, n);
            }
        pool_barrier(tr->pool, tid, nth);
        prefetch_shared(s->hb, (size_t)T * hid, nth);
        share(&lo, &hi, ly->w2.n_panels, tid, nth);
        matmul_panels(s->xb2, s->hb, T, &ly->w2, lo, hi);
        add_columns(s->x, s->xb2, T, dim, lo * PANEL, hi * PANEL);
        pool_barrier(tr->pool, tid, nth);
    }

    // classifier: logits = wcls @ rmsnorm(x)
    prefetch_shared(s->x, (size_t)T * dim, nth);
    rmsnorm(xn, s->x, w->rms_final, T, dim);
    share(&lo, &hi, tr->wcls.n_panels, tid, nth);
    matmul_panels(s->logits, xn, T, &tr->wcls, lo, hi);
}

// One pass of job's rows (tokens: theirs), on all threads unless passes keep stalling (note_stall;
// any count gives the same bits). Returns logits (T, vocab_size), valid until the next pass.
static float *run_pass(Transformer *tr, const int *tokens, ForwardJob *job) {
    RunState *s = &tr->state;
    int dim = tr->config.dim;
    for (int i = 0; i < job->T; i++) // embed: x[i] = token_embedding[tokens[i]]
        matrix_row(s->x + (size_t)i * dim, &tr->embedding, tokens[i]);
    pool_run(tr->pool, tr->n_threads, forward_job, job);
    return s->logits;
}

// Runs tokens[0..n_rows) at positions pos..pos+n_rows-1: row i attends to positions <= pos+i; keys
// and values of all rows go into the caches. Every row's arithmetic is independent of n_rows and of
// the thread count, so the result equals n_rows single-row calls bit for bit (batch invariance).
static float *forward(Transformer *tr, const int *tokens, int n_rows, int pos) {
    if (n_rows < 1 || n_rows > tr->max_rows || pos < 0 || pos + n_rows > tr->config.seq_len)
        die("%s: forward(%d rows at pos %d) outside 1..%d rows and seq_len %d", tr->path, n_rows, pos,
            tr->max_rows, tr->config.seq_len);
    return run_pass(tr, tokens, &(ForwardJob){.tr = tr, .T = n_rows, .pos = pos, .attention = attention_head});
}

// tokens[0..n) at positions start.., max_rows a pass (draft catch-up); returns the last one's logits
static float *forward_chunked(Transformer *tr, const int *tokens, int n, int start) {
    float *last = NULL;
    for (int i = 0; i < n; i += tr->max_rows) {
        int rows = n - i < tr->max_rows ? n - i : tr->max_rows;
        last = forward(tr, tokens + i, rows, start + i) + (size_t)(rows - 1) * tr->config.vocab_size;
    }
    return last;
}

// ----------------------------------------------------------------------------
// Sampler: coins from a seed, and ONE function from logits to a distribution
//
// Every random choice is a coin in [0, 1) looked up by WHAT it decides, never drawn from a running
// stream: coin_at(rng, position, purpose). So a position's token depends on the seed and context alone,
// not on how rounds fell, K, timing or threads. The coins come from splitmix64 (Steele, Lea, Flood 2014):
// key = mix64(seed + G), stream element i is mix64(key + (i + 1) G), G = 0x9E3779B97F4A7C15; the coin
// for `purpose` (below) is element 4 * position + purpose, its top 24 bits / 2^24 (exact as a float).
// Element 4 * position + 3 is no coin: Part II's trees key their later candidates' coins there.

typedef struct { uint64_t key; } Rng; // key = mix64(seed + G)

#define RNG_GAMMA 0x9E3779B97F4A7C15ULL

// splitmix64's output function
static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static void rng_seed(Rng *r, uint64_t seed) { *r = (Rng){.key = mix64(seed + RNG_GAMMA)}; }

// element i of the stream
static uint64_t rng_at(const Rng *r, uint64_t i) { return mix64(r->key + (i + 1) * RNG_GAMMA); }

static float coin_of(uint64_t bits) { return (float)(bits >> 40) / 16777216.0f; }

// What a coin at a position decides: the draw of a token from a distribution (the draft's proposal,
// or plain sampling's), the accept test of a proposal, the draw from the residual after a rejection.
enum { COIN_DRAW = 0, COIN_ACCEPT = 1, COIN_RESAMPLE = 2 };

static float coin_at(const Rng *r, int pos, int purpose) {
    return coin_of(rng_at(r, 4 * (uint64_t)pos + (uint64_t)purpose));
}

struct Sampler {
    int vocab_size;
    float temperature; // 0: greedy (one-hot argmax)
    float top_p;       // nucleus mass kept; 1 = off
    int top_k;         // keep the k most likely; 0 = off
    ProbIndex *order;  // (vocab) scratch for top-k/top-p
};

static void build_sampler(Sampler *s, int vocab_size, float temperature, float top_p, int top_k) {
    *s = (Sampler){vocab_size, temperature, top_p, top_k,
                   xmalloc((size_t)vocab_size * sizeof(ProbIndex), "sampler order")};
}

// index of the largest value; ties go to the lowest index (a NaN at v[0] wins, elsewhere never). v (n)
static int argmax(const float *v, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[best]) best = i;
    return best;
}

// THE function from logits to the distribution a token is drawn from: target (p) and draft (q) both
// go through it, so they are never processed differently. Temperature 0 gives the one-hot argmax
// (greedy decoding samples a one-hot distribution). logits (n) -> probs (n); 0: logits not finite.
static int probs_from_logits(Sampler *s, float *probs, const float *logits) {
    int n = s->vocab_size;
    if (s->temperature == 0.0f) {
        memset(probs, 0, (size_t)n * sizeof(float));
        int best = argmax(logits, n);
        probs[best] = 1.0f;
        return isfinite(logits[best]);
    }
    for (int i = 0; i < n; i++) probs[i] = logits[i] / s->temperature;
    float sum = exp_and_sum(probs, n, max_of(probs, n));
    if (!(sum >= 1.0f && sum < INFINITY)) return 0; // the max alone contributes exp(0) = 1
    for (int i = 0; i < n; i++) probs[i] /= sum;
    if (s->top_p < 1.0f || s->top_k > 0) truncate_distribution(s, probs);
    return 1;
}

// Inverse CDF: the first i with coin < probs[0] + ... + probs[i], summed in index order over the
// tokens with mass (zeros skipped); if rounding leaves the total below the coin, the last with mass.
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
// The speculative step: the papers' equations, one function each
//
// Why it is exact (Leviathan et al. 2022, Thm 1 / Appendix A.1): a draft token x ~ q is kept with
// probability min(1, p(x)/q(x)), so it is EMITTED with probability q(x) min(1, p(x)/q(x)) =
// min(q(x), p(x)). It is rejected with total probability beta = sum_x (q(x) - min(q(x), p(x))) =
// sum_x max(0, p(x) - q(x)), and then a token is drawn from norm(max(0, p - q)), which adds exactly
// max(0, p(x) - q(x)) to each x. min(q,p) + max(0, p-q) = p(x). The next position is only examined after
// an acceptance, and then the context is the same one the target would have seen, so the argument repeats
// position by position. It needs nothing of q but that x was drawn from it: any drafter
// (a smaller model, n-gram lookup, heads on the target) keeps the output exact, as long as its q does not
// look at the target's p or coins. The l below is Part II's lenience (l = 1: the exact rule).

// The accept test's threshold min(1, p(x) / (l q(x))); x ~ q, so q(x) > 0.
static float acceptance_ratio(float p_x, float q_x, float lenience) {
    float lq = lenience * q_x;
    if (lq <= 0.0f) return 1.0f; // unreachable for x ~ q; accept rather than divide by 0
    float r = p_x / lq;
    return r >= 1.0f ? 1.0f : r; // NaN stays NaN, and u < NaN rejects
}

// The residual distribution norm(max(0, p - l q)) a rejected position draws from, its mass summed
// in index order. p, q (n) -> out (n); returns the mass before normalising.
//
// Zero residual: sum max(0, p - q) = 0 means p <= q everywhere; both sum to 1, so p == q up to rounding.
// If p == q exactly, every ratio is 1: no draft is rejected. A rejection needs rounding to leave the
// float p summing to S < 1 while q sums to 1: x is then emitted with probability min(p(x), q(x)) = p(x)
// and rejected with probability 1 - S. Drawing the replacement from p/S emits x with probability
// p(x) + (1 - S) p(x)/S = p(x)/S, exactly the normalised target. Anything else (the argmax) biases it.
static float residual_distribution(float *out, const float *p, const float *q, float lenience, int n) {
    float mass = 0.0f;
    for (int i = 0; i < n; i++) {
        float lq = lenience * q[i];
        out[i] = p[i] > lq ? p[i] - lq : 0.0f;
        mass += out[i];
    }
    if (mass <= 0.0f)
        memcpy(out, p, (size_t)n * sizeof(float));
    else
        for (int i = 0; i < n; i++) out[i] /= mass;
    return mass;
}

// What happened at one position of a round, for the statistics and the -v trace.
typedef struct {
    int x;               // the proposal x ~ q, or -1: nothing proposed (drawn from p alone)
    float d;             // the draw coin: x = sample(q, d), or the token = sample(p, d)
    float u, r;          // the accept coin and the resample coin
    float q, p;          // q(x), p(x)
    int accepted;        // u < min(1, p(x)/q(x))
    float residual_mass; // after a rejection: sum max(0, p - q) before normalising
    int token;           // the token the position commits
} Verdict;

// Leviathan et al. 2022, Algorithm 1, at ONE position: keep v->x with probability min(1, p(x)/q(x))
// (coin v->u), else draw from norm(max(0, p - q)) (coin v->r); returns the token. residual: scratch
static int decide(Verdict *v, const float *p, const float *q, float *residual, int n, float lenience) {
    v->q = q[v->x];
    v->p = p[v->x];
    v->accepted = v->u < acceptance_ratio(v->p, v->q, lenience);
    if (v->accepted) return v->token = v->x;
    v->residual_mass = residual_distribution(residual, p, q, lenience, n);
    return v->token = sample(residual, n, v->r);
}

// The theory behind the numbers is in model.h, shared with the figures:
// expected_tokens_per_round (Leviathan et al. 2022, Eq. 1) and predicted_speedup (their Thm 3.8).

// ----------------------------------------------------------------------------
// Drafters: anything that proposes a distribution q for the next position
//
// A drafter gets the context tokens[0..pos) (this round's earlier proposals included) and writes
// its q for position pos, or says it has none (the position is then drawn from p alone). The round
// draws x ~ q with the position's coin. Here the draft model, a smaller transformer; Part II adds
// n-gram lookup and two on the target's own hidden state: Medusa heads, EAGLE.

typedef struct Drafter Drafter;
struct Drafter {
    // q (V) for position pos from tokens[0..pos); 0: no proposal there
    int (*propose)(Drafter *d, float *q, const int *tokens, int pos);
    // positions >= n were not committed: forget them (NULL: nothing to forget)
    void (*rewind)(Drafter *d, int n);
    // row `row` of the target's last pass ran position pos and decided the next (-1: none did)
    void (*observe)(Drafter *d, int row, int pos);
    Transformer *model;  // the draft model, or NULL
};

// The draft model: its KV cache holds tokens[0..cached); before each proposal it runs what the
// context added (the prompt in the first round, one token after that). Past its seq_len: none.
typedef struct {
    Drafter base;
    Sampler *sampler;     // q goes through the same function as p
    int cached;
    const float *logits;  // the logits behind its last q
} ModelDrafter;

static int propose_model(Drafter *d, float *q, const int *tokens, int pos) {
    ModelDrafter *md = (ModelDrafter *)d;
    if (pos > d->model->config.seq_len) return 0; // it would run position pos - 1
    const float *logits = forward_chunked(d->model, tokens + md->cached, pos - md->cached, md->cached);
    md->cached = pos;
    md->logits = logits;
    if (probs_from_logits(md->sampler, q, logits)) return 1;
    md->cached = pos - 1; // logits not finite: no proposal (asked again, it reruns pos - 1)
    return 0;
}

static void rewind_model(Drafter *d, int n) {
    ModelDrafter *md = (ModelDrafter *)d;
    if (md->cached > n) md->cached = n;
}

static Drafter *model_drafter(ModelDrafter *md, Transformer *draft, Sampler *s) {
    *md = (ModelDrafter){.base = {.propose = propose_model, .rewind = rewind_model, .model = draft}, .sampler = s};
    return &md->base;
}

// ----------------------------------------------------------------------------
// The speculative round: draft K, verify K+1 positions in one pass, commit
//
// The caches are indexed by position (ONE ROUND, step 4): nothing is copied or
// rolled back. With n committed tokens t_0..t_{n-1} at the start of a round:
//
//   position:   ...  n-1    n    n+1  ...  n+K-1   n+K
//   draft runs:      t_last x_1  x_2  ...  x_{K-1}       -> q_1..q_K, x_i ~ q_i
//   target runs (ONE pass, K+1 rows): t_last x_1 ... x_K -> p_1 ... p_{K+1}
//
//   j < K drafts accepted: commit x_1..x_j and y ~ norm(max(0, p_{j+1} - q_{j+1})).
//   all K accepted: position n+K is proposed too (the draft runs x_K) and
//       decided against p_{K+1} like any other (ONE ROUND, step 3): K+1 tokens.
//
// Every position m is decided by the same rule with the same coins (draw coin_at(m, DRAW), accept
// coin_at(m, ACCEPT), resample coin_at(m, RESAMPLE)) from p_m and q_m, which batch invariance makes
// independent of how many rows computed them: so the text is a function of the seed, the prompt,
// the models and the sampling flags, the same for every K and every thread count. A position with
// no proposal is drawn from p_m alone with coin_at(m, DRAW).

// What a round did: the statistics and auto-K read this.
typedef struct {
    int k;         // positions drafted ahead and verified (a drafter may propose fewer than asked)
    int drafted;   // proposals made
    int accepted;  // proposals accepted (the position after K's included)
    int committed; // tokens appended: positions decided, 1..k+1
    int plain;     // 1: the last position had no proposal and was drawn from p
} Round;

typedef struct Speculator Speculator;
struct Speculator {
    Transformer *target;
    Drafter *drafter;
    Sampler *sampler;
    const Rng *rng;
    float lenience;            // 1: the exact rule; < 1: LOSSY (--lenience)
    float *q;                  // (max_rows, V) the drafter's distributions this round
    float *p;                  // (max_rows, V) the target's
    float *residual;           // (V) scratch
    Verdict verdicts[K_MAX + 1];
    Round (*step)(Speculator *sp, int *tokens, int n, int k); // a round: speculative_step
    struct Trees *trees;       // Part II's draft trees (--tree), or NULL: a chain
};

// Proposes position pos, slot i of the round: q_i from the drafter, x_i ~ q_i into tokens[pos]; 0: none
static int propose(Speculator *sp, int *tokens, int pos, int i) {
    int V = sp->target->config.vocab_size;
    float *q = sp->q + (size_t)i * V;
    Verdict *v = &sp->verdicts[i];
    *v = (Verdict){.x = -1, .d = coin_at(sp->rng, pos, COIN_DRAW),
                   .u = coin_at(sp->rng, pos, COIN_ACCEPT), .r = coin_at(sp->rng, pos, COIN_RESAMPLE)};
    if (!sp->drafter->propose(sp->drafter, q, tokens, pos)) return 0;
    v->x = tokens[pos] = sample(q, V, v->d);
    return 1;
}

// One round from n committed tokens with up to k drafts (0 <= k <= K_MAX), Leviathan et al. 2022,
// Algorithm 1: tokens (n, room for n+k+1) gets the round's 1..k+1 tokens; returns what happened.
static Round speculative_step(Speculator *sp, int *tokens, int n, int k) {
    int V = sp->target->config.vocab_size;
    Round rd = {0};

    // 1. draft: x_i ~ q_i at positions n..n+k-1, into tokens (a drafter may stop early)
    while (rd.k < k && propose(sp, tokens, n + rd.k, rd.k)) rd.k++;
    rd.drafted = rd.k;

    // 2. verify: ONE target pass over [t_last, x_1..x_k] at positions n-1..n+k-1 -> p_1..p_{k+1}
    const float *logits = forward(sp->target, tokens + n - 1, rd.k + 1, n - 1);

    // 3. accept or reject position by position, each with its own coins, up to the first rejection (p_i
    // made from its row when reached); after k acceptances, position n+k is proposed and decided too
    for (int i = 0; i <= rd.k; i++) {
        float *p = sp->p + (size_t)i * V;
        if (!probs_from_logits(sp->sampler, p, logits + (size_t)i * V))
            die_logits(sp->target, n + i, sp->sampler->temperature);
        rd.committed = i + 1;
        if (i == rd.k) { // all k accepted: the position after them is proposed now
            if (!propose(sp, tokens, n + i, i)) { // no proposal: draw from p alone
                Verdict *v = &sp->verdicts[i];
                tokens[n + i] = v->token = sample(p, V, v->d);
                rd.plain = 1;
                break;
            }
            rd.drafted++;
        }
        tokens[n + i] = decide(&sp->verdicts[i], p, sp->q + (size_t)i * V, sp->residual, V, sp->lenience);
        if (!sp->verdicts[i].accepted) break;
        rd.accepted++;
    }

    // 4. the drafter is valid up to the last accepted proposal; row committed - 1 decided the last token
    if (sp->drafter->rewind) sp->drafter->rewind(sp->drafter, n + rd.accepted);
    if (sp->drafter->observe) sp->drafter->observe(sp->drafter, rd.committed - 1, n + rd.committed - 2);
    return rd;
}

static void build_speculator(Speculator *sp, Transformer *target, Drafter *drafter, Sampler *sampler, const Rng *rng) {
    size_t V = (size_t)target->config.vocab_size;
    const Transformer *d = drafter->model;
    if (d && d->config.vocab_size != target->config.vocab_size)
        die("%s: vocab_size %d differs from the target's %d (%s); draft and target must share "
            "one vocabulary", d->path, d->config.vocab_size, target->config.vocab_size, target->path);
    *sp = (Speculator){.target = target, .drafter = drafter, .sampler = sampler, .rng = rng,
                       .lenience = 1.0f, .step = speculative_step};
    sp->q = xmalloc((size_t)target->max_rows * V * sizeof(float), "draft distributions");
    sp->p = xmalloc((size_t)target->max_rows * V * sizeof(float), "target distributions");
    sp->residual = xmalloc(V * sizeof(float), "residual");
}

// ----------------------------------------------------------------------------
// Generation: prompt, then plain or speculative decoding, streamed out

typedef struct {
    const Tokenizer *tok;
    int quiet;        // -q: no text on stdout
    int *generated;   // (max_new) the generated ids
    int n_generated, max_new;
    int prev;         // last token printed, for the leading-space rule
    int done;         // BOS/EOS seen or max_new reached
    int ended_by;     // why it stopped: END_* below
    double shown_at;  // when the text last went out (show_output)
    int prefilled;    // the prefill's tokens (all prompt tokens but the last, unless Ctrl-C)
    double prompt_seconds; // ... and its seconds
} Output;

enum { END_LENGTH, END_TOKEN, END_CONTEXT, END_INTERRUPT }; // -n reached, BOS/EOS, seq_len full, Ctrl-C

static volatile sig_atomic_t interrupted; // Ctrl-C: generation stops after the step (Appendix H)
static void on_interrupt(int sig);
static void start_output(Output *o, const int *tokens, int n);
static void emit(Output *o, int token);
static void show_output(Output *o);

// The prefill: tokens[0..n-1) (the prompt but its last token) into tr's caches, max_rows a pass,
// Ctrl-C stopping it between passes. Returns the row of its last pass that ran n-2 (-1: none).
static int prefill(Transformer *tr, const int *tokens, int n, Output *o) {
    double t0 = now_seconds();
    int rows = 0;
    for (; o->prefilled < n - 1 && !interrupted; o->prefilled += rows) {
        rows = n - 1 - o->prefilled < tr->max_rows ? n - 1 - o->prefilled : tr->max_rows;
        forward(tr, tokens + o->prefilled, rows, o->prefilled);
    }
    o->prompt_seconds = now_seconds() - t0;
    return o->prefilled == n - 1 ? rows - 1 : -1;
}

// Plain decoding with one model from n committed tokens (the prompt): position n's token drawn from
// p_n with coin_at(n, DRAW); tokens has room for seq_len. Returns the count of committed tokens.
static int generate_plain(Transformer *tr, Sampler *s, const Rng *rng, int *tokens, int n, Output *o) {
    float *probs = xmalloc((size_t)tr->config.vocab_size * sizeof(float), "probs");
    prefill(tr, tokens, n, o);
    for (; !o->done && !interrupted && n < tr->config.seq_len; n++) {
        if (!probs_from_logits(s, probs, forward(tr, &tokens[n - 1], 1, n - 1))) die_logits(tr, n, s->temperature);
        tokens[n] = sample(probs, tr->config.vocab_size, coin_at(rng, n, COIN_DRAW));
        emit(o, tokens[n]);
        show_output(o);
    }
    if (!o->done) o->ended_by = interrupted ? END_INTERRUPT : END_CONTEXT;
    xfree(probs);
    return n;
}

// Speculative decoding: rounds until -n, BOS/EOS or the target's context. start_round picks the
// round's K (-k, or auto-K's) and end_round records what the round did up to -n or the end of the
// text (statistics, auto-K's estimates, the -v trace), both in Appendix G. A round never decides
// more tokens than -n still wants (that changes no token: positions do not depend on rounds).
typedef struct SpecStats SpecStats;
static int start_round(SpecStats *st, Speculator *sp, int n, int want);
static void end_round(SpecStats *st, const Speculator *sp, const Round *rd, int n, int used);

static int generate_spec(Speculator *sp, SpecStats *st, int *tokens, int n, Output *o) {
    Drafter *d = sp->drafter;
    int row = prefill(sp->target, tokens, n, o); // the row that ran position n-2
    if (d->rewind) d->rewind(d, 0); // it catches up in round 1
    if (d->observe) d->observe(d, row, n - 2);
    while (!o->done && !interrupted && n < sp->target->config.seq_len) {
        int k = start_round(st, sp, n, o->max_new - o->n_generated);
        Round rd = sp->step(sp, tokens, n, k);
        int used = 0; // positions up to -n or the end of the text: the statistics count only those
        while (used < rd.committed && !o->done) emit(o, tokens[n + used++]);
        end_round(st, sp, &rd, n, used);
        show_output(o);
        n += used;
    }
    if (!o->done) o->ended_by = interrupted ? END_INTERRUPT : END_CONTEXT;
    return n;
}

// ----------------------------------------------------------------------------
// main: load, generate, report
//
// What main holds; the appendices fill them in (statistics G, command line I).

typedef struct {
    const char *target_path, *draft_path, *tokenizer_path, *mode, *prompt, *json_path, *prompt_file;
    const char *weights_name, *target_weights_name; // --draft-weights, --target-weights
    int target_named;    // 1: the target is the first argument, not the default
    int n_new, k, top_k, quiet, verbose, threads, draft_threads, draft_weights, target_weights;
    unsigned given;      // bit i: FLAGS[i] was on the command line
    int help;            // -h: print the usage and exit
    float temperature, top_p;
    unsigned long long seed;
    // Part II's: -d lookup's n-grams, -d medusa[:FILE] and -d eagle[:FILE] (their file, or NULL),
    // --tree B1,B2,... (children per node at each depth), --lenience (< 1: LOSSY)
    int lookup, ngram_min, ngram_max, tree_depth, branch[K_MAX];
    const char *medusa, *eagle, *tree;
    float lenience;
} Options;

typedef struct {
    const Options *opt;      // the run's flags, as parsed
    int prompt_tokens;
    const Output *out;
    double seconds;          // generation only (decoding after the prefill), not loading
    const Speculator *sp;    // spec mode only
    const SpecStats *st;     // spec mode only
    double target_step;      // spec: seconds of one target-alone step (timed after generating)
    int target_gs;           // the target's int8 groups (0: f32; -1: no target, -m draft)
} Report;

// What main calls: the command line (I), loading (B), threads (D), the tokenizer (E), the report (G)
static void parse_options(Options *o, int argc, char **argv);
static void usage(void);
static void check_json_path(const Options *o);
static ThreadPool *build_pool(int n);
static Transformer *load_models(Transformer *target, Transformer *draft, Options *o, ThreadPool *pool);
static Drafter *build_drafter(const Options *o, Transformer *target, Transformer *draft, Sampler *s);
static Tokenizer *new_tokenizer(const char *path, int vocab_size);
static char *read_prompt(const Options *o);
static int encode_prompt(Tokenizer *tok, int *tokens, const char *prompt, const char *file, const Transformer *tr);
static int given(const Options *o, const char *flag);
static SpecStats *new_spec_stats(void);
static void plan_rounds(Speculator *sp, SpecStats *st, const Options *o, const Tokenizer *trace);
static double time_target_step(Transformer *tr, Sampler *s, float *probs, int token, int pos);
static void print_report(const Report *rp);
static void write_json(const Report *rp);
static void flush_text(void);

#ifdef TESTING
#define main specdec_main // tests and fuzz/ run the whole program as specdec_main
#endif
int main(int argc, char **argv) {
    Options opt;
    parse_options(&opt, argc, argv);
    if (opt.help) {
        usage();
        return 0;
    }
    void *start = owned_mark(); // what the run allocates from here (Appendix A)
    io_forget(); // the run's files (model.h), inputs and outputs
    check_json_path(&opt); // now, so a bad -j fails before anything runs
    char *prompt_file = read_prompt(&opt); // -f's, or NULL
    if (prompt_file) opt.prompt = prompt_file; // as the JSON records it
    ThreadPool *pool = build_pool(opt.threads);
    Transformer target, draft;
    Transformer *model = load_models(&target, &draft, &opt, pool); // may turn spec into target
    int spec = !strcmp(opt.mode, "spec");
    int V = model->config.vocab_size;
    Tokenizer *tok = new_tokenizer(opt.tokenizer_path, V);
    Sampler sampler;
    build_sampler(&sampler, V, opt.temperature, opt.top_p, opt.top_k);
    Rng rng;
    rng_seed(&rng, opt.seed);
    Drafter *drafter = spec ? build_drafter(&opt, &target, &draft, &sampler) : NULL;
    int *tokens = xmalloc((size_t)model->config.seq_len * sizeof(int), "tokens");
    int n = encode_prompt(tok, tokens, prompt_file ? prompt_file : opt.prompt, opt.prompt_file, model);
    if (!given(&opt, "-n")) opt.n_new = model->config.seq_len - n; // the default: until the context is full
    Speculator sp;
    SpecStats *st = spec ? new_spec_stats() : NULL;
    if (spec) {
        build_speculator(&sp, &target, drafter, &sampler, &rng);
        sp.lenience = opt.lenience;
        plan_rounds(&sp, st, &opt, opt.verbose ? tok : NULL); // -v: the trace
    }
    Output out = {.tok = tok, .quiet = opt.quiet, .max_new = opt.n_new,
                  .generated = xmalloc((size_t)opt.n_new * sizeof(int), "output")};
    start_output(&out, tokens, n);

    // generate; the clock covers prefill and decoding, not loading
    Report rp = {.opt = &opt, .prompt_tokens = n, .out = &out, .target_gs = strcmp(opt.mode, "draft") ? target.gs : -1};
    double t0 = now_seconds();
    struct sigaction ours = {.sa_handler = on_interrupt}, before; // Ctrl-C, unless ignored (nohup, a script's &)
    interrupted = 0;
    if (!sigaction(SIGINT, NULL, &before) && before.sa_handler != SIG_IGN) sigaction(SIGINT, &ours, NULL);
    n = spec ? generate_spec(&sp, st, tokens, n, &out) : generate_plain(model, &sampler, &rng, tokens, n, &out);
    rp.seconds = now_seconds() - t0 - out.prompt_seconds;
    sigaction(SIGINT, &before, NULL); // as it was
    if (spec) { // the speedup estimate needs one target-alone step, timed now
        rp.sp = &sp;
        rp.st = st;
        if (out.n_generated) rp.target_step = time_target_step(&target, &sampler, sp.p, tokens[n - 1], n - 1);
    }
    if (!given(&opt, "-n") && out.ended_by == END_LENGTH) out.ended_by = END_CONTEXT; // the default -n: the context
    if (!opt.quiet) printf("\n");
    flush_text();
    print_report(&rp);
    if (opt.json_path) write_json(&rp);
    release_since(start); // everything the run allocated, the thread pool last
    return 0;
}
#undef main

// ============================================================================
// PART II. THE EXTENSIONS: other drafters and trees, each built on Part I
// ============================================================================

// ----------------------------------------------------------------------------
// Drafters without a second model: prompt lookup, Medusa heads, EAGLE features
//
// Each is a Drafter (Part I), exact by the step's argument: x_i was drawn from the q_i it wrote.

// Prompt lookup (Saxena 2023): the proposal is what followed the latest earlier occurrence of the
// context's last g tokens, g from ngram_max down to ngram_min: a one-hot q, accepted with
// probability min(1, p(x)); a rejection draws from p with x removed.
typedef struct { Drafter base; int ngram_min, ngram_max, vocab_size; } LookupDrafter;

// the token after the latest earlier occurrence of tokens[n-g..n), or -1
static int lookup_next(const LookupDrafter *lk, const int *tokens, int n) {
    for (int g = lk->ngram_max < n - 1 ? lk->ngram_max : n - 1; g >= lk->ngram_min; g--)
        for (int j = n - g - 1; j >= 0; j--)
            if (!memcmp(tokens + j, tokens + n - g, (size_t)g * sizeof(int))) return tokens[j + g];
    return -1;
}

static int propose_lookup(Drafter *d, float *q, const int *tokens, int pos) {
    const LookupDrafter *lk = (const LookupDrafter *)d;
    int x = lookup_next(lk, tokens, pos);
    if (x < 0) return 0;
    memset(q, 0, (size_t)lk->vocab_size * sizeof(float));
    q[x] = 1.0f;
    return 1;
}

static Drafter *lookup_drafter(LookupDrafter *lk, int ngram_min, int ngram_max, int vocab_size) {
    *lk = (LookupDrafter){.base = {.propose = propose_lookup}, ngram_min, ngram_max, vocab_size};
    return &lk->base;
}

// W (d,n) @ x (T,n) -> out (T,d) on tr's threads, split by output panels (the same bits on any
// count), as the drafters below run their matrices (PERFORMANCE.md: "the hidden-state drafters' matrices")
typedef struct { float *out; const float *x; const Matrix *m; int T; } MatmulJob;
static void matmul_job(void *arg, int tid, int nth) {
    const MatmulJob *j = arg;
    int lo, hi;
    share(&lo, &hi, j->m->n_panels, tid, nth);
    matmul_panels(j->out, j->x, j->T, j->m, lo, hi);
}
static void matmul_on(const Transformer *tr, float *out, const float *x, const Matrix *m, int T) {
    pool_run(tr->pool, tr->n_threads, matmul_job, &(MatmulJob){out, x, m, T});
}

// Medusa and EAGLE (below) need no second model: a round from n committed tokens reads the target's
// final hidden state z = rmsnorm(x, rms_final) of the row that ran position n - 2 (observe) and makes q
// through the target's classifier. Exact: q_i is fixed before position i's coins and p_i are read, z is
// a function of t_0..t_{n-1}. Where rounds begin picks z's row, so at t > 0 the text depends on K:
// parse_options fixes K (-k 0 too), keeping the text a function of the seed.
typedef struct {
    Drafter base;
    Transformer *target;
    Sampler *sampler;
    int at, made;         // the position z ran (-1: none yet); what has been made from it
    float *z;             // (dim) z, at the start of the drafter's buffers
    float *logits;        // its logits: (H, V) Medusa's, a row per head; (V) EAGLE's
    float *packed;        // its matrices
    unsigned char *file;  // its file's bytes (the biases are read from them)
} HiddenDrafter;

static void observe_hidden(Drafter *d, int row, int pos) {
    HiddenDrafter *h = (HiddenDrafter *)d;
    int dim = h->target->config.dim;
    h->at = row < 0 ? -1 : pos;
    h->made = 0;
    if (row >= 0) memcpy(h->z, h->target->state.xn + (size_t)row * dim, (size_t)dim * sizeof(float));
}

// Medusa heads (Cai et al. 2024): head h maps z of the row that ran position t to q for position
// t + 1 + h, logits_h = wcls @ (z + silu(W_h z + b_h)) (model.h: medusa.bin). A head's q_i ignores
// x_1..x_{i-1}: one choice of q_i given the context. Past the last head: p alone.
typedef struct {
    HiddenDrafter h;   // h.made: 1 once every head's logits for z are made
    int n_heads;       // H
    Matrix w[MEDUSA_MAX_HEADS];       // W_h (dim, dim), packed, for h = 1..H at h - 1
    const float *b[MEDUSA_MAX_HEADS]; // b_h (dim)
    float *y;          // (H, dim) each head's z + silu(W_h z + b_h)
} MedusaDrafter;

// Head h's logits for z, all heads' made at the first ask: y_h = z + silu(W_h z + b_h), then wcls @ y for
// all H rows in ONE pass: row by row's bits, the classifier read once (PERFORMANCE.md: "Medusa's heads")
static const float *head_logits(MedusaDrafter *md, int h) {
    HiddenDrafter *hd = &md->h;
    int dim = hd->target->config.dim;
    if (!hd->made) {
        for (int j = 0; j < md->n_heads; j++) {
            float *y = md->y + (size_t)j * dim;
            matmul_on(hd->target, y, hd->z, &md->w[j], 1);
            for (int i = 0; i < dim; i++) y[i] = hd->z[i] + silu(y[i] + md->b[j][i]);
        }
        matmul_on(hd->target, hd->logits, md->y, &hd->target->wcls, md->n_heads);
        hd->made = 1;
    }
    return hd->logits + (size_t)(h - 1) * hd->target->config.vocab_size;
}

static int propose_medusa(Drafter *d, float *q, const int *tokens, int pos) {
    MedusaDrafter *md = (MedusaDrafter *)d;
    int h = pos - md->h.at - 1;
    (void)tokens;
    if (md->h.at < 0 || h < 1 || h > md->n_heads) return 0;
    return probs_from_logits(md->h.sampler, q, head_logits(md, h));
}

// An EAGLE-style feature drafter (Li et al. 2024; one MLP where they use a decoder layer): from a
// feature f at position t and the embedding e of the token at t + 1 it predicts the feature at t + 1,
// and q for t + 2 through the target's classifier (model.h: eagle.bin):
//   f' = f + (W2 silu(W1 [f; e] + b1) + b2),   logits = wcls @ f'
// It starts from z, as Medusa does, then runs on its own features: it sees each token it drafted.
typedef struct {
    HiddenDrafter h;      // h.z: features 0..MAX_ROWS (z first); h.made: those made
    int hidden;           // the MLP's width
    Matrix w1, w2;        // W1 (hidden, 2 dim), W2 (dim, hidden), packed
    const float *b1, *b2; // (hidden), (dim)
    float *fe, *u;        // (2 dim) [f; e]; (hidden) silu(W1 [f; e] + b1)
} EagleDrafter;

// out (dim) = the feature after f (dim) and token x, by the formula above
static void eagle_step(EagleDrafter *ed, float *out, const float *f, int x) {
    const Transformer *tg = ed->h.target;
    int dim = tg->config.dim;
    memcpy(ed->fe, f, (size_t)dim * sizeof(float));
    matrix_row(ed->fe + dim, &tg->embedding, x);
    matmul_on(tg, ed->u, ed->fe, &ed->w1, 1);
    for (int i = 0; i < ed->hidden; i++) ed->u[i] = silu(ed->u[i] + ed->b1[i]);
    matmul_on(tg, out, ed->u, &ed->w2, 1);
    for (int i = 0; i < dim; i++) out[i] = f[i] + (out[i] + ed->b2[i]);
}

static int propose_eagle(Drafter *d, float *q, const int *tokens, int pos) {
    HiddenDrafter *h = (HiddenDrafter *)d;
    int dim = h->target->config.dim, j = pos - h->at - 1; // feature j: q for position at + j + 1
    if (h->at < 0 || j < 1 || j > MAX_ROWS) return 0;
    for (; h->made < j; h->made++)
        eagle_step((EagleDrafter *)d, h->z + (size_t)(h->made + 1) * dim, h->z + (size_t)h->made * dim,
                   tokens[h->at + 1 + h->made]);
    matmul_on(h->target, h->logits, h->z + (size_t)j * dim, &h->target->wcls, 1);
    return probs_from_logits(h->sampler, q, h->logits);
}

// ----------------------------------------------------------------------------
// Lenience: a lossy rule, for measuring what exactness costs
//
// What it adds to Part I: the l of acceptance_ratio and residual_distribution, --lenience l (Leviathan
// et al. 2022, Appendix A.5): accept iff u < min(1, p(x) / (l q(x))), resample from norm(max(0, p - l q)).
// More proposals pass, the output no longer the target's; l = 1 is exact (the same bits), trees' only.

// ----------------------------------------------------------------------------
// Tree speculation: several candidates where the draft is unsure, ONE pass
//
// A chain commits position m+1 only if position m's one proposal passed. A tree (Miao et al. 2023,
// SpecInfer) puts branch[d] candidates under every node of depth d; the target scores every node in ONE
// pass, each attending to the context and its ancestors; the round walks down from the root:
//
//   Recursive rejection sampling (Jeon et al. 2024; SpecInfer's rule for candidates drawn without
//   replacement). At a node with target p_1 = p and candidates x_1..x_m, x_j drawn from q_j (q_1 = q;
//   q_{j+1} = q_j with x_j removed, renormalised; once q is used up, the best remaining draft logit,
//   q_j one-hot): accept x_j with probability min(1, p_j(x_j) / q_j(x_j)) and descend to it; else
//   p_{j+1} = norm(max(0, p_j - q_j)) and try x_{j+1}; after m rejections draw from p_{m+1}.
//
// Why it is exact: each test is one chain step, whose output (x_j if accepted, else a draw from p_{j+1})
// is distributed as p_j, for ANY q_j that x_j was drawn from with coins the target never sees. Trying
// x_{j+1} in place of that draw keeps it: given x_1..x_j, x_{j+1} ~ q_{j+1}, so the step's output is
// distributed as p_{j+1} again, which is all the draw needed. (A rejected x_j had p_j(x_j) < q_j(x_j), so
// p_{j+1}(x_j) = 0: removing it from q costs nothing.) By induction the node emits a token distributed as
// p, and descending repeats the argument at the next position. With one candidate per node this is the
// chain's rule, with the chain's coins: the same text.
//
// What it adds to Part I: the Trees a Speculator points to, passes whose attention masks all but each
// node's ancestors (forward_tree; propose_tree_model for the draft) and tree_step, the round.

// A draft tree of a round from n committed tokens: node 0 is the root, the last committed token (at
// position n-1); a node of depth d proposes position n-1+d; a node's parent comes before it.
#define TREE_MAX (2 * K_MAX + 1) // the most nodes of a tree, its root included: its verify pass's rows
#define TREE_BRANCH 8 // the most candidates under one node
typedef struct {
    int n;                                    // nodes, the root included
    int token[TREE_MAX], parent[TREE_MAX], depth[TREE_MAX];
    int count[TREE_MAX], kids[TREE_MAX][TREE_BRANCH]; // children, in the order they were drawn
    int onehot[TREE_MAX];                     // drawn as the best remaining logit: q_j one-hot
} Tree;

// A Speculator's trees (--tree): the shape, each model's node keys and values, the last round's tree
typedef struct Trees {
    int depth;                   // levels, branch[d] children under each node of depth d
    int branch[K_MAX];
    ModelDrafter *draft;         // the draft model (parse_tree allows no other drafter)
    float *target_kv, *draft_kv; // (L, n_kv_heads, TREE_MAX, 2, hs) each model's (TreePass)
    float *ql, *work;            // (TREE_MAX, V) the draft's logits per node; (3, V) scratch
    Tree tree;                   // the last round's tree, as verified (the -v trace draws it)
    int path[K_MAX + 1];         // ... the nodes it accepted
    int tested[K_MAX + 1];       // ... and the candidates tested at each position it decided
    double draft_seconds;        // its draft passes' seconds after the root's (the statistics, Appendix G)
} Trees;

// A tree pass (forward_tree): row i is node first + i at position pos + its depth (parent[v] < v, -1:
// the context); node_kv (L, n_kv_heads, TREE_MAX, 2, hs) keeps each node's key and value for later passes
typedef struct { ForwardJob pass; int first; const int *parent, *depth; float *node_kv; } TreePass;

// Node `node`'s key and value in layer l, kv head g of node_kv: (2, hs)
static float *node_kv_at(const Transformer *tr, float *kv, int l, int g, int node) {
    const Config *c = &tr->config;
    size_t hs = (size_t)(c->dim / c->n_heads);
    return kv + (((size_t)l * c->n_kv_heads + (size_t)g) * TREE_MAX + (size_t)node) * 2 * hs;
}

// The floats of a node_kv for tr
static size_t node_kv_floats(const Transformer *tr) {
    const Config *c = &tr->config;
    return (size_t)c->n_layers * (size_t)c->n_kv_heads * TREE_MAX * 2 * (size_t)(c->dim / c->n_heads);
}

// A tree pass's attention: each row's key and value kept by node, then row i (node first+i) attends
// after writing its path (itself and its ancestors, of this pass or earlier ones) into the caches at
// their positions, which then hold what a plain forward over the context and that path would.
static void tree_attention(const ForwardJob *job, int l, int g) {
    const TreePass *tp = (const TreePass *)job;
    Transformer *tr = job->tr;
    size_t hs = (size_t)(tr->config.dim / tr->config.n_heads), kv_dim = (size_t)tr->config.n_kv_heads * hs;
    for (int i = 0; i < job->T; i++) {
        int v = tp->first + i;
        float *k = rope_row(tr, i, g, (size_t)(job->pos + tp->depth[v])), *kv = node_kv_at(tr, tp->node_kv, l, g, v);
        memcpy(kv, k, hs * sizeof(float));
        memcpy(kv + hs, k + kv_dim, hs * sizeof(float));
    }
    for (int i = 0; i < job->T; i++) {
        for (int u = tp->first + i; u >= 0; u = tp->parent[u]) {
            const float *kv = node_kv_at(tr, tp->node_kv, l, g, u);
            put_kv(tr, l, g, (size_t)(job->pos + tp->depth[u]), kv, kv + hs);
        }
        attend(tr, l, g, i, 1, job->pos + tp->depth[tp->first + i]);
    }
}

// Runs nodes first..first+n_rows-1 of a tree (tokens: theirs): node v (parent[v] < v, or -1) at
// position pos + its depth, attending to the cache below pos and to its ancestors (of this pass or one
// since the last chain pass: node_kv). Returns logits (n_rows, vocab_size), each row's bit for bit a
// plain forward's over the context and its path. The caches past pos hold the last row's path.
static float *forward_tree(Transformer *tr, float *node_kv, const int *tokens, int first, const int *parent,
                           int n_rows, int pos) {
    int depth[TREE_MAX], deepest = 0, nodes = first + n_rows, most = tr->max_rows < TREE_MAX ? tr->max_rows : TREE_MAX;
    for (int v = 0; v < nodes && nodes <= most; v++) {
        if (parent[v] >= v) die("%s: tree node %d has parent %d, not an earlier node", tr->path, v, parent[v]);
        depth[v] = parent[v] < 0 ? 0 : depth[parent[v]] + 1;
        deepest = depth[v] > deepest ? depth[v] : deepest;
    }
    if (n_rows < 1 || first < 0 || nodes > most || pos < 0 || pos + deepest >= tr->config.seq_len)
        die("%s: forward(%d rows at pos %d) outside 1..%d rows and seq_len %d", tr->path, n_rows, pos, most,
            tr->config.seq_len);
    TreePass tp = {.pass = {.tr = tr, .T = n_rows, .pos = pos, .attention = tree_attention}, .first = first,
                   .parent = parent, .depth = depth, .node_kv = node_kv};
    return run_pass(tr, tokens, &tp.pass);
}

// After tree passes: the keys and values of the accepted path[0..count) into the caches at pos..
static void commit_path(Transformer *tr, float *node_kv, const int *path, int count, int pos) {
    size_t hs = (size_t)(tr->config.dim / tr->config.n_heads);
    for (int l = 0; l < tr->config.n_layers; l++)
        for (int g = 0; g < tr->config.n_kv_heads; g++)
            for (int j = 0; j < count; j++) {
                const float *kv = node_kv_at(tr, node_kv, l, g, path[j]);
                put_kv(tr, l, g, (size_t)(pos + j), kv, kv + hs);
            }
}

// The draft model's tree pass: a level of tree nodes in ONE masked draft pass; its cache keeps the
// context only, so the root is not a row (its children's parent is the context, -1).
static int propose_tree_model(ModelDrafter *md, float *node_kv, float *q, const Tree *t, int first, int pos) {
    Transformer *dm = md->base.model;
    int V = dm->config.vocab_size, n_rows = t->n - first, parent[TREE_MAX];
    if (pos + t->depth[t->n - 1] - 1 >= dm->config.seq_len) return 0; // the deepest node
    for (int v = 0; v < t->n; v++) parent[v] = t->parent[v] > 0 ? t->parent[v] : -1;
    const float *logits = forward_tree(dm, node_kv, t->token + first, first, parent, n_rows, pos);
    md->cached = pos;
    md->logits = logits;
    for (int i = 0; i < n_rows; i++)
        if (!probs_from_logits(md->sampler, q + (size_t)i * V, logits + (size_t)i * V)) return 0;
    return 1;
}

// Candidate j's coin for `purpose` at pos: candidate 0's is the chain's, later ones' are keyed by 4 pos + 3
static float candidate_coin(const Rng *r, int pos, int purpose, int j) {
    if (j == 0) return coin_at(r, pos, purpose);
    return coin_of(mix64(rng_at(r, 4 * (uint64_t)pos + 3) + (uint64_t)(2 * j + purpose) * RNG_GAMMA));
}

// q_{j+1} from q_j (n, in place): x removed, renormalised; returns the mass left (0: used up)
static float remove_candidate(float *q, int n, int x) {
    float mass = 0.0f;
    q[x] = 0.0f;
    for (int i = 0; i < n; i++) mass += q[i];
    for (int i = 0; mass > 0.0f && i < n; i++) q[i] /= mass;
    return mass;
}

// Candidates x[0..b) under node v of the tree, at position pos: drawn from v's q (row v of sp->q) without
// replacement (candidate j with candidate_coin j), then, once q is used up, by v's draft logits (row v of
// ql), the best remaining first (onehot[j] = 1). work (V) is scratch.
static void draw_candidates(const Speculator *sp, int *x, int *onehot, int b, int v, int pos) {
    Trees *ts = sp->trees;
    int n = sp->target->config.vocab_size;
    const float *logits = ts->ql + (size_t)v * n;
    float mass = 1.0f, *qc = ts->work;
    memcpy(qc, sp->q + (size_t)v * n, (size_t)n * sizeof(float));
    for (int j = 0; j < b; j++) {
        onehot[j] = mass <= 0.0f;
        if (!onehot[j]) {
            x[j] = sample(qc, n, candidate_coin(sp->rng, pos, COIN_DRAW, j));
            mass = remove_candidate(qc, n, x[j]);
            continue;
        }
        x[j] = -1;
        for (int i = 0; i < n; i++) { // the best logit no earlier candidate took
            int taken = 0;
            for (int s = 0; s < j; s++) taken |= x[s] == i;
            if (!taken && (x[j] < 0 || logits[i] > logits[x[j]])) x[j] = i;
        }
    }
}

// Append candidate x (one-hot or not) as the next child of node v.
static int add_child(Tree *t, int v, int x, int onehot) {
    int c = t->n++;
    t->token[c] = x, t->parent[c] = v, t->depth[c] = t->depth[v] + 1, t->count[c] = 0, t->onehot[c] = onehot;
    t->kids[v][t->count[v]++] = c;
    return c;
}

// Recursive rejection sampling at node v, position pos: its candidates against p (row v of sp->p,
// made the residual as they fail) and q (row v of sp->q, copied to work, made q_j as they fail).
// Returns the accepted child, or -1 with the token drawn from the final residual in vd->token.
static int decide_candidates(Speculator *sp, Verdict *vd, int v, int pos) {
    Trees *ts = sp->trees;
    const Tree *t = &ts->tree;
    const Rng *rng = sp->rng;
    int n = sp->target->config.vocab_size;
    float *p = sp->p + (size_t)v * n, *q = ts->work, *onehot = q + n, *residual = q + 2 * n;
    memcpy(q, sp->q + (size_t)v * n, (size_t)n * sizeof(float));
    *vd = (Verdict){.x = -1, .r = coin_at(rng, pos, COIN_RESAMPLE)};
    for (int j = 0; j < t->count[v]; j++) {
        int c = t->kids[v][j], x = t->token[c];
        const float *qj = q;
        if (t->onehot[c]) {
            memset(onehot, 0, (size_t)n * sizeof(float));
            onehot[x] = 1.0f;
            qj = onehot;
        }
        *vd = (Verdict){.x = x, .d = candidate_coin(rng, pos, COIN_DRAW, j), .q = qj[x], .p = p[x],
                        .u = candidate_coin(rng, pos, COIN_ACCEPT, j), .r = vd->r};
        ts->tested[t->depth[v]] = j + 1;
        vd->accepted = vd->u < acceptance_ratio(vd->p, vd->q, 1.0f);
        if (vd->accepted) {
            vd->token = x;
            return c;
        }
        vd->residual_mass = residual_distribution(residual, p, qj, 1.0f, n);
        memcpy(p, residual, (size_t)n * sizeof(float));
        if (!t->onehot[c]) remove_candidate(q, n, x);
    }
    vd->token = sample(p, n, vd->r);
    return -1;
}

// One round with a draft tree of up to `depth` levels from n committed tokens (the trees' branch: the
// children per node at each depth). tokens (n, room for n+depth+1); appends the round's tokens.
static Round tree_step(Speculator *sp, int *tokens, int n, int depth) {
    Trees *ts = sp->trees;
    int V = sp->target->config.vocab_size, *path = ts->path, n_path = 0;
    size_t row = (size_t)V;
    Tree *t = &ts->tree; // kept after the round for the -v trace
    *t = (Tree){.n = 1, .token = {tokens[n - 1]}, .parent = {-1}};
    Round rd = {0};

    // 1. draft: the root's q (position n), then candidates level by level; the new level's q from ONE
    // masked draft pass over its nodes (their ancestors' keys and values kept from the passes before)
    int ok = depth > 0 && propose(sp, tokens, n, 0); // its x: candidate 0's
    if (ok) memcpy(ts->ql, ts->draft->logits, row * sizeof(float));
    for (int first = 0; ok && rd.k < depth; rd.k++) {
        int last = t->n, cx[TREE_BRANCH], oh[TREE_BRANCH];
        for (int v = first; v < last; v++) {
            int b = ts->branch[rd.k];
            draw_candidates(sp, cx, oh, b, v, n + t->depth[v]);
            for (int j = 0; j < b && t->n < TREE_MAX; j++) add_child(t, v, cx[j], oh[j]);
        }
        first = last;
        if (rd.k + 1 == depth || first == t->n) continue;
        double t0 = now_seconds();
        ok = propose_tree_model(ts->draft, ts->draft_kv, sp->q + first * row, t, first, n);
        ts->draft_seconds += now_seconds() - t0;
        if (ok) memcpy(ts->ql + first * row, ts->draft->logits, (size_t)(t->n - first) * row * sizeof(float));
    }
    for (int v = rd.k = 0; v < t->n; v++) rd.k = t->depth[v] > rd.k ? t->depth[v] : rd.k;
    rd.drafted = t->n - 1;

    // 2. verify: ONE target pass over every node, each seeing its ancestors -> p per node
    const float *logits = forward_tree(sp->target, ts->target_kv, t->token, 0, t->parent, t->n, n - 1);

    // 3. walk down from the root, each node's candidates by the rule; a leaf decides as the chain's last
    for (int v = 0;;) {
        int i = t->depth[v], pos = n + i;
        float *p = sp->p + v * row;
        if (!probs_from_logits(sp->sampler, p, logits + v * row)) die_logits(sp->target, pos, sp->sampler->temperature);
        rd.committed = i + 1;
        Verdict *vd = &sp->verdicts[i];
        ts->tested[i] = 1;
        if (t->count[v] == 0) { // proposed now, as the chain's slot i
            if (!propose(sp, tokens, pos, i)) { // no proposal: draw from p alone
                tokens[pos] = vd->token = sample(p, V, vd->d);
                rd.plain = 1;
                break;
            }
            tokens[pos] = decide(vd, p, sp->q + i * row, sp->residual, V, 1.0f);
            rd.drafted++;
            rd.accepted += vd->accepted;
            break;
        }
        int c = decide_candidates(sp, vd, v, pos);
        tokens[pos] = vd->token;
        if (c < 0) break;
        rd.accepted++;
        path[n_path++] = v = c;
    }

    // 4. the accepted path into the target's cache; the draft's holds the context and catches up
    commit_path(sp->target, ts->target_kv, path, n_path, n);
    rewind_model(&ts->draft->base, n + rd.accepted);
    return rd;
}

// sp's trees, --tree B1,B2,... (branch[d] children at depth d), one block; sp's drafter: a model
static void build_trees(Speculator *sp, const int *branch, int depth) {
    size_t V = (size_t)sp->target->config.vocab_size, nt = node_kv_floats(sp->target);
    size_t nd = node_kv_floats(sp->drafter->model);
    Trees *ts = sp->trees = xmalloc(sizeof(Trees) + ((TREE_MAX + 3) * V + nt + nd) * sizeof(float), "trees");
    ts->depth = depth, ts->draft = (ModelDrafter *)sp->drafter, ts->ql = (float *)(ts + 1);
    ts->work = ts->ql + TREE_MAX * V, ts->target_kv = ts->work + 3 * V, ts->draft_kv = ts->target_kv + nt;
    memcpy(ts->branch, branch, sizeof(ts->branch));
    sp->step = tree_step;
}

// ============================================================================
// APPENDICES: the implementations the method above calls
// ============================================================================

// ----------------------------------------------------------------------------
// Appendix A. Errors and memory: one message naming the file or flag, then exit code 1
//
// Each block's header links it into the one list (Part I), which die() releases whole: an
// error path leaks nothing (LeakSanitizer is quiet). The hot path never allocates.

typedef struct Owned {
    struct Owned *prev, *next;
    void *base;                // what malloc returned
    void (*release)(void *);   // or a resource with its own release (the thread pool)
    size_t bytes;              // what it holds (counted in `allocated`)
} Owned;

static size_t allocated;       // bytes owned now: every block counts against memory_limit()
static Owned owned = {.prev = &owned, .next = &owned}; // the list's sentinel

// Put o at the list's end: it holds base (released by fn, or freed) and `bytes` bytes
static void own(Owned *o, void *base, void (*fn)(void *), size_t bytes) {
    *o = (Owned){owned.prev, &owned, base, fn, bytes};
    owned.prev->next = o, owned.prev = o;
    allocated += bytes;
}

// Take one entry off the list: run its release, or free it.
static void release(Owned *o) {
    o->prev->next = o->next, o->next->prev = o->prev;
    allocated -= o->bytes;
    if (o->release) o->release(o->base), free(o);
    else free(o->base);
}

// All owned since `mark` (&owned: all), newest first: the thread pool stops before its memory goes
static void *owned_mark(void) { return owned.prev; }
static void release_since(void *mark) { while (owned.prev != (Owned *)mark) release(owned.prev); }

#ifdef SPECDEC_FUZZ
#include <setjmp.h>
static jmp_buf *fuzz_on_error; // fuzz/ harnesses catch die() here instead of exiting
#endif

static OutputFile json_out; // -j's file, planned before any work (model.h)

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
#ifndef SPECDEC_FUZZ
    fprintf(stderr, "specdec: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    if (json_out.name[0]) fprintf(stderr, "specdec: -j %s: not written (left as it was)\n", json_out.name);
#endif
    abort_output(&json_out);
    json_out.name[0] = '\0';
    va_end(ap);
    release_since(&owned);
#ifdef SPECDEC_FUZZ
    if (fuzz_on_error) longjmp(*fuzz_on_error, 1);
#endif
    exit(EXIT_FAILURE);
}

// The numbers on the first line of file dir/name into v: how many (0 to 2)
static int numbers_in(const char *dir, const char *name, double v[2]) {
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    int got = f ? fscanf(f, "%lf %lf", &v[0], &v[1]) : 0;
    if (f) fclose(f);
    return got > 0 ? got : 0;
}

// One cgroup directory's memory limit (v2's memory.max, v1's memory.limit_in_bytes); 0: none
static double memory_max_in(const char *dir) {
    double v[2];
    return numbers_in(dir, "memory.max", v) == 1 || numbers_in(dir, "memory.limit_in_bytes", v) == 1 ? v[0] : 0;
}

// The tightest limit in(dir) of this process's cgroups for `controller` (0: none). `self` lists them
// ("0::/path" for v2, "N:cpu,cpuacct:/path" for v1), their directories under `root` (v1's under
// root/controller). Every prefix of a path is tried, "/" too: a container's path may be the host's.
static double cgroup_limit(const char *root, const char *self, const char *controller, double (*in)(const char *)) {
    char line[1024], dir[1300];
    FILE *f = fopen(self, "r");
    double best = 0;
    if (!f) return 0;
    while (fgets(line, sizeof line, f)) {
        char *ctl = strchr(line, ':'), *cg = ctl ? strchr(ctl + 1, ':') : NULL;
        if (!cg) continue;
        *cg++ = '\0'; // ctl + 1: the controllers ("" in v2), cg: the path
        if (ctl[1] && !strstr(ctl + 1, controller)) continue; // (cpuset's path, read for cpu too, adds nothing)
        for (size_t len = strcspn(cg, "\n");;) { // the path, then each parent
            snprintf(dir, sizeof dir, "%s%s%s%.*s", root, ctl[1] ? "/" : "", ctl[1] ? controller : "", (int)len, cg);
            double n = in(dir);
            if (n > 0 && (best == 0 || n < best)) best = n;
            if (len == 0) break;
            while (len > 0 && cg[--len] != '/') continue; // back to the last '/'
        }
    }
    fclose(f);
    return best;
}

// What the run may allocate, all models and buffers together: half the memory this process may use
// (physical, or its cgroup's), so a huge header is refused at load, not failing (or swapping) mid-run.
static size_t memory_limit(void) {
#ifdef SPECDEC_MEMORY_LIMIT // the fuzz targets' smaller bound
    return SPECDEC_MEMORY_LIMIT;
#endif
    static size_t limit; // measured once
    if (limit) return limit;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    double bytes = pages > 0 && page > 0 ? (double)pages * (double)page : 0x1p62;
    double cg = cgroup_limit("/sys/fs/cgroup", "/proc/self/cgroup", "memory", memory_max_in);
    if (cg > 0 && cg < bytes) bytes = cg;
    return limit = (size_t)(bytes / 2);
}

// n zeroed bytes, `align`-aligned (a power of two, 0 for malloc's), owned. A block of 4 MB or more
// (packed weights, KV caches) starts on a 2 MB boundary and asks the kernel for 2 MB pages: a 20 MB model
// then faults in 10 pages instead of 5000 and its matmuls stream it through 10 TLB entries.
#define HUGE_PAGE ((size_t)2 << 20)
static void *xmalloc_aligned(size_t n, size_t align, const char *what) {
#ifdef MADV_HUGEPAGE
    int huge = n >= 2 * HUGE_PAGE;
    if (huge) align = HUGE_PAGE;
#endif
    size_t pad = sizeof(Owned) + align, limit = memory_limit();
    if (n > limit - allocated)
        die("%s: %zu more bytes would pass the %.1f GB this run allows itself (half of the memory this "
            "process may use, physical or its cgroup's)", what, n, (double)limit / 1e9);
    char *raw = n < SIZE_MAX - pad ? calloc(n + pad, 1) : NULL;
    if (!raw) die("out of memory allocating %zu bytes for %s", n, what);
    uintptr_t at = (uintptr_t)(raw + sizeof(Owned));
    if (align) at = (at + align - 1) & ~(uintptr_t)(align - 1);
#ifdef MADV_HUGEPAGE
    if (huge) madvise((void *)at, n, MADV_HUGEPAGE); // advice: its failure changes nothing
#endif
    own((Owned *)at - 1, raw, NULL, n);
    return (void *)at;
}

static void *xmalloc(size_t n, const char *what) { return xmalloc_aligned(n, 0, what); }

// Non-finite logits (of finite weights, for the causes the message names) would sample
// garbage: the target's end the run, naming the position; a draft's only cost its proposal.
static void die_logits(const Transformer *tr, int pos, float temperature) {
    die("%s: the logits at position %d are not finite (inf or NaN): its activations overflow "
        "float32%s", tr->path, pos, temperature > 0 ? ", or -t is too small for its logits (-t 0 is greedy)" : "");
}

// n floats, 64-byte aligned (a panel row is one cache line), zeroed
static float *xmalloc_floats_aligned(size_t n, const char *what) {
    if (n > SIZE_MAX / sizeof(float) - 64) die("%s: %zu floats do not fit in memory", what, n);
    return xmalloc_aligned(n * sizeof(float), 64, what);
}

static void xfree(void *block) { if (block) release((Owned *)block - 1); }

// an owned entry for a resource with its own release function
static void own_resource(void *base, void (*fn)(void *)) {
    Owned *o = malloc(sizeof(Owned));
    if (!o) fn(base), die("out of memory");
    own(o, base, fn, 0);
}

// release the owned entry whose base is `base` (a resource)
static void release_resource(void *base) {
    Owned *o = owned.prev;
    while (o != &owned && (o->base != base || !o->release)) o = o->prev;
    if (o != &owned) release(o);
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// ----------------------------------------------------------------------------
// Appendix B. Loading: read a llama2.c checkpoint, check every field, pack the matrices

static size_t panels_of(int d) { return (size_t)(d + PANEL - 1) / PANEL; }

// The run state's buffers for T rows on `threads` threads, 64-byte aligned one after another from base
// (NULL: none placed); returns their bytes (SIZE_MAX: too many): build_run_state's, check_memory's.
static size_t layout_run_state(RunState *s, const Config *c, int T, int threads, char *base) {
    size_t dim = (size_t)c->dim, t = (size_t)T, kv_dim = (size_t)c->n_kv_heads * (dim / (size_t)c->n_heads);
    s->seq_pad = (c->seq_len + LANES - 1) / LANES * LANES;
    s->qkv_stride = c->dim + 2 * (int)kv_dim;
    s->h13_stride = (int)(2 * panels_of(c->hidden_dim) * PANEL);
    size_t cache = mul_size(mul_size((size_t)c->n_layers, (size_t)s->seq_pad), kv_dim), off = 0;
    struct { float **at; size_t n; } b[] = {
        {&s->x, t * dim}, {&s->xn, (size_t)threads * t * dim}, {&s->qkv, t * (size_t)s->qkv_stride},
        {&s->xb, t * dim}, {&s->xb2, t * dim}, {&s->h13, t * (size_t)s->h13_stride},
        {&s->hb, t * (size_t)c->hidden_dim}, {&s->att, mul_size(t * (size_t)c->n_heads, (size_t)s->seq_pad)},
        {&s->logits, t * (size_t)c->vocab_size}, {&s->key_cache, cache}, {&s->value_cache, cache}};
    for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++) {
        if (base) *b[i].at = (float *)(void *)(base + off);
        off = add_size(off, add_size(mul_size(b[i].n, sizeof(float)), 63) & ~(size_t)63);
    }
    return off;
}

// The run state in one block (s->x its start), written now: the kernel maps a big block's pages on first
// write, page by page inside the generation's clock (PERFORMANCE.md: "KV caches written at load").
static void build_run_state(RunState *s, const Config *c, int T, int threads) {
    size_t bytes = layout_run_state(s, c, T, threads, NULL);
    char *base = xmalloc_aligned(bytes, 64, "activations and KV caches");
    memset(base, 0, bytes);
    layout_run_state(s, c, T, threads, base);
}

// int8 (a version-2 model, Appendix C's q8 tiles): panel i of W holds its 16 rows group by group: group g
// is gs / 4 quads of 64 bytes, quad k/4 holding W[16i + j][k..k+3] + Q8_BIAS as word j, then the 16 rows'
// scales of the group (one line), so a matmul streams values and scales front to back once. Q8_BIAS: VNNI's
// step takes the weights as unsigned bytes, so they are stored + 128 (each sign bit flipped once, here, not
// in every step: PERFORMANCE.md, "int8 weights stored unsigned")
#define Q8_BIAS (HAVE_VNNI ? 128 : 0)
#define Q8_MAX_N 16384 // the longest row int8 takes (sizes matmul_panels' per-thread buffers)
static size_t q8_group_bytes(int gs) { return (size_t)gs * PANEL + PANEL * sizeof(float); }
static int8_t *q8_group_at(const Matrix *m, int i, int g) {
    return m->w8 + ((size_t)i * (size_t)(m->n / m->gs) + (size_t)g) * q8_group_bytes(m->gs);
}

// Bytes of a packed W (d, n): floats, or int8 in groups of gs
static size_t matrix_bytes(int d, int n, int gs) {
    return mul_size(panels_of(d), gs ? (size_t)(n / gs) * q8_group_bytes(gs) : (size_t)n * PANEL * sizeof(float));
}

// m: a packed W (d, n) at `at` (int8 in groups of gs, or 0: floats), rows still zero; returns the end
static void *place_matrix(Matrix *m, void *at, int d, int n, int gs, int streamed) {
    *m = (Matrix){.w = gs ? NULL : at, .w8 = gs ? at : NULL, .gs = gs, .d = d, .n = n, .n_panels = (int)panels_of(d),
                  .streamed = streamed};
    return (char *)at + matrix_bytes(d, n, gs);
}

// Rows j0..j0+r-1 (r <= PANEL) of m from src (r, n) row-major, int8 with their groups' scales
// sc (r, n/gs): transposed into their panels, each line of a panel written whole at once
static void pack_block(Matrix *m, int j0, int r, const void *src, const float *sc) {
    size_t n = (size_t)m->n, gs = (size_t)m->gs, G = gs ? n / gs : 0;
    char *to[PANEL]; // row j's first slot
    for (int j = 0; j < r; j++)
        to[j] = gs ? (char *)q8_group_at(m, (j0 + j) / PANEL, 0) + (j0 + j) % PANEL * 4
                   : (char *)(m->w + (size_t)((j0 + j) / PANEL) * n * PANEL + (j0 + j) % PANEL);
    for (size_t k = 0; !gs && k < n; k++)
        for (int j = 0; j < r; j++) ((float *)(void *)to[j])[k * PANEL] = ((const float *)src)[j * n + k];
    for (size_t g = 0; g < G; g++)
        for (int j = 0; j < r; j++) {
            char *at = to[j] + g * q8_group_bytes(m->gs);
            for (size_t k = 0; k < gs; k += 4) { // a quad at a time, each byte + Q8_BIAS (its sign bit flipped)
                uint32_t quad;
                memcpy(&quad, (const int8_t *)src + j * n + g * gs + k, 4), quad ^= Q8_BIAS * 0x01010101u;
                memcpy(at + k * PANEL, &quad, 4);
            }
            memcpy(at + gs * PANEL, sc + j * G + g, sizeof(float));
        }
}

// W (d, n) row-major floats at w -> m, packed into dst; returns the end
static float *pack_matrix(Matrix *m, float *dst, const float *w, int d, int n) {
    float *end = place_matrix(m, dst, d, n, 0, 0);
    for (int j = 0; j < d; j += PANEL) pack_block(m, j, d - j < PANEL ? d - j : PANEL, w + (size_t)j * n, NULL);
    return end;
}

// Row j of m into out (n) as floats, an int8 value times its group's scale: the embedding's lookup
static void matrix_row(float *out, const Matrix *m, int j) {
    for (int k = 0; k < m->n; k++) {
        const int8_t *g = m->gs ? q8_group_at(m, j / PANEL, k / m->gs) : NULL;
        float s;
        if (g) memcpy(&s, g + m->gs * PANEL + j % PANEL * 4, sizeof(s));
        out[k] = g ? (float)(int8_t)(g[k % m->gs / 4 * 4 * PANEL + j % PANEL * 4 + k % 4] ^ Q8_BIAS) * s
                   : m->w[((size_t)(j / PANEL) * m->n + k) * PANEL + j % PANEL];
    }
}

// Bytes of all packed matrices, the embedding's own when not shared (SIZE_MAX: too many to count)
static size_t packed_bytes(const Config *c, int gs, int shared) {
    int dim = c->dim, kv_dim = c->n_kv_heads * (c->dim / c->n_heads);
    size_t per_layer = add_size(matrix_bytes(dim + 2 * kv_dim, dim, gs), matrix_bytes(dim, dim, gs));
    per_layer = add_size(per_layer, matrix_bytes(2 * (int)panels_of(c->hidden_dim) * PANEL, dim, gs));
    per_layer = add_size(per_layer, matrix_bytes(dim, c->hidden_dim, q80_row_group(gs, c->hidden_dim)));
    size_t classifiers = mul_size(2 - (size_t)shared, matrix_bytes(c->vocab_size, dim, gs));
    return add_size(mul_size((size_t)c->n_layers, per_layer), classifiers);
}

// What a model holds besides its packed matrices: the norms and RoPE tables, and while it loads each
// thread's buffer (load_block's): a message, PANEL rows as floats, as int8 and two sets of scales
static size_t tables_floats(const Config *c) {
    return (2 * (size_t)c->n_layers + 1) * (size_t)c->dim + (size_t)c->seq_len * (size_t)(c->dim / c->n_heads);
}
#define SCRATCH_VALUES(c) ((size_t)PANEL * (size_t)((c)->dim > (c)->hidden_dim ? (c)->dim : (c)->hidden_dim))
#define SCRATCH_BYTES(c) (576 + 7 * SCRATCH_VALUES(c))

// 0, or -1 with what it needs and how it could fit in msg: a model (c with seq_len the run's positions;
// int8 in groups of gs, or 0: f32) whose weights, tables, state and load buffers pass the limit
static int check_memory(const Config *c, int gs, int shared, int max_rows, int threads, char *msg, size_t len) {
    RunState s;
    size_t weights = packed_bytes(c, gs, shared), state = layout_run_state(&s, c, max_rows, threads, NULL);
    size_t rest = add_size(add_size(tables_floats(c) * sizeof(float), mul_size((size_t)threads, SCRATCH_BYTES(c))),
                           add_size(state, allocated)), need = add_size(weights, rest), limit = memory_limit();
    if (need <= limit) return 0;
    size_t kv = 2 * (size_t)c->n_layers * (size_t)s.seq_pad * (size_t)(c->n_kv_heads * (c->dim / c->n_heads)) * 4;
    size_t int8 = add_size(packed_bytes(c, q80_group_size(c), shared), rest);
    size_t n = (size_t)snprintf(msg, len, "dim %d, %d layers, vocab %d: needs %.1f GB (%.1f GB of %s weights, %.1f GB "
                                "of KV caches for %d positions, %.1f GB held already) where specdec allows a run %.1f "
                                "GB, half of the memory it may use (physical or its cgroup's)", c->dim, c->n_layers,
                                c->vocab_size, (double)need / 1e9, (double)weights / 1e9, gs ? "int8" : "f32",
                                (double)kv / 1e9, c->seq_len, (double)allocated / 1e9, (double)limit / 1e9);
    if (kv > need / 4 && n < len) // the caches: prompt + -n, or all of seq_len without -n
        n += (size_t)snprintf(msg + n, len - n, "; fewer positions need less (a smaller -n): %.1f MB each",
                              (double)kv / c->seq_len / 1e6);
    if (!gs && q80_group_size(c) && n < len)
        snprintf(msg + n, len - n, "; as int8 (--target-weights or --draft-weights int8) it would need %.1f GB%s",
                 (double)int8 / 1e9, int8 > limit ? ": too much as well" : "");
    return -1;
}

// How a model keeps an f32 file's matrices: as its floats, or quantised at load as export.py --version 2
// would (model.h's q80_group, groups of q80_group_size). A version-2 file is int8 either way.
enum { WEIGHTS_F32, WEIGHTS_INT8 };
static const char *const WEIGHTS_NAME[] = {"f32", "int8"}; // as --target-weights/--draft-weights spell them

// Open an input, a regular file, registered as an input of the run (model.h): its fd and *st; die naming
// it otherwise. O_NONBLOCK: opening a FIFO must not wait for a writer, so that fstat can refuse it.
static void close_fd(void *fd) { close((int)(intptr_t)fd); }
static int open_input(const char *path, const char *what, struct stat *st) {
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0) die("%s: cannot open %s: %s", path, what, strerror(errno));
    own_resource((void *)(intptr_t)fd, close_fd); // closed by die() too, or by close_input
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) die("%s: not a regular file (expected the %s)", path, what);
    char msg[2 * IO_PATH_MAX + 512], name[IO_PATH_MAX + 64]; // "the tokenizer (-z FILE) tok.bin": the registry's
    snprintf(name, sizeof(name), "the %s %s", what, path);
    if (note_input(fd, name, msg, sizeof(msg))) die("%s", msg);
    return fd;
}
static void close_input(int fd) { release_resource((void *)(intptr_t)fd); }

// n bytes of the file open at fd from byte `at` into buf: 0, or -1 and msg (a short read: it changed)
static int read_at(int fd, void *buf, size_t n, size_t at, char *msg, size_t len) {
    for (size_t got = 0; got < n;) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(at + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
            return snprintf(msg, len, "read failed at byte %zu: %s (did the file change while it was read?)", at + got,
                            r < 0 ? strerror(errno) : "end of file"), -1;
        got += (size_t)r;
    }
    return 0;
}

// A check on a file's first HEAD_BYTES (zero-padded) and size before its body: 0, or -1 and msg
#define HEAD_BYTES Q80_HEADER_BYTES // the longest header an input has (model.h)
typedef int (*HeadCheck)(const void *ctx, const unsigned char *head, size_t bytes, char *msg, size_t len);

// Read a whole file (with a NUL after its n bytes); die naming it on any error. The file (open_input's)
// passes `check` (NULL: none) first, so a large file of the wrong kind costs neither memory nor time.
static unsigned char *read_file_checked(const char *path, const char *what, size_t *n_out, HeadCheck check,
                                        const void *ctx) {
    struct stat st;
    int fd = open_input(path, what, &st);
    char msg[2 * IO_PATH_MAX + 512];
    size_t n = (size_t)st.st_size;
    unsigned char head[HEAD_BYTES] = {0};
    ssize_t h = pread(fd, head, n < HEAD_BYTES ? n : HEAD_BYTES, 0);
    if (check && (h < 0 || check(ctx, head, n, msg, sizeof(msg)))) die("%s: %s", path, msg);
    unsigned char *buf = xmalloc(n + 1, path); // zeroed: a NUL after the n bytes
    if (read_at(fd, buf, n, 0, msg, sizeof(msg))) die("%s: %s", path, msg);
    close_input(fd);
    *n_out = n;
    return buf;
}

// A checkpoint's header and size (model.h's check_checkpoint_head) from head, as `weights` loads it:
// config, classifier and int8 groups (gs 0: f32) into t. 1: version 2, 0: legacy, -1: see msg
static int checkpoint_config(Transformer *t, const unsigned char *head, size_t bytes, int weights, char *msg,
                             size_t len) {
    const Config *c = &t->config;
    int q80 = check_checkpoint_head(&t->config, &t->shared_classifier, &t->gs, head, bytes, msg, len);
    if (q80 == 0 && weights == WEIGHTS_INT8) t->gs = q80_group_size(c);
    if (q80 >= 0 && (q80 || weights == WEIGHTS_INT8) && (!t->gs || c->dim > Q8_MAX_N || c->hidden_dim > Q8_MAX_N))
        return snprintf(msg, len, "int8 takes dim and hidden_dim multiples of 4 up to %d, not %d and %d (use f32 "
                        "weights)", Q8_MAX_N, c->dim, c->hidden_dim), -1;
    return q80;
}

// The load streams the file through a bounded buffer into the packed matrices, the one copy of its
// weights: BLOCKS of up to PANEL rows of one matrix in one layer, in file order, each read with pread (a
// file that shrinks gives a short read, an error, never a signal), checked (f32: every float finite;
// version 2: every scale finite and >= 0), quantised (f32 as int8: q80_export's bits) and packed
// (pack_block). Blocks go to the threads in turn; the first bad one in file order names the error.
typedef struct {
    Transformer *t;
    Config file;                       // the file's config (t's seq_len may be less)
    int fd, q80, gs, progress, blocks; // gs: a version-2 file's groups
    char *scratch;                     // each thread's SCRATCH_BYTES
    int bad[MAX_THREADS], shown;       // each thread's failed block (INT_MAX: none); the percentage shown
    double t0;
} Loader;

// Block b of the stream (where: model.h's checkpoint_matrix), x its thread's scratch: 0, or -1, why at x
static int load_block(const Loader *s, int b, char *x) {
    CheckpointMatrix f;
    int i = 0, per;
    for (;; b -= f.layers * per, i++) {
        f = checkpoint_matrix(&s->file, s->t->shared_classifier, s->q80, s->gs, i);
        if (b < f.layers * (per = (f.rows + PANEL - 1) / PANEL)) break;
    }
    int l = b / per, r0 = b % per * PANEL, r = f.rows - r0 < PANEL ? f.rows - r0 : PANEL, gs = s->gs;
    int dim = s->file.dim, kv = s->file.n_kv_heads * (dim / s->file.n_heads), j0[Q80_MATRICES] = {r0, r0, dim + r0,
        dim + kv + r0, r0, 2 * r0, r0, 2 * r0 + PANEL, r0}; // where, by Q80_NAMES: Layer's qkv, w1 and w3 panels
    Layer *ly = &s->t->layers[l];
    Matrix *to[Q80_MATRICES] = {s->t->shared_classifier ? &s->t->wcls : &s->t->embedding, &ly->qkv, &ly->qkv,
                                &ly->qkv, &ly->wo, &ly->w13, &ly->w2, &ly->w13, &s->t->wcls}, *m = to[i];
    size_t n = (size_t)f.n, rn = (size_t)r * n, layer = f.at + (size_t)l * f.layer_bytes, G = m->gs ? n / m->gs : 0;
    size_t most = SCRATCH_VALUES(&s->file);
    char *raw = x + 512;
    int8_t *q = (int8_t *)(raw + most * 4);
    float *fsc = (float *)(void *)(raw + most * 5), *sc = fsc + most / 4 + 2; // the file's scales, then each row's
    if (read_at(s->fd, raw, rn * (s->q80 ? 1 : 4), layer + (size_t)r0 * n * (s->q80 ? 1 : 4), x, 512)) return -1;
    if (!s->q80) {
        if (check_finite_tensor((const float *)(void *)raw, rn, Q80_NAMES[i], ((size_t)l * (size_t)f.rows + (size_t)r0)
                                * n, (size_t)f.rows * n, n, x, 512))
            return -1;
        for (size_t g = 0; m->gs && g < rn / (size_t)m->gs; g++)
            sc[g] = q80_group(q + g * (size_t)m->gs, (const float *)(void *)raw + g * (size_t)m->gs, m->gs);
        return pack_block(m, j0[i], r, m->gs ? (const void *)q : raw, sc), 0;
    }
    size_t e0 = (size_t)r0 * n, g0 = e0 / (size_t)gs, g1 = (e0 + rn - 1) / (size_t)gs + 1; // the layer's groups here
    if (read_at(s->fd, fsc, (g1 - g0) * 4, layer + f.scales + g0 * 4, x, 512)) return -1;
    for (size_t g = g0; g < g1; g++)
        if (!(fsc[g - g0] >= 0.0f && isfinite(fsc[g - g0]))) {
            size_t at = (size_t)l * (f.scales / (size_t)gs) + g; // counted over all layers, as check_q80 does
            return snprintf(x, 512, "%s's scale %zu (of values %zu..) is %g; a scale must be finite and >= 0",
                            Q80_NAMES[i], at, at * (size_t)gs, (double)fsc[g - g0]), -1;
        }
    for (size_t j = 0; j < (size_t)r; j++) // row j's parts of groups (q80_row_group), each with its group's scale
        for (size_t k = 0; k < G; k++) sc[j * G + k] = fsc[(e0 + j * n + k * (size_t)m->gs) / (size_t)gs - g0];
    return pack_block(m, j0[i], r, raw, sc), 0;
}

// Thread tid's share of the stream: every nth block from its tid, until one fails (the threads' first
// failures hold the file's first). Thread 0 shows the percentage once the load has taken a second.
static void stream_job(void *arg, int tid, int nth) {
    Loader *s = arg;
    for (int b = tid; b < s->blocks && s->bad[tid] == INT_MAX; b += nth) {
        if (load_block(s, b, s->scratch + (size_t)tid * SCRATCH_BYTES(&s->file))) s->bad[tid] = b;
        int pct = 100 * b / s->blocks;
        if (tid == 0 && s->progress && pct != s->shown && now_seconds() - s->t0 > 1.0)
            fprintf(stderr, "\rspecdec: loading %s: %d%%", s->t->path, s->shown = pct);
    }
}

// The norms and RoPE tables (an f32 file's own, or rope_tables') into its table block: 0, or -1 and msg
static int load_tables(Loader *s, char *msg, size_t len) {
    Transformer *t = s->t;
    const Config *c = &t->config;
    TransformerWeights *w = &t->weights;
    size_t dim = (size_t)c->dim, L = (size_t)c->n_layers, rope = (size_t)c->seq_len * (dim / (size_t)c->n_heads) / 2;
    size_t off[CHECKPOINT_TENSORS], n[5] = {L * dim, L * dim, dim, rope, rope};
    w->rms_att = t->tables = xmalloc_floats_aligned(tables_floats(c), "norms and RoPE tables");
    w->rms_ffn = w->rms_att + L * dim, w->rms_final = w->rms_ffn + L * dim;
    w->rope_cos = w->rms_final + dim, w->rope_sin = w->rope_cos + rope;
    float *to[5] = {w->rms_att, w->rms_ffn, w->rms_final, w->rope_cos, w->rope_sin};
    const char *name[5] = {"rms_att", "rms_ffn", "rms_final", "freq_cis_real", "freq_cis_imag"};
    checkpoint_offsets(off, &s->file, t->shared_classifier);
    for (int i = 0, legacy[5] = {1, 6, 10, 11, 12}; i < (t->gs ? 3 : 5); i++) // version 2: the norms at 256
        if (read_at(s->fd, to[i], n[i] * 4, s->q80 ? Q80_HEADER_BYTES + (size_t)i * L * dim * 4
                                               : CONFIG_HEADER_BYTES + off[legacy[i]] * 4, msg, len) ||
            check_finite_tensor(to[i], n[i], name[i], 0, i < 3 ? dim : n[i], i < 3 ? dim : n[i] / (size_t)c->seq_len,
                                msg, len))
            return -1;
    if (t->gs) rope_tables(w->rope_cos, w->rope_sin, c->seq_len, (int)(dim / (size_t)c->n_heads));
    return 0;
}

// Every matrix of the checkpoint, placed in one allocation as Layer lays them out (Part I): the embedding
// after the classifier when it is not shared. Weights past STREAMED_BYTES come from DRAM: streamed
// (Matrix), so one panel at a time, one stream the hardware prefetcher follows (PERFORMANCE.md).
#define STREAMED_BYTES ((size_t)32 << 20) // a desktop's last-level cache
static void place_weights(Transformer *t) {
    const Config *c = &t->config;
    int streamed = packed_bytes(c, t->gs, t->shared_classifier) > STREAMED_BYTES, dim = c->dim;
    int kv = c->n_kv_heads * (c->dim / c->n_heads), h13 = 2 * (int)panels_of(c->hidden_dim) * PANEL;
    void *at = t->packed = xmalloc_aligned(packed_bytes(c, t->gs, t->shared_classifier), 64, "packed weights");
    t->layers = xmalloc((size_t)c->n_layers * sizeof(Layer), "layers");
    for (int l = 0; l < c->n_layers; l++) {
        Layer *ly = &t->layers[l];
        at = place_matrix(&ly->qkv, at, dim + 2 * kv, dim, t->gs, streamed);
        at = place_matrix(&ly->wo, at, dim, dim, t->gs, streamed);
        at = place_matrix(&ly->w13, at, h13, dim, t->gs, streamed);
        at = place_matrix(&ly->w2, at, dim, c->hidden_dim, q80_row_group(t->gs, c->hidden_dim), streamed);
    }
    at = place_matrix(&t->wcls, at, c->vocab_size, dim, t->gs, streamed);
    if (t->shared_classifier) t->embedding = t->wcls;
    else place_matrix(&t->embedding, at, c->vocab_size, dim, t->gs, streamed);
}

// The checkpoint `path` (legacy or version 2; `weights` a WEIGHTS_*) for forwards of up to max_rows rows
// on `threads` threads of `pool` (NULL: one) at positions below `positions` (or the file's seq_len): its
// header, size and the memory it needs checked before anything large is allocated, then streamed
// (Loader), every weight checked; the file must not change meanwhile. progress: show the percentage.
static void load_transformer(Transformer *t, const char *path, int max_rows, ThreadPool *pool, int threads,
                             int weights, int positions, int progress) {
    *t = (Transformer){.max_rows = max_rows, .pool = pool, .n_threads = pool && threads > 1 ? threads : 1,
                       .path = path};
    struct stat st, end;
    Loader s = {.t = t, .fd = open_input(path, "checkpoint (a llama2.c .bin)", &st),
                .progress = progress && isatty(STDERR_FILENO), .t0 = now_seconds(), .shown = -1};
    char msg[1024]; // the header, the file's size, the memory, then every weight (model.h)
    unsigned char head[HEAD_BYTES] = {0};
    if (read_at(s.fd, head, (size_t)st.st_size < HEAD_BYTES ? (size_t)st.st_size : HEAD_BYTES, 0, msg, sizeof(msg)) ||
        (s.q80 = checkpoint_config(t, head, (size_t)st.st_size, weights, msg, sizeof(msg))) < 0)
        die("%s: %s", path, msg);
    s.gs = s.q80 ? t->gs : 0, s.file = t->config;
    if (t->config.seq_len > positions) t->config.seq_len = positions; // what KV caches and RoPE tables hold
    if (check_memory(&t->config, t->gs, t->shared_classifier, max_rows, t->n_threads, msg, sizeof(msg)))
        die("%s: %s", path, msg);
    place_weights(t);
    if (load_tables(&s, msg, sizeof(msg))) die("%s: %s", path, msg);
    for (int i = 0; i < Q80_MATRICES; i++) {
        CheckpointMatrix f = checkpoint_matrix(&s.file, t->shared_classifier, s.q80, s.gs, i);
        s.blocks += f.layers * ((f.rows + PANEL - 1) / PANEL);
    }
    s.scratch = xmalloc((size_t)t->n_threads * SCRATCH_BYTES(&s.file), "load buffers");
    for (int i = 0; i < MAX_THREADS; i++) s.bad[i] = INT_MAX;
    pool_run(pool, t->n_threads, stream_job, &s);
    if (s.shown >= 0) fprintf(stderr, "\r\033[K"); // the percentage's line, erased
    for (int i = 1; i < t->n_threads; i++) // the first failed block in file order names the error
        if (s.bad[i] < s.bad[0]) s.bad[0] = s.bad[i], memcpy(s.scratch, s.scratch + i * SCRATCH_BYTES(&s.file), 512);
    if (s.bad[0] < INT_MAX) die("%s: %s", path, s.scratch);
    if (fstat(s.fd, &end) || end.st_size != st.st_size || end.st_mtim.tv_sec != st.st_mtim.tv_sec ||
        end.st_mtim.tv_nsec != st.st_mtim.tv_nsec)
        die("%s: the file changed while it was read (its size or time); load it once it is written", path);
    close_input(s.fd);
    xfree(s.scratch);
    build_run_state(&t->state, &t->config, max_rows, t->n_threads);
}

// A model for this run on `threads` threads, loaded on all: KV caches and RoPE tables for the prompt (a
// token a byte at most, BOS and a space), -n and a pass past them; without -n, the whole context
static void load_for_run(Transformer *t, const char *path, ThreadPool *pool, int threads, int weights,
                         const Options *o) {
    int rows = o->tree ? TREE_MAX : MAX_ROWS; // a pass's rows: a verify pass's, or a tree's nodes
    size_t n = strlen(o->prompt) + 2 + (size_t)o->n_new + (size_t)rows;
    load_transformer(t, path, rows, pool, o->threads, weights, given(o, "-n") && n < INT_MAX ? (int)n : INT_MAX,
                     !o->quiet);
    t->n_threads = pool && threads > 1 ? threads : 1;
}

// The vocab_size in a checkpoint's header, or 0 if it cannot be read
static int header_vocab(const char *path) {
    int32_t h[9];
    FILE *f = fopen(path, "rb");
    int ok = f && fread(h, sizeof(h), 1, f) == 1;
    if (f) fclose(f);
    int v = ok && h[0] == Q80_MAGIC && h[1] == 2 ? h[7] : h[5]; // a version-2 file: the config after 8 bytes
    return ok && v != INT32_MIN ? abs(v) : 0;
}

// What ran, into *weights (the JSON's): a version-2 file is int8 whatever --W-weights asked
static void ran_weights(const Options *o, int *weights, const Transformer *t, const char *flag) {
    if (given(o, flag) && *weights == WEIGHTS_F32 && t->gs)
        fprintf(stderr, "specdec: warning: %s f32 ignored: %s is a version-2 file, int8 as written\n", flag, t->path);
    *weights = t->gs ? WEIGHTS_INT8 : WEIGHTS_F32;
}

// -m draft: the draft as spec mode uses it, so it must fit the target named
static Transformer *load_draft_alone(Transformer *draft, Options *o, ThreadPool *pool) {
    int v = o->target_named ? header_vocab(o->target_path) : 0;
    if (o->target_named && !v)
        die("%s: cannot open checkpoint, or no header (-m draft checks the draft against the target named)",
            o->target_path);
    load_for_run(draft, o->draft_path, pool, o->draft_threads, o->draft_weights, o);
    ran_weights(o, &o->draft_weights, draft, "--draft-weights");
    if (o->target_named && v != draft->config.vocab_size)
        die("%s: vocab_size %d differs from the target's %d (%s); -m draft runs the draft (-d, default "
            "weights/draft.bin) that would speculate for it: name one with its vocabulary", o->draft_path,
            draft->config.vocab_size, v, o->target_path);
    return draft;
}

// Load what the mode needs and return the decoding model: the target (the draft alone for -m draft) and,
// for spec, the draft. No -d, and the default draft does not fit the target: the target alone (-m
// target), as llama2.c's run.c would decode it; a draft the user named must fit.
static Transformer *load_models(Transformer *target, Transformer *draft, Options *o, ThreadPool *pool) {
    if (!strcmp(o->mode, "draft")) return load_draft_alone(draft, o, pool);
    load_for_run(target, o->target_path, pool, o->threads, o->target_weights, o);
    ran_weights(o, &o->target_weights, target, "--target-weights");
    int V = target->config.vocab_size, v;
    if (strcmp(o->mode, "spec") || o->lookup || o->medusa || o->eagle) return target;
    if (!given(o, "-d") && (v = header_vocab(o->draft_path)) != V) {
        char why[64] = "is missing or unreadable";
        if (v) snprintf(why, sizeof(why), "has vocab_size %d, not %d", v, V);
        const char *asked = given(o, "-k") ? "-k" : o->tree ? "--tree" : o->verbose ? "-v" : o->lenience < 1.0f
                          ? "--lenience" : NULL; // these ask for speculation: no quiet fallback
        if (asked)
            die("%s: the default draft %s %s; name a draft with %s's vocabulary (-d FILE) or -d lookup", asked,
                o->draft_path, why, o->target_path);
        fprintf(stderr, "specdec: note: the default draft %s %s, so %s decodes alone (-m target); to speculate, "
                "name a draft with its vocabulary (-d FILE) or -d lookup\n", o->draft_path, why, o->target_path);
        o->mode = "target";
        return target;
    }
    load_for_run(draft, o->draft_path, pool, o->draft_threads, o->draft_weights, o);
    ran_weights(o, &o->draft_weights, draft, "--draft-weights");
    struct stat ts, ds; // sizes on disk, both float32: a bigger draft is probably the two swapped
    if (!stat(o->target_path, &ts) && !stat(o->draft_path, &ds) && ds.st_size > ts.st_size)
        fprintf(stderr, "specdec: warning: the draft %s (%.1f MB) is larger than the target %s (%.1f MB): drafting "
                "costs more than it saves; swapped? (specdec TARGET.bin -d DRAFT.bin)\n", o->draft_path,
                (double)ds.st_size / 1e6, o->target_path, (double)ts.st_size / 1e6);
    return target;
}

// A drafter file for h->target (model.h: 5 ints that `check` tests against the target's dim and
// vocab_size, then floats) into h->file, dying naming both files; returns the floats, *n = check's count
typedef int (*DrafterCheck)(const int32_t h[5], size_t bytes, int dim, int vocab_size, char *msg, size_t len);
typedef struct { DrafterCheck check; const Transformer *target; int *n; } DrafterHead; // n: check's count
static int drafter_head(const void *ctx, const unsigned char *head, size_t bytes, char *msg, size_t len) {
    const DrafterHead *d = ctx;
    int32_t h[5];
    memcpy(h, head, sizeof(h));
    *d->n = d->check(h, bytes, d->target->config.dim, d->target->config.vocab_size, msg, len);
    if (*d->n >= 0) return 0;
    return snprintf(msg + strlen(msg), len - strlen(msg), " (for %s)", d->target->path), -1;
}
static const float *read_drafter_file(HiddenDrafter *h, int *n, const char *path, const char *what,
                                      DrafterCheck check) {
    size_t bytes;
    DrafterHead ctx = {check, h->target, n};
    h->file = read_file_checked(path, what, &bytes, drafter_head, &ctx);
    return (const float *)(void *)(h->file + 5 * sizeof(int32_t));
}

// Medusa heads for `target` from path (model.h: medusa.bin), every float checked; W_h packed
static Drafter *medusa_drafter(MedusaDrafter *md, const char *path, Transformer *target, Sampler *s) {
    int dim = target->config.dim, V = target->config.vocab_size;
    size_t per = (size_t)dim * dim + (size_t)dim, panel_floats = panels_of(dim) * dim * PANEL;
    *md = (MedusaDrafter){.h = {.base = {.propose = propose_medusa, .observe = observe_hidden},
                                .target = target, .sampler = s, .at = -1}};
    const float *f = read_drafter_file(&md->h, &md->n_heads, path, "Medusa heads (a medusa.bin from ./train medusa)",
                                       check_medusa);
    size_t n = medusa_n_floats(md->n_heads, dim), bad = first_non_finite(f, n);
    if (bad < n)
        die("%s: head %zu's %s, element %zu, is not finite (a training run that diverged, or a damaged file?)",
            path, bad / per + 1, bad % per < (size_t)dim * dim ? "W" : "b", bad % per);
    float *dst = md->h.packed = xmalloc_floats_aligned((size_t)md->n_heads * panel_floats, "Medusa heads");
    for (int i = 0; i < md->n_heads; i++) {
        dst = pack_matrix(&md->w[i], dst, f + i * per, dim, dim);
        md->b[i] = f + i * per + (size_t)dim * dim;
    }
    md->h.z = xmalloc((size_t)(1 + md->n_heads) * dim * sizeof(float), "Medusa state");
    md->y = md->h.z + dim;
    md->h.logits = xmalloc((size_t)md->n_heads * V * sizeof(float), "Medusa logits");
    return &md->h.base;
}

// The feature drafter for `target` from path (model.h: eagle.bin), every float checked; W1, W2 packed
static Drafter *eagle_drafter(EagleDrafter *ed, const char *path, Transformer *target, Sampler *s) {
    int dim = target->config.dim, V = target->config.vocab_size;
    *ed = (EagleDrafter){.h = {.base = {.propose = propose_eagle, .observe = observe_hidden},
                               .target = target, .sampler = s, .at = -1}};
    const float *f = read_drafter_file(&ed->h, &ed->hidden, path, "EAGLE drafter (an eagle.bin from ./train eagle)",
                                       check_eagle);
    size_t n = eagle_n_floats(dim, ed->hidden), bad = first_non_finite(f, n), H = (size_t)ed->hidden;
    if (bad < n) die("%s: float %zu after the header is not finite (a training run that diverged?)", path, bad);
    ed->b1 = f + H * 2 * dim, ed->b2 = ed->b1 + H + (size_t)dim * H;
    float *dst = ed->h.packed = xmalloc_floats_aligned((panels_of(ed->hidden) * 2 * dim + panels_of(dim) * H) * PANEL,
                                                       "EAGLE weights");
    pack_matrix(&ed->w2, pack_matrix(&ed->w1, dst, f, ed->hidden, 2 * dim), ed->b1 + H, dim, ed->hidden);
    ed->h.z = xmalloc(((size_t)(MAX_ROWS + 3) * dim + H) * sizeof(float), "EAGLE features");
    ed->fe = ed->h.z + (MAX_ROWS + 1) * (size_t)dim;
    ed->u = ed->fe + 2 * (size_t)dim;
    ed->h.logits = xmalloc((size_t)V * sizeof(float), "EAGLE logits");
    return &ed->h.base;
}

// The drafter -d names (main, spec mode): the draft model, lookup, Medusa or EAGLE
static Drafter *build_drafter(const Options *o, Transformer *target, Transformer *draft, Sampler *s) {
    static struct { ModelDrafter md; LookupDrafter lk; MedusaDrafter mh; EagleDrafter ed; } d; // the run's one
    return o->lookup ? lookup_drafter(&d.lk, o->ngram_min, o->ngram_max, target->config.vocab_size)
         : o->medusa ? medusa_drafter(&d.mh, o->medusa, target, s)
         : o->eagle  ? eagle_drafter(&d.ed, o->eagle, target, s) : model_drafter(&d.md, draft, s);
}

// ----------------------------------------------------------------------------
// Appendix C. Math kernels
//
// The reduction orders that define every result (the kernel contract, Part I); a
// port that follows them (with fused multiply-adds) gets the same logits:
//
//   chain  (matmuls, attention): acc = 0; for k = 0, 1, ..., n-1: acc = fma(a[k], b[k], acc), one
//          rounding per step. Each output has its own chain, so the SIMD code puts outputs side by
//          side in a vector (weight rows, cached positions, head dimensions), never summing across lanes.
//   lanes8 (rmsnorm's sum of squares, softmax's sum): lane l (0..7) sums the terms k = l, l+8, l+16,
//          ... below n8 = n - n%8 in order (fma for a dot product, plain adds for a sum); the lanes are
//          combined as ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)); the tail k = n8..n-1 added in order.
//   exp:   exp_canonical() below, a fixed polynomial, so softmax and SiLU do not depend on expf.
//
// In order: the orders in portable C (the references the tests hold every path to); each ISA's vocabulary
// (a float vector, a few operations, an int8 step); the tiles written once over it (llamafile's tinyBLAS
// arrangement); each ISA's tile shapes; the dispatch; the lanes8 and elementwise kernels.

#if defined(__GNUC__) && !defined(__clang__)
#define UNROLL _Pragma("GCC unroll 16") // so GCC keeps a tile's accumulators in registers
#else
#define UNROLL
#endif

static float sum_lanes(const float l[8]) { return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7])); }

// x (n) . y (n) -> scalar, lanes8 order (rmsnorm's sum of squares: one call a row, so plain C)
static float dot(const float *x, const float *y, int n) {
    float lane[8] = {0};
    int n8 = n & ~7;
    for (int k = 0; k < n8; k += 8)
        for (int l = 0; l < 8; l++) lane[l] = fmaf(x[k + l], y[k + l], lane[l]);
    float s = sum_lanes(lane);
    for (int k = n8; k < n; k++) s = fmaf(x[k], y[k], s);
    return s;
}

// sum of x (n), lanes8 order with plain adds, the lanes starting at `lane` (the rows of 8 before x, if any)
static float sum_lanes8(float lane[8], const float *x, int n) {
    int n8 = n & ~7;
    for (int k = 0; k < n8; k += 8)
        for (int l = 0; l < 8; l++) lane[l] += x[k + l];
    float s = sum_lanes(lane);
    for (int k = n8; k < n; k++) s += x[k];
    return s;
}

// exp(x), the same bits on every path: x = n ln2 + r with n = rint(x log2(e)) and |r| <= ln2/2 (ln2 split
// in two so r is exact to ~2^-32), then exp(r) = 1 + r + r^2 P(r) with Cephes' degree-5 P (within 2 ulp
// of exp on this range), scaled by 2^n in the exponent field. Below -87 it is 0, from 88.3 up inf (2^n
// must stay a normal float; only SiLU sees such inputs, where the result rounds the same), NaN stays NaN.
#define EXP_LOG2E 1.44269504088896341f
#define EXP_LN2_HI 0.693359375f
#define EXP_LN2_LO -2.12194440e-4f
static const float EXP_P[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                               4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

static float exp_canonical(float x) {
    if (x >= 88.3f) return INFINITY;
    if (!(x >= -87.0f)) return x != x ? x : 0.0f;
    float n = rintf(x * EXP_LOG2E);
    float r = fmaf(n, -EXP_LN2_HI, x);
    r = fmaf(n, -EXP_LN2_LO, r);
    float poly = EXP_P[0];
    for (int i = 1; i < 6; i++) poly = fmaf(poly, r, EXP_P[i]);
    float y = fmaf(poly, r * r, r) + 1.0f;
    uint32_t bits = (uint32_t)((int)n + 127) << 23; // 2^n, n in -126..127
    float scale;
    memcpy(&scale, &bits, sizeof(scale));
    return y * scale;
}

// Attention. One load of the key cache (RunState: LANES positions side by side) brings dimension c of LANES
// cached keys, so both attention products are the same outer-product tile: Q vectors a[i] times groups of
// LANES outputs, out[i][LANES*g+l] = chain over steps s < n of a[i][s] * base[s*ss + g*gs + l]. Scores: a =
// the queries, steps = head dimensions, groups = blocks of positions (ss = LANES, gs = hs*LANES). Weighted
// sums: a = the softmax weights, steps = positions, groups = LANES head dimensions (ss = hs, gs = LANES).

// The definition, portable C: a (Q) pointers to (n), base -> out (Q) pointers
// to (LANES groups); groups [g0, g1), the first `lanes` outputs of each
static void outer_scalar(float *const *out, const float *const *a, int Q, const float *base,
                         size_t ss, size_t gs, int g0, int g1, int lanes, int n) {
    for (int g = g0; g < g1; g++)
        for (int i = 0; i < Q; i++)
            for (int l = 0; l < lanes; l++) {
                float acc = 0.0f;
                for (int t = 0; t < n; t++) acc = fmaf(base[t * ss + g * gs + l], a[i][t], acc);
                out[i][LANES * g + l] = acc;
            }
}

// int8 matmul (an int8 model; weights as pack_block leaves them). Each input row x (n) is quantised in
// groups of gs as the weights are (model.h's q80_group: values x_q, scale s_x[g]); then output r is
//   out[r] = 0; for g = 0, 1, ..., n/gs - 1:
//       out[r] += ((float)isum_g * s_w[r][g]) * s_x[g]      (runq.c's order)
// isum_g the group's sum of w_q x_q, exact in int32, so how a kernel orders or splits it cannot change
// a bit; the float sum over groups is one chain.
typedef struct { int8_t *v; float *s; int32_t *c; int n, groups; } Q8Rows; // R rows: values (R, n),
// scales and where the groups' sums start (R, n/gs): -Q8_BIAS x the group's sum of x_q

// The formula as a loop to step through (runq.c's matmul, as llm.c keeps its
// naive matmul beside the fast one; test_kernels checks every tile against it):
// W (d, n) and x (T, n) floats, both quantised in groups of gs -> out (T, d)
static UNUSED_OK void q8_matmul_naive(float *out, const float *x, const float *w, int T, int n, int d, int gs) {
    int8_t xq[Q8_MAX_N], wq[Q8_MAX_N];
    float xs[Q8_MAX_N / 4], ws[Q8_MAX_N / 4]; // a scale per group (gs >= 4)
    for (int t = 0; t < T; t++) {
        for (int g = 0; g < n / gs; g++) xs[g] = q80_group(xq + g * gs, x + (size_t)t * n + g * gs, gs);
        for (int j = 0; j < d; j++) {
            for (int g = 0; g < n / gs; g++) ws[g] = q80_group(wq + g * gs, w + (size_t)j * n + g * gs, gs);
            float acc = 0.0f;
            for (int g = 0; g < n / gs; g++) {
                int32_t isum = 0;
                for (int k = g * gs; k < (g + 1) * gs; k++) isum += (int32_t)wq[k] * xq[k];
                acc += ((float)isum * ws[g]) * xs[g];
            }
            out[(size_t)t * d + j] = acc;
        }
    }
}

// ---- The vocabulary, defined once per ISA. Floats: VF, a vector of VL floats
// (plain C's is one float, so it runs the same bodies), and
//   V_ZERO()  V_LOAD(at)  V_STORE(at, v): at an address
//   V_BCAST(at): the float at `at` in every lane, broadcast from memory
//   V_FMA(a, b, acc): a*b + acc rounded once, one step of every lane's chain
//   V_PREFETCH(at), V_PREFETCH_L1(at): ask for its cache line (into L2, into L1);
//     MM_PREFETCH_ROWS: tiles of that many rows or more prefetch (MM_IN_FLIGHT)
//   IN_REGISTER(v): an empty asm that keeps a loaded vector in a register for
//     the rows that use it, where gcc would fold the load into every FMA
//     (PERFORMANCE.md's mechanism table, "weights kept in registers")
// int8: Q8Acc, a panel's 16 integer sums; Q8W, a quad of its weights (64 bytes: 16 outputs x 4 steps) as the step takes
// them; Q8In, a row's input quad x_q[k..k+3] (the int32 quad_at(x)); Q8F, the panel's 16 float outputs (64 bytes);
// q8_w(at), q8_in(x), q8_start(c): 16 sums at c, q8_step(acc, x, w): the 16 x 4 products added in (plus Q8_BIAS times
// the quad's x sum, which c took off); q8_fold(f, acc, s, sx): f + ((float)acc * s) * sx.
static UNUSED_OK inline int32_t quad_at(const int8_t *x) { // (plain C reads the bytes)
    int32_t x4;
    memcpy(&x4, x, sizeof(x4));
    return x4;
}
#if HAVE_AVX512
typedef __m512 VF;
#define VL 16
#define V_LOAD(at) _mm512_loadu_ps(at)
#define V_STORE(at, v) _mm512_storeu_ps(at, v)
#define V_BCAST(at) _mm512_set1_ps(*(at))
#define V_FMA(a, b, acc) _mm512_fmadd_ps(a, b, acc)
#define MM_PREFETCH_ROWS 3 // a two-row tile feeds a loaded line to 2 FMAs: load-bound
#elif HAVE_AVX2
typedef __m256 VF;
#define VL 8
#define V_LOAD(at) _mm256_loadu_ps(at)
#define V_STORE(at, v) _mm256_storeu_ps(at, v)
#define V_BCAST(at) _mm256_broadcast_ss(at)
#define V_FMA(a, b, acc) _mm256_fmadd_ps(a, b, acc)
#define MM_PREFETCH_ROWS 2 // a line is two loads: a two-row tile feeds it to 4 FMAs
#elif HAVE_NEON
typedef float32x4_t VF;
#define VL 4
#define V_LOAD(at) vld1q_f32(at)
#define V_STORE(at, v) vst1q_f32(at, v)
#define V_BCAST(at) vld1q_dup_f32(at)
#define V_FMA(a, b, acc) vfmaq_f32(acc, a, b)
#define V_PREFETCH(at) __builtin_prefetch(at)
#define MM_PREFETCH_ROWS 1 // never timed on an ARM core: every tile prefetches
#else
typedef float VF;
#define VL 1
#define V_LOAD(at) (*(at))
#define V_STORE(at, v) (*(at) = (v))
#define V_BCAST(at) (*(at))
#define V_FMA(a, b, acc) fmaf(a, b, acc)
#define V_PREFETCH(at) ((void)(at))
#define MM_PREFETCH_ROWS INT_MAX // none
#endif
#define V_ZERO() ((VF){0})
#define VPP (PANEL / VL) // a panel's registers
#if HAVE_AVX2
#define V_PREFETCH(at) _mm_prefetch((const char *)(at), _MM_HINT_T1) // L2 (PERFORMANCE.md: "... into L2, not L1")
#define V_PREFETCH_L1(at) _mm_prefetch((const char *)(at), _MM_HINT_T0)
#define IN_REGISTER(v) __asm__("" : "+v"(v))
#else
#define V_PREFETCH_L1(at) V_PREFETCH(at)
#define IN_REGISTER(v) ((void)0) // NEON's FMA takes no memory operand
#endif

// exp_canonical of every lane, step for step, in GNU C's vector operators (a scalar operand goes to every
// lane; a comparison gives -1 where true). For |v| < 2^22, t = v + 1.5*2^23 rounds v to n = rint(v) and
// holds n in its low bits: n = t - 1.5*2^23, and t's bits << 23 are n << 23, 2^n's exponent.
#if VL == 1
#define v_exp exp_canonical
#else
typedef int32_t VI __attribute__((vector_size(sizeof(VF))));  // a VF's bits, or a mask (-1: true)
typedef uint32_t VU __attribute__((vector_size(sizeof(VF)))); // ... unsigned, to shift
static inline VF v_exp(VF x) {
    VF t = x * EXP_LOG2E + 0x1.8p23f, n = t - 0x1.8p23f;
    VF r = V_FMA(n, V_ZERO() - EXP_LN2_HI, x);
    r = V_FMA(n, V_ZERO() - EXP_LN2_LO, r);
    VF poly = V_ZERO() + EXP_P[0];
    for (int i = 1; i < 6; i++) poly = V_FMA(poly, r, V_ZERO() + EXP_P[i]);
    VF y = (V_FMA(poly, r * r, r) + 1.0f) * (VF)(((VU)t << 23) + (127u << 23));
    VI in = x >= -87.0f, hi = x >= 88.3f, nan = x != x; // in and hi are false for NaN
    return (VF)(((VI)y & in & ~hi) | (hi & 0x7f800000) | ((VI)x & nan)); // 0, inf, NaN: itself
}
#endif

#if HAVE_VNNI
// AVX-512 VNNI: vpdpbusd adds 4 products of unsigned by signed bytes into a lane: the weights, stored + 128,
// by x_q broadcast, so a lane's sum is 128 sum x_q over its own, which its start c takes off.
typedef __m512i Q8Acc;
typedef __m512i Q8W;
typedef __m512i Q8In;
typedef __m512 Q8F;
static inline Q8W q8_w(const int8_t *at) { return _mm512_loadu_si512(at); }
static inline Q8Acc q8_start(int32_t c) { return _mm512_set1_epi32(c); }
static inline Q8In q8_in(const int8_t *x) { return _mm512_set1_epi32(quad_at(x)); }
static inline Q8Acc q8_step(Q8Acc acc, Q8In x, Q8W w) { // asm: GCC 12 copies acc into and out of the
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(w), "v"(x)); // intrinsic (PERFORMANCE.md: "vpdpbusd in asm")
    return acc;
}
static inline Q8F q8_fold(Q8F f, Q8Acc acc, const float *s, float sx) {
    return f + (_mm512_cvtepi32_ps(acc) * _mm512_loadu_ps(s)) * sx;
}
#elif HAVE_AVX2
// AVX2: vpmaddubsw multiplies unsigned by signed bytes into int16 pairs: |w| by x_q with w's sign (no pair
// passes 2 x 127 x 127), vpmaddwd adds the pairs into int32; outputs 0..7 in v[0], 8..15 in v[1].
typedef struct { __m256i v[2]; } Q8Acc;
typedef struct { __m256i a[2], w[2]; } Q8W;
typedef __m256i Q8In;
typedef struct { __m256 v[2]; } Q8F;
static inline Q8W q8_w(const int8_t *at) {
    Q8W w;
    for (int h = 0; h < 2; h++) {
        w.w[h] = _mm256_loadu_si256((const __m256i *)(const void *)(at + 32 * h));
        w.a[h] = _mm256_abs_epi8(w.w[h]);
    }
    return w;
}
static inline Q8In q8_in(const int8_t *x) { return _mm256_set1_epi32(quad_at(x)); }
static inline Q8Acc q8_start(int32_t c) { return (Q8Acc){{_mm256_set1_epi32(c), _mm256_set1_epi32(c)}}; }
static inline Q8Acc q8_step(Q8Acc acc, Q8In x, Q8W w) {
    for (int h = 0; h < 2; h++) {
        __m256i pairs = _mm256_maddubs_epi16(w.a[h], _mm256_sign_epi8(x, w.w[h]));
        acc.v[h] = _mm256_add_epi32(acc.v[h], _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
    }
    return acc;
}
static inline Q8F q8_fold(Q8F f, Q8Acc acc, const float *s, float sx) {
    for (int h = 0; h < 2; h++) f.v[h] = f.v[h] + (_mm256_cvtepi32_ps(acc.v[h]) * _mm256_loadu_ps(s + 8 * h)) * sx;
    return f;
}
#elif HAVE_NEON && defined(__ARM_FEATURE_DOTPROD)
// ARMv8.2 sdot: each int32 lane adds the 4 products of signed bytes, w's word j
// by the quad x_q (outputs 4h..4h+3 in v[h]), so no bias, as plain C
typedef struct { int32x4_t v[4]; } Q8Acc;
typedef struct { int8x16_t w[4]; } Q8W;
typedef int8x16_t Q8In;
typedef struct { float32x4_t v[4]; } Q8F;
static inline Q8W q8_w(const int8_t *at) { return (Q8W){{vld1q_s8(at), vld1q_s8(at + 16), vld1q_s8(at + 32), vld1q_s8(at + 48)}}; }
static inline Q8In q8_in(const int8_t *x) { return vreinterpretq_s8_s32(vdupq_n_s32(quad_at(x))); }
static inline Q8Acc q8_start(int32_t c) { int32x4_t v = vdupq_n_s32(c); return (Q8Acc){{v, v, v, v}}; }
static inline Q8Acc q8_step(Q8Acc acc, Q8In x, Q8W w) {
    for (int h = 0; h < 4; h++) acc.v[h] = vdotq_s32(acc.v[h], w.w[h], x);
    return acc;
}
static inline Q8F q8_fold(Q8F f, Q8Acc acc, const float *s, float sx) {
    for (int h = 0; h < 4; h++) // f + ((float)acc * s) * sx, each product rounded
        f.v[h] = f.v[h] + (vcvtq_f32_s32(acc.v[h]) * vld1q_f32(s + 4 * h)) * sx;
    return f;
}
#else
// plain C (and NEON without sdot): the 16 sums one by one
typedef struct { int32_t s[PANEL]; } Q8Acc;
typedef const int8_t *Q8W;
typedef const int8_t *Q8In;
typedef struct { float f[PANEL]; } Q8F;
static inline Q8W q8_w(const int8_t *at) { return at; }
static inline Q8In q8_in(const int8_t *x) { return x; }
static inline Q8Acc q8_start(int32_t c) { Q8Acc a; for (int j = 0; j < PANEL; j++) a.s[j] = c; return a; }
static inline Q8Acc q8_step(Q8Acc acc, Q8In x, Q8W w) {
    for (int j = 0; j < PANEL; j++)
        for (int b = 0; b < 4; b++) acc.s[j] += w[4 * j + b] * x[b];
    return acc;
}
static inline Q8F q8_fold(Q8F f, Q8Acc acc, const float *s, float sx) {
    for (int j = 0; j < PANEL; j++) f.f[j] = f.f[j] + ((float)acc.s[j] * s[j]) * sx;
    return f;
}
#endif

// ---- The tile bodies, once for every ISA. Prefetch: a tile of P panels reads P lines per step of k; it
// asks for each panel's line MM_IN_FLIGHT / P steps ahead, so about MM_IN_FLIGHT lines are on their way
// whatever the tile's shape (bandwidth = lines in flight x 64 B / latency: ~128 lines cover L3's). Only
// tiles of MM_PREFETCH_ROWS rows or more, whose FMAs keep the core busy between loads: in load-bound
// tiles a prefetch takes a load slot, and the hardware prefetcher follows their few streams.
#ifndef MM_IN_FLIGHT
#define MM_IN_FLIGHT 128
#endif
// Tiles of up to MM_NEAR_ROWS rows of a streamed matrix (a model in DRAM) also
// ask for each panel's line MM_NEAR steps ahead into L1, so their FMAs do not
// wait on L2; not 7-9-row tiles (FMA-bound) nor cached matrices: both slower.
#define MM_NEAR 6
#define MM_NEAR_ROWS 6

// The prefetch target of panel v at step k, in steps from the tile's start (panels of n steps, one after
// another): `ahead` steps on; past the panel's end, the same step of panel v + P (this stream's panel in
// the next tile) if the call reads it (one of the `next` panels), else the line being read. So lines stay
// in flight across tiles, but never for another thread's panels.
static inline size_t prefetch_step(int v, int k, size_t n, int P, int ahead, int next) {
    size_t s = (size_t)v * n + (size_t)(k + ahead);
    if ((size_t)(k + ahead) < n) return s;
    return v < next ? s + (size_t)(P - 1) * n : (size_t)v * n + (size_t)k;
}

// Matmul tile: W (P panels of n steps at w) @ x (R rows, stride xs) -> out (R rows, stride os, 16 P
// columns), each output a chain over k in a register of its own (a panel is VPP registers); next: panels
// after the tile's that the caller reads (prefetch_step). Two loop shapes (each ISA's list names one), as
// compilers keep different ones in 16 registers: A loads the weight vectors (each panel's after its
// prefetch), then broadcasts one x per row; B prefetches, broadcasts the R x's, then streams the weight
// vectors past them.
// panel j's prefetches at step k (MM_IN_FLIGHT; in a DRAM tile, MM_NEAR too)
#define MM_PREFETCH(R, P, j, DRAM)                                                         \
    do {                                                                                   \
        if ((R) >= MM_PREFETCH_ROWS)                                                       \
            V_PREFETCH(w + prefetch_step(j, k, (size_t)n, P, MM_IN_FLIGHT / (P), next) * PANEL); \
        if (DRAM && (R) >= MM_PREFETCH_ROWS && (R) <= MM_NEAR_ROWS)                        \
            V_PREFETCH_L1(w + prefetch_step(j, k, (size_t)n, P, MM_NEAR, next) * PANEL);  \
    } while (0)
#define MM_BCAST_FIRST_A 0
#define MM_BCAST_FIRST_B 1
#define MM_TILE_AS(R, P, SHAPE, DRAM, NAME)                                                \
    static void NAME(float *out, size_t os, const float *x, size_t xs, const float *w,    \
                     int n, int next) {                                                    \
        VF acc[R][P * VPP];                                                                \
        UNROLL for (int r = 0; r < R; r++) UNROLL for (int v = 0; v < P * VPP; v++)        \
            acc[r][v] = V_ZERO();                                                          \
        for (int k = 0; k < n; k++) {                                                      \
            if (MM_BCAST_FIRST_##SHAPE) {                                                  \
                UNROLL for (int j = 0; j < P; j++) MM_PREFETCH(R, P, j, DRAM);             \
                VF xr[R];                                                                  \
                UNROLL for (int r = 0; r < R; r++) xr[r] = V_BCAST(x + r * xs + k);          \
                UNROLL for (int v = 0; v < P * VPP; v++) {                                 \
                    VF wv = V_LOAD(w + ((size_t)(v / VPP) * n + k) * PANEL + VL * (v % VPP)); \
                    if (R > 1) IN_REGISTER(wv);                                            \
                    UNROLL for (int r = 0; r < R; r++) acc[r][v] = V_FMA(wv, xr[r], acc[r][v]); \
                }                                                                          \
            } else {                                                                       \
                VF wv[P * VPP];                                                            \
                UNROLL for (int v = 0; v < P * VPP; v++) {                                 \
                    if (v % VPP == 0) MM_PREFETCH(R, P, v / VPP, DRAM);                    \
                    wv[v] = V_LOAD(w + ((size_t)(v / VPP) * n + k) * PANEL + VL * (v % VPP)); \
                    if (R > 1) IN_REGISTER(wv[v]);                                         \
                }                                                                          \
                UNROLL for (int r = 0; r < R; r++) {                                       \
                    VF xr = V_BCAST(x + r * xs + k);                                         \
                    UNROLL for (int v = 0; v < P * VPP; v++) acc[r][v] = V_FMA(wv[v], xr, acc[r][v]); \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
        UNROLL for (int r = 0; r < R; r++) UNROLL for (int v = 0; v < P * VPP; v++)        \
            V_STORE(out + r * os + VL * v, acc[r][v]);                                     \
    }
// every tile twice: for matrices in the caches, and for streamed ones (DRAM)
#define MM_TILE(R, P, SHAPE) \
    MM_TILE_AS(R, P, SHAPE, 0, mm_##R##x##P) MM_TILE_AS(R, P, SHAPE, 1, mm_dram_##R##x##P)

// Attention tile: a (Q) pointers to (n) times G groups of LANES outputs at base (step t of group g at base
// + t ss + g gs) -> out (Q) pointers to (LANES G); a group is GV registers. The same loop as a matmul tile.
#define GV (LANES / VL)
#define OUTER_TILE(Q, G)                                                                   \
    static void outer_##Q##x##G(float *const *out, const float *const *a, const float *base, \
                                size_t ss, size_t gs, int n) {                             \
        VF acc[Q][G * GV];                                                                 \
        UNROLL for (int i = 0; i < Q; i++) UNROLL for (int g = 0; g < G * GV; g++)         \
            acc[i][g] = V_ZERO();                                                          \
        for (int t = 0; t < n; t++) {                                                      \
            VF bv[G * GV];                                                                 \
            UNROLL for (int g = 0; g < G * GV; g++) {                                      \
                bv[g] = V_LOAD(base + t * ss + (g / GV) * gs + VL * (g % GV));             \
                if (Q > 1) IN_REGISTER(bv[g]);                                             \
            }                                                                              \
            UNROLL for (int i = 0; i < Q; i++) {                                           \
                VF at = V_BCAST(a[i] + t);                                                   \
                UNROLL for (int g = 0; g < G * GV; g++) acc[i][g] = V_FMA(bv[g], at, acc[i][g]); \
            }                                                                              \
        }                                                                                  \
        UNROLL for (int i = 0; i < Q; i++) UNROLL for (int g = 0; g < G * GV; g++)         \
            V_STORE(out[i] + VL * g, acc[i][g]);                                           \
    }

// int8 tile: W (P panels, ps bytes apart, from w) @ x (R quantised rows) -> out (R rows, stride os, 16 P
// columns): per group, R x P integer sums over its quads, then folded into the float outputs (the int8
// matmul's formula, above). Tiles of MM_PREFETCH_ROWS rows or more ask for each panel's line Q8_AHEAD
// bytes on (PERFORMANCE.md's mechanism table, "int8 tiles of 2+ rows")
#define Q8_AHEAD 4096
#define Q8_TILE(R, P)                                                                       \
    static void q8_##R##x##P(float *out, size_t os, const Q8Rows *x, const int8_t *w, size_t ps, int gs) { \
        Q8F f[R][P];                                                                        \
        memset(f, 0, sizeof(f));                                                            \
        for (int g = 0; g < x->groups; g++, w += q8_group_bytes(gs)) {                       \
            Q8Acc acc[R][P];                                                                \
            UNROLL for (int r = 0; r < R; r++) UNROLL for (int j = 0; j < P; j++)           \
                acc[r][j] = q8_start(x->c[r * x->groups + g]);                              \
            for (int k = 0; k < gs; k += 4) {                                               \
                Q8W wv[P];                                                                  \
                UNROLL for (int j = 0; j < P; j++) {                                        \
                    if (R >= MM_PREFETCH_ROWS) V_PREFETCH(w + j * ps + (size_t)k * PANEL + Q8_AHEAD); \
                    wv[j] = q8_w(w + j * ps + (size_t)k * PANEL);                           \
                }                                                                           \
                UNROLL for (int r = 0; r < R; r++) {                                        \
                    Q8In xr = q8_in(x->v + (size_t)r * x->n + (size_t)g * gs + k);          \
                    UNROLL for (int j = 0; j < P; j++) acc[r][j] = q8_step(acc[r][j], xr, wv[j]); \
                }                                                                           \
            }                                                                               \
            UNROLL for (int r = 0; r < R; r++) UNROLL for (int j = 0; j < P; j++)           \
                f[r][j] = q8_fold(f[r][j], acc[r][j], (const float *)(const void *)(w + j * ps + (size_t)gs * PANEL), \
                                  x->s[r * x->groups + g]);                                 \
        }                                                                                   \
        UNROLL for (int r = 0; r < R; r++) UNROLL for (int j = 0; j < P; j++)               \
            memcpy(out + r * os + (size_t)j * PANEL, &f[r][j], sizeof(f[r][j]));           \
    }

// ---- The tile shapes, one list per ISA: X(R, P, S), a tile of R rows x P panels in loop shape S. Every
// list has R x 1 for each R up to MM_MAX_ROWS (rows per tile), and 1 x P for each P up to the one-row
// tile's widest, so the panels a wide tile leaves run side by side, not one chain's latency each.
#if HAVE_AVX512
// 32 registers: up to 9 rows (9 x 2 panels: 18 accumulators, so a 9-row verify, K = 8, reads its weights
// once). Two rows take 2 x 4 panels: their rest then never goes panel by panel. Eight rows run as 8 x 1
// tiles, which read a model in DRAM faster than a wider tile (PERFORMANCE.md, register tiles).
#define MM_MAX_ROWS 9
#define MM_TILES(X)                                                                        \
    X(1, 8, A) X(1, 7, A) X(1, 6, A) X(1, 5, A) X(1, 4, A) X(1, 3, A) X(1, 2, A) X(1, 1, A) \
    X(2, 4, A) X(3, 4, A) X(4, 4, A) X(5, 4, A) X(6, 4, A) X(7, 2, A) X(9, 2, A)            \
    X(2, 1, A) X(3, 1, A) X(4, 1, A) X(5, 1, A) X(6, 1, A) X(7, 1, A) X(8, 1, A) X(9, 1, A)
#elif HAVE_AVX2
// 16 registers
#define MM_MAX_ROWS 6
#define MM_TILES(X)                                                                        \
    X(1, 4, B) X(1, 3, B) X(1, 2, B) X(1, 1, A) X(2, 3, B) X(3, 2, B)                      \
    X(2, 1, A) X(3, 1, A) X(4, 1, A) X(5, 1, B) X(6, 1, A)
#elif HAVE_NEON
// 32 registers of 4 lanes
#define MM_MAX_ROWS 6
#define MM_TILES(X) X(1, 2, A) X(1, 1, A) X(2, 1, A) X(3, 1, A) X(4, 1, A) X(5, 1, A) X(6, 1, A)
#else
#define MM_MAX_ROWS 4
#define MM_TILES(X) X(1, 1, A) X(2, 1, A) X(3, 1, A) X(4, 1, A)
#endif
// int8: R x 1 for every R up to Q8_MAX_ROWS, and one row over 2 and 4 panels. VNNI's 32 registers hold
// R rows x P panels (R P + P <= 28), so a quad of x broadcast feeds P products (PERFORMANCE.md: "int8
// tiles of P panels")
#if HAVE_VNNI
#define Q8_MAX_ROWS 9
#define Q8_TILES(X) X(1, 4) X(1, 2) X(1, 1) X(2, 4) X(2, 2) X(2, 1) X(3, 4) X(3, 1) X(4, 4) X(4, 1) X(5, 4) \
    X(5, 1) X(6, 4) X(6, 1) X(7, 3) X(7, 1) X(8, 3) X(8, 1) X(9, 2) X(9, 1)
#elif HAVE_AVX2 // 6 rows: 12 accumulators, so a 5-row verify is one block; one row over 4 panels:
// 4 streams for the prefetcher (PERFORMANCE.md: "AVX2 int8 tiles", "one int8 row")
#define Q8_MAX_ROWS 6
#define Q8_TILES(X) X(1, 4) X(1, 3) X(1, 2) X(1, 1) X(2, 1) X(3, 1) X(4, 1) X(5, 1) X(6, 1)
#else
#define Q8_MAX_ROWS 4
#define Q8_TILES(X) X(1, 2) X(1, 1) X(2, 1) X(3, 1) X(4, 1)
#endif
// attention: Q vectors x G groups, the same on every ISA
#define OUTER_TILES(X)                                                                     \
    X(1, 4) X(2, 4) X(3, 3) X(4, 2) X(5, 2) X(6, 2) X(1, 3) X(1, 2) X(2, 3) X(2, 2) X(3, 2) \
    X(1, 1) X(2, 1) X(3, 1) X(4, 1) X(5, 1) X(6, 1)

MM_TILES(MM_TILE)
OUTER_TILES(OUTER_TILE)
Q8_TILES(Q8_TILE)

// ---- Dispatch: the tables the lists fill, [streamed][rows][panels] and [vectors][groups] (NULL: no such
// tile), and the loops that walk a matmul or an attention product through them.
#define TILE_PANELS_MAX 8 // the widest tile, in panels or groups
typedef void (*MmTile)(float *out, size_t os, const float *x, size_t xs, const float *w, int n, int next);
typedef void (*OuterTile)(float *const *out, const float *const *a, const float *base, size_t ss, size_t gs, int n);
typedef void (*Q8Tile)(float *out, size_t os, const Q8Rows *x, const int8_t *w, size_t ps, int gs);
#define MM_ENTRY(R, P, S) [R][P] = mm_##R##x##P,
// a streamed matrix's tile: the DRAM copy where it differs (MM_PREFETCH: the rows that
// prefetch into L1), else the cache copy, so the binary holds only copies that differ
#define MM_DRAM_ENTRY(R, P, S) \
    [R][P] = (R) >= MM_PREFETCH_ROWS && (R) <= MM_NEAR_ROWS ? mm_dram_##R##x##P : mm_##R##x##P,
#define OUTER_ENTRY(Q, G) [Q][G] = outer_##Q##x##G,
#define Q8_ENTRY(R, P) [R][P] = q8_##R##x##P,
static const Q8Tile Q8_TILE_OF[Q8_MAX_ROWS + 1][TILE_PANELS_MAX + 1] = {Q8_TILES(Q8_ENTRY)};
static const MmTile MM_TILE_OF[2][MM_MAX_ROWS + 1][TILE_PANELS_MAX + 1] = {{MM_TILES(MM_ENTRY)},
                                                                          {MM_TILES(MM_DRAM_ENTRY)}};
static const OuterTile OUTER_TILE_OF[7][TILE_PANELS_MAX + 1] = {OUTER_TILES(OUTER_ENTRY)};

// where panel i of m starts
static const float *panel_at(const Matrix *m, int i) { return m->w + (size_t)i * (size_t)m->n * PANEL; }

// W (d,n) @ x (T,n) -> out (T,d), panels [i0, i1) (the contract: Part I). Rows go in blocks of at most R_max
// (as even as possible: 10 = 5 + 5); the panels in chunks of about 128 KB (int8: a multiple of 12 panels, so
// 2-, 3- and 4-panel tiles leave no 1-panel rest: PERFORMANCE.md), so every block reuses a chunk from
// L2 and the weights leave memory once; a chunk goes by the widest tile of the block's rows that fits the
// panels left (one row of a streamed f32 matrix: one panel, Matrix). An int8 model's rows are quantised once,
// first, into the calling thread's own buffers: a division per value, too dear to repeat in every chunk
// (PERFORMANCE.md). A tile that holds the panel straddling d writes to a buffer, so nothing past d is written.
static void matmul_panels(float *out, const float *x, int T, const Matrix *m, int i0, int i1) {
    static _Thread_local int8_t xv[TREE_MAX * Q8_MAX_N]; // T <= TREE_MAX: the longest pass, a tree's
    static _Thread_local float s[TREE_MAX * Q8_MAX_N / 4];
    static _Thread_local int32_t c[TREE_MAX * Q8_MAX_N / 4];
    float buf[MM_MAX_ROWS * TILE_PANELS_MAX * PANEL];
    int n = m->n, gs = m->gs, G = gs ? n / gs : 0, R_max = gs ? Q8_MAX_ROWS : MM_MAX_ROWS;
    int blocks = (T + R_max - 1) / R_max;
    for (int r = 0; gs && r < T * G; r++) s[r] = q80_group(xv + (size_t)r * gs, x + (size_t)r * gs, gs);
    for (int r = 0; Q8_BIAS && gs && r < T * G; r++) { // VNNI's starts (else c stays 0), apart: both vectorise
        int32_t sum = 0;
        for (int k = 0; k < gs; k++) sum += xv[(size_t)r * gs + k];
        c[r] = -Q8_BIAS * sum;
    }
    size_t ps = gs ? (size_t)G * q8_group_bytes(gs) : (size_t)n * PANEL * sizeof(float), os = (size_t)m->d;
    int chunk = blocks == 1 ? i1 : gs ? ((int)(131072 / ps) / 12 + 1) * 12 : (int)(131072 / ps) + 1;
    for (int c0 = i0; c0 < i1; c0 += chunk) {
        int c1 = c0 + chunk < i1 ? c0 + chunk : i1;
        for (int b = 0, t = 0, R; b < blocks; b++, t += R) {
            R = (T - t) / (blocks - b);
            Q8Rows xq = {xv + (size_t)t * n, s + (size_t)t * G, c + (size_t)t * G, n, G}; // the block's rows
            for (int i = c0, P = R == 1 && m->streamed && !gs ? 1 : TILE_PANELS_MAX; i < c1; i += P) {
                if (P > c1 - i) P = c1 - i;
                while (gs ? !Q8_TILE_OF[R][P] : !MM_TILE_OF[0][R][P]) P--;
                int cut = (i + P) * PANEL > m->d;
                float *o = out + (size_t)t * os + (size_t)i * PANEL, *to = cut ? buf : o;
                size_t ts = cut ? (size_t)P * PANEL : os;
                if (gs) Q8_TILE_OF[R][P](to, ts, &xq, q8_group_at(m, i, 0), ps, gs);
                else MM_TILE_OF[m->streamed][R][P](to, ts, x + (size_t)t * n, (size_t)n, panel_at(m, i), n, c1 - i - P);
                for (int r = 0; cut && r < R; r++) // the columns before d
                    for (int j = 0; j < P * PANEL && i * PANEL + j < m->d; j++) o[r * os + j] = buf[r * ts + j];
            }
        }
    }
}

// a (Q <= 6) pointers to (n), base -> out (Q) pointers to (LANES groups): groups
// [0, groups) of the outer product, the widest tile that fits, again and again
static void outer_products(float *const *out, const float *const *a, int Q, const float *base,
                           size_t ss, size_t gs, int groups, int n) {
    float *o[6];
    for (int g = 0, G = TILE_PANELS_MAX; g < groups; g += G) {
        if (G > groups - g) G = groups - g;
        while (!OUTER_TILE_OF[Q][G]) G--;
        for (int i = 0; i < Q; i++) o[i] = out[i] + LANES * g;
        OUTER_TILE_OF[Q][G](o, a, base + (size_t)g * gs, ss, gs, n);
    }
}

// positions [0, LANES * n_blocks): each score the chain over c of query[i][c] * key_t[c]
static void attention_scores(float *const *s, const float *const *query, int Q, const float *kc, int n_blocks, int hs) {
    outer_products(s, query, Q, kc, LANES, (size_t)hs * LANES, n_blocks, hs);
}

// out[i][c] = the chain over t < n_pos of e[i][t] * v_t[c]; the last hs % LANES outputs in plain C
static void attention_values(float *const *out, const float *const *e, int Q, const float *v, int n_pos, int hs) {
    outer_products(out, e, Q, v, (size_t)hs, LANES, hs / LANES, n_pos);
    if (hs % LANES) outer_scalar(out, e, Q, v, (size_t)hs, LANES, hs / LANES, hs / LANES + 1, hs % LANES, n_pos);
}

// ---- top-k and top-p: the sampler's truncation (probs_from_logits)

// The nucleus order: probability descending, then index ascending. A total
// order, so the kept set and the sums over it never depend on the sort.
static int nucleus_order(const void *a, const void *b) {
    const ProbIndex *x = a, *y = b;
    if (x->prob != y->prob) return x->prob > y->prob ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

// probs (n) in place. The candidates are the tokens with probability >= (1 - top_p) / (n - 1) (the others
// together hold less than 1 - top_p, so could only be in the nucleus through rounding; the filter is part
// of the rule). Of the top_k most likely, keep the shortest prefix in nucleus order whose running float
// sum reaches top_p (all if none does); zero the rest, divide by that sum.
static void truncate_distribution(Sampler *s, float *probs) {
    int n = s->vocab_size, m = 0;
    ProbIndex *o = s->order;
    float cutoff = s->top_p < 1.0f ? (1.0f - s->top_p) / (float)(n - 1) : 0.0f;
    for (int i = 0; i < n; i++)
        if (probs[i] >= cutoff && probs[i] > 0.0f) o[m++] = (ProbIndex){probs[i], i};
    if (m == 0) { // a tiny top_p on a flat distribution: keep the most likely token
        int best = argmax(probs, n);
        o[m++] = (ProbIndex){probs[best], best};
    }
    qsort(o, (size_t)m, sizeof(*o), nucleus_order);
    int keep = s->top_k > 0 && s->top_k < m ? s->top_k : m;
    float mass = 0.0f;
    for (int i = 0; i < keep; i++)
        if ((mass += o[i].prob) >= s->top_p && s->top_p < 1.0f) keep = i + 1; // (which ends the loop)
    memset(probs, 0, (size_t)n * sizeof(float));
    for (int i = 0; i < keep; i++) probs[o[i].index] = o[i].prob / mass;
}

// ---- lanes8 and elementwise kernels

// The contract's exp_and_sum (Part I), the sum in lanes8 order. Vectors take 16 at a time
// (two rows of the 8 lanes, added as the exps go); the last 16 first, from the inputs,
// stored last (the overlap gets the same bits twice); below 16, one by one.
static float exp_and_sum(float *x, int n, float max) {
    float lane[8] = {0};
    int i = 0, vec = VL > 1 && n >= 16;
#if VL > 1
    typedef float V8 __attribute__((vector_size(32)));
    V8 acc = {0}, row[2];
    VF e[16 / VL], last[16 / VL];
    for (int v = 0; v < 16 / VL && vec; v++) last[v] = v_exp(V_LOAD(x + n - 16 + VL * v) - max);
    for (; i + 16 <= n; i += 16) {
        for (int v = 0; v < 16 / VL; v++) V_STORE(x + i + VL * v, e[v] = v_exp(V_LOAD(x + i + VL * v) - max));
        memcpy(row, e, sizeof(row));
        acc = acc + row[0] + row[1];
    }
    for (int v = 0; v < 16 / VL && vec; v++) V_STORE(x + n - 16 + VL * v, last[v]);
    memcpy(lane, &acc, sizeof(lane));
#endif
    for (int k = i; k < n && !vec; k++) x[k] = exp_canonical(x[k] - max);
    return sum_lanes8(lane, x + i, n - i);
}

// the largest of x (n), n >= 1 (any order gives the same maximum)
static float max_of(const float *x, int n) {
    float max = x[0];
    for (int i = 1; i < n; i++) max = x[i] > max ? x[i] : max;
    return max;
}

// x (n) in place: x[i] = exp(x[i] - max) / sum (a division, not a product by 1 / sum): the tests'
static UNUSED_OK void softmax(float *x, int n) {
    float sum = exp_and_sum(x, n, max_of(x, n));
    for (int i = 0; i < n; i++) x[i] /= sum;
}

// RMSNorm for T rows of n, as the contract (Part I) writes it
static void rmsnorm(float *out, const float *x, const float *weight, int T, int n) {
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * n;
        float ss = 1.0f / sqrtf(dot(xt, xt, n) / (float)n + 1e-5f);
        for (int i = 0; i < n; i++) out[(size_t)t * n + i] = weight[i] * (ss * xt[i]);
    }
}

// RoPE as the contract (Part I) writes it, by model.h's angle tables; cos_row, sin_row (hs/2)
static void rope(float *v, const float *cos_row, const float *sin_row, int n_heads, int hs) {
    for (int h = 0; h < n_heads; h++)
        for (int i = 0; i < hs / 2; i++) {
            float *pair = v + h * hs + 2 * i;
            float v0 = pair[0], v1 = pair[1], c = cos_row[i], s = sin_row[i];
            pair[0] = v0 * c - v1 * s;
            pair[1] = v0 * s + v1 * c;
        }
}

static float silu(float v) { return v * (1.0f / (1.0f + exp_canonical(-v))); }

// SwiGLU on one 16-column block pair: out[j] = silu(h1[j]) * h3[j], silu as above
static void swiglu(float *out, const float *h1, const float *h3, int n) {
    int j = 0;
    for (; j + VL <= n; j += VL) {
        VF v = V_LOAD(h1 + j);
        V_STORE(out + j, v * (1.0f / (1.0f + v_exp(-v))) * V_LOAD(h3 + j));
    }
    for (; j < n; j++) out[j] = silu(h1[j]) * h3[j];
}

// ----------------------------------------------------------------------------
// Appendix D. Threads: a pool of workers that run one job at a time
//
// N threads give the same bits as one: the work is split by OUTPUT (panels of a
// matmul, key/value heads of attention), never inside a reduction. A thread that
// waits (at a barrier, for a job) spins for a while, then sleeps (pool_wait).

struct ThreadPool {
    int n;                   // threads, the caller included
    struct Worker { pthread_t thread; ThreadPool *pool; int tid; } *workers; // [1, n)
    pthread_mutex_t lock;
    pthread_cond_t wake;     // broadcast when a count that a sleeper may wait on grows
    atomic_ullong generation; // bumped once per job
    atomic_ullong finished;  // workers done with the current job
    atomic_int sleeping;     // threads waiting on `wake`
    atomic_llong stalled_ns; // this job's waits past POOL_STALL, summed over its threads
    double spin;             // how long a waiter spins before it sleeps (pool_run)
    unsigned long long base; // every thread's barrier count as a job starts: where the last job's ended
    struct Arrival {         // barrier: one per thread, each in a cache line of its own
        atomic_ullong passed; // barriers this thread has reached, counted from base
        unsigned long long pad[7];
    } *arrivals;             // (n)
    Job job; void *arg; int job_threads; // the job (NULL: the workers exit) and its threads
    int solo_left, solo_run; // forward passes left to run on one thread, and that run's length
    int look, cpus;          // look_around before the next pass; the machine's CPUs
    double stalled_at[2];    // when the two latest stalled passes ended (note_stall)
    double quiet_at;         // ... and the latest pass on all threads that did not stall
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("pause");
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

// Wait until *count >= at_least: spin `spin` seconds (a running thread arrives within
// them, and waking a sleeper costs more), then sleep until pool_signal: a thread that waits
// on one that is not running (another process holds its core; more threads than cores)
// gives its core away. A longer spin costs a busy machine (PERFORMANCE.md's "a waiting
// thread spins"). Returns the seconds it waited if that was past POOL_STALL, else 0.
#define POOL_SPIN 50e-6  // at a barrier, at least: a layer's imbalance is microseconds
#define POOL_IDLE 2e-3   // for a job: the draft's steps between two verify passes
#define POOL_STALL 1e-3  // a layer takes microseconds, a timeslice ms (stalled_pass)
static double pool_wait(ThreadPool *pool, atomic_ullong *count, unsigned long long at_least, double spin) {
    double since = 0; // when the wait began, read once it has lasted ~1 us
    for (long turns = 1; atomic_load(count) < at_least; turns++) {
        cpu_relax();
        if (turns % 64) continue; // a clock read every ~1 us
        if (!since) since = now_seconds();
        if (now_seconds() - since < spin) continue;
        pthread_mutex_lock(&pool->lock);
        atomic_fetch_add(&pool->sleeping, 1); // seq_cst, as the count's store: pool_signal sees this, or we the count
        while (atomic_load(count) < at_least) pthread_cond_wait(&pool->wake, &pool->lock);
        atomic_fetch_sub(&pool->sleeping, 1);
        pthread_mutex_unlock(&pool->lock);
    }
    double waited = since ? now_seconds() - since : 0;
    return waited > POOL_STALL ? waited : 0;
}
static void note_wait(ThreadPool *pool, double waited) {
    if (waited > 0) atomic_fetch_add(&pool->stalled_ns, (long long)(waited * 1e9));
}

// after a count that others wait on has grown (seq_cst): wake the sleepers (pool_wait)
static void pool_signal(ThreadPool *pool) {
    if (atomic_load(&pool->sleeping) == 0) return;
    pthread_mutex_lock(&pool->lock);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
}

// Wait until threads 0..n-1 of the job all reach this barrier. Each thread
// counts the barriers it reaches in its own cache line and waits until every
// other count has caught up: no shared counter to fight over (PERFORMANCE.md).
// A job starts the counts where the last ended: an older job's are lower (64 bits).
static void pool_barrier(ThreadPool *pool, int tid, int n) {
    if (n <= 1) return;
    unsigned long long mine = atomic_load_explicit(&pool->arrivals[tid].passed, memory_order_relaxed) + 1;
    atomic_store(&pool->arrivals[tid].passed, mine);
    pool_signal(pool);
    for (int i = 0; i < n; i++)
        note_wait(pool, pool_wait(pool, &pool->arrivals[i].passed, mine, pool->spin));
}

// a worker: wait for the next job, run it, report
static void *pool_worker(void *arg) {
    struct Worker *w = arg;
    ThreadPool *pool = w->pool;
    for (unsigned long long job = 1;; job++) {
        pool_wait(pool, &pool->generation, job, POOL_IDLE);
        if (!pool->job) return NULL;
        if (w->tid < pool->job_threads) {
            atomic_store_explicit(&pool->arrivals[w->tid].passed, pool->base, memory_order_relaxed);
            pool->job(pool->arg, w->tid, pool->job_threads);
        }
        atomic_fetch_add(&pool->finished, 1);
        pool_signal(pool);
    }
}

// Publish a job (NULL: exit) and wake sleepers; does not wait.
static void pool_start(ThreadPool *pool, Job job, void *arg, int n) {
    pool->job = job;
    pool->arg = arg;
    pool->job_threads = n;
    atomic_store(&pool->finished, 0);
    atomic_fetch_add(&pool->generation, 1);
    pool_signal(pool);
}

// A pass stalled when its waits past POOL_STALL (a thread not running) add up to over a quarter
// of its thread-time: 2 threads then gain little on 1. Not a 1 ms hiccup in a 55 ms pass of a
// 1 GB model (any such wait taken for a stall: 0.6x), nor quiet imbalance (all waits: 0.7x).
#define STALL_SHARE 0.25
static int stalled_pass(double stalled_seconds, int threads, double seconds) {
    return stalled_seconds > STALL_SHARE * threads * seconds;
}

// After a pass on `threads` threads that `stalled` (stalled_pass), ending at `now`: a third
// stall within STALL_WINDOW of two others, or a third stalled pass in a row (pool_wait's
// other process: a stall every timeslice, or every pass), sends a run of passes to one
// thread, a run that grows 4x while stalls recur and halves with each quiet pass on all
// threads. A lone stall is a hiccup, which DRAM-bound models on two threads have alone
// (counting a pass's stalled waits instead sent spec on 325 MB to one thread: 0.5-0.7x).
#define STALL_WINDOW 0.05
static void note_stall(ThreadPool *pool, int threads, int stalled, double now) {
    if (stalled && (now - pool->stalled_at[0] < STALL_WINDOW || pool->stalled_at[0] > pool->quiet_at)) {
        pool->solo_run = pool->solo_run < 64 ? 64 : pool->solo_run < 4096 ? 4 * pool->solo_run : 4096;
        pool->solo_left = pool->solo_run;
    } else if (threads > 1 && !stalled) {
        pool->solo_run /= 2;
    }
    if (stalled) pool->stalled_at[0] = pool->stalled_at[1], pool->stalled_at[1] = now;
    else if (threads > 1) pool->quiet_at = now;
}

// Before the first pass and after each run on one thread: when more threads than cores run
// in other processes (Linux's /proc/loadavg, "running/total", counts the reader; a core's
// worth is common on a quiet machine), the next 64 passes run on one. Beside 5 busy
// processes 2 threads ran 0.75-0.90x of one with stalls alone to go by, 0.95-1.08x with this.
static void look_around(ThreadPool *pool) {
    FILE *f = fopen("/proc/loadavg", "r");
    int running = 0;
    if (f && fscanf(f, "%*s %*s %*s %d", &running) != 1) running = 0;
    if (f) fclose(f);
    pool->look = 0;
    if (running - 1 > pool->cpus) pool->solo_left = pool->solo_run = pool->solo_run < 64 ? 64 : pool->solo_run;
}

// Part I's pool_run; returns when all are done. Waiters spin one phase (between barriers)
// of the latest job that did not stall: a running thread is late by a fraction of a phase
// (15 us on the shipped target, 200 us at 325 MB, where 50 us lost 3%); at most POOL_STALL,
// and up a quarter a job at most (a job whose threads were preempted is long, its phases not).
static void pool_run(ThreadPool *pool, int n, Job job, void *arg) {
    if (pool && n > 1 && pool->look) look_around(pool);
    if (pool && n > 1 && pool->solo_left > 0) pool->look = --pool->solo_left == 0, n = 1;
    if (!pool || n <= 1) { job(arg, 0, 1); return; }
    double t0 = now_seconds();
    pool_start(pool, job, arg, n);
    atomic_store_explicit(&pool->arrivals[0].passed, pool->base, memory_order_relaxed);
    job(arg, 0, n);
    note_wait(pool, pool_wait(pool, &pool->finished, (unsigned long long)pool->n - 1, pool->spin));
    unsigned long long phases = atomic_load_explicit(&pool->arrivals[0].passed, memory_order_relaxed) - pool->base + 1;
    double now = now_seconds(), waited = (double)atomic_exchange(&pool->stalled_ns, 0) * 1e-9;
    int stalled = stalled_pass(waited, n, now - t0);
    if (!stalled) pool->spin = fmin(POOL_STALL, fmax(POOL_SPIN, fmin(1.25 * pool->spin, (now - t0) / (double)phases)));
    pool->base += phases - 1;
    note_stall(pool, n, stalled, now);
}

// Stop the workers (the list's release of a pool: join, then its memory can go).
static void stop_pool(void *arg) {
    ThreadPool *pool = arg;
    pool_start(pool, NULL, NULL, 0);
    for (int i = 1; i < pool->n; i++) pthread_join(pool->workers[i].thread, NULL);
    pthread_mutex_destroy(&pool->lock);
    pthread_cond_destroy(&pool->wake);
}

// The pool's judgement as new: no stall on record, no run on one thread, the shortest spin, a look first
static void fresh_pool(ThreadPool *pool) {
    pool->solo_left = pool->solo_run = 0, pool->spin = POOL_SPIN, pool->look = 1;
    pool->stalled_at[0] = pool->stalled_at[1] = pool->quiet_at = -INFINITY;
}

// A pool of n threads (the caller and n - 1 workers); n <= 1 makes none.
static ThreadPool *build_pool(int n) {
    if (n <= 1) return NULL;
    ThreadPool *pool = xmalloc(sizeof(ThreadPool), "thread pool"); // zeroed: every count starts at 0
    pool->workers = xmalloc((size_t)n * sizeof(struct Worker), "threads");
    pool->arrivals = xmalloc((size_t)n * sizeof(struct Arrival), "thread arrivals");
    fresh_pool(pool);
    pool->cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (pthread_mutex_init(&pool->lock, NULL) || pthread_cond_init(&pool->wake, NULL))
        die("cannot create the thread pool's lock");
    pool->n = 1;
    own_resource(pool, stop_pool); // from here an error stops the workers started so far
    for (int i = 1; i < n; i++, pool->n++) {
        pool->workers[i] = (struct Worker){.pool = pool, .tid = i};
        int err = pthread_create(&pool->workers[i].thread, NULL, pool_worker, &pool->workers[i]);
        if (err) die("--threads %d: cannot start thread %d: %s", n, i, strerror(err));
    }
    return pool;
}

// the share [*lo, *hi) of n items that thread tid of nth takes
static void share(int *lo, int *hi, int n, int tid, int nth) {
    *lo = (int)((long)n * tid / nth);
    *hi = (int)((long)n * (tid + 1) / nth);
}

// Ask for the lines of x (n floats) before reading them (none on one thread): forward_job's
// inputs, half in another core's cache, read a few floats at a time, which the hardware
// prefetcher does not follow; asked for together, the misses overlap (PERFORMANCE.md).
static void prefetch_shared(const float *x, size_t n, int nth) {
#if defined(__GNUC__)
    for (size_t k = 0; nth > 1 && k < n; k += 64 / sizeof(float)) __builtin_prefetch(x + k);
#else
    (void)x, (void)n, (void)nth;
#endif
}

// How many CPUs this process may use, the default --threads: fewer than the online ones when it is pinned
// (taskset, a cpuset) or held to a quota (docker --cpus), which Linux states; more threads than CPUs stall
// at every barrier (pool_wait; PERFORMANCE.md's mechanism table).
#if defined(__linux__)
#include <sys/syscall.h>
#endif

// The CPUs in this thread's affinity mask (by the system call: the libc wrapper needs _GNU_SOURCE); 0: unknown
static int affinity_cpus(void) {
    int n = 0;
#if defined(__linux__) && defined(SYS_sched_getaffinity)
    unsigned long mask[64] = {0}; // 4096 CPUs
    long bytes = syscall(SYS_sched_getaffinity, 0, sizeof mask, mask); // -1 on error
    for (long i = 0; i < bytes / (long)sizeof mask[0]; i++) n += __builtin_popcountl(mask[i]);
#endif
    return n;
}

// ceil(quota / period) set in one cgroup directory: cgroup v2's cpu.max ("max 100000": none; "200000
// 100000": 2 CPUs) or v1's cpu.cfs_quota_us (-1: none) over cpu.cfs_period_us; 0 where neither sets one
static double quota_in(const char *dir) {
    double v[2], period[2];
    if (numbers_in(dir, "cpu.max", v) == 2) period[0] = v[1];
    else if (numbers_in(dir, "cpu.cfs_quota_us", v) != 1 || numbers_in(dir, "cpu.cfs_period_us", period) != 1) return 0;
    return v[0] > 0 && period[0] > 0 ? fmin(ceil(v[0] / period[0]), MAX_THREADS) : 0;
}

static int usable_cpus(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    int allowed = affinity_cpus(), quota = (int)cgroup_limit("/sys/fs/cgroup", "/proc/self/cgroup", "cpu", quota_in);
    if (allowed > 0 && allowed < n) n = allowed;
    if (quota > 0 && quota < n) n = quota;
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

// ----------------------------------------------------------------------------
// Appendix E. Tokenizer: llama2.c's tokenizer.bin, BPE by merge score with byte fallback

typedef struct { const char *str; int id; } TokenIndex;

struct Tokenizer {
    char **vocab;         // (vocab_size) NUL-terminated pieces
    float *scores;        // (vocab_size) merge priority: higher merges first
    int vocab_size;
    int max_token_length; // the longest piece's bytes, measured (the header's field may be far larger)
    TokenIndex *sorted;   // (vocab_size) pieces in strcmp order, for lookup
    unsigned char byte_pieces[512]; // "\x00\0\x01\0..." the 256 one-byte strings
};

static int cmp_token_index(const void *a, const void *b) {
    return strcmp(((const TokenIndex *)a)->str, ((const TokenIndex *)b)->str);
}

// walk_tokenizer's visit: a copy of token i's bytes and its score into t
static void keep_token(void *ctx, int i, float score, const unsigned char *bytes, int len) {
    Tokenizer *t = ctx;
    t->scores[i] = score;
    t->vocab[i] = xmalloc((size_t)len + 1, "token");
    memcpy(t->vocab[i], bytes, (size_t)len);
    if (len > t->max_token_length) t->max_token_length = len;
}

// Parse a tokenizer file held in memory, buf (n), for a model of vocab_size tokens (0: as many as the
// file holds, which does not store its size), check its byte-fallback ids, build the lookup.
static void parse_tokenizer(Tokenizer *t, const unsigned char *buf, size_t n, const char *path, int vocab_size) {
    char msg[256];
    int32_t maxlen;
    int count = walk_tokenizer(buf, n, &maxlen, NULL, NULL, msg, sizeof(msg));
    if (count < 0) die("%s: %s", path, msg);
    if (vocab_size <= 0) vocab_size = count;
    if (count != vocab_size)
        die("%s: has %d tokens but the model's vocab_size is %d (hint: use the tokenizer the "
            "model was trained with, -z)", path, count, vocab_size);
    *t = (Tokenizer){.vocab_size = vocab_size}; // byte_pieces zeroed: each byte its own NUL
    t->vocab = xmalloc((size_t)vocab_size * sizeof(char *), "vocab");
    t->scores = xmalloc((size_t)vocab_size * sizeof(float), "scores");
    walk_tokenizer(buf, n, &maxlen, keep_token, t, msg, sizeof(msg));
    for (int b = 0; b < 256; b++) {
        char want[8];
        snprintf(want, sizeof(want), "<0x%02X>", b);
        if (TOKEN_BYTE0 + b >= vocab_size || strcmp(t->vocab[TOKEN_BYTE0 + b], want) != 0)
            die("%s: token id %d must be the byte token %s (ids 3..258 are llama2.c's byte "
                "fallback)", path, TOKEN_BYTE0 + b, want);
        t->byte_pieces[2 * b] = (unsigned char)b;
    }
    t->sorted = xmalloc((size_t)vocab_size * sizeof(TokenIndex), "sorted vocab");
    for (int i = 0; i < vocab_size; i++) t->sorted[i] = (TokenIndex){t->vocab[i], i};
    qsort(t->sorted, (size_t)vocab_size, sizeof(TokenIndex), cmp_token_index);
}

// Checks, before the body, that vocab_size tokens (ctx; <= 0: any) of the header's max length fit the size
static int tokenizer_head(const void *ctx, const unsigned char *head, size_t bytes, char *msg, size_t len) {
    int32_t max_len, vocab = *(const int *)ctx;
    if (walk_tokenizer(head, bytes < 4 ? bytes : 4, &max_len, NULL, NULL, msg, len) < 0) return -1;
    size_t most = add_size(4, mul_size((size_t)vocab, 8 + (size_t)max_len));
    if (vocab <= 0 || bytes <= most) return 0;
    return snprintf(msg, len, "%zu bytes, more than %d tokens of at most %d bytes take (%zu); is this "
                    "the tokenizer of this model?", bytes, (int)vocab, (int)max_len, most), -1;
}

// Read and parse the tokenizer file `path` for a model with vocab_size tokens.
static void build_tokenizer(Tokenizer *t, const char *path, int vocab_size) {
    size_t n;
    unsigned char *buf = read_file_checked(path, "tokenizer (-z FILE)", &n, tokenizer_head, &vocab_size);
    parse_tokenizer(t, buf, n, path, vocab_size);
    xfree(buf);
}

static Tokenizer *new_tokenizer(const char *path, int vocab_size) {
    Tokenizer *t = xmalloc(sizeof(Tokenizer), "tokenizer");
    build_tokenizer(t, path, vocab_size);
    return t;
}

// id of the piece str, or -1
static int lookup_token(const Tokenizer *t, const char *str) {
    TokenIndex key = {.str = str};
    const TokenIndex *hit = bsearch(&key, t->sorted, (size_t)t->vocab_size, sizeof(TokenIndex), cmp_token_index);
    return hit ? hit->id : -1;
}

// The text of `token` after `prev` (after BOS, less the space encode prepends); byte tokens: their byte
static const char *decode_piece(const Tokenizer *t, int prev, int token) {
    if (token >= TOKEN_BYTE0 && token < TOKEN_BYTE0 + 256)
        return (const char *)t->byte_pieces + 2 * (token - TOKEN_BYTE0);
    const char *piece = t->vocab[token];
    if (prev == TOKEN_BOS && piece[0] == ' ') piece++;
    return piece;
}

// UTF-8 text into codepoint tokens (byte tokens where the vocab lacks one); returns their count
static int encode_codepoints(const Tokenizer *t, int *out, const char *text) {
    char cp[5];
    int n = 0, len = 0;
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
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

// BPE encode as llama2.c: optional BOS, a dummy-prefix " " before non-empty text, codepoints, then merge
// the adjacent pair whose concatenation has the highest score, again and again. out: strlen(text) + 3
static int encode(Tokenizer *t, int *out, const char *text, int bos, int eos) {
    char pair[2 * MAX_TOKEN_LENGTH + 1]; // two pieces (walk_tokenizer bounds each)
    int n = 0;
    if (bos) out[n++] = TOKEN_BOS;
    if (text[0] != '\0') n += encode_codepoints(t, out + n, " ");
    n += encode_codepoints(t, out + n, text);
    for (;; n--) { // each merge makes two ids one
        float best_score = -1e10f;
        int best_id = -1, best_at = -1;
        for (int i = 0; i + 1 < n; i++) {
            snprintf(pair, sizeof pair, "%s%s", t->vocab[out[i]], t->vocab[out[i + 1]]);
            int id = lookup_token(t, pair);
            if (id >= 0 && t->scores[id] > best_score) {
                best_score = t->scores[id];
                best_id = id;
                best_at = i;
            }
        }
        if (best_at < 0) break;
        out[best_at] = best_id;
        memmove(out + best_at + 1, out + best_at + 2, (size_t)(n - best_at - 2) * sizeof(int));
    }
    if (eos) out[n++] = TOKEN_EOS;
    return n;
}

// print a piece, skipping lone unprintable bytes (control codes from byte tokens)
static void print_piece(const char *piece) {
    unsigned char b = (unsigned char)piece[0];
    if (b && piece[1] == '\0' && !(isprint(b) || isspace(b) || b >= 0x80)) return;
    fputs(piece, stdout); // "" prints nothing
}

// ----------------------------------------------------------------------------
// Appendix F. Auto-K (-k 0): the K that maximises the predicted tokens per second
//
// Leviathan et al. 2022, Cor 3.9: the best K is the argmax of model.h's predicted_speedup (Thm 3.8). The
// costs: verify passes of 1..MAX_ROWS rows timed at start-up (calibrate_auto_k), times a running factor
// for how much dearer passes are now (attention grows with the position; the machine's speed moves); the
// draft step and a are running means. Auto-K changes only the speed (the text is the same for every K).
#define AUTO_DECAY 0.9       // the draft step's and the cost factor's running means (~10 rounds)
#define AUTO_DECAY_A 0.97    // a's running counts (~30 rounds: at t = 0 acceptance comes in streaks)

typedef struct {
    double accepted, examined;  // decayed counts; a = accepted / examined
    double draft_step;          // decayed mean seconds of one draft step
    double calib[MAX_ROWS + 1]; // seconds of an n-row verify pass at start-up
    double scale;               // decayed measured / calibrated verify cost
    double calibration_seconds; // what measuring took (once, before generating)
} AutoK;

// argmax over K = 1..K_MAX of tokens per second (ties: the smaller K); verify[n] x scale: an n-row pass
static int choose_k(double a, double draft_step, const double *verify, double scale) {
    int best = 1;
    double best_rate = -1;
    for (int k = 1; k <= K_MAX; k++) {
        double rate = predicted_speedup(a, k, draft_step, verify[k + 1] * scale);
        if (rate > best_rate * (1 + 1e-9)) { best_rate = rate; best = k; }
    }
    return best;
}

// Seconds of one forward over `rows` copies of `token` at pos (the cache there is overwritten later or
// never read); with s, and its distribution into probs (vocab): a target-alone step, never failing
static double time_forward(Transformer *tr, Sampler *s, float *probs, int token, int rows, int pos) {
    int tokens[MAX_ROWS];
    for (int i = 0; i < rows; i++) tokens[i] = token;
    double t0 = now_seconds();
    const float *logits = forward(tr, tokens, rows, pos);
    if (s) probs_from_logits(s, probs, logits);
    return now_seconds() - t0;
}

// The cost table: verify passes of 1..9 rows, then every 4th up to K_MAX + 1, the fastest of 3 each,
// interleaved so a slow stretch hits all; linear between (a pass is compute-bound by then). A draft
// step: the fastest of 3 (lookup: free). a starts at 1/2: one proposal accepted, one rejected.
static void calibrate_auto_k(AutoK *ak, Transformer *target, Transformer *draft) {
    double t0 = now_seconds();
    int timed[MAX_ROWS], m = 0, rows = K_MAX + 1;
    if (rows > target->config.seq_len) rows = target->config.seq_len;
    for (int n = 1; n <= rows; n += n < 9 ? 1 : 4) timed[m++] = n;
    *ak = (AutoK){.accepted = 1, .examined = 2, .scale = 1, .draft_step = draft ? INFINITY : 0};
    time_forward(target, NULL, NULL, 0, timed[m - 1], 0); // warm: the weights into cache
    for (int i = 0; i < m; i++) ak->calib[timed[i]] = INFINITY;
    for (int rep = 0; rep < 3; rep++)
        for (int i = 0; i < m; i++)
            ak->calib[timed[i]] = fmin(ak->calib[timed[i]], time_forward(target, NULL, NULL, 0, timed[i], 0));
    for (int i = m > 1, n = 1; n <= MAX_ROWS; n++) {
        while (i < m - 1 && timed[i] < n) i++;
        int a = i ? timed[i - 1] : 1, b = timed[i];
        if (n != a && n != b)
            ak->calib[n] = b > a ? ak->calib[a] + (ak->calib[b] - ak->calib[a]) * (n - a) / (b - a) : ak->calib[a];
    }
    for (int rep = 0; draft && rep < 3; rep++)
        ak->draft_step = fmin(ak->draft_step, time_forward(draft, NULL, NULL, 0, 1, 0));
    ak->calibration_seconds = now_seconds() - t0;
}

// This round's K from the running estimates.
static int next_auto_k(AutoK *ak) {
    return choose_k(ak->accepted / ak->examined, ak->draft_step, ak->calib, ak->scale);
}

// Folds one round in: its acceptances, seconds per draft step (0: none) and of its `rows`-row verify pass
static void update_auto_k(AutoK *ak, int rows, int accepted, int examined, double draft_step, double verify_s) {
    double d = AUTO_DECAY;
    ak->accepted = AUTO_DECAY_A * ak->accepted + accepted;
    ak->examined = AUTO_DECAY_A * ak->examined + examined;
    if (draft_step > 0) ak->draft_step = d * ak->draft_step + (1 - d) * draft_step;
    if (ak->calib[rows] > 0) ak->scale = d * ak->scale + (1 - d) * verify_s / ak->calib[rows];
}

// ----------------------------------------------------------------------------
// Appendix G. Statistics: the measurement beside the papers' theory (stderr, JSON)

// The drafter the rounds see (plan_rounds): sp's own, its proposals timed; the rest passed through
typedef struct { Drafter base; Drafter *inner; double seconds; } TimedDrafter;
static int propose_timed(Drafter *d, float *q, const int *tokens, int pos) {
    TimedDrafter *td = (TimedDrafter *)d;
    double t0 = now_seconds();
    int made = td->inner->propose(td->inner, q, tokens, pos);
    td->seconds += now_seconds() - t0;
    return made;
}
static Drafter *inner(Drafter *d) { return ((TimedDrafter *)d)->inner; }
static void rewind_timed(Drafter *d, int n) { inner(d)->rewind(inner(d), n); }
static void observe_timed(Drafter *d, int row, int pos) { inner(d)->observe(inner(d), row, pos); }

// The statistics of a spec run, auto-K's estimates among them
struct SpecStats {
    int k;                       // -k: drafts per round, or 0: auto-K
    AutoK autok;
    const Tokenizer *trace;      // non-NULL: print the -v teaching trace to stderr
    long rounds, drafted, accepted, examined;
    long plain_tokens;           // positions without a proposal (drawn from p alone)
    long reached[K_MAX + 2];     // rounds that examined position i of the round
    long accepted_at[K_MAX + 2]; // ... and accepted the proposal there
    long histogram[K_MAX + 2];   // rounds that accepted j proposals
    long k_used[K_MAX + 1];      // rounds run with each K
    int k_hi;                    // the largest K any round used
    double draft_seconds, verify_seconds; // the drafter's (a draft step: a proposal) and the rest of the rounds'
    TimedDrafter timed;          // the drafter, timed
    double round_start, draft_start; // the clock and the drafter's seconds as the round started
};

static SpecStats *new_spec_stats(void) { return xmalloc(sizeof(SpecStats), "statistics"); }
static double ratio(double x, double y) { return y > 0 ? x / y : 0; }

// sp's rounds (-k, or --tree's shape; 0: auto-K, timed now unless nothing is to be generated), its drafter timed
static void plan_rounds(Speculator *sp, SpecStats *st, const Options *o, const Tokenizer *trace) {
    Drafter *in = sp->drafter;
    if (o->tree) build_trees(sp, o->branch, o->tree_depth);
    *st = (SpecStats){.k = !o->n_new ? 1 : o->tree ? o->tree_depth : o->k, .trace = trace};
    st->timed = (TimedDrafter){{propose_timed, in->rewind ? rewind_timed : NULL, in->observe ? observe_timed : NULL,
                                in->model}, in, 0};
    sp->drafter = &st->timed.base;
    if (!st->k) calibrate_auto_k(&st->autok, sp->target, in->model);
}

// The drafter's seconds so far: its proposals, and a tree's later draft passes
static double draft_clock(const SpecStats *st, const Speculator *sp) {
    return st->timed.seconds + (sp->trees ? sp->trees->draft_seconds : 0);
}

// This round's K: -k or auto-K's, within what -n still wants (k + 1 tokens at most) and the context
// (verify rows n-1..n+k-1); a tree is not cut by -n (a cut level would decide its position as a chain
// leaf, with other coins: a short run would not be a longer one's prefix). Notes the round's clocks.
static int start_round(SpecStats *st, Speculator *sp, int n, int want) {
    int k = st->k ? st->k : next_auto_k(&st->autok);
    int room = sp->target->config.seq_len - 1 - n;
    if (k > want - 1 && !sp->trees) k = want - 1;
    if (k > room) k = room;
    st->round_start = now_seconds();
    st->draft_start = draft_clock(st, sp);
    return k < 0 ? 0 : k;
}

// a piece on one line of the trace: newlines as \n, byte tokens by their name (<0xC9>)
static void trace_piece(const Tokenizer *t, int token) {
    if (token >= TOKEN_BYTE0 && token < TOKEN_BYTE0 + 256 && t->vocab[token][0] == '<') {
        fputs(t->vocab[token], stderr);
        return;
    }
    fputc('"', stderr);
    for (const char *c = decode_piece(t, -1, token); *c; c++)
        if (*c == '\n') fputs("\\n", stderr);
        else fputc(*c, stderr);
    fputc('"', stderr);
}

// the -v trace of the tree under node v, depth first: a node per line, indented by its depth
static void trace_tree(const Trees *ts, const Round *rd, const Tokenizer *t, int v) {
    const Tree *tr = &ts->tree;
    for (int j = 0; j < tr->count[v]; j++) {
        int c = tr->kids[v][j], on_path = tr->depth[c] <= rd->accepted && ts->path[tr->depth[c] - 1] == c;
        fprintf(stderr, "  %*s%s node %d, candidate %d of %d under node %d: ", 2 * tr->depth[c], "",
                on_path ? "*" : " ", c, j + 1, tr->count[v], v);
        trace_piece(t, tr->token[c]);
        fputc('\n', stderr);
        trace_tree(ts, rd, t, c);
    }
}

// the -v teaching trace of one round from position n
static void print_trace(const SpecStats *st, const Speculator *sp, const Round *rd, int n) {
    fflush(stdout); // the text so far, then the trace on lines of its own
    fprintf(stderr, "\nround %ld at position %d, K=%d\n", st->rounds, n, rd->k);
    if (sp->trees) trace_tree(sp->trees, rd, st->trace, 0);
    for (int i = 0; i < rd->committed; i++) {
        const Verdict *v = &sp->verdicts[i];
        fprintf(stderr, "  pos %d %s ", n + i, i < rd->k ? "draft" : "next ");
        if (v->x < 0) fprintf(stderr, " drawn from p with coin %.4f: ", v->d); // no proposal
        else {
            trace_piece(st->trace, v->x);
            fprintf(stderr, " d=%.4f  q=%.4f p=%.4f p/q=%.4f u=%.4f  %s", v->d, v->q, v->p,
                    v->q > 0 ? v->p / v->q : 0.0, v->u, v->accepted ? "accept" : "REJECT");
            int tested = sp->trees ? sp->trees->tested[i] : 1;
            if (tested > 1) fprintf(stderr, " (candidate %d; p, q: after the earlier ones)", tested);
            if (!v->accepted) fprintf(stderr, " -> residual mass %.4f, coin %.4f: ", v->residual_mass, v->r);
        }
        if (v->x < 0 || !v->accepted) trace_piece(st->trace, v->token);
        fputc('\n', stderr);
    }
}

// Round `whole` from position n into the statistics and the -v trace, its first `used` positions,
// the ones emitted (a tree decides all its levels: see start_round)
static void end_round(SpecStats *st, const Speculator *sp, const Round *whole, int n, int used) {
    Round trimmed = *whole, *rd = &trimmed;
    if (used < rd->committed) {
        rd->accepted = rd->plain = 0;
        for (int i = 0; i < used; i++) rd->accepted += sp->verdicts[i].accepted;
        rd->committed = used;
    }
    double draft_s = draft_clock(st, sp) - st->draft_start, verify_s = now_seconds() - st->round_start - draft_s;
    int examined = rd->committed - rd->plain;
    st->rounds++;
    st->k_used[rd->k]++;
    if (rd->k > st->k_hi) st->k_hi = rd->k;
    st->drafted += rd->drafted;
    st->examined += examined;
    st->accepted += rd->accepted;
    st->histogram[rd->accepted]++;
    st->plain_tokens += rd->plain;
    for (int i = 0; i < examined; i++) st->reached[i]++, st->accepted_at[i] += sp->verdicts[i].accepted;
    st->verify_seconds += verify_s;
    st->draft_seconds += draft_s;
    if (st->k == 0 && rd->k >= 1)
        update_auto_k(&st->autok, rd->k + 1, rd->accepted, examined, ratio(draft_s, rd->drafted), verify_s);
    if (st->trace) print_trace(st, sp, rd, n);
}

// Seconds of one target-alone step (a 1-row forward and its distribution) at pos: the median of 5, timed
// after generating so the run does not count it; probs (vocab) is scratch
static double time_target_step(Transformer *tr, Sampler *s, float *probs, int token, int pos) {
    double t[5];
    for (int i = 0; i < 5; i++) { // sorted as they come
        t[i] = time_forward(tr, s, probs, token, 1, pos);
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) { double x = t[j]; t[j] = t[j - 1]; t[j - 1] = x; }
    }
    return t[2];
}

// The derived numbers of a spec run; a, c and r as NOTATION (the top) defines them, timed:
//   acceptance_rate = accepted / drafted (every proposal counts)
//   a = accepted / examined (proposals after a rejection are never examined): the theory's alpha
typedef struct {
    int k;                  // K of the formulas: -k, or the one used most (auto-K, -d medusa)
    double acceptance_rate, a, c, r;
    double tokens_per_round, expected_per_round; // measured, and (1-a^(K+1))/(1-a) at each round's K
    double predicted, estimated; // the theory's speedup; this run's tok/s x one target step
    double rows;            // a verify pass's rows, the rounds' mean: r above them is a busy machine's
} SpecSummary;

static double per_position(const SpecStats *st, int i) { return ratio(st->accepted_at[i], st->reached[i]); }

static SpecSummary summarize(const Report *rp) {
    const SpecStats *st = rp->st;
    double rounds = (double)st->rounds, tokens = 0, steps = 0; // the theory at each round's own K (auto-K varies it)
    SpecSummary m = {.k = st->k ? st->k : 1};
    for (int k = 1; k <= K_MAX && (st->k == 0 || st->k > st->k_hi); k++) // auto-K; a drafter that stopped short
        if (st->k_used[k] > st->k_used[m.k] || (m.k == st->k && st->k_used[m.k] == 0)) m.k = k;
    m.acceptance_rate = ratio(st->accepted, st->drafted);
    m.a = ratio(st->accepted, st->examined);
    m.c = ratio(ratio(st->draft_seconds, st->drafted), rp->target_step);
    m.r = ratio(ratio(st->verify_seconds, rounds), rp->target_step);
    m.tokens_per_round = ratio(st->examined + st->plain_tokens, rounds);
    for (int k = 0; k <= K_MAX; k++) {
        tokens += (double)st->k_used[k] * expected_tokens_per_round(m.a, k);
        steps += (double)st->k_used[k] * (k + pow(m.a, k));
        m.rows += ratio((double)st->k_used[k] * (k + 1), rounds);
    }
    m.expected_per_round = ratio(tokens, rounds);
    if (m.r > 0) m.predicted = m.expected_per_round / (ratio(steps, rounds) * m.c + m.r);
    m.estimated = ratio(rp->out->n_generated, rp->seconds) * rp->target_step;
    return m;
}

// Output.ended_by (END_*) in the report and in the JSON
static const char *const ENDED_BY[][2] = {{"-n reached", "length"}, {"the model ended the text", "eos"},
    {"the context (seq_len) is full", "context"}, {"interrupted by Ctrl-C", "interrupt"}};

// r past the rows (and a margin for the clock): the run's passes were slowed, or the step was timed quickly
static int disturbed(const Report *rp, const SpecSummary *m) { return !rp->opt->tree && m->r > 1.25 * m->rows; }

static void json_longs(FILE *f, const char *key, const long *v, int n) {
    fprintf(f, ", \"%s\": [", key);
    for (int i = 0; i < n; i++) fprintf(f, "%s%ld", i ? ", " : "", v[i]);
    fputc(']', f);
}

static void print_spec_report(const Report *rp) {
    const SpecStats *st = rp->st;
    const char *tree = rp->opt->tree;
    SpecSummary m = summarize(rp);
    if (rp->sp->lenience < 1.0f)
        fprintf(stderr, "  LOSSY: --lenience %g accepts with min(1, p/(%g q)); this text is NOT "
                "distributed as the target's\n", rp->sp->lenience, rp->sp->lenience);
    if (tree) fprintf(stderr, "  %ld rounds, --tree %s", st->rounds, tree);
    else fprintf(stderr, "  %ld rounds, K = %d", st->rounds, m.k);
    if (st->k == 0 && !tree) {
        fprintf(stderr, " (auto-K's most used; rounds per K = 0..%d:", st->k_hi);
        for (int k = 0; k <= st->k_hi; k++) fprintf(stderr, " %ld", st->k_used[k]);
        fputc(')', stderr);
    }
    fprintf(stderr, "\n  %ld proposals, %ld examined, %ld accepted: a = %.3f per examined proposal\n"
            "  tokens per round %.2f", st->drafted, st->examined, st->accepted, m.a, m.tokens_per_round);
    if (!tree) fprintf(stderr, "; theory (1-a^(K+1))/(1-a) at the rounds' K: %.2f", m.expected_per_round);
    fprintf(stderr, "\n  acceptance at the round's position 1..%d:", st->k_hi + 1);
    for (int i = 0; i <= st->k_hi; i++)
        fprintf(stderr, st->reached[i] ? " %.3f" : " -", per_position(st, i)); // -: never reached
    fprintf(stderr, "\n  rounds that accepted 0..%d proposals:", st->k_hi + 1);
    for (int i = 0; i <= st->k_hi + 1; i++) fprintf(stderr, " %ld", st->histogram[i]);
    if (st->plain_tokens)
        fprintf(stderr, "\n  %ld positions had no proposal (lookup found no n-gram, past the draft's "
                "context or past the last Medusa head): drawn from the target alone", st->plain_tokens);
    fprintf(stderr, "\n  timed (varies with the machine's load): draft %.3f s on %d thread%s, verify %.3f s, "
            "other %.3f s", st->draft_seconds, rp->opt->draft_threads, rp->opt->draft_threads == 1 ? "" : "s",
            st->verify_seconds, rp->seconds - st->draft_seconds - st->verify_seconds);
    if (st->autok.calibration_seconds > 0) // not in the run's seconds: it ran before
        fprintf(stderr, "; before them, auto-K's calibration %.3f s", st->autok.calibration_seconds);
    fprintf(stderr, "\n  timed: in target steps of %.3f ms (timed after the run), c = %.3f per draft step, r = %.3f "
            "per verify pass\n  speedup estimated %.2fx (tokens per second x one target step)", 1e3 * rp->target_step,
            m.c, m.r, m.estimated);
    if (!tree) fprintf(stderr, ", predicted %.2fx (the theory at the a, c and r above)", m.predicted);
    fprintf(stderr, "; only a target-only run measures it\n");
    if (disturbed(rp, &m)) // an n-row pass does at most n steps' work: the run was slowed, not the step
        fprintf(stderr, "  the timing was disturbed: a verify pass of %.1f rows took %.1f target steps, more than "
                "its rows' worth; the machine was busy, so c, r and the estimate are not this run's costs\n",
                m.rows, m.r);
}

static void print_report(const Report *rp) {
    const Output *o = rp->out;
    if (rp->prompt_tokens > 1) // BOS and the prompt; the prefill reads all but the last (Ctrl-C: fewer)
        fprintf(stderr, "prompt: %d tokens, prefilled in %.3f s, %.1f tok/s%s\n", rp->prompt_tokens,
                o->prompt_seconds, ratio(o->prefilled, o->prompt_seconds),
                o->prefilled < rp->prompt_tokens - 1 ? ", stopped by Ctrl-C" : "");
    fprintf(stderr, "%s: %d tokens in %.3f s, %.1f tok/s, %d thread%s (%s)\n", rp->opt->mode, o->n_generated,
            rp->seconds, ratio(o->n_generated, rp->seconds), rp->opt->threads, rp->opt->threads == 1 ? "" : "s",
            ENDED_BY[o->ended_by][0]);
    if (o->ended_by == END_CONTEXT && o->n_generated < o->max_new)
        fprintf(stderr, "specdec: note: stopped after %d of the %d tokens asked for (-n): the context of %d positions "
                "is full\n", o->n_generated, o->max_new, o->n_generated + rp->prompt_tokens);
    if (rp->sp) print_spec_report(rp);
}

// -j FILE, checked before anything runs (model.h's plan_output); write_json replaces the file whole
static void check_json_path(const Options *o) {
    char msg[IO_PATH_MAX + 256];
    if (o->json_path && plan_output(&json_out, o->json_path, msg, sizeof(msg)))
        json_out.name[0] = '\0', die("-j %s", msg);
}

// The bytes of the UTF-8 character at c, or 0 if c starts none (RFC 3629: the lead byte, continuation
// bytes, the second's range narrowed after E0, F0 (overlong), ED (surrogates) and F4 (past U+10FFFF))
static int utf8_length(const unsigned char *c) {
    int n = c[0] < 0x80 ? 1 : c[0] < 0xC2 ? 0 : c[0] < 0xE0 ? 2 : c[0] < 0xF0 ? 3 : c[0] < 0xF5 ? 4 : 0;
    for (int i = 1; i < n; i++) // a NUL ends the text: it is no continuation byte
        if ((c[i] & 0xC0) != 0x80) return 0;
    int lo = c[0] == 0xE0 ? 0xA0 : c[0] == 0xF0 ? 0x90 : 0x80, hi = c[0] == 0xED ? 0x9F : c[0] == 0xF4 ? 0x8F : 0xBF;
    return n > 1 && (c[1] < lo || c[1] > hi) ? 0 : n;
}

// ", "key": "value" escaped for JSON (NULL: null); a byte that is not UTF-8 as \u00XX, its Latin-1 character
static void json_string(FILE *f, const char *key, const char *v) {
    fprintf(f, ", \"%s\": ", key);
    if (!v) { fputs("null", f); return; }
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)v; *c; c++) {
        int n = utf8_length(c);
        if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
        else if (*c < 0x20 || !n) fprintf(f, "\\u%04x", *c);
        else {
            fwrite(c, 1, (size_t)n, f);
            c += n - 1;
        }
    }
    fputc('"', f);
}

// target_forwards: one verify pass a round; draft_forwards: the draft steps c counts, a proposal each
static void write_json_spec(FILE *f, const Report *rp) {
    const SpecStats *st = rp->st;
    SpecSummary m = summarize(rp);
    fprintf(f, ", \"lenience\": %g, \"lossy\": %s, \"k\": %d, \"auto_k\": %s, \"target_forwards\": %ld, "
            "\"draft_forwards\": %ld, \"drafted\": %ld, \"examined\": %ld, \"accepted\": %ld, "
            "\"acceptance_rate\": %.6f, \"alpha\": %.6f, \"tokens_per_round\": %.6f, \"per_position_acceptance\": [",
            rp->sp->lenience, rp->sp->lenience < 1.0f ? "true" : "false", rp->opt->tree ? 0 : m.k,
            st->k || rp->opt->tree ? "false" : "true", st->rounds, st->drafted, st->drafted,
            st->examined, st->accepted, m.acceptance_rate, m.a, m.tokens_per_round);
    for (int i = 0; i <= st->k_hi; i++) fprintf(f, "%s%.6f", i ? ", " : "", per_position(st, i));
    fputc(']', f);
    json_longs(f, "accepted_histogram", st->histogram, st->k_hi + 2);
    json_longs(f, "rounds_per_k", st->k_used, K_MAX + 1); // K = 0 .. K_MAX, as the text's
    fprintf(f, ", \"rounds\": %ld, \"draft_seconds\": %.6f, \"verify_seconds\": %.6f, "
            "\"plain_target_tokens\": %ld, \"target_step_seconds\": %.6f, \"c\": %.6f, \"r\": %.6f, "
            "\"expected_tokens_per_round\": %.6f, \"predicted_speedup\": %.6f, "
            "\"estimated_speedup\": %.6f, \"timing_disturbed\": %s, \"calibration_seconds\": %.6f, "
            "\"draft_threads\": %d", st->rounds, st->draft_seconds, st->verify_seconds, st->plain_tokens,
            rp->target_step, m.c, m.r, m.expected_per_round, m.predicted, m.estimated,
            disturbed(rp, &m) ? "true" : "false", st->autok.calibration_seconds, rp->opt->draft_threads);
}

// The JSON object, to -j's file whole or not at all (model.h: begin_output, commit_output)
static void write_json(const Report *rp) {
    const Output *o = rp->out;
    const Options *op = rp->opt;
    int model_draft = rp->sp ? rp->sp->drafter->model != NULL : !strcmp(op->mode, "draft");
    char msg[IO_PATH_MAX + 256];
    FILE *f = begin_output(&json_out, msg, sizeof(msg));
    if (!f) die("-j %s", msg);
    fprintf(f, "{\"mode\": \"%s\"", op->mode);
    json_string(f, "target", strcmp(op->mode, "draft") ? op->target_path : NULL);
    json_string(f, "drafter", !rp->sp ? NULL : op->lookup ? "lookup" : op->medusa ? "medusa" : op->eagle ? "eagle" : "model");
    json_string(f, "draft", model_draft ? op->draft_path : op->medusa ? op->medusa : op->eagle);
    json_string(f, "draft_weights", model_draft ? WEIGHTS_NAME[op->draft_weights] : NULL);
    json_string(f, "target_weights", rp->target_gs < 0 ? NULL : rp->target_gs ? "int8" : "f32");
    json_string(f, "tokenizer", op->tokenizer_path);
    json_string(f, "prompt", op->prompt);
    json_string(f, "tree", rp->sp ? op->tree : NULL);
    fprintf(f, ", \"n\": %d, \"seed\": %llu, \"temperature\": %g, \"top_p\": %g, \"top_k\": %d, "
            "\"threads\": %d, \"prompt_tokens\": %d, \"prompt_seconds\": %.6f, \"generated_tokens\": %d, "
            "\"ended_by\": \"%s\", \"tokens\": [", op->n_new, op->seed, op->temperature, op->top_p, op->top_k,
            op->threads, rp->prompt_tokens, o->prompt_seconds, o->n_generated, ENDED_BY[o->ended_by][1]);
    for (int i = 0; i < o->n_generated; i++) fprintf(f, "%s%d", i ? ", " : "", o->generated[i]);
    fprintf(f, "], \"seconds\": %.6f, \"tokens_per_second\": %.3f", rp->seconds, ratio(o->n_generated, rp->seconds));
    if (rp->sp) write_json_spec(f, rp);
    fprintf(f, "}\n");
    if (commit_output(&json_out, msg, sizeof(msg))) die("-j %s", msg);
    json_out.name[0] = '\0';
}

// ----------------------------------------------------------------------------
// Appendix H. The text on stdout

// Ctrl-C while generating stops it at the end of the pass, step or round, and the
// statistics of what was generated are printed; a second Ctrl-C ends the process.
static void on_interrupt(int sig) {
    if (interrupted) signal(sig, SIG_DFL), raise(sig);
    interrupted = 1;
}

// Print the prompt (tokens[1..n) after BOS) as llama2.c's run does.
static void start_output(Output *o, const int *tokens, int n) {
    for (int i = 1; i < n && !o->quiet; i++) print_piece(decode_piece(o->tok, tokens[i - 1], tokens[i]));
    o->prev = tokens[n - 1];
    o->done = o->max_new == 0;
    o->ended_by = END_LENGTH;
    if (!o->quiet) flush_text();
    o->shown_at = now_seconds();
}

// Send the buffered text; a write error (a full disk, a closed pipe) ends the run, not decoding on unseen
static void flush_text(void) {
    if (fflush(stdout) != 0 || ferror(stdout)) die("cannot write the text to stdout: %s", strerror(errno));
}

// Take one new token: stop at BOS/EOS (not printed) or after max_new tokens.
static void emit(Output *o, int token) {
    if (o->done) return;
    if (token == TOKEN_BOS || token == TOKEN_EOS) {
        o->done = 1;
        o->ended_by = END_TOKEN;
        return;
    }
    o->generated[o->n_generated++] = token;
    if (!o->quiet) print_piece(decode_piece(o->tok, o->prev, token));
    o->prev = token;
    if (o->n_generated >= o->max_new) o->done = 1;
}

// The text so far onto the screen, at most every 40 ms (25 a second looks continuous): each write wakes
// the reader on a core the forward's threads were using (PERFORMANCE.md, "text flushed at most every 40 ms")
static void show_output(Output *o) {
    double now = now_seconds();
    if (o->quiet || now - o->shown_at < 0.04) return;
    flush_text();
    o->shown_at = now;
}

// ----------------------------------------------------------------------------
// Appendix I. Command line

// Every flag, in -h's order: the field of Options it sets ('s' string, 'i' int, 'f' float, 'u' unsigned
// long long; 'b' an int set to 1, the flag takes no value), the value's range and what an error says it
// expects, and its text in -h (a printf format: %d is the CPUs this process may use).
#define STR(x) STR_(x)
#define STR_(x) #x
#define AT(field) offsetof(Options, field)
typedef struct { const char *flag, *arg; char kind; size_t at; double lo, hi; const char *expected, *help; } Flag;
static const Flag FLAGS[] = {
    {"-d", "FILE", 's', AT(draft_path), 0, 0, NULL, "draft checkpoint (default weights/draft.bin; when that one "
     "does not fit the target and -d is not given, the target decodes alone), or -d lookup: propose what followed "
     "the context's last n-gram earlier on (no draft model), or -d medusa[:FILE], -d eagle[:FILE]: drafters on "
     "the target's hidden state (default weights/medusa.bin, weights/eagle.bin)"},
    {"--ngram-max", "N", 'i', AT(ngram_max), 1, 64, "an integer in 1..64", "the longest n-gram -d lookup tries, "
     "the first it tries (default 3)"},
    {"--ngram-min", "N", 'i', AT(ngram_min), 1, 64, "an integer in 1..64", "the shortest n-gram it tries (default 1)"},
    {"--lenience", "L", 'f', AT(lenience), FLT_MIN, 1, "a number in (0, 1]; 1 is exact, below 1 is lossy", "LOSSY "
     "below 1: accept with min(1, p/(L q)), so the output is NOT the target's distribution (default 1: exact)"},
    {"-z", "FILE", 's', AT(tokenizer_path), 0, 0, NULL, "tokenizer (default tokenizer.bin: the shipped models'; "
     "stories260K's is tok512.bin, llama2.c's models' is llama2.c's tokenizer.bin)"},
    {"-m", "MODE", 's', AT(mode), 0, 0, NULL, "spec | target | draft (default spec); the model is the first argument"},
    {"-i", "TEXT", 's', AT(prompt), 0, 0, NULL, "prompt (default \"\")"},
    {"-f", "FILE", 's', AT(prompt_file), 0, 0, NULL, "the prompt from a file, - for stdin (a pipe too)"},
    {"-n", "N", 'i', AT(n_new), 0, 1 << 24, "an integer in 0..16777216", "new tokens, 1..16777216 (default: until "
     "the context is full; so does 0, as in llama2.c)"},
    {"-k", "K", 'i', AT(k), 0, K_MAX, "an integer in 0.." STR(K_MAX) ", 0 for auto", "drafts per round, 1.."
     STR(K_MAX) "; 0 (the default) chooses K as it goes from measured costs, never changing the text; -d "
     "medusa and -d eagle, whose text depends on K, take a fixed K instead: every head, or 4"},
    {"--tree", "B1,B2,...", 's', AT(tree), 0, 0, NULL, "draft a tree: B_d candidates under each node at depth d, all "
     "verified in one pass (e.g. 3,2,1; 1,1,1 is the chain -k 3); a draft model, the exact rule, no -k (depth is K)"},
    {"-t", "T", 'f', AT(temperature), 0, 1e6, "a number in 0..1e6, 0 for greedy", "temperature, 0..1e6; 0 is "
     "greedy (default 1.0)"},
    {"-p", "P", 'f', AT(top_p), FLT_MIN, 1, "a number in (0, 1]", "top-p in (0, 1]; 1 is off (default 1.0)"},
    {"--top-k", "N", 'i', AT(top_k), 0, 1 << 24, "an integer in 0..16777216, 0 for off", "keep the N most likely "
     "tokens; 0 is off (default 0)"},
    {"-s", "SEED", 'u', AT(seed), 0, 0x1p64, "an integer in 0..18446744073709551615", "random seed, 0..2^64-1 "
     "(default 42)"},
    {"--threads", "N", 'i', AT(threads), 1, MAX_THREADS, "an integer in 1.." STR(MAX_THREADS), "threads, 1.."
     STR(MAX_THREADS) " (default: the CPUs this process may use, here %d)"},
    {"--draft-threads", "N", 'i', AT(draft_threads), 1, MAX_THREADS, "an integer in 1.." STR(MAX_THREADS), "threads "
     "for the draft model, up to --threads (default 1: its forwards are too short to share; never changes the text)"},
    {"--draft-weights", "W", 's', AT(weights_name), 0, 0, NULL, "int8 | f32: an f32 draft's matrices quantised "
     "at load in groups as llama2.c's version-2 export does (about a quarter of the bytes to read), or kept as "
     "in the file (default int8)"},
    {"--target-weights", "W", 's', AT(target_weights_name), 0, 0, NULL, "f32 | int8: the same for the target "
     "(default f32); a version-2 file (llama2.c's export.py --version 2, ./train quantize) is int8"},
    {"-j", "FILE", 's', AT(json_path), 0, 0, NULL, "write statistics as one JSON object"},
    {"-q", "", 'b', AT(quiet), 0, 0, NULL, "no text on stdout"},
    {"-v", "", 'b', AT(verbose), 0, 0, NULL, "teaching trace of every round on stderr"},
    {"-h", "", 'b', AT(help), 0, 0, NULL, "this text (also --help)"},
};
#define N_FLAGS (int)(sizeof(FLAGS) / sizeof(FLAGS[0]))

// -h: each flag's text from FLAGS, wrapped at 80 columns
static void usage(void) {
    int cpus = usable_cpus();
    printf("usage: specdec [target.bin] [options]   (llama2.c's run.c flags, and the draft's)\n");
    for (const Flag *f = FLAGS; f < FLAGS + N_FLAGS; f++) {
        char text[1024];
        int indent = strlen(f->flag) + strlen(f->arg) < 8 ? 11 : 20; // the text from column 12, 21 after a long flag
        int col = printf("  %s %-*s", f->flag, indent - 3 - (int)strlen(f->flag), f->arg);
        snprintf(text, sizeof(text), f->help, cpus);
        for (char *word = strtok(text, " "); word; word = strtok(NULL, " ")) {
            if (col + 1 + (int)strlen(word) > 80) col = printf("\n%*s", indent, "") - 1;
            col += printf(" %s", word);
        }
        printf("\n");
    }
    printf("Default files missing from the working directory are taken from beside the binary.\n");
}

// The commonest of other programs' flags (llama.cpp's, run.c's) and what they are here: each error names it
static const char *const HABITS[][2] = {
    {" -m --model ", "-m is the mode, run.c's generate is spec or target, no chat; the model is the first "
                     "argument: specdec MODEL.bin [options]"},
    {" -n ", "without -n it decodes until the context is full (so does -n 0), as llama.cpp's -n -1"},
    {" -s ", "llama.cpp's -s -1, a random seed, is -s $RANDOM here"},
    {" -p --top-p --prompt --file ", "-p is top-p, as in llama2.c; the prompt is -i TEXT or -f FILE"},
    {" --temp ", "the temperature is -t T"},
    {" -md --model-draft ", "the draft is -d FILE"},
    {" -c --ctx-size ", "the context is the checkpoint's seq_len; -n N caps the new tokens"},
    {" -ngl --n-gpu-layers -ngld ", "specdec runs on the CPU"},
    {" -y -cnv --conversation -sys ", "no chat: the prompt (-i, -f) is text to continue"},
    {" --repeat-penalty --min-p ", "no such sampler here: -t, -p and --top-k shape the distribution"},
    {" -e --escape ", "-i takes the text as it is: a newline as $'a\\nb' in bash, or -f FILE"},
    {" -fa --flash-attn ", "one attention kernel, the same bits on every CPU"},
};

// The command line's errors, each with its hint: parse_options reports them all at once
static char refused[4096];
static int n_refused;

// One error into refused; flag's hint, if another program's, after it: " (what it is here)"
static void refuse(const char *flag, const char *fmt, ...) {
    char key[40];
    size_t n = n_refused ? strlen(refused) : 0;
    va_list ap;
    va_start(ap, fmt);
    n += (size_t)snprintf(refused + n, sizeof(refused) - n, "%s", n_refused++ ? "\n  " : "");
    if (n < sizeof(refused)) n += (size_t)vsnprintf(refused + n, sizeof(refused) - n, fmt, ap);
    va_end(ap);
    snprintf(key, sizeof(key), " %.30s ", flag);
    for (size_t i = 0; i < sizeof(HABITS) / sizeof(HABITS[0]) && n < sizeof(refused); i++)
        if (strstr(HABITS[i][0], key)) snprintf(refused + n, sizeof(refused) - n, " (%s)", HABITS[i][1]);
}

static void bad_flag(const char *flag, const char *value, const char *expected) {
    refuse(flag, "%s %s: expected %s", flag, value, expected);
}

static int flag_index(const char *flag) {
    for (int i = 0; i < N_FLAGS; i++)
        if (!strcmp(flag, FLAGS[i].flag)) return i;
    return -1;
}

static int given(const Options *o, const char *flag) { return (o->given >> flag_index(flag)) & 1; }

// v, the value of flag f (NULL for a 'b' flag), into its field of o
static void set_flag(Options *o, const Flag *f, const char *v) {
    char *at = (char *)o + f->at, *end;
    if (f->kind == 's') memcpy(at, &v, sizeof(v));
    else if (f->kind == 'b') *(int *)(void *)at = 1;
    if (f->kind == 's' || f->kind == 'b') return;
    errno = 0;
    long long n = 0;          // 'i'
    unsigned long long u = 0; // 'u': seeds, exact past 2^53, up to 2^64 - 1
    double x = f->kind == 'f' ? strtod(v, &end) : f->kind == 'i' ? (double)(n = strtoll(v, &end, 10))
             : (double)(u = strtoull(v, &end, 10)); // which would take -1 as 2^64 - 1
    if (end == v || *end != '\0' || errno || !isfinite(x) || x < f->lo || x > f->hi ||
        (f->kind == 'u' && strchr(v, '-')))
        { bad_flag(f->flag, v, f->expected); return; }
    if (f->kind == 'i') *(int *)(void *)at = (int)n;
    else if (f->kind == 'f') *(float *)(void *)at = (float)x;
    else *(unsigned long long *)(void *)at = u;
}

// --tree B1,B2,... (Options' branch), refused outside the limits its messages give
static void parse_tree(Options *o, int spec) {
    long nodes = 0, level = 1; // refused as soon as they pass TREE_MAX - 1: no overflow
    for (const char *c = o->tree;; c++) { // digits, then ',' and more, or the end
        char *end = NULL;
        long b = isdigit((unsigned char)*c) ? strtol(c, &end, 10) : 0;
        if (b < 1 || b > 8 || (*end && *end != ',') || o->tree_depth == K_MAX || (nodes += level *= b) > TREE_MAX - 1)
            die("--tree %s: expected 1..8 children per level like 3,2,1 (3 + 6 + 6 = 15 nodes), "
                "at most %d levels and %d nodes (see specdec -h)", o->tree, K_MAX, TREE_MAX - 1);
        o->branch[o->tree_depth++] = (int)b;
        if (!*(c = end)) break;
    }
    const char *with = !spec ? o->mode : o->lookup ? "-d lookup" : o->medusa ? "-d medusa" : o->eagle ? "-d eagle"
                     : given(o, "-k") ? "-k" : o->lenience < 1.0f ? "--lenience" : NULL;
    if (with)
        die("--tree %s with %s%s: a tree needs spec mode, a draft model, the exact rule (no --lenience) and no -k "
            "(the tree's depth is its K)", o->tree, spec ? "" : "-m ", with);
}

// A default file (not named on the command line): the working directory's, else the one
// beside the binary (slot: a buffer of its own for each default that can be in use at once)
static const char *beside_binary(const char *path, int slot) {
    static char found[3][4096];
    char *at = found[slot];
    ssize_t n = access(path, F_OK) ? readlink("/proc/self/exe", at, sizeof(found[0]) - 1) : -1;
    char *slash = n > 0 ? (at[n] = '\0', strrchr(at, '/')) : NULL;
    if (!slash || (size_t)(slash + 1 - at) + strlen(path) >= sizeof(found[0])) return path;
    strcpy(slash + 1, path);
    return access(at, F_OK) ? path : at;
}

// -d NAME:FILE -> FILE, -d NAME -> its default file, anything else -> NULL
static const char *drafter_file(const char *d, const char *name, const char *default_file) {
    size_t n = strlen(name);
    if (strncmp(d, name, n) || (d[n] && d[n] != ':')) return NULL;
    return d[n] ? d + n + 1 : beside_binary(default_file, 1);
}

// Flags that contradict each other or the mode: an error; useless or odd ones: a warning
static void check_options(Options *o, int usable) {
    int spec = !strcmp(o->mode, "spec"), target = !strcmp(o->mode, "target");
    int on_target = o->medusa || o->eagle; // drafters on the target's hidden state
    int draft_opts = given(o, "--draft-threads") || given(o, "--draft-weights");
    int ngram = given(o, "--ngram-min") || given(o, "--ngram-max");
    const char *unused = target && given(o, "-d") ? "-d" : (target || o->lookup || on_target) && draft_opts
                       ? "--draft-threads/--draft-weights" : !o->lookup && ngram ? "--ngram-min/--ngram-max" : NULL;
    if (o->temperature > 2.0f)
        fprintf(stderr, "specdec: warning: -t %g is the temperature, as in llama2.c (above 2 the text is close "
                "to noise); threads are --threads N\n", o->temperature);
    if (o->threads > usable)
        fprintf(stderr, "specdec: warning: --threads %d, but this process may use %d CPU%s: the threads beyond that "
                "wait for each other at every barrier, which is slow\n", o->threads, usable, usable == 1 ? "" : "s");
    if (o->draft_threads > o->threads) {
        fprintf(stderr, "specdec: warning: --draft-threads %d is more than --threads %d: the draft runs on %d\n",
                o->draft_threads, o->threads, o->threads);
        o->draft_threads = o->threads;
    }
    if (unused)
        fprintf(stderr, "specdec: warning: %s ignored: %s\n", unused, target ? "-m target decodes with the "
                "target alone" : o->lookup || on_target ? "this -d loads no draft model" : "they set up -d lookup");
    if (o->ngram_min > o->ngram_max) die("--ngram-min %d is above --ngram-max %d", o->ngram_min, o->ngram_max);
    if (o->tree) parse_tree(o, spec);
    if ((o->lookup || on_target) && !spec && !target)
        die("-d %s: only spec mode drafts; there is no model to run alone", o->draft_path);
    if (o->lenience < 1.0f && !spec) die("--lenience: only speculative decoding (-m spec) accepts drafts");
    if (!spec && (given(o, "-k") || o->verbose))
        die("%s: only speculative decoding (-m spec) has rounds; -m %s decodes with one model",
            given(o, "-k") ? "-k" : "-v", o->mode);
}

static void parse_options(Options *o, int argc, char **argv) {
    int usable = usable_cpus(), i = 1;
    *o = (Options){.target_path = "weights/target.bin", .draft_path = "weights/draft.bin",
                   .tokenizer_path = "tokenizer.bin", .mode = "spec", .prompt = "", .weights_name = "int8",
                   .target_weights_name = "f32", .n_new = 1 << 24, .threads = usable, .draft_threads = 1,
                   .ngram_min = 1, .ngram_max = 3, .lenience = 1.0f, .temperature = 1.0f, .top_p = 1.0f,
                   .seed = 42}; // no -n: main sets what fits
    if (argc > 1 && argv[1][0] != '-') o->target_path = argv[i++], o->target_named = 1;
    for (n_refused = 0; i < argc && !o->help; i++) {
        const char *f = strcmp(argv[i], "--help") ? argv[i] : "-h", *next = i + 1 < argc ? argv[i + 1] : "-";
        int at = flag_index(f);
        if (f[0] != '-')
            refuse(f, "%s: a file name among the options; the target checkpoint goes first "
                   "(specdec TARGET.bin [options])", f);
        else if (at < 0) { // another program's: its value (not a flag, or a number) is skipped
            refuse(f, "unknown flag %s", f);
            i += next[0] != '-' || isdigit((unsigned char)next[1]);
        } else if (FLAGS[at].kind != 'b' && i + 1 >= argc) bad_flag(f, "(missing)", "a value after the flag");
        else {
            set_flag(o, &FLAGS[at], FLAGS[at].kind == 'b' ? NULL : argv[++i]);
            o->given |= 1u << at;
        }
    }
    if (o->help) return;
    if (strcmp(o->mode, "spec") && strcmp(o->mode, "target") && strcmp(o->mode, "draft"))
        bad_flag("-m", o->mode, "a mode: spec, target or draft");
    o->draft_weights = strcmp(o->weights_name, "f32") ? WEIGHTS_INT8 : WEIGHTS_F32;
    if (strcmp(o->weights_name, WEIGHTS_NAME[o->draft_weights]))
        bad_flag("--draft-weights", o->weights_name, "int8 or f32");
    o->target_weights = strcmp(o->target_weights_name, "int8") ? WEIGHTS_F32 : WEIGHTS_INT8;
    if (strcmp(o->target_weights_name, WEIGHTS_NAME[o->target_weights]))
        bad_flag("--target-weights", o->target_weights_name, "int8 or f32");
    if (n_refused > 1) die("%d flags to change (see specdec -h):\n  %s", n_refused, refused);
    if (n_refused) die("%s (see specdec -h)", refused);
    if (given(o, "-i") && given(o, "-f")) die("-i and -f both give the prompt: use one (see specdec -h)");
    if (given(o, "-n") && !o->n_new) o->given &= ~(1u << flag_index("-n")); // -n 0: as if not given
    if (o->temperature > 0.0f && o->temperature < 1e-6f)
        die("-t %g: expected 0 (greedy) or at least 1e-6: a smaller temperature makes logits / t "
            "overflow float32", o->temperature);
    if (!o->target_named) o->target_path = beside_binary(o->target_path, 0);
    if (!given(o, "-d")) o->draft_path = beside_binary(o->draft_path, 1);
    if (!given(o, "-z")) o->tokenizer_path = beside_binary(o->tokenizer_path, 2);
    o->lookup = !strcmp(o->draft_path, "lookup");
    o->medusa = drafter_file(o->draft_path, "medusa", "weights/medusa.bin");
    o->eagle = drafter_file(o->draft_path, "eagle", "weights/eagle.bin");
    // drafters on the target's hidden state: the sample depends on K, so a fixed one (-k 0 too): every head, or 4
    if ((o->medusa || o->eagle) && !o->k) o->k = o->medusa ? K_MAX : 4;
    check_options(o, usable);
}

// -f FILE (- for stdin): the prompt, whole, less one final newline (as llama.cpp's -f); NULL without -f.
// An input of the run (model.h; stdin too); a FILE is a regular file (O_NONBLOCK: a FIFO is not waited on).
#define PROMPT_FILE_MAX (1 << 24)
static char *read_prompt(const Options *o) {
    const char *path = o->prompt_file;
    if (!path) return NULL;
    int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_NONBLOCK) : 0;
    struct stat st;
    char msg[2 * IO_PATH_MAX + 256];
    if (fd < 0) die("-f %s: cannot open the prompt file: %s", path, strerror(errno));
    if (fd && (fstat(fd, &st) || !S_ISREG(st.st_mode)))
        die("-f %s: not a regular file (a FIFO, device or directory); pipe a prompt to -f - (stdin)", path);
    if (note_input(fd, fd ? path : "the prompt (-f -: stdin)", msg, sizeof(msg))) die("%s", msg);
    FILE *f = fd ? fdopen(fd, "rb") : stdin;
    if (!f) die("-f %s: cannot read the prompt: %s", path, strerror(errno));
    char *text = xmalloc(PROMPT_FILE_MAX + 2, "prompt"), *nul;
    size_t n = fread(text, 1, PROMPT_FILE_MAX + 1, f);
    int failed = ferror(f), e = errno;
    if (f != stdin) fclose(f);
    if (failed) die("-f %s: cannot read the prompt: %s", path, strerror(e));
    if (n > PROMPT_FILE_MAX) die("-f %s: more than %d MB; expected a prompt", path, PROMPT_FILE_MAX >> 20);
    if ((nul = memchr(text, '\0', n)))
        die("-f %s: a NUL byte at offset %zu; expected text", path, (size_t)(nul - text));
    if (n && text[n - 1] == '\n') text[n - 1] = '\0';
    return text;
}

// BOS and the prompt's tokens into tokens (room for seq_len); returns the count. A prompt that cannot fit
// (a token covers max_token_length bytes at most) is refused before the quadratic merges. file: -f's or NULL
static int encode_prompt(Tokenizer *tok, int *tokens, const char *prompt, const char *file, const Transformer *tr) {
    size_t len = strlen(prompt), most = (size_t)tok->max_token_length;
    size_t at_least = 1 + (len + most) / most; // BOS, then ceil((len + 1) / most): a leading space, the bytes
    const char *flag = file ? "-f " : "-i", *name = file ? file : "";
    if (len > 0 && at_least > (size_t)tr->config.seq_len)
        die("%s%s: the prompt is %zu bytes, at least %zu tokens, but %s has seq_len %d; shorten the "
            "prompt", flag, name, len, at_least, tr->path, tr->config.seq_len);
    int *buf = xmalloc((len + 3) * sizeof(int), "prompt tokens");
    int n = encode(tok, buf, prompt, 1, 0);
    if (n > tr->config.seq_len)
        die("%s%s: the prompt is %d tokens but %s has seq_len %d; shorten the prompt", flag, name, n, tr->path,
            tr->config.seq_len);
    memcpy(tokens, buf, (size_t)n * sizeof(int));
    xfree(buf);
    return n;
}
