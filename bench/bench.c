// bench.c - the instrument behind every performance claim (make bench).
// Benchmarks are not tests: nothing is asserted.
//
//   bench [all | sweep | drafters | lenience | tree | runc | llamacpp | busy] [--target F] [--draft F]
//         [--tokenizer F] [--medusa F] [--json F] [--csv DIR] [--threads N]
//
// all:   the machine (FMA peak from a register-only loop, read bandwidth from
//        DRAM and at each model's size); per model (random checkpoints shaped
//        like stories15M and stories110M, written to a temp dir, never the
//        repo; the shipped target and draft): single-row tok/s on 1 and N
//        threads, its GB/s against the bandwidth at that size (and, timed side
//        by side with that plain loop, one forward's), matmul GFLOP/s
//        and fraction of peak for 1..K_MAX+1 rows, verify cost r(n), the
//        attention share of a 5-row verify at position 200; end to end,
//        target-only vs spec on the shipped pair on 1 and N threads, and on a
//        large target: the shipped target embedded, zero-padded, in dim 768 x
//        12 layers (325 MB: the same logits, a DRAM-bound cost).
// sweep: the shipped pair only: K = 1..8 and auto-K at t = 0 and t = 1, then
//        auto-K against the best of those K head to head (alternating runs),
//        and a over temperatures 0..1.5 at K = 4; writes sweep_k.csv,
//        sweep_temp.csv. (`all` runs the sweep at 1 and N threads.)
// drafters: on 4 held-out prompts (HELD_OUT below; the fixed four without
//        it), the draft model, -d lookup, Medusa heads (-d medusa, every head;
//        --medusa F) and the EAGLE-style drafter (-d eagle, K = 4; --eagle
//        F; each skipped if its file is absent), on the shipped target and on
//        it embedded in dim 768 x 12 layers (325 MB, DRAM-bound; heads padded
//        alike) at t = 0 and 1: speedup, a, c, tokens per round, how often a
//        position had no proposal; writes drafters.csv and drafters_dram.csv.
// lenience: the LOSSY knob at several l (t = 1): speedup and a, against the
//        distance from the target (first-token total variation, closed form
//        and measured over seeds; the target's bits per byte of the generated
//        text);
//        writes lenience.csv. `all` runs both at N threads.
// runc, llamacpp: target-only against llama2.c's run.c and runq.c (RUNC, RUNQ) and
//        llama.cpp's llama-bench on Q8_0 and Q4_0 GGUFs (LLAMACPP: its tools' directory),
//        in alternating pairs (compare_peer); `all` runs them too when those are set.
// busy:  the shipped pair on 1 and N threads beside 5 processes that spin, then alone (bench_busy).
// N (--threads) defaults to the CPUs the process may use. Writes bench.json and, into
// --csv DIR (default build/bench; --publish: docs), the CSVs the plots read: each
// checked before anything is measured, and replaced whole (model.h's plan_output).
#define TESTING
#include "../specdec.c"
#include "../test/harness.h"
#include "../test/random_model.h"
#include "../test/check.h"

#define N_PROMPTS 4
static const char *PROMPTS[N_PROMPTS] = {"Once upon a time", "The little dog", "One day, Lily",
                                         "Tom and his mom went"};
#define HELD_OUT "../shared/data/corpus/tinystories_valid_head.txt" // its last 150000 bytes: never trained on
#define HELD_OUT_TAIL 150000

// The drafters' prompts, when HELD_OUT is there: the first 8 words of 4
// stories (paragraphs that start "Once upon a time": a cut-off sentence of
// dialogue can end the text at once) spread over its held-out tail (what
// ./train bpb scores; no training run reads it) into store and PROMPTS;
// returns 0 (PROMPTS as they were) without it.
static int held_out_prompts(char store[N_PROMPTS][96]) {
    FILE *f = fopen(HELD_OUT, "rb");
    static char text[HELD_OUT_TAIL + 1];
    if (!f || fseek(f, -HELD_OUT_TAIL, SEEK_END) != 0) {
        if (f) fclose(f);
        return 0;
    }
    size_t n = fread(text, 1, HELD_OUT_TAIL, f);
    fclose(f);
    text[n] = '\0';
    for (int i = 0; i < N_PROMPTS; i++) {
        const char *at = n > 1000 ? strstr(text + n / N_PROMPTS * (size_t)i + 1000, "\n\nOnce upon a time") : NULL;
        if (!at) return 0; // no story starts there
        at += 2;
        size_t len = 0;
        for (int words = 0; at[len] && at[len] != '\n' && len < 90; len++)
            if (at[len] == ' ' && ++words == 8) break;
        snprintf(store[i], 96, "%.*s", (int)len, at);
    }
    for (int i = 0; i < N_PROMPTS; i++) PROMPTS[i] = store[i];
    return 1;
}

#define MAX_REPS 16
#define H2H_PAIRS 64 // pairs of a head to head (auto-K against the best fixed K)
#define MAX_N (K_MAX + 1)

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// ---- the machine: FMA peak and read bandwidth --------------------------------

// GFLOP/s of 12 independent FMA chains in registers: the core's FMA peak.
// The chains start apart so the compiler cannot merge them, and their sum is
// returned so it cannot drop them.
#define FMA_PEAK(NAME, VEC, SET1, FMADD, ADD, LANES)                                      \
    static double NAME(void) {                                                            \
        VEC b = SET1(0.999999f), c = SET1(1e-7f);                                         \
        VEC a0 = SET1(1.0f), a1 = SET1(1.001f), a2 = SET1(1.002f), a3 = SET1(1.003f);     \
        VEC a4 = SET1(1.004f), a5 = SET1(1.005f), a6 = SET1(1.006f), a7 = SET1(1.007f);   \
        VEC a8 = SET1(1.008f), a9 = SET1(1.009f), a10 = SET1(1.010f), a11 = SET1(1.011f); \
        double best = 0;                                                                  \
        long iters = 20000000;                                                            \
        for (int rep = 0; rep < 5; rep++) {                                               \
            double t0 = now_seconds();                                                    \
            for (long i = 0; i < iters; i++) {                                            \
                a0 = FMADD(a0, b, c); a1 = FMADD(a1, b, c); a2 = FMADD(a2, b, c);          \
                a3 = FMADD(a3, b, c); a4 = FMADD(a4, b, c); a5 = FMADD(a5, b, c);          \
                a6 = FMADD(a6, b, c); a7 = FMADD(a7, b, c); a8 = FMADD(a8, b, c);          \
                a9 = FMADD(a9, b, c); a10 = FMADD(a10, b, c); a11 = FMADD(a11, b, c);      \
            }                                                                             \
            double g = (double)iters * 12 * 2 * LANES / (now_seconds() - t0) / 1e9;       \
            if (g > best) best = g;                                                       \
        }                                                                                 \
        VEC s = ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7)));        \
        s = ADD(s, ADD(ADD(a8, a9), ADD(a10, a11)));                                      \
        float lanes[LANES];                                                               \
        memcpy(lanes, &s, sizeof(lanes));                                                 \
        return lanes[0] > 0 ? best : 0;                                                   \
    }
#if HAVE_AVX2
FMA_PEAK(fma_peak_avx2, __m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, 8)
#endif
#if HAVE_AVX512
FMA_PEAK(fma_peak_avx512, __m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, 16)
#endif

// seconds for one thread to read buf (n floats, n % 32 == 0) once; *sink
// keeps the loop from being optimised away
static double read_pass(const float *buf, size_t n, float *sink) {
    double t0 = now_seconds();
#if HAVE_AVX2
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i < n; i += 32) {
        s0 = _mm256_add_ps(s0, _mm256_loadu_ps(buf + i));
        s1 = _mm256_add_ps(s1, _mm256_loadu_ps(buf + i + 8));
        s2 = _mm256_add_ps(s2, _mm256_loadu_ps(buf + i + 16));
        s3 = _mm256_add_ps(s3, _mm256_loadu_ps(buf + i + 24));
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    *sink += lanes[0];
#else
    for (size_t i = 0; i < n; i++) *sink += buf[i];
#endif
    return now_seconds() - t0;
}

static float *ones_buffer(size_t bytes, size_t *n) {
    *n = bytes / sizeof(float) / 32 * 32;
    float *buf = xmalloc(*n * sizeof(float), "bandwidth buffer");
    for (size_t i = 0; i < *n; i++) buf[i] = 1.0f;
    return buf;
}

// One thread reading `bytes` (a buffer that size, read whole, again and again:
// from DRAM when it is large, from the caches when it fits), best of the passes.
static double bandwidth_gbs(size_t bytes) {
    size_t n;
    float *buf = ones_buffer(bytes, &n), sink = 0;
    int passes = (int)(4e9 / (double)bytes) + 3;
    double best = 1e30;
    for (int rep = 0; rep < passes; rep++) {
        double t = read_pass(buf, n, &sink);
        if (t < best) best = t;
    }
    xfree(buf);
    return sink > 0 ? (double)n * sizeof(float) / best / 1e9 : 0;
}

// The plain loop on the forward's threads: thread tid reads its share of the buffer
typedef struct { const float *buf; size_t n; float sink[MAX_THREADS]; } ReadJob;
static void read_job(void *arg, int tid, int nth) {
    ReadJob *j = arg;
    size_t per = j->n / 32 / (size_t)nth * 32, lo = per * (size_t)tid;
    read_pass(j->buf + lo, tid == nth - 1 ? j->n - lo : per, &j->sink[tid]);
}

static double read_pass_on(Transformer *tr, const float *buf, size_t n, float *sink) {
    ReadJob j = {.buf = buf, .n = n};
    double t0 = now_seconds();
    pool_run(tr->pool, tr->n_threads, read_job, &j);
    double t = now_seconds() - t0;
    for (int i = 0; i < tr->n_threads; i++) *sink += j.sink[i];
    return t;
}

// A single-row forward's read rate over the plain loop's at the model's size,
// on the forward's threads (each reads its share), the two timed side by side,
// so a slow stretch of a shared machine hits both: each repetition reads the
// buffer (the model's size, 2 GB at most) twice and runs two forwards at position 48, and
// times the second of each, the best of `reps`. Both are then timed warm, as
// decoding runs one forward after another and bandwidth_gbs rereads its
// buffer: a 20 MB model and a 20 MB buffer do not fit one 32 MB L3 together,
// so a pass right after the other's starts with part of its working set evicted.
static double interleaved_fraction(Transformer *tr, double bytes, int reps, double *read_gbs_out) {
    size_t n; // at most 2 GB: from DRAM at that size too, and a 7B model's bytes again would not fit
    float *buf = ones_buffer(bytes < 2e9 ? (size_t)bytes : (size_t)2e9, &n), sink = 0;
    int tok = 100;
    double best_read = 1e30, best_step = 1e30;
    for (int rep = 0; rep < reps; rep++) {
        read_pass_on(tr, buf, n, &sink); // warm-up, untimed
        double t = read_pass_on(tr, buf, n, &sink);
        if (t < best_read) best_read = t;
        forward(tr, &tok, 1, 48);
        double t0 = now_seconds();
        forward(tr, &tok, 1, 48);
        t = now_seconds() - t0;
        if (t < best_step) best_step = t;
    }
    xfree(buf);
    double read_gbs = (double)n * sizeof(float) / best_read / 1e9;
    if (read_gbs_out) *read_gbs_out = read_gbs;
    return sink > 0 ? bytes / best_step / 1e9 / read_gbs : 0;
}

// ---- a model: single row, matmul rate, verify cost, attention share -----------------

typedef struct {
    char name[64];
    double params, bytes, bw_at_size;
    double tok_s[2], gbs[2], roofline[2]; // [0]: 1 thread, [1]: N threads
    double interleaved[2];                // roofline measured side by side (interleaved_fraction)
    double matmul_gflops[MAX_N + 1], matmul_peak_fraction[MAX_N + 1];
    double r[2][10];                      // r(n), n = 1..9, on 1 and N threads
    double attention_share;               // of a 5-row verify at position 200 (1 thread), or -1
    int peak_passed;                      // a matmul rate above the peak measured (three times)
    double naive_tok_s;                   // the same model's matmuls with a naive loop
} ModelResult;

// weights a single-row forward streams from memory: every matrix once and the
// classifier (the embedding row and the RoPE rows are negligible); int8: a byte
// a weight and a 4-byte scale a group
static double bytes_per_token(const Config *c, int weights) {
    double dim = c->dim, hid = c->hidden_dim, hs = dim / c->n_heads, kv = c->n_kv_heads * hs;
    double per_layer = 2 * dim * dim + 2 * kv * dim + 3 * hid * dim + 2 * dim;
    double bytes = weights == WEIGHTS_INT8 ? 1.0 + 4.0 / q80_group_size(c) : 4.0;
    return bytes * (c->n_layers * per_layer + dim + (double)c->vocab_size * dim);
}

// r[n] for n = 1..9: the median seconds of `reps` forwards of n rows at pos,
// the row counts interleaved (each repetition times 1..9 rows in turn), so a
// change in the shared machine's speed (its two-thread bandwidth moves between
// about one thread's and 1.7 times it) falls on every row count alike
static void time_rows(double r[10], Transformer *tr, int pos, int reps) {
    int tokens[MAX_ROWS];
    double t[10][32];
    for (int i = 0; i < MAX_ROWS; i++) tokens[i] = 100 + i;
    for (int i = 0; i < reps; i++)
        for (int n = 1; n <= 9; n++) {
            double t0 = now_seconds();
            forward(tr, tokens, n, pos);
            t[n][i] = now_seconds() - t0;
        }
    for (int n = 1; n <= 9; n++) r[n] = median(t[n], reps);
}

// GFLOP/s of every matmul of one forward (all layers and the classifier, one
// thread) over T rows, the fastest of `reps` passes; weights as the forward
// streams them (from L2/L3 for the shipped models)
static double matmul_gflops(Transformer *tr, int T, int reps) {
    const Config *c = &tr->config;
    RunState *s = &tr->state;
    double flops = 0, best = 1e30;
    for (int rep = 0; rep < reps; rep++) {
        double t0 = now_seconds();
        for (int l = 0; l < c->n_layers; l++) {
            const Layer *ly = &tr->layers[l];
            matmul_panels(s->qkv, s->xn, T, &ly->qkv, 0, ly->qkv.n_panels);
            matmul_panels(s->xb2, s->xb, T, &ly->wo, 0, ly->wo.n_panels);
            matmul_panels(s->h13, s->xn, T, &ly->w13, 0, ly->w13.n_panels);
            matmul_panels(s->xb2, s->hb, T, &ly->w2, 0, ly->w2.n_panels);
        }
        matmul_panels(s->logits, s->xn, T, &tr->wcls, 0, tr->wcls.n_panels);
        double t = now_seconds() - t0;
        if (t < best) best = t;
    }
    double dim = c->dim, hid = c->hidden_dim, kv = c->n_kv_heads * dim / c->n_heads;
    flops = 2.0 * T * (c->n_layers * (2 * dim * dim + 2 * kv * dim + 3 * hid * dim) + (double)c->vocab_size * dim);
    return flops / best / 1e9;
}

// the share of one 5-row forward at position 200 spent in attention (RoPE,
// caches, scores, softmax, values), one thread, fastest of 15
static double attention_share(Transformer *tr) {
    const Config *c = &tr->config;
    int T = 5, pos = 200;
    if (c->seq_len < pos + T) return -1;
    static int tokens[256]; // zeros: the prefix the 5 rows attend to
    forward_chunked(tr, tokens, pos + T, 0);
    double attn = 1e30, whole = 1e30;
    for (int rep = 0; rep < 15; rep++) {
        double t0 = now_seconds();
        ForwardJob job = {.tr = tr, .T = T, .pos = pos, .attention = attention_head};
        for (int l = 0; l < c->n_layers; l++)
            for (int g = 0; g < c->n_kv_heads; g++) attention_head(&job, l, g);
        double t1 = now_seconds();
        forward(tr, tokens, T, pos);
        double t2 = now_seconds();
        if (t1 - t0 < attn) attn = t1 - t0;
        if (t2 - t1 < whole) whole = t2 - t1;
    }
    return attn / whole;
}

// W (d,n) @ x (n) -> out (d) the textbook way, as llama2.c's run.c does it: one
// float sum per output, in order. Without -ffast-math the compiler may not
// reorder a float sum, so this loop runs one add at a time.
static void matmul_naive(float *out, const float *x, const float *w, int n, int d) {
    for (int i = 0; i < d; i++) {
        float v = 0.0f;
        for (int j = 0; j < n; j++) v += w[(size_t)i * n + j] * x[j];
        out[i] = v;
    }
}

// seconds for one token's matmuls (every layer's 7 and the classifier) with
// the naive loop on the file's row-major weights: a lower bound on a naive forward
static double naive_token_seconds(const Transformer *tr) {
    Config file_config;
    int shared;
    TransformerWeights weights, *w = &weights; // specdec keeps only the packed copy: the file's, read again
    unsigned char *file = read_f32_checkpoint(tr->path, &file_config, &shared, &weights);
    const Config *c = &file_config;
    size_t dim = (size_t)c->dim, hid = (size_t)c->hidden_dim, kv = (size_t)c->n_kv_heads * dim / c->n_heads;
    size_t wide = (size_t)c->vocab_size > hid ? (size_t)c->vocab_size : hid; // the widest vector
    wide = wide > dim ? wide : dim;
    float *x = xmalloc(wide * sizeof(float), "x"), *o = xmalloc(wide * sizeof(float), "o");
    for (size_t i = 0; i < wide; i++) x[i] = 0.01f * (float)(i % 7);
    double t0 = now_seconds();
    for (size_t l = 0; l < (size_t)c->n_layers; l++) {
        matmul_naive(o, x, w->wq + l * dim * dim, (int)dim, (int)dim);
        matmul_naive(o, x, w->wk + l * kv * dim, (int)dim, (int)kv);
        matmul_naive(o, x, w->wv + l * kv * dim, (int)dim, (int)kv);
        matmul_naive(o, x, w->wo + l * dim * dim, (int)dim, (int)dim);
        matmul_naive(o, x, w->w1 + l * hid * dim, (int)dim, (int)hid);
        matmul_naive(o, x, w->w3 + l * hid * dim, (int)dim, (int)hid);
        matmul_naive(o, x, w->w2 + l * dim * hid, (int)hid, (int)dim);
    }
    matmul_naive(o, x, w->wcls, (int)dim, c->vocab_size);
    double t = now_seconds() - t0;
    xfree(x); xfree(o); xfree(file);
    return t;
}

// single-row tok/s over `steps` positions from 0, the fastest of `passes`
// sweeps: measured as bandwidth_gbs measures the plain loop it is compared with
// (its best pass), since one timed sweep on a shared machine catches its slow moments
static double single_row_tok_s(Transformer *tr, int steps, int passes) {
    int tok = 100;
    forward(tr, &tok, 1, 0); // fault the mapping in
    double best = 0;
    for (int p = 0; p < passes; p++) {
        double t0 = now_seconds();
        for (int pos = 0; pos < steps; pos++) forward(tr, &tok, 1, pos);
        double tok_s = steps / (now_seconds() - t0);
        if (tok_s > best) best = tok_s;
    }
    return best;
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && (HAVE_AVX2 || HAVE_VNNI)
#define LAUNDER(v) __asm__ volatile("" : "+v"(v))
#elif defined(__GNUC__) && defined(__aarch64__)
#define LAUNDER(v) __asm__ volatile("" : "+w"(v))
#elif defined(__GNUC__)
#define LAUNDER(v) __asm__ volatile("" : "+r"(v))
#else
#define LAUNDER(v) ((void)0)
#endif
// G multiply-adds x 2 a second of 12 independent chains of the int8 tiles' own step
// (q8_step: vpdpbusd with VNNI, vpmaddubsw + vpmaddwd with AVX2, sdot, plain C), 64
// products a step, on one core: the int8 peak the int8 rows are judged by. 12, as a
// step's latency (5 cycles for vpdpbusd) times its throughput (2 a cycle) is 10:
// 8 chains measured 80% of this peak.
static double int8_peak(void) {
    int8_t wb[3][64], xb[4][4];
    for (int k = 0; k < 64; k++) wb[0][k] = (int8_t)(k - 40), wb[1][k] = (int8_t)(7 - k), wb[2][k] = (int8_t)(k / 2 - 9);
    for (int k = 0; k < 16; k++) xb[k / 4][k % 4] = (int8_t)(3 - k);
    Q8W w0 = q8_w(wb[0]), w1 = q8_w(wb[1]), w2 = q8_w(wb[2]);
    Q8In x0 = q8_in(xb[0]), x1 = q8_in(xb[1]), x2 = q8_in(xb[2]), x3 = q8_in(xb[3]);
    Q8Acc a[12] = {0};
    double best = 0;
    long iters = 2000000;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now_seconds();
        for (long i = 0; i < iters; i++) { // 12 different products: none computed once for two chains
            LAUNDER(x0); // inputs the compiler cannot see through: no product is hoisted
            LAUNDER(x1);
            LAUNDER(x2);
            LAUNDER(x3);
            a[0] = q8_step(a[0], x0, w0), a[1] = q8_step(a[1], x1, w0), a[2] = q8_step(a[2], x2, w0);
            a[3] = q8_step(a[3], x3, w0), a[4] = q8_step(a[4], x0, w1), a[5] = q8_step(a[5], x1, w1);
            a[6] = q8_step(a[6], x2, w1), a[7] = q8_step(a[7], x3, w1), a[8] = q8_step(a[8], x0, w2);
            a[9] = q8_step(a[9], x1, w2), a[10] = q8_step(a[10], x2, w2), a[11] = q8_step(a[11], x3, w2);
        }
        double g = (double)iters * 12 * 64 * 2 / (now_seconds() - t0) / 1e9;
        if (g > best) best = g;
    }
    int32_t v[16], sum = 0; // the sums are read, so the chains cannot be dropped
    for (int i = 0; i < 12; i++) memcpy(v, &a[i], sizeof(v)), sum += v[0];
    return sum == INT32_MIN ? 0 : best;
}

// The int8 matmul itself against the int8 peak: W (1152, 768), groups of 64, packed as a
// model's (1.2 MB: in L2, so no row waits on memory), rows 1..MAX_N through matmul_panels
// (their quantisation included), one thread; each rate is the best of interleaved rounds,
// a round timing the peak too, so both are taken in the same moments of a shared machine.
static double int8_cached_rates(double *rate) {
    enum { D = 1152, N = 768, GS = 64 };
    Matrix m;
    void *packed = xmalloc_aligned(matrix_bytes(D, N, GS), 64, "packed");
    place_matrix(&m, packed, D, N, GS, 0);
    int8_t *q = xmalloc((size_t)D * N, "q");
    float *sc = xmalloc((size_t)D * (N / GS) * sizeof(float), "scales");
    float *x = xmalloc((size_t)MAX_N * N * sizeof(float), "x"), *o = xmalloc((size_t)MAX_N * D * sizeof(float), "o");
    for (size_t i = 0; i < (size_t)D * N; i++) q[i] = (int8_t)((i * 2654435761u >> 13) % 255 - 127);
    for (size_t i = 0; i < (size_t)D * (N / GS); i++) sc[i] = 0.01f;
    for (size_t i = 0; i < (size_t)MAX_N * N; i++) x[i] = sinf(0.37f * (float)i);
    for (int j = 0; j < D; j += PANEL) pack_block(&m, j, PANEL, q + (size_t)j * N, sc + (size_t)j * (N / GS));
    double peak = 0;
    for (int T = 1; T <= MAX_N; T++) rate[T] = 0;
    for (int round = 0; round < 7; round++) {
        double p = int8_peak();
        if (p > peak) peak = p;
        for (int T = 1; T <= MAX_N; T++) {
            int reps = 1 + 4000 / T;
            double t0 = now_seconds();
            for (int i = 0; i < reps; i++) matmul_panels(o, x, T, &m, 0, m.n_panels);
            double g = 2.0 * T * D * N * reps / (now_seconds() - t0) / 1e9;
            if (g > rate[T]) rate[T] = g;
        }
    }
    xfree(q); xfree(sc); xfree(x); xfree(o); xfree(packed);
    return peak;
}

// The widest f32 FMA peak the build has (1 with neither)
static double fma_peak(void) {
#if HAVE_AVX512
    return fma_peak_avx512();
#elif HAVE_AVX2
    return fma_peak_avx2();
#else
    return 1;
#endif
}
static double peak_int8; // main's measurement (0: not measured)

// peak512, peak_avx2: the measured FMA peaks (0 where the build lacks the path);
// fractions are of the widest, and in an AVX-512 build also of AVX2's
static ModelResult bench_model(const char *name, const char *path, int weights, ThreadPool *pool,
                               int threads, double peak512, double peak_avx2) {
    double peak = weights == WEIGHTS_INT8 && peak_int8 > 0 ? peak_int8 : peak512 > 0 ? peak512 : peak_avx2 > 0 ? peak_avx2 : 1;
    ModelResult m = {.attention_share = -1};
    snprintf(m.name, sizeof(m.name), "%s", name);
    Transformer tr;
    build_transformer_as(&tr, path, MAX_ROWS, NULL, 1, weights);
    m.bytes = bytes_per_token(&tr.config, weights);
    m.params = bytes_per_token(&tr.config, WEIGHTS_F32) / 4;
    int big = m.bytes > 1e8, steps = big ? 24 : 96, reps = big ? 5 : 15;
    m.bw_at_size = bandwidth_gbs((size_t)m.bytes);
    for (int ti = 0; ti < 2; ti++) {
        if (ti == 1) { free_transformer(&tr); build_transformer_as(&tr, path, MAX_ROWS, pool, threads, weights); }
        m.tok_s[ti] = single_row_tok_s(&tr, steps, big ? 3 : 10);
        m.gbs[ti] = m.tok_s[ti] * m.bytes / 1e9;
        m.roofline[ti] = m.gbs[ti] / (ti ? threads * m.bw_at_size : m.bw_at_size);
        m.interleaved[ti] = interleaved_fraction(&tr, m.bytes, big ? 20 : 200, NULL);
        time_rows(m.r[ti], &tr, 16, reps);
        for (int n = 9; n >= 1; n--) m.r[ti][n] /= m.r[ti][1];
        if (ti == 0) {
            double most = 0;
            for (int T = 1; T <= MAX_N; T++) {
                m.matmul_gflops[T] = matmul_gflops(&tr, T, big ? 2 : 5);
                if (m.matmul_gflops[T] > most) most = m.matmul_gflops[T];
            }
            for (int again = 0; again < 2 && most > peak; again++) { // a peak taken in a busy moment
                double p = weights == WEIGHTS_INT8 ? int8_peak() : fma_peak();
                if (p > peak) peak = p;
            }
            m.peak_passed = most > peak;
            for (int T = 1; T <= MAX_N; T++) m.matmul_peak_fraction[T] = m.matmul_gflops[T] / peak;
            m.attention_share = attention_share(&tr);
        }
    }
    printf("%-20s %6.2fM params %6.1f MB/token; bandwidth at that size %.1f GB/s\n", name,
           m.params / 1e6, m.bytes / 1e6, m.bw_at_size);
    for (int ti = 0; ti < 2; ti++) {
        printf("%-20s %d thread%s: %8.1f tok/s %6.1f GB/s = %3.0f%% of %s (side by side: %3.0f%%); r(2..9):",
               "", ti ? threads : 1, ti && threads > 1 ? "s" : " ", m.tok_s[ti], m.gbs[ti],
               100 * m.roofline[ti], ti ? "N x that" : "that", 100 * m.interleaved[ti]);
        for (int n = 2; n <= 9; n++) printf(" %.2f", m.r[ti][n]);
        printf("\n");
    }
    printf("%-20s %s, 1 thread, rows 1..%d:", "", weights == WEIGHTS_INT8 ? "int8 matmul G multiply-adds x 2 /s "
           "(% of the int8 peak)" : "matmul GFLOP/s (% of the f32 FMA peak)", MAX_N);
    for (int T = 1; T <= MAX_N; T++) printf(" %.0f(%.0f)", m.matmul_gflops[T], 100 * m.matmul_peak_fraction[T]);
    printf("\n");
    if (m.peak_passed)
        printf("%-20s ! rates above the peak, measured again twice: the machine was busy; compare within the row\n", "");
    if (peak512 > 0 && peak_avx2 > 0 && weights != WEIGHTS_INT8) { // an AVX-512 build: the same rates against AVX2's peak
        printf("%-20s the same as %% of the AVX2 peak:", "");
        for (int T = 1; T <= MAX_N; T++) printf(" %.0f", 100 * m.matmul_gflops[T] / peak_avx2);
        printf("\n");
    }
    if (m.attention_share >= 0)
        printf("%-20s attention + softmax: %.1f%% of a 5-row verify at position 200\n", "",
               100 * m.attention_share);
    if (weights == WEIGHTS_F32) {
        double naive = naive_token_seconds(&tr);
        m.naive_tok_s = 1 / naive;
        printf("%-20s naive one-sum-per-row matmul loop (llama2.c run.c style, -O3): %.1f tok/s "
               "(matmuls alone); specdec on 1 thread %.2fx faster\n", "", 1 / naive, m.tok_s[0] * naive);
    }
    fflush(stdout);
    free_transformer(&tr);
    return m;
}

// ---- end to end: target-only vs spec -------------------------------------------

typedef struct {
    char pair[64];
    float temperature;
    int k, is_auto, threads;
    double target_tok_s, spec_tok_s, speedup, alpha, acceptance_rate, c, r, predicted;
    double tokens_per_round, pos[K_MAX + 1], hist[K_MAX + 2];
    double no_match;  // lookup: share of tokens drawn from the target alone (no n-gram matched)
    float lenience;   // 1: exact; < 1: LOSSY
    // auto rows of the K sweep: auto's spec tok/s over the best fixed K's in the
    // sweep; the Ks it then met head to head, auto / K against each, and the
    // one it fared worst against (the best fixed K)
    double auto_over_best;
    int n_h2h, h2h_k[3], h2h_worst;
    double h2h_ratio[3];
    char tree[24]; // --tree's shape, or ""
    // what the row's own numbers allow (check_row): the speedup bound, the
    // flags it raised (ROW_*), r as measured where it was clamped to 1, and
    // how many of the alternating pairs ran in one bandwidth state
    double bound, r_measured, steps_per_round;
    int flags, pairs, clean_pairs;
} E2E;

typedef struct {
    Transformer *target, *draft;
    Tokenizer *tok;
    int n_new;   // tokens per generation
    int reps;    // generations per configuration (median of these), at most MAX_REPS
    int threads; // what the pair was built with
    const char *tree; // --tree's argument for the spec runs, or NULL: the chain
    const char *medusa; // Medusa heads for the spec runs (-d medusa:FILE; K = every head), or NULL
    const char *eagle;  // the EAGLE drafter for the spec runs (-d eagle:FILE), or NULL
} Pair;

// spec decoding as specdec runs it: the pair's draft (or lookup, draft NULL)
// with K (0: auto), statistics accumulating over the runs
typedef struct {
    Speculator sp;
    SpecStats st;
    ModelDrafter md;
    LookupDrafter lk;
    MedusaDrafter mh;
    EagleDrafter ed;
} Spec;

static void build_spec_as(Spec *sc, Transformer *target, const Pair *pr, Sampler *s, int k, const char *tree) {
    Transformer *draft = pr ? pr->draft : NULL;
    const char *medusa = pr ? pr->medusa : NULL, *eagle = pr ? pr->eagle : NULL;
    Drafter *d = medusa ? medusa_drafter(&sc->mh, medusa, target, s) : eagle ? eagle_drafter(&sc->ed, eagle, target, s)
               : draft ? model_drafter(&sc->md, draft, s) : lookup_drafter(&sc->lk, 1, 3, target->config.vocab_size);
    build_speculator(&sc->sp, target, d, s, NULL);
    Options o = {.tree = tree, .k = k ? k : medusa ? K_MAX : eagle ? 4 : 0, .n_new = 1, .lenience = 1.0f}; // as -k
    if (tree) parse_tree(&o, 1); // as --tree: the shape
    plan_rounds(&sc->sp, &sc->st, &o, NULL);
}

static void build_spec(Spec *sc, Transformer *target, Transformer *draft, Sampler *s, int k, const char *tree) {
    Pair pr = {.draft = draft};
    build_spec_as(sc, target, &pr, s, k, tree);
}

static void free_spec(Spec *sc) {
    free_drafter(sc->st.timed.inner);
    if (sc->sp.trees) free_trees(&sc->sp);
    free_speculator(&sc->sp);
}

// one generation of n_new tokens from prompt i; returns seconds. With sc NULL:
// target alone; else spec decoding accumulating into sc's stats.
static double run_once(Pair *pr, Spec *sc, Sampler *s, int prompt, uint64_t seed, int *made) {
    int *tokens = xmalloc((size_t)pr->target->config.seq_len * sizeof(int), "tokens");
    int *gen = xmalloc((size_t)pr->n_new * sizeof(int), "generated");
    int n = encode(pr->tok, tokens, PROMPTS[prompt % N_PROMPTS], 1, 0);
    Output o = {.tok = pr->tok, .quiet = 1, .generated = gen, .max_new = pr->n_new};
    start_output(&o, tokens, n);
    Rng rng;
    rng_seed(&rng, seed);
    double t0 = now_seconds();
    if (sc) {
        sc->sp.rng = &rng;
        generate_spec(&sc->sp, &sc->st, tokens, n, &o);
    } else {
        generate_plain(pr->target, s, &rng, tokens, n, &o);
    }
    double t = now_seconds() - t0;
    *made = o.n_generated;
    xfree(tokens); xfree(gen);
    return t;
}

// ---- what a row's own numbers allow ------------------------------------------------
//
// A round commits tokens_per_round tokens for one verify pass (r target steps)
// and its draft steps (steps_per_round, c target steps each); the target alone
// commits one token a step. Whatever else a round does (sampling, the
// acceptance test) only adds time, so
//     speedup <= tokens_per_round / (max(r, 1) + steps_per_round * c),
// and r itself cannot be below 1: a pass over K + 1 rows reads every weight a
// one-row pass reads. A row past either by more than its medians' noise was
// timed across a change in the machine's speed, not measured (README's 3.41x
// on the 325 MB target at t = 1 against the 3.21x its 3.57 tokens per round,
// r 1.101 and c 0.002 allow; lookup's 1.59x with 1.05 tokens per round): the
// bench measures such a row again, and flags it (stdout, CSV) if it stays so.
#define BOUND_NOISE 0.05 // a speedup may pass its bound by this fraction
#define R_NOISE 0.05     // r may fall below 1 by this much
#define REMEASURE 2      // further tries of a row that fails the check
enum { ROW_OVER_BOUND = 1, ROW_R_BELOW_1 = 2, ROW_TWO_STATES = 4 };

static double speedup_bound(double tokens_per_round, double r, double c, double steps_per_round) {
    double cost = fmax(r, 1.0) + steps_per_round * c;
    return tokens_per_round / cost;
}

// The ROW_* flags a row's speedup, tokens per round, r, c and draft steps per
// round raise; *bound gets the bound. A row without rounds (r 0) raises none.
static int check_row(double speedup, double tokens_per_round, double r, double c, double steps_per_round,
                     double *bound) {
    int flags = 0;
    *bound = r > 0 ? speedup_bound(tokens_per_round, r, c, steps_per_round) : 0;
    if (r > 0 && speedup > *bound * (1 + BOUND_NOISE)) flags |= ROW_OVER_BOUND;
    if (r > 0 && r < 1 - R_NOISE) flags |= ROW_R_BELOW_1;
    return flags;
}

// "ok", or the flags joined by '+', for stdout and the CSVs' check column
static const char *flags_text(int flags, char *buf, size_t cap) {
    snprintf(buf, cap, "%s%s%s%s", flags ? "" : "ok", flags & ROW_OVER_BOUND ? "over_bound" : "",
             flags & ROW_R_BELOW_1 ? (flags & ROW_OVER_BOUND ? "+r_below_1" : "r_below_1") : "",
             flags & ROW_TWO_STATES ? (flags & (ROW_OVER_BOUND | ROW_R_BELOW_1) ? "+two_states" : "two_states") : "");
    return buf;
}

// The VM hands a process one of two memory-bandwidth states, a DRAM-bound
// target decoding about 1.7 times faster in one than in the other
// (PERFORMANCE.md: 88-175 tok/s on the 325 MB target within one run). The
// target-alone rates rate[0..n) into state[] (0 slow, 1 fast): where the
// fastest is more than STATE_GAP times the slowest, split at the widest
// ratio between neighbours in sorted order. Returns how many states (1, 2).
#define STATE_GAP 1.3
static int bandwidth_states(const double *rate, int n, int *state) {
    double sorted[MAX_REPS + 1], cut = INFINITY, widest = 1;
    for (int i = 0; i < n; i++) sorted[i] = rate[i];
    qsort(sorted, (size_t)n, sizeof(double), cmp_double);
    if (n > 1 && sorted[0] > 0 && sorted[n - 1] / sorted[0] > STATE_GAP)
        for (int i = 1; i < n; i++)
            if (sorted[i] / sorted[i - 1] > widest) widest = sorted[i] / sorted[i - 1], cut = sqrt(sorted[i] * sorted[i - 1]);
    for (int i = 0; i < n; i++) state[i] = rate[i] > cut;
    return isfinite(cut) ? 2 : 1;
}

// Spec run i ran between target-alone runs i and i + 1 (n spec runs, n + 1
// target runs): it is paired with them only where both ran in one state
// (clean[i]); returns how many pairs are.
static int clean_pairs(const double *target_rate, int n, int *clean) {
    int state[MAX_REPS + 1], m = 0;
    bandwidth_states(target_rate, n + 1, state);
    for (int i = 0; i < n; i++) m += clean[i] = state[i] == state[i + 1];
    return m;
}

// target-only and spec runs alternate (rep by rep, a target-only run last too,
// so each spec run lies between two) and a drift in the machine's speed hits
// both; the speedup is the median over the pairs of spec tok/s over its two
// target runs' mean, only pairs whose target runs ran in one bandwidth state
// counted (all if too few did: the row is flagged two_states); a, c, r from
// the spec runs' stats, c and r from those pairs' runs, in target steps those
// pairs' target runs measured.
static E2E measure_spec(Pair *pr, const char *name, float temp, int k, float lenience) {
    E2E e = {.temperature = temp, .k = k, .is_auto = k == 0 && !pr->medusa && !pr->eagle && !pr->tree, .threads = pr->threads,
             .lenience = lenience};
    snprintf(e.pair, sizeof(e.pair), "%s", name);
    snprintf(e.tree, sizeof(e.tree), "%s", pr->tree ? pr->tree : "");
    Sampler s;
    build_sampler(&s, pr->target->config.vocab_size, temp, 1.0f, 0);
    Spec sc;
    build_spec_as(&sc, pr->target, pr, &s, k, pr->tree);
    sc.sp.lenience = lenience;
    double tt[MAX_REPS + 1] = {0}, ts[MAX_REPS] = {0}, spt[MAX_REPS + 1] = {0}; // tok/s; target s/token
    double verify_s[MAX_REPS], draft_s[MAX_REPS];
    long rounds[MAX_REPS], forwards[MAX_REPS], made_t = 0;
    int n = pr->reps;
    for (int rep = 0; rep <= n; rep++) {
        int m;
        double t = run_once(pr, NULL, &s, rep, 1000 + rep, &m);
        tt[rep] = m / t; spt[rep] = t / m; made_t += rep < n ? m : 0;
        if (rep == n) break;
        SpecStats before = sc.st;
        t = run_once(pr, &sc, &s, rep, 1000 + rep, &m);
        ts[rep] = m / t;
        verify_s[rep] = sc.st.verify_seconds - before.verify_seconds;
        draft_s[rep] = sc.st.draft_seconds - before.draft_seconds;
        rounds[rep] = sc.st.rounds - before.rounds;
        forwards[rep] = sc.st.drafted - before.drafted;
    }
    int clean[MAX_REPS];
    e.pairs = n;
    e.clean_pairs = clean_pairs(tt, n, clean);
    if (e.clean_pairs < (n + 1) / 2 || e.clean_pairs < 2) { // too few in one state: every pair, flagged
        e.flags |= ROW_TWO_STATES;
        for (int i = 0; i < n; i++) clean[i] = 1;
    }
    double ratio[MAX_REPS], target[MAX_REPS], spec[MAX_REPS], step = 0, v = 0, d = 0;
    long cr = 0, cf = 0;
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (!clean[i]) continue;
        target[m] = (tt[i] + tt[i + 1]) / 2;
        spec[m] = ts[i];
        ratio[m++] = ts[i] / ((tt[i] + tt[i + 1]) / 2);
        step += (spt[i] + spt[i + 1]) / 2;
        v += verify_s[i]; d += draft_s[i]; cr += rounds[i]; cf += forwards[i];
    }
    step /= m; // seconds per target-alone token
    e.target_tok_s = median(target, m);
    e.spec_tok_s = median(spec, m);
    e.speedup = median(ratio, m);
    // the summary's c and r from those pairs' spec runs: their draft and
    // verify seconds scaled up to every round and draft step the stats count
    SpecStats st = sc.st;
    if (cr > 0) st.verify_seconds = v * (double)st.rounds / (double)cr;
    if (cf > 0) st.draft_seconds = d * (double)st.drafted / (double)cf;
    Output o = {0};
    Report rp = {.out = &o, .sp = &sc.sp, .st = &st, .target_step = step};
    SpecSummary sm = summarize(&rp);
    e.alpha = sm.a; e.acceptance_rate = sm.acceptance_rate; e.c = sm.c; e.r = sm.r;
    e.k = sm.k; e.predicted = sm.predicted; e.tokens_per_round = sm.tokens_per_round;
    e.steps_per_round = sc.st.rounds ? (double)sc.st.drafted / (double)sc.st.rounds : 0;
    e.r_measured = e.r;
    e.flags |= check_row(e.speedup, e.tokens_per_round, e.r, e.c, e.steps_per_round, &e.bound);
    for (int i = 0; i <= sc.st.k_hi; i++) e.pos[i] = per_position(&sc.st, i);
    for (int i = 0; i <= sc.st.k_hi + 1; i++) e.hist[i] = (double)sc.st.histogram[i];
    e.no_match = (double)sc.st.plain_tokens / (double)(made_t > 0 ? made_t : 1);
    char kname[40];
    if (pr->tree) snprintf(kname, sizeof(kname), "tree %s", pr->tree);
    else if (pr->medusa && !k) snprintf(kname, sizeof(kname), "heads(%d)", e.k);
    else if (k) snprintf(kname, sizeof(kname), "%d", k);
    else snprintf(kname, sizeof(kname), "auto(%d)", e.k);
    char check[48];
    printf("%-14s %dth t=%.2f K=%-8s target %7.1f tok/s  spec %7.1f tok/s  speedup %5.2fx  "
           "a %.3f  c %.3f  r %.3f  predicted %5.2fx  tokens/round %.2f%s  bound %.2fx, %d of %d pairs: %s\n",
           name, pr->threads, temp, kname, e.target_tok_s, e.spec_tok_s, e.speedup, e.alpha, e.c, e.r, e.predicted,
           e.tokens_per_round, lenience < 1.0f ? "  LOSSY" : "", e.bound, e.clean_pairs, e.pairs,
           flags_text(e.flags, check, sizeof(check)));
    fflush(stdout);
    free_spec(&sc);
    free_sampler(&s);
    return e;
}

// measure_spec, again (at most REMEASURE more times) while the row fails
// check_row or ran across bandwidth states; the first clean measurement, else
// the one with the fewest flags (the latest of those). A row still flagged
// keeps its flags, and an r below 1 is published as 1 (r_measured keeps it).
static E2E bench_spec(Pair *pr, const char *name, float temp, int k, float lenience) {
    E2E e = measure_spec(pr, name, temp, k, lenience);
    for (int again = 0; again < REMEASURE && e.flags; again++) {
        char check[48];
        printf("%-14s %dth t=%.2f measuring again (%s)\n", name, pr->threads, temp,
               flags_text(e.flags, check, sizeof(check)));
        E2E next = measure_spec(pr, name, temp, k, lenience);
        int bits = 0, next_bits = 0;
        for (int b = 1; b <= ROW_TWO_STATES; b <<= 1) bits += !!(e.flags & b), next_bits += !!(next.flags & b);
        if (next_bits <= bits) e = next;
    }
    if (e.flags & ROW_R_BELOW_1) {
        printf("%-14s %dth t=%.2f r %.3f measured, below one step: published as 1 (flagged r_below_1)\n", name,
               pr->threads, temp, e.r_measured);
        e.r = 1.0;
    }
    return e;
}

// the exact algorithm (lenience 1)
static E2E bench_pair(Pair *pr, const char *name, float temp, int k) { return bench_spec(pr, name, temp, k, 1.0f); }

// ---- output: bench.json and the CSVs the plots read ------------------------------
// Each planned before anything is measured (main: a missing --csv DIR, a file
// that is an input fail at once) and written whole (model.h's registry).

static OutputFile *outputs; // 16, allocated at the first plan (a static array misleads gcc's -Wformat-truncation)
static int n_outputs;

// atexit: an error exit (die) leaves no temp file of an output begun, not committed (trees.csv's, measuring)
static void remove_temps(void) {
    for (int i = 0; i < n_outputs; i++)
        if (outputs[i].f) unlink(outputs[i].tmp);
}

// Plan dir/name (dir NULL: name) as an output; its slot. Dies with the reason.
static int plan_bench_output(const char *dir, const char *name) {
    char path[IO_PATH_MAX], msg[2 * IO_PATH_MAX + 256] = "more than 16 outputs";
    snprintf(path, sizeof(path), "%s%s%s", dir ? dir : "", dir ? "/" : "", name);
    if (!outputs && (!(outputs = calloc(16, sizeof(OutputFile))) || atexit(remove_temps))) die("out of memory");
    if (n_outputs == 16 || plan_output(&outputs[n_outputs], path, msg, sizeof(msg)))
        die("%s %s", dir ? "--csv" : "--json", msg);
    return n_outputs++;
}

// The temp file of the planned output dir/name (planned now if it was not:
// the selftest's), header and a newline written if header is not NULL.
static FILE *open_output(const char *dir, const char *name, const char *header) {
    char path[IO_PATH_MAX], msg[IO_PATH_MAX + 256];
    snprintf(path, sizeof(path), "%s%s%s", dir ? dir : "", dir ? "/" : "", name);
    int i = 0;
    while (i < n_outputs && strcmp(outputs[i].name, path)) i++;
    if (i == n_outputs) plan_bench_output(dir, name);
    FILE *f = begin_output(&outputs[i], msg, sizeof(msg));
    if (!f) die("%s", msg);
    if (header) fprintf(f, "%s\n", header);
    return f;
}

// Rename the output written to f over its file.
static void close_output(FILE *f) {
    char msg[IO_PATH_MAX + 256];
    for (int i = 0; i < n_outputs; i++)
        if (outputs[i].f == f) {
            if (commit_output(&outputs[i], msg, sizeof(msg))) die("%s", msg);
            printf("wrote %s\n", outputs[i].name);
        }
}

static void json_list(FILE *f, const char *key, const double *v, int from, int to, const char *fmt) {
    fprintf(f, ", \"%s\": [", key);
    for (int i = from; i <= to; i++) {
        if (i > from) fprintf(f, ", ");
        fprintf(f, fmt, v[i]);
    }
    fprintf(f, "]");
}

static void write_bench_json(const char *path, double peak, double peak512, double bw, int threads,
                             const ModelResult *m, int n_models, const E2E *e, int n_e2e) {
    FILE *f = open_output(NULL, path, NULL);
    fprintf(f, "{\"fma_peak_gflops\": %.2f, \"fma512_peak_gflops\": %.2f, \"int8_peak_gmacs_x2\": %.2f, "
            "\"bandwidth_gbs\": %.3f, \"threads\": %d,\n \"models\": [", peak, peak512, peak_int8, bw, threads);
    for (int i = 0; i < n_models; i++) {
        fprintf(f, "%s\n  {\"name\": \"%s\", \"params\": %.0f, \"bytes\": %.0f, "
                "\"bandwidth_at_size_gbs\": %.3f, \"tok_s\": %.3f, \"gbs\": %.3f, "
                "\"roofline_fraction\": %.4f, \"tok_s_threads\": %.3f, \"roofline_fraction_threads\": %.4f, "
                "\"naive_matmul_tok_s\": %.3f, \"attention_share_5rows\": %.4f, "
                "\"roofline_fraction_side_by_side\": %.4f, \"roofline_fraction_side_by_side_threads\": %.4f",
                i ? "," : "", m[i].name, m[i].params, m[i].bytes, m[i].bw_at_size, m[i].tok_s[0], m[i].gbs[0],
                m[i].roofline[0], m[i].tok_s[1], m[i].roofline[1], m[i].naive_tok_s,
                m[i].attention_share, m[i].interleaved[0], m[i].interleaved[1]);
        json_list(f, "verify_cost", m[i].r[0], 1, 9, "%.4f");
        json_list(f, "verify_cost_threads", m[i].r[1], 1, 9, "%.4f");
        json_list(f, "matmul_gflops", m[i].matmul_gflops, 1, MAX_N, "%.2f");
        json_list(f, "matmul_peak_fraction", m[i].matmul_peak_fraction, 1, MAX_N, "%.4f");
        fprintf(f, "}");
    }
    fprintf(f, "],\n \"e2e\": [");
    for (int i = 0; i < n_e2e; i++) {
        char check[48];
        fprintf(f, "%s\n  {\"pair\": \"%s\", \"threads\": %d, \"temperature\": %.2f, \"k\": %d, "
                "\"auto_k\": %s, \"target_tok_s\": %.3f, \"spec_tok_s\": %.3f, \"speedup\": %.4f, "
                "\"alpha\": %.4f, \"c\": %.4f, \"r\": %.4f, \"predicted_speedup\": %.4f, "
                "\"r_measured\": %.4f, \"speedup_bound\": %.4f, \"pairs\": %d, \"pairs_one_state\": %d, "
                "\"check\": \"%s\"",
                i ? "," : "", e[i].pair, e[i].threads, e[i].temperature, e[i].k,
                e[i].is_auto ? "true" : "false", e[i].target_tok_s, e[i].spec_tok_s, e[i].speedup,
                e[i].alpha, e[i].c, e[i].r, e[i].predicted, e[i].r_measured, e[i].bound, e[i].pairs,
                e[i].clean_pairs, flags_text(e[i].flags, check, sizeof(check)));
        if (e[i].n_h2h) // auto rows of the K sweep
            fprintf(f, ", \"best_fixed_k\": %d, \"auto_over_best_sweep\": %.4f, "
                    "\"auto_over_best_head_to_head\": %.4f", e[i].h2h_k[e[i].h2h_worst],
                    e[i].auto_over_best, e[i].h2h_ratio[e[i].h2h_worst]);
        for (int j = 0; j < e[i].n_h2h; j++)
            fprintf(f, "%s{\"k\": %d, \"auto_over_k\": %.4f}%s", j ? ", " : ", \"head_to_head\": [",
                    e[i].h2h_k[j], e[i].h2h_ratio[j], j == e[i].n_h2h - 1 ? "]" : "");
        fprintf(f, "}");
    }
    fprintf(f, "]}\n");
    close_output(f);
}

// sweep_k.csv: one row per (temperature, K); auto rows marked
static void write_sweep_k(const char *dir, const E2E *e, int n) {
    FILE *f = open_output(dir, "sweep_k.csv", "temperature,k,auto,threads,alpha,acceptance_rate,"
                       "tokens_per_round,c,r,target_tok_s,spec_tok_s,speedup,predicted_speedup,"
                       "pos1,pos2,pos3,pos4,pos5,pos6,pos7,pos8,pos9,"
                       "hist0,hist1,hist2,hist3,hist4,hist5,hist6,hist7,hist8,hist9,bound,check");
    for (int i = 0; i < n; i++) {
        fprintf(f, "%.2f,%d,%d,%d,%.4f,%.4f,%.4f,%.4f,%.4f,%.2f,%.2f,%.4f,%.4f", e[i].temperature,
                e[i].k, e[i].is_auto, e[i].threads, e[i].alpha, e[i].acceptance_rate,
                e[i].tokens_per_round, e[i].c, e[i].r, e[i].target_tok_s, e[i].spec_tok_s,
                e[i].speedup, e[i].predicted);
        for (int j = 0; j < 9; j++) j <= e[i].k ? fprintf(f, ",%.4f", e[i].pos[j]) : fprintf(f, ",");
        for (int j = 0; j <= 9; j++) j <= e[i].k + 1 ? fprintf(f, ",%.0f", e[i].hist[j]) : fprintf(f, ",");
        char check[48];
        fprintf(f, ",%.4f,%s\n", e[i].bound, flags_text(e[i].flags, check, sizeof(check)));
    }
    close_output(f);
}

static void write_sweep_temp(const char *dir, const E2E *e, int n) {
    FILE *f = open_output(dir, "sweep_temp.csv", "temperature,k,alpha,tokens_per_round,speedup");
    for (int i = 0; i < n; i++)
        fprintf(f, "%.2f,%d,%.4f,%.4f,%.4f\n", e[i].temperature, e[i].k, e[i].alpha,
                e[i].tokens_per_round, e[i].speedup);
    close_output(f);
}

// r(n) on one thread; an n-row pass timed below one row's by more than
// R_NOISE is published as 1 and flagged (check_row's rule)
static void write_verify_cost(const char *dir, const ModelResult *m, int n) {
    FILE *f = open_output(dir, "verify_cost.csv", "model,n,r,check");
    for (int i = 0; i < n; i++)
        for (int j = 1; j <= 9; j++) {
            double r = m[i].r[0][j], bound;
            int below = check_row(0, 0, r, 0, 0, &bound) & ROW_R_BELOW_1;
            if (below) printf("verify_cost.csv: %s r(%d) %.3f measured, below one row's pass: published as 1, "
                              "flagged r_below_1\n", m[i].name, j, r);
            fprintf(f, "%s,%d,%.4f,%s\n", m[i].name, j, below ? 1.0 : r, below ? "r_below_1" : "ok");
        }
    close_output(f);
}

// ---- main --------------------------------------------------------------------------

typedef struct {
    const char *what, *target, *draft, *tokenizer, *json, *csv, *medusa, *eagle;
    int threads, publish;
} BenchOptions;

#define PUBLISHED_CSV "docs"       // the tracked CSVs the figures are drawn from: --publish
#define SCRATCH_CSV "build/bench"  // where the CSVs go otherwise

static const char *const MODES[] = {"all", "sweep", "drafters", "lenience", "tree", "runc", "llamacpp", "busy",
                                    "selftest", "shapes", "scale", "kernels"};

static void bench_usage(FILE *out) {
    fprintf(out,
        "usage: bench MODE [--publish | --csv DIR] [--json F] [--threads N] [--target F] [--draft F]\n"
        "                  [--tokenizer F] [--medusa F] [--eagle F]\n"
        "       bench --help\n"
        "Modes (about how long on the 2-core VM of docs/PERFORMANCE.md, quiet; a busy machine re-measures rows\n"
        "and takes longer), what they write:\n"
        "  all       ~15 min  the machine (FMA peak, read bandwidth); per model one-row tok/s, r(n),\n"
        "                     matmul GFLOP/s; end to end: the sweep on 1 and N threads, drafters,\n"
        "                     lenience, the 325 MB target (make bench). bench.json, verify_cost.csv,\n"
        "                     sweep_k.csv, sweep_temp.csv, drafters.csv, drafters_dram.csv, lenience.csv\n"
        "  sweep     ~1 min   the shipped pair: K = 1..8 and auto-K at t = 0, 1, auto-K head to head,\n"
        "                     a over temperature (make sweep). sweep_k.csv, sweep_temp.csv\n"
        "  drafters  ~1-2 min draft model, lookup, Medusa, EAGLE on the shipped and the 325 MB target.\n"
        "                     drafters.csv, drafters_dram.csv\n"
        "  lenience  ~1-2 min the lossy --lenience knob: speedup against distance from p. lenience.csv\n"
        "  tree      ~1 min   trees against chains, both targets (make bench-tree). trees.csv\n"
        "  runc      ~1 min   with RUNC=path/to/run (llama2.c's run.c): target-only against it; RUNQ=path/to/runq\n"
        "                     (runq.c): int8 target-only on the 325 MB target's version-2 export; prints only\n"
        "  llamacpp  ~2 min   with LLAMACPP=DIR (llama.cpp's llama-bench, llama-quantize, llama-convert-llama2c-\n"
        "                     to-ggml): int8 target-only on the 325 MB target against llama-bench on its Q8_0\n"
        "                     and Q4_0 GGUFs, 1 and N threads; prints only\n"
        "  busy      ~2 min   the shipped pair on 1 and N threads beside 5 processes that spin, then alone;\n"
        "                     prints only\n"
        "  selftest  <1 s     the bench's own checks (the speedup bound, bandwidth states, options);\n"
        "                     writes nothing (make test-plot runs it)\n"
        "  shapes    ~15 min  llama2.c's shapes (stories15M/42M/110M, TinyLlama-1.1B, Llama-2-7B; f32 and\n"
        "                     int8) as random files in build/shapes/ (~15 GB of disk, deleted after): greedy\n"
        "                     spec against target-only, time to first token against cat, peak RSS; prints only\n"
        "  kernels   ~20 s    the FMA and int8 peaks, and the int8 matmul's rates against its peak with\n"
        "                     the weights in L2 (the first lines of all); prints only\n"
        "  scale     ~10 min  the shipped target embedded in 81M, 1.0B and 6.0B-parameter shapes, int8 (~8 GB of\n"
        "                     disk, deleted after): the one-row pass against the read loop, target-only and\n"
        "                     spec, auto-K head to head, first token, peak RSS, runq.c (RUNQ=). scale.csv\n"
        "CSVs go to " SCRATCH_CSV "/ and docs/ is left alone; --publish writes them into " PUBLISHED_CSV "/\n"
        "(make bench PUBLISH=1), where make plots draws the figures from; --csv DIR into DIR.\n"
        "bench.json (--json F) is not tracked. Every end-to-end row is checked against the speedup its\n"
        "own tokens per round, r and c allow, measured again if it fails, flagged (CSV column check) if\n"
        "it still does.\n");
}

// usage on stderr after a message, exit 1: nothing is run
static void usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "bench: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    bench_usage(stderr);
    exit(1);
}

static void parse_bench(BenchOptions *o, int argc, char **argv) {
    *o = (BenchOptions){.target = "weights/target.bin", .draft = "weights/draft.bin",
                        .tokenizer = "tokenizer.bin", .json = "bench.json",
                        .medusa = "weights/medusa.bin", .eagle = "weights/eagle.bin",
                        .threads = usable_cpus()};
    for (int j = 1; j < argc; j++)
        if (!strcmp(argv[j], "--help") || !strcmp(argv[j], "-h")) {
            bench_usage(stdout);
            exit(0);
        }
    if (argc < 2) usage_error("%sname a mode; nothing was run (make bench runs `bench all`, about 5 minutes)", "");
    if (argv[1][0] == '-') usage_error("the first argument is the mode, not %s", argv[1]);
    o->what = argv[1];
    size_t m = 0;
    while (m < sizeof(MODES) / sizeof(MODES[0]) && strcmp(MODES[m], o->what)) m++;
    if (m == sizeof(MODES) / sizeof(MODES[0])) usage_error("unknown mode \"%s\"", o->what);
    for (int i = 2; i < argc; i++) {
        const char **value = !strcmp(argv[i], "--target") ? &o->target
                           : !strcmp(argv[i], "--draft") ? &o->draft
                           : !strcmp(argv[i], "--tokenizer") ? &o->tokenizer
                           : !strcmp(argv[i], "--json") ? &o->json
                           : !strcmp(argv[i], "--csv") ? &o->csv
                           : !strcmp(argv[i], "--medusa") ? &o->medusa
                           : !strcmp(argv[i], "--eagle") ? &o->eagle : NULL;
        if (!strcmp(argv[i], "--publish")) {
            o->publish = 1;
            continue;
        }
        if (!value && strcmp(argv[i], "--threads")) usage_error("unknown option %s", argv[i]);
        if (i + 1 == argc) usage_error("%s needs a value", argv[i]);
        if (value) *value = argv[++i];
        else {
            Options opt = {0};
            set_flag(&opt, &FLAGS[flag_index("--threads")], argv[++i]);
            o->threads = opt.threads;
        }
    }
    if (o->publish && o->csv) usage_error("%s--publish writes " PUBLISHED_CSV "/: give it or --csv DIR, not both", "");
    if (!o->csv) o->csv = o->publish ? PUBLISHED_CSV : SCRATCH_CSV;
}

// ---- drafters compared: the draft model and the lookup drafter -----------------

// At t = 0 and 1: the draft model (auto-K; K = 4), lookup (auto-K), given
// heads (medusa) Medusa (every head each round) and given an EAGLE drafter
// (eagle) that (K = 4, its fixed K); the draft model's K = 4 rows only if all_k
// (the figure has room for 12 configurations). Rows named prefix + drafter;
// appends to e and returns how many rows.
static int compare_drafters(Pair *pr, E2E *e, const char *medusa, const char *eagle, const char *prefix,
                            int all_k) {
    int n = 0;
    Transformer *draft = pr->draft;
    char name[4][64];
    const char *names[4] = {"draft model", "lookup", "medusa", "eagle"};
    for (int i = 0; i < 4; i++) snprintf(name[i], sizeof(name[i]), "%s%s", prefix, names[i]);
    for (int ti = 0; ti < 2; ti++) {
        pr->draft = draft;
        e[n++] = bench_pair(pr, name[0], (float)ti, 0);
        if (all_k) e[n++] = bench_pair(pr, name[0], (float)ti, 4);
        pr->draft = NULL; // -d lookup
        e[n++] = bench_pair(pr, name[1], (float)ti, 0);
        if (!medusa) continue;
        pr->draft = NULL;
        pr->medusa = medusa;
        e[n++] = bench_pair(pr, name[2], (float)ti, 0);
        pr->medusa = NULL;
    }
    for (int ti = 0; ti < 2 && eagle; ti++) {
        pr->eagle = eagle;
        e[n++] = bench_pair(pr, name[3], (float)ti, 4);
        pr->eagle = NULL;
    }
    pr->draft = draft;
    return n;
}

// the rows e (n) into dir/name, their drafter names without the first `skip`
// characters (the target's prefix); k: "auto" or K
static void write_drafters(const char *dir, const char *name, const E2E *e, int n, size_t skip) {
    FILE *f = open_output(dir, name, "drafter,threads,temperature,k,k_used,target_tok_s,spec_tok_s,"
                                            "speedup,a,c,tokens_per_round,no_match,r,bound,check");
    for (int i = 0; i < n; i++) {
        char k[40];
        if (e[i].is_auto) snprintf(k, sizeof(k), "auto");
        else snprintf(k, sizeof(k), "%d", e[i].k);
        char check[48];
        fprintf(f, "\"%s\",%d,%.2f,\"%s\",%d,%.2f,%.2f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%s\n", e[i].pair + skip,
                e[i].threads, e[i].temperature, k, e[i].k,
                e[i].target_tok_s, e[i].spec_tok_s, e[i].speedup, e[i].alpha, e[i].c, e[i].tokens_per_round,
                e[i].no_match, e[i].r, e[i].bound, flags_text(e[i].flags, check, sizeof(check)));
    }
    close_output(f);
}

// ---- lenience: what the lossy knob buys and what it costs ------------------------

// probs (V) of tr at temperature 1 after the prompt's tokens
static void next_probs(Transformer *tr, Sampler *s, float *probs, const int *tokens, int n) {
    probs_from_logits(s, probs, forward_chunked(tr, tokens, n, 0));
}

// probs (V) of tr at temperature 1 for the token at position n, given that
// positions 0..n-2 are already in tr's cache: one row, seq[n-1] at n-1
static void next_probs_at(Transformer *tr, Sampler *s, float *probs, const int *seq, int n) {
    probs_from_logits(s, probs, forward(tr, seq + n - 1, 1, n - 1));
}

// Total variation between p and the distribution the lenient rule emits at a
// position with target p and draft q, in closed form: x ~ q kept with
// min(1, p/(l q)), else a draw from norm(max(0, p - l q)).
static double lenient_tv(const float *p, const float *q, int V, double l) {
    double kept = 0, rmass = 0, tv = 0;
    for (int x = 0; x < V; x++) {
        kept += fmin(q[x], p[x] / l);
        rmass += fmax(0.0, p[x] - l * q[x]);
    }
    for (int x = 0; x < V; x++) {
        double res = rmass > 0 ? fmax(0.0, p[x] - l * q[x]) / rmass : 0;
        tv += fabs(fmin(q[x], p[x] / l) + (1 - kept) * res - p[x]);
    }
    return tv / 2;
}

// The same distance measured: the first token spec decoding emits (K = 4, t = 1)
// over `seeds` seeds of each prompt, against the target's p there (p: N_PROMPTS
// rows of V); the mean over the prompts. Exact sampling leaves only the noise
// floor of `seeds` draws.
static double measured_tv(Pair *pr, Sampler *s, const float *p, double l, int seeds) {
    int V = pr->target->config.vocab_size;
    double *count = xmalloc((size_t)V * sizeof(double), "counts"), tv = 0;
    int *buf = xmalloc((size_t)pr->target->config.seq_len * sizeof(int), "tokens"), gen[8];
    Spec sc;
    build_spec(&sc, pr->target, pr->draft, s, 4, NULL);
    sc.sp.lenience = (float)l;
    for (int i = 0; i < N_PROMPTS; i++) {
        int n = encode(pr->tok, buf, PROMPTS[i], 1, 0);
        memset(count, 0, (size_t)V * sizeof(double));
        for (int seed = 0; seed < seeds; seed++) {
            Output o = {.tok = pr->tok, .quiet = 1, .generated = gen, .max_new = 5};
            start_output(&o, buf, n);
            Rng rng;
            rng_seed(&rng, 50000 + (uint64_t)seed);
            sc.sp.rng = &rng;
            generate_spec(&sc.sp, &sc.st, buf, n, &o);
            count[gen[0]] += 1;
        }
        for (int x = 0; x < V; x++) tv += fabs(count[x] / seeds - p[(size_t)i * V + x]) / 2 / N_PROMPTS;
    }
    free_speculator(&sc.sp);
    xfree(count); xfree(buf);
    return tv;
}

// Bits per byte, under the target at t = 1, of the text spec decoding writes
// with lenience l (K = 4, t = 1): N_PROMPTS prompts x seeds seeds x n_new tokens,
// the same seeds for every l. Exact sampling gives the target's own entropy
// rate; a lossy l moves the text toward the draft's.
static double generated_bpb(Pair *pr, double l, int seeds, int n_new) {
    Transformer *tr = pr->target;
    int V = tr->config.vocab_size, St = tr->config.seq_len;
    int *seq = xmalloc((size_t)St * sizeof(int), "tokens"), *gen = xmalloc((size_t)St * sizeof(int), "gen");
    float *probs = xmalloc((size_t)V * sizeof(float), "probs");
    Sampler s;
    build_sampler(&s, V, 1.0f, 1.0f, 0);
    Spec sc;
    build_spec(&sc, tr, pr->draft, &s, 4, NULL);
    sc.sp.lenience = (float)l;
    double bits = 0, bytes = 0;
    for (int i = 0; i < N_PROMPTS * seeds; i++) {
        int n = encode(pr->tok, seq, PROMPTS[i % N_PROMPTS], 1, 0);
        Output o = {.tok = pr->tok, .quiet = 1, .generated = gen, .max_new = n_new};
        start_output(&o, seq, n);
        Rng rng;
        rng_seed(&rng, 70000 + (uint64_t)i);
        sc.sp.rng = &rng;
        generate_spec(&sc.sp, &sc.st, seq, n, &o); // seq[n..) now holds the generated tokens
        if (n > 1) forward_chunked(tr, seq, n - 1, 0); // the prompt but its last token, cached
        for (int j = 0; j < o.n_generated && n + j < St; j++) {
            next_probs_at(tr, &s, probs, seq, n + j); // p(. | seq[0..n+j))
            bits -= log2(fmax((double)probs[gen[j]], 1e-30));
            bytes += (double)strlen(decode_piece(pr->tok, seq[n + j - 1], gen[j]));
        }
    }
    free_speculator(&sc.sp);
    free_sampler(&s);
    xfree(seq); xfree(gen); xfree(probs);
    return bits / fmax(bytes, 1);
}

typedef struct {
    double lenience, tv, tv_measured; // first-token TV, mean over the prompts: closed form, measured
    double bpb;
    E2E e;
} LenienceRow;

// For each l: speedup, a and tokens per round (t = 1, K = 4), the total
// variation of the first emitted token's distribution from p (mean over the
// prompts: closed form, and measured over seeds), and the target's bits per
// byte of the generated text.
static int sweep_lenience(Pair *pr, LenienceRow *rows) {
    static const double L[] = {1.0, 0.9, 0.75, 0.6, 0.5, 0.35, 0.2};
    int n = (int)(sizeof(L) / sizeof(L[0])), V = pr->target->config.vocab_size;
    float *p = xmalloc((size_t)N_PROMPTS * V * sizeof(float), "p"), *q = xmalloc((size_t)N_PROMPTS * V * sizeof(float), "q");
    int *tok = xmalloc((size_t)pr->target->config.seq_len * sizeof(int), "tokens");
    Sampler s;
    build_sampler(&s, V, 1.0f, 1.0f, 0);
    for (int i = 0; i < N_PROMPTS; i++) {
        int m = encode(pr->tok, tok, PROMPTS[i], 1, 0);
        next_probs(pr->target, &s, p + (size_t)i * V, tok, m);
        next_probs(pr->draft, &s, q + (size_t)i * V, tok, m);
    }
    for (int j = 0; j < n; j++) {
        LenienceRow *r = &rows[j];
        r->lenience = L[j];
        for (int i = 0; i < N_PROMPTS; i++) r->tv += lenient_tv(p + (size_t)i * V, q + (size_t)i * V, V, L[j]) / N_PROMPTS;
        r->tv_measured = measured_tv(pr, &s, p, L[j], 4000);
        r->bpb = generated_bpb(pr, L[j], 8, 200);
        int reps = pr->reps;
        pr->reps = MAX_REPS; // the speed differences between l are small: more alternating runs
        r->e = bench_spec(pr, "shipped", 1.0f, 4, (float)L[j]); // fixed K: only a moves
        pr->reps = reps;
        printf("lenience %.2f%s: first-token TV from p, mean of %d prompts: %.4f (measured over 4000 seeds "
               "each: %.4f), target's bits per byte of the generated text %.4f\n", L[j],
               L[j] < 1 ? " (LOSSY)" : " (exact)", N_PROMPTS, r->tv, r->tv_measured, r->bpb);
        fflush(stdout);
    }
    free_sampler(&s);
    xfree(p); xfree(q); xfree(tok);
    return n;
}

static void write_lenience(const char *dir, const LenienceRow *r, int n) {
    FILE *f = open_output(dir, "lenience.csv", "lenience,lossy,threads,speedup,a,tokens_per_round,tv_first_token,"
                                            "tv_measured,bpb_generated,bound,check");
    for (int i = 0; i < n; i++) {
        char check[48];
        fprintf(f, "%.2f,%d,%d,%.4f,%.4f,%.4f,%.5f,%.5f,%.4f,%.4f,%s\n", r[i].lenience, r[i].lenience < 1,
                r[i].e.threads, r[i].e.speedup, r[i].e.alpha, r[i].e.tokens_per_round, r[i].tv, r[i].tv_measured,
                r[i].bpb, r[i].e.bound, flags_text(r[i].e.flags, check, sizeof(check)));
    }
    close_output(f);
}

// Two K head to head (-k k[0] against -k k[1], 0: auto-K): `pairs`
// generations of each, the two alternating (and which goes first alternating
// too) on the same prompts and seeds, so both write the same text and a change
// in the machine's speed hits both alike. Returns the median over the pairs
// (at most H2H_PAIRS) of [0]'s tok/s over [1]'s.
static double head_to_head(Pair *pr, float temp, const int k[2], int pairs) {
    if (pairs > H2H_PAIRS) pairs = H2H_PAIRS;
    Sampler s;
    build_sampler(&s, pr->target->config.vocab_size, temp, 1.0f, 0);
    Spec sc[2];
    for (int j = 0; j < 2; j++) build_spec(&sc[j], pr->target, pr->draft, &s, k[j], NULL);
    double ratio[H2H_PAIRS], rate[2];
    for (int i = 0; i < pairs; i++) {
        for (int j = 0; j < 2; j++) {
            int which = (i + j) % 2, made;
            double t = run_once(pr, &sc[which], &s, i, 2000 + i, &made);
            rate[which] = made / t;
        }
        ratio[i] = rate[0] / rate[1];
    }
    for (int j = 0; j < 2; j++) free_speculator(&sc[j].sp);
    free_sampler(&s);
    return median(ratio, pairs);
}

// Auto-K (e[0]) against the best fixed K (e[1..8]) at one temperature, by
// spec tok/s, twice. In the sweep: each row's speedup divides by its own
// target-only runs, whose medians spread by 10-20% across rows on a noisy
// machine although target-only decoding does not depend on K; spec tok/s share
// one scale, and so do speedups over the median of all nine rows' target-only
// medians. But the rows ran minutes apart, the best of eight noisy rows is
// biased up, and when the machine's speed steps (s16: target-only 3400 ->
// 5900 tok/s between two rows) the row after the step looks best by spec
// tok/s while its speedup shows it is not. So auto then runs head to head
// against up to three candidates: the best K by spec tok/s and the two best by
// speedup; the best fixed K is the one auto fares worst against. The auto
// row keeps both ratios (and each candidate's) for bench.json.
// the row of e[1..8] with the highest speedup, other than `skip`
static int best_speedup(const E2E *e, int skip) {
    int b = 0;
    for (int i = 1; i < 9; i++)
        if (i != skip && (!b || e[i].speedup > e[b].speedup)) b = i;
    return b;
}

static void auto_against_best(Pair *pr, E2E *e) {
    double target[9];
    int best = 1, first = best_speedup(e, 0);
    for (int i = 0; i < 9; i++) target[i] = e[i].target_tok_s;
    for (int i = 2; i < 9; i++) if (e[i].spec_tok_s > e[best].spec_tok_s) best = i;
    int cand[3] = {best, first, best_speedup(e, first)}, *worst = &e[0].h2h_worst;
    double pooled = median(target, 9);
    e[0].auto_over_best = e[0].spec_tok_s / e[best].spec_tok_s;
    double step = e[0].target_tok_s / e[best].target_tok_s; // the two rows' machines, compared
    printf("%-14s %dth t=%.2f auto-K %.1f spec tok/s, best fixed K by spec tok/s = %d %.1f: auto/best "
           "%.3f; over the nine rows' target-only (median %.1f tok/s): auto %.2fx, K = %d %.2fx%s\n",
           e[0].pair, e[0].threads, e[0].temperature, e[0].spec_tok_s, e[best].k, e[best].spec_tok_s,
           e[0].auto_over_best, pooled, e[0].spec_tok_s / pooled, e[best].k, e[best].spec_tok_s / pooled,
           step > STATE_GAP || step < 1 / STATE_GAP ? " (the two rows ran in different bandwidth states: "
                                                      "read the head to head below)" : "");
    for (int c = 0; c < 3; c++) {
        int seen = 0;
        for (int j = 0; j < c; j++) seen |= cand[j] == cand[c];
        if (seen) continue;
        int h = e[0].n_h2h++, ks[2] = {0, e[cand[c]].k}; // auto-K against K
        e[0].h2h_k[h] = e[cand[c]].k;
        e[0].h2h_ratio[h] = head_to_head(pr, e[0].temperature, ks, H2H_PAIRS);
        if (e[0].h2h_ratio[h] < e[0].h2h_ratio[*worst]) *worst = h;
        printf("%-14s %dth t=%.2f auto-K against K = %d head to head (%d pairs, alternating): "
               "auto/K %.3f (median of the pairs' ratios)\n", e[0].pair, e[0].threads,
               e[0].temperature, e[0].h2h_k[h], H2H_PAIRS, e[0].h2h_ratio[h]);
        fflush(stdout);
    }
    printf("%-14s %dth t=%.2f auto-K against the best fixed K head to head: K = %d, auto/K %.3f\n",
           e[0].pair, e[0].threads, e[0].temperature, e[0].h2h_k[*worst], e[0].h2h_ratio[*worst]);
    fflush(stdout);
}

// K = 1..8 and auto at t = 0 and 1 on pr, then auto at t = 0.5 and 1.5; appends to e
static int sweep_k(Pair *pr, const char *name, E2E *e) {
    int n = 0;
    for (int ti = 0; ti < 2; ti++) {
        for (int k = 0; k <= 8; k++) e[n++] = bench_pair(pr, name, (float)ti, k);
        auto_against_best(pr, e + n - 9);
    }
    e[n++] = bench_pair(pr, name, 0.5f, 0);
    e[n++] = bench_pair(pr, name, 1.5f, 0);
    return n;
}

// ---- target-only against a peer: llama2.c's run.c and runq.c (RUNC, RUNQ: binaries
// built -Ofast -march=native -fopenmp), llama.cpp's llama-bench (LLAMACPP).
// Greedy from BOS, the two alternating in PEER_PAIRS pairs, the median of the
// pairs' ratios; the peer's own tokens per second, specdec's generation alone

typedef double (*PeerTokS)(const void *ctx, int threads); // a peer's tok/s on `threads` threads, or 0

// run.c's (or runq.c's) tokens per second: its own "achieved tok/s" over n tokens
typedef struct { const char *bin, *ckpt, *tok; int n; } RunC;
static double runc_tok_s(const void *ctx, int threads) {
    const RunC *r = ctx;
    char cmd[2048], line[4096];
    double v = 0;
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=%d '%s' '%s' -z '%s' -t 0 -n %d 2>&1", threads, r->bin, r->ckpt,
             r->tok, r->n);
    FILE *p = popen(cmd, "r");
    while (p && fgets(line, sizeof line, p)) {
        char *at = strstr(line, "achieved tok/s:");
        if (at) v = strtod(at + 15, NULL);
    }
    if (p) pclose(p);
    return v;
}

#define PEER_PAIRS 7 // the VM's two-thread bandwidth moves between processes: pairs, not medians of each
// specdec target-only on tr (greedy from BOS, n_new tokens) against the peer on `th` threads, alternating
// in `pairs` pairs: *ours, *theirs the medians of each; returns the median of the pairs' ratios
static double peer_pairs(Transformer *tr, int n_new, PeerTokS peer_tok_s, const void *ctx, int th, int pairs,
                         double *ours, double *theirs, double *lo, double *hi, int *fewest) {
    Sampler s;
    build_sampler(&s, tr->config.vocab_size, 0.0f, 1.0f, 0);
    Rng rng;
    rng_seed(&rng, 1);
    int *tokens = xmalloc((size_t)tr->config.seq_len * sizeof(int), "tokens");
    int *gen = xmalloc((size_t)n_new * sizeof(int), "generated");
    double a[PEER_PAIRS], b[PEER_PAIRS], ratio[PEER_PAIRS];
    *lo = INFINITY, *hi = 0, *fewest = n_new;
    for (int rep = 0; rep < pairs; rep++) {
        Output o = {.quiet = 1, .generated = gen, .max_new = n_new};
        tokens[0] = TOKEN_BOS;
        double t0 = now_seconds();
        generate_plain(tr, &s, &rng, tokens, 1, &o);
        a[rep] = o.n_generated / (now_seconds() - t0);
        if (o.n_generated < *fewest) *fewest = o.n_generated;
        b[rep] = peer_tok_s(ctx, th);
        ratio[rep] = b[rep] > 0 ? a[rep] / b[rep] : 0;
        *lo = fmin(*lo, ratio[rep]), *hi = fmax(*hi, ratio[rep]);
    }
    *ours = median(a, pairs), *theirs = median(b, pairs);
    xfree(gen);
    xfree(tokens);
    free_sampler(&s);
    return median(ratio, pairs);
}

// specdec target-only on ckpt (an f32 file, or a version-2 one: int8) against `peer` on 1 and N threads
static void compare_peer(const char *peer, const char *name, const char *ckpt, int n_new, PeerTokS peer_tok_s,
                         const void *ctx, ThreadPool *pool, int N) {
    for (int th = 1; th <= N; th += N > 1 ? N - 1 : 1) {
        Transformer tr;
        build_transformer(&tr, ckpt, MAX_ROWS, pool, th);
        double ours, theirs, lo, hi;
        int fewest;
        double ratio = peer_pairs(&tr, n_new, peer_tok_s, ctx, th, PEER_PAIRS, &ours, &theirs, &lo, &hi, &fewest);
        printf("vs %s: %-20s %d thread%s: specdec %7.1f tok/s, %s %7.1f tok/s (medians); %.2fx, the median "
               "of %d pairs (%.2f-%.2f)\n", peer, name, th, th == 1 ? " " : "s", ours, peer, theirs, ratio,
               PEER_PAIRS, lo, hi);
        if (lo == 0) printf("  (%s gave no tokens per second in some runs: run it by hand)\n", peer);
        if (fewest < n_new) printf("  (specdec's text ended after %d of %d tokens in some runs)\n", fewest, n_new);
        fflush(stdout);
        free_transformer(&tr);
    }
}

static void compare_runc(const char *runc, const char *name, const char *ckpt, const char *tok, ThreadPool *pool,
                         int N) {
    RunC r = {runc, ckpt, tok, 100};
    compare_peer("run.c", name, ckpt, 100, runc_tok_s, &r, pool, N);
}

// ---- against llama.cpp (LLAMACPP: the directory holding its llama-bench, llama-quantize
// and llama-convert-llama2c-to-ggml, built Release with -DGGML_NATIVE=ON). The 325 MB
// target's f32 file converted to GGUF by llama.cpp's own llama2.c converter (the
// tokenizer.bin as its vocabulary), then llama-quantize to Q8_0 (groups of 32, an
// f16 scale: the bytes of specdec's int8) and to Q4_0 (llama.cpp's best case here);
// specdec reads the version-2 export (int8, as against runq.c) in both rows.
// `llama-bench -p 0 -n 128 -r 1` (a warm-up, then 128 tokens from BOS) against
// 128 greedy tokens from BOS.

#define LLAMACPP_TOKENS 128
typedef struct { const char *dir, *gguf; } LlamaBench;

// llama-bench's text-generation tokens per second ("avg_ts" of its JSON line), or 0
static double llamacpp_tok_s(const void *ctx, int threads) {
    const LlamaBench *l = ctx;
    char cmd[2048], line[8192];
    double v = 0;
    snprintf(cmd, sizeof cmd, "'%s/llama-bench' -m '%s' -p 0 -n %d -t %d -r 1 -o jsonl 2>/dev/null", l->dir,
             l->gguf, LLAMACPP_TOKENS, threads);
    FILE *p = popen(cmd, "r");
    if (!p) return 0;
    while (fgets(line, sizeof line, p)) {
        char *at = strstr(line, "\"avg_ts\":");
        if (at) v = strtod(at + 9, NULL);
    }
    return pclose(p) == 0 ? v : 0;
}

static char llamacpp_files[5][600]; // the comparison's temp files: removed at its end and at any exit
static void remove_llamacpp_files(void) {
    for (int i = 0; i < 5; i++)
        if (llamacpp_files[i][0]) remove(llamacpp_files[i]), llamacpp_files[i][0] = 0;
}

// run one llama.cpp tool, its output into log; 0 if it exited 0, else prints why and the log's last line
static int llamacpp_tool(const char *cmd, const char *log, const char *what) {
    char full[4096], line[1024], last[1024] = "";
    snprintf(full, sizeof full, "%s > '%s' 2>&1", cmd, log);
    int rc = system(full);
    if (rc == 0) return 0;
    FILE *f = fopen(log, "r");
    while (f && fgets(line, sizeof line, f))
        if (line[0] != '\n') memcpy(last, line, sizeof last);
    if (f) fclose(f);
    last[strcspn(last, "\n")] = 0;
    printf("SKIP llama.cpp comparison: %s failed (exit status %d): %s\n", what, rc, last[0] ? last : "no output");
    return -1;
}

// 0 if dir holds the three tools, else prints which is missing and returns -1
static int llamacpp_missing(const char *dir) {
    const char *tools[3] = {"llama-bench", "llama-quantize", "llama-convert-llama2c-to-ggml"};
    char path[2048];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, tools[i]);
        if (access(path, X_OK)) {
            printf("SKIP llama.cpp comparison: %s is not an executable (LLAMACPP: the directory of llama-bench, "
                   "llama-quantize and llama-convert-llama2c-to-ggml)\n", path);
            return -1;
        }
    }
    return 0;
}

static void compare_llamacpp(const char *dir, const char *f32, const char *tokenizer, ThreadPool *pool, int N) {
    char cmd[4096];
    const char *suffix[5] = {".q80", ".f32.gguf", ".q8_0.gguf", ".q4_0.gguf", ".llamacpp.log"};
    for (int i = 0; i < 5; i++) snprintf(llamacpp_files[i], sizeof llamacpp_files[i], "%s%s", f32, suffix[i]);
    static int registered;
    if (!registered++) atexit(remove_llamacpp_files);
    const char *pq = llamacpp_files[0], *gguf = llamacpp_files[1], *q8 = llamacpp_files[2], *q4 = llamacpp_files[3],
               *log = llamacpp_files[4];
    snprintf(cmd, sizeof cmd, "'%s/llama-convert-llama2c-to-ggml' --copy-vocab-from-model '%s' --llama2c-model '%s' "
             "--llama2c-output-model '%s'", dir, tokenizer, f32, gguf);
    int ok = llamacpp_tool(cmd, log, "llama-convert-llama2c-to-ggml") == 0;
    for (int q = 0; ok && q < 2; q++) {
        snprintf(cmd, sizeof cmd, "'%s/llama-quantize' '%s' '%s' %s %d", dir, gguf, q ? q4 : q8,
                 q ? "Q4_0" : "Q8_0", N);
        ok = llamacpp_tool(cmd, log, q ? "llama-quantize Q4_0" : "llama-quantize Q8_0") == 0;
    }
    remove(gguf);
    if (ok) {
        write_q80_checkpoint(f32, pq);
        LlamaBench l8 = {dir, q8}, l4 = {dir, q4};
        compare_peer("llama.cpp", "325MB int8 / Q8_0", pq, LLAMACPP_TOKENS, llamacpp_tok_s, &l8, pool, N);
        compare_peer("llama.cpp", "325MB int8 / Q4_0", pq, LLAMACPP_TOKENS, llamacpp_tok_s, &l4, pool, N);
    }
    remove_llamacpp_files();
}

// ---- trees against the chain: the shipped pair, then the shipped target embedded,
// zero-padded, in dim 768 x 12 layers (DRAM-bound, the same logits to rounding).
// Chains of K = 2..8 and static trees by the nodes a pass verifies (the node
// budget), auto-K beside them; rows appended to trees.csv.
static void compare_trees(Pair *pr, const char *name, FILE *csv) {
    const char *trees[] = {"2,1", "2,1,1", "2,1,1,1", "3,1,1", "2,2,1,1", "3,2,1"};
    for (int t = 0; t < 2; t++) {
        for (int k = 0; k <= 8; k += 2) {
            E2E e = bench_pair(pr, name, (float)t, k);
            char ones[2 * K_MAX + 1] = "", check[48];
            for (int i = 0; i < k; i++) strcat(ones, i ? ",1" : "1"); // a chain of K is the tree 1,1,...
            if (k) fprintf(csv, "%s,%d,chain,\"%s\",%d,%.4f,%.4f,%.4f,%.4f,%s\n", name, t, ones, k, e.speedup,
                           e.tokens_per_round, e.r, e.bound, flags_text(e.flags, check, sizeof(check)));
        }
        for (int i = 0; i < (int)(sizeof(trees) / sizeof(trees[0])); i++) {
            pr->tree = trees[i];
            E2E e = bench_pair(pr, name, (float)t, 0);
            Options o = {.tree = pr->tree, .lenience = 1.0f};
            parse_tree(&o, 1);
            int nodes = 0;
            for (int d = 0, level = 1; d < o.tree_depth; d++) nodes += level *= o.branch[d];
            char check[48];
            fprintf(csv, "%s,%d,tree,\"%s\",%d,%.4f,%.4f,%.4f,%.4f,%s\n", name, t, trees[i], nodes,
                    e.speedup, e.tokens_per_round, e.r, e.bound, flags_text(e.flags, check, sizeof(check)));
        }
        pr->tree = NULL;
    }
}

// ---- bench selftest: the checks above on numbers whose answers are known ----------

static void test_check_row(void) {
    double b;
    char t[48];
    // README's 325 MB row at t = 1 (auto-K, ran K = 6): 3.41x, 3.57 tokens per round, r 1.101, c 0.002
    int f = check_row(3.41, 3.57, 1.101, 0.002, 6, &b);
    CHECK(f == ROW_OVER_BOUND && fabs(b - 3.57 / (1.101 + 0.012)) < 1e-9,
          "3.41x with 3.57 tokens/round, r 1.101, c 0.002 x 6: bound %.3f, %s (want 3.208, over_bound)", b,
          flags_text(f, t, sizeof(t)));
    // drafters_dram.csv's lookup at t = 1: 1.59x with 1.05 tokens per round, c 0 (no r in that CSV:
    // any r allows at most 1.05x; with r below 1 the bound uses 1)
    f = check_row(1.5917, 1.0529, 1.0, 0, 0, &b);
    CHECK(f == ROW_OVER_BOUND && fabs(b - 1.0529) < 1e-9, "lookup 1.59x at 1.05 tokens/round: bound %.3f, %s", b,
          flags_text(f, t, sizeof(t)));
    f = check_row(1.5917, 1.0529, 0.8, 0, 0, &b);
    CHECK(f == (ROW_OVER_BOUND | ROW_R_BELOW_1) && fabs(b - 1.0529) < 1e-9,
          "lookup 1.59x with r 0.8: bound %.3f (r taken as 1), %s", b, flags_text(f, t, sizeof(t)));
    // PERFORMANCE.md's 325 MB t = 1 K = 4 row: 4.14x, 3.14 tokens per round, r 0.886, c 0.002
    f = check_row(4.14, 3.14, 0.886, 0.002, 4, &b);
    CHECK(f == (ROW_OVER_BOUND | ROW_R_BELOW_1), "4.14x at 3.14 tokens/round, r 0.886: %s",
          flags_text(f, t, sizeof(t)));
    // trees.csv's 325 MB chain K = 2 at t = 0: 2.17x, 2.45 tokens per round, r 0.917: r alone
    f = check_row(2.174, 2.4533, 0.9168, 0.003, 2, &b);
    CHECK(f == ROW_R_BELOW_1, "2.17x at 2.45 tokens/round, r 0.917: %s (want r_below_1 only)",
          flags_text(f, t, sizeof(t)));
    // rows that are possible: the shipped pair at K = 3 (1.63x; bound 1.84x) and one just inside the noise
    f = check_row(1.6325, 3.1377, 1.5101, 0.0656, 3, &b);
    CHECK(f == 0 && b > 1.8 && b < 1.9, "1.63x at 3.14 tokens/round, r 1.51, c 0.066 x 3: bound %.3f, %s", b,
          flags_text(f, t, sizeof(t)));
    f = check_row(2.0 * (1 + BOUND_NOISE) - 1e-6, 2.0, 1.0, 0, 0, &b);
    CHECK(f == 0, "a speedup %.0f%% over its bound of 2: %s (want ok: noise)", 100 * BOUND_NOISE,
          flags_text(f, t, sizeof(t)));
    f = check_row(1.2, 2.0, 1 - R_NOISE + 1e-6, 0, 0, &b);
    CHECK(f == 0, "r %.3f: %s (want ok: within noise of 1)", 1 - R_NOISE + 1e-6, flags_text(f, t, sizeof(t)));
    f = check_row(0, 0, 0, 0, 0, &b);
    CHECK(f == 0 && b == 0, "a row without rounds: %s, bound %g", flags_text(f, t, sizeof(t)), b);
    CHECK(!strcmp(flags_text(7, t, sizeof(t)), "over_bound+r_below_1+two_states") &&
              !strcmp(flags_text(ROW_TWO_STATES, t, sizeof(t)), "two_states"),
          "flags as text: \"%s\"", flags_text(7, t, sizeof(t)));
    printf("selftest: check_row on the issue's rows and on possible ones\n");
}

static void test_states(void) {
    // target-alone tok/s of the 325 MB target swinging between the VM's states (PERFORMANCE.md: 88-175)
    const double two[6] = {100, 170, 98, 172, 101, 99}, one[5] = {5700, 5800, 5650, 5900, 5500};
    int st[6], clean[5];
    int n = bandwidth_states(two, 6, st);
    CHECK(n == 2 && !st[0] && st[1] && !st[2] && st[3] && !st[4] && !st[5],
          "100 170 98 172 101 99 tok/s: %d states, %d%d%d%d%d%d (want 2, 010100)", n, st[0], st[1], st[2], st[3],
          st[4], st[5]);
    n = bandwidth_states(one, 5, st);
    CHECK(n == 1 && !st[0] && !st[3], "5500-5900 tok/s (a cache-resident target's noise): %d states", n);
    // spec runs between target runs 100|102 170|168 99: pairs 0 and 2 clean, 1 and 3 across a change
    const double runs[5] = {100, 102, 170, 168, 99};
    int m = clean_pairs(runs, 4, clean);
    CHECK(m == 2 && clean[0] && !clean[1] && clean[2] && !clean[3],
          "target runs 100 102 170 168 99: %d clean pairs, %d%d%d%d (want 2, 1010)", m, clean[0], clean[1], clean[2],
          clean[3]);
    printf("selftest: bandwidth states split where the rates jump, pairs across a jump left out\n");
}

static void test_options(void) {
    BenchOptions o;
    char *all[] = {"bench", "all", NULL}, *pub[] = {"bench", "sweep", "--publish", "--threads", "1", NULL},
         *dir[] = {"bench", "tree", "--csv", "elsewhere", NULL};
    parse_bench(&o, 2, all);
    CHECK(!strcmp(o.what, "all") && !strcmp(o.csv, SCRATCH_CSV) && !o.publish,
          "bench all: CSVs into %s (want " SCRATCH_CSV ": docs/ untouched)", o.csv);
    parse_bench(&o, 5, pub);
    CHECK(!strcmp(o.what, "sweep") && !strcmp(o.csv, PUBLISHED_CSV) && o.publish && o.threads == 1,
          "bench sweep --publish --threads 1: CSVs into %s, threads %d", o.csv, o.threads);
    parse_bench(&o, 4, dir);
    CHECK(!strcmp(o.csv, "elsewhere"), "bench tree --csv elsewhere: CSVs into %s", o.csv);
    printf("selftest: CSVs go to " SCRATCH_CSV "/ unless --publish (" PUBLISHED_CSV "/) or --csv\n");
}

// Fields of one CSV line, quotes respected ("2,1" is one field).
static int csv_fields(const char *line) {
    int n = 1, quoted = 0;
    for (; *line && *line != '\n'; line++) {
        if (*line == '"') quoted = !quoted;
        else if (*line == ',' && !quoted) n++;
    }
    return n;
}

// The CSV writers on made-up rows (one flagged, one not): each data line has
// the header's fields, and the check column says ok or the flags.
static void test_csv_writers(void) {
    const char *dir = "build/test/bench_selftest";
    mkdir("build", 0755);
    mkdir("build/test", 0755);
    mkdir(dir, 0755);
    E2E e[2] = {{.k = 8, .tokens_per_round = 3.57, .r = 1.0, .r_measured = 0.886, .speedup = 4.14, .bound = 3.11,
                 .flags = ROW_OVER_BOUND | ROW_R_BELOW_1},
                {.k = 4, .is_auto = 1, .tokens_per_round = 3.1, .r = 1.5, .speedup = 1.6, .bound = 1.84}};
    snprintf(e[0].pair, sizeof(e[0].pair), "lookup");
    snprintf(e[1].pair, sizeof(e[1].pair), "draft model");
    LenienceRow lr[1] = {{.lenience = 0.5, .e = e[0]}};
    ModelResult m = {.name = "model", .r = {{0, 1, 0.9, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8}}};
    write_sweep_k(dir, e, 2);
    write_drafters(dir, "drafters.csv", e, 2, 0);
    write_lenience(dir, lr, 1);
    write_verify_cost(dir, &m, 1);
    static const char *const files[4] = {"sweep_k.csv", "drafters.csv", "lenience.csv", "verify_cost.csv"};
    for (int i = 0; i < 4; i++) {
        char path[256], line[4][1024];
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        FILE *f = fopen(path, "r");
        int n = 0;
        while (f && n < 4 && fgets(line[n], sizeof(line[n]), f)) n++;
        if (f) fclose(f);
        int rows = i == 2 ? 1 : i == 3 ? 9 : 2, ok = n >= (rows < 3 ? rows + 1 : 3);
        for (int j = 1; ok && j < n; j++) ok = csv_fields(line[j]) == csv_fields(line[0]);
        CHECK(ok && strstr(line[0], ",check\n"), "%s: %d lines, every line as many fields as the header (%d) "
              "and a check column", path, n, n ? csv_fields(line[0]) : 0);
        const char *want = i == 3 ? ",r_below_1\n" : ",over_bound+r_below_1\n";
        CHECK(n >= 2 && strstr(line[i == 3 ? 2 : 1], want) && (rows != 2 || strstr(line[2], ",ok\n")),
              "%s: the flagged row ends with %.*s, the other with ok", path, (int)strlen(want) - 2, want + 1);
    }
    printf("selftest: the CSV writers' rows match their headers, with bound and check\n");
}

static int selftest(void) {
    test_check_row();
    test_states();
    test_options();
    test_csv_writers();
    return check_summary("bench selftest");
}

// The inputs registered and the mode's outputs planned (model.h), before anything is measured
static void plan_outputs(const BenchOptions *o, int have_pair) {
    const char *in[] = {o->target, o->draft, o->tokenizer, o->medusa, o->eagle};
    static const char *const WRITES[][3] = {{"all", "verify_cost.csv", ""}, {"all", "sweep_k.csv", "pair"},
        {"all", "sweep_temp.csv", "pair"}, {"all", "drafters.csv", "pair"}, {"all", "drafters_dram.csv", "pair"},
        {"all", "lenience.csv", "pair"}, {"sweep", "sweep_k.csv", "pair"}, {"sweep", "sweep_temp.csv", "pair"},
        {"drafters", "drafters.csv", "pair"}, {"drafters", "drafters_dram.csv", "pair"},
        {"lenience", "lenience.csv", "pair"}, {"tree", "trees.csv", "pair"}, {"scale", "scale.csv", "pair"}};
    char msg[2 * IO_PATH_MAX + 256];
    for (int i = 0; i < 5; i++) {
        int fd = open(in[i], O_RDONLY | O_NONBLOCK);
        if (fd >= 0 && note_input(fd, in[i], msg, sizeof(msg))) die("%s", msg);
        if (fd >= 0) close(fd);
    }
    if (!strcmp(o->what, "all")) plan_bench_output(NULL, o->json);
    for (size_t i = 0; i < sizeof(WRITES) / sizeof(WRITES[0]); i++)
        if (!strcmp(WRITES[i][0], o->what) && (have_pair || !WRITES[i][2][0])) plan_bench_output(o->csv, WRITES[i][1]);
}

// ---- llama2.c's shapes (bench shapes): random shape-only checkpoints -----------------
// Every shape export.py writes for stories15M/42M/110M, TinyLlama-1.1B and Llama-2-7B, as
// a legacy f32 file and a version-2 file (export.py's GS: 64 halved until it divides dim,
// so stories42M's w2 groups run across rows), random weights (random_model.h's scales),
// written into build/shapes/ and deleted after (a few GB: never shipped, never in make
// test). Each runs in ./specdec, a process of its own (peak RSS from wait4), with llama2.c's
// 32000-token tokenizer: greedy spec (the next smaller shape drafting) against target-only,
// time to first token against `cat FILE > /dev/null` (page cache warm, medians of 3, side by
// side), the RSS bound of the real-sizes issue (file x 1.05 + KV caches + 256 MB), and the
// 7B f32 file (sparse: zeros) refused, then loaded as int8.
#include <sys/resource.h>
#include <sys/wait.h>
#define SHAPES_TOKENIZER "../shared/data/ref/llama2_tokenizer.bin"
typedef struct { const char *name; Config c; } Shape;
static const Shape SHAPES[] = {{"stories15M", {288, 768, 6, 6, 6, 32000, 256}},
                               {"stories42M", {512, 1376, 8, 8, 8, 32000, 1024}},
                               {"stories110M", {768, 2048, 12, 12, 12, 32000, 1024}},
                               {"tinyllama-1.1B", {2048, 5632, 22, 32, 4, 32000, 2048}},
                               {"llama2-7B", {4096, 11008, 32, 32, 32, 32000, 4096}}};
#define N_SHAPES 5

// `layers` blocks of `each` values uniform in [-a, a] (a < 0: gains 1 +- 0.1) to f: floats,
// or (gs > 0) each block's int8 groups (model.h's q80_group) and then its scales
static void write_tensor(FILE *f, Stream *r, float a, size_t layers, size_t each, int gs, const char *path) {
    float x[4096], *sc = gs ? xmalloc(each / (size_t)gs * sizeof(float), "scales") : NULL;
    int8_t q[4096];
    for (size_t l = 0; l < layers; l++) {
        for (size_t done = 0, m; done < each; done += m) {
            m = each - done < 4096 ? each - done : 4096; // whole groups: gs divides 4096 and each
            for (size_t i = 0; i < m; i++) x[i] = a < 0 ? 1.0f + uniform(r, 0.1f) : uniform(r, a);
            for (size_t g = 0; gs && g < m / (size_t)gs; g++)
                sc[done / (size_t)gs + g] = q80_group(q + g * (size_t)gs, x + g * (size_t)gs, gs);
            if (gs ? fwrite(q, 1, m, f) != m : fwrite(x, sizeof(float), m, f) != m) die("%s: write failed", path);
        }
        if (gs && fwrite(sc, sizeof(float), each / (size_t)gs, f) != each / (size_t)gs) die("%s: write failed", path);
    }
    xfree(sc);
}

// A random checkpoint of shape c (shared classifier): legacy f32 (gs 0) or version 2 in groups of gs
static void write_shape(const char *path, const Config *c, int gs) {
    size_t dim = (size_t)c->dim, hid = (size_t)c->hidden_dim, L = (size_t)c->n_layers, V = (size_t)c->vocab_size;
    size_t hs = dim / (size_t)c->n_heads, kv = (size_t)c->n_kv_heads * hs;
    float a_in = sqrtf(3.0f / (float)dim), a_hid = sqrtf(3.0f / (float)hid), a_emb = 4.0f / sqrtf((float)dim);
    FILE *f = fopen(path, "wb");
    Stream r;
    stream_seed(&r, 7);
    if (!f) die("%s: cannot write", path);
    if (gs) {
        unsigned char h[Q80_HEADER_BYTES] = {0};
        int32_t v[9] = {Q80_MAGIC, 2, c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads, c->vocab_size,
                        c->seq_len};
        memcpy(h, v, sizeof(v)), h[36] = 1, memcpy(h + 37, &gs, sizeof(gs));
        if (fwrite(h, 1, sizeof(h), f) != sizeof(h)) die("%s: write failed", path);
        write_tensor(f, &r, -1, 1, (2 * L + 1) * dim, 0, path); // rms_att, rms_ffn, rms_final
    } else if (write_config(f, c, 1)) die("%s: write failed", path);
    write_tensor(f, &r, a_emb, 1, V * dim, gs, path);
    if (!gs) write_tensor(f, &r, -1, 1, L * dim, 0, path);
    write_tensor(f, &r, a_in, L, dim * dim, gs, path);
    write_tensor(f, &r, a_in, L, kv * dim, gs, path);
    write_tensor(f, &r, a_in, L, kv * dim, gs, path);
    write_tensor(f, &r, a_in, L, dim * dim, gs, path);
    if (!gs) write_tensor(f, &r, -1, 1, L * dim, 0, path);
    write_tensor(f, &r, a_in, L, hid * dim, gs, path);
    write_tensor(f, &r, a_hid, L, dim * hid, gs, path);
    write_tensor(f, &r, a_in, L, hid * dim, gs, path);
    if (!gs) {
        float *rope = xmalloc((size_t)c->seq_len * hs * sizeof(float), "rope");
        rope_tables(rope, rope + (size_t)c->seq_len * hs / 2, c->seq_len, (int)hs);
        write_tensor(f, &r, -1, 1, dim, 0, path); // rms_final
        if (fwrite(rope, sizeof(float), (size_t)c->seq_len * hs, f) != (size_t)c->seq_len * hs) die("%s: write failed", path);
        xfree(rope);
    }
    if (fclose(f) != 0) die("%s: write failed", path);
}

// Run `cmd` (sh -c; stdout into out, n bytes at most): wall seconds, *rss its peak RSS in GB
// (wait4), *rc its exit status
static double run_timed(const char *cmd, char *out, size_t n, double *rss, int *rc) {
    int fd[2];
    struct rusage ru;
    if (pipe(fd)) die("pipe failed");
    fflush(stdout);
    double t0 = now_seconds();
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1), close(fd[0]), close(fd[1]);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    size_t got = 0;
    for (ssize_t r; got + 1 < n && (r = read(fd[0], out + got, n - 1 - got)) > 0;) got += (size_t)r;
    for (char sink[4096]; read(fd[0], sink, sizeof(sink)) > 0;) {}
    close(fd[0]);
    out[got] = '\0';
    int status;
    wait4(pid, &status, 0, &ru);
    *rss = (double)ru.ru_maxrss / 1e6; // KB on Linux
    *rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return now_seconds() - t0;
}

// file's time to first token (-n 1, empty prompt: BOS, one forward) against cat's, medians
// of 3 side by side; *ttft and *cat the medians, *rss the largest peak RSS (GB)
static void time_first_token(const char *file, const char *tok, const char *flags, double *ttft, double *cat,
                             double *rss) {
    char cmd[1024], out[256];
    double t[3], c[3], m;
    int rc;
    snprintf(cmd, sizeof(cmd), "exec cat %s > /dev/null", file);
    run_timed(cmd, out, sizeof(out), &m, &rc); // the page cache warm
    *rss = 0;
    for (int i = 0; i < 3; i++) {
        c[i] = run_timed(cmd, out, sizeof(out), &m, &rc);
        char run[1024];
        snprintf(run, sizeof(run), "exec ./specdec %s -z %s -m target -i '' -n 1 -t 0 -q %s 2>/dev/null", file, tok,
                 flags);
        t[i] = run_timed(run, out, sizeof(out), &m, &rc);
        if (rc) t[i] = INFINITY;
        if (m > *rss) *rss = m;
    }
    qsort(t, 3, sizeof(double), cmp_double), qsort(c, 3, sizeof(double), cmp_double);
    *ttft = t[1], *cat = c[1];
}

static size_t file_size(const char *path) {
    struct stat st;
    return stat(path, &st) ? 0 : (size_t)st.st_size;
}

static int bench_shapes(void) {
    char path[N_SHAPES][2][256], cmd[2048], a[8192], b[8192];
    const char *fmt[2] = {"f32", "int8"};
    int failed = 0, rc, rc2;
    double rss, rss2;
    if (access("./specdec", X_OK) || access(SHAPES_TOKENIZER, R_OK))
        die("bench shapes: needs ./specdec (make specdec) and %s", SHAPES_TOKENIZER);
    mkdir("build", 0755), mkdir("build/shapes", 0755);
    for (int s = 0; s < N_SHAPES; s++)
        for (int q = 0; q < 2; q++) {
            int gs = 64;
            while (q && SHAPES[s].c.dim % gs) gs /= 2; // export.py's rule
            snprintf(path[s][q], sizeof(path[s][q]), "build/shapes/%s_%s.bin", SHAPES[s].name, fmt[q]);
            double t0 = now_seconds();
            if (s == N_SHAPES - 1 && !q) { // 27 GB: sparse, its weights zeros (disk and time)
                FILE *f = fopen(path[s][q], "wb");
                if (!f || write_config(f, &SHAPES[s].c, 1) || fclose(f) ||
                    truncate(path[s][q], (off_t)(CONFIG_HEADER_BYTES + checkpoint_n_floats(&SHAPES[s].c, 1) * 4)))
                    die("%s: cannot write", path[s][q]);
            } else write_shape(path[s][q], &SHAPES[s].c, q ? gs : 0);
            printf("wrote %s (%.2f GB, %s%s) in %.0f s\n", path[s][q], (double)file_size(path[s][q]) / 1e9, fmt[q],
                   q && SHAPES[s].c.hidden_dim % gs ? ", groups across w2's rows" : "", now_seconds() - t0);
        }
    printf("\ngreedy spec == target-only (-t 0 -n 12), each shape drafting for the next larger one:\n");
    for (int s = 1; s < N_SHAPES; s++)
        for (int q = s == N_SHAPES - 1; q < 2; q++) { // not the 7B f32 file: zeros
            const char *tflags = q ? "" : "--target-weights f32";
            snprintf(cmd, sizeof(cmd), "exec ./specdec %s -z " SHAPES_TOKENIZER " -m target -t 0 -n 12 -i 'Once upon "
                     "a time' %s 2>/dev/null", path[s][q], tflags);
            run_timed(cmd, a, sizeof(a), &rss, &rc);
            snprintf(cmd, sizeof(cmd), "exec ./specdec %s -d %s -z " SHAPES_TOKENIZER " -t 0 -n 12 -i 'Once upon a "
                     "time' %s --draft-weights %s -k 4 2>/dev/null", path[s][q], path[s - 1][q], tflags, fmt[q]);
            run_timed(cmd, b, sizeof(b), &rss2, &rc2);
            int same = !rc && !rc2 && !strcmp(a, b) && strlen(a) > 0;
            failed += !same;
            printf("  %-15s %-4s target, %-15s %-4s draft: %s (peak RSS %.2f GB target-only, %.2f GB spec)\n",
                   SHAPES[s].name, fmt[q], SHAPES[s - 1].name, fmt[q],
                   same ? "same text" : "DIFFER", rss, rss2);
        }
    printf("\n7B f32 (27 GB): ");
    snprintf(cmd, sizeof(cmd), "./specdec %s -z " SHAPES_TOKENIZER " -m target -n 1 2>&1", path[N_SHAPES - 1][0]);
    run_timed(cmd, a, sizeof(a), &rss, &rc);
    printf("exit %d: %s", rc, a);
    failed += rc != 1 || !strstr(a, "as int8");
    double load[3] = {0};
    getloadavg(load, 3);
    printf("\ntime to first token (-n 1, empty prompt) against cat FILE > /dev/null, medians of 3 (load average "
           "%.2f):\n", load[0]);
    for (int s = 0; s < N_SHAPES; s++)
        for (int q = 0; q < 2; q++) {
            double ttft, cat, rss_gb, gb = (double)file_size(path[s][q]) / 1e9;
            const Config *c = &SHAPES[s].c;
            double kv = 2.0 * c->n_layers * 48 * (c->n_kv_heads * (c->dim / c->n_heads)) * 4 / 1e9;
            int as_int8 = s == N_SHAPES - 1 && !q;
            time_first_token(path[s][q], SHAPES_TOKENIZER, as_int8 ? "--target-weights int8" : q ? "" : "--target-weights f32", &ttft,
                             &cat, &rss_gb);
            double bound = (as_int8 ? (double)file_size(path[s][1]) / 1e9 : gb) * 1.05 + kv + 0.256;
            printf("  %-15s %-11s %6.2f GB: first token %6.2f s, cat %5.2f s (%.2fx); peak RSS %5.2f GB, bound %5.2f%s\n",
                   SHAPES[s].name, as_int8 ? "f32 as int8" : fmt[q], gb, ttft, cat, ttft / cat, rss_gb, bound,
                   rss_gb <= bound ? "" : " OVER");
            failed += rss_gb > bound || !isfinite(ttft);
        }
    for (int s = 0; s < N_SHAPES; s++) remove(path[s][0]), remove(path[s][1]);
    printf("bench shapes: %s\n", failed ? "FAILED" : "all as promised");
    return failed != 0;
}

static char pbig[512]; // the large target's file while the bench runs
static void remove_big(void) { remove(pbig); }
static void remove_big_on(int sig) { // Ctrl-C or kill: no GB files left behind
    unlink(pbig);
    signal(sig, SIG_DFL);
    raise(sig);
}
static void remove_big_at_exit(void) {
    atexit(remove_big); // an error exit (die) removes it too
    signal(SIGINT, remove_big_on), signal(SIGTERM, remove_big_on);
}

// ---- busy: threads beside other processes --------------------------------------------
//
// The shipped pair (spec, t = 0, auto-K; then -d medusa if its heads are there) on 1 and N
// threads, runs alternating, 256 tokens from the 4 prompts, first beside BUSY_CHILDREN
// forked children that spin (`for (;;)`, as a laptop's other programs), then alone. Each
// run starts with the pool as a new process finds it (specdec.c's fresh_pool).
#include <sys/wait.h>
#define BUSY_CHILDREN 5
#define BUSY_PAIRS 12

static void busy_row(Pair *one, Pair *many, const char *medusa, const char *state) {
    Sampler s;
    build_sampler(&s, one->target->config.vocab_size, 0.0f, 1.0f, 0);
    Spec sc[2];
    Pair *pr[2] = {one, many};
    double rate[2][BUSY_PAIRS], ratio[BUSY_PAIRS], load[2] = {0};
    getloadavg(load, 1);
    for (int i = 0; i < 2; i++) pr[i]->medusa = medusa, build_spec_as(&sc[i], pr[i]->target, pr[i], &s, 0, NULL);
    for (int rep = 0; rep < BUSY_PAIRS; rep++) {
        for (int i = 0; i < 2; i++) {
            if (pr[i]->target->pool) fresh_pool(pr[i]->target->pool);
            int made;
            double t = run_once(pr[i], &sc[i], &s, rep, 1000 + rep, &made);
            rate[i][rep] = made / t;
        }
        ratio[rep] = rate[1][rep] / rate[0][rep];
    }
    getloadavg(load + 1, 1);
    double lo = ratio[0], hi = ratio[0];
    for (int i = 1; i < BUSY_PAIRS; i++) lo = fmin(lo, ratio[i]), hi = fmax(hi, ratio[i]);
    printf("%-5s %-16s t=0: 1 thread %7.1f tok/s, %d threads %7.1f tok/s (medians of %d); %d / 1 thread "
           "%.2fx, the median of %d alternating pairs (%.2f-%.2f); load average %.1f -> %.1f\n", state,
           medusa ? "medusa all heads" : "draft auto-K", median(rate[0], BUSY_PAIRS), many->threads,
           median(rate[1], BUSY_PAIRS), BUSY_PAIRS, many->threads, median(ratio, BUSY_PAIRS), BUSY_PAIRS, lo, hi,
           load[0], load[1]);
    fflush(stdout);
    for (int i = 0; i < 2; i++) free_spec(&sc[i]);
    free_sampler(&s);
}

static int bench_busy(const BenchOptions *o) {
    printf("specdec bench busy: %s path, the shipped pair on 1 and %d threads, %d CPUs usable; beside %d "
           "children that spin, then alone\n", SIMD_NAME, o->threads, usable_cpus(), BUSY_CHILDREN);
    ThreadPool *pool = build_pool(o->threads);
    Transformer target1, targetN, draft;
    build_transformer(&target1, o->target, MAX_ROWS, NULL, 1);
    build_transformer(&targetN, o->target, MAX_ROWS, pool, o->threads);
    build_transformer_as(&draft, o->draft, MAX_ROWS, NULL, 1, DRAFT_WEIGHTS);
    Tokenizer tok;
    build_tokenizer(&tok, o->tokenizer, target1.config.vocab_size);
    Pair one = {.target = &target1, .draft = &draft, .tok = &tok, .n_new = 256, .threads = 1};
    Pair many = one;
    many.target = &targetN, many.threads = o->threads;
    const char *medusa = access(o->medusa, R_OK) == 0 ? o->medusa : NULL;
    pid_t parent = getpid(), child[BUSY_CHILDREN];
    for (int c = 0; c < BUSY_CHILDREN; c++)
        if ((child[c] = fork()) == 0) // spin; gone within ~10 ms of the bench (getppid), however it ends
            for (volatile unsigned long i = 1;; i++)
                if (!(i & 0xffffff) && getppid() != parent) _exit(0);
    for (int m = 0; m < 1 + !!medusa; m++) busy_row(&one, &many, m ? medusa : NULL, "busy");
    for (int c = 0; c < BUSY_CHILDREN; c++)
        if (child[c] > 0) kill(child[c], SIGKILL), waitpid(child[c], NULL, 0);
    for (int m = 0; m < 1 + !!medusa; m++) busy_row(&one, &many, m ? medusa : NULL, "alone");
    free_tokenizer(&tok);
    free_transformer(&target1), free_transformer(&targetN), free_transformer(&draft);
    free_pool(pool);
    return 0;
}

// ---- speed at real sizes (bench scale) -------------------------------------------------
// The shipped target embedded (write_embedded_checkpoint: the same logits, so the shipped
// draft keeps its acceptance rate) in the widths and depths of llama2.c's real shapes, as
// version-2 files (int8, groups of 64) in $TMPDIR, removed after. Per size: the one-row
// pass against the plain read loop side by side (1 and N threads); target-only and
// speculation with the shipped draft at t = 0 and 1, K = 4 and auto-K (N threads), and
// auto-K against K = 4 and 8 head to head; time to first token against cat and peak RSS
// (./specdec, a process of its own); runq.c (RUNQ=) on the same file. scale.csv.
typedef struct { const char *name; int scale, layers, hidden, n_new, reps, h2h; } ScaleShape;
static const ScaleShape SCALES[] = {{"81M", 3, 12, 0, 64, 3, 16}, {"1.0B", 8, 22, 0, 48, 3, 6},
                                    {"6.0B", 16, 32, 11008, 24, 2, 4}};
#define N_SCALES 3
#define SCALE_CSV "shape,params,file_gb,bytes_per_token,threads,read_gbs,one_row_fraction,one_row_fraction_1," \
    "target_tok_s," \
    "spec_t0_k4,spec_t0_auto,auto_k_t0,spec_t1_k4,spec_t1_auto,auto_k_t1,auto_vs_k4_t0,auto_vs_k8_t0," \
    "auto_vs_k4_t1,auto_vs_k8_t1,first_token_s,cat_s,rss_target_gb,rss_spec_gb,runq_tok_s"

// One size: its row of scale.csv (the E2E rows' target-only tok/s are the four rows' median)
static void scale_row(FILE *csv, const ScaleShape *sh, const BenchOptions *o, ThreadPool *pool, int N) {
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", *runq = getenv("RUNQ");
    char *path = pbig, cmd[1400], out[4096]; // removed at exit, however the bench ends
    snprintf(path, sizeof(pbig), "%s/specdec_scale_%s.bin", tmp, sh->name);
    Transformer tr, draft;
    double t0 = now_seconds();
    write_embedded_checkpoint(path, o->target, sh->scale, sh->layers, sh->hidden, 64);
    double gb = (double)file_size(path) / 1e9, ttft, cat, rss, rss_spec;
    printf("%s: wrote %s (%.2f GB, int8) in %.0f s\n", sh->name, path, gb, now_seconds() - t0);
    fflush(stdout);
    time_first_token(path, o->tokenizer, "", &ttft, &cat, &rss);
    int rc;
    snprintf(cmd, sizeof(cmd), "exec ./specdec %s -d %s -z %s -n 16 -k 4 -t 0 -q 2>/dev/null", path, o->draft,
             o->tokenizer);
    run_timed(cmd, out, sizeof(out), &rss_spec, &rc);
    build_transformer(&tr, path, MAX_ROWS, pool, N);
    build_transformer_as(&draft, o->draft, MAX_ROWS, pool, 1, DRAFT_WEIGHTS); // one thread, as specdec
    Tokenizer tok;
    build_tokenizer(&tok, o->tokenizer, tr.config.vocab_size);
    const Config *c = &tr.config;
    double bytes = bytes_per_token(c, WEIGHTS_INT8), params = bytes_per_token(c, WEIGHTS_F32) / 4, frac[2], bw[2];
    for (int ti = 0; ti < 2; ti++) { // the one-row pass and the read loop side by side, 1 then N threads
        tr.n_threads = ti ? N : 1;
        frac[ti] = interleaved_fraction(&tr, bytes, gb > 2 ? 4 : gb > 0.5 ? 10 : 30, &bw[ti]);
    }
    Pair pr = {.target = &tr, .draft = &draft, .tok = &tok, .n_new = sh->n_new, .reps = sh->reps, .threads = N};
    E2E e[4];
    double h2h[2][2] = {{0, 0}, {0, 0}}, target[4];
    for (int i = 0; i < 4; i++) e[i] = bench_pair(&pr, sh->name, (float)(i / 2), i % 2 ? 0 : 4);
    for (int i = 0; i < 4; i++) target[i] = e[i].target_tok_s;
    for (int t = 0; sh->h2h && t < 2; t++)
        for (int j = 0; j < 2; j++) {
            int ks[2] = {0, 4 + 4 * j};
            h2h[t][j] = head_to_head(&pr, (float)t, ks, sh->h2h);
            printf("%-14s %dth t=%d auto-K against K = %d head to head (%d pairs, alternating): auto/K %.3f\n",
                   sh->name, N, t, ks[1], sh->h2h, h2h[t][j]);
        }
    double runq_tok_s = 0, ours = 0, lo, hi;
    int fewest;
    if (runq && *runq) {
        RunC r = {runq, path, o->tokenizer, sh->n_new};
        double ratio = peer_pairs(&tr, sh->n_new, runc_tok_s, &r, N, 3, &ours, &runq_tok_s, &lo, &hi, &fewest);
        printf("%-14s vs runq.c, %d threads, greedy from BOS, %d tokens: specdec %.2f tok/s, runq.c %.2f tok/s; "
               "%.2fx, the median of 3 pairs (%.2f-%.2f)\n", sh->name, N, sh->n_new, ours, runq_tok_s, ratio, lo, hi);
    }
    printf("%-14s %.2fB params, %.2f GB int8 (%.0f MB a token): one-row pass %.0f%% of the read loop side by side "
           "on 1 thread (%.1f GB/s), %.0f%% on %d (%.1f GB/s); first token %.2f s (cat %.2f s, %.2fx); peak RSS %.2f "
           "GB target-only, %.2f GB with the draft\n", sh->name, params / 1e9, gb, bytes / 1e6, 100 * frac[0], bw[0],
           100 * frac[1], N, bw[1], ttft, cat, ttft / cat, rss, rss_spec);
    fprintf(csv, "%s,%.0f,%.3f,%.0f,%d,%.2f,%.4f,%.4f,%.3f,%.3f,%.3f,%d,%.3f,%.3f,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,"
            "%.3f,%.3f,%.3f\n", sh->name, params, gb, bytes, N, bw[1], frac[1], frac[0], median(target, 4), e[0].spec_tok_s,
            e[1].spec_tok_s, e[1].k, e[2].spec_tok_s, e[3].spec_tok_s, e[3].k, h2h[0][0], h2h[0][1], h2h[1][0],
            h2h[1][1], ttft, cat, rss, rss_spec, runq_tok_s);
    fflush(stdout);
    free_tokenizer(&tok);
    free_transformer(&tr), free_transformer(&draft);
    remove(path);
}

static int bench_scale(const BenchOptions *o) {
    if (access("./specdec", X_OK) || access(o->target, R_OK) || access(o->draft, R_OK) || access(o->tokenizer, R_OK))
        die("bench scale: needs ./specdec (make specdec), %s, %s and %s (make weights)", o->target, o->draft,
            o->tokenizer);
    printf("specdec bench scale: %s path, %d threads, %d CPUs usable\n", SIMD_NAME, o->threads, usable_cpus());
    remove_big_at_exit();
    ThreadPool *pool = build_pool(o->threads);
    FILE *csv = open_output(o->csv, "scale.csv", SCALE_CSV);
    for (int i = 0; i < N_SCALES; i++) scale_row(csv, &SCALES[i], o, pool, o->threads);
    close_output(csv);
    free_pool(pool);
    return 0;
}

// The FMA peaks (f32: AVX2's and AVX-512's, 0 where the build lacks one) and the int8
// peak (peak_int8), printed with the int8 matmul's rates against it (bench kernels)
static void machine_peaks(double *peak, double *peak512) {
    *peak = *peak512 = 0;
#if HAVE_AVX2
    *peak = fma_peak_avx2();
#endif
#if HAVE_AVX512
    *peak512 = fma_peak_avx512();
#endif
    double cached[MAX_N + 1];
    peak_int8 = int8_cached_rates(cached);
    printf("FMA peak, one core, 12 chains in registers: AVX2 %.1f GFLOP/s", *peak);
    if (*peak512 > 0) printf(", AVX-512 %.1f GFLOP/s", *peak512);
    printf("; int8 (%s, 12 chains of the tiles' step): %.1f G multiply-adds x 2 /s", HAVE_VNNI ? "vpdpbusd"
           : HAVE_AVX2 ? "vpmaddubsw + vpmaddwd" : HAVE_NEON ? "NEON" : "plain C", peak_int8);
    printf("\nint8 matmul, W (1152, 768) in L2, 1 thread, rows 1..%d: G multiply-adds x 2 /s (%% of the int8 peak):", MAX_N);
    for (int T = 1; T <= MAX_N; T++) printf(" %.0f(%.0f)", cached[T], 100 * cached[T] / peak_int8);
}

int main(int argc, char **argv) {
    BenchOptions o;
    parse_bench(&o, argc, argv);
    if (!strcmp(o.what, "selftest")) return selftest();
    if (!strcmp(o.what, "shapes")) return bench_shapes();
    if (!strcmp(o.what, "busy")) return bench_busy(&o);
    if (!strcmp(o.what, "scale")) return bench_scale(&o);
    if (!strcmp(o.what, "kernels")) {
        double peak, peak512;
        machine_peaks(&peak, &peak512);
        printf("\n");
        return 0;
    }
    if (!o.publish && !strcmp(o.csv, SCRATCH_CSV)) {
        mkdir("build", 0755);
        mkdir(SCRATCH_CSV, 0755);
    }
    int full = !strcmp(o.what, "all"), sweep = !strcmp(o.what, "sweep"), N = o.threads;
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char p15[512], p110[512];
    snprintf(p15, sizeof(p15), "%s/specdec_bench_15M.bin", tmp);
    snprintf(p110, sizeof(p110), "%s/specdec_bench_110M.bin", tmp);
    snprintf(pbig, sizeof(pbig), "%s/specdec_bench_embedded.bin", tmp);
    printf("specdec bench: %s path, 1 and %d threads\n", SIMD_NAME, N);
    int have_pair = access(o.target, R_OK) == 0 && access(o.draft, R_OK) == 0 &&
                    access(o.tokenizer, R_OK) == 0;
    plan_outputs(&o, have_pair);
    // the large target, written once for every block that reads it (all, drafters, tree, runc, llamacpp):
    // the shipped target embedded, zero-padded, in dim 768 x 12 layers (81M parameters,
    // 325 MB; the same logits, so the shipped draft speculates for it)
    const char *runc = getenv("RUNC"), *runq = getenv("RUNQ"); // runq: llama2.c's int8 runq.c
    const char *llamacpp = getenv("LLAMACPP");                   // llama.cpp's tools' directory
    int runc_mode = full || !strcmp(o.what, "runc"), llamacpp_mode = full || !strcmp(o.what, "llamacpp");
    if (llamacpp && *llamacpp && llamacpp_mode && llamacpp_missing(llamacpp)) llamacpp_mode = 0; // said why
    int with_big = have_pair && (full || !strcmp(o.what, "drafters") || !strcmp(o.what, "tree") ||
                                 (runc_mode && ((runc && *runc) || (runq && *runq))) ||
                                 (llamacpp_mode && llamacpp && *llamacpp));
    ThreadPool *pool = build_pool(N);

    double bw = 0, peak = 0, peak512 = 0;
    ModelResult models[8];
    int n_models = 0;
    if (full) {
        machine_peaks(&peak, &peak512);
        bw = bandwidth_gbs((size_t)1 << 30);
        printf("\nmemory read bandwidth (1 GiB, one thread, best pass): %.2f GB/s\n", bw);
        fflush(stdout);
        write_random_checkpoint(p15, &(Config){288, 768, 6, 6, 6, 32000, 256}, 1, 1, 0, 0);
        models[n_models++] = bench_model("random 15M shape", p15, 0, pool, N, peak512, peak);
        remove(p15);
        write_random_checkpoint(p110, &(Config){768, 2048, 12, 12, 12, 32000, 1024}, 1, 1, 0, 0);
        models[n_models++] = bench_model("random 110M shape", p110, 0, pool, N, peak512, peak);
        remove(p110);
        if (have_pair) {
            models[n_models++] = bench_model("shipped target", o.target, 0, pool, N, peak512, peak);
            char name[64];
            snprintf(name, sizeof name, "shipped draft %s", WEIGHTS_NAME[DRAFT_WEIGHTS]);
            models[n_models++] = bench_model(name, o.draft, DRAFT_WEIGHTS, pool, N, peak512, peak);
        }
    }
    if (with_big) { // after the machine's and the models' timings, so its write-back runs under none of them
        write_embedded_checkpoint(pbig, o.target, 3, 12, 0, 0);
        remove_big_at_exit();
    }
    E2E e[128], temps[8];
    int n_e = 0;
    if (!have_pair) {
        printf("SKIP end to end: %s, %s or %s missing (make weights)\n", o.target, o.draft, o.tokenizer);
    } else {
        for (int ti = full ? 0 : 1; ti < 2; ti++) { // 1 thread (all only), then N threads
            int th = ti ? N : 1;
            Transformer target, draft;
            build_transformer(&target, o.target, MAX_ROWS, pool, th);
            build_transformer_as(&draft, o.draft, MAX_ROWS, pool, 1, DRAFT_WEIGHTS); // one thread, as specdec
            Tokenizer tok;
            build_tokenizer(&tok, o.tokenizer, target.config.vocab_size);
            Pair pr = {.target = &target, .draft = &draft, .tok = &tok, .n_new = 256, .reps = 15, .threads = th};
            int first = n_e;
            if (full || sweep) n_e += sweep_k(&pr, "shipped", e + n_e);
            if (ti == 1 && (full || sweep)) {
                write_sweep_k(o.csv, e + first, 18); // the K sweep at t = 0 and 1 (not the auto-only rows)
                for (int i = 0; i < 7; i++) temps[i] = bench_pair(&pr, "shipped", 0.25f * i, 4);
                write_sweep_temp(o.csv, temps, 7);
            }
            if (ti == 1 && (full || !strcmp(o.what, "drafters"))) {
                char store[N_PROMPTS][96];
                const char *fixed[N_PROMPTS];
                memcpy(fixed, PROMPTS, sizeof(fixed));
                if (held_out_prompts(store))
                    printf("prompts: the first words of 4 held-out paragraphs of %s: \"%s\", \"%s\", \"%s\", "
                           "\"%s\"\n", HELD_OUT, PROMPTS[0], PROMPTS[1], PROMPTS[2], PROMPTS[3]);
                else printf("prompts: the fixed four (%s is not there for held-out ones)\n", HELD_OUT);
                const char *medusa = access(o.medusa, R_OK) == 0 ? o.medusa : NULL;
                const char *eagle = access(o.eagle, R_OK) == 0 ? o.eagle : NULL;
                if (!medusa) printf("SKIP Medusa rows: %s missing (make medusa)\n", o.medusa);
                if (!eagle) printf("SKIP EAGLE rows: %s missing (make eagle)\n", o.eagle);
                first = n_e;
                n_e += compare_drafters(&pr, e + n_e, medusa, eagle, "", 1);
                write_drafters(o.csv, "drafters.csv", e + first, n_e - first, 0);
                first = n_e;
                // the same on the shipped target embedded in dim 768 x 12 layers (DRAM-bound), heads padded alike
                char pheads[600], peagle[600];
                snprintf(pheads, sizeof(pheads), "%s.medusa", pbig);
                snprintf(peagle, sizeof(peagle), "%s.eagle", pbig);
                if (medusa) write_embedded_medusa(pheads, medusa, 3);
                if (eagle) write_embedded_eagle(peagle, eagle, 3);
                Transformer big;
                build_transformer(&big, pbig, MAX_ROWS, pool, N);
                Pair bp = {.target = &big, .draft = &draft, .tok = &tok, .n_new = 96, .reps = 3, .threads = N};
                n_e += compare_drafters(&bp, e + n_e, medusa ? pheads : NULL, eagle ? peagle : NULL, "325MB ", 0);
                free_transformer(&big);
                remove(pheads);
                remove(peagle);
                write_drafters(o.csv, "drafters_dram.csv", e + first, n_e - first, strlen("325MB "));
                memcpy(PROMPTS, fixed, sizeof(fixed));
            }
            if (ti == 1 && !strcmp(o.what, "tree")) {
                FILE *csv = open_output(o.csv, "trees.csv", "target,temperature,kind,shape,nodes,speedup,tokens_per_round,r,bound,check");
                compare_trees(&pr, "shipped", csv);
                Transformer big;
                build_transformer(&big, pbig, MAX_ROWS, pool, N);
                Pair bp = {.target = &big, .draft = &draft, .tok = &tok, .n_new = 96, .reps = 3, .threads = N};
                compare_trees(&bp, "embedded 325MB", csv);
                close_output(csv);
                free_transformer(&big);
            }
            if (ti == 1 && (full || !strcmp(o.what, "lenience"))) {
                LenienceRow rows[8] = {0};
                write_lenience(o.csv, rows, sweep_lenience(&pr, rows));
            }
            if (full && ti == 1) {
                Transformer embedded; // the large target (pbig)
                models[n_models++] = bench_model("embedded 325MB target", pbig, 0, pool, N, peak512, peak);
                build_transformer(&embedded, pbig, MAX_ROWS, pool, N);
                Pair big = {.target = &embedded, .draft = &draft, .tok = &tok, .n_new = 64, .reps = 3, .threads = N};
                for (int t2 = 0; t2 < 2; t2++)
                    for (int k = 0; k <= 8; k += 2) e[n_e++] = bench_pair(&big, "embedded 325MB", (float)t2, k);
                free_transformer(&embedded);
                // the same target in int8 (its version-2 export at load, groups of 64: 85 MB)
                models[n_models++] = bench_model("embedded 325MB int8", pbig, WEIGHTS_INT8, pool, N, peak512, peak);
                build_transformer_as(&embedded, pbig, MAX_ROWS, pool, N, WEIGHTS_INT8);
                for (int t2 = 0; t2 < 2; t2++)
                    for (int k = 0; k <= 4; k += 4) e[n_e++] = bench_pair(&big, "embedded 325MB int8", (float)t2, k);
                free_transformer(&embedded);
            }
            free_tokenizer(&tok);
            free_transformer(&target);
            free_transformer(&draft);
        }
    }
    if (full) {
        write_verify_cost(o.csv, models, n_models);
        write_bench_json(o.json, peak, peak512, bw, N, models, n_models, e, n_e);
    }
    if (runc_mode && (!runc || !*runc)) {
        printf("SKIP run.c comparison: give a run.c binary (make bench RUNC=path/to/run)\n");
    } else if (runc_mode) { // the 110M shape, then the shipped target embedded
        char ptok[512];
        snprintf(ptok, sizeof(ptok), "%s/specdec_bench_tok32000.bin", tmp);
        write_random_checkpoint(p110, &(Config){768, 2048, 12, 12, 12, 32000, 1024}, 1, 1, 0, 0);
        write_tokenizer(ptok, 32000);
        compare_runc(runc, "random 110M shape", p110, ptok, pool, N);
        remove(p110);
        remove(ptok);
        if (with_big) compare_runc(runc, "embedded 325MB", pbig, o.tokenizer, pool, N);
    }
    if (runc_mode && runq && *runq && with_big) { // its version-2 export, read by both (int8 target-only)
        char pq[600];
        snprintf(pq, sizeof(pq), "%s.q80", pbig);
        write_q80_checkpoint(pbig, pq);
        compare_runc(runq, "325MB int8 (runq.c)", pq, o.tokenizer, pool, N);
        remove(pq);
    }
    if (llamacpp_mode && (!llamacpp || !*llamacpp))
        printf("SKIP llama.cpp comparison: give the directory of llama.cpp's llama-bench, llama-quantize and "
               "llama-convert-llama2c-to-ggml (make bench LLAMACPP=path/to/llama.cpp/build/bin)\n");
    else if (llamacpp_mode && !with_big)
        printf("SKIP llama.cpp comparison: %s, %s or %s missing (make weights)\n", o.target, o.draft, o.tokenizer);
    else if (llamacpp_mode) compare_llamacpp(llamacpp, pbig, o.tokenizer, pool, N);
    free_pool(pool);
    if (!o.publish && strcmp(o.what, "runc") && strcmp(o.what, "llamacpp"))
        printf("CSVs in %s/, %s/ unchanged: make bench PUBLISH=1 (bench %s --publish) writes them there; "
               "./plot all %s draws these\n", o.csv, PUBLISHED_CSV, o.what, o.csv);
    return 0;
}
