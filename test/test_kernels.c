// test_kernels.c - each math kernel against a naive version, the AVX2 path
// against the scalar path (bit for bit), and the sampler's pieces.
#define TESTING
#include "../specdec.c"
#include "check.h"

static void fill_random(float *v, size_t n, Rng *r) {
    for (size_t i = 0; i < n; i++) v[i] = 2.0f * rng_coin(r) - 1.0f;
}

// matmul over T rows == naive double sum (to rounding), == scalar path (bits),
// == T one-row calls (bits), for sizes that are and are not multiples of 8
static void test_matmul(void) {
    int sizes[][2] = {{1, 1}, {7, 5}, {8, 8}, {13, 9}, {64, 33}, {100, 17}, {172, 64}, {257, 31}};
    Rng r;
    rng_seed(&r, 7);
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        int n = sizes[s][0], d = sizes[s][1];
        for (int T = 1; T <= MAX_ROWS; T++) {
            float *w = xmalloc((size_t)d * n * 4, "w"), *x = xmalloc((size_t)T * n * 4, "x");
            float *o = xmalloc((size_t)T * d * 4, "o"), *os = xmalloc((size_t)T * d * 4, "os");
            float *o1 = xmalloc((size_t)T * d * 4, "o1");
            fill_random(w, (size_t)d * n, &r);
            fill_random(x, (size_t)T * n, &r);
            matmul(o, x, w, T, n, d);
            matmul_scalar(os, x, w, T, n, d);
            for (int t = 0; t < T; t++) matmul(o1 + (size_t)t * d, x + (size_t)t * n, w, 1, n, d);
            double worst = 0;
            for (int t = 0; t < T; t++)
                for (int j = 0; j < d; j++) {
                    double ref = 0;
                    for (int k = 0; k < n; k++) ref += (double)w[(size_t)j * n + k] * x[(size_t)t * n + k];
                    double err = fabs(ref - o[(size_t)t * d + j]) / (1.0 + fabs(ref));
                    if (err > worst) worst = err;
                }
            CHECK(worst < 1e-5, "matmul n=%d d=%d T=%d vs naive double: relative error %.3g", n, d, T, worst);
            CHECK(!memcmp(o, os, (size_t)T * d * 4), "matmul n=%d d=%d T=%d: AVX2 and scalar paths differ", n, d, T);
            CHECK(!memcmp(o, o1, (size_t)T * d * 4), "matmul n=%d d=%d T=%d: differs from %d one-row calls", n, d, T, T);
            free(w); free(x); free(o); free(os); free(o1);
        }
    }
    printf("matmul: n x d in {1x1 .. 257x31}, T = 1..17 (K_MAX+1) vs naive, scalar and one-row calls\n");
}

static void test_dot_rmsnorm_softmax(void) {
    Rng r;
    rng_seed(&r, 8);
    float a[300], b[300], o[300];
    fill_random(a, 300, &r);
    fill_random(b, 300, &r);
    for (int n = 1; n <= 300; n += 13) {
        double ref = 0;
        for (int i = 0; i < n; i++) ref += (double)a[i] * b[i];
        float d = dot(a, b, n), ds = dot_scalar(a, b, n);
        CHECK(fabs(d - ref) < 1e-5 * (1 + fabs(ref)), "dot n=%d: %.9g vs naive %.9g", n, d, ref);
        CHECK(!memcmp(&d, &ds, 4), "dot n=%d: AVX2 %.9g vs scalar %.9g", n, d, ds);
    }
    // rmsnorm: out = w * x / sqrt(mean(x^2) + 1e-5)
    rmsnorm(o, a, b, 1, 300);
    double ss = 0;
    for (int i = 0; i < 300; i++) ss += (double)a[i] * a[i];
    double inv = 1.0 / sqrt(ss / 300 + 1e-5), worst = 0;
    for (int i = 0; i < 300; i++) worst = fmax(worst, fabs(o[i] - b[i] * a[i] * inv));
    CHECK(worst < 1e-5, "rmsnorm vs naive: max error %.3g", worst);
    // softmax sums to 1 and keeps the order
    memcpy(o, a, sizeof(a));
    softmax(o, 300);
    double sum = 0;
    for (int i = 0; i < 300; i++) sum += o[i];
    CHECK(fabs(sum - 1) < 1e-5, "softmax sums to %.9f", sum);
    CHECK(argmax(o, 300) == argmax(a, 300), "softmax keeps the argmax");
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
    // inverse CDF
    float probs[4] = {0.25f, 0.0f, 0.5f, 0.25f};
    CHECK(sample(probs, 4, 0.0f) == 0 && sample(probs, 4, 0.2499f) == 0 && sample(probs, 4, 0.25f) == 2 &&
          sample(probs, 4, 0.7499f) == 2 && sample(probs, 4, 0.75f) == 3 && sample(probs, 4, 0.99999f) == 3,
          "sample() inverse CDF boundaries");
    // RNG: same seed same stream, coins in [0,1)
    Rng a, b;
    rng_seed(&a, 42);
    rng_seed(&b, 42);
    int same = 1, inrange = 1;
    for (int i = 0; i < 1000; i++) {
        float x = rng_coin(&a);
        same &= x == rng_coin(&b);
        inrange &= x >= 0.0f && x < 1.0f;
    }
    CHECK(same && inrange, "rng: same seed same coins, all in [0,1)");
    rng_seed(&b, 43);
    CHECK(rng_coin(&b) != rng_coin(&a), "rng: seeds 42 and 43 differ");
}

// attention_scores == dot_scalar * scale per position, and attention_values ==
// the plain in-order loop, memcmp-equal (the AVX2 path scores 8 positions at
// once with a transposed horizontal sum and keeps outputs in registers);
// both also against double-precision naive sums.
static void test_attention_kernels(void) {
    enum { STRIDE = 72, MAXPOS = 41 };
    static float k[MAXPOS * STRIDE], q[STRIDE], a[MAXPOS], out[STRIDE];
    Rng r;
    rng_seed(&r, 9);
    fill_random(k, MAXPOS * STRIDE, &r);
    fill_random(q, STRIDE, &r);
    int hss[] = {8, 16, 32, 36, 64, 5}, bad_s = 0, bad_v = 0, cases = 0;
    double worst = 0;
    for (int h = 0; h < 6; h++)
        for (int n_pos = 1; n_pos <= MAXPOS; n_pos += 4, cases++) {
            int hs = hss[h];
            attention_scores(a, q, k, STRIDE, n_pos, hs, 0.25f);
            for (int t = 0; t < n_pos; t++) {
                float want = dot_scalar(q, k + t * STRIDE, hs) * 0.25f;
                bad_s += memcmp(&a[t], &want, 4) != 0;
            }
            attention_values(out, a, k, STRIDE, n_pos, hs);
            for (int i = 0; i < hs; i++) {
                float want = 0.0f;
                double ref = 0;
                for (int t = 0; t < n_pos; t++) want += a[t] * k[t * STRIDE + i], ref += (double)a[t] * k[t * STRIDE + i];
                bad_v += memcmp(&out[i], &want, 4) != 0;
                worst = fmax(worst, fabs(out[i] - ref));
            }
        }
    CHECK(bad_s == 0, "attention_scores: %d scores differ from dot_scalar (%d cases)", bad_s, cases);
    CHECK(bad_v == 0, "attention_values: %d outputs differ from the in-order loop", bad_v);
    CHECK(worst < 1e-4, "attention_values vs naive double sums: max error %.3g", worst);
    printf("    attention kernels: scores and values memcmp-equal to the scalar definitions, hs 5..64, "
           "1..41 positions (%d cases)\n", cases);
}

int main(void) {
    printf("specdec kernels (%s path)\n", HAVE_AVX2 ? "AVX2+FMA" : "scalar");
    test_matmul();
    test_dot_rmsnorm_softmax();
    test_attention_kernels();
    test_sampler();
    return check_summary("test_kernels");
}
