// train.c - trains what specdec.c runs: the tokenizer (tokenizer.c, included
// below), the target model and the draft model (this file); C11, libc, libm,
// pthreads.
//
//   ./train tokenizer   corpus -> tokenizer.bin: byte-level BPE, llama2.c format
//   ./train data        corpus + tokenizer.bin -> token streams under runs/
//   ./train model       train a llama model (AdamW, resumable); with -teacher,
//                       distil a draft from a target checkpoint's softmax
//   ./train medusa      train Medusa heads (Cai et al. 2024) on a frozen target
//                       checkpoint -> medusa.bin (model.h), resumable
//   ./train eagle       train an EAGLE-style feature drafter (Li et al. 2024) on
//                       a frozen target checkpoint -> eagle.bin (model.h), resumable
//   ./train eval        validation loss of a checkpoint on a token file
//   ./train bpb         bits per byte of a checkpoint + tokenizer on a text
//   ./train dump-logits forward a checkpoint over given tokens (for tests)
//   ./train encode      token ids of a text file (for tests)
//   ./train bench       matmul GFLOP/s and training tokens/s of a shape
// Each prints its options with -h.
//
// The model is llama2.c's: token embedding; n_layers x [RMSNorm, attention
// with RoPE and grouped-query heads, residual add, RMSNorm, SwiGLU FFN,
// residual add]; RMSNorm; a classifier that shares the embedding matrix.
// Each layer is a forward/backward pair with the same argument order
// (outputs first, then inputs); backward functions ADD (+=) into every
// gradient they write, so callers zero gradients once and branches sum.
#include "tokenizer.c"

// ----------------------------------------------------------------------------
// matmul kernel: C (M,N) += A (M,K) @ B (K,N)
//
// A is read through strides, A(i,k) = a[i*sai + k*sak], so the one kernel
// serves all three products of a linear layer (forward, and both halves of
// backward, one of which reads A transposed); B and C are row-major.
// C is cut into TILE_M x TILE_N tiles, each summed over K in BLOCK_K chunks
// with 12 AVX2 accumulators: per k, 2 vector loads of B and 6 broadcasts of A
// feed 12 FMAs. BLOCK_N x BLOCK_K of B (128 KB) stays in L2 across the rows.
// Elements outside whole tiles take the scalar path, which rounds like the
// vector one (one fmaf per k, same order), so every element of C gets the same
// value whichever path and thread computed it: results do not depend on the
// thread count.

#define TILE_M 6
#define TILE_N 16
#define BLOCK_K 256
#define BLOCK_N 128

#ifdef HAVE_AVX2
#define MULADD(a, b, c) fmaf((a), (b), (c))
#else
#define MULADD(a, b, c) ((a) * (b) + (c))
#endif

typedef struct {
    float *c;         // (M, ldc)
    const float *a;   // A(i,k) at a[i*sai + k*sak]
    const float *b;   // (K, ldb)
    size_t M, N, K, sai, sak, ldb, ldc;
    int threads;      // the rows of C are split over these
} Gemm;

// C[i0:i1, j0:j1] += A[i0:i1, k0:k1] @ B[k0:k1, j0:j1], one element at a time
static void gemm_scalar(const Gemm *g, size_t i0, size_t i1, size_t j0, size_t j1, size_t k0, size_t k1) {
    for (size_t i = i0; i < i1; i++)
        for (size_t j = j0; j < j1; j++) {
            float s = g->c[i * g->ldc + j];
            for (size_t k = k0; k < k1; k++) s = MULADD(g->a[i * g->sai + k * g->sak], g->b[k * g->ldb + j], s);
            g->c[i * g->ldc + j] = s;
        }
}

#ifdef HAVE_AVX2
// Row r of a tile: c_r0, c_r1 (16 floats of C) += A(r,k) * b0, b1. Named
// accumulators, not an array, so that all 12 stay in registers.
#define TILE_LOAD(r) __m256 c##r##0 = _mm256_loadu_ps(c + (r) * ldc), c##r##1 = _mm256_loadu_ps(c + (r) * ldc + 8)
#define TILE_FMA(r)                                                   \
    do {                                                              \
        __m256 ar = _mm256_broadcast_ss(a + (r) * sai);               \
        c##r##0 = _mm256_fmadd_ps(ar, b0, c##r##0);                   \
        c##r##1 = _mm256_fmadd_ps(ar, b1, c##r##1);                   \
    } while (0)
#define TILE_STORE(r) (_mm256_storeu_ps(c + (r) * ldc, c##r##0), _mm256_storeu_ps(c + (r) * ldc + 8, c##r##1))
#endif

// one whole TILE_M x TILE_N tile of C over k in [k0, k1)
static void gemm_tile(const Gemm *g, size_t i0, size_t j0, size_t k0, size_t k1) {
#ifdef HAVE_AVX2
    size_t ldc = g->ldc, sai = g->sai, sak = g->sak, ldb = g->ldb;
    float *c = g->c + i0 * ldc + j0;
    TILE_LOAD(0); TILE_LOAD(1); TILE_LOAD(2); TILE_LOAD(3); TILE_LOAD(4); TILE_LOAD(5);
    const float *a = g->a + i0 * sai + k0 * sak, *b = g->b + k0 * ldb + j0;
    for (size_t k = k0; k < k1; k++, a += sak, b += ldb) {
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
        TILE_FMA(0); TILE_FMA(1); TILE_FMA(2); TILE_FMA(3); TILE_FMA(4); TILE_FMA(5);
    }
    TILE_STORE(0); TILE_STORE(1); TILE_STORE(2); TILE_STORE(3); TILE_STORE(4); TILE_STORE(5);
#else
    gemm_scalar(g, i0, i0 + TILE_M, j0, j0 + TILE_N, k0, k1);
#endif
}

// the bottom edge: mr < TILE_M rows x TILE_N columns, same rounding as a tile
static void gemm_tile_rows(const Gemm *g, size_t i0, int mr, size_t j0, size_t k0, size_t k1) {
#ifdef HAVE_AVX2
    __m256 acc[TILE_M][2];
    float *c = g->c + i0 * g->ldc + j0;
    for (int r = 0; r < mr; r++) {
        acc[r][0] = _mm256_loadu_ps(c + r * g->ldc);
        acc[r][1] = _mm256_loadu_ps(c + r * g->ldc + 8);
    }
    const float *a = g->a + i0 * g->sai + k0 * g->sak, *b = g->b + k0 * g->ldb + j0;
    for (size_t k = k0; k < k1; k++, a += g->sak, b += g->ldb) {
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
        for (int r = 0; r < mr; r++) {
            __m256 ar = _mm256_broadcast_ss(a + r * g->sai);
            acc[r][0] = _mm256_fmadd_ps(ar, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(ar, b1, acc[r][1]);
        }
    }
    for (int r = 0; r < mr; r++) {
        _mm256_storeu_ps(c + r * g->ldc, acc[r][0]);
        _mm256_storeu_ps(c + r * g->ldc + 8, acc[r][1]);
    }
#else
    gemm_scalar(g, i0, i0 + (size_t)mr, j0, j0 + TILE_N, k0, k1);
#endif
}

// rows [m0, m1) of C, blocked for the caches
static void gemm_rows(const void *args, size_t m0, size_t m1) {
    const Gemm *g = args;
    for (size_t j0 = 0; j0 < g->N; j0 += BLOCK_N) {
        size_t j1 = j0 + BLOCK_N < g->N ? j0 + BLOCK_N : g->N;
        for (size_t k0 = 0; k0 < g->K; k0 += BLOCK_K) {
            size_t k1 = k0 + BLOCK_K < g->K ? k0 + BLOCK_K : g->K;
            for (size_t i = m0; i < m1; i += TILE_M) {
                size_t j = j0;
                if (i + TILE_M <= m1)
                    for (; j + TILE_N <= j1; j += TILE_N) gemm_tile(g, i, j, k0, k1);
                else
                    for (; j + TILE_N <= j1; j += TILE_N) gemm_tile_rows(g, i, (int)(m1 - i), j, k0, k1);
                gemm_scalar(g, i, i + TILE_M < m1 ? i + TILE_M : m1, j, j1, k0, k1);
            }
        }
    }
}

// the rows of C split over the threads
static void gemm(const Gemm *g) { parallel_range(gemm_rows, g, g->M, TILE_M, g->threads); }

// dst (cols, rows) = src (rows, cols) transposed
static void transpose(float *dst, const float *src, size_t rows, size_t cols) {
    for (size_t i0 = 0; i0 < rows; i0 += 32)
        for (size_t j = 0; j < cols; j++)
            for (size_t i = i0; i < rows && i < i0 + 32; i++) dst[j * rows + i] = src[i * cols + j];
}

// ----------------------------------------------------------------------------
// vector helpers

static void zero(float *p, size_t n) { memset(p, 0, n * sizeof(float)); }

// y[i] += alpha * x[i]
static void vec_axpy(float *y, float alpha, const float *x, int n) {
    int i = 0;
#ifdef HAVE_AVX2
    __m256 va = _mm256_set1_ps(alpha);
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
#endif
    for (; i < n; i++) y[i] = MULADD(alpha, x[i], y[i]);
}

// ----------------------------------------------------------------------------
// layers: forward/backward pairs. N = B*T rows (tokens), C = dim.

// out (N,C) = emb (V,C) rows picked by tokens (N)
static void embedding_forward(float *out, const int *tokens, const float *emb, size_t N, int C) {
    for (size_t n = 0; n < N; n++) memcpy(out + n * C, emb + (size_t)tokens[n] * C, (size_t)C * sizeof(float));
}

static void embedding_backward(float *demb, const float *dout, const int *tokens, size_t N, int C) {
    for (size_t n = 0; n < N; n++) vec_axpy(demb + (size_t)tokens[n] * C, 1.0f, dout + n * C, C);
}

// out (N,C) = inp * rstd * gain per row, rstd (N) = 1/sqrt(mean(inp^2) + 1e-5)
static void rmsnorm_forward(float *out, float *rstd, const float *inp, const float *gain, size_t N, int C) {
    for (size_t n = 0; n < N; n++) {
        const float *x = inp + n * C;
        float ss = 0.0f;
        for (int i = 0; i < C; i++) ss += x[i] * x[i];
        float r = 1.0f / sqrtf(ss / C + 1e-5f);
        rstd[n] = r;
        for (int i = 0; i < C; i++) out[n * C + i] = gain[i] * (r * x[i]);
    }
}

// y = g*r*x with r = (mean(x^2)+eps)^-1/2, dr/dx_j = -r^3 x_j / C:
//   dx_j = r g_j dy_j - x_j r^3/C sum_i dy_i g_i x_i,   dg_i = sum_rows dy_i r x_i
static void rmsnorm_backward(float *dinp, float *dgain, const float *dout, const float *inp,
                             const float *gain, const float *rstd, size_t N, int C) {
    for (size_t n = 0; n < N; n++) {
        const float *x = inp + n * C, *dy = dout + n * C;
        float r = rstd[n], dot = 0.0f;
        for (int i = 0; i < C; i++) dot += dy[i] * gain[i] * x[i];
        float k = dot * r * r * r / C;
        for (int i = 0; i < C; i++) {
            dinp[n * C + i] += r * gain[i] * dy[i] - k * x[i];
            dgain[i] += dy[i] * r * x[i];
        }
    }
}

// out (N,OC) = inp (N,IC) @ W^T, W (OC,IC). The kernel wants B = W^T (IC,OC),
// so the caller passes it transposed: the Model keeps W^T of every matrix,
// made once per optimizer step (transpose_weights), not once per call.
static void matmul_forward(float *out, const float *inp, const float *weight_t, size_t N, int IC, int OC,
                           int threads) {
    memset(out, 0, N * OC * sizeof(float));
    gemm(&(Gemm){.threads = threads, .c = out, .a = inp, .b = weight_t, .M = N, .N = (size_t)OC, .K = (size_t)IC,
                 .sai = (size_t)IC, .sak = 1, .ldb = (size_t)OC, .ldc = (size_t)OC});
}

// dinp (N,IC) += dout (N,OC) @ W (OC,IC)
static void matmul_backward_input(float *dinp, const float *dout, const float *weight, size_t N, int IC, int OC,
                                  int threads) {
    gemm(&(Gemm){.threads = threads, .c = dinp, .a = dout, .b = weight, .M = N, .N = (size_t)IC, .K = (size_t)OC,
                 .sai = (size_t)OC, .sak = 1, .ldb = (size_t)IC, .ldc = (size_t)IC});
}

// dweight (OC,IC) += dout^T (OC,N) @ inp (N,IC)
static void matmul_backward_weight(float *dweight, const float *dout, const float *inp, size_t N, int IC, int OC,
                                   int threads) {
    gemm(&(Gemm){.threads = threads, .c = dweight, .a = dout, .b = inp, .M = (size_t)OC, .N = (size_t)IC, .K = N,
                 .sai = 1, .sak = (size_t)OC, .ldb = (size_t)IC, .ldc = (size_t)IC});
}

// dinp (N,IC) += dout (N,OC) @ W (OC,IC);  dweight (OC,IC) += dout^T @ inp (N,IC)
static void matmul_backward(float *dinp, float *dweight, const float *dout, const float *inp,
                            const float *weight, size_t N, int IC, int OC, int threads) {
    matmul_backward_input(dinp, dout, weight, N, IC, OC, threads);
    matmul_backward_weight(dweight, dout, inp, N, IC, OC, threads);
}

// In place on x (B*T, n_heads, hs): each pair (x[2i], x[2i+1]) of a head at
// position t turns by angle sign * t*theta_i, with cos/sin (seq_len, hs/2)
// the checkpoint's tables (llama2.c's legacy RoPE).
static void rope_rotate(float *x, const float *cos_t, const float *sin_t, int B, int T, int n_heads, int hs,
                        float sign) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < n_heads; h++) {
                float *v = x + (((size_t)b * T + t) * n_heads + h) * hs;
                for (int i = 0; i < hs / 2; i++) {
                    float c = cos_t[(size_t)t * (hs / 2) + i], s = sign * sin_t[(size_t)t * (hs / 2) + i];
                    float v0 = v[2 * i], v1 = v[2 * i + 1];
                    v[2 * i] = v0 * c - v1 * s;
                    v[2 * i + 1] = v0 * s + v1 * c;
                }
            }
}

static void rope_forward(float *x, const float *cos_t, const float *sin_t, int B, int T, int n_heads, int hs) {
    rope_rotate(x, cos_t, sin_t, B, T, n_heads, hs, 1.0f);
}

// In place: dx holds d/d(rotated x) on entry, d/d(x) on return. A rotation's
// transpose is the rotation by the opposite angle.
static void rope_backward(float *dx, const float *cos_t, const float *sin_t, int B, int T, int n_heads, int hs) {
    rope_rotate(dx, cos_t, sin_t, B, T, n_heads, hs, -1.0f);
}

// Causal attention with grouped-query heads, per sequence b and query head h
// (which reads kv head h / (NH/NKV)):
//   att[t][u] = softmax over u <= t of q[t].k[u] / sqrt(hs),  out[t] = sum_u att[t][u] v[u]
// q, out (B*T, NH*hs); k, v (B*T, NKV*hs); att (B, NH, T, T) kept for backward.
// Each head's products are whole (T,T) and (T,hs) matmuls on the gemm kernel:
// the causal mask makes att zero above the diagonal, so the masked half adds
// nothing (it costs 2x the flops, but the kernel is ~8x faster than loops).
// Work is split over (b, kv head) units: a unit owns the dk/dv rows it adds to.
typedef struct {
    float *out, *att, *dq, *dk, *dv;
    const float *q, *k, *v, *dout;
    int B, T, NH, NKV, hs;
} Attention;

// dst (hs, T) = the (T, hs) slice of src whose rows are `stride` floats apart
static void transpose_slice(float *dst, const float *src, int T, int hs, size_t stride) {
    for (int u = 0; u < T; u++)
        for (int d = 0; d < hs; d++) dst[(size_t)d * T + u] = src[u * stride + d];
}

// C (M, N) += A (M, K) @ B (K, N) on this thread; ldc, sai, sak, ldb as in Gemm
static void gemm_here(float *c, const float *a, const float *b, int M, int N, int K, size_t sai, size_t sak,
                      size_t ldb, size_t ldc) {
    Gemm g = {.c = c, .a = a, .b = b, .M = (size_t)M, .N = (size_t)N, .K = (size_t)K,
              .sai = sai, .sak = sak, .ldb = ldb, .ldc = ldc};
    gemm_rows(&g, 0, (size_t)M);
}

// p (T,T): scores -> causal softmax of scale * scores, zero above the diagonal
static void causal_softmax(float *p, int T, float scale) {
    for (int t = 0; t < T; t++) {
        float *row = p + (size_t)t * T, mx = -INFINITY, sum = 0.0f;
        for (int u = 0; u <= t; u++) { row[u] *= scale; mx = row[u] > mx ? row[u] : mx; }
        for (int u = 0; u <= t; u++) { row[u] = expf(row[u] - mx); sum += row[u]; }
        for (int u = 0; u <= t; u++) row[u] /= sum;
        for (int u = t + 1; u < T; u++) row[u] = 0.0f;
    }
}

static void attention_forward_units(const void *args, size_t lo, size_t hi) {
    const Attention *a = args;
    int T = a->T, hs = a->hs, C = a->NH * hs, KV = a->NKV * hs, group = a->NH / a->NKV;
    float *kt = xmalloc((size_t)hs * T * sizeof(float)); // this kv head's keys, (hs, T)
    for (size_t unit = lo; unit < hi; unit++) {
        size_t b = unit / a->NKV, row0 = b * T, kvo = unit % a->NKV * hs;
        transpose_slice(kt, a->k + row0 * KV + kvo, T, hs, (size_t)KV);
        for (int h = (int)(unit % a->NKV) * group, g = 0; g < group; g++, h++) {
            float *p = a->att + (b * a->NH + h) * T * T, *out = a->out + row0 * C + h * hs;
            zero(p, (size_t)T * T);
            gemm_here(p, a->q + row0 * C + h * hs, kt, T, T, hs, C, 1, T, T); // q @ k^T
            causal_softmax(p, T, 1.0f / sqrtf((float)hs));
            for (int t = 0; t < T; t++) zero(out + (size_t)t * C, hs);
            gemm_here(out, p, a->v + row0 * KV + kvo, T, hs, T, T, 1, KV, C); // p @ v
        }
    }
    free(kt);
}

static void attention_forward(float *out, float *att, const float *q, const float *k, const float *v,
                              int B, int T, int NH, int NKV, int hs, int threads) {
    Attention a = {.out = out, .att = att, .q = q, .k = k, .v = v,
                   .B = B, .T = T, .NH = NH, .NKV = NKV, .hs = hs};
    parallel_range(attention_forward_units, &a, (size_t)B * NKV, 1, threads);
}

// With p = att[t], dp = dout v^T, the softmax backward is
// ds[t][u] = p[t][u] (dp[t][u] - sum_w p[t][w] dp[t][w]) * scale (zero where p is);
// then dq += ds k, dk += ds^T q, dv += p^T dout.
static void attention_backward_units(const void *args, size_t lo, size_t hi) {
    const Attention *a = args;
    int T = a->T, hs = a->hs, C = a->NH * hs, KV = a->NKV * hs, group = a->NH / a->NKV;
    float scale = 1.0f / sqrtf((float)hs);
    float *vt = xmalloc((size_t)hs * T * sizeof(float)), *ds = xmalloc((size_t)T * T * sizeof(float));
    for (size_t unit = lo; unit < hi; unit++) {
        size_t b = unit / a->NKV, row0 = b * T, kvo = unit % a->NKV * hs;
        const float *k = a->k + row0 * KV + kvo, *v = a->v + row0 * KV + kvo;
        float *dk = a->dk + row0 * KV + kvo, *dv = a->dv + row0 * KV + kvo;
        transpose_slice(vt, v, T, hs, (size_t)KV);
        for (int h = (int)(unit % a->NKV) * group, g = 0; g < group; g++, h++) {
            const float *p = a->att + (b * a->NH + h) * T * T, *q = a->q + row0 * C + h * hs;
            const float *dout = a->dout + row0 * C + h * hs;
            zero(ds, (size_t)T * T);
            gemm_here(ds, dout, vt, T, T, hs, C, 1, T, T); // dp = dout @ v^T
            for (int t = 0; t < T; t++) {
                const float *pr = p + (size_t)t * T;
                float *dr = ds + (size_t)t * T, pdp = 0.0f;
                for (int u = 0; u <= t; u++) pdp += pr[u] * dr[u];
                for (int u = 0; u <= t; u++) dr[u] = pr[u] * (dr[u] - pdp) * scale;
                for (int u = t + 1; u < T; u++) dr[u] = 0.0f;
            }
            gemm_here(a->dq + row0 * C + h * hs, ds, k, T, hs, T, T, 1, KV, C); // dq += ds @ k
            gemm_here(dk, ds, q, T, hs, T, 1, T, C, KV);                          // dk += ds^T @ q
            gemm_here(dv, p, dout, T, hs, T, 1, T, C, KV);                        // dv += p^T @ dout
        }
    }
    free(vt);
    free(ds);
}

static void attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *q,
                               const float *k, const float *v, const float *att, int B, int T, int NH,
                               int NKV, int hs, int threads) {
    Attention a = {.att = (float *)att, .dq = dq, .dk = dk, .dv = dv, .q = q, .k = k, .v = v,
                   .dout = dout, .B = B, .T = T, .NH = NH, .NKV = NKV, .hs = hs};
    parallel_range(attention_backward_units, &a, (size_t)B * NKV, 1, threads);
}

// out = silu(h1) * h3 elementwise, silu(x) = x sigmoid(x); split over threads (expf is the cost)
typedef struct { float *out, *dh1, *dh3; const float *h1, *h3, *dout; } Swiglu;

static void swiglu_forward_range(const void *args, size_t lo, size_t hi) {
    const Swiglu *s = args;
    for (size_t i = lo; i < hi; i++) {
        float x = s->h1[i];
        s->out[i] = x * (1.0f / (1.0f + expf(-x))) * s->h3[i];
    }
}

static void swiglu_forward(float *out, const float *h1, const float *h3, size_t n, int threads) {
    Swiglu s = {.out = out, .h1 = h1, .h3 = h3};
    parallel_range(swiglu_forward_range, &s, n, 64, threads);
}

// d silu(x)/dx = sig(x) (1 + x (1 - sig(x)))
static void swiglu_backward_range(const void *args, size_t lo, size_t hi) {
    const Swiglu *s = args;
    for (size_t i = lo; i < hi; i++) {
        float x = s->h1[i], sig = 1.0f / (1.0f + expf(-x));
        s->dh1[i] += s->dout[i] * s->h3[i] * sig * (1.0f + x * (1.0f - sig));
        s->dh3[i] += s->dout[i] * x * sig;
    }
}

static void swiglu_backward(float *dh1, float *dh3, const float *dout, const float *h1, const float *h3, size_t n, int threads) {
    Swiglu s = {.dh1 = dh1, .dh3 = dh3, .h1 = h1, .h3 = h3, .dout = dout};
    parallel_range(swiglu_backward_range, &s, n, 64, threads);
}

// out = a + b. Its backward is the identity on both inputs: model_backward
// lets the residual gradient flow on and each branch adds into it.
static void residual_forward(float *out, const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

// Dropout on a residual branch (GPT-2's resid_pdrop), training only: each
// element of x (n) is zeroed with probability p and the others scaled by
// 1/(1-p), which keeps the expectation, so evaluation (p = 0) is the plain
// model. The mask is a hash of (key, element): nothing is stored, backward
// applies the same mask to the gradient with the same call, and a resumed
// run, or any thread count, draws the same masks.
static void dropout_apply(float *x, size_t n, uint64_t key, float p) {
    if (p <= 0.0f) return;
    uint64_t cut = (uint64_t)((double)p * 4294967296.0); // drop when the hash's top 32 bits < cut
    float scale = 1.0f / (1.0f - p);
    for (size_t i = 0; i < n; i++)
        x[i] = (mix64(key + i * 0x9E3779B97F4A7C15ull) >> 32) < cut ? 0.0f : x[i] * scale;
}

// Softmax cross-entropy per row of logits (N,V), against a hard target
// token (targets (N)) or, when soft != NULL, a distribution (soft (N,V), the
// teacher's softmax): loss = sum_v p_v (lse - z_v) with lse = log sum exp z,
// which for a one-hot p is lse - z_target. probs (N,V) may alias logits.
typedef struct {
    float *losses, *probs, *dlogits;
    const float *logits, *soft, *dlosses;
    const int *targets;
    int V;
} SoftmaxXent;

static void softmax_xent_forward_rows(const void *args, size_t lo, size_t hi) {
    const SoftmaxXent *x = args;
    int V = x->V;
    for (size_t n = lo; n < hi; n++) {
        const float *z = x->logits + n * V;
        float *p = x->probs + n * V, mx = -INFINITY;
        for (int i = 0; i < V; i++) if (z[i] > mx) mx = z[i];
        double sum = 0.0, loss = 0.0;
        for (int i = 0; i < V; i++) sum += expf(z[i] - mx);
        float lse = mx + (float)log(sum);
        if (x->soft) for (int i = 0; i < V; i++) loss += x->soft[n * V + i] * (double)(lse - z[i]);
        else loss = lse - z[x->targets[n]];
        x->losses[n] = (float)loss;
        for (int i = 0; i < V; i++) p[i] = expf(z[i] - lse);
    }
}

static void softmax_xent_forward(float *losses, float *probs, const float *logits, const int *targets,
                                 const float *soft, size_t N, int V, int threads) {
    SoftmaxXent x = {.losses = losses, .probs = probs, .logits = logits, .soft = soft,
                     .targets = targets, .V = V};
    parallel_range(softmax_xent_forward_rows, &x, N, 1, threads);
}

// dlogits (N,V) = (probs - target) * dlosses[n]; dlogits may alias probs.
// It writes rather than adds: the loss is where the backward chain starts.
static void softmax_xent_backward_rows(const void *args, size_t lo, size_t hi) {
    const SoftmaxXent *x = args;
    int V = x->V;
    for (size_t n = lo; n < hi; n++) {
        const float *p = x->probs + n * V;
        float *d = x->dlogits + n * V, dl = x->dlosses[n];
        for (int i = 0; i < V; i++) {
            float target = x->soft ? x->soft[n * V + i] : (float)(i == x->targets[n]);
            d[i] = (p[i] - target) * dl;
        }
    }
}

static void softmax_xent_backward(float *dlogits, const float *probs, const int *targets, const float *soft,
                                  const float *dlosses, size_t N, int V, int threads) {
    SoftmaxXent x = {.probs = (float *)probs, .dlogits = dlogits, .soft = soft, .dlosses = dlosses,
                     .targets = targets, .V = V};
    parallel_range(softmax_xent_backward_rows, &x, N, 1, threads);
}

// ----------------------------------------------------------------------------
// model: parameters in checkpoint layout, activations, forward, backward

typedef struct { // one block's slices of the weights (or of their gradients)
    float *rms_att, *wq, *wk, *wv, *wo, *rms_ffn, *w1, *w2, *w3;
} BlockWeights;

typedef struct { // what block l keeps from forward for backward
    float *x, *xn1, *q, *k, *v, *att, *atty, *x2, *xn2, *h1, *h3, *hg, *rstd1, *rstd2, *x_out;
} BlockActs;

typedef struct {
    int *tokens;                  // (N) the forward's input
    float *x;                     // (L+1, N, C) residual stream into each block; [L] leaves the last
    float *xn1, *q, *atty, *x2, *xn2; // (L, N, C)
    float *k, *v;                 // (L, N, KV)
    float *rstd1, *rstd2;         // (L, N)
    float *att;                   // (L, B, NH, T, T) attention probabilities
    float *h1, *h3, *hg;          // (L, N, H) gate, up, silu(gate) * up
    float *xf, *rstdf;            // (N, C), (N) final RMSNorm
    float *logits;                // (N, V): logits, then probs, then dlogits
    float *losses, *dlosses;      // (N)
    float *branch;                // (N, C) attention or FFN output before the residual add
    float *dbranch;               // (N, C) dL/d(branch) under dropout: dres through the mask
    float *dres;                  // (N, C) dL/d(residual stream), flowing down the blocks
    float *dxn, *datty, *dq;      // (N, C) backward scratch shared by the blocks
    float *dk, *dv;               // (N, KV)
    float *dh1, *dh3, *dhg;       // (N, H)
    float *mem;                   // the one allocation behind the float arrays
} Acts;

typedef struct {
    Config c;          // vocab_size > 0: the classifier is the embedding (shared)
    size_t n_params;   // floats in the checkpoint layout, RoPE tables included
    float *params;     // (n_params) exactly what a checkpoint stores after its header
    float *grads;      // (n_params) same layout; NULL for a forward-only model
    TransformerWeights w, g;
    Acts a;
    int B, T;          // batch shape of the activations (T <= c.seq_len)
    int threads;       // the layers split their work over these (1 after build_model)
    float *wt;         // (n_params) W^T of every matrix, at W's offset: the forward's operands
    int wt_fresh;      // 0 after anything writes params: the next forward transposes again
    float dropout;     // residual dropout of the next forward/backward (0 but in train_step)
    uint64_t drop_key; // its masks' key: a hash of (seed, step, micro-batch)
} Model;

// The dropout key of branch b (0 attention, 1 FFN) of block l.
static uint64_t branch_key(const Model *m, int l, int b) { return mix64(m->drop_key ^ (uint64_t)(2 * l + b + 1)); }

// dL/d(branch b's output) of block l: dL/d(residual stream) through that
// branch's dropout mask (without dropout, the same array)
static const float *branch_grad(Model *m, int l, int b) {
    if (m->dropout <= 0.0f) return m->a.dres;
    size_t n = (size_t)m->B * m->T * m->c.dim;
    memcpy(m->a.dbranch, m->a.dres, n * sizeof(float));
    dropout_apply(m->a.dbranch, n, branch_key(m, l, b), m->dropout);
    return m->a.dbranch;
}

static int head_size(const Config *c) { return c->dim / c->n_heads; }
static int kv_dim(const Config *c) { return c->n_kv_heads * head_size(c); }

static BlockWeights block_weights(const TransformerWeights *w, const Config *c, int l) {
    size_t C = (size_t)c->dim, H = (size_t)c->hidden_dim, KV = (size_t)kv_dim(c);
    return (BlockWeights){.rms_att = w->rms_att + l * C, .wq = w->wq + l * C * C, .wk = w->wk + l * KV * C,
                          .wv = w->wv + l * KV * C, .wo = w->wo + l * C * C, .rms_ffn = w->rms_ffn + l * C,
                          .w1 = w->w1 + l * H * C, .w2 = w->w2 + l * C * H, .w3 = w->w3 + l * H * C};
}

static BlockActs block_acts(const Model *m, int l) {
    const Acts *a = &m->a;
    size_t N = (size_t)m->B * m->T, C = (size_t)m->c.dim, H = (size_t)m->c.hidden_dim;
    size_t KV = (size_t)kv_dim(&m->c), att = (size_t)m->B * m->c.n_heads * m->T * m->T;
    return (BlockActs){.x = a->x + l * N * C, .xn1 = a->xn1 + l * N * C, .q = a->q + l * N * C,
                       .k = a->k + l * N * KV, .v = a->v + l * N * KV, .att = a->att + l * att,
                       .atty = a->atty + l * N * C, .x2 = a->x2 + l * N * C, .xn2 = a->xn2 + l * N * C,
                       .h1 = a->h1 + l * N * H, .h3 = a->h3 + l * N * H, .hg = a->hg + l * N * H,
                       .rstd1 = a->rstd1 + l * N, .rstd2 = a->rstd2 + l * N, .x_out = a->x + (l + 1) * N * C};
}

// Hand out consecutive slices of one allocation (first pass: base NULL, count only).
static float *carve(float *base, size_t *used, size_t n) {
    float *p = base ? base + *used : NULL;
    *used += n;
    return p;
}

static size_t layout_acts(Acts *a, float *base, const Config *c, int B, int T) {
    size_t N = (size_t)B * T, C = (size_t)c->dim, H = (size_t)c->hidden_dim, L = (size_t)c->n_layers;
    size_t KV = (size_t)kv_dim(c), V = (size_t)c->vocab_size, u = 0;
    a->x = carve(base, &u, (L + 1) * N * C);
    a->xn1 = carve(base, &u, L * N * C); a->q = carve(base, &u, L * N * C);
    a->atty = carve(base, &u, L * N * C); a->x2 = carve(base, &u, L * N * C);
    a->xn2 = carve(base, &u, L * N * C);
    a->k = carve(base, &u, L * N * KV); a->v = carve(base, &u, L * N * KV);
    a->rstd1 = carve(base, &u, L * N); a->rstd2 = carve(base, &u, L * N);
    a->att = carve(base, &u, L * B * c->n_heads * (size_t)T * T);
    a->h1 = carve(base, &u, L * N * H); a->h3 = carve(base, &u, L * N * H); a->hg = carve(base, &u, L * N * H);
    a->xf = carve(base, &u, N * C); a->rstdf = carve(base, &u, N);
    a->logits = carve(base, &u, N * V);
    a->losses = carve(base, &u, N); a->dlosses = carve(base, &u, N);
    a->branch = carve(base, &u, N * C); a->dbranch = carve(base, &u, N * C); a->dres = carve(base, &u, N * C);
    a->dxn = carve(base, &u, N * C); a->datty = carve(base, &u, N * C); a->dq = carve(base, &u, N * C);
    a->dk = carve(base, &u, N * KV); a->dv = carve(base, &u, N * KV);
    a->dh1 = carve(base, &u, N * H); a->dh3 = carve(base, &u, N * H); a->dhg = carve(base, &u, N * H);
    return u;
}

// Shapes a checkpoint must satisfy: model.h's check, the one specdec makes.
static void check_config(const Config *c, const char *what) {
    char msg[256];
    if (check_config_fields(c, msg, sizeof(msg))) die("%s: %s", what, msg);
}

// Activations for B sequences of T tokens (any before freed). -1: they do not fit in memory.
static int alloc_acts(Model *m, int B, int T) {
    free(m->a.mem);
    free(m->a.tokens);
    m->B = B, m->T = T;
    m->a.mem = calloc(layout_acts(&m->a, NULL, &m->c, B, T), sizeof(float));
    m->a.tokens = calloc((size_t)B * T, sizeof(int));
    if (!m->a.mem || !m->a.tokens) return -1;
    layout_acts(&m->a, m->a.mem, &m->c, B, T);
    return 0;
}

// Parameters (zero) with the RoPE tables filled, gradients if train, and
// activations for B sequences of T tokens.
static void build_model(Model *m, const Config *c, int B, int T, int train) {
    check_config(c, "model");
    if (T > c->seq_len) die("sequence length %d > the model's seq_len %d", T, c->seq_len);
    memset(m, 0, sizeof(*m));
    m->c = *c;
    m->threads = 1;
    m->n_params = checkpoint_n_floats(c, 1);
    m->params = xcalloc(m->n_params, sizeof(float));
    m->wt = xcalloc(m->n_params, sizeof(float));
    map_weights(&m->w, c, m->params, 1);
    rope_tables(m->w.rope_cos, m->w.rope_sin, c->seq_len, head_size(c));
    if (train) {
        m->grads = xcalloc(m->n_params, sizeof(float));
        map_weights(&m->g, c, m->grads, 1);
    }
    if (alloc_acts(m, B, T)) die("out of memory: activations for %d x %d tokens", B, T);
}

static void free_model(Model *m) {
    free(m->params); free(m->wt); free(m->grads); free(m->a.mem); free(m->a.tokens);
    memset(m, 0, sizeof(*m));
}

// The trainable tensors: offset and size in params, and whether AdamW
// decays them (matrices and the embedding yes, RMSNorm gains no).
typedef struct { const char *name; size_t off, n; int decay; } Tensor;
#define N_TENSORS 11

static void model_tensors(const Model *m, Tensor *t) {
    const Config *c = &m->c;
    size_t C = (size_t)c->dim, H = (size_t)c->hidden_dim, L = (size_t)c->n_layers, KV = (size_t)kv_dim(c);
    const TransformerWeights *w = &m->w;
    const float *p = m->params;
    Tensor all[N_TENSORS] = {
        {"token_embedding", (size_t)(w->token_embedding - p), (size_t)c->vocab_size * C, 1},
        {"rms_att", (size_t)(w->rms_att - p), L * C, 0},
        {"wq", (size_t)(w->wq - p), L * C * C, 1},
        {"wk", (size_t)(w->wk - p), L * KV * C, 1},
        {"wv", (size_t)(w->wv - p), L * KV * C, 1},
        {"wo", (size_t)(w->wo - p), L * C * C, 1},
        {"rms_ffn", (size_t)(w->rms_ffn - p), L * C, 0},
        {"w1", (size_t)(w->w1 - p), L * H * C, 1},
        {"w2", (size_t)(w->w2 - p), L * C * H, 1},
        {"w3", (size_t)(w->w3 - p), L * H * C, 1},
        {"rms_final", (size_t)(w->rms_final - p), C, 0},
    };
    memcpy(t, all, sizeof(all));
}

// GPT-2 style: N(0, 0.02) matrices and embedding, the two projections that
// feed the residual stream (wo, w2) scaled by 1/sqrt(2 L); RMSNorm gains 1.
static void init_weights(Model *m, Rng *rng) {
    Tensor t[N_TENSORS];
    model_tensors(m, t);
    float resid = 0.02f / sqrtf(2.0f * m->c.n_layers);
    for (int i = 0; i < N_TENSORS; i++) {
        float *p = m->params + t[i].off;
        float std = !strcmp(t[i].name, "wo") || !strcmp(t[i].name, "w2") ? resid : 0.02f;
        for (size_t j = 0; j < t[i].n; j++) p[j] = t[i].decay ? std * rng_normal(rng) : 1.0f;
    }
    m->wt_fresh = 0;
}

// Parameters read per generated token: every weight matrix and the
// classifier (V x dim); the embedding row and the gains are noise.
static double params_per_token(const Config *c) {
    double C = c->dim, KV = kv_dim(c), H = c->hidden_dim;
    return c->n_layers * (2 * C * C + 2 * KV * C + 3 * H * C) + (double)c->vocab_size * C;
}

// Training FLOPs per token: 2 per weight forward and 4 backward, plus the
// attention products q.k and p.v over (T+1)/2 positions on average.
static double flops_per_token(const Config *c, int T) {
    double attn = 2.0 * 2.0 * c->dim * (T + 1) / 2.0 * c->n_layers;
    return 3.0 * (2.0 * params_per_token(c) + attn);
}

// ----------------------------------------------------------------------------
// forward and backward of the whole model over B x T tokens

// W^T of a matrix of m (at the same offset in m->wt as W in m->params)
static const float *tposed(const Model *m, const float *w) { return m->wt + (w - m->params); }

// dst (cols, rows) = src (rows, cols) transposed, at src's offset in m->wt
static void transpose_into(Model *m, const float *src, size_t rows, size_t cols) {
    transpose(m->wt + (src - m->params), src, rows, cols);
}

// Refresh m->wt from m->params: every layer's seven matrices and the classifier.
static void transpose_weights(Model *m) {
    const Config *c = &m->c;
    size_t C = (size_t)c->dim, H = (size_t)c->hidden_dim, KV = (size_t)kv_dim(c);
    for (int l = 0; l < c->n_layers; l++) {
        BlockWeights bw = block_weights(&m->w, c, l);
        transpose_into(m, bw.wq, C, C);
        transpose_into(m, bw.wk, KV, C);
        transpose_into(m, bw.wv, KV, C);
        transpose_into(m, bw.wo, C, C);
        transpose_into(m, bw.w1, H, C);
        transpose_into(m, bw.w3, H, C);
        transpose_into(m, bw.w2, C, H);
    }
    transpose_into(m, m->w.wcls, (size_t)c->vocab_size, C);
    m->wt_fresh = 1;
}

static void model_forward(Model *m, const int *tokens) {
    const Config *c = &m->c;
    int C = c->dim, H = c->hidden_dim, NH = c->n_heads, NKV = c->n_kv_heads, hs = head_size(c);
    int KV = kv_dim(c), B = m->B, T = m->T;
    size_t N = (size_t)B * T;
    Acts *a = &m->a;
    const TransformerWeights *w = &m->w;
    if (!m->wt_fresh) transpose_weights(m);
    memcpy(a->tokens, tokens, N * sizeof(int));
    embedding_forward(a->x, tokens, w->token_embedding, N, C);
    for (int l = 0; l < c->n_layers; l++) {
        BlockWeights bw = block_weights(w, c, l);
        BlockActs ba = block_acts(m, l);
        rmsnorm_forward(ba.xn1, ba.rstd1, ba.x, bw.rms_att, N, C);
        matmul_forward(ba.q, ba.xn1, tposed(m, bw.wq), N, C, C, m->threads);
        matmul_forward(ba.k, ba.xn1, tposed(m, bw.wk), N, C, KV, m->threads);
        matmul_forward(ba.v, ba.xn1, tposed(m, bw.wv), N, C, KV, m->threads);
        rope_forward(ba.q, w->rope_cos, w->rope_sin, B, T, NH, hs);
        rope_forward(ba.k, w->rope_cos, w->rope_sin, B, T, NKV, hs);
        attention_forward(ba.atty, ba.att, ba.q, ba.k, ba.v, B, T, NH, NKV, hs, m->threads);
        matmul_forward(a->branch, ba.atty, tposed(m, bw.wo), N, C, C, m->threads);
        dropout_apply(a->branch, N * C, branch_key(m, l, 0), m->dropout);
        residual_forward(ba.x2, ba.x, a->branch, N * C);
        rmsnorm_forward(ba.xn2, ba.rstd2, ba.x2, bw.rms_ffn, N, C);
        matmul_forward(ba.h1, ba.xn2, tposed(m, bw.w1), N, C, H, m->threads);
        matmul_forward(ba.h3, ba.xn2, tposed(m, bw.w3), N, C, H, m->threads);
        swiglu_forward(ba.hg, ba.h1, ba.h3, N * H, m->threads);
        matmul_forward(a->branch, ba.hg, tposed(m, bw.w2), N, H, C, m->threads);
        dropout_apply(a->branch, N * C, branch_key(m, l, 1), m->dropout);
        residual_forward(ba.x_out, ba.x2, a->branch, N * C);
    }
    rmsnorm_forward(a->xf, a->rstdf, a->x + (size_t)c->n_layers * N * C, w->rms_final, N, C);
    matmul_forward(a->logits, a->xf, tposed(m, w->wcls), N, C, c->vocab_size, m->threads);
}

// Mean loss over the batch; leaves probs in a->logits for the backward.
static double model_loss(Model *m, const int *targets, const float *soft) {
    size_t N = (size_t)m->B * m->T;
    softmax_xent_forward(m->a.losses, m->a.logits, m->a.logits, targets, soft, N, m->c.vocab_size, m->threads);
    double sum = 0.0;
    for (size_t n = 0; n < N; n++) sum += m->a.losses[n];
    return sum / (double)N;
}

// Gradients of sum_n dloss * losses[n] ADDED into m->grads (after model_loss).
static void model_backward(Model *m, const int *targets, const float *soft, float dloss) {
    const Config *c = &m->c;
    int C = c->dim, H = c->hidden_dim, NH = c->n_heads, NKV = c->n_kv_heads, hs = head_size(c);
    int KV = kv_dim(c), B = m->B, T = m->T, V = c->vocab_size;
    size_t N = (size_t)B * T;
    Acts *a = &m->a;
    const TransformerWeights *w = &m->w, *g = &m->g;
    for (size_t n = 0; n < N; n++) a->dlosses[n] = dloss;
    softmax_xent_backward(a->logits, a->logits, targets, soft, a->dlosses, N, V, m->threads);
    zero(a->dxn, N * C);
    matmul_backward(a->dxn, g->wcls, a->logits, a->xf, w->wcls, N, C, V, m->threads);
    zero(a->dres, N * C);
    rmsnorm_backward(a->dres, g->rms_final, a->dxn, a->x + (size_t)c->n_layers * N * C, w->rms_final,
                     a->rstdf, N, C);
    for (int l = c->n_layers - 1; l >= 0; l--) {
        BlockWeights bw = block_weights(w, c, l), bg = block_weights(g, c, l);
        BlockActs ba = block_acts(m, l);
        // FFN branch: dres is dL/d(x_out), and through the dropout mask dL/d(FFN output)
        zero(a->dhg, N * H); zero(a->dh1, N * H); zero(a->dh3, N * H); zero(a->dxn, N * C);
        matmul_backward(a->dhg, bg.w2, branch_grad(m, l, 1), ba.hg, bw.w2, N, H, C, m->threads);
        swiglu_backward(a->dh1, a->dh3, a->dhg, ba.h1, ba.h3, N * H, m->threads);
        matmul_backward(a->dxn, bg.w1, a->dh1, ba.xn2, bw.w1, N, C, H, m->threads);
        matmul_backward(a->dxn, bg.w3, a->dh3, ba.xn2, bw.w3, N, C, H, m->threads);
        rmsnorm_backward(a->dres, bg.rms_ffn, a->dxn, ba.x2, bw.rms_ffn, ba.rstd2, N, C);
        // attention branch: dres is now dL/d(x2)
        zero(a->datty, N * C); zero(a->dq, N * C); zero(a->dk, N * KV); zero(a->dv, N * KV);
        zero(a->dxn, N * C);
        matmul_backward(a->datty, bg.wo, branch_grad(m, l, 0), ba.atty, bw.wo, N, C, C, m->threads);
        attention_backward(a->dq, a->dk, a->dv, a->datty, ba.q, ba.k, ba.v, ba.att, B, T, NH, NKV, hs, m->threads);
        rope_backward(a->dq, w->rope_cos, w->rope_sin, B, T, NH, hs);
        rope_backward(a->dk, w->rope_cos, w->rope_sin, B, T, NKV, hs);
        matmul_backward(a->dxn, bg.wq, a->dq, ba.xn1, bw.wq, N, C, C, m->threads);
        matmul_backward(a->dxn, bg.wk, a->dk, ba.xn1, bw.wk, N, C, KV, m->threads);
        matmul_backward(a->dxn, bg.wv, a->dv, ba.xn1, bw.wv, N, C, KV, m->threads);
        rmsnorm_backward(a->dres, bg.rms_att, a->dxn, ba.x, bw.rms_att, ba.rstd1, N, C);
    }
    embedding_backward(g->token_embedding, a->dres, a->tokens, N, C);
}

// ----------------------------------------------------------------------------
// checkpoints: llama2.c files in, llama2.c files out

// Write m's checkpoint to the planned output o (common.h: a temp file, synced
// and renamed over it), whole or not at all.
static void write_model_output(OutputFile *o, const Model *m) {
    FILE *f = begin_or_die(o);
    if (write_checkpoint_to(f, &m->c, m->params, 1) != 0) die("%s: write failed: %s (disk full?)", o->name, strerror(errno));
    commit_or_die(o);
}

// A llama2.c checkpoint with a shared classifier, activations for B x T
// (T = 0: the checkpoint's seq_len). Its own RoPE tables are used.
static void load_model(Model *m, const char *path, int B, int T, int train) {
    FILE *f = xfopen_in(path);
    int32_t h[7];
    xfread(h, sizeof(int32_t), 7, f, path, "the 28-byte config header");
    Config c;
    int shared;
    char msg[512];
    if (fseek(f, 0, SEEK_END) != 0) die("%s: cannot seek", path);
    long size = ftell(f);
    if (size < 0) die("%s: cannot tell its size", path);
    if (check_checkpoint(&c, &shared, h, (size_t)size, msg, sizeof(msg))) die("%s: %s", path, msg);
    if (!shared)
        die("%s: vocab_size %d < 0 means an unshared classifier; the trainer writes and reads shared ones",
            path, (int)h[5]);
    build_model(m, &c, B, T ? T : c.seq_len, train);
    fseek(f, (long)CONFIG_HEADER_BYTES, SEEK_SET);
    xfread(m->params, sizeof(float), m->n_params, f, path, "the weights");
    fclose(f);
    if (check_finite_weights(&m->w, &m->c, 1, msg, sizeof(msg))) die("%s: %s", path, msg);
    m->wt_fresh = 0;
}

// ----------------------------------------------------------------------------
// optimizer: AdamW with warmup + cosine schedule and global-norm clipping

typedef struct {
    const char *data_dir;   // train.bin and val.bin from ./train data
    const char *out_dir;    // state.bin (resume), model.bin (llama2.c)
    const char *csv;        // progress log for plots
    const char *teacher;    // distil from this checkpoint's softmax, or NULL
    const char *init;       // start from this checkpoint's weights (same shape), or NULL
    int dim, hidden, layers, heads, kv_heads, seq;
    int batch, accum, steps, warmup, seed, threads;
    int eval_every, eval_batches, log_every, ckpt_every;
    float lr, lr_min, wd, clip, beta1, beta2;
    float dropout;          // residual dropout probability (0: off)
    int stop_at;            // end after this step as if killed (0: run to -steps)
} TrainOpts;

static double lr_at(const TrainOpts *o, int step) {
    if (step < o->warmup) return o->lr * (step + 1.0) / o->warmup;
    double progress = (double)(step - o->warmup) / (o->steps > o->warmup ? o->steps - o->warmup : 1);
    return o->lr_min + 0.5 * (o->lr - o->lr_min) * (1.0 + cos(3.141592653589793 * progress));
}

// Scale the gradients to global norm <= clip; returns the norm before.
static double clip_grads(Model *m, float clip) {
    Tensor t[N_TENSORS];
    model_tensors(m, t);
    double ss = 0.0;
    for (int i = 0; i < N_TENSORS; i++)
        for (size_t j = 0; j < t[i].n; j++) ss += (double)m->grads[t[i].off + j] * m->grads[t[i].off + j];
    double norm = sqrt(ss);
    if (clip > 0 && norm > clip)
        for (int i = 0; i < N_TENSORS; i++)
            for (size_t j = 0; j < t[i].n; j++) m->grads[t[i].off + j] *= (float)(clip / norm);
    return norm;
}

// AdamW on n parameters p (n) with gradients g and moments mom, vel (n):
// m = b1 m + (1-b1) g, v = b2 v + (1-b2) g^2, bias-corrected by c1 = 1 - b1^t,
// c2 = 1 - b2^t; p -= lr (m^ / (sqrt(v^) + eps) + wd p), the decay decoupled
// from the gradient.
static void adamw_range(float *p, const float *g, float *mom, float *vel, size_t n, const TrainOpts *o,
                        double lr, float wd, double c1, double c2) {
    for (size_t j = 0; j < n; j++) {
        mom[j] = o->beta1 * mom[j] + (1.0f - o->beta1) * g[j];
        vel[j] = o->beta2 * vel[j] + (1.0f - o->beta2) * g[j] * g[j];
        double mhat = mom[j] / c1, vhat = vel[j] / c2;
        p[j] -= (float)(lr * (mhat / (sqrt(vhat) + 1e-8) + wd * p[j]));
    }
}

// One AdamW step t (1, 2, ...) of params p with gradients g and moments mom,
// vel, cut into the n tensors ts: decay on those marked so.
static void adamw_tensors(float *p, const float *g, float *mom, float *vel, const Tensor *ts, int n,
                          const TrainOpts *o, double lr, long t) {
    double c1 = 1.0 - pow(o->beta1, (double)t), c2 = 1.0 - pow(o->beta2, (double)t);
    for (int i = 0; i < n; i++) {
        size_t off = ts[i].off;
        adamw_range(p + off, g + off, mom + off, vel + off, ts[i].n, o, lr, ts[i].decay ? o->wd : 0.0f, c1, c2);
    }
}

// One AdamW step t (1, 2, ...) of the model.
static void adamw_update(Model *m, float *mom, float *vel, const TrainOpts *o, double lr, long t) {
    Tensor ts[N_TENSORS];
    model_tensors(m, ts);
    adamw_tensors(m->params, m->grads, mom, vel, ts, N_TENSORS, o, lr, t);
    m->wt_fresh = 0; // the forward's W^T are stale now
}

// ----------------------------------------------------------------------------
// training state: everything a killed run needs to continue exactly
//   StateHeader, then params, Adam m, Adam v (n_params floats each), then the
//   checksum (state_file below)

typedef struct {
    char magic[8];        // "SDSTATE2" (SDSTATE1: the same without the checksum)
    int32_t config[7];    // as in the checkpoint header
    int32_t batch, seq, accum;
    float dropout;        // -dropout
    int64_t step;         // optimizer steps done
    uint64_t rng;         // the batch sampler's state after them
    uint64_t data_hash;   // fingerprint of the training tokens
    double seconds;       // training time so far
} StateHeader;

static StateHeader state_header(const Model *m, const TrainOpts *o) {
    StateHeader h;
    memset(&h, 0, sizeof(h));
    memcpy(h.magic, "SDSTATE2", 8);
    const Config *c = &m->c;
    int32_t cfg[7] = {c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads, c->vocab_size, c->seq_len};
    memcpy(h.config, cfg, sizeof(cfg));
    h.batch = o->batch;
    h.seq = o->seq;
    h.accum = o->accum;
    h.dropout = o->dropout;
    return h;
}

// A state file (./train model, medusa, eagle): a header of hb bytes, then
// STATE_ARRAYS arrays of n floats (the weights, Adam's first and second
// moments), then 8 bytes: the 64-bit FNV-1a of everything before them. It is
// read back only whole, with that checksum, finite floats and second
// moments >= 0; it is written last at a checkpoint (its rename is the
// commit), after the weights' file.
#define STATE_ARRAYS 3

static size_t state_file_bytes(size_t hb, size_t n) {
    return add_size(add_size(hb, mul_size(mul_size(STATE_ARRAYS, n), sizeof(float))), sizeof(uint64_t));
}

static void write_state_file(OutputFile *o, const void *head, size_t hb, const float *const *arr, size_t n) {
    FILE *f = begin_or_die(o);
    uint64_t h = fnv1a(head, hb);
    xfwrite(head, 1, hb, f, o->name);
    for (int i = 0; i < STATE_ARRAYS; i++) {
        xfwrite(arr[i], sizeof(float), n, f, o->name);
        h = fnv1a_more(h, arr[i], n * sizeof(float));
    }
    xfwrite(&h, sizeof(h), 1, f, o->name);
    commit_or_die(o);
}

// Open a state file and read its header (hb bytes) into head; *size: the
// file's bytes. It is the run's own output (planned, not an input).
static FILE *open_state_file(const char *path, void *head, size_t hb, size_t *size) {
    FILE *f = xfopen(path, "rb");
    struct stat st;
    if (fstat(fileno(f), &st) != 0) die("%s: cannot stat: %s", path, strerror(errno));
    *size = (size_t)st.st_size;
    xfread(head, hb, 1, f, path, "the header");
    return f;
}

// The rest of a state file of size bytes after its header (head, hb bytes):
// the arrays into arr (names: what they hold), checked; else exit naming it.
static void read_state_body(FILE *f, const char *path, size_t size, const void *head, size_t hb, float *const *arr,
                            const char *const *names, size_t n) {
    size_t want = state_file_bytes(hb, n);
    if (size != want)
        die("%s: %zu bytes, but this run's state is %zu: %s; delete %s to start over", path, size, want,
            size < want ? "truncated" : "bytes after the state's end (damaged?)", path);
    uint64_t h = fnv1a(head, hb), saved;
    for (int i = 0; i < STATE_ARRAYS; i++) {
        xfread(arr[i], sizeof(float), n, f, path, names[i]);
        h = fnv1a_more(h, arr[i], n * sizeof(float));
    }
    xfread(&saved, sizeof(saved), 1, f, path, "the checksum");
    if (fgetc(f) != EOF) die("%s: bytes after the state's checksum (damaged?); delete %s to start over", path, path);
    fclose(f);
    if (saved != h)
        die("%s: checksum mismatch: the file is damaged (a disk error, or written over); delete %s to start over",
            path, path);
    for (int i = 0; i < STATE_ARRAYS; i++) {
        size_t at = first_non_finite(arr[i], n);
        if (at < n)
            die("%s: %s: element %zu is %s (saved from a run that diverged?); delete %s to start over", path,
                names[i], at, isnan(arr[i][at]) ? "NaN" : "infinite", path);
    }
    for (size_t j = 0; j < n; j++)
        if (arr[STATE_ARRAYS - 1][j] < 0.0f)
            die("%s: %s: element %zu is negative (%g); delete %s to start over", path, names[STATE_ARRAYS - 1], j,
                (double)arr[STATE_ARRAYS - 1][j], path);
}

// Exit unless every float of the arrays of a run (names: what they hold) is
// finite: nothing non-finite is ever saved (the last checkpoint stays).
static void check_finite_run(long step, const float *const *arr, const char *const *names, int k, size_t n,
                             const char *dir) {
    for (int i = 0; i < k; i++) {
        size_t at = first_non_finite(arr[i], n);
        if (at < n)
            die("step %ld: %s: element %zu is %s: the run diverged (a lower -lr?); nothing saved, the files in %s "
                "are as the last checkpoint left them", step, names[i], at, isnan(arr[i][at]) ? "NaN" : "infinite",
                dir);
    }
}

// Exit unless a saved header h is one of this run's (want): shape, batch,
// dropout, data.
static void check_state_header(const StateHeader *h, const StateHeader *want, const char *path) {
    if (memcmp(h->config, want->config, sizeof(h->config)) || h->batch != want->batch || h->seq != want->seq ||
        h->accum != want->accum)
        die("%s: saved by a run with another shape, batch, seq or accum (dim %d layers %d vocab %d, batch %d "
            "seq %d accum %d); use the same options, or delete %s to start over", path, h->config[0],
            h->config[2], h->config[5], h->batch, h->seq, h->accum, path);
    if (h->dropout != want->dropout)
        die("%s: saved by a run with -dropout %g, this one has %g; use the same -dropout, or delete %s to start "
            "over", path, h->dropout, want->dropout, path);
    if (h->data_hash != want->data_hash)
        die("%s: the training tokens changed since this run started (retokenized?); delete %s to start over",
            path, path);
}

static const char *const STATE_NAMES[STATE_ARRAYS] = {"the parameters", "Adam's first moments",
                                                      "Adam's second moments"};

// Load a state saved by the same run setup (shape, batch, data), whole and
// checked; else exit.
static StateHeader load_state(const char *path, const StateHeader *want, Model *m, float *mom, float *vel) {
    StateHeader h;
    size_t size;
    FILE *f = open_state_file(path, &h, sizeof(h), &size);
    if (!memcmp(h.magic, "SDSTATE1", 8))
        die("%s: saved by an older ./train, without a checksum; delete %s to start over", path, path);
    if (memcmp(h.magic, "SDSTATE2", 8)) die("%s: not a training state file", path);
    if (size != state_file_bytes(sizeof(h), m->n_params)) check_state_header(&h, want, path);
    float *arr[STATE_ARRAYS] = {m->params, mom, vel};
    read_state_body(f, path, size, &h, sizeof(h), arr, STATE_NAMES, m->n_params);
    check_state_header(&h, want, path);
    if (h.step < 0 || !isfinite(h.seconds)) die("%s: step %lld, %g s: damaged; delete %s to start over", path,
                                                (long long)h.step, h.seconds, path);
    m->wt_fresh = 0;
    return h;
}

// The files a run writes (planned before any work: model.h's registry): its
// checkpoint (model.bin, or the drafter's NAME.bin) and state.bin in the run
// directory, and -csv. The CSV's text is kept in memory (rows) and written
// whole at each checkpoint, before the state: on disk it always holds the
// rows up to the last checkpoint (or more), never a torn or emptied file.
typedef struct {
    OutputFile model, state, csv;
    int has_csv;
    FILE *rows;       // the CSV's text (open_memstream), NULL without -csv
    char *rows_buf;   // its bytes (rows_len)
    size_t rows_len;
} RunFiles;

// A run's registry starts empty (a test makes several runs in one process):
// plan dir/model_file, dir/state.bin and csv (NULL: none).
static void plan_run_files(RunFiles *f, const char *dir, const char *model_file, const char *csv) {
    memset(f, 0, sizeof(*f));
    io_forget();
    make_dir(dir);
    char *mp = join_path(dir, model_file), *sp = join_path(dir, "state.bin");
    plan_or_die(&f->model, mp);
    plan_or_die(&f->state, sp);
    if (csv) plan_or_die(&f->csv, csv), f->has_csv = 1;
    free(mp); free(sp);
}

// The CSV's text to start from (NULL without -csv): a resumed run (step > 0)
// keeps the header and the rows up to its step of the file there; a fresh
// one starts with `header` and a newline.
static FILE *csv_start(RunFiles *f, long step, const char *header) {
    if (!f->has_csv) return NULL;
    f->rows = open_memstream(&f->rows_buf, &f->rows_len);
    if (!f->rows) die("%s: cannot keep its rows in memory: %s", f->csv.name, strerror(errno));
    if (step > 0 && file_exists(f->csv.path)) {
        FILE *in = xfopen(f->csv.path, "rb"); // the run's own output, not an input
        char *line = NULL;
        size_t cap = 0;
        for (int first = 1; getline(&line, &cap, in) > 0; first = 0)
            if (first || atol(line) <= step) fputs(line, f->rows);
        if (ferror(in)) die("%s: read failed: %s", f->csv.name, strerror(errno));
        free(line);
        fclose(in);
    } else {
        fprintf(f->rows, "%s\n", header);
    }
    return f->rows;
}

// Write the CSV's text so far over -csv (whole or not at all).
static void csv_commit(RunFiles *f) {
    if (!f->has_csv) return;
    if (fflush(f->rows) != 0) die("%s: cannot keep its rows in memory: %s", f->csv.name, strerror(errno));
    FILE *out = begin_or_die(&f->csv);
    xfwrite(f->rows_buf, 1, f->rows_len, out, f->csv.name);
    commit_or_die(&f->csv);
}

static void free_run_files(RunFiles *f) {
    if (f->rows) fclose(f->rows);
    free(f->rows_buf);
    f->rows = NULL, f->rows_buf = NULL;
}

// ----------------------------------------------------------------------------
// training loop

// B windows of T+1 tokens at random offsets: inputs and next-token targets.
static void next_batch(const Tokens *d, Rng *rng, int *inputs, int *targets, int B, int T) {
    for (int b = 0; b < B; b++) {
        size_t off = (size_t)(rng_next(rng) % (d->n - (size_t)T));
        for (int t = 0; t < T; t++) {
            inputs[b * T + t] = d->tok[off + t];
            targets[b * T + t] = d->tok[off + t + 1];
        }
    }
}

// Batch i of n_batches x B windows of T+1 tokens spread evenly over val:
// inputs and next-token targets (B*T), the same windows every time, so
// validation numbers compare across steps and runs.
static void val_batch(const Tokens *val, int i, int n_batches, int B, int T, int *inputs, int *targets) {
    size_t n_win = (size_t)n_batches * B, stride = (val->n - (size_t)T - 1) / n_win;
    for (int b = 0; b < B; b++) {
        size_t off = ((size_t)i * B + b) * stride;
        for (int t = 0; t < T; t++) {
            inputs[b * T + t] = val->tok[off + t];
            targets[b * T + t] = val->tok[off + t + 1];
        }
    }
}

// Mean next-token loss over the n_batches validation batches (val_batch).
static double evaluate(Model *m, const Tokens *val, int n_batches, int *inputs, int *targets) {
    double sum = 0.0;
    for (int i = 0; i < n_batches; i++) {
        val_batch(val, i, n_batches, m->B, m->T, inputs, targets);
        model_forward(m, inputs);
        sum += model_loss(m, targets, NULL);
    }
    return sum / n_batches;
}

static void format_duration(char *buf, size_t n, double s) {
    long t = (long)(s + 0.5);
    snprintf(buf, n, "%ldh%02ldm%02lds", t / 3600, t / 60 % 60, t % 60);
}

typedef struct {
    Model model, teacher;
    int has_teacher;
    Tokens train, val;
    float *mom, *vel;    // (n_params) AdamW moments
    int *inputs, *targets; // (B*T)
    Rng rng;             // batch sampler
    long step;           // optimizer steps done
    double seconds;      // training time so far (resumes add to it)
    double grad_norm;    // of the last step, before clipping
    StateHeader header;
} Run;

// A second stage: the weights of a finished run (a llama2.c checkpoint of the
// same shape) as the starting point, e.g. to fine-tune on stories alone.
static void init_from(Model *m, const char *path) {
    Model src;
    load_model(&src, path, 1, 0, 0);
    const Config *a = &src.c, *b = &m->c;
    if (a->dim != b->dim || a->hidden_dim != b->hidden_dim || a->n_layers != b->n_layers ||
        a->n_heads != b->n_heads || a->n_kv_heads != b->n_kv_heads || a->vocab_size != b->vocab_size ||
        a->seq_len != b->seq_len)
        die("-init %s: dim %d hidden %d layers %d heads %d kv_heads %d vocab %d seq %d; this run: %d %d %d %d %d "
            "%d %d (give the same shape options)", path, a->dim, a->hidden_dim, a->n_layers, a->n_heads,
            a->n_kv_heads, a->vocab_size, a->seq_len, b->dim, b->hidden_dim, b->n_layers, b->n_heads,
            b->n_kv_heads, b->vocab_size, b->seq_len);
    memcpy(m->params, src.params, m->n_params * sizeof(float));
    free_model(&src);
    m->wt_fresh = 0;
}

// Data, model (fresh, from -init, or resumed) and teacher for the options.
static void build_run(Run *r, const TrainOpts *o) {
    memset(r, 0, sizeof(*r));
    char *tp = join_path(o->data_dir, "train.bin"), *vp = join_path(o->data_dir, "val.bin");
    r->train = read_tokens(tp);
    r->val = read_tokens(vp);
    if (r->train.vocab_size != r->val.vocab_size) die("%s and %s: different vocab sizes", tp, vp);
    if (r->train.n < (size_t)o->seq + 1 || r->val.n < (size_t)o->seq * o->eval_batches * o->batch + 1)
        die("%s: %zu tokens, %s: %zu; need more than one window of -seq %d (val: -eval-batches x -batch "
            "windows)", tp, r->train.n, vp, r->val.n, o->seq);
    Config c = {.dim = o->dim, .hidden_dim = o->hidden, .n_layers = o->layers, .n_heads = o->heads,
                .n_kv_heads = o->kv_heads, .vocab_size = r->train.vocab_size, .seq_len = o->seq};
    build_model(&r->model, &c, o->batch, o->seq, 1);
    r->model.threads = o->threads;
    r->mom = xcalloc(r->model.n_params, sizeof(float));
    r->vel = xcalloc(r->model.n_params, sizeof(float));
    r->inputs = xmalloc((size_t)o->batch * o->seq * sizeof(int));
    r->targets = xmalloc((size_t)o->batch * o->seq * sizeof(int));
    r->rng.state = (uint64_t)o->seed;
    r->header = state_header(&r->model, o);
    r->header.data_hash = fnv1a(r->train.tok, r->train.n * sizeof(uint16_t));
    char *sp = join_path(o->out_dir, "state.bin");
    if (file_exists(sp)) {
        StateHeader h = load_state(sp, &r->header, &r->model, r->mom, r->vel);
        r->step = (long)h.step;
        r->rng.state = h.rng;
        r->seconds = h.seconds;
        printf("resuming %s at step %ld (%.0f s trained)\n", sp, r->step, r->seconds);
    } else if (o->init) {
        init_from(&r->model, o->init);
        printf("starting from the weights of %s (fresh optimizer and schedule)\n", o->init);
    } else {
        Rng init = {(uint64_t)o->seed ^ 0x5DEECE66Dull};
        init_weights(&r->model, &init);
    }
    if (o->teacher) {
        load_model(&r->teacher, o->teacher, o->batch, o->seq, 0);
        r->teacher.threads = o->threads;
        if (r->teacher.c.vocab_size != c.vocab_size)
            die("-teacher %s: vocab %d, data: %d", o->teacher, r->teacher.c.vocab_size, c.vocab_size);
        r->has_teacher = 1;
    }
    free(tp); free(vp); free(sp);
}

static void free_run(Run *r) {
    free_model(&r->model);
    if (r->has_teacher) free_model(&r->teacher);
    free(r->train.tok); free(r->val.tok); free(r->mom); free(r->vel); free(r->inputs); free(r->targets);
}

// One optimizer step over accum micro-batches; returns the mean train loss.
static double train_step(Run *r, const TrainOpts *o, double lr) {
    Model *m = &r->model;
    size_t N = (size_t)o->batch * o->seq;
    const float *soft = r->has_teacher ? r->teacher.a.logits : NULL;
    zero(m->grads, m->n_params);
    double loss = 0.0;
    for (int micro = 0; micro < o->accum; micro++) {
        next_batch(&r->train, &r->rng, r->inputs, r->targets, o->batch, o->seq);
        if (soft) { // the teacher's softmax at temperature 1, in its logits buffer
            model_forward(&r->teacher, r->inputs);
            model_loss(&r->teacher, r->targets, NULL);
        }
        m->dropout = o->dropout;
        m->drop_key = mix64(mix64((uint64_t)o->seed) ^ ((uint64_t)r->step << 8 | (uint64_t)micro));
        model_forward(m, r->inputs);
        loss += model_loss(m, r->targets, soft) / o->accum;
        model_backward(m, r->targets, soft, 1.0f / (float)(N * o->accum));
        m->dropout = 0.0f; // validation and everything else see the whole model
    }
    r->grad_norm = clip_grads(m, o->clip);
    adamw_update(m, r->mom, r->vel, o, lr, r->step + 1);
    r->step++;
    return loss;
}

// A checkpoint, in this order: model.bin, the CSV, state.bin last (its
// rename commits the checkpoint: a run stopped before it resumes from the
// previous state, whatever model.bin holds); nothing non-finite is written.
static void save_run(Run *r, const TrainOpts *o, RunFiles *f) {
    const float *arr[STATE_ARRAYS] = {r->model.params, r->mom, r->vel};
    check_finite_run(r->step, arr, STATE_NAMES, STATE_ARRAYS, r->model.n_params, o->out_dir);
    r->header.step = r->step;
    r->header.rng = r->rng.state;
    r->header.seconds = r->seconds;
    write_model_output(&f->model, &r->model);
    csv_commit(f);
    write_state_file(&f->state, &r->header, sizeof(r->header), arr, r->model.n_params);
}

#define CSV_HEADER "step,tokens,lr,train_loss,val_loss,seconds"

// Exit at a step whose loss or gradient norm is not finite: the run diverged.
static void check_finite_step(long step, double loss, double norm, const char *dir) {
    if (!isfinite(loss) || !isfinite(norm))
        die("step %ld: the %s is %s: the run diverged (a lower -lr?); nothing saved, the files in %s are as the "
            "last checkpoint left them", step, isfinite(loss) ? "gradient norm" : "training loss",
            isnan(isfinite(loss) ? norm : loss) ? "NaN" : "infinite", dir);
}

// The fields of CSV_HEADER, no newline; NAN fields (no loss yet, no eval this
// step) are left empty.
static void csv_fields(FILE *f, long step, double tokens, double lr, double loss, double val, double seconds) {
    fprintf(f, "%ld,%.0f,%.6g,", step, tokens, lr);
    if (!isnan(loss)) fprintf(f, "%.5f", loss);
    fputc(',', f);
    if (!isnan(val)) fprintf(f, "%.5f", val);
    fprintf(f, ",%.1f", seconds);
}

// One CSV row of ./train model.
static void csv_row(FILE *f, long step, double tokens, double lr, double loss, double val, double seconds) {
    if (!f) return;
    csv_fields(f, step, tokens, lr, loss, val, seconds);
    fputc('\n', f);
    fflush(f);
}

static void print_header(const Run *r, const TrainOpts *o, double tok_per_step) {
    const Config *c = &r->model.c;
    printf("model: dim %d hidden %d layers %d heads %d kv_heads %d vocab %d seq %d: %.2fM params, "
           "%.2fM read per token; %s%s\n", c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads,
           c->vocab_size, c->seq_len, (r->model.n_params - (size_t)c->seq_len * head_size(c)) / 1e6,
           params_per_token(c) / 1e6, r->has_teacher ? "distilled from " : "trained on text",
           r->has_teacher ? o->teacher : "");
    if (o->dropout > 0) printf("residual dropout %g while training\n", o->dropout);
    printf("data: %zu train tokens, %zu val; %.0f tokens/step x %d steps = %.1fM tokens (%.2f epochs)\n",
           r->train.n, r->val.n, tok_per_step, o->steps, tok_per_step * o->steps / 1e6,
           tok_per_step * o->steps / (double)r->train.n);
    fflush(stdout);
}

// step, losses, lr, speed over the steps since the last line, time, ETA
static void print_progress(const Run *r, const TrainOpts *o, double loss, double val, double lr,
                           double tps, double eta) {
    char el[32], et[32];
    format_duration(el, sizeof(el), r->seconds);
    format_duration(et, sizeof(et), eta);
    printf("step %5ld/%d | loss %.4f", r->step, o->steps, loss);
    if (!isnan(val)) printf(" | val %.4f", val);
    printf(" | lr %.2e | norm %.2f | %.0f tok/s | %.1f GFLOP/s | %s | ETA %s\n", lr, r->grad_norm, tps,
           tps * flops_per_token(&r->model.c, o->seq) / 1e9, el, et);
    fflush(stdout);
}

static void train_model(const TrainOpts *o) {
    RunFiles files;
    plan_run_files(&files, o->out_dir, "model.bin", o->csv);
    Run r;
    build_run(&r, o);
    double tok_per_step = (double)o->batch * o->seq * o->accum;
    print_header(&r, o, tok_per_step);
    FILE *csv = csv_start(&files, r.step, CSV_HEADER);
    if (r.step == 0) {
        double val = evaluate(&r.model, &r.val, o->eval_batches, r.inputs, r.targets);
        printf("step     0 | val %.4f\n", val);
        csv_row(csv, 0, 0, 0, NAN, val, 0);
    }
    long step0 = r.step, step_log = r.step;
    double sec0 = r.seconds, train_sec = 0.0; // train_sec: since the last line, evals excluded
    while (r.step < o->steps && (o->stop_at == 0 || r.step < o->stop_at)) {
        double lr = lr_at(o, (int)r.step), t0 = now_seconds();
        double loss = train_step(&r, o, lr), val = NAN, t1 = now_seconds();
        check_finite_step(r.step, loss, r.grad_norm, o->out_dir);
        if (r.step % o->eval_every == 0 || r.step == o->steps)
            val = evaluate(&r.model, &r.val, o->eval_batches, r.inputs, r.targets);
        train_sec += t1 - t0;
        r.seconds += now_seconds() - t0;
        csv_row(csv, r.step, r.step * tok_per_step, lr, loss, val, r.seconds);
        if (r.step % o->log_every == 0 || !isnan(val)) {
            double eta = (o->steps - r.step) * (r.seconds - sec0) / (double)(r.step - step0);
            print_progress(&r, o, loss, val, lr, (r.step - step_log) * tok_per_step / train_sec, eta);
            step_log = r.step;
            train_sec = 0.0;
        }
        if (r.step % o->ckpt_every == 0 || r.step == o->steps || r.step == o->stop_at) save_run(&r, o, &files);
    }
    free_run_files(&files);
    printf("%s: %s/model.bin after %ld of %d steps, %.0f s of training\n", r.step == o->steps ? "done" : "stopped",
           o->out_dir, r.step, o->steps, r.seconds);
    free_run(&r);
}

// ----------------------------------------------------------------------------
// drafters on a frozen target (Medusa heads and the EAGLE-style drafter,
// below): what each method gives the resumable run they share (DrafterKind,
// after both), and the pieces both use

#define DRAFTER_MAX_OUT 16 // agreements per eval: MEDUSA_MAX_HEADS heads, EAGLE_MAX_UNROLL steps

typedef struct {
    TrainOpts t;          // what ./train model shares: data, run dir, CSV, schedule, batch, seq (0: the target's)
    const char *target;   // -m: the frozen target checkpoint
    struct { int heads, hard; } medusa;               // -heads; -hard: the data's tokens, not the target's softmax
    struct { int hidden, unroll; float feat; } eagle; // -hidden (0: 2 dim), -unroll, -feat
} DrafterOpts;

typedef struct {
    double loss;                   // the objective (as train_loss)
    double target_loss;            // the target's own next-token loss on the same windows
    double agree[DRAFTER_MAX_OUT]; // per head / step k: top-1 agreement with the target's top-1 at t + k
    double ce[DRAFTER_MAX_OUT];    // EAGLE, per step: soft CE against the target's softmax
    double mse[DRAFTER_MAX_OUT];   // EAGLE, per step: the feature's mean squared error
} DraftEval;

typedef struct {                   // a built drafter as the shared run sees it
    Model *target;                 // its frozen target
    float *params, *grads;         // (n_params) what its file holds, and the gradients
    size_t n_params;
    int outputs;                   // heads H or unrolled steps U: an agreement each
    int n_tensors;                 // params cut into matrices (AdamW decays them) and biases (not)
    Tensor tensor[2 * DRAFTER_MAX_OUT];
} DrafterView;

// A drafter method: its names, and what the shared run calls, each on its
// struct (Medusa, Eagle) as d.
typedef struct {
    const char *name;        // the subcommand, and its file in the run dir (name.bin)
    const char *title;       // in messages: "a Medusa", "an EAGLE"
    const char *params_name; // its params in messages: "the heads"
    const char *magic;       // its state file's 8 bytes
    const char *agree_col;   // its CSV's agreement columns, agree_col1 .. agree_colK
    const char *csv_help, *wd_help, *seed_help; // -csv's, -wd's and -seed's lines in its -h
    size_t size;             // sizeof its struct
    void (*build)(void *d, const DrafterOpts *o, DrafterView *v); // load the target, check, allocate, init
    void (*free)(void *d);
    void (*refresh)(void *d);                                      // after params are written (its W^T)
    double (*target_forward)(void *d, const int *inputs, const int *targets); // returns the target's loss
    double (*loss)(void *d, int backward, DraftEval *sums); // on that batch; grads added; eval's sums added
    int (*state_fields)(const void *d, int32_t *own);     // its state header's words; returns how many
    void (*check_state)(const int32_t *saved, const int32_t *want, const char *path); // exit unless they match
    int (*write)(const void *d, FILE *f);                 // name.bin's bytes to f; 0 when written
    void (*print_header)(const void *d, const char *target); // the first line of a run
    void (*print_eval)(const void *d, long step, const DraftEval *v);
} DrafterKind;

// The frozen target (-m) for B x T of the options, forward-only.
static void load_frozen_target(Model *t, const DrafterOpts *o) {
    load_model(t, o->target, o->t.batch, o->t.seq, 0);
    t->threads = o->t.threads;
}

// index of the largest of x (n), the first on ties
static int argmax_of(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

// The frozen target's forward over inputs (B*T): z in t->a.xf, per row its
// top-1 (argmax, N) and its softmax (probs, N x V). Returns its own mean
// next-token loss on targets.
static double target_forward(Model *t, const int *inputs, const int *targets, int *argmax, float *probs) {
    size_t N = (size_t)t->B * t->T;
    int V = t->c.vocab_size;
    model_forward(t, inputs);
    for (size_t n = 0; n < N; n++) argmax[n] = argmax_of(t->a.logits + n * V, V);
    softmax_xent_forward(t->a.losses, probs, t->a.logits, targets, NULL, N, V, t->threads);
    double sum = 0.0;
    for (size_t n = 0; n < N; n++) sum += t->a.losses[n];
    return sum / (double)N;
}

// Scale g (n) to global norm <= clip (0: off); returns the norm before.
static double clip_norm(float *g, size_t n, float clip) {
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) ss += (double)g[i] * g[i];
    double norm = sqrt(ss);
    if (clip > 0 && norm > clip)
        for (size_t i = 0; i < n; i++) g[i] *= (float)(clip / norm);
    return norm;
}

// ----------------------------------------------------------------------------
// Medusa heads (Cai et al. 2024, arXiv 2401.10774) on a frozen target
//
// Head h = 1..H reads the target's final hidden state z = rmsnorm(x, rms_final)
// of the row at position t (a.xf after model_forward: the row whose own
// classifier output predicts t+1) and predicts position t+1+h through the
// target's classifier:
//   u = z W_h^T + b_h,  y = z + silu(u),  logits_h = y wcls^T,  silu(v) = v sigmoid(v)
// W_h = 0, b_h = 0 at the start (Medusa's init: silu(0) = 0, so every head
// starts as the target's own next-token prediction). Only W_h, b_h train.
// The target for head h at row t, where t + h < T (later rows are masked):
//   default: the target's softmax at row t + h of the same forward, its
//            distribution for the token at t+1+h given the true prefix
//            (Medusa-2's self-distillation);
//   -hard:   the data's token at t+1+h.
// Loss: the mean over heads of each head's mean over its B (T - h) rows.
// params is medusa.bin's array (model.h): per head W (C,C) then b (C).

typedef struct {
    Model target;            // frozen, forward-only, activations for B x T; its a.xf is z (N,C)
    int H;                   // heads
    int hard;                // learn the data's tokens (1) or the target's softmax (0)
    size_t n_params;         // medusa_n_floats(H, C)
    float *params, *grads;   // (n_params) per head W (C,C) then b (C)
    float *wt;               // (H, C, C) each W_h^T, the forward's operand (medusa_transpose)
    float *probs;            // (N + H, V) the target's softmax per row; the H rows past the end stay 0
    int *argmax;             // (N + H) the target's top-1 per row; -1 past the end
    int *targets;            // (N + H) the data's next token per row; 0 past the end
    float *u, *y, *dy;       // (N, C) one head's u, y, and dL/dy (then dL/du)
    float *logits;           // (N, V) one head's logits, then probs, then dlogits
    float *losses, *dlosses; // (N)
} Medusa;

// Offset of head h's W (C,C) in params (or grads, mom, vel); its b (C) follows.
static size_t head_off(const Medusa *m, int h) {
    size_t C = (size_t)m->target.c.dim;
    return (size_t)(h - 1) * (C * C + C);
}

// Rows with a target for head h: position t = n % T with t + h < T.
static int head_row_valid(const Medusa *m, size_t n, int h) {
    return (int)(n % (size_t)m->target.T) + h < m->target.T;
}
static size_t head_rows(const Medusa *m, int h) { return (size_t)m->target.B * (size_t)(m->target.T - h); }

// Heads (zero: Medusa's init) and buffers for the target already in m->target.
static void build_medusa(Medusa *m, int H, int hard) {
    const Model *t = &m->target;
    size_t N = (size_t)t->B * t->T, C = (size_t)t->c.dim, V = (size_t)t->c.vocab_size;
    if (H < 1 || H > MEDUSA_MAX_HEADS) die("-heads %d: expected 1..%d", H, MEDUSA_MAX_HEADS);
    if (H >= t->T) die("-heads %d needs -seq > %d (head h learns from the rows t with t + h < seq)", H, H);
    m->H = H;
    m->hard = hard;
    m->n_params = medusa_n_floats(H, (int)C);
    m->params = xcalloc(m->n_params, sizeof(float));
    m->grads = xcalloc(m->n_params, sizeof(float));
    m->wt = xcalloc((size_t)H * C * C, sizeof(float));
    m->probs = xcalloc((N + (size_t)H) * V, sizeof(float));
    m->argmax = xmalloc((N + (size_t)H) * sizeof(int));
    for (size_t n = 0; n < N + (size_t)H; n++) m->argmax[n] = -1;
    m->targets = xcalloc(N + (size_t)H, sizeof(int));
    m->u = xcalloc(N * C, sizeof(float));
    m->y = xcalloc(N * C, sizeof(float));
    m->dy = xcalloc(N * C, sizeof(float));
    m->logits = xcalloc(N * V, sizeof(float));
    m->losses = xcalloc(N, sizeof(float));
    m->dlosses = xcalloc(N, sizeof(float));
}

static void free_medusa(Medusa *m) {
    free_model(&m->target);
    free(m->params); free(m->grads); free(m->wt); free(m->probs);
    free(m->argmax); free(m->targets); free(m->u); free(m->y); free(m->dy); free(m->logits);
    free(m->losses); free(m->dlosses);
    memset(m, 0, sizeof(*m));
}

// Refresh every W_h^T from params (after anything writes them).
static void medusa_transpose(Medusa *m) {
    size_t C = (size_t)m->target.c.dim;
    for (int h = 1; h <= m->H; h++) transpose(m->wt + (size_t)(h - 1) * C * C, m->params + head_off(m, h), C, C);
}

// The target's forward over inputs (B*T): z in target.a.xf, and per row its
// top-1 (m->argmax), its softmax (m->probs) and the data's next token
// (m->targets, from targets). Returns the target's own mean next-token loss.
static double medusa_target(Medusa *m, const int *inputs, const int *targets) {
    memcpy(m->targets, targets, (size_t)m->target.B * m->target.T * sizeof(int));
    return target_forward(&m->target, inputs, targets, m->argmax, m->probs);
}

// The heads' activation, elementwise over (N,C), split over threads:
// forward y = z + silu(u); backward du = dy silu'(u) (du may alias dy).
typedef struct { float *y, *du; const float *z, *u, *dy; } HeadAct;

static void head_act_forward_range(const void *args, size_t lo, size_t hi) {
    const HeadAct *a = args;
    for (size_t i = lo; i < hi; i++) {
        float u = a->u[i];
        a->y[i] = a->z[i] + u * (1.0f / (1.0f + expf(-u)));
    }
}

// silu'(u) = s (1 + u (1 - s)), s = sigmoid(u)
static void head_act_backward_range(const void *args, size_t lo, size_t hi) {
    const HeadAct *a = args;
    for (size_t i = lo; i < hi; i++) {
        float u = a->u[i], s = 1.0f / (1.0f + expf(-u));
        a->du[i] = a->dy[i] * s * (1.0f + u * (1.0f - s));
    }
}

// Head h over the N rows of z (N,C): u (N,C) = z W^T + b, y (N,C) = z + silu(u),
// logits (N,V) = y wcls^T (the target's W^T of wcls, fresh after its forward).
static void head_forward(Medusa *m, int h) {
    Model *t = &m->target;
    size_t N = (size_t)t->B * t->T, C = (size_t)t->c.dim;
    const float *z = t->a.xf, *b = m->params + head_off(m, h) + C * C; // z (N,C), b (C)
    matmul_forward(m->u, z, m->wt + (size_t)(h - 1) * C * C, N, (int)C, (int)C, t->threads);
    for (size_t n = 0; n < N; n++)
        for (size_t i = 0; i < C; i++) m->u[n * C + i] += b[i];
    HeadAct a = {.y = m->y, .z = z, .u = m->u};
    parallel_range(head_act_forward_range, &a, N * C, 64, t->threads);
    matmul_forward(m->logits, m->y, tposed(t, t->w.wcls), N, (int)C, t->c.vocab_size, t->threads);
}

// With dlogits (N,V) in m->logits: dy (N,C) = dlogits wcls; du = dy silu'(u)
// (in dy); dW (C,C) += du^T z; db (C) += the sum of du's rows. Adds into grads.
static void head_backward(Medusa *m, int h) {
    Model *t = &m->target;
    size_t N = (size_t)t->B * t->T, C = (size_t)t->c.dim;
    float *dw = m->grads + head_off(m, h), *db = dw + C * C; // dW (C,C), db (C)
    zero(m->dy, N * C);
    matmul_backward_input(m->dy, m->logits, t->w.wcls, N, (int)C, t->c.vocab_size, t->threads);
    HeadAct a = {.du = m->dy, .dy = m->dy, .u = m->u};
    parallel_range(head_act_backward_range, &a, N * C, 64, t->threads);
    matmul_backward_weight(dw, m->dy, t->a.xf, N, (int)C, (int)C, t->threads);
    for (size_t n = 0; n < N; n++)
        for (size_t i = 0; i < C; i++) db[i] += m->dy[n * C + i];
}

// Head h's targets, row n reading row n + h: the target's softmax, or (-hard,
// soft NULL) the data's tokens. The H padding rows keep the masked rows of
// the last sequence inside the arrays.
static const float *head_soft(const Medusa *m, int h) {
    return m->hard ? NULL : m->probs + (size_t)h * m->target.c.vocab_size;
}

// Mean loss of head h over its valid rows (after head_forward), leaving its
// probs in m->logits; agree (if not NULL) += the valid rows whose top-1 is
// the target's top-1 at row t + h.
static double head_loss(Medusa *m, int h, double *agree) {
    Model *t = &m->target;
    size_t N = (size_t)t->B * t->T;
    int V = t->c.vocab_size;
    if (agree)
        for (size_t n = 0; n < N; n++)
            if (head_row_valid(m, n, h)) *agree += argmax_of(m->logits + n * V, V) == m->argmax[n + h];
    softmax_xent_forward(m->losses, m->logits, m->logits, m->targets + h, head_soft(m, h), N, V, t->threads);
    double sum = 0.0;
    for (size_t n = 0; n < N; n++)
        if (head_row_valid(m, n, h)) sum += m->losses[n];
    return sum / (double)head_rows(m, h);
}

// dlogits of head h's share of the loss (1 / (H rows_h) per valid row, 0 on
// masked rows), in m->logits (after head_loss).
static void head_loss_backward(Medusa *m, int h) {
    Model *t = &m->target;
    size_t N = (size_t)t->B * t->T;
    float dl = 1.0f / (float)((double)m->H * (double)head_rows(m, h));
    for (size_t n = 0; n < N; n++) m->dlosses[n] = head_row_valid(m, n, h) ? dl : 0.0f;
    softmax_xent_backward(m->logits, m->logits, m->targets + h, head_soft(m, h), m->dlosses, N,
                          t->c.vocab_size, t->threads);
}

// The heads' loss on the batch of the last medusa_target; with backward, its
// gradients ADDED into m->grads; agree (H) if not NULL: per head, valid rows
// agreeing with the target's top-1 at t + h added.
static double medusa_heads(Medusa *m, int backward, double *agree) {
    double loss = 0.0;
    for (int h = 1; h <= m->H; h++) {
        head_forward(m, h);
        loss += head_loss(m, h, agree ? agree + h - 1 : NULL) / m->H;
        if (backward) {
            head_loss_backward(m, h);
            head_backward(m, h);
        }
    }
    return loss;
}

// ----------------------------------------------------------------------------
// ./train medusa: the heads' part of the shared drafter run (MEDUSA_KIND)

// params cut for AdamW: per head W (decays by -wd), then b (does not)
static int medusa_tensors(const Medusa *m, Tensor *t) {
    size_t C = (size_t)m->target.c.dim;
    for (int h = 1; h <= m->H; h++) {
        t[2 * h - 2] = (Tensor){"W", head_off(m, h), C * C, 1};
        t[2 * h - 1] = (Tensor){"b", head_off(m, h) + C * C, C, 0};
    }
    return 2 * m->H;
}

// The target, heads (zero: Medusa's init) and buffers for the options.
static void medusa_build(void *d, const DrafterOpts *o, DrafterView *v) {
    Medusa *m = d;
    load_frozen_target(&m->target, o);
    build_medusa(m, o->medusa.heads, o->medusa.hard);
    *v = (DrafterView){.target = &m->target, .params = m->params, .grads = m->grads, .n_params = m->n_params,
                       .outputs = m->H};
    v->n_tensors = medusa_tensors(m, v->tensor);
}

static void medusa_free(void *d) { free_medusa(d); }
static void medusa_refresh(void *d) { medusa_transpose(d); }
static double medusa_target_forward(void *d, const int *in, const int *tg) { return medusa_target(d, in, tg); }
static double medusa_loss(void *d, int backward, DraftEval *sums) {
    return medusa_heads(d, backward, sums ? sums->agree : NULL);
}

// state.bin's own words: heads, batch, seq, hard, then 0 (where SDMEDUS2
// has padding before the step)
static int medusa_state_fields(const void *d, int32_t *own) {
    const Medusa *m = d;
    int32_t w[5] = {m->H, m->target.B, m->target.T, m->hard, 0};
    memcpy(own, w, sizeof(w));
    return 5;
}

// Exit unless a saved state's heads, batch, seq and targets are this run's.
static void medusa_check_state(const int32_t *h, const int32_t *w, const char *path) {
    if (h[0] != w[0] || h[1] != w[1] || h[2] != w[2] || h[3] != w[3])
        die("%s: saved by a run with -heads %d -batch %d -seq %d%s, this one has -heads %d -batch %d -seq %d%s; "
            "use the same options, or delete %s to start over", path, h[0], h[1], h[2], h[3] ? " -hard" : "",
            w[0], w[1], w[2], w[3] ? " -hard" : "", path);
}

static int medusa_write(const void *d, FILE *f) {
    const Medusa *m = d;
    return write_medusa_to(f, m->H, m->target.c.dim, m->target.c.vocab_size, m->params);
}

static void medusa_print_header(const void *d, const char *target) {
    const Medusa *m = d;
    const Config *c = &m->target.c;
    printf("medusa: %d heads of dim %d (%.2fM params) on %s (dim %d layers %d vocab %d seq_len %d, frozen); "
           "targets: %s\n", m->H, c->dim, (double)m->n_params / 1e6, target, c->dim, c->n_layers,
           c->vocab_size, c->seq_len, m->hard ? "the data's tokens (-hard)" : "the target's softmax at t+h");
}

// " a_1 a_2 ... a_n", the line's end, and a flush: an eval line's agreements
static void print_agreements(const double *agree, int n) {
    for (int k = 0; k < n; k++) printf(" %.3f", agree[k]);
    printf("\n");
    fflush(stdout);
}

static void medusa_print_eval(const void *d, long step, const DraftEval *v) {
    const Medusa *m = d;
    printf("step %5ld | val %.4f (the target's own next-token loss %.4f) | top-1 agreement with the target at "
           "t+h, h = 1..%d:", step, v->loss, v->target_loss, m->H);
    print_agreements(v->agree, m->H);
}

static const DrafterKind MEDUSA_KIND = {
    .name = "medusa", .title = "a Medusa", .params_name = "the heads", .magic = "SDMEDUS2",
    .agree_col = "agree_h", .csv_help = "progress CSV: step,tokens,lr,train_loss,val_loss,seconds,agree_h1..H",
    .wd_help = "AdamW weight decay (the W_h, not the b_h)", .seed_help = "seed of the batch sampler",
    .size = sizeof(Medusa), .build = medusa_build, .free = medusa_free, .refresh = medusa_refresh,
    .target_forward = medusa_target_forward, .loss = medusa_loss, .state_fields = medusa_state_fields,
    .check_state = medusa_check_state, .write = medusa_write, .print_header = medusa_print_header,
    .print_eval = medusa_print_eval,
};

// ----------------------------------------------------------------------------
// EAGLE-style feature drafter (Li et al. 2024, arXiv 2401.15077, one MLP in
// place of their decoder layer) on a frozen target
//
// g(f, e): from a feature f (C) and the embedding e (C) of the next token,
//   u = W1 [f; e] + b1,  h = silu(u),  f' = f + W2 h + b2,  logits = f' wcls^T
// with W1 (Hd, 2C), b1 (Hd), W2 (C, Hd), b2 (C): eagle.bin's array (model.h).
// z = the target's final hidden state rmsnorm(x, rms_final) per row (a.xf
// after model_forward). Per row t of the batch, step s = 1..U, as generation
// runs it (its own features, the data's tokens):
//   f_0 = z_t,  f_s = g(f_{s-1}, e(tok_{t+s})),  valid while t + s < T
// f_s stands for the feature at t + s: its logits learn the target's softmax
// at row t + s (soft CE) and f_s itself z_{t+s} (mean squared error over C).
// Loss: the mean over steps of CE_s + feat * MSE_s, each a mean over its
// B (T - s) valid rows. Backprop runs through the unrolled chain: dL/df_{s-1}
// collects step s-1's own loss and, from step s, g's residual (identity) and
// W1's f-half. Init: W1 ~ N(0, (0.5 / sqrt(2C))^2) (seeded), b1 = W2 = b2 = 0,
// so f_s = f_{s-1} = z_t at the start: every step begins as the target's own
// next-token prediction from row t.

#define EAGLE_MAX_UNROLL 16

typedef struct {
    Model target;            // frozen, forward-only, activations for B x T; its a.xf is z (N,C)
    int Hd, U;               // MLP width, unrolled steps
    float feat;              // weight of the feature loss
    size_t n_params;         // eagle_n_floats(C, Hd)
    float *params, *grads;   // (n_params) W1 (Hd,2C), b1 (Hd), W2 (C,Hd), b2 (C)
    float *wt1, *wt2;        // W1^T (2C,Hd), W2^T (Hd,C): the forward's operands (eagle_transpose)
    float *probs;            // (N, V) the target's softmax per row
    int *argmax;             // (N) the target's top-1 per row
    int *tokens;             // (N) the batch's input tokens
    float *x[EAGLE_MAX_UNROLL];  // (N, 2C) step s's input [f_{s-1}; e]
    float *u[EAGLE_MAX_UNROLL];  // (N, Hd) its pre-activation
    float *h[EAGLE_MAX_UNROLL];  // (N, Hd) silu(u)
    float *f[EAGLE_MAX_UNROLL];  // (N, C) its output feature f_s
    float *gf[EAGLE_MAX_UNROLL]; // (N, C) dL/df_s from step s's own loss (CE + feature)
    float *df, *dx, *dh;     // backward scratch: (N,C), (N,2C), (N,Hd)
    float *logits;           // (N, V) one step's logits, then probs, then dlogits
    float *losses, *dlosses; // (N)
} Eagle;

// Offsets of W1, b1, W2, b2 in params (or grads, mom, vel).
static size_t eagle_w1(const Eagle *e) { (void)e; return 0; }
static size_t eagle_b1(const Eagle *e) { return (size_t)e->Hd * 2 * (size_t)e->target.c.dim; }
static size_t eagle_w2(const Eagle *e) { return eagle_b1(e) + (size_t)e->Hd; }
static size_t eagle_b2(const Eagle *e) { return eagle_w2(e) + (size_t)e->target.c.dim * e->Hd; }

// Rows of step s: position t = n % T with t + s < T.
static int eagle_row_valid(const Eagle *e, size_t n, int s) { return (int)(n % (size_t)e->target.T) + s < e->target.T; }
static size_t eagle_rows(const Eagle *e, int s) { return (size_t)e->target.B * (size_t)(e->target.T - s); }

// Refresh W1^T and W2^T from params (after anything writes them).
static void eagle_transpose(Eagle *e) {
    size_t C = (size_t)e->target.c.dim, Hd = (size_t)e->Hd;
    transpose(e->wt1, e->params + eagle_w1(e), Hd, 2 * C);
    transpose(e->wt2, e->params + eagle_w2(e), C, Hd);
}

// W1 ~ N(0, (0.5/sqrt(2C))^2) from seed, b1 = W2 = b2 = 0.
static void eagle_init(Eagle *e, uint64_t seed) {
    size_t C = (size_t)e->target.c.dim;
    Rng rng = {mix64(seed ^ 0xEA61Eull)};
    float std = 0.5f / sqrtf(2.0f * (float)C);
    zero(e->params, e->n_params);
    for (size_t i = 0; i < eagle_b1(e); i++) e->params[eagle_w1(e) + i] = std * rng_normal(&rng);
    eagle_transpose(e);
}

// The drafter (zero: call eagle_init) and buffers for the target already in e->target.
static void build_eagle(Eagle *e, int Hd, int U, float feat) {
    const Model *t = &e->target;
    size_t N = (size_t)t->B * t->T, C = (size_t)t->c.dim, V = (size_t)t->c.vocab_size;
    if (Hd < 1 || Hd > (1 << 16)) die("-hidden %d: expected 1..65536", Hd);
    if (U < 1 || U > EAGLE_MAX_UNROLL) die("-unroll %d: expected 1..%d", U, EAGLE_MAX_UNROLL);
    if (U >= t->T) die("-unroll %d needs -seq > %d (step s learns from the rows t with t + s < seq)", U, U);
    if (!(feat >= 0.0f)) die("-feat %g: expected >= 0", feat);
    e->Hd = Hd;
    e->U = U;
    e->feat = feat;
    e->n_params = eagle_n_floats((int)C, Hd);
    e->params = xcalloc(e->n_params, sizeof(float));
    e->grads = xcalloc(e->n_params, sizeof(float));
    e->wt1 = xcalloc(2 * C * (size_t)Hd, sizeof(float));
    e->wt2 = xcalloc((size_t)Hd * C, sizeof(float));
    e->probs = xcalloc(N * V, sizeof(float));
    e->argmax = xcalloc(N, sizeof(int));
    e->tokens = xcalloc(N, sizeof(int));
    for (int s = 0; s < U; s++) {
        e->x[s] = xcalloc(N * 2 * C, sizeof(float));
        e->u[s] = xcalloc(N * (size_t)Hd, sizeof(float));
        e->h[s] = xcalloc(N * (size_t)Hd, sizeof(float));
        e->f[s] = xcalloc(N * C, sizeof(float));
        e->gf[s] = xcalloc(N * C, sizeof(float));
    }
    e->df = xcalloc(N * C, sizeof(float));
    e->dx = xcalloc(N * 2 * C, sizeof(float));
    e->dh = xcalloc(N * (size_t)Hd, sizeof(float));
    e->logits = xcalloc(N * V, sizeof(float));
    e->losses = xcalloc(N, sizeof(float));
    e->dlosses = xcalloc(N, sizeof(float));
}

static void free_eagle(Eagle *e) {
    free_model(&e->target);
    free(e->params); free(e->grads); free(e->wt1); free(e->wt2);
    free(e->probs); free(e->argmax); free(e->tokens);
    for (int s = 0; s < e->U; s++) { free(e->x[s]); free(e->u[s]); free(e->h[s]); free(e->f[s]); free(e->gf[s]); }
    free(e->df); free(e->dx); free(e->dh); free(e->logits); free(e->losses); free(e->dlosses);
    memset(e, 0, sizeof(*e));
}

// The target's forward over inputs (B*T): z in target.a.xf, per row its top-1
// and its softmax. Returns the target's own mean next-token loss (targets).
static double eagle_target(Eagle *e, const int *inputs, const int *targets) {
    memcpy(e->tokens, inputs, (size_t)e->target.B * e->target.T * sizeof(int));
    return target_forward(&e->target, inputs, targets, e->argmax, e->probs);
}

// y = silu(u) elementwise (HeadAct's y and u; its backward is the heads')
static void silu_forward_range(const void *args, size_t lo, size_t hi) {
    const HeadAct *a = args;
    for (size_t i = lo; i < hi; i++) {
        float u = a->u[i];
        a->y[i] = u * (1.0f / (1.0f + expf(-u)));
    }
}

// Step s (1..U) forward: x_s = [f_{s-1}; e(tok_{t+s})] (row n's token n + s;
// past the end of its sequence, token 0: a masked row), u_s = x_s W1^T + b1,
// h_s = silu(u_s), f_s = f_{s-1} + h_s W2^T + b2, logits = f_s wcls^T.
static void eagle_step_forward(Eagle *e, int s) {
    Model *t = &e->target;
    size_t N = (size_t)t->B * t->T, C = (size_t)t->c.dim, Hd = (size_t)e->Hd;
    const float *fin = s == 1 ? t->a.xf : e->f[s - 2], *emb = t->w.token_embedding;
    const float *b1 = e->params + eagle_b1(e), *b2 = e->params + eagle_b2(e);
    float *x = e->x[s - 1], *u = e->u[s - 1], *f = e->f[s - 1];
    for (size_t n = 0; n < N; n++) {
        int tok = eagle_row_valid(e, n, s) ? e->tokens[n + (size_t)s] : 0;
        memcpy(x + n * 2 * C, fin + n * C, C * sizeof(float));
        memcpy(x + n * 2 * C + C, emb + (size_t)tok * C, C * sizeof(float));
    }
    matmul_forward(u, x, e->wt1, N, (int)(2 * C), (int)Hd, t->threads);
    for (size_t n = 0; n < N; n++)
        for (size_t i = 0; i < Hd; i++) u[n * Hd + i] += b1[i];
    HeadAct a = {.y = e->h[s - 1], .u = u};
    parallel_range(silu_forward_range, &a, N * Hd, 64, t->threads);
    matmul_forward(f, e->h[s - 1], e->wt2, N, (int)Hd, (int)C, t->threads);
    for (size_t n = 0; n < N; n++)
        for (size_t i = 0; i < C; i++) f[n * C + i] += fin[n * C + i] + b2[i];
    matmul_forward(e->logits, f, tposed(t, t->w.wcls), N, (int)C, t->c.vocab_size, t->threads);
}

// Step s's loss terms over its valid rows (after eagle_step_forward): *ce the
// mean soft CE against the target's softmax at row t + s, *mse the mean
// squared error of f_s against z_{t+s}; leaves probs in e->logits. agree (if
// not NULL) += valid rows whose top-1 is the target's top-1 at row t + s.
// With backward: gf_s = dL/df_s of this step's share of the loss.
static void eagle_step_loss(Eagle *e, int s, double *ce, double *mse, double *agree, int backward) {
    Model *t = &e->target;
    size_t N = (size_t)t->B * t->T, C = (size_t)t->c.dim, rows = eagle_rows(e, s);
    int V = t->c.vocab_size;
    const float *z = t->a.xf, *f = e->f[s - 1];
    if (agree)
        for (size_t n = 0; n < N; n++)
            if (eagle_row_valid(e, n, s)) *agree += argmax_of(e->logits + n * V, V) == e->argmax[n + (size_t)s];
    // row n reads the soft target of row n + s; the last s rows of the batch
    // are masked, so softmax over N - s rows keeps inside the arrays
    size_t Nv = N - (size_t)s;
    softmax_xent_forward(e->losses, e->logits, e->logits, NULL, e->probs + (size_t)s * V, Nv, V, t->threads);
    double sum = 0.0, sq = 0.0;
    for (size_t n = 0; n < Nv; n++) {
        if (!eagle_row_valid(e, n, s)) continue;
        sum += e->losses[n];
        for (size_t i = 0; i < C; i++) {
            double d = (double)f[n * C + i] - z[(n + (size_t)s) * C + i];
            sq += d * d;
        }
    }
    *ce = sum / (double)rows;
    *mse = sq / ((double)rows * (double)C);
    if (!backward) return;
    float dl = (float)(1.0 / ((double)e->U * (double)rows));
    float dm = (float)(2.0 * e->feat / ((double)e->U * (double)rows * (double)C));
    for (size_t n = 0; n < Nv; n++) e->dlosses[n] = eagle_row_valid(e, n, s) ? dl : 0.0f;
    softmax_xent_backward(e->logits, e->logits, NULL, e->probs + (size_t)s * V, e->dlosses, Nv, V, t->threads);
    float *gf = e->gf[s - 1];
    zero(gf, N * C);
    matmul_backward_input(gf, e->logits, t->w.wcls, Nv, (int)C, V, t->threads);
    for (size_t n = 0; n < Nv; n++)
        if (eagle_row_valid(e, n, s))
            for (size_t i = 0; i < C; i++) gf[n * C + i] += dm * (f[n * C + i] - z[(n + (size_t)s) * C + i]);
}

// Backward through the unrolled steps U..1 from their gf_s: df = gf_s + what
// step s + 1 sent back; db2 += sum df; dW2 += df^T h_s; dh = df W2; du = dh
// silu'(u_s); dW1 += du^T x_s; db1 += sum du; dx = du W1; what goes back to
// f_{s-1}: df (the residual) + dx's f-half. Adds into grads.
static void eagle_backward(Eagle *e) {
    Model *t = &e->target;
    size_t N = (size_t)t->B * t->T, C = (size_t)t->c.dim, Hd = (size_t)e->Hd;
    float *dw1 = e->grads + eagle_w1(e), *db1 = e->grads + eagle_b1(e);
    float *dw2 = e->grads + eagle_w2(e), *db2 = e->grads + eagle_b2(e);
    const float *w1 = e->params + eagle_w1(e), *w2 = e->params + eagle_w2(e);
    zero(e->df, N * C);
    for (int s = e->U; s >= 1; s--) {
        float *df = e->df;
        const float *gf = e->gf[s - 1];
        for (size_t i = 0; i < N * C; i++) df[i] += gf[i];
        for (size_t n = 0; n < N; n++)
            for (size_t i = 0; i < C; i++) db2[i] += df[n * C + i];
        matmul_backward_weight(dw2, df, e->h[s - 1], N, (int)Hd, (int)C, t->threads);
        zero(e->dh, N * Hd);
        matmul_backward_input(e->dh, df, w2, N, (int)Hd, (int)C, t->threads);
        HeadAct a = {.du = e->dh, .dy = e->dh, .u = e->u[s - 1]};
        parallel_range(head_act_backward_range, &a, N * Hd, 64, t->threads);
        matmul_backward_weight(dw1, e->dh, e->x[s - 1], N, (int)(2 * C), (int)Hd, t->threads);
        for (size_t n = 0; n < N; n++)
            for (size_t i = 0; i < Hd; i++) db1[i] += e->dh[n * Hd + i];
        if (s == 1) break; // f_0 = z: the target is frozen
        zero(e->dx, N * 2 * C);
        matmul_backward_input(e->dx, e->dh, w1, N, (int)(2 * C), (int)Hd, t->threads);
        for (size_t n = 0; n < N; n++)
            for (size_t i = 0; i < C; i++) df[n * C + i] += e->dx[n * 2 * C + i];
    }
}

// The drafter's loss on the batch of the last eagle_target: the mean over
// steps of CE_s + feat MSE_s; with backward, its gradients ADDED into grads.
// ce, mse, agree (U each, if not NULL): per step, CE_s and MSE_s added (ce,
// mse), valid rows agreeing with the target's top-1 at t + s added (agree).
static double eagle_loss(Eagle *e, int backward, double *ce, double *mse, double *agree) {
    double loss = 0.0;
    for (int s = 1; s <= e->U; s++) {
        double c, q;
        eagle_step_forward(e, s);
        eagle_step_loss(e, s, &c, &q, agree ? agree + s - 1 : NULL, backward);
        loss += (c + e->feat * q) / e->U;
        if (ce) ce[s - 1] += c;
        if (mse) mse[s - 1] += q;
    }
    if (backward) eagle_backward(e);
    return loss;
}

// ----------------------------------------------------------------------------
// ./train eagle: the drafter's part of the shared drafter run (EAGLE_KIND)

// params cut for AdamW: W1, W2 decay by -wd, b1, b2 do not
static int eagle_tensors(const Eagle *e, Tensor *t) {
    size_t C = (size_t)e->target.c.dim, Hd = (size_t)e->Hd;
    t[0] = (Tensor){"W1", eagle_w1(e), Hd * 2 * C, 1};
    t[1] = (Tensor){"b1", eagle_b1(e), Hd, 0};
    t[2] = (Tensor){"W2", eagle_w2(e), C * Hd, 1};
    t[3] = (Tensor){"b2", eagle_b2(e), C, 0};
    return 4;
}

// The target, the drafter (eagle_init from -seed) and buffers for the options.
static void eagle_build(void *d, const DrafterOpts *o, DrafterView *v) {
    Eagle *e = d;
    load_frozen_target(&e->target, o);
    build_eagle(e, o->eagle.hidden ? o->eagle.hidden : 2 * e->target.c.dim, o->eagle.unroll, o->eagle.feat);
    eagle_init(e, (uint64_t)o->t.seed);
    *v = (DrafterView){.target = &e->target, .params = e->params, .grads = e->grads, .n_params = e->n_params,
                       .outputs = e->U};
    v->n_tensors = eagle_tensors(e, v->tensor);
}

static void eagle_free(void *d) { free_eagle(d); }
static void eagle_refresh(void *d) { eagle_transpose(d); }
static double eagle_target_forward(void *d, const int *in, const int *tg) { return eagle_target(d, in, tg); }
static double eagle_sums(void *d, int backward, DraftEval *sums) {
    if (!sums) return eagle_loss(d, backward, NULL, NULL, NULL);
    return eagle_loss(d, backward, sums->ce, sums->mse, sums->agree);
}

// state.bin's own words: hidden, unroll, batch, seq, feat (its float's
// bits), then two 0 (SDEAGLE1's padding before the step)
static int eagle_state_fields(const void *d, int32_t *own) {
    const Eagle *e = d;
    int32_t w[7] = {e->Hd, e->U, e->target.B, e->target.T, 0, 0, 0};
    memcpy(w + 4, &e->feat, sizeof(float));
    memcpy(own, w, sizeof(w));
    return 7;
}

// Exit unless a saved state's shape, batch, seq and -feat are this run's.
static void eagle_check_state(const int32_t *h, const int32_t *w, const char *path) {
    float hf, wf;
    memcpy(&hf, h + 4, sizeof(float));
    memcpy(&wf, w + 4, sizeof(float));
    if (h[0] != w[0] || h[1] != w[1] || h[2] != w[2] || h[3] != w[3] || hf != wf)
        die("%s: saved by a run with -hidden %d -unroll %d -batch %d -seq %d -feat %g, this one has -hidden %d "
            "-unroll %d -batch %d -seq %d -feat %g; use the same options, or delete %s to start over", path,
            h[0], h[1], h[2], h[3], hf, w[0], w[1], w[2], w[3], wf, path);
}

static int eagle_write(const void *d, FILE *f) {
    const Eagle *e = d;
    return write_eagle_to(f, e->target.c.dim, e->target.c.vocab_size, e->Hd, e->params);
}

static void eagle_print_header(const void *d, const char *target) {
    const Eagle *e = d;
    const Config *c = &e->target.c;
    printf("eagle: MLP %d -> %d -> %d (%.2fM params), %d unrolled steps, feature loss weight %g, on %s (dim %d "
           "layers %d vocab %d seq_len %d, frozen)\n", 2 * c->dim, e->Hd, c->dim, (double)e->n_params / 1e6, e->U,
           e->feat, target, c->dim, c->n_layers, c->vocab_size, c->seq_len);
}

static void eagle_print_eval(const void *d, long step, const DraftEval *v) {
    int U = ((const Eagle *)d)->U;
    printf("step %5ld | val %.4f, CE step 1 %.4f, step %d %.4f, feature MSE %.4f / %.4f (the target's own "
           "next-token loss %.4f) | top-1 agreement with the target, s = 1..%d:", step, v->loss, v->ce[0], U,
           v->ce[U - 1], v->mse[0], v->mse[U - 1], v->target_loss, U);
    print_agreements(v->agree, U);
}

static const DrafterKind EAGLE_KIND = {
    .name = "eagle", .title = "an EAGLE", .params_name = "the drafter", .magic = "SDEAGLE2",
    .agree_col = "agree_s", .csv_help = "progress CSV: step,tokens,lr,train_loss,val_loss,seconds,agree_s1..U",
    .wd_help = "AdamW weight decay (W1, W2; not the biases)", .seed_help = "seed of the batch sampler and of W1's init",
    .size = sizeof(Eagle), .build = eagle_build, .free = eagle_free, .refresh = eagle_refresh,
    .target_forward = eagle_target_forward, .loss = eagle_sums, .state_fields = eagle_state_fields,
    .check_state = eagle_check_state, .write = eagle_write, .print_header = eagle_print_header,
    .print_eval = eagle_print_eval,
};

// ----------------------------------------------------------------------------
// ./train medusa and ./train eagle: a DrafterKind's resumable run
//   state.bin: DrafterState's file fields (state_io), then params, Adam m,
//   Adam v (n_params floats each)

#define DRAFTER_OWN_MAX 8
_Static_assert(MEDUSA_MAX_HEADS <= DRAFTER_MAX_OUT && EAGLE_MAX_UNROLL <= DRAFTER_MAX_OUT,
               "DraftEval and DrafterView hold an agreement per head or step");

typedef struct {
    char magic[8];                // the kind's
    int32_t config[7];            // the target's checkpoint header
    int32_t own[DRAFTER_OWN_MAX]; // the kind's words (state_fields), n_own of them in the file
    int n_own;                    // (not in the file)
    int64_t step;                 // optimizer steps done
    uint64_t rng;                 // the batch sampler's state after them
    uint64_t data_hash;           // fingerprint of the training tokens
    uint64_t target_hash;         // fingerprint of the target's weights
    double seconds;               // training time so far
} DrafterState;

// Copy h's file fields to buf (to_file) or from it, in file order with no
// padding (SDMEDUS2's and SDEAGLE2's own words hold theirs); returns the
// bytes (at most 108).
static size_t state_io(DrafterState *h, unsigned char *buf, int to_file) {
    struct { void *p; size_t n; } f[] = {
        {h->magic, 8}, {h->config, sizeof(h->config)}, {h->own, (size_t)h->n_own * sizeof(int32_t)},
        {&h->step, 8}, {&h->rng, 8}, {&h->data_hash, 8}, {&h->target_hash, 8}, {&h->seconds, 8},
    };
    size_t off = 0;
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); off += f[i].n, i++)
        if (to_file) memcpy(buf + off, f[i].p, f[i].n);
        else memcpy(f[i].p, buf + off, f[i].n);
    return off;
}

typedef struct {
    const DrafterKind *kind;
    void *d;               // its drafter (Medusa, Eagle)
    DrafterView v;         // the drafter's target, params, grads, tensors
    float *mom, *vel;      // (n_params) AdamW moments
    Tokens train, val;
    int *inputs, *targets; // (B*T)
    Rng rng;               // batch sampler
    long step;             // optimizer steps done
    double seconds;        // training time so far (resumes add to it)
    double grad_norm;      // of the last step, before clipping
    DrafterState header;   // what a resumed state must match
} DrafterRun;

// What a resumed state must match: the kind, the target, the kind's words
// (data_hash: the caller's).
static DrafterState drafter_state_header(const DrafterRun *r) {
    DrafterState h;
    memset(&h, 0, sizeof(h));
    memcpy(h.magic, r->kind->magic, 8);
    const Model *t = r->v.target;
    const Config *c = &t->c;
    int32_t cfg[7] = {c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads, c->vocab_size, c->seq_len};
    memcpy(h.config, cfg, sizeof(cfg));
    h.n_own = r->kind->state_fields(r->d, h.own);
    h.target_hash = fnv1a(t->params, t->n_params * sizeof(float));
    return h;
}

// Exit unless a saved header h is one of this run's (want): target, the
// kind's words, data.
static void check_drafter_header(const DrafterKind *k, const DrafterState *h, const DrafterState *want,
                                 const char *path) {
    if (memcmp(h->config, want->config, sizeof(h->config)) || h->target_hash != want->target_hash)
        die("%s: saved for another target (dim %d layers %d vocab %d, or other weights); delete %s to start over",
            path, h->config[0], h->config[2], h->config[5], path);
    k->check_state(h->own, want->own, path);
    if (h->data_hash != want->data_hash)
        die("%s: the training tokens changed since this run started (retokenized?); delete %s to start over",
            path, path);
}

// Continue from a state saved by the same setup (kind, target, its words,
// data), whole and checked (read_state_body); else exit.
static void load_drafter_state(DrafterRun *r, const char *path) {
    const DrafterKind *k = r->kind;
    const DrafterState *want = &r->header;
    DrafterState h = {.n_own = want->n_own};
    unsigned char buf[128];
    size_t bytes = state_io(&h, buf, 1), size; // the header's size (h is blank yet)
    FILE *f = open_state_file(path, buf, bytes, &size);
    state_io(&h, buf, 0);
    if (!memcmp(h.magic, k->magic, 7) && h.magic[7] == '1')
        die("%s: saved by an older ./train %s, without a checksum; delete %s to start over", path, k->name, path);
    if (memcmp(h.magic, k->magic, 8)) die("%s: not %s training state (./train %s writes one)", path, k->title, k->name);
    if (size != state_file_bytes(bytes, r->v.n_params)) check_drafter_header(k, &h, want, path);
    float *arr[STATE_ARRAYS] = {r->v.params, r->mom, r->vel};
    const char *names[STATE_ARRAYS] = {k->params_name, STATE_NAMES[1], STATE_NAMES[2]};
    read_state_body(f, path, size, buf, bytes, arr, names, r->v.n_params);
    check_drafter_header(k, &h, want, path);
    if (h.step < 0 || !isfinite(h.seconds)) die("%s: step %lld, %g s: damaged; delete %s to start over", path,
                                                (long long)h.step, h.seconds, path);
    r->step = (long)h.step;
    r->rng.state = h.rng;
    r->seconds = h.seconds;
}

// train.bin and val.bin of -data, checked against the target and the options.
static void read_drafter_data(DrafterRun *r, const DrafterOpts *o) {
    const Model *t = r->v.target;
    char *tp = join_path(o->t.data_dir, "train.bin"), *vp = join_path(o->t.data_dir, "val.bin");
    r->train = read_tokens(tp);
    r->val = read_tokens(vp);
    if (r->train.vocab_size != t->c.vocab_size || r->val.vocab_size != t->c.vocab_size)
        die("%s, %s: vocab %d and %d, but the target %s has %d (tokenize with its tokenizer)", tp, vp,
            r->train.vocab_size, r->val.vocab_size, o->target, t->c.vocab_size);
    if (r->train.n < (size_t)t->T + 1 || r->val.n < (size_t)t->T * o->t.eval_batches * o->t.batch + 1)
        die("%s: %zu tokens, %s: %zu; need more than one window of -seq %d (val: -eval-batches x -batch "
            "windows)", tp, r->train.n, vp, r->val.n, t->T);
    free(tp); free(vp);
}

// Target, drafter (initialized or resumed), data and buffers for the options.
static void build_drafter_run(DrafterRun *r, const DrafterKind *k, const DrafterOpts *o) {
    memset(r, 0, sizeof(*r));
    r->kind = k;
    r->d = xcalloc(1, k->size);
    k->build(r->d, o, &r->v);
    read_drafter_data(r, o);
    size_t N = (size_t)o->t.batch * r->v.target->T;
    r->mom = xcalloc(r->v.n_params, sizeof(float));
    r->vel = xcalloc(r->v.n_params, sizeof(float));
    r->inputs = xmalloc(N * sizeof(int));
    r->targets = xmalloc(N * sizeof(int));
    r->rng.state = (uint64_t)o->t.seed;
    r->header = drafter_state_header(r);
    r->header.data_hash = fnv1a(r->train.tok, r->train.n * sizeof(uint16_t));
    char *sp = join_path(o->t.out_dir, "state.bin");
    if (file_exists(sp)) {
        load_drafter_state(r, sp);
        printf("resuming %s at step %ld (%.0f s trained)\n", sp, r->step, r->seconds);
    }
    k->refresh(r->d);
    free(sp);
}

static void free_drafter_run(DrafterRun *r) {
    r->kind->free(r->d);
    free(r->d); free(r->mom); free(r->vel);
    free(r->train.tok); free(r->val.tok); free(r->inputs); free(r->targets);
}

// One optimizer step on a random batch; returns the train loss.
static double drafter_step(DrafterRun *r, const TrainOpts *o, double lr) {
    const DrafterView *v = &r->v;
    next_batch(&r->train, &r->rng, r->inputs, r->targets, v->target->B, v->target->T);
    r->kind->target_forward(r->d, r->inputs, r->targets);
    zero(v->grads, v->n_params);
    double loss = r->kind->loss(r->d, 1, NULL);
    r->grad_norm = clip_norm(v->grads, v->n_params, o->clip);
    adamw_tensors(v->params, v->grads, r->mom, r->vel, v->tensor, v->n_tensors, o, lr, r->step + 1);
    r->kind->refresh(r->d);
    r->step++;
    return loss;
}

// The drafter on the validation batches (val_batch), means over them; agree
// per head / step k: the fraction of its rows (t + k < T) agreeing.
static DraftEval drafter_evaluate(DrafterRun *r, int n_batches) {
    const Model *t = r->v.target;
    DraftEval v;
    memset(&v, 0, sizeof(v));
    for (int i = 0; i < n_batches; i++) {
        val_batch(&r->val, i, n_batches, t->B, t->T, r->inputs, r->targets);
        v.target_loss += r->kind->target_forward(r->d, r->inputs, r->targets) / n_batches;
        v.loss += r->kind->loss(r->d, 0, &v) / n_batches;
    }
    for (int k = 1; k <= r->v.outputs; k++) {
        v.ce[k - 1] /= n_batches;
        v.mse[k - 1] /= n_batches;
        v.agree[k - 1] /= (double)((size_t)t->B * (size_t)(t->T - k)) * n_batches;
    }
    return v;
}

// A checkpoint, in save_run's order: NAME.bin (the drafter), the CSV,
// state.bin last; each written whole or not at all, nothing non-finite.
static void save_drafter_run(DrafterRun *r, const TrainOpts *o, RunFiles *f) {
    const float *arr[STATE_ARRAYS] = {r->v.params, r->mom, r->vel};
    const char *names[STATE_ARRAYS] = {r->kind->params_name, STATE_NAMES[1], STATE_NAMES[2]};
    check_finite_run(r->step, arr, names, STATE_ARRAYS, r->v.n_params, o->out_dir);
    r->header.step = r->step;
    r->header.rng = r->rng.state;
    r->header.seconds = r->seconds;
    FILE *out = begin_or_die(&f->model);
    if (r->kind->write(r->d, out) != 0) die("%s: write failed: %s (disk full?)", f->model.name, strerror(errno));
    commit_or_die(&f->model);
    csv_commit(f);
    unsigned char head[128];
    write_state_file(&f->state, head, state_io(&r->header, head, 1), arr, r->v.n_params);
}

// CSV_HEADER, then col1 .. colK: each head's or step's top-1 agreement at an eval
static void drafter_csv_header(char *buf, size_t n, const char *col, int K) {
    size_t used = (size_t)snprintf(buf, n, "%s", CSV_HEADER);
    for (int k = 1; k <= K && used < n; k++) used += (size_t)snprintf(buf + used, n - used, ",%s%d", col, k);
}

// One CSV row; agree NULL (no eval this step): those K fields are left empty.
static void drafter_csv_row(FILE *f, long step, double tokens, double lr, double loss, double val, double seconds,
                            const double *agree, int K) {
    if (!f) return;
    csv_fields(f, step, tokens, lr, loss, val, seconds);
    for (int k = 0; k < K; k++)
        if (agree) fprintf(f, ",%.4f", agree[k]);
        else fputc(',', f);
    fputc('\n', f);
    fflush(f);
}

// the kind's line, then the data's
static void print_drafter_header(const DrafterRun *r, const DrafterOpts *o) {
    const Model *t = r->v.target;
    double tok_per_step = (double)t->B * t->T;
    r->kind->print_header(r->d, o->target);
    printf("data: %zu train tokens, %zu val; %d x %d tokens/step x %d steps = %.1fM tokens (%.2f epochs)\n",
           r->train.n, r->val.n, t->B, t->T, o->t.steps, tok_per_step * o->t.steps / 1e6,
           tok_per_step * o->t.steps / (double)r->train.n);
    fflush(stdout);
}

// step, loss, lr, norm, speed over the steps since the last line, time, ETA
static void print_drafter_progress(const DrafterRun *r, const TrainOpts *o, double loss, double lr, double tps,
                                   double eta) {
    char el[32], et[32];
    format_duration(el, sizeof(el), r->seconds);
    format_duration(et, sizeof(et), eta);
    printf("step %5ld/%d | loss %.4f | lr %.2e | norm %.3f | %.0f tok/s | %s | ETA %s\n", r->step, o->steps, loss,
           lr, r->grad_norm, tps, el, et);
    fflush(stdout);
}

// ./train medusa, ./train eagle: train the kind's drafter, resumable like
// train_model (re-run the same options; -stop-at N ends after step N as if killed).
static void train_drafter(const DrafterKind *k, const DrafterOpts *d) {
    const TrainOpts *o = &d->t;
    char file[32];
    snprintf(file, sizeof(file), "%s.bin", k->name);
    RunFiles files;
    plan_run_files(&files, o->out_dir, file, o->csv);
    DrafterRun r;
    build_drafter_run(&r, k, d);
    int K = r.v.outputs;
    double tok_per_step = (double)r.v.target->B * r.v.target->T;
    print_drafter_header(&r, d);
    char header[512];
    drafter_csv_header(header, sizeof(header), k->agree_col, K);
    FILE *csv = csv_start(&files, r.step, header);
    DraftEval v;
    if (r.step == 0) {
        v = drafter_evaluate(&r, o->eval_batches);
        k->print_eval(r.d, 0, &v);
        drafter_csv_row(csv, 0, 0, 0, NAN, v.loss, 0, v.agree, K);
    }
    long step0 = r.step, step_log = r.step;
    double sec0 = r.seconds, train_sec = 0.0; // train_sec: since the last line, evals excluded
    while (r.step < o->steps && (o->stop_at == 0 || r.step < o->stop_at)) {
        double lr = lr_at(o, (int)r.step), t0 = now_seconds();
        double loss = drafter_step(&r, o, lr), t1 = now_seconds();
        check_finite_step(r.step, loss, r.grad_norm, o->out_dir);
        int eval = r.step % o->eval_every == 0 || r.step == o->steps;
        if (eval) v = drafter_evaluate(&r, o->eval_batches);
        train_sec += t1 - t0;
        r.seconds += now_seconds() - t0;
        drafter_csv_row(csv, r.step, r.step * tok_per_step, lr, loss, eval ? v.loss : NAN, r.seconds,
                        eval ? v.agree : NULL, K);
        if (r.step % o->log_every == 0 || eval) {
            double eta = (o->steps - r.step) * (r.seconds - sec0) / (double)(r.step - step0);
            print_drafter_progress(&r, o, loss, lr, (r.step - step_log) * tok_per_step / train_sec, eta);
            step_log = r.step;
            train_sec = 0.0;
        }
        if (eval) k->print_eval(r.d, r.step, &v);
        if (r.step % o->ckpt_every == 0 || r.step == o->steps || r.step == o->stop_at)
            save_drafter_run(&r, o, &files);
    }
    free_run_files(&files);
    printf("%s: %s/%s.bin after %ld of %d steps, %.0f s of training\n", r.step == o->steps ? "done" : "stopped",
           o->out_dir, k->name, r.step, o->steps, r.seconds);
    free_drafter_run(&r);
}

// ----------------------------------------------------------------------------
// ./train quantize, and the version-2 reader of ./train bpb (both in the tests too)

// A version-2 (int8) checkpoint read as the float model it stands for
// (model.h's q80_dequantize), activations for one token: returns 0, leaving m
// alone, if path is not one. The file holds no RoPE tables: they are made for
// the first `positions` only (all a run reads; rope_tables' rows do not depend
// on seq_len), so m->c.seq_len is at most that.
static int load_q80_model(Model *m, const char *path, int positions) {
    size_t n;
    unsigned char *img = (unsigned char *)read_file(path, &n);
    int32_t h[2] = {0};
    memcpy(h, img, n < sizeof(h) ? n : sizeof(h));
    Config c;
    int shared, gs;
    char msg[512];
    if (h[0] != Q80_MAGIC || h[1] != 2) {
        free(img);
        return 0;
    }
    if (check_q80(&c, &shared, &gs, img, n, msg, sizeof(msg))) die("%s: %s", path, msg);
    if (!shared) die("%s: an unshared classifier; the trainer reads shared ones", path);
    if (c.seq_len > positions) c.seq_len = positions;
    build_model(m, &c, 1, 1, 0);
    q80_dequantize(m->params, &c, shared, gs, img);
    if (check_finite_weights(&m->w, &m->c, 1, msg, sizeof(msg))) // a finite scale x 127 can overflow float
        die("%s: dequantised (value x its group's scale): %s", path, msg);
    m->wt_fresh = 0;
    free(img);
    return 1;
}

// ./train quantize IN.bin OUT.bin [GS]: IN (legacy f32) as llama2.c's version 2
// (int8 groups of GS, default q80_group_size's; model.h's q80_export), the
// file export.py --version 2 writes for the same floats, and specdec reads.
// OUT is planned first (model.h: no input by any name, no device) and
// replaced whole (a temp file renamed over it: a failed write leaves it as it was).
static int cmd_quantize(int argc, char **argv) {
    if (argc < 4 || argc > 5) die("usage: ./train quantize IN.bin OUT.bin [GS]  (f32 -> version-2 int8 groups)");
    char *end = NULL, msg[512];
    errno = 0;
    long gs = argc == 5 ? strtol(argv[4], &end, 10) : 0;
    if (argc == 5 && (end == argv[4] || *end || errno))
        die("quantize: GS %s: expected a whole number (the group size, e.g. 64)", argv[4]);
    OutputFile out;
    io_forget();
    plan_or_die(&out, argv[3]);
    size_t n;
    char *file = read_file(argv[2], &n);
    Config c;
    int shared = 1;
    TransformerWeights w;
    int32_t h[2] = {0};
    memcpy(h, file, n < sizeof(h) ? n : sizeof(h));
    if (h[0] == Q80_MAGIC)
        die("%s: a versioned llama2.c export (version %d%s); quantize reads the legacy f32 format (export.py "
            "--version 0, or ./train's model.bin)", argv[2], (int)h[1], h[1] == 2 ? ": int8 already" : "");
    if (n < CONFIG_HEADER_BYTES || check_checkpoint(&c, &shared, (const int32_t *)(void *)file, n, msg, sizeof(msg)))
        die("%s: %s", argv[2], n < CONFIG_HEADER_BYTES ? "shorter than the 28-byte header" : msg);
    map_weights(&w, &c, (float *)(void *)(file + CONFIG_HEADER_BYTES), shared);
    if (check_finite_weights(&w, &c, shared, msg, sizeof(msg))) die("%s: %s", argv[2], msg);
    if (argc < 5) gs = q80_group_size(&c);
    if (gs <= 0 || gs % 4 || c.dim % gs || c.hidden_dim % gs)
        die("quantize: GS (group size) %ld: expected a positive multiple of 4 dividing dim %d and hidden_dim %d",
            gs, c.dim, c.hidden_dim);
    size_t bytes = q80_file_bytes(&c, shared, (int)gs);
    unsigned char *img = xmalloc(bytes);
    q80_export(img, &c, &w, shared, (int)gs);
    xfwrite(img, 1, bytes, begin_or_die(&out), argv[3]);
    commit_or_die(&out);
    printf("%s: %zu bytes -> %s: %zu bytes, version 2, groups of %ld\n", argv[2], n, argv[3], bytes, gs);
    free(img);
    free(file);
    return 0;
}

// ----------------------------------------------------------------------------
// ./train model, medusa, eagle, eval, bpb, dump-logits, bench (left out under TESTING)
#ifndef TESTING


static int cmd_model(int argc, char **argv) {
    TrainOpts o = {.data_dir = "runs/data", .out_dir = "runs/model", .dim = 256, .hidden = 0,
                   .layers = 6, .heads = 8, .kv_heads = 4, .seq = 256, .batch = 8, .accum = 4,
                   .steps = 1000, .warmup = 100, .seed = 1337, .threads = 2, .eval_every = 100,
                   .eval_batches = 8, .log_every = 10, .ckpt_every = 100, .lr = 1e-3f, .lr_min = 0.0f,
                   .wd = 0.1f, .clip = 1.0f, .beta1 = 0.9f, .beta2 = 0.95f, .stop_at = 0};
    Opt opts[] = {
        {"-data", 's', &o.data_dir, "directory with train.bin and val.bin (./train data)"},
        {"-o", 's', &o.out_dir, "run directory: state.bin (resume) and model.bin"},
        {"-csv", 's', &o.csv, "progress CSV: step,tokens,lr,train_loss,val_loss,seconds"},
        {"-teacher", 's', &o.teacher, "distil from this checkpoint's softmax (same vocab)"},
        {"-init", 's', &o.init, "start from this checkpoint's weights (same shape; a resumed run ignores it)"},
        {"-dim", 'i', &o.dim, "model width"},
        {"-hidden", 'i', &o.hidden, "FFN width (0: 8/3 dim rounded to 32)"},
        {"-layers", 'i', &o.layers, "blocks"},
        {"-heads", 'i', &o.heads, "query heads"},
        {"-kv-heads", 'i', &o.kv_heads, "key/value heads"},
        {"-seq", 'i', &o.seq, "sequence length (= the checkpoint's seq_len)"},
        {"-batch", 'i', &o.batch, "sequences per micro-batch"},
        {"-accum", 'i', &o.accum, "micro-batches per optimizer step"},
        {"-steps", 'i', &o.steps, "optimizer steps"},
        {"-warmup", 'i', &o.warmup, "linear warmup steps"},
        {"-lr", 'f', &o.lr, "peak learning rate"},
        {"-lr-min", 'f', &o.lr_min, "final learning rate of the cosine (0: lr/10)"},
        {"-wd", 'f', &o.wd, "AdamW weight decay (matrices and embedding)"},
        {"-dropout", 'f', &o.dropout, "residual dropout probability while training (0: off)"},
        {"-clip", 'f', &o.clip, "clip the gradient's global norm to this (0: off)"},
        {"-seed", 'i', &o.seed, "seed of the init and the batch sampler"},
        {"-threads", 'i', &o.threads, "threads"},
        {"-eval-every", 'i', &o.eval_every, "steps between validation losses"},
        {"-eval-batches", 'i', &o.eval_batches, "batches per validation"},
        {"-log-every", 'i', &o.log_every, "steps between progress lines"},
        {"-ckpt-every", 'i', &o.ckpt_every, "steps between checkpoints"},
        {"-stop-at", 'i', &o.stop_at, "stop after this step as if killed; the same command resumes (0: off)"},
    };
    parse_opts(argc, argv, "model", "train a llama model; re-run the same command to resume", opts,
               sizeof(opts) / sizeof(opts[0]));
    check_threads(o.threads);
    if (o.hidden == 0) o.hidden = (8 * o.dim / 3 + 31) / 32 * 32;
    if (o.lr_min == 0.0f) o.lr_min = o.lr / 10;
    if (o.batch < 1 || o.accum < 1 || o.steps < 1 || o.seq < 2 || o.eval_every < 1 || o.eval_batches < 1 ||
        o.log_every < 1 || o.ckpt_every < 1)
        die("model: -batch, -accum, -steps, -eval-every, -eval-batches, -log-every, -ckpt-every must be >= 1, -seq >= 2");
    if (!(o.dropout >= 0.0f && o.dropout < 1.0f)) die("model: -dropout %g: expected 0 <= p < 1 (e.g. 0.1)", o.dropout);
    train_model(&o);
    return 0;
}

// Remove a flag that takes no value from argv's option pairs (parse_opts
// reads pairs): *on = 1 if it was there; returns the new argc.
static int take_flag(int argc, char **argv, const char *flag, int *on) {
    for (int i = 2; i < argc;) {
        if (strcmp(argv[i], flag)) { i += 2; continue; }
        *on = 1;
        memmove(argv + i, argv + i + 1, (size_t)(argc - i) * sizeof(char *)); // argv[argc] (NULL) too
        argc--;
    }
    return argc;
}

// ./train medusa's and eagle's defaults: the same but the run directory
static DrafterOpts drafter_defaults(const char *out_dir) {
    DrafterOpts d = {.t = {.data_dir = "runs/data_medusa", .out_dir = out_dir, .seq = 0, .batch = 8, .accum = 1,
                           .steps = 1000, .warmup = 50, .seed = 1337, .threads = 2, .eval_every = 100,
                           .eval_batches = 4, .log_every = 10, .ckpt_every = 50, .lr = 1e-3f, .lr_min = 0.0f,
                           .wd = 0.0f, .clip = 1.0f, .beta1 = 0.9f, .beta2 = 0.95f}};
    return d;
}

// The option table of a drafter into opts (room for 19 + n_own): the shared
// options, the method's own (own, n_own) after -o; the two helps that name
// the kind's file go in out_help and ckpt_help (64 chars each). Returns the count.
static int drafter_opt_table(Opt *opts, DrafterOpts *d, const DrafterKind *k, const Opt *own, int n_own,
                             char *out_help, char *ckpt_help) {
    TrainOpts *o = &d->t;
    snprintf(out_help, 64, "run directory: state.bin (resume) and %s.bin", k->name);
    snprintf(ckpt_help, 64, "steps between saves of state.bin and %s.bin", k->name);
    Opt head[] = {
        {"-m", 's', &d->target, "the target checkpoint (frozen; required)"},
        {"-data", 's', &o->data_dir, "directory with train.bin and val.bin (./train data, the target's tokenizer)"},
        {"-o", 's', &o->out_dir, out_help},
    };
    Opt tail[] = {
        {"-csv", 's', &o->csv, k->csv_help},
        {"-seq", 'i', &o->seq, "sequence length (0: the target's seq_len)"},
        {"-batch", 'i', &o->batch, "sequences per step"},
        {"-steps", 'i', &o->steps, "optimizer steps"},
        {"-warmup", 'i', &o->warmup, "linear warmup steps"},
        {"-lr", 'f', &o->lr, "peak learning rate"},
        {"-lr-min", 'f', &o->lr_min, "final learning rate of the cosine (0: lr/10)"},
        {"-wd", 'f', &o->wd, k->wd_help},
        {"-clip", 'f', &o->clip, "clip the gradient's global norm to this (0: off)"},
        {"-seed", 'i', &o->seed, k->seed_help},
        {"-threads", 'i', &o->threads, "threads"},
        {"-eval-every", 'i', &o->eval_every, "steps between validations"},
        {"-eval-batches", 'i', &o->eval_batches, "batches per validation"},
        {"-log-every", 'i', &o->log_every, "steps between progress lines"},
        {"-ckpt-every", 'i', &o->ckpt_every, ckpt_help},
        {"-stop-at", 'i', &o->stop_at, "stop after this step as if killed; the same command resumes (0: off)"},
    };
    int nh = (int)(sizeof(head) / sizeof(head[0])), nt = (int)(sizeof(tail) / sizeof(tail[0]));
    memcpy(opts, head, sizeof(head));
    memcpy(opts + nh, own, (size_t)n_own * sizeof(Opt));
    memcpy(opts + nh + n_own, tail, sizeof(tail));
    return nh + n_own + nt;
}

// Parse ./train medusa's or eagle's command line into d (what: the usage's
// line) and check what the methods share; the method's own options (own,
// n_own <= 13) its build checks.
static void parse_drafter_opts(int argc, char **argv, const DrafterKind *k, DrafterOpts *d, const Opt *own,
                               int n_own, const char *what) {
    Opt opts[32];
    char out_help[64], ckpt_help[64];
    int n = drafter_opt_table(opts, d, k, own, n_own, out_help, ckpt_help);
    parse_opts(argc, argv, k->name, what, opts, n);
    TrainOpts *o = &d->t;
    if (!d->target) die("%s: -m (the target checkpoint) is required", k->name);
    check_threads(o->threads);
    if (o->lr_min == 0.0f) o->lr_min = o->lr / 10;
    if (o->batch < 1 || o->steps < 1 || o->eval_every < 1 || o->eval_batches < 1 || o->log_every < 1 ||
        o->ckpt_every < 1 || (o->seq != 0 && o->seq < 2))
        die("%s: -batch, -steps, -eval-every, -eval-batches, -log-every, -ckpt-every must be >= 1, -seq 0 or >= 2",
            k->name);
}

static int cmd_medusa(int argc, char **argv) {
    DrafterOpts d = drafter_defaults("runs/medusa");
    d.medusa.heads = 4;
    argc = take_flag(argc, argv, "-hard", &d.medusa.hard);
    Opt own[] = {
        {"-heads", 'i', &d.medusa.heads, "Medusa heads: head h predicts the token at t+1+h"},
        {"-hard", 'i', &d.medusa.hard, "a flag (no value): learn the data's tokens, not the target's softmax"},
    };
    parse_drafter_opts(argc, argv, &MEDUSA_KIND, &d, own, (int)(sizeof(own) / sizeof(own[0])),
                       "train Medusa heads on a frozen target; re-run the same command to resume");
    train_drafter(&MEDUSA_KIND, &d);
    return 0;
}

static int cmd_eagle(int argc, char **argv) {
    DrafterOpts d = drafter_defaults("runs/eagle");
    d.eagle.unroll = 2;
    d.eagle.feat = 0.1f;
    Opt own[] = {
        {"-hidden", 'i', &d.eagle.hidden, "the MLP's width (0: 2 x the target's dim)"},
        {"-unroll", 'i', &d.eagle.unroll, "steps the drafter runs on its own features per row (as generation does)"},
        {"-feat", 'f', &d.eagle.feat, "weight of the feature loss (MSE against the target's next hidden state)"},
    };
    parse_drafter_opts(argc, argv, &EAGLE_KIND, &d, own, (int)(sizeof(own) / sizeof(own[0])),
                       "train an EAGLE-style feature drafter on a frozen target; re-run the same command to resume");
    train_drafter(&EAGLE_KIND, &d);
    return 0;
}

// Validation loss of a checkpoint on a token file (compare runs on one held-out set).
static int cmd_eval(int argc, char **argv) {
    const char *ckpt = NULL, *val = NULL;
    int batches = 16, batch = 8, threads = 2;
    Opt opts[] = {{"-m", 's', &ckpt, "checkpoint"}, {"-val", 's', &val, "token file (./train data's val.bin)"},
                  {"-batches", 'i', &batches, "batches"}, {"-batch", 'i', &batch, "sequences per batch"},
                  {"-threads", 'i', &threads, "threads"}};
    parse_opts(argc, argv, "eval", "mean next-token loss on evenly spaced windows", opts,
               sizeof(opts) / sizeof(opts[0]));
    if (!ckpt || !val) die("eval: -m and -val are required");
    Model m;
    load_model(&m, ckpt, batch, 0, 0);
    m.threads = check_threads(threads);
    Tokens t = read_tokens(val);
    if (t.vocab_size != m.c.vocab_size) die("%s: vocab %d, %s: %d", val, t.vocab_size, ckpt, m.c.vocab_size);
    if (t.n < (size_t)batches * batch * m.T + 1) die("%s: %zu tokens, fewer than -batches x -batch windows", val, t.n);
    int *in = xmalloc((size_t)batch * m.T * sizeof(int)), *tg = xmalloc((size_t)batch * m.T * sizeof(int));
    printf("%s on %s: loss %.4f (%d x %d windows of %d)\n", ckpt, val, evaluate(&m, &t, batches, in, tg), batches,
           batch, m.T);
    free(in); free(tg); free(t.tok);
    free_model(&m);
    return 0;
}

// The documents of a text for `bpb`: blank-line-separated paragraphs, each
// without its surrounding blank lines; with tail > 0 only those that start in
// the file's last `tail` bytes. Returns how many; spans (2 * count) offsets.
static size_t paragraphs(size_t **spans, const char *text, size_t n, size_t tail) {
    size_t count = 0, cap = 0, from = tail && tail < n ? n - tail : 0;
    *spans = NULL;
    for (size_t i = 0; i < n;) {
        while (i < n && text[i] == '\n') i++; // blank lines between paragraphs
        size_t start = i;
        while (i < n && !(text[i] == '\n' && (i + 1 >= n || text[i + 1] == '\n'))) i++;
        if (i > start && start >= from) {
            grow((void **)spans, &cap, 2 * count + 2, sizeof(size_t));
            (*spans)[2 * count] = start;
            (*spans)[2 * count + 1] = i;
            count++;
        }
        if (i < n) i++;
    }
    return count;
}

// Summed next-token loss (nats) of tokens[0..n) under m, tokens[0] = BOS:
// windows of m->T tokens overlapping by one, so every token after the first
// is predicted exactly once, from at most T - 1 tokens of context.
static double sequence_loss(Model *m, const int *tokens, size_t n, int *in, int *tg) {
    double sum = 0;
    size_t T = (size_t)m->T;
    for (size_t w = 0; w + 1 < n; w += T - 1) {
        size_t len = n - w < T ? n - w : T;
        for (size_t i = 0; i < T; i++) {
            in[i] = i < len ? tokens[w + i] : 0;
            tg[i] = i + 1 < len ? tokens[w + i + 1] : 0;
        }
        model_forward(m, in);
        model_loss(m, tg, NULL);
        for (size_t i = 0; i + 1 < len; i++) sum += m->a.losses[i];
    }
    return sum;
}

// Bits per byte of a checkpoint on a text, a yardstick that does not depend on
// the tokenizer: sum of next-token losses / ln 2 / UTF-8 bytes scored. Each
// paragraph is a document scored from BOS (as the models see a story start), in
// windows of min(seq_len, the longest document) tokens: the memory a window
// takes is what the text needs, not what seq_len allows.
static int cmd_bpb(int argc, char **argv) {
    const char *ckpt = NULL, *tok = "tokenizer.bin", *file = NULL;
    int tail = 0, threads = 2;
    Opt opts[] = {{"-m", 's', &ckpt, "checkpoint (llama2.c, shared classifier)"},
                  {"-z", 's', &tok, "its tokenizer.bin"}, {"-f", 's', &file, "text file"},
                  {"-tail", 'i', &tail, "score only paragraphs starting in the last N bytes "
                                        "(150000: the held-out text of docs/TRAINING.md)"},
                  {"-threads", 'i', &threads, "threads"}};
    parse_opts(argc, argv, "bpb", "bits per byte of a checkpoint on a text", opts, sizeof(opts) / sizeof(opts[0]));
    if (!ckpt || !file) die("bpb: -m and -f are required");
    Vocab v = {0};
    read_tokenizer(&v, tok);
    Encoder e;
    build_encoder(&e, &v, (int)v.str.n);
    size_t n, *spans, bytes = 0, tokens = 0, longest = 2;
    char *text = read_file(file, &n);
    size_t docs = paragraphs(&spans, text, n, (size_t)tail);
    if (docs == 0) die("%s: no paragraphs to score (-tail %d)", file, tail);
    IntBuf *ids = xcalloc(docs, sizeof(IntBuf));
    for (size_t d = 0; d < docs; d++) {
        encode_document(&e, text + spans[2 * d], spans[2 * d + 1] - spans[2 * d], &ids[d]);
        if (ids[d].n > longest) longest = ids[d].n;
    }
    Model m;
    int window = longest < (1 << 24) ? (int)longest : 1 << 24; // seq_len is below 2^24 (model.h)
    if (!load_q80_model(&m, ckpt, window)) load_model(&m, ckpt, 1, 1, 0); // llama2.c version 2 (int8), or legacy
    m.threads = check_threads(threads);
    if ((int)v.str.n != m.c.vocab_size)
        die("%s has %zu tokens but %s has vocab_size %d: use the model's own tokenizer", tok, v.str.n,
            ckpt, m.c.vocab_size);
    if (m.c.seq_len < 2) // windows overlap by one token: each must predict one more
        die("%s: header field seq_len = %d; bpb predicts each token from the ones before it, expected at least 2",
            ckpt, m.c.seq_len);
    if (window > m.c.seq_len) window = m.c.seq_len;
    if (alloc_acts(&m, 1, window))
        die("%s: out of memory for windows of %d tokens (seq_len %d, the longest paragraph of %s %zu tokens): "
            "score shorter paragraphs", ckpt, window, m.c.seq_len, file, longest);
    int *in = xmalloc((size_t)window * sizeof(int)), *tg = xmalloc((size_t)window * sizeof(int));
    double nats = 0;
    for (size_t d = 0; d < docs; d++) {
        nats += sequence_loss(&m, ids[d].p, ids[d].n, in, tg);
        bytes += spans[2 * d + 1] - spans[2 * d];
        tokens += ids[d].n - 1;
        free(ids[d].p);
    }
    if (!isfinite(nats))
        die("%s: the loss on %s is %g nats, not finite: the weights overflow float32 in the forward", ckpt,
            file, nats);
    printf("%s on %s: %zu paragraphs, %zu bytes, %zu tokens (%.3f bytes/token), %.4f nats/token\n",
           ckpt, file, docs, bytes, tokens, (double)bytes / (double)tokens, nats / (double)tokens);
    printf("bits per byte: %.4f\n", nats / log(2.0) / (double)bytes);
    free(in); free(tg); free(ids); free(spans); free(text);
    free_encoder(&e); free_vocab(&v); free_model(&m);
    return 0;
}

// Forward a checkpoint over the given tokens at positions 0..n-1 and write
// int32 n, int32 vocab_size, int32 tokens[n], float logits[n][vocab_size].
static int cmd_dump_logits(int argc, char **argv) {
    const char *ckpt = NULL, *out = NULL, *list = NULL;
    Opt opts[] = {{"-m", 's', &ckpt, "checkpoint"}, {"-o", 's', &out, "output file"},
                  {"-tokens", 's', &list, "comma-separated token ids"}};
    parse_opts(argc, argv, "dump-logits", "write the trainer's logits for given tokens", opts,
               sizeof(opts) / sizeof(opts[0]));
    if (!ckpt || !out || !list) die("dump-logits: -m, -o and -tokens are required");
    IntBuf toks = {0};
    parse_int_list(&toks, list, "-tokens");
    OutputFile o;
    plan_or_die(&o, out);
    Model m;
    load_model(&m, ckpt, 1, (int)toks.n, 0);
    for (size_t i = 0; i < toks.n; i++)
        if (toks.p[i] < 0 || toks.p[i] >= m.c.vocab_size) die("-tokens: %d is not in 0..%d", toks.p[i], m.c.vocab_size - 1);
    model_forward(&m, toks.p);
    FILE *f = begin_or_die(&o);
    int32_t hdr[2] = {(int32_t)toks.n, m.c.vocab_size};
    xfwrite(hdr, sizeof(hdr), 1, f, out);
    xfwrite(toks.p, sizeof(int), toks.n, f, out);
    xfwrite(m.a.logits, sizeof(float), toks.n * (size_t)m.c.vocab_size, f, out);
    commit_or_die(&o);
    free(toks.p);
    free_model(&m);
    return 0;
}

// ----------------------------------------------------------------------------
// ./train bench: the matmul alone, then whole training steps on random tokens

static void bench_matmul(size_t N, int IC, int OC, int threads) {
    float *inp = xcalloc(N * IC, sizeof(float)), *w = xcalloc((size_t)OC * IC, sizeof(float));
    float *out = xcalloc(N * OC, sizeof(float)), *dinp = xcalloc(N * IC, sizeof(float));
    float *dw = xcalloc((size_t)OC * IC, sizeof(float));
    matmul_backward(dinp, dw, out, inp, w, N, IC, OC, threads); // touch the pages before timing
    double t0 = now_seconds();
    for (int r = 0; r < 3; r++) matmul_forward(out, inp, w, N, IC, OC, threads);
    double t1 = now_seconds();
    for (int r = 0; r < 3; r++) matmul_backward(dinp, dw, out, inp, w, N, IC, OC, threads);
    double t2 = now_seconds(), f = 2.0 * N * IC * OC;
    printf("matmul (%zu x %d) @ (%d x %d)^T: forward %.1f GFLOP/s, backward %.1f GFLOP/s\n", N, IC, OC, IC,
           3 * f / (t1 - t0) / 1e9, 6 * f / (t2 - t1) / 1e9);
    free(inp); free(w); free(out); free(dinp); free(dw);
}

static int cmd_bench(int argc, char **argv) {
    Config c = {.dim = 256, .hidden_dim = 0, .n_layers = 6, .n_heads = 8, .n_kv_heads = 4,
                .vocab_size = 2048, .seq_len = 256};
    int batch = 8, steps = 2, threads = 2;
    Opt opts[] = {
        {"-dim", 'i', &c.dim, "width"}, {"-hidden", 'i', &c.hidden_dim, "FFN width (0: 8/3 dim)"},
        {"-layers", 'i', &c.n_layers, "blocks"}, {"-heads", 'i', &c.n_heads, "query heads"},
        {"-kv-heads", 'i', &c.n_kv_heads, "key/value heads"}, {"-vocab", 'i', &c.vocab_size, "vocabulary"},
        {"-seq", 'i', &c.seq_len, "sequence length"}, {"-batch", 'i', &batch, "sequences per step"},
        {"-steps", 'i', &steps, "timed steps"}, {"-threads", 'i', &threads, "threads"},
    };
    parse_opts(argc, argv, "bench", "speed of the kernels and of training steps", opts, sizeof(opts) / sizeof(opts[0]));
    check_threads(threads);
    if (c.hidden_dim == 0) c.hidden_dim = (8 * c.dim / 3 + 31) / 32 * 32;
    size_t N = (size_t)batch * c.seq_len;
    bench_matmul(N, c.dim, c.hidden_dim, threads);
    bench_matmul(N, c.dim, c.vocab_size, threads);
    Model m;
    build_model(&m, &c, batch, c.seq_len, 1);
    m.threads = threads;
    Rng rng = {1};
    init_weights(&m, &rng);
    int *tok = xmalloc(N * sizeof(int));
    for (size_t i = 0; i < N; i++) tok[i] = (int)(rng_next(&rng) % (uint64_t)c.vocab_size);
    double t0 = 0;
    for (int s = 0; s <= steps; s++) {
        if (s == 1) t0 = now_seconds(); // step 0 warms up
        model_forward(&m, tok);
        model_loss(&m, tok, NULL);
        model_backward(&m, tok, NULL, 1.0f / (float)N);
    }
    double tps = steps * (double)N / (now_seconds() - t0);
    printf("training: dim %d hidden %d layers %d heads %d/%d vocab %d seq %d, %.2fM params read per token: "
           "%.0f tokens/s, %.1f GFLOP/s (%d threads)\n", c.dim, c.hidden_dim, c.n_layers, c.n_heads,
           c.n_kv_heads, c.vocab_size, c.seq_len, params_per_token(&c) / 1e6, tps,
           tps * flops_per_token(&c, c.seq_len) / 1e9, threads);
    free(tok);
    free_model(&m);
    return 0;
}

// ----------------------------------------------------------------------------
// main

int main(int argc, char **argv) {
    const char *cmd = argc > 1 ? argv[1] : "";
    if (!strcmp(cmd, "tokenizer")) return cmd_tokenizer(argc, argv);
    if (!strcmp(cmd, "data")) return cmd_data(argc, argv);
    if (!strcmp(cmd, "model")) return cmd_model(argc, argv);
    if (!strcmp(cmd, "medusa")) return cmd_medusa(argc, argv);
    if (!strcmp(cmd, "eagle")) return cmd_eagle(argc, argv);
    if (!strcmp(cmd, "bpb")) return cmd_bpb(argc, argv);
    if (!strcmp(cmd, "quantize")) return cmd_quantize(argc, argv);
    if (!strcmp(cmd, "dump-logits")) return cmd_dump_logits(argc, argv);
    if (!strcmp(cmd, "encode")) return cmd_encode(argc, argv);
    if (!strcmp(cmd, "eval")) return cmd_eval(argc, argv);
    if (!strcmp(cmd, "bench")) return cmd_bench(argc, argv);
    fprintf(stderr, "usage: ./train tokenizer|data|model|medusa|eagle|eval|bpb|quantize|dump-logits|encode|bench [options]  "
                    "(-h: options)\n"
                    "  tokenizer    byte-level BPE over the corpus -> tokenizer.bin\n"
                    "  data         corpus -> runs/data/{train,val}.bin token streams\n"
                    "  model        train (or distil, -teacher) a model; re-run to resume\n"
                    "  medusa       train Medusa heads on a frozen target -> medusa.bin; re-run to resume\n"
                    "  eagle        train an EAGLE-style feature drafter on a frozen target -> eagle.bin\n"
                    "  eval         validation loss of a checkpoint on a token file\n"
                    "  bpb          bits per byte of a checkpoint + tokenizer on a text\n"
                    "  quantize     IN.bin OUT.bin [GS]: llama2.c's version-2 int8 (groups of GS) of a checkpoint\n"
                    "  dump-logits  the trainer's logits for given tokens (tests)\n"
                    "  encode       token ids of a text file (tests)\n"
                    "  bench        matmul GFLOP/s and training tokens/s\n");
    return 1;
}
#endif // TESTING
