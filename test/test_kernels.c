// test_kernels.c - each math kernel against a naive version and against its
// canonical definition (bit for bit), and the sampler's pieces.
#define TESTING
#include "../specdec.c"
#include "harness.h"
#include "check.h"
#include "random_model.h" // Stream: the tests' random numbers

// The matmul's definition, portable C: W (d,n) @ x (T,n) -> out (T,d), panels
// [p0, p1) of m: output column j = 16*panel + lane is the chain over k of
// W[j][k] * x[t][k]; columns at or past d (a panel's padding) are not written.
static void matmul_panels_scalar(float *out, const float *x, int T, const Matrix *m, int p0,
                                           int p1) {
    int n = m->n;
    size_t os = (size_t)m->d;
    for (int i = p0; i < p1; i++)
        for (int j = 0; j < PANEL && i * PANEL + j < m->d; j++)
            for (int t = 0; t < T; t++) {
                const float *xt = x + (size_t)t * n;
                float acc = 0.0f;
                for (int k = 0; k < n; k++) acc = fmaf(m->w[((size_t)i * n + k) * PANEL + j], xt[k], acc);
                out[(size_t)t * os + (size_t)i * PANEL + j] = acc;
            }
}

// W (d,n) @ x (T,n) -> out (T,d), the whole matrix on the calling thread
static void matmul(float *out, const float *x, const Matrix *m, int T) {
    matmul_panels(out, x, T, m, 0, m->n_panels);
}

static void fill_random(float *v, size_t n, Stream *r) {
    for (size_t i = 0; i < n; i++) v[i] = 2.0f * rng_coin(r) - 1.0f;
}

// The canonical matmul, straight from its definition on the row-major W:
// out[t][j] = chain over k of fmaf(W[j][k], x[t][k], acc). W (d,n), x (T,n) -> out (T,d)
static void matmul_definition(float *out, const float *x, const float *w, int T, int n, int d) {
    for (int t = 0; t < T; t++)
        for (int j = 0; j < d; j++) {
            float acc = 0.0f;
            for (int k = 0; k < n; k++) acc = fmaf(w[(size_t)j * n + k], x[(size_t)t * n + k], acc);
            out[(size_t)t * d + j] = acc;
        }
}

// a random W (d, n) in [-1, 1] -> *w (row-major), and packed into m (its floats at *packed)
static void random_matrix(Matrix *m, float **w, float **packed, int d, int n, Stream *r) {
    *w = xmalloc((size_t)d * n * 4, "w");
    fill_random(*w, (size_t)d * n, r);
    *packed = xmalloc_floats_aligned(panels_of(d) * (size_t)n * PANEL, "packed");
    pack_matrix(m, *packed, *w, d, n);
}

// A matmul's result o (T, d) over x (T, n) must equal, bit for bit, its
// definition def, the portable path's os, T one-row calls (also as a streamed
// matrix's, one panel wide), the streamed matrix's T rows (its DRAM tiles), and
// the panels split 3 ways as three threads would compute them. what: "matmul" or "int8 matmul"
static void check_matmul_paths(const char *what, const Matrix *m, const float *x, int T, int n,
                               int d, const float *o, const float *def, const float *os) {
    size_t bytes = (size_t)T * d * 4;
    float *o1 = xmalloc(bytes, "o1"), *osplit = xmalloc(bytes, "osplit"), *ostream = xmalloc(bytes, "ostream");
    float *odram = xmalloc(bytes, "odram");
    Matrix streamed = *m;
    streamed.streamed = 1;
    for (int t = 0; t < T; t++) matmul(o1 + (size_t)t * d, x + (size_t)t * n, m, 1);
    for (int t = 0; t < T; t++) matmul(ostream + (size_t)t * d, x + (size_t)t * n, &streamed, 1);
    matmul(odram, x, &streamed, T);
    for (int th = 0; th < 3; th++) {
        int lo, hi;
        share(&lo, &hi, m->n_panels, th, 3);
        matmul_panels(osplit, x, T, m, lo, hi);
    }
    CHECK(!memcmp(o, def, bytes), "%s n=%d d=%d T=%d differs from its definition", what, n, d, T);
    CHECK(!memcmp(o, os, bytes), "%s n=%d d=%d T=%d: SIMD and scalar paths differ", what, n, d, T);
    CHECK(!memcmp(o, o1, bytes), "%s n=%d d=%d T=%d: differs from %d one-row calls", what, n, d, T, T);
    CHECK(!memcmp(o, ostream, bytes), "%s n=%d d=%d T=%d: differs from %d streamed one-row calls", what, n, d, T, T);
    CHECK(!memcmp(o, odram, bytes), "%s n=%d d=%d T=%d: differs as a streamed matrix's", what, n, d, T);
    CHECK(!memcmp(o, osplit, bytes), "%s n=%d d=%d T=%d: a 3-way panel split differs", what, n, d, T);
    xfree(o1); xfree(osplit); xfree(ostream); xfree(odram);
}

// matmul over T rows (every tile shape: T = 1..17 rows, panels in wide tiles
// and single ones, a last panel cut by d) == the definition (bits), == the
// scalar panel path (bits), == T one-row calls (bits), == any split of the
// panels between threads (bits), and close to a double-precision sum
static void test_matmul(void) {
    int sizes[][2] = {{1, 1}, {7, 5}, {8, 8}, {13, 9}, {64, 33}, {100, 17}, {172, 64},
                      {257, 31}, {256, 112}, {40, 200}};
    Stream r;
    stream_seed(&r, 7);
    int cases = 0;
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        int n = sizes[s][0], d = sizes[s][1];
        Matrix m;
        float *w, *packed;
        random_matrix(&m, &w, &packed, d, n, &r);
        for (int T = 1; T <= TREE_MAX; T++, cases++) {
            float *x = xmalloc((size_t)T * n * 4, "x"), *o = xmalloc((size_t)T * d * 4, "o");
            float *def = xmalloc((size_t)T * d * 4, "def"), *os = xmalloc((size_t)T * d * 4, "os");
            fill_random(x, (size_t)T * n, &r);
            matmul(o, x, &m, T);
            matmul_definition(def, x, w, T, n, d);
            matmul_panels_scalar(os, x, T, &m, 0, m.n_panels);
            check_matmul_paths("matmul", &m, x, T, n, d, o, def, os);
            double worst = 0;
            for (int t = 0; t < T; t++)
                for (int j = 0; j < d; j++) {
                    double ref = 0;
                    for (int k = 0; k < n; k++) ref += (double)w[(size_t)j * n + k] * x[(size_t)t * n + k];
                    double err = fabs(ref - o[(size_t)t * d + j]) / (1.0 + fabs(ref));
                    if (err > worst) worst = err;
                }
            CHECK(worst < 1e-5, "matmul n=%d d=%d T=%d vs naive double: relative error %.3g", n, d, T, worst);
            xfree(x); xfree(o); xfree(def); xfree(os);
        }
        xfree(w); xfree(packed);
    }
    printf("matmul: %d cases (n x d from 1x1 to 257x31, T = 1..%d rows) memcmp-equal to the chain "
           "definition, the scalar path, one-row calls (streamed too) and a 3-way split\n", cases, TREE_MAX);
}

// int8 quantisation of one group v (gs) as version 2 defines it, from the
// words: s = max|v| / 127, q[k] = rint(v[k] / s) (0 where s is 0)
static float q8_definition_group(int *q, const float *v, int gs) {
    float amax = 0.0f;
    for (int k = 0; k < gs; k++) if (fabsf(v[k]) > amax) amax = fabsf(v[k]);
    float s = amax / 127.0f;
    for (int k = 0; k < gs; k++) q[k] = s > 0.0f ? (int)rintf(v[k] / s) : 0;
    return s;
}

// W (d, n) row-major floats -> m, quantised in groups of gs (q80_group) and
// packed into a new allocation (returned)
static void *pack_q8(Matrix *m, const float *w, int d, int n, int gs) {
    int8_t *q = xmalloc((size_t)d * n, "q");
    float *s = xmalloc((size_t)d * (n / gs) * sizeof(float), "s");
    for (size_t g = 0; g < (size_t)d * (n / gs); g++) s[g] = q80_group(q + g * gs, w + g * gs, gs);
    void *packed = xmalloc_aligned(matrix_bytes(d, n, gs), 64, "packed");
    CHECK(place_matrix(m, packed, d, n, gs, 0) == (char *)packed + matrix_bytes(d, n, gs) && m->w8 == packed,
          "place_matrix int8 n=%d d=%d gs=%d", n, d, gs);
    for (int j = 0; j < d; j += PANEL) // blocks of rows, the last cut by d, as the load packs them
        pack_block(m, j, d - j < PANEL ? d - j : PANEL, q + (size_t)j * n, s + (size_t)j * (n / gs));
    xfree(q); xfree(s);
    return packed;
}

// q80_group at the edges against its comment, word for word: a group holding a NaN or
// an inf gets s = NaN and zeros; else s = max|v| / 127 and q = rint(v / s) clamped to
// +-127 (a subnormal s can put v / s past 127), zeros where s is 0. Groups scaled from
// 2^-160 to 2^127 (s subnormal, s at 2^-126 exactly, values near FLT_MAX), -0, one
// denormal, and NaN or +-inf at every position.
static void test_q80_edges(void) {
    Stream r;
    stream_seed(&r, 13);
    int cases = 0;
    for (int gs = 4; gs <= 64; gs *= 4) {
        float v[64];
        int8_t q[64];
        for (int c = 0; c < 300 + 3 * gs; c++, cases++) {
            fill_random(v, (size_t)gs, &r);
            int e = c < 288 ? c - 160 : 0;
            for (int k = 0; k < gs; k++) v[k] = ldexpf(v[k], e);
            if (c == 288) v[0] = 127.0f * 0x1p-126f, v[1] = -v[0]; // amax / 127 = 2^-126: the first normal s
            if (c == 289) for (int k = 0; k < gs; k++) v[k] = -0.0f;
            if (c == 290) for (int k = 0; k < gs; k++) v[k] = k == gs / 2 ? 1e-45f : 0.0f;
            if (c == 291) v[gs - 1] = 3.4e38f;
            if (c >= 300) v[(c - 300) / 3] = (c - 300) % 3 == 0 ? NAN : (c - 300) % 3 == 1 ? INFINITY : -INFINITY;
            int finite = 1;
            float amax = 0.0f;
            for (int k = 0; k < gs; k++) finite &= isfinite(v[k]), amax = fmaxf(amax, fabsf(v[k]));
            float want = finite ? amax / 127.0f : NAN, got = q80_group(q, v, gs);
            int same = finite ? got == want : isnan(got);
            for (int k = 0; k < gs; k++) {
                float x = finite && want > 0.0f ? rintf(v[k] / want) : 0.0f;
                same &= q[k] == (int8_t)(x > 127.0f ? 127 : x < -127.0f ? -127 : x);
            }
            CHECK(same, "q80_group gs=%d case %d (scale 2^%d): s %g, expected %g, or a value differs", gs, c, e, got, want);
        }
    }
    printf("q80_group: %d edge groups (s subnormal, at 2^-126, near FLT_MAX, -0, NaN and inf) as its comment says\n", cases);
}

// The same checks for int8 weights (an int8 model: groups of gs with their
// scales, q8_group_at): == the definition above, one-row calls (streamed too)
// and a 3-way split, for group sizes 4..64 and a last panel cut by d; within
// the quantisation's error of the float product; zero and denormal rows give
// 0, a row holding NaN gives NaN; an all-zero weight group has scale 0.
static void test_matmul_int8(void) {
    int sizes[][3] = {{4, 1, 4}, {8, 5, 4}, {64, 33, 64}, {96, 112, 32}, {96, 130, 8}, {256, 96, 64},
                      {40, 200, 8}, {704, 48, 64}, {172, 20, 4}};
    Stream r;
    stream_seed(&r, 9);
    int cases = 0;
    double worst_rel = 0;
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        int n = sizes[s][0], d = sizes[s][1], gs = sizes[s][2];
        Matrix m;
        float *w = xmalloc((size_t)d * n * 4, "w");
        fill_random(w, (size_t)d * n, &r);
        for (int k = 0; k < gs; k++) w[k] = 0.0f; // an all-zero group
        void *packed = pack_q8(&m, w, d, n, gs);
        for (size_t g = 0; g < (size_t)d * n / gs; g++) { // q80_group (the naive loop's) is the words' definition
            int8_t q[64];
            int qd[64], same = q80_group(q, w + g * gs, gs) == q8_definition_group(qd, w + g * gs, gs);
            for (int k = 0; k < gs; k++) same &= q[k] == qd[k];
            CHECK(same, "q80_group n=%d gs=%d, group %zu differs from the definition", n, gs, g);
        }
        CHECK(*(const float *)(const void *)(q8_group_at(&m, 0, 0) + gs * PANEL) == 0.0f, "an all-zero group's scale");
        for (int T = 1; T <= TREE_MAX; T++, cases++) {
            size_t bytes = (size_t)T * d * 4;
            float *x = xmalloc((size_t)T * n * 4, "x"), *o = xmalloc(bytes, "o"), *def = xmalloc(bytes, "def");
            fill_random(x, (size_t)T * n, &r);
            if (T == 3) memset(x + n, 0, (size_t)n * 4); // a zero row
            if (T == 4) // a row of denormals (max / 127 underflows to 0): quantised to zeros
                for (int k = 0; k < n; k++) x[(size_t)2 * n + k] = 1e-44f * x[(size_t)2 * n + k];
            matmul(o, x, &m, T);
            q8_matmul_naive(def, x, w, T, n, d, gs); // specdec.c's reference loop
            check_matmul_paths("int8 matmul", &m, x, T, n, d, o, def, def);
            for (int t = 0; t < T; t++)
                for (int j = 0; j < d; j++) {
                    double ref = 0, norm = 0;
                    for (int k = 0; k < n; k++) {
                        double a = w[(size_t)j * n + k], b = x[(size_t)t * n + k];
                        ref += a * b;
                        norm += fabs(a * b);
                    }
                    double rel = fabs(ref - o[(size_t)t * d + j]) / (norm + 1e-30);
                    if (norm > 1e-30 && rel > worst_rel) worst_rel = rel;
                    if ((T == 3 && t == 1) || (T == 4 && t == 2))
                        CHECK(o[(size_t)t * d + j] == 0.0f, "int8: a zero or denormal row gave %g", o[(size_t)t * d + j]);
                }
            xfree(x); xfree(o); xfree(def);
        }
        float *x = xmalloc((size_t)n * 4, "x"), *o = xmalloc((size_t)d * 4, "o");
        fill_random(x, (size_t)n, &r);
        x[n / 2] = NAN;
        matmul(o, x, &m, 1);
        int nans = 0;
        for (int j = 0; j < d; j++) nans += isnan(o[j]) != 0;
        CHECK(nans == d, "int8 matmul n=%d d=%d: a NaN input gave %d NaN outputs of %d", n, d, nans, d);
        xfree(x); xfree(o);
        xfree(w); xfree(packed);
    }
    // each product's error is at most half a step of each factor: |dq| <= 0.5/127 of the group's max
    CHECK(worst_rel < 0.02, "int8 matmul: error %.4f of sum |w x| against the float product", worst_rel);
    printf("int8 matmul: %d cases (n x d from 4x1 to 704x48, groups of 4..64, T = 1..%d rows) "
           "memcmp-equal to the group definition, one-row calls and a 3-way split; error at most %.4f "
           "of sum |w x|; zero and denormal rows -> 0, NaN -> NaN\n", cases, TREE_MAX, worst_rel);
}

// a deterministic spread of values in [-1, 1] for test inputs
static float rng_sin(int i) { return sinf((float)i * 0.7f); }

// exp_canonical within 2 ulp of double exp; the vector path (through
// exp_and_sum and swiglu) gives its bits; edges: 0, inf, NaN
static void test_exp(void) {
    double worst = 0;
    int bad_vec = 0, n = 0;
    static float xs[4096], ys[4096];
    for (int i = 0; i < 4096; i++) xs[i] = -87.0f + 175.25f * (float)i / 4095.0f;
    for (int i = 0; i < 4096; i++, n++) {
        float y = exp_canonical(xs[i]);
        double want = exp((double)xs[i]);
        double ulp = want * FLT_EPSILON;
        if (want < FLT_MAX && fabs(y - want) / ulp > worst) worst = fabs(y - want) / ulp;
    }
    memcpy(ys, xs, sizeof(xs));
    float sum = exp_and_sum(ys, 4096, 0.0f); // exp(x - 0), vectorised
    for (int i = 0; i < 4096; i++) {
        float want = exp_canonical(xs[i]);
        bad_vec += memcmp(&ys[i], &want, 4) != 0;
    }
    float want_sum = sum_lanes8((float[8]){0}, ys, 4096);
    CHECK(worst <= 2.0, "exp_canonical vs exp: worst error %.2f ulp over [-87, 88.25]", worst);
    CHECK(bad_vec == 0, "exp_and_sum: %d of %d exps differ from exp_canonical", bad_vec, n);
    CHECK(!memcmp(&sum, &want_sum, 4), "exp_and_sum: sum %.9g, lanes8 sum %.9g", sum, want_sum);
    // every length 1..40 (16-wide blocks, an 8-wide block, the tail), special values included
    int bad_len = 0;
    for (int len = 1; len <= 40; len++) {
        float v[40], e[40];
        for (int i = 0; i < len; i++) {
            const float special[6] = {NAN, INFINITY, -INFINITY, -100.0f, 100.0f, 88.3f};
            v[i] = i % 7 == 6 ? special[(len + i) % 6] : 30.0f * rng_sin(len * 41 + i);
        }
        memcpy(e, v, sizeof(v));
        float s = exp_and_sum(e, len, 0.0f), want_s = 0;
        for (int i = 0; i < len; i++) {
            float want = exp_canonical(v[i]);
            bad_len += isnan(want) ? !isnan(e[i]) : memcmp(&e[i], &want, 4) != 0;
        }
        want_s = sum_lanes8((float[8]){0}, e, len);
        bad_len += isnan(want_s) ? !isnan(s) : memcmp(&s, &want_s, 4) != 0;
    }
    CHECK(bad_len == 0, "exp_and_sum over lengths 1..40 with NaN, inf, -inf, +-100, 88.3: %d "
          "values or sums differ from exp_canonical and the lanes8 sum", bad_len);
    CHECK(exp_canonical(0.0f) == 1.0f && exp_canonical(-100.0f) == 0.0f &&
          exp_canonical(100.0f) == INFINITY && isnan(exp_canonical(NAN)) &&
          exp_canonical(-INFINITY) == 0.0f, "exp_canonical edges: 0 -> 1, -100 -> 0, 100 -> inf, NaN -> NaN");
    // swiglu: every vector path (16, 8 lanes) and the tail == the scalar formula, n = 1..47
    static float h1[47], h3[47], out[47];
    Stream r;
    stream_seed(&r, 4);
    for (int i = 0; i < 47; i++) h1[i] = 20.0f * rng_coin(&r) - 10.0f, h3[i] = rng_coin(&r);
    h1[5] = NAN, h1[13] = -INFINITY, h1[21] = 100.0f, h1[29] = -100.0f; // edges in each path
    int bad_swiglu = 0, outputs = 0;
    for (int len = 1; len <= 47; len++) {
        swiglu(out, h1, h3, len);
        for (int i = 0; i < len; i++, outputs++) {
            float v = h1[i];
            v *= 1.0f / (1.0f + exp_canonical(-v));
            float want = v * h3[i];
            bad_swiglu += isnan(want) ? !isnan(out[i]) : memcmp(&out[i], &want, 4) != 0;
        }
    }
    CHECK(bad_swiglu == 0, "swiglu: %d of %d outputs (n = 1..47, NaN, -inf, +-100 among the "
          "inputs) differ from silu(h1) * h3", bad_swiglu, outputs);
    printf("exp: within %.2f ulp of exp on [-87, 88.25]; the vector path gives the scalar bits (%d values)\n",
           worst, n);
}

static void test_dot_rmsnorm_softmax(void) {
    Stream r;
    stream_seed(&r, 8);
    float a[300], b[300], o[300];
    fill_random(a, 300, &r);
    fill_random(b, 300, &r);
    for (int n = 1; n <= 300; n += 13) {
        double ref = 0;
        for (int i = 0; i < n; i++) ref += (double)a[i] * b[i];
        float d = dot(a, b, n);
        CHECK(fabs(d - ref) < 1e-5 * (1 + fabs(ref)), "dot n=%d: %.9g vs naive %.9g", n, d, ref);
        float m = max_of(a, n), mw = a[0];
        for (int i = 1; i < n; i++)
            if (a[i] > mw) mw = a[i];
        CHECK(m == mw, "max_of n=%d: %g, want %g", n, m, mw);
    }
    // rmsnorm: out = w * x / sqrt(mean(x^2) + 1e-5)
    rmsnorm(o, a, b, 1, 300);
    double ss = 0;
    for (int i = 0; i < 300; i++) ss += (double)a[i] * a[i];
    double inv = 1.0 / sqrt(ss / 300 + 1e-5), worst = 0;
    for (int i = 0; i < 300; i++) worst = fmax(worst, fabs(o[i] - b[i] * a[i] * inv));
    CHECK(worst < 1e-5, "rmsnorm vs naive: max error %.3g", worst);
    // softmax sums to 1, keeps the order, and is close to the double formula
    memcpy(o, a, sizeof(a));
    softmax(o, 300);
    double sum = 0, z = 0, err = 0;
    for (int i = 0; i < 300; i++) sum += o[i], z += exp((double)a[i]);
    for (int i = 0; i < 300; i++) {
        double e = fabs(o[i] - exp((double)a[i]) / z);
        if (e > err) err = e;
    }
    CHECK(fabs(sum - 1) < 1e-5, "softmax sums to %.9f", sum);
    CHECK(err < 1e-6, "softmax vs double formula: max error %.3g", err);
    CHECK(argmax(o, 300) == argmax(a, 300), "softmax keeps the argmax");
}

// The textbook top-k/top-p: sort every token (probability descending, index
// ascending), keep k, then the shortest prefix reaching top_p, renormalise.
static int cmp_naive(const void *a, const void *b) {
    const ProbIndex *x = a, *y = b;
    if (x->prob != y->prob) return x->prob > y->prob ? -1 : 1;
    return x->index - y->index;
}

static void truncate_naive(float *out, const float *probs, int n, float top_p, int top_k) {
    ProbIndex *o = malloc((size_t)n * sizeof(*o));
    int m = 0;
    for (int i = 0; i < n; i++) if (probs[i] > 0) o[m++] = (ProbIndex){probs[i], i};
    qsort(o, (size_t)m, sizeof(*o), cmp_naive);
    int keep = top_k > 0 && top_k < m ? top_k : m;
    float mass = 0;
    for (int i = 0; i < keep && top_p < 1; i++)
        if ((mass += o[i].prob) >= top_p) { keep = i + 1; break; }
    mass = 0;
    for (int i = 0; i < keep; i++) mass += o[i].prob;
    for (int i = 0; i < n; i++) out[i] = 0;
    for (int i = 0; i < keep; i++) out[o[i].index] = o[i].prob / mass;
    free(o);
}

// truncate_distribution (only the candidates above the cutoff sorted) == the
// textbook full sort, bit for bit, on peaked and flat distributions with ties.
static void test_truncate_vs_sort(void) {
    enum { N = 2048 };
    static float p[N], a[N], b[N];
    const float top_ps[4] = {0.5f, 0.9f, 0.99f, 1.0f};
    const int top_ks[3] = {0, 5, 40};
    Stream r;
    stream_seed(&r, 9);
    int cases = 0, diff = 0;
    for (int c = 0; c < 40; c++) {
        float sum = 0, sharp = 1.0f + (float)(c % 8);
        for (int i = 0; i < N; i++) { // every 5th token repeats its neighbour: ties
            p[i] = i % 5 == 4 ? p[i - 1] : powf(rng_coin(&r), sharp * 6.0f);
            sum += p[i];
        }
        for (int i = 0; i < N; i++) p[i] /= sum;
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 3; k++) {
                if (top_ps[j] >= 1.0f && top_ks[k] == 0) continue;
                Sampler s;
                build_sampler(&s, N, 1.0f, top_ps[j], top_ks[k]);
                memcpy(a, p, sizeof(p));
                truncate_distribution(&s, a);
                truncate_naive(b, p, N, top_ps[j], top_ks[k]);
                diff += memcmp(a, b, sizeof(a)) != 0;
                cases++;
                free_sampler(&s);
            }
    }
    CHECK(diff == 0, "top-p/top-k over the candidates == full sort, bit for bit: %d of %d cases differ",
          diff, cases);
}

static void test_sampler(void) {
    // argmax: lowest index wins ties
    float ties[5] = {0.1f, 0.7f, 0.2f, 0.7f, 0.7f};
    CHECK(argmax(ties, 5) == 1, "argmax of ties is %d, want 1", argmax(ties, 5));
    // temperature 0 -> one-hot
    Sampler s;
    float logits[6] = {1, 3, 2, 3, 0, -1}, p[6];
    build_sampler(&s, 6, 0.0f, 1.0f, 0);
    probs_from_logits(&s, p, logits);
    CHECK(p[1] == 1 && p[0] == 0 && p[3] == 0, "t=0 gives one-hot at the first argmax");
    free_sampler(&s);
    // temperature 1, top-p 0.7 on logits giving (0.5, 0.25, 0.125, ...): keeps {0, 1}
    float lg[4] = {logf(0.5f), logf(0.25f), logf(0.125f), logf(0.125f)};
    build_sampler(&s, 4, 1.0f, 0.7f, 0);
    probs_from_logits(&s, p, lg);
    CHECK(fabsf(p[0] - 2.0f / 3) < 1e-6 && fabsf(p[1] - 1.0f / 3) < 1e-6 && p[2] == 0 && p[3] == 0,
          "top-p 0.7 of (.5 .25 .125 .125) -> (%.4f %.4f %.4f %.4f), want (2/3 1/3 0 0)", p[0], p[1], p[2], p[3]);
    free_sampler(&s);
    // top-k 3 with a tie at the boundary: lowest index kept
    build_sampler(&s, 4, 1.0f, 1.0f, 3);
    probs_from_logits(&s, p, lg);
    CHECK(p[2] > 0 && p[3] == 0, "top-k 3 keeps index 2 over its tie 3: (%g %g %g %g)", p[0], p[1], p[2], p[3]);
    free_sampler(&s);
    // a top-p below every token's mass on a flat distribution keeps the argmax
    float flat[4] = {0.0f, 0.01f, 0.0f, 0.0f};
    build_sampler(&s, 4, 1.0f, 1e-6f, 0);
    probs_from_logits(&s, p, flat);
    CHECK(p[1] == 1.0f && p[0] == 0 && p[2] == 0 && p[3] == 0, "top-p 1e-6: (%g %g %g %g), want one-hot at 1",
          p[0], p[1], p[2], p[3]);
    free_sampler(&s);
    test_truncate_vs_sort();
    // inverse CDF
    float probs[4] = {0.25f, 0.0f, 0.5f, 0.25f};
    CHECK(sample(probs, 4, 0.0f) == 0 && sample(probs, 4, 0.2499f) == 0 && sample(probs, 4, 0.25f) == 2 &&
          sample(probs, 4, 0.7499f) == 2 && sample(probs, 4, 0.75f) == 3 && sample(probs, 4, 0.99999f) == 3,
          "sample() inverse CDF boundaries");
    // RNG: same seed same stream, coins in [0,1), coins looked up by position
    Stream a, b;
    stream_seed(&a, 42);
    stream_seed(&b, 42);
    int same = 1, inrange = 1;
    for (int i = 0; i < 1000; i++) {
        float x = rng_coin(&a);
        same &= x == rng_coin(&b);
        inrange &= x >= 0.0f && x < 1.0f;
    }
    CHECK(same && inrange, "rng: same seed same coins, all in [0,1)");
    stream_seed(&b, 43);
    CHECK(rng_coin(&b) != rng_coin(&a), "rng: seeds 42 and 43 differ");
    stream_seed(&a, 42);
    float c1 = coin_at(&a.rng, 17, COIN_ACCEPT);
    for (int i = 0; i < 100; i++) rng_coin(&a); // the stream does not move position coins
    CHECK(c1 == coin_at(&a.rng, 17, COIN_ACCEPT) && c1 != coin_at(&a.rng, 17, COIN_DRAW) &&
          c1 != coin_at(&a.rng, 18, COIN_ACCEPT), "coin_at: a function of (seed, position, purpose) alone");
    // coins are uniform: 64 bins of 64000 position coins, chi-square below its 1e-6 critical value
    long bins[64] = {0};
    for (int i = 0; i < 64000; i++) bins[(int)(coin_at(&a.rng, i / 3, i % 3) * 64)]++;
    double chi2 = 0;
    for (int i = 0; i < 64; i++) chi2 += (bins[i] - 1000.0) * (bins[i] - 1000.0) / 1000.0;
    CHECK(chi2 < 130.0, "coin_at: chi-square of 64 bins = %.1f (critical 130 at p = 1e-6)", chi2);
}

// attention_scores and attention_values memcmp-equal to their chain
// definitions on the blocked key layout, for every tile shape (1..6 query
// vectors, blocks in wide tiles and single ones), and close to double sums
static void test_attention_kernels(void) {
    enum { MAXPOS = 48, MAXHS = 72 };
    static float kc[MAXPOS * MAXHS], v[MAXPOS * MAXHS], q[6][MAXHS], s[6][MAXPOS], out[6][MAXHS];
    static float e[6][MAXPOS];
    Stream r;
    stream_seed(&r, 9);
    fill_random(kc, MAXPOS * MAXHS, &r);
    fill_random(v, MAXPOS * MAXHS, &r);
    fill_random(&q[0][0], 6 * MAXHS, &r);
    fill_random(&e[0][0], 6 * MAXPOS, &r);
    int hss[] = {8, 16, 32, 36, 64, 6}, bad_s = 0, bad_v = 0, cases = 0;
    double worst = 0;
    for (int h = 0; h < 6; h++)
        for (int Q = 1; Q <= 6; Q++)
            for (int n_pos = 1; n_pos <= MAXPOS; n_pos += 5, cases++) {
                int hs = hss[h], blocks = (n_pos + LANES - 1) / LANES;
                const float *qp[6];
                float *sp[6], *op[6];
                const float *ep[6];
                for (int i = 0; i < 6; i++) qp[i] = q[i], sp[i] = s[i], op[i] = out[i], ep[i] = e[i];
                attention_scores(sp, qp, Q, kc, blocks, hs);
                attention_values(op, ep, Q, v, n_pos, hs);
                for (int i = 0; i < Q; i++) {
                    for (int t = 0; t < LANES * blocks; t++) {
                        float want = 0.0f;
                        for (int c = 0; c < hs; c++)
                            want = fmaf(kc[((size_t)(t / LANES) * hs + c) * LANES + t % LANES], q[i][c], want);
                        bad_s += memcmp(&s[i][t], &want, 4) != 0;
                    }
                    for (int c = 0; c < hs; c++) {
                        float want = 0.0f;
                        double ref = 0;
                        for (int t = 0; t < n_pos; t++)
                            want = fmaf(v[t * hs + c], e[i][t], want), ref += (double)e[i][t] * v[t * hs + c];
                        bad_v += memcmp(&out[i][c], &want, 4) != 0;
                        worst = fmax(worst, fabs(out[i][c] - ref));
                    }
                }
            }
    CHECK(bad_s == 0, "attention_scores: %d scores differ from their chain definition (%d cases)", bad_s, cases);
    CHECK(bad_v == 0, "attention_values: %d outputs differ from their chain definition", bad_v);
    CHECK(worst < 1e-4, "attention_values vs naive double sums: max error %.3g", worst);
    printf("attention kernels: scores and values memcmp-equal to their definitions, hs 6..64, 1..6 "
           "query vectors, 1..%d positions (%d cases)\n", MAXPOS, cases);
}

int main(void) {
    printf("specdec kernels (%s path)\n", SIMD_NAME);
    test_matmul();
    test_matmul_int8();
    test_q80_edges();
    test_exp();
    test_dot_rmsnorm_softmax();
    test_attention_kernels();
    test_sampler();
    return check_summary("test_kernels");
}
