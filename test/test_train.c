// test_train.c - tests of the trainer, trainer/train.c and trainer/tokenizer.c (make test-train):
//   the matmul kernel against a double-precision reference, at 1, 2, 3 threads;
//   every layer's backward against finite differences; the whole model's
//   gradient along random directions; a tiny model overfitting one batch;
//   training determinism and kill/resume; Medusa heads (their gradient,
//   training, medusa.bin, kill/resume); the EAGLE-style drafter (its
//   gradient through the unrolled steps, training, eagle.bin, kill/resume);
//   the corpus reader; the tokenizer,
//   its file format, and the encoder against a direct llama2.c-style loop;
//   ./train quantize's bytes, and its OUT through the file registry.
// Each check prints what it compared; the exit status is the failure count.
#ifndef TESTING
#define TESTING
#endif
#include "../trainer/train.c"
#include "train_check.h"
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>


static void fill_normal(float *x, size_t n, float std, Rng *r) {
    for (size_t i = 0; i < n; i++) x[i] = std * rng_normal(r);
}

static float *normal_array(size_t n, float std, Rng *r) {
    float *x = xmalloc(n * sizeof(float));
    fill_normal(x, n, std, r);
    return x;
}

// sum_i a[i] b[i] in double: the scalar "loss" whose gradient is b
static double dot_double(const float *a, const float *b, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

// ----------------------------------------------------------------------------
// finite differences: 5-point stencil, error O(h^4), in float with the loss
// summed in double; compared as ||numeric - analytic|| / (||numeric|| + ||analytic||)

typedef double (*LossFn)(void *ctx);

static double stencil(LossFn f, void *ctx, float *x, float h) {
    float x0 = *x;
    *x = x0 + h; double p1 = f(ctx);
    *x = x0 - h; double m1 = f(ctx);
    *x = x0 + 2 * h; double p2 = f(ctx);
    *x = x0 - 2 * h; double m2 = f(ctx);
    *x = x0;
    return (8.0 * (p1 - m1) - (p2 - m2)) / (12.0 * h);
}

// Check dx (analytic) against finite differences on up to 64 elements of x.
static void gradcheck(const char *name, LossFn f, void *ctx, float *x, const float *dx, size_t n, float h) {
    double dd = 0.0, nn = 0.0, aa = 0.0;
    size_t step = n > 64 ? n / 64 : 1;
    for (size_t i = 0; i < n; i += step) {
        double num = stencil(f, ctx, &x[i], h);
        dd += (num - dx[i]) * (num - dx[i]);
        nn += num * num;
        aa += (double)dx[i] * dx[i];
    }
    double rel = sqrt(dd) / (sqrt(nn) + sqrt(aa) + 1e-30);
    check(rel < 1e-3 && aa > 0, "gradient %-26s relative error %.2e over %zu elements (|grad| %.3g)", name, rel,
          (n + step - 1) / step, sqrt(aa));
}

// ----------------------------------------------------------------------------
// matmul kernel

static void test_gemm(void) {
    Rng r = {1};
    size_t N = 29; // 4 whole tiles of rows and an edge of 5; 35 = 2 tiles of columns + 3
    int IC = 300, OC = 35; // K = 300 spans two BLOCK_K chunks
    float *inp = normal_array(N * IC, 1, &r), *w = normal_array((size_t)OC * IC, 1, &r);
    float *dout = normal_array(N * OC, 1, &r), *wt = xmalloc((size_t)OC * IC * sizeof(float));
    transpose(wt, w, (size_t)OC, (size_t)IC); // the forward takes W^T (IC,OC), as the Model keeps it
    float *out[3], *dinp[3], *dw[3];
    for (int t = 0; t < 3; t++) {
        out[t] = xcalloc(N * OC, sizeof(float));
        dinp[t] = xcalloc(N * IC, sizeof(float));
        dw[t] = xcalloc((size_t)OC * IC, sizeof(float));
        matmul_forward(out[t], inp, wt, N, IC, OC, t + 1); // 1, 2, 3 threads
        matmul_backward(dinp[t], dw[t], dout, inp, w, N, IC, OC, t + 1);
    }
    double e_out = 0, e_dinp = 0, e_dw = 0;
    for (size_t n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double s = 0;
            for (int i = 0; i < IC; i++) s += (double)inp[n * IC + i] * w[(size_t)o * IC + i];
            e_out = fmax(e_out, fabs(s - out[0][n * OC + o]));
        }
    for (size_t n = 0; n < N; n++)
        for (int i = 0; i < IC; i++) {
            double s = 0;
            for (int o = 0; o < OC; o++) s += (double)dout[n * OC + o] * w[(size_t)o * IC + i];
            e_dinp = fmax(e_dinp, fabs(s - dinp[0][n * IC + i]));
        }
    for (int o = 0; o < OC; o++)
        for (int i = 0; i < IC; i++) {
            double s = 0;
            for (size_t n = 0; n < N; n++) s += (double)dout[n * OC + o] * inp[n * IC + i];
            e_dw = fmax(e_dw, fabs(s - dw[0][(size_t)o * IC + i]));
        }
    check(e_out < 1e-3 && e_dinp < 1e-3 && e_dw < 1e-3,
          "matmul (29x300)@(35x300)^T vs double: max abs error out %.1e dinp %.1e dweight %.1e", e_out, e_dinp, e_dw);
    int same = 1;
    for (int t = 1; t < 3; t++)
        same &= !memcmp(out[0], out[t], N * OC * 4) && !memcmp(dinp[0], dinp[t], N * IC * 4) &&
                !memcmp(dw[0], dw[t], (size_t)OC * IC * 4);
    check(same, "matmul forward and backward bit-identical at 1, 2 and 3 threads");
    for (int t = 0; t < 3; t++) { free(out[t]); free(dinp[t]); free(dw[t]); }
    free(inp); free(w); free(wt); free(dout);
}

// ----------------------------------------------------------------------------
// layer gradients: loss = sum(out * r) for a fixed random r, so dout = r

typedef struct {
    float *out, *r, *scratch;   // scratch: layer-specific (rstd, att, ...)
    float *a, *b, *c;           // the inputs
    int *tokens;
    size_t N;
    int C, V;
    int B, T, NH, NKV, hs;
    float *cos_t, *sin_t;
} LayerCase;

static double loss_matmul(void *p) {
    LayerCase *l = p;
    transpose(l->scratch, l->b, (size_t)l->V, (size_t)l->C); // W^T, as the Model keeps it
    matmul_forward(l->out, l->a, l->scratch, l->N, l->C, l->V, 1);
    return dot_double(l->out, l->r, l->N * l->V);
}

static void test_matmul_grad(Rng *rng) {
    LayerCase l = {0};
    l.N = 7; l.C = 18; l.V = 20; // C = IC, V = OC; tiles and edges both
    l.a = normal_array(l.N * l.C, 1, rng); l.b = normal_array((size_t)l.V * l.C, 1, rng);
    l.out = xmalloc(l.N * l.V * 4); l.r = normal_array(l.N * l.V, 1, rng);
    l.scratch = xmalloc((size_t)l.V * l.C * 4);
    float *da = xcalloc(l.N * l.C, 4), *db = xcalloc((size_t)l.V * l.C, 4);
    matmul_backward(da, db, l.r, l.a, l.b, l.N, l.C, l.V, 1);
    gradcheck("matmul d(input)", loss_matmul, &l, l.a, da, l.N * l.C, 1e-2f);
    gradcheck("matmul d(weight)", loss_matmul, &l, l.b, db, (size_t)l.V * l.C, 1e-2f);
    free(l.a); free(l.b); free(l.out); free(l.r); free(l.scratch); free(da); free(db);
}

static double loss_rmsnorm(void *p) {
    LayerCase *l = p;
    rmsnorm_forward(l->out, l->scratch, l->a, l->b, l->N, l->C);
    return dot_double(l->out, l->r, l->N * l->C);
}

static void test_rmsnorm_grad(Rng *rng) {
    LayerCase l = {0};
    l.N = 5; l.C = 12;
    l.a = normal_array(l.N * l.C, 1, rng); l.b = normal_array((size_t)l.C, 1, rng);
    l.out = xmalloc(l.N * l.C * 4); l.r = normal_array(l.N * l.C, 1, rng); l.scratch = xmalloc(l.N * 4);
    float *da = xcalloc(l.N * l.C, 4), *db = xcalloc((size_t)l.C, 4);
    loss_rmsnorm(&l);
    rmsnorm_backward(da, db, l.r, l.a, l.b, l.scratch, l.N, l.C);
    gradcheck("rmsnorm d(input)", loss_rmsnorm, &l, l.a, da, l.N * l.C, 1e-2f);
    gradcheck("rmsnorm d(gain)", loss_rmsnorm, &l, l.b, db, (size_t)l.C, 1e-2f);
    free(l.a); free(l.b); free(l.out); free(l.r); free(l.scratch); free(da); free(db);
}

static double loss_rope(void *p) {
    LayerCase *l = p;
    memcpy(l->out, l->a, l->N * l->C * 4);
    rope_forward(l->out, l->cos_t, l->sin_t, l->B, l->T, l->NH, l->hs);
    return dot_double(l->out, l->r, l->N * l->C);
}

static void test_rope_grad(Rng *rng) {
    LayerCase l = {0};
    l.B = 2; l.T = 5; l.NH = 3; l.hs = 8; l.N = 10; l.C = 24;
    l.cos_t = xmalloc(8 * 4 * 4); l.sin_t = xmalloc(8 * 4 * 4);
    rope_tables(l.cos_t, l.sin_t, 8, l.hs);
    l.a = normal_array(l.N * l.C, 1, rng); l.out = xmalloc(l.N * l.C * 4); l.r = normal_array(l.N * l.C, 1, rng);
    float *da = xmalloc(l.N * l.C * 4);
    memcpy(da, l.r, l.N * l.C * 4);
    rope_backward(da, l.cos_t, l.sin_t, l.B, l.T, l.NH, l.hs);
    gradcheck("rope d(input)", loss_rope, &l, l.a, da, l.N * l.C, 1e-2f);
    free(l.a); free(l.out); free(l.r); free(da); free(l.cos_t); free(l.sin_t);
}

static double loss_attention(void *p) {
    LayerCase *l = p;
    attention_forward(l->out, l->scratch, l->a, l->b, l->c, l->B, l->T, l->NH, l->NKV, l->hs, 2); // units split over 2 threads
    return dot_double(l->out, l->r, l->N * l->NH * l->hs);
}

// B sequences of T, NH query heads sharing NKV kv heads of size hs
static void test_attention_grad(Rng *rng, int B, int T, int NH, int NKV, int hs) {
    LayerCase l = {0};
    l.B = B; l.T = T; l.NH = NH; l.NKV = NKV; l.hs = hs; l.N = (size_t)B * T;
    size_t nq = l.N * l.NH * l.hs, nkv = l.N * l.NKV * l.hs;
    l.a = normal_array(nq, 1, rng); l.b = normal_array(nkv, 1, rng); l.c = normal_array(nkv, 1, rng);
    l.out = xmalloc(nq * 4); l.r = normal_array(nq, 1, rng);
    l.scratch = xmalloc((size_t)l.B * l.NH * l.T * l.T * 4);
    float *dq = xcalloc(nq, 4), *dk = xcalloc(nkv, 4), *dv = xcalloc(nkv, 4);
    loss_attention(&l);
    attention_backward(dq, dk, dv, l.r, l.a, l.b, l.c, l.scratch, l.B, l.T, l.NH, l.NKV, l.hs, 2);
    char name[3][64];
    for (int i = 0; i < 3; i++)
        snprintf(name[i], sizeof(name[i]), "attention d(%c) T%d hs%d", "qkv"[i], T, hs);
    gradcheck(name[0], loss_attention, &l, l.a, dq, nq, 1e-2f);
    gradcheck(name[1], loss_attention, &l, l.b, dk, nkv, 1e-2f);
    gradcheck(name[2], loss_attention, &l, l.c, dv, nkv, 1e-2f);
    free(l.a); free(l.b); free(l.c); free(l.out); free(l.r); free(l.scratch); free(dq); free(dk); free(dv);
}

static double loss_swiglu(void *p) {
    LayerCase *l = p;
    swiglu_forward(l->out, l->a, l->b, l->N, 1);
    return dot_double(l->out, l->r, l->N);
}

static void test_swiglu_grad(Rng *rng) {
    LayerCase l = {0};
    l.N = 50;
    l.a = normal_array(l.N, 2, rng); l.b = normal_array(l.N, 1, rng);
    l.out = xmalloc(l.N * 4); l.r = normal_array(l.N, 1, rng);
    float *da = xcalloc(l.N, 4), *db = xcalloc(l.N, 4);
    swiglu_backward(da, db, l.r, l.a, l.b, l.N, 1);
    gradcheck("swiglu d(gate)", loss_swiglu, &l, l.a, da, l.N, 1e-2f);
    gradcheck("swiglu d(up)", loss_swiglu, &l, l.b, db, l.N, 1e-2f);
    free(l.a); free(l.b); free(l.out); free(l.r); free(da); free(db);
}

static double loss_embedding(void *p) {
    LayerCase *l = p;
    embedding_forward(l->out, l->tokens, l->a, l->N, l->C);
    return dot_double(l->out, l->r, l->N * l->C);
}

static void test_embedding_grad(Rng *rng) {
    LayerCase l = {0};
    int tokens[6] = {3, 1, 3, 0, 4, 1}; // repeats: gradients add
    l.N = 6; l.C = 5; l.V = 6; l.tokens = tokens;
    l.a = normal_array((size_t)l.V * l.C, 1, rng); l.out = xmalloc(l.N * l.C * 4);
    l.r = normal_array(l.N * l.C, 1, rng);
    float *da = xcalloc((size_t)l.V * l.C, 4);
    embedding_backward(da, l.r, tokens, l.N, l.C);
    gradcheck("embedding d(table)", loss_embedding, &l, l.a, da, (size_t)l.V * l.C, 1e-2f);
    free(l.a); free(l.out); free(l.r); free(da);
}

// loss = sum_n r[n] * xent[n]; c = soft targets or NULL
static double loss_xent(void *p) {
    LayerCase *l = p;
    softmax_xent_forward(l->out, l->scratch, l->a, l->tokens, l->c, l->N, l->V, 1);
    return dot_double(l->out, l->r, l->N);
}

static void test_xent_grad(Rng *rng, int soft) {
    LayerCase l = {0};
    int targets[4] = {2, 0, 8, 2};
    l.N = 4; l.V = 9; l.tokens = targets;
    l.a = normal_array(l.N * l.V, 2, rng); l.out = xmalloc(l.N * 4); l.r = normal_array(l.N, 1, rng);
    l.scratch = xmalloc(l.N * l.V * 4);
    if (soft) { // a random distribution per row
        l.c = normal_array(l.N * l.V, 1, rng);
        softmax_xent_forward(l.out, l.c, l.c, targets, NULL, l.N, l.V, 1);
    }
    float *da = xmalloc(l.N * l.V * 4);
    loss_xent(&l);
    softmax_xent_backward(da, l.scratch, targets, l.c, l.r, l.N, l.V, 1);
    gradcheck(soft ? "softmax xent, soft targets" : "softmax xent, hard targets", loss_xent, &l, l.a, da,
              l.N * l.V, 1e-2f);
    free(l.a); free(l.out); free(l.r); free(l.scratch); free(l.c); free(da);
}

// ----------------------------------------------------------------------------
// whole model: per tensor, the gradient along a random direction d against
// (L(p + h d) - L(p - h d)) / 2h, for hard and soft (distillation) targets

typedef struct { Model *m; const int *tokens, *targets; const float *soft; } ModelCase;

static double loss_model(void *p) {
    ModelCase *mc = p;
    model_forward(mc->m, mc->tokens);
    return model_loss(mc->m, mc->targets, mc->soft);
}

// f(t) = loss at p + t d, so the stencil on t gives the directional derivative
typedef struct { ModelCase *mc; float *p, *d, *base; size_t n; float t; } DirCase;

static double loss_direction(void *p) {
    DirCase *dc = p;
    for (size_t i = 0; i < dc->n; i++) dc->p[i] = dc->base[i] + dc->t * dc->d[i];
    dc->mc->m->wt_fresh = 0; // params written: the forward must transpose again
    double l = loss_model(dc->mc);
    memcpy(dc->p, dc->base, dc->n * 4);
    dc->mc->m->wt_fresh = 0;
    return l;
}

static Model tiny_model(Rng *rng, int B, int T) {
    Config c = {16, 24, 2, 4, 2, 11, 8}; // hs 4, grouped-query
    Model m;
    build_model(&m, &c, B, T, 1);
    Tensor t[N_TENSORS];
    model_tensors(&m, t);
    for (int i = 0; i < N_TENSORS; i++) // big enough weights for gradients well above float noise
        for (size_t j = 0; j < t[i].n; j++)
            m.params[t[i].off + j] = t[i].decay ? 0.2f * rng_normal(rng) : 1.0f + 0.1f * rng_normal(rng);
    m.wt_fresh = 0;
    return m;
}

// Per tensor, 4 random directions d: numeric derivatives along them against
// g.d, compared as vectors (one direction nearly orthogonal to g would make a
// single ratio meaningless).
static void test_model_grad(Rng *rng, int use_soft, float dropout) {
    enum { B = 4, T = 8, V = 11, DIRS = 4 };
    Model m = tiny_model(rng, B, T);
    m.dropout = dropout; // a fixed key: the same masks in every forward, so the loss is a smooth function
    m.drop_key = 0x5EED;
    int tokens[B * T], targets[B * T];
    for (int i = 0; i < B * T; i++) { tokens[i] = (int)(rng_next(rng) % V); targets[i] = (int)(rng_next(rng) % V); }
    float *soft = NULL, dummy[B * T];
    if (use_soft) {
        soft = normal_array((size_t)B * T * V, 1, rng);
        softmax_xent_forward(dummy, soft, soft, targets, NULL, (size_t)B * T, V, 1);
    }
    ModelCase mc = {&m, tokens, targets, soft};
    loss_model(&mc);
    zero(m.grads, m.n_params);
    model_backward(&m, targets, soft, 1.0f / (B * T));
    Tensor t[N_TENSORS];
    model_tensors(&m, t);
    double worst = 0;
    const char *worst_name = "";
    for (int i = 0; i < N_TENSORS; i++) {
        DirCase dc = {&mc, m.params + t[i].off, xmalloc(t[i].n * 4), xmalloc(t[i].n * 4), t[i].n, 0};
        memcpy(dc.base, dc.p, t[i].n * 4);
        double dd = 0, nn = 0, aa = 0;
        for (int k = 0; k < DIRS; k++) {
            fill_normal(dc.d, t[i].n, 1, rng);
            double num = stencil(loss_direction, &dc, &dc.t, 2e-3f), ana = dot_double(m.grads + t[i].off, dc.d, t[i].n);
            dd += (num - ana) * (num - ana); nn += num * num; aa += ana * ana;
        }
        double rel = sqrt(dd) / (sqrt(nn) + sqrt(aa) + 1e-30);
        if (rel > worst) { worst = rel; worst_name = t[i].name; }
        free(dc.d); free(dc.base);
    }
    check(worst < 1e-3, "model gradient (%s targets, dropout %.2f): 11 tensors x %d random directions, worst "
          "relative error %.2e (%s)", use_soft ? "soft" : "hard", dropout, DIRS, worst, worst_name);
    free(soft);
    free_model(&m);
}

// dropout's masks: the drop rate, the 1/(1-p) scale of the kept elements, the
// same mask for the same key (so backward matches forward), another for another
static void test_dropout(void) {
    enum { N = 200000 };
    float *a = xmalloc(N * sizeof(float)), *b = xmalloc(N * sizeof(float));
    for (size_t i = 0; i < N; i++) a[i] = b[i] = 1.0f + (float)(i % 7);
    dropout_apply(a, N, 0, 0.0f);
    int untouched = 1;
    for (size_t i = 0; i < N; i++) untouched &= a[i] == 1.0f + (float)(i % 7);
    check(untouched, "dropout p = 0 leaves all %d elements as they were", N);
    const float p = 0.25f;
    dropout_apply(a, N, 42, p);
    dropout_apply(b, N, 42, p);
    size_t dropped = 0, bad_scale = 0;
    for (size_t i = 0; i < N; i++) {
        if (a[i] == 0.0f) dropped++;
        else if (a[i] != (1.0f + (float)(i % 7)) * (1.0f / (1.0f - p))) bad_scale++;
    }
    double sd = sqrt(N * p * (1 - p)), z = ((double)dropped - N * p) / sd;
    check(fabs(z) < 5 && bad_scale == 0, "dropout p = %.2f over %d elements: %zu dropped (z = %.2f, want |z| < 5), "
          "%zu kept elements not scaled by exactly 1/(1-p)", p, N, dropped, z, bad_scale);
    check(!memcmp(a, b, N * sizeof(float)), "dropout: the same key gives the same mask");
    for (size_t i = 0; i < N; i++) b[i] = 1.0f + (float)(i % 7);
    dropout_apply(b, N, 43, p);
    size_t differ = 0;
    for (size_t i = 0; i < N; i++) differ += (a[i] == 0.0f) != (b[i] == 0.0f);
    check(differ > N / 4, "dropout: keys 42 and 43 give different masks (%zu of %d elements differ, expect "
          "~%.0f)", differ, N, 2.0 * N * p * (1 - p));
    free(a); free(b);
}

// ----------------------------------------------------------------------------
// overfit: a small model memorises one batch

static void test_overfit(void) {
    Rng rng = {7};
    Config c = {32, 64, 2, 4, 2, 32, 16};
    int B = 4, T = 16;
    Model m;
    build_model(&m, &c, B, T, 1);
    init_weights(&m, &rng);
    int tokens[64], targets[64];
    for (int i = 0; i < B * T; i++) tokens[i] = (int)(rng_next(&rng) % 32);
    for (int i = 0; i < B * T; i++) targets[i] = i % T + 1 < T ? tokens[i + 1] : tokens[i - T + 1];
    TrainOpts o = {0};
    o.lr = 1e-2f; o.beta1 = 0.9f; o.beta2 = 0.95f; o.wd = 0.0f;
    float *mom = xcalloc(m.n_params, 4), *vel = xcalloc(m.n_params, 4);
    double first = 0, last = 0;
    for (int step = 1; step <= 150; step++) {
        model_forward(&m, tokens);
        last = model_loss(&m, targets, NULL);
        if (step == 1) first = last;
        zero(m.grads, m.n_params);
        model_backward(&m, targets, NULL, 1.0f / (B * T));
        clip_grads(&m, 1.0f);
        adamw_update(&m, mom, vel, &o, o.lr, step);
    }
    check(first > 3.0 && last < 0.1, "overfit one batch of 64 random tokens: loss %.3f -> %.4f after 150 steps "
          "(want < 0.1)", first, last);
    free(mom); free(vel);
    free_model(&m);
}

// ----------------------------------------------------------------------------
// training runs: deterministic, and a killed run resumes to the same bytes

// A file's bytes (*n), NUL-terminated; not registered as an input of a run.
static char *slurp(const char *path, size_t *n) {
    FILE *f = xfopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0;
    *n = 0;
    for (size_t got = 1; got > 0; *n += got) {
        grow((void **)&buf, &cap, *n + 4097, 1);
        got = fread(buf + *n, 1, 4096, f);
    }
    fclose(f);
    buf[*n] = '\0';
    return buf;
}

// The test's outputs, written whole (the trainer's write_model_output and
// write_tokens_to), each planned in a registry of its own (and forgotten).
static void save_checkpoint(const Model *m, const char *path) {
    OutputFile o;
    io_forget();
    plan_or_die(&o, path);
    write_model_output(&o, m);
    io_forget();
}

static void write_tokens(const char *path, const IntBuf *t, int vocab_size) {
    OutputFile o;
    io_forget();
    plan_or_die(&o, path);
    write_tokens_to(&o, t, vocab_size);
    io_forget();
}

static int same_file(const char *a, const char *b) {
    size_t na, nb;
    char *pa = slurp(a, &na), *pb = slurp(b, &nb);
    int same = na == nb && !memcmp(pa, pb, na);
    free(pa); free(pb);
    return same;
}

// token streams with some structure to learn: counting runs mod vocab
static void write_test_tokens(const char *dir, int vocab) {
    IntBuf t = {0};
    Rng r = {3};
    for (int doc = 0; doc < 200; doc++) {
        intbuf_push(&t, TOKEN_BOS);
        int x = (int)(rng_next(&r) % 200);
        for (int i = 0; i < 20; i++) intbuf_push(&t, 259 + (x + i) % (vocab - 259));
    }
    make_dir(dir);
    char *tp = join_path(dir, "train.bin"), *vp = join_path(dir, "val.bin");
    write_tokens(tp, &t, vocab);
    write_tokens(vp, &t, vocab);
    free(tp); free(vp); free(t.p);
}

// build/test/train/data: write_test_tokens' streams, vocab 300
static void write_test_data(void) {
    make_dir("build");
    make_dir("build/test");
    make_dir("build/test/train");
    write_test_tokens("build/test/train/data", 300);
}

static TrainOpts tiny_opts(const char *out, const char *csv) {
    TrainOpts o = {.data_dir = "build/test/train/data", .out_dir = out, .csv = csv, .dim = 32, .hidden = 64,
                   .layers = 2, .heads = 4, .kv_heads = 2, .seq = 16, .batch = 4, .accum = 2, .steps = 8,
                   .warmup = 2, .seed = 5, .threads = 1, .eval_every = 4, .eval_batches = 2, .log_every = 4,
                   .ckpt_every = 4, .lr = 3e-3f, .lr_min = 3e-4f, .wd = 0.1f, .clip = 1.0f, .beta1 = 0.9f,
                   .beta2 = 0.95f};
    return o;
}

static void test_resume(void) {
    write_test_data();
    remove("build/test/train/a/state.bin");
    remove("build/test/train/b/state.bin");
    TrainOpts a = tiny_opts("build/test/train/a", "build/test/train/a.csv");
    train_model(&a); // 8 steps straight, 1 thread
    TrainOpts b = tiny_opts("build/test/train/b", "build/test/train/b.csv");
    b.stop_at = 3;
    b.threads = 2;
    train_model(&b); // killed after step 3 (checkpoint at 3)...
    b.stop_at = 0;
    train_model(&b); // ...and resumed, on 2 threads
    check(same_file("build/test/train/a/model.bin", "build/test/train/b/model.bin"),
          "8 steps straight (1 thread) == 3 steps, kill, resume to 8 (2 threads): model.bin bit-identical");
    size_t n;
    char *csv = slurp("build/test/train/b.csv", &n);
    int rows = 0;
    for (size_t i = 0; i < n; i++) rows += csv[i] == '\n';
    check(rows == 1 + 1 + 8, "resumed CSV has header + step 0 + 8 step rows (got %d lines)", rows);
    free(csv);
    Model m;
    load_model(&m, "build/test/train/a/model.bin", 1, 0, 0);
    check(m.c.dim == 32 && m.c.vocab_size == 300 && m.c.seq_len == 16,
          "model.bin reads back: dim %d vocab %d seq_len %d", m.c.dim, m.c.vocab_size, m.c.seq_len);
    free_model(&m);
    // a second stage (-init): starts from exactly those weights, not from a fresh init
    remove("build/test/train/c/state.bin");
    TrainOpts c = tiny_opts("build/test/train/c", "build/test/train/c.csv");
    c.init = "build/test/train/a/model.bin";
    Run r;
    build_run(&r, &c);
    load_model(&m, "build/test/train/a/model.bin", 1, 0, 0);
    check(r.step == 0 && r.model.n_params == m.n_params &&
          !memcmp(r.model.params, m.params, m.n_params * sizeof(float)),
          "-init: a new run starts at step 0 from the %zu floats of the given checkpoint", m.n_params);
    free_model(&m);
    free_run(&r);
    // with dropout: still resumable to the same bytes on another thread count, and not the plain run
    remove("build/test/train/d/state.bin");
    remove("build/test/train/e/state.bin");
    TrainOpts d = tiny_opts("build/test/train/d", NULL), e = tiny_opts("build/test/train/e", NULL);
    d.dropout = e.dropout = 0.2f;
    train_model(&d);
    e.stop_at = 5;
    e.threads = 2;
    train_model(&e);
    e.stop_at = 0;
    train_model(&e);
    check(same_file("build/test/train/d/model.bin", "build/test/train/e/model.bin") &&
          !same_file("build/test/train/a/model.bin", "build/test/train/d/model.bin"),
          "-dropout 0.2: 8 steps straight == 5, kill, resume (2 threads), and != the run without dropout");
}

// ----------------------------------------------------------------------------
// what a run writes: never a worse model, never a torn or replaced file

#define CHILD_ERR "build/test/train/child.err"

// fn(arg) in a child process (stdout to /dev/null, stderr to CHILD_ERR, at
// most fsize bytes a file: 0 none, else SIGXFSZ ignored so a write past it
// fails); its stderr into err (len). Returns its exit status, or 128 + the
// signal that ended it.
static int in_child(void (*fn)(void *), void *arg, long fsize, char *err, size_t len) {
    fflush(stdout);
    fflush(stderr);
    remove(CHILD_ERR);
    pid_t pid = fork();
    if (pid < 0) die("fork: %s", strerror(errno));
    if (pid == 0) {
        if (!freopen(CHILD_ERR, "w", stderr) || !freopen("/dev/null", "w", stdout)) _exit(99);
        setvbuf(stderr, NULL, _IONBF, 0);
        if (fsize) {
            struct rlimit rl = {(rlim_t)fsize, (rlim_t)fsize};
            signal(SIGXFSZ, SIG_IGN);
            if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(98);
        }
        fn(arg);
        _exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid) die("waitpid: %s", strerror(errno));
    err[0] = '\0';
    FILE *f = fopen(CHILD_ERR, "r");
    if (f) {
        size_t n = fread(err, 1, len - 1, f);
        err[n] = '\0';
        fclose(f);
    }
    err[strcspn(err, "\n")] = '\0';
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void child_train_model(void *o) { train_model(o); }
static void child_build_run(void *o) {
    Run r;
    build_run(&r, o);
    free_run(&r);
}

static void copy_file(const char *from, const char *to) {
    size_t n;
    char *b = slurp(from, &n);
    FILE *f = xfopen(to, "wb");
    xfwrite(b, 1, n, f, to);
    if (fclose(f) != 0) die("%s: close failed", to);
    free(b);
}

// A run of run_out's options that stops with exit status 1 and `want` in
// its message; every file in keep (NULL-ended) unchanged.
static void expect_refused(const char *what, void (*fn)(void *), void *arg, long fsize, const char *want,
                           const char *const *keep) {
    char saved[8][96], err[1024];
    int n = 0;
    for (; keep && keep[n]; n++) {
        snprintf(saved[n], sizeof(saved[n]), "build/test/train/keep%d", n);
        copy_file(keep[n], saved[n]);
    }
    int rc = in_child(fn, arg, fsize, err, sizeof(err));
    int same = 1;
    for (int i = 0; i < n; i++) same &= same_file(keep[i], saved[i]);
    check(rc == 1 && strstr(err, want) && same, "%s: exit status %d (want 1), \"%s\" (want \"%s\")%s", what, rc,
          err, want, n ? (same ? ", the files it would have replaced unchanged" : ", A FILE CHANGED") : "");
}

// The temp files (NAME.XXXXXX) left in dir
static int temp_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) die("%s: cannot list: %s", dir, strerror(errno));
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        const char *dot = strrchr(e->d_name, '.');
        n += dot && strlen(dot) == 7; // mkstemp's 6 letters and digits
    }
    closedir(d);
    return n;
}

// the files committed, in order (commit_hook), and a crash after the first
// one at step crash_step (crash_after: the outputs committed so far)
static char committed[16][256];
static int n_committed, crash_after;

static void record_commit(const char *path) {
    if (n_committed < 16) snprintf(committed[n_committed], sizeof(committed[0]), "%s", path);
    if (++n_committed == crash_after) _exit(3); // killed right after this rename
}

static void crash_at_last_checkpoint(void *o) {
    n_committed = 0;
    crash_after = 1 + 3; // step 4's three files, then the first of step 8's
    commit_hook = record_commit;
    train_model(o);
}

// the bytes of path with byte `at` (from the end if < 0) xor'ed with x
static void flip_byte(const char *path, long at, int x) {
    size_t n;
    char *b = slurp(path, &n);
    size_t i = at < 0 ? n - (size_t)-at : (size_t)at;
    b[i] ^= (char)x;
    FILE *f = xfopen(path, "wb");
    xfwrite(b, 1, n, f, path);
    if (fclose(f) != 0) die("%s: close failed", path);
    free(b);
}

// state.bin with the float at index i of its parameters NaN and a checksum
// that matches (a state saved from a NaN run)
static void nan_state(const char *path, size_t i) {
    size_t n;
    char *b = slurp(path, &n);
    float nan = NAN;
    memcpy(b + sizeof(StateHeader) + i * sizeof(float), &nan, sizeof(nan));
    uint64_t h = fnv1a(b, n - 8);
    memcpy(b + n - 8, &h, 8);
    FILE *f = xfopen(path, "wb");
    xfwrite(b, 1, n, f, path);
    if (fclose(f) != 0) die("%s: close failed", path);
    free(b);
}

static void child_save_nan(void *o) {
    Run r;
    RunFiles files;
    plan_run_files(&files, ((TrainOpts *)o)->out_dir, "model.bin", NULL);
    build_run(&r, o);
    r.model.params[7] = NAN;
    save_run(&r, o, &files);
}

static void child_read_tokens(void *path) { read_tokens(path); }

static void test_run_files(void) {
    const char *dir = "build/test/train/f", *state = "build/test/train/f/state.bin",
               *model = "build/test/train/f/model.bin", *csv = "build/test/train/f.csv";
    remove(state);
    // a crash right after the first file of the last checkpoint: the re-run
    // ends with the model of the straight run (build/test/train/a, test_resume)
    TrainOpts o = tiny_opts(dir, csv);
    char err[1024];
    int rc = in_child(crash_at_last_checkpoint, &o, 0, err, sizeof(err));
    o.stop_at = 0;
    train_model(&o);
    check(rc == 3 && same_file(model, "build/test/train/a/model.bin"),
          "a crash after the first file of the step-8 checkpoint (exit %d), then a re-run: model.bin == 8 steps "
          "straight (model.bin first, state.bin last)", rc);
    n_committed = crash_after = 0;
    commit_hook = record_commit;
    remove(state);
    o.stop_at = 4;
    train_model(&o);
    commit_hook = NULL;
    check(n_committed == 3 && !strcmp(committed[0], model) && !strcmp(committed[1], csv) &&
          !strcmp(committed[2], state), "a checkpoint commits model.bin, the CSV, state.bin, in that order (%d: "
          "%s, %s, %s)", n_committed, committed[0], committed[1], committed[2]);
    // a damaged state.bin (of the right size, or longer) is refused, model.bin kept
    const char *keep[] = {model, state, NULL};
    o.stop_at = 0;
    copy_file(state, "build/test/train/f_state.bin");
    flip_byte(state, 1000, 0x10);
    expect_refused("state.bin with one byte flipped", child_build_run, &o, 0, "checksum mismatch", keep);
    copy_file("build/test/train/f_state.bin", state);
    flip_byte(state, 20, 0x01); // a header field (config): the checksum still says so
    expect_refused("state.bin with a header byte flipped", child_build_run, &o, 0, "checksum mismatch", keep);
    copy_file("build/test/train/f_state.bin", state);
    FILE *f = xfopen(state, "ab");
    fputc(0, f);
    fclose(f);
    expect_refused("state.bin with a byte appended", child_build_run, &o, 0, "bytes after the state", keep);
    copy_file("build/test/train/f_state.bin", state);
    nan_state(state, 5);
    expect_refused("state.bin with a NaN parameter (checksum right)", child_build_run, &o, 0,
                   "the parameters: element 5 is NaN", keep);
    // a NaN in the weights is never saved; a diverging run stops, model.bin kept
    copy_file("build/test/train/f_state.bin", state);
    expect_refused("a checkpoint of NaN weights", child_save_nan, &o, 0, "step 4: the parameters: element 7 is NaN",
                   keep);
    TrainOpts wild = o;
    wild.lr = wild.lr_min = 1e30f;
    expect_refused("resumed at -lr 1e30", child_train_model, &wild, 0, "the run diverged", keep);
    // the CSV of a resumed run that fails before its next checkpoint (here:
    // files of at most 100 bytes) is the one it had
    const char *keep_csv[] = {csv, model, state, NULL};
    expect_refused("a resumed run whose writes fail", child_train_model, &o, 100, "write failed", keep_csv);
    check(temp_files(dir) == 0 && temp_files("build/test/train") == 0, "no temp file left behind in %s", dir);
    // -csv naming an input or another output of the run: refused before any work
    TrainOpts bad = o;
    bad.csv = "build/test/train/data/train.bin";
    const char *keep_data[] = {"build/test/train/data/train.bin", model, state, NULL};
    expect_refused("-csv runs/data/train.bin", child_train_model, &bad, 0, "replace an input", keep_data);
    bad = o;
    bad.init = bad.csv = "build/test/train/a/model.bin";
    remove("build/test/train/g/state.bin");
    bad.out_dir = "build/test/train/g";
    const char *keep_a[] = {"build/test/train/a/model.bin", NULL};
    expect_refused("-init I.bin -csv I.bin", child_train_model, &bad, 0, "replace an input", keep_a);
    bad.init = NULL;
    bad.teacher = "build/test/train/a/model.bin";
    expect_refused("-teacher T.bin -csv T.bin", child_train_model, &bad, 0, "replace an input", keep_a);
    bad = o;
    bad.csv = model;
    expect_refused("-csv the run's model.bin", child_train_model, &bad, 0, "two outputs", keep);
    // a token file whose count is 2^63 + 1 (size_t arithmetic would wrap)
    f = xfopen("build/test/train/huge.bin", "wb");
    int32_t hdr[2] = {300, 0};
    uint64_t n = (1ull << 63) + 1;
    uint16_t tok[4] = {1, 2, 3, 4};
    xfwrite("SDTOKENS", 1, 8, f, "huge.bin");
    xfwrite(hdr, sizeof(hdr), 1, f, "huge.bin");
    xfwrite(&n, sizeof(n), 1, f, "huge.bin");
    xfwrite(tok, sizeof(tok), 1, f, "huge.bin");
    fclose(f);
    expect_refused("a token file that says 2^63 + 1 tokens", child_read_tokens, "build/test/train/huge.bin", 0,
                   "truncated or not this format", NULL);
}

// ----------------------------------------------------------------------------
// drafters on a frozen target (./train medusa, ./train eagle): what the tests
// of both share

#define MEDUSA_TARGET "build/test/train/medusa_target.bin"

// A random target checkpoint for the token data of write_test_tokens (vocab
// 300): matrices N(0, 0.2), gains 1, the embedding (the classifier) N(0, 1)
// so that its softmaxes are peaked: soft targets with something to learn.
static void write_medusa_target(void) {
    Config c = {32, 64, 2, 4, 2, 300, 16};
    Model m;
    build_model(&m, &c, 1, c.seq_len, 0);
    Tensor t[N_TENSORS];
    model_tensors(&m, t);
    Rng rng = {99};
    for (int i = 0; i < N_TENSORS; i++)
        for (size_t j = 0; j < t[i].n; j++)
            m.params[t[i].off + j] = !t[i].decay ? 1.0f : (i == 0 ? 1.0f : 0.2f) * rng_normal(&rng);
    save_checkpoint(&m, MEDUSA_TARGET);
    free_model(&m);
}

// build/test/train/: the counting data and the random target
static void write_drafter_fixtures(void) {
    write_test_data();
    write_medusa_target();
}

// n random input and target tokens < V from rng (*tok, *tg; the caller frees them)
static void random_batch(Rng *rng, int n, int V, int **tok, int **tg) {
    *tok = xmalloc((size_t)n * sizeof(int));
    *tg = xmalloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) { (*tok)[i] = (int)(rng_next(rng) % V); (*tg)[i] = (int)(rng_next(rng) % V); }
}

// gradcheck of each of the n tensors t of params (gradients grads): "name d(W)"
static void gradcheck_tensors(const char *name, LossFn f, void *ctx, float *params, const float *grads,
                              const Tensor *t, int n) {
    for (int i = 0; i < n; i++) {
        char what[96];
        snprintf(what, sizeof(what), "%s d(%s)", name, t[i].name);
        gradcheck(what, f, ctx, params + t[i].off, grads + t[i].off, t[i].n, 1e-2f);
    }
}

// log sum_v exp(x[v]) in double, x (n)
static double log_sum_exp(const float *x, int n) {
    double m = x[argmax_of(x, n)], s = 0.0;
    for (int v = 0; v < n; v++) s += exp(x[v] - m);
    return m + log(s);
}

// -sum_v p_v log q_v in double for the softmaxes p, q of logits (n)
static double soft_ce(const float *p_logits, const float *q_logits, int n) {
    double lse_p = log_sum_exp(p_logits, n), lse_q = log_sum_exp(q_logits, n), ce = 0.0;
    for (int v = 0; v < n; v++) ce += exp(p_logits[v] - lse_p) * (lse_q - q_logits[v]);
    return ce;
}

// The largest error of K agreement sums (per head / step k over the rows t
// + k < T of t's batch) as fractions against want (K).
static double agree_error(const double *sums, const double *want, const Model *t, int K) {
    double err = 0.0;
    for (int k = 1; k <= K; k++)
        err = fmax(err, fabs(sums[k - 1] / (double)((size_t)t->B * (size_t)(t->T - k)) - want[k - 1]));
    return err;
}

static DrafterOpts tiny_drafter_opts(const char *out, const char *csv) {
    DrafterOpts d = {.target = MEDUSA_TARGET, .medusa = {.heads = 3}, .eagle = {.hidden = 0, .unroll = 2, .feat = 0.1f},
                     .t = tiny_opts(out, csv)};
    d.t.seq = 0; // the target's 16
    d.t.accum = 1;
    d.t.wd = 0.0f;
    d.t.lr = 1e-2f;
    d.t.lr_min = 1e-3f;
    return d;
}

// A run of kind k on d in build/test/train/NAME_learn (fresh): the validation
// before (*v0) and after (*v1) d's 40 steps; r stays built for more checks.
static void drafter_learn(const DrafterKind *k, DrafterOpts *d, DrafterRun *r, DraftEval *v0, DraftEval *v1) {
    char dir[64], state[80];
    snprintf(dir, sizeof(dir), "build/test/train/%s_learn", k->name);
    snprintf(state, sizeof(state), "%s/state.bin", dir);
    d->t.out_dir = dir;
    d->t.steps = 40;
    remove(state);
    build_drafter_run(r, k, d);
    *v0 = drafter_evaluate(r, d->t.eval_batches);
    while (r->step < d->t.steps) drafter_step(r, &d->t, lr_at(&d->t, (int)r->step));
    *v1 = drafter_evaluate(r, d->t.eval_batches);
    RunFiles files;
    plan_run_files(&files, dir, k->name[0] == 'm' ? "medusa.bin" : "eagle.bin", NULL);
    save_drafter_run(r, &d->t, &files);
    d->t.out_dir = NULL; // dir is gone with this frame
}

// build/test/train/NAME_learn/NAME.bin (after drafter_learn): its bytes (*n)
// and its 5-word header (hdr)
static char *learned_file(const DrafterKind *k, size_t *n, int32_t *hdr) {
    char path[96];
    snprintf(path, sizeof(path), "build/test/train/%s_learn/%s.bin", k->name, k->name);
    char *buf = slurp(path, n);
    memcpy(hdr, buf, 5 * sizeof(int32_t));
    return buf;
}

// 8 steps straight (1 thread) == 3 steps, kill, resume to 8 (2 threads):
// NAME.bin bit-identical, and `what` (count floats from float `from` after
// its header of header_bytes) moved from zero; the resumed CSV has the header
// with its columns (cols: ",agree_h1,...") + step 0 + 8 step rows.
static void test_drafter_resume(const DrafterKind *k, size_t header_bytes, size_t from, size_t count,
                                const char *what, const char *cols) {
    char dir[2][64], csv[2][64], state[80], file[2][96];
    for (int i = 0; i < 2; i++) {
        snprintf(dir[i], sizeof(dir[i]), "build/test/train/%s_%c", k->name, 'a' + i);
        snprintf(csv[i], sizeof(csv[i]), "%s.csv", dir[i]);
        snprintf(file[i], sizeof(file[i]), "%s/%s.bin", dir[i], k->name);
        snprintf(state, sizeof(state), "%s/state.bin", dir[i]);
        remove(state);
    }
    DrafterOpts a = tiny_drafter_opts(dir[0], csv[0]), b = tiny_drafter_opts(dir[1], csv[1]);
    train_drafter(k, &a);
    b.t.stop_at = 3;
    b.t.threads = 2;
    train_drafter(k, &b);
    b.t.stop_at = 0;
    train_drafter(k, &b);
    size_t n, moved = 0, end = header_bytes + (from + count) * sizeof(float);
    char *w = slurp(file[0], &n);
    for (size_t i = header_bytes + from * sizeof(float); i < end && i + sizeof(float) <= n; i += sizeof(float)) {
        float x;
        memcpy(&x, w + i, sizeof(x));
        moved += x != 0.0f;
    }
    free(w);
    check(same_file(file[0], file[1]) && moved > 0, "%s: 8 steps straight (1 thread) == 3 steps, kill, resume to 8 "
          "(2 threads): %s.bin bit-identical (%zu of the %zu floats of %s moved from zero)", k->name, k->name,
          moved, count, what);
    char *text = slurp(csv[1], &n), want[128];
    snprintf(want, sizeof(want), "%s%s\n", CSV_HEADER, cols);
    int rows = 0;
    for (size_t i = 0; i < n; i++) rows += text[i] == '\n';
    check(rows == 1 + 1 + 8 && !strncmp(text, want, strlen(want)),
          "%s: resumed CSV has the header (with %s) + step 0 + 8 step rows (got %d lines)", k->name, cols + 1, rows);
    free(text);
}

static void child_train_medusa(void *d) { train_drafter(&MEDUSA_KIND, d); }
static void child_build_medusa(void *d) {
    DrafterRun r;
    build_drafter_run(&r, &MEDUSA_KIND, d);
    free_drafter_run(&r);
}

// ./train medusa's files: medusa.bin, the CSV, state.bin in that order; a
// damaged state refused; -m target.bin -csv target.bin refused
static void test_drafter_files(void) {
    const char *dir = "build/test/train/medusa_f", *csv = "build/test/train/medusa_f.csv",
               *state = "build/test/train/medusa_f/state.bin", *heads = "build/test/train/medusa_f/medusa.bin";
    remove(state);
    DrafterOpts d = tiny_drafter_opts(dir, csv);
    d.t.stop_at = 4;
    n_committed = crash_after = 0;
    commit_hook = record_commit;
    train_drafter(&MEDUSA_KIND, &d);
    commit_hook = NULL;
    check(n_committed == 3 && !strcmp(committed[0], heads) && !strcmp(committed[1], csv) &&
          !strcmp(committed[2], state), "medusa: a checkpoint commits medusa.bin, the CSV, state.bin, in that order "
          "(%d: %s, %s, %s)", n_committed, committed[0], committed[1], committed[2]);
    const char *keep[] = {heads, state, NULL};
    d.t.stop_at = 0;
    flip_byte(state, -100, 0x40);
    expect_refused("medusa: state.bin with one byte flipped", child_build_medusa, &d, 0, "checksum mismatch", keep);
    d.t.csv = MEDUSA_TARGET;
    const char *keep_target[] = {MEDUSA_TARGET, NULL};
    expect_refused("./train medusa -m target.bin -csv target.bin", child_train_medusa, &d, 0, "replace an input",
                   keep_target);
}

// ----------------------------------------------------------------------------
// Medusa heads (./train medusa): the head's gradient, zero heads = the target,
// training lowers the loss, medusa.bin, kill/resume

static double loss_medusa(void *p) {
    Medusa *md = p;
    medusa_transpose(md); // params written: W^T again
    return medusa_heads(md, 0, NULL);
}

// H heads on tiny_model's random target over B x T random tokens (the
// target's forward done); heads zero, or random with std (not zero: silu's
// curvature and every path of the gradient count)
static void medusa_case(Medusa *md, Rng *rng, int H, int hard, int B, int T, float std) {
    memset(md, 0, sizeof(*md));
    md->target = tiny_model(rng, B, T);
    build_medusa(md, H, hard);
    fill_normal(md->params, md->n_params, std, rng);
    medusa_transpose(md);
    int *tok, *tg;
    random_batch(rng, B * T, md->target.c.vocab_size, &tok, &tg);
    medusa_target(md, tok, tg);
    free(tok); free(tg);
}

// dL/dW_h and dL/db_h of every head against finite differences, soft or hard targets
static void test_medusa_grad(Rng *rng, int hard) {
    enum { H = 3, B = 2, T = 8 };
    Medusa md;
    medusa_case(&md, rng, H, hard, B, T, 0.3f);
    zero(md.grads, md.n_params);
    medusa_heads(&md, 1, NULL);
    Tensor t[2 * H];
    medusa_tensors(&md, t);
    for (int h = 1; h <= H; h++) {
        char name[64];
        snprintf(name, sizeof(name), "medusa head %d (%s)", h, hard ? "hard" : "soft");
        gradcheck_tensors(name, loss_medusa, &md, md.params, md.grads, t + 2 * (h - 1), 2);
    }
    free_medusa(&md);
}

// Zero heads' loss and agreement from the definitions, in double: head h at
// row (b, t), t + h < T, predicts with the target's softmax q at (b, t) (zero
// heads are the target); its target is the target's softmax p at (b, t + h)
// or (hard) the data's token at t+1+h; agreement: top-1 of q == top-1 of p.
static double zero_heads_reference(const Medusa *md, int hard, double *agree) {
    int B = md->target.B, T = md->target.T, V = md->target.c.vocab_size;
    const float *logits = md->target.a.logits;
    double loss = 0.0;
    for (int h = 1; h <= md->H; h++) {
        double sum = 0.0, rows = 0.0;
        agree[h - 1] = 0.0;
        for (int b = 0; b < B; b++)
            for (int t = 0; t + h < T; t++, rows++) {
                const float *q = logits + ((size_t)b * T + t) * V, *p = logits + ((size_t)b * T + t + h) * V;
                if (hard) sum += log_sum_exp(q, V) - q[md->targets[(size_t)b * T + t + h]]; // the token after t + h
                else sum += soft_ce(p, q, V);
                agree[h - 1] += argmax_of(q, V) == argmax_of(p, V);
            }
        loss += sum / rows / md->H;
        agree[h - 1] /= rows;
    }
    return loss;
}

// W = 0, b = 0: silu(0) = 0, so every head's logits are the target's, bit for
// bit; its loss and agreement against zero_heads_reference (this checks which
// row each head's target comes from)
static void test_medusa_zero_heads(Rng *rng, int hard) {
    enum { H = 3, B = 2, T = 8 };
    Medusa md;
    medusa_case(&md, rng, H, hard, B, T, 0.0f);
    size_t n = (size_t)B * T * md.target.c.vocab_size;
    int same = 1;
    for (int h = 1; h <= H; h++) {
        head_forward(&md, h);
        same &= !memcmp(md.logits, md.target.a.logits, n * sizeof(float));
    }
    double agree[H] = {0}, want_agree[H] = {0};
    double loss = medusa_heads(&md, 0, agree), want = zero_heads_reference(&md, hard, want_agree);
    double err_agree = agree_error(agree, want_agree, &md.target, H);
    check(same && fabs(loss - want) < 1e-4 * want && err_agree < 1e-12,
          "medusa, zero heads (%s): logits == the target's bit for bit; loss %.6f vs %.6f and top-1 agreement "
          "(max error %.1e) from the definition in double", hard ? "hard" : "soft", loss, want, err_agree);
    free_medusa(&md);
}

// 40 steps on the counting data: validation loss and head-1 agreement before
// and after; then medusa.bin (soft targets)
static void test_medusa_learns(int hard) {
    DrafterOpts d = tiny_drafter_opts(NULL, NULL);
    d.medusa.hard = hard;
    DrafterRun r;
    DraftEval v0, v1;
    drafter_learn(&MEDUSA_KIND, &d, &r, &v0, &v1);
    if (hard) // the agreement is with the target's top-1, which -hard does not learn
        check(v1.loss < 0.8 * v0.loss, "medusa (hard targets): 40 steps lower the val loss %.3f -> %.3f (want < "
              "0.8x)", v0.loss, v1.loss);
    else
        check(v1.loss < 0.8 * v0.loss && v1.agree[0] > v0.agree[0] + 0.02,
              "medusa (soft targets): 40 steps lower the val loss %.3f -> %.3f (want < 0.8x) and raise head 1's "
              "agreement with the target's top-1 %.3f -> %.3f (want + 0.02)", v0.loss, v1.loss, v0.agree[0],
              v1.agree[0]);
    if (!hard) { // medusa.bin: model.h's check passes, the floats come back
        size_t n;
        int32_t hdr[5];
        char *buf = learned_file(&MEDUSA_KIND, &n, hdr), msg[256];
        int dim = r.v.target->c.dim, V = r.v.target->c.vocab_size, H = check_medusa(hdr, n, dim, V, msg, sizeof(msg));
        int same = H == d.medusa.heads && !memcmp(buf + MEDUSA_HEADER_BYTES, r.v.params, r.v.n_params * sizeof(float));
        check(same, "medusa.bin: %zu bytes, check_medusa gives %d heads, its %zu floats are the trained heads", n,
              H, r.v.n_params);
        check(check_medusa(hdr, n, dim + 2, V, msg, sizeof(msg)) == -1 &&
              check_medusa(hdr, n - 4, dim, V, msg, sizeof(msg)) == -1,
              "medusa.bin: check_medusa refuses it for another dim and when 4 bytes short");
        free(buf);
    }
    free_drafter_run(&r);
}

static void test_medusa(Rng *rng) {
    test_medusa_grad(rng, 0);
    test_medusa_grad(rng, 1);
    test_medusa_zero_heads(rng, 0);
    test_medusa_zero_heads(rng, 1);
    write_drafter_fixtures();
    test_medusa_learns(0);
    test_medusa_learns(1);
    size_t C = 32; // the target's dim: 3 heads of W (C,C) and b (C)
    test_drafter_resume(&MEDUSA_KIND, MEDUSA_HEADER_BYTES, 0, medusa_n_floats(3, (int)C), "the heads",
                        ",agree_h1,agree_h2,agree_h3");
}

// ----------------------------------------------------------------------------
// EAGLE-style drafter (./train eagle): the gradient through the unrolled
// chain, zero W2/b2 = the target, training lowers the loss, eagle.bin,
// kill/resume

static double loss_eagle(void *p) {
    Eagle *e = p;
    eagle_transpose(e); // params written: W^T again
    return eagle_loss(e, 0, NULL, NULL, NULL);
}

// A drafter of width Hd unrolled U steps on tiny_model's random target over
// B x T random tokens (the target's forward done): W1 N(0, std1), W2 and the
// biases N(0, std2) (not zero: silu's curvature and every path count)
static void eagle_case(Eagle *e, Rng *rng, int Hd, int U, float feat, int B, int T, float std1, float std2) {
    memset(e, 0, sizeof(*e));
    e->target = tiny_model(rng, B, T);
    build_eagle(e, Hd, U, feat);
    fill_normal(e->params, e->n_params, std2, rng);
    fill_normal(e->params + eagle_w1(e), eagle_b1(e), std1, rng);
    eagle_transpose(e);
    int *tok, *tg;
    random_batch(rng, B * T, e->target.c.vocab_size, &tok, &tg);
    eagle_target(e, tok, tg);
    free(tok); free(tg);
}

// dL/dW1, db1, dW2, db2 against finite differences, through U unrolled steps
// (f_1 feeds step 2 by the residual and W1's f-half), soft targets, feature loss on
static void test_eagle_grad(Rng *rng, int U) {
    enum { Hd = 12, B = 2, T = 8 };
    Eagle e;
    eagle_case(&e, rng, Hd, U, 0.5f, B, T, 0.4f, 0.3f);
    zero(e.grads, e.n_params);
    eagle_loss(&e, 1, NULL, NULL, NULL);
    Tensor t[4];
    int n = eagle_tensors(&e, t);
    check(t[3].off + t[3].n == e.n_params, "eagle: W1, b1, W2, b2 cover its %zu floats", e.n_params);
    char name[64];
    snprintf(name, sizeof(name), "eagle, unroll %d,", U);
    gradcheck_tensors(name, loss_eagle, &e, e.params, e.grads, t, n);
    free_eagle(&e);
}

// W2 = b2 = 0: f_s = f_{s-1} = z_t whatever W1 is; the loss and agreement
// from the definitions, in double: step s at row (b, t), t + s < T, predicts
// with the target's softmax q at (b, t); its CE target is the target's
// softmax p at (b, t + s), its feature target z at (b, t + s); agreement:
// top-1 of q == top-1 of p.
static double eagle_zero_reference(const Eagle *e, double *agree) {
    int B = e->target.B, T = e->target.T, V = e->target.c.vocab_size, C = e->target.c.dim;
    const float *logits = e->target.a.logits, *z = e->target.a.xf;
    double loss = 0.0;
    for (int s = 1; s <= e->U; s++) {
        double ce = 0.0, sq = 0.0, rows = 0.0;
        agree[s - 1] = 0.0;
        for (int b = 0; b < B; b++)
            for (int t = 0; t + s < T; t++, rows++) {
                size_t nq = (size_t)b * T + t, np = nq + (size_t)s;
                const float *q = logits + nq * V, *p = logits + np * V;
                ce += soft_ce(p, q, V);
                for (int i = 0; i < C; i++) {
                    double d = (double)z[nq * C + i] - z[np * C + i];
                    sq += d * d;
                }
                agree[s - 1] += argmax_of(q, V) == argmax_of(p, V);
            }
        loss += (ce / rows + e->feat * sq / (rows * C)) / e->U;
        agree[s - 1] /= rows;
    }
    return loss;
}

static void test_eagle_zero(Rng *rng) {
    enum { Hd = 12, U = 3, B = 2, T = 8 };
    Eagle e;
    eagle_case(&e, rng, Hd, U, 0.3f, B, T, 0.4f, 0.0f); // W1 random, b1 = W2 = b2 = 0
    fill_normal(e.params + eagle_b1(&e), (size_t)Hd, 0.3f, rng); // b1 too: still f' = f
    eagle_transpose(&e);
    size_t N = (size_t)B * T, C = (size_t)e.target.c.dim, V = (size_t)e.target.c.vocab_size;
    int same = 1;
    for (int s = 1; s <= U; s++) {
        eagle_step_forward(&e, s);
        same &= !memcmp(e.f[s - 1], e.target.a.xf, N * C * sizeof(float));
        same &= !memcmp(e.logits, e.target.a.logits, N * V * sizeof(float));
    }
    double agree[U] = {0}, want_agree[U] = {0};
    double loss = eagle_loss(&e, 0, NULL, NULL, agree), want = eagle_zero_reference(&e, want_agree);
    double err_agree = agree_error(agree, want_agree, &e.target, U);
    check(same && fabs(loss - want) < 1e-5 * want && err_agree < 1e-12,
          "eagle, W2 = b2 = 0 (W1, b1 random), %d steps: every f_s == z and its logits == the target's, bit for "
          "bit; loss %.6f vs %.6f (CE + %.1f x feature MSE) and top-1 agreement (max error %.1e) from the "
          "definition in double", U, loss, want, e.feat, err_agree);
    free_eagle(&e);
}

// 40 steps on the counting data: validation loss and agreement before and
// after; then eagle.bin
static void test_eagle_learns(void) {
    DrafterOpts d = tiny_drafter_opts(NULL, NULL);
    DrafterRun r;
    DraftEval v0, v1;
    drafter_learn(&EAGLE_KIND, &d, &r, &v0, &v1);
    check(v1.loss < 0.8 * v0.loss && v1.ce[1] < 0.8 * v0.ce[1] && v1.agree[0] > v0.agree[0] + 0.02 &&
          v1.agree[1] > v0.agree[1] + 0.02,
          "eagle: 40 steps lower the val loss %.3f -> %.3f (want < 0.8x; CE step 1 %.3f -> %.3f, step 2 %.3f -> "
          "%.3f) and raise the top-1 agreement with the target, step 1 %.3f -> %.3f, step 2 %.3f -> %.3f (want "
          "+ 0.02)", v0.loss, v1.loss, v0.ce[0], v1.ce[0], v0.ce[1], v1.ce[1], v0.agree[0], v1.agree[0],
          v0.agree[1], v1.agree[1]);
    size_t n;
    int32_t hdr[5];
    char *buf = learned_file(&EAGLE_KIND, &n, hdr), msg[256];
    int dim = r.v.target->c.dim, V = r.v.target->c.vocab_size;
    int Hd = check_eagle(hdr, n, dim, V, msg, sizeof(msg));
    int same = Hd == 2 * dim && n == EAGLE_HEADER_BYTES + eagle_n_floats(dim, Hd) * sizeof(float) &&
               !memcmp(buf + EAGLE_HEADER_BYTES, r.v.params, r.v.n_params * sizeof(float));
    check(same, "eagle.bin: %zu bytes, check_eagle gives hidden %d (2 dim), its %zu floats are the trained drafter",
          n, Hd, r.v.n_params);
    check(check_eagle(hdr, n, dim + 2, V, msg, sizeof(msg)) == -1 &&
          check_eagle(hdr, n - 4, dim, V, msg, sizeof(msg)) == -1 &&
          check_eagle(hdr, n, dim, V + 1, msg, sizeof(msg)) == -1,
          "eagle.bin: check_eagle refuses it for another dim, another vocab, and when 4 bytes short");
    free(buf);
    free_drafter_run(&r);
}

static void test_eagle(Rng *rng) {
    test_eagle_grad(rng, 2);
    test_eagle_grad(rng, 3);
    test_eagle_zero(rng);
    write_drafter_fixtures();
    test_eagle_learns();
    size_t C = 32, Hd = 2 * C; // the target's dim, -hidden 0: W2 (C,Hd) after W1 (Hd,2C) and b1 (Hd)
    test_drafter_resume(&EAGLE_KIND, EAGLE_HEADER_BYTES, Hd * 2 * C + Hd, C * Hd, "W2", ",agree_s1,agree_s2");
}

// ----------------------------------------------------------------------------
// corpus reader: unwrapping, document breaks, held-out split

static void write_text(const char *path, const char *text) {
    FILE *f = xfopen(path, "wb");
    xfwrite(text, 1, strlen(text), f, path);
    if (fclose(f) != 0) die("%s: close failed", path);
}

static void test_corpus(void) {
    make_dir("build/test/corpus");
    write_text("build/test/corpus/children.txt",
               "Title\n\nOnce there was a\ncat.  \n\n\n\nCHAPTER II\n\nIt sat\non a mat.\n");
    write_text("build/test/corpus/tinystories_train_head.txt", "A dog ran.\nHe was fast.\n<|endoftext|>\nB.\n");
    write_text("build/test/corpus/tinystories_valid_head.txt",
               "end of one.\n\nOnce upon a time, x.\n\nMore x.\n\nOnce upon a time, y.\n");
    // the validation head: its paragraphs that start in the last HELD_OUT_TAIL bytes are the
    // held-out text of `train bpb`, never read; here 3 paragraphs come before that tail
    CharBuf valid = {0};
    const char *head = "end of one.\n\nOnce upon a time, x.\n\nMore x.\n\nOnce upon a time, y.\n\n";
    charbuf_add(&valid, head, strlen(head));
    const char *later = "Once upon a time, held out.\n\n"; // 29 bytes
    while (valid.n < HELD_OUT_TAIL + 100) charbuf_add(&valid, later, strlen(later));
    charbuf_add(&valid, "", 1);
    write_text("build/test/corpus/tinystories_valid_head.txt", valid.p);
    Corpus c = {0};
    Sources src = read_sources("trainer/sources.tsv"); // the shipped file: the layouts as make weights reads them
    check(src.n == 8 && src.s[3].layout == LAYOUT_STORIES && !strcmp(src.s[3].story_start, "Once upon a time") &&
          src.s[3].never_tail == HELD_OUT_TAIL && src.s[0].val_every == 25 &&
          !strcmp(src.s[6].name, "targetgen") && !strcmp(src.s[6].file, "runs/synth/target.txt") &&
          src.s[6].layout == LAYOUT_ENDOFTEXT && !strcmp(src.s[7].name, "targetrun") &&
          !strcmp(src.s[7].file, "runs/synth/target_run.txt") && src.s[7].layout == LAYOUT_ENDOFTEXT,
          "trainer/sources.tsv: 8 sources; the validation head is stories:Once upon a time, its last %d bytes never "
          "read; targetgen and targetrun (the targets' own stories) are runs/synth/target.txt and "
          "runs/synth/target_run.txt, endoftext", HELD_OUT_TAIL);
    read_corpus(&c, "build/test/corpus", "children=1,tinystories=2", &src);
    const char *want[] = {"Title\nOnce there was a cat.", "CHAPTER II\nIt sat on a mat.", "A dog ran.\nHe was fast.",
                          "B.", "end of one.", "Once upon a time, x.\nMore x.", "Once upon a time, y."};
    int ok = c.n >= 7;
    for (size_t d = 0; ok && d < 7; d++) ok = !strcmp(c.text.p + c.docs[d].off, want[d]);
    check(ok, "corpus: books unwrapped, 2+ blank lines and <|endoftext|> and \"Once upon a time\" split (%zu docs)", c.n);
    int held_out_read = 0;
    for (size_t d = 7; d < c.n; d++) held_out_read += !strcmp(c.text.p + c.docs[d].off, "Once upon a time, held out.");
    size_t before_tail = (valid.n - 1 - HELD_OUT_TAIL - strlen(head)) / strlen(later) + 1;
    check(held_out_read <= (int)before_tail, "corpus: the last %d bytes of the validation head are never read "
          "(%d of its paragraphs read, at most %zu start before that tail)", HELD_OUT_TAIL, held_out_read, before_tail);
    check(held_out_read >= 1, "corpus: the validation head before that tail is read (%d later paragraphs)", held_out_read);
    free(valid.p);
    check(c.docs[0].copies == 1 && c.docs[2].copies == 2, "corpus: -mix weights become copies (children 1, tinystories 2)");
    free_corpus(&c);
    free(src.s);
}

// ----------------------------------------------------------------------------
// tokenizer

// llama2.c's encoder as a direct loop: scan for the best-scoring adjacent pair
// whose concatenation is a token, leftmost on ties, merge, repeat.
static void encode_direct(const Vocab *v, const char *text, IntBuf *out) {
    Encoder e;
    build_encoder(&e, v, (int)v->str.n);
    int n = encoder_symbols(&e, text, strlen(text), 1), *s = e.sym;
    char buf[1024];
    for (;;) {
        int best = -1, best_id = -1;
        float best_score = -1e30f;
        for (int i = 0; i + 1 < n; i++) {
            int la = strtable_len(&v->str, s[i]), lb = strtable_len(&v->str, s[i + 1]);
            memcpy(buf, strtable_str(&v->str, s[i]), (size_t)la);
            memcpy(buf + la, strtable_str(&v->str, s[i + 1]), (size_t)lb);
            int id = strtable_find(&v->str, buf, la + lb);
            if (id >= 0 && v->score[id] > best_score) { best = i; best_id = id; best_score = v->score[id]; }
        }
        if (best < 0) break;
        s[best] = best_id;
        memmove(s + best + 1, s + best + 2, (size_t)(n - best - 2) * sizeof(int));
        n--;
    }
    for (int i = 0; i < n; i++) intbuf_push(out, s[i]);
    free_encoder(&e);
}

// Every byte value once, so a byte token can point at its byte (constant).
#define BYTE4(i) (char)(i), (char)((i) + 1), (char)((i) + 2), (char)((i) + 3)
#define BYTE16(i) BYTE4(i), BYTE4((i) + 4), BYTE4((i) + 8), BYTE4((i) + 12)
#define BYTE64(i) BYTE16(i), BYTE16((i) + 16), BYTE16((i) + 32), BYTE16((i) + 48)
static const char ALL_BYTES[256] = {BYTE64(0), BYTE64(64), BYTE64(128), BYTE64(192)};

// Bytes a token stands for: byte tokens are their byte, BOS/EOS/<unk> nothing.
static int token_bytes(const Vocab *v, int id, const char **s) {
    if (id >= TOKEN_BYTE0 && id < TOKEN_BYTE0 + 256) {
        *s = &ALL_BYTES[id - TOKEN_BYTE0];
        return 1;
    }
    if (id < TOKEN_BYTE0) { *s = ""; return 0; }
    *s = strtable_str(&v->str, id);
    return strtable_len(&v->str, id);
}

static void test_tokenizer(void) {
    const char *texts[] = {
        "Once upon a time, there was a little cat named Tom. Tom liked to play in the sun.\n",
        "\u2018Oh dear! Oh dear! I shall be late!\u2019 said the Rabbit; \u201cwhat a day\u201d \u2014 she didn't know.\n",
        "The dog's ball was red. They played and played until the sun went down at 1234 o'clock.\n",
    };
    Corpus c = {0};
    for (int rep = 0; rep < 30; rep++)
        for (int i = 0; i < 3; i++) corpus_add(&c, texts[i], strlen(texts[i]), 0, 0, 1);
    Vocab v = {0};
    train_tokenizer(&v, &c, 420);
    check(v.str.n == 420, "BPE trained to 420 tokens (got %zu)", v.str.n);
    check(strtable_find(&v.str, "\n<s>\n", 5) == 1 && strtable_find(&v.str, "<0x00>", 6) == 3 &&
          strtable_find(&v.str, "<0xFF>", 6) == 258 && strtable_find(&v.str, "\xe2\x80\x99", 3) > 258,
          "fixed tokens: BOS \"\\n<s>\\n\", <0x00>..<0xFF> at 3..258; curly quote is a token");
    OutputFile tok_out;
    plan_or_die(&tok_out, "build/test/tok.bin");
    write_tokenizer(&tok_out, &v, 420);
    io_forget(); // read back below
    Vocab back = {0};
    read_tokenizer(&back, "build/test/tok.bin");
    int same = back.str.n == 420;
    for (int i = 0; same && i < 420; i++)
        same = back.score[i] == v.score[i] && strtable_len(&back.str, i) == strtable_len(&v.str, i) &&
               !memcmp(strtable_str(&back.str, i), strtable_str(&v.str, i), (size_t)strtable_len(&v.str, i));
    check(same, "tokenizer.bin written and read back: 420 tokens, same strings and scores");
    const char *probe[] = {texts[0], texts[1], texts[2], "na\xc3\xafve caf\xc3\xa9 \xe2\x98\x83 played played",
                           "  two  spaces\n\nand lines", "x"};
    Encoder e;
    build_encoder(&e, &back, 420);
    for (int i = 0; i < 6; i++) {
        IntBuf fast = {0}, slow = {0};
        CharBuf dec = {0};
        encode(&e, probe[i], strlen(probe[i]), 1, &fast);
        encode_direct(&back, probe[i], &slow);
        for (size_t k = 0; k < fast.n; k++) {
            const char *s;
            int n = token_bytes(&back, fast.p[k], &s);
            charbuf_add(&dec, s, (size_t)n);
        }
        int eq = fast.n == slow.n && !memcmp(fast.p, slow.p, fast.n * sizeof(int));
        int rt = dec.n == strlen(probe[i]) + 1 && dec.p[0] == ' ' && !strcmp(dec.p + 1, probe[i]);
        check(eq && rt, "encode probe %d: heap encoder == direct llama2.c loop (%zu tokens), decodes back to "
              "\" \" + text", i, fast.n);
        free(fast.p); free(slow.p); free(dec.p);
    }
    // -paragraphs: a split copy is every paragraph after its own BOS, a whole one the story after one BOS
    const char story[] = "Once upon a time, there was a cat.\nThe cat played.\n\"Hi!\" said Tom.";
    IntBuf whole = {0}, split = {0}, want = {0};
    encode_document(&e, story, strlen(story), &whole);
    push_copy(&split, &e, story, strlen(story), &whole, 0);
    int same_whole = split.n == whole.n && !memcmp(split.p, whole.p, whole.n * sizeof(int));
    split.n = 0;
    push_copy(&split, &e, story, strlen(story), &whole, 1);
    encode_document(&e, "Once upon a time, there was a cat.", 34, &want);
    encode_document(&e, "The cat played.", 15, &want);
    encode_document(&e, "\"Hi!\" said Tom.", 15, &want);
    int bos = 0;
    for (size_t k = 0; k < split.n; k++) bos += split.p[k] == TOKEN_BOS;
    check(same_whole && bos == 3 && split.n == want.n && !memcmp(split.p, want.p, want.n * sizeof(int)),
          "-paragraphs: whole copy = BOS + story (%zu tokens); split copy = 3 x (BOS + paragraph) (%zu tokens, "
          "%d BOS)", whole.n, split.n, bos);
    int n_split = 0;
    for (size_t d = 0; d < 1000; d++)
        for (int k = 0; k < 4; k++) n_split += split_copy(0.35, d, k);
    check(n_split > 1350 && n_split < 1450 && !split_copy(0, 7, 1) && split_copy(1, 7, 1),
          "-paragraphs 0.35: %d of 4000 copies split (0: none, 1: all)", n_split);
    free(whole.p); free(split.p); free(want.p);
    free_encoder(&e);
    free_vocab(&back);
    free_vocab(&v);
    free_corpus(&c);
}

// ./train quantize writes llama2.c's version 2 (int8 groups of 64 here), the
// same bytes as model.h's q80_export; ./train bpb's reader (load_q80_model)
// reads it back as floats within half a step of each group's scale of the
// originals, the norms and RoPE tables exactly
static void test_quantize(void) {
    Config c = {64, 192, 2, 4, 2, 300, 32};
    Model a, b;
    build_model(&a, &c, 1, c.seq_len, 0);
    Rng r = {77};
    size_t rope = (size_t)c.seq_len * head_size(&c); // the two tables, left as build_model made them
    for (size_t i = 0; i < a.n_params - rope; i++) a.params[i] = 2.0f * rng_uniform(&r) - 1.0f;
    make_dir("build/test/train");
    check(write_checkpoint("build/test/train/q_f32.bin", &c, a.params, 1) == 0, "writing the f32 model");
    char *argv[] = {"train", "quantize", "build/test/train/q_f32.bin", "build/test/train/q80.bin", NULL};
    check(cmd_quantize(4, argv) == 0, "./train quantize");
    io_forget(); // the run's files: q80.bin, its output, is read below
    size_t n;
    char *file = read_file("build/test/train/q80.bin", &n);
    unsigned char *img = malloc(q80_file_bytes(&c, 1, 64));
    q80_export(img, &c, &a.w, 1, 64);
    check(n == q80_file_bytes(&c, 1, 64) && !memcmp(file, img, n), "quantize wrote %zu bytes, the same as q80_export", n);
    check(load_q80_model(&b, "build/test/train/q80.bin", c.seq_len) == 1 && b.n_params == a.n_params, "reading it back");
    double worst = 0;
    for (size_t i = 0; i < a.n_params; i++) worst = fmax(worst, fabs((double)a.params[i] - b.params[i]));
    check(worst <= 0.5 / 127 + 1e-6, "dequantised weights within %g of the floats (half a step: 1/254)", worst);
    check(!memcmp(a.w.rms_att, b.w.rms_att, 4 * (size_t)c.dim * c.n_layers) && !memcmp(a.w.rope_cos, b.w.rope_cos, 4 * rope),
          "norms and RoPE tables exact");
    free_model(&b);
    check(load_q80_model(&b, "build/test/train/q_f32.bin", c.seq_len) == 0, "a legacy file is not version 2");
    printf("quantize: version 2 in groups of 64 == q80_export's bytes; read back within %.4f (half a step: %.4f)\n",
           worst, 0.5 / 127);
    free(file); free(img);
    free_model(&a);
}

// ./train quantize IN OUT [GS] in a child; fd_out: OUT is /proc/self/fd/N of IN opened there
typedef struct {
    const char *in, *out, *gs;
    int fd_out;
} QuantizeArgs;

static void child_quantize(void *p) {
    const QuantizeArgs *q = p;
    char fd_path[64];
    snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", q->fd_out ? open(q->in, O_RDONLY) : -1);
    char *argv[] = {"train", "quantize", (char *)q->in, q->fd_out ? fd_path : (char *)q->out, (char *)q->gs, NULL};
    cmd_quantize(q->gs ? 5 : 4, argv);
}

// issue 49: quantize's OUT goes through the registry: OUT == IN by any name, and a
// device, refused before any work, IN kept; a write that fails (ulimit -f) leaves
// the old OUT and no temp file; a version-2 IN and a bad GS get quantize's own words
static void test_quantize_files(void) {
    const char *dir = "build/test/train/q", *in = "build/test/train/q/in.bin", *old = "build/test/train/q/old.bin";
    make_dir(dir);
    copy_file("build/test/train/q_f32.bin", in);
    remove("build/test/train/q/hard.bin"), remove("build/test/train/q/sym.bin");
    check(link(in, "build/test/train/q/hard.bin") == 0 && symlink("in.bin", "build/test/train/q/sym.bin") == 0,
          "a hard link and a symlink to IN");
    const char *keep_in[] = {in, NULL}, *keep_old[] = {old, NULL};
    const QuantizeArgs same[] = {{in, in, NULL, 0}, {in, "./build/test/train/q/in.bin", NULL, 0},
                                 {in, "build/test/train/q/hard.bin", NULL, 0}, {in, "build/test/train/q/sym.bin", NULL, 0},
                                 {in, NULL, NULL, 1}};
    const char *how[] = {"OUT == IN", "OUT ./IN", "OUT a hard link to IN", "OUT a symlink to IN", "OUT /proc/self/fd/N of IN"};
    for (int i = 0; i < 5; i++) {
        copy_file("build/test/train/q_f32.bin", in); // in place (the hard link stays): as it was, whatever went before
        expect_refused(how[i], child_quantize, (void *)&same[i], 0, "are the same file: writing it would replace an input",
                       keep_in);
    }
    copy_file("build/test/train/q_f32.bin", in);
    expect_refused("OUT /dev/null", child_quantize, &(QuantizeArgs){in, "/dev/null", NULL, 0}, 0,
                   "/dev/null: not a regular file", keep_in);
    FILE *f = xfopen(old, "wb");
    fputs("the previous OUT\n", f);
    fclose(f);
    expect_refused("OUT written past ulimit -f (4 KB)", child_quantize, &(QuantizeArgs){in, old, NULL, 0}, 4096,
                   "write failed: File too large", keep_old);
    check(temp_files(dir) == 0, "no temp file left in %s after the failed write (%d)", dir, temp_files(dir));
    expect_refused("a version-2 IN", child_quantize, &(QuantizeArgs){"build/test/train/q80.bin", old, NULL, 0}, 0,
                   "a versioned llama2.c export (version 2: int8 already); quantize reads the legacy f32 format", keep_old);
    expect_refused("GS 32abc", child_quantize, &(QuantizeArgs){in, old, "32abc", 0}, 0,
                   "GS 32abc: expected a whole number", keep_old);
    expect_refused("GS 99999999999", child_quantize, &(QuantizeArgs){in, old, "99999999999", 0}, 0,
                   "GS (group size) 99999999999: expected a positive multiple of 4", keep_old);
}

int main(void) {
    Rng rng = {12345};
    test_gemm();
    test_matmul_grad(&rng);
    test_rmsnorm_grad(&rng);
    test_rope_grad(&rng);
    test_attention_grad(&rng, 2, 5, 4, 2, 6);   // grouped-query, scalar edges of the kernel
    test_attention_grad(&rng, 1, 13, 2, 1, 16); // whole 6x16 kernel tiles too
    test_swiglu_grad(&rng);
    test_embedding_grad(&rng);
    test_xent_grad(&rng, 0);
    test_xent_grad(&rng, 1);
    test_model_grad(&rng, 0, 0.0f);
    test_model_grad(&rng, 1, 0.0f);
    test_model_grad(&rng, 0, 0.3f);
    test_model_grad(&rng, 1, 0.3f);
    test_dropout();
    test_overfit();
    test_resume();
    test_run_files();
    test_medusa(&rng);
    test_drafter_files();
    test_eagle(&rng);
    test_corpus();
    test_tokenizer();
    test_quantize();
    test_quantize_files();
    return check_exit("test_train");
}
