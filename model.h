// model.h - the checkpoint format specdec.c reads and train.c writes.
//
// It is llama2.c's "legacy" (version 0) format, the one karpathy's stories260K,
// stories15M/42M/110M use, so those files load unchanged. All numbers are
// little-endian; all tensors are fp32, row-major, written back to back:
//
//   offset 0   Config: 7 x int32
//     dim         model width                                   (> 0)
//     hidden_dim  SwiGLU inner width                            (> 0)
//     n_layers    transformer blocks                            (> 0)
//     n_heads     query heads; dim % n_heads == 0               (> 0)
//     n_kv_heads  key/value heads; n_heads % n_kv_heads == 0    (> 0)
//     vocab_size  tokens; NEGATIVE means "the classifier wcls is
//                 stored separately at the end" (unshared); positive
//                 means the classifier is token_embedding (shared)
//     seq_len     longest context the model was trained for     (> 0)
//
//   offset 28  tensors, with hs = dim / n_heads, kv_dim = n_kv_heads * hs,
//              L = n_layers, V = |vocab_size|; "(a,b)" = a rows of b floats:
//     token_embedding (V, dim)
//     rms_att         (L, dim)            RMSNorm gain before attention
//     wq              (L, dim, dim)       query = wq @ x   (out, in)
//     wk              (L, kv_dim, dim)    k = wk @ x
//     wv              (L, kv_dim, dim)    v = wv @ x
//     wo              (L, dim, dim)       attention output projection
//     rms_ffn         (L, dim)            RMSNorm gain before the FFN
//     w1              (L, hidden, dim)    gate:  silu(w1 @ x) * (w3 @ x)
//     w2              (L, dim, hidden)    down:  w2 @ (...)
//     w3              (L, hidden, dim)    up
//     rms_final       (dim)
//     freq_cis_real   (seq_len, hs/2)     RoPE cos(pos * theta_i), legacy table
//     freq_cis_imag   (seq_len, hs/2)     RoPE sin(pos * theta_i), legacy table
//     wcls            (V, dim)            only when vocab_size < 0
//
// Every weight matrix is stored (out, in): y = W @ x reads one contiguous row
// of W per output, which is what the matmul kernel streams.
//
// RoPE: theta_i = 10000^(-2i/hs), i = 0..hs/2-1, applied to consecutive pairs
// (x[2i], x[2i+1]) inside each head. specdec.c and train.c both use the tables
// stored in the file (rope_tables() below makes them), so a checkpoint carries
// the exact rotation it was trained with.
//
// Header-only: the functions are static inline so each program gets its own
// copy and none warns about the ones it does not use.
#ifndef SPECDEC_MODEL_H
#define SPECDEC_MODEL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "specdec reads llama2.c's little-endian files; a big-endian host would need byte swapping"
#endif

typedef struct {
    int dim;        // transformer width
    int hidden_dim; // FFN inner width
    int n_layers;   // number of blocks
    int n_heads;    // query heads
    int n_kv_heads; // key/value heads (grouped-query attention when < n_heads)
    int vocab_size; // |vocab_size| tokens; < 0 in the FILE means unshared classifier
    int seq_len;    // maximum context
} Config;

#define CONFIG_HEADER_BYTES (7 * sizeof(int32_t))

// Pointers into one flat float array; shapes as in the table above.
typedef struct {
    float *token_embedding; // (V, dim)
    float *rms_att;         // (L, dim)
    float *wq;              // (L, dim, dim)
    float *wk;              // (L, kv_dim, dim)
    float *wv;              // (L, kv_dim, dim)
    float *wo;              // (L, dim, dim)
    float *rms_ffn;         // (L, dim)
    float *w1;              // (L, hidden, dim)
    float *w2;              // (L, dim, hidden)
    float *w3;              // (L, hidden, dim)
    float *rms_final;       // (dim)
    float *rope_cos;        // (seq_len, hs/2)
    float *rope_sin;        // (seq_len, hs/2)
    float *wcls;            // (V, dim); == token_embedding when shared
} TransformerWeights;

// Saturating size arithmetic: a header's fields are each below 2^24, but their
// products can pass 2^64; SIZE_MAX then stands for "too large for any file".
static inline size_t mul_size(size_t a, size_t b) { return a && b > SIZE_MAX / a ? SIZE_MAX : a * b; }
static inline size_t add_size(size_t a, size_t b) { return b > SIZE_MAX - a ? SIZE_MAX : a + b; }

// Number of floats after the header for config c (c->vocab_size > 0 here;
// `shared` says whether wcls is the embedding); SIZE_MAX if that overflows.
static inline size_t checkpoint_n_floats(const Config *c, int shared) {
    size_t dim = (size_t)c->dim, hid = (size_t)c->hidden_dim, L = (size_t)c->n_layers;
    size_t V = (size_t)c->vocab_size, hs = dim / (size_t)c->n_heads;
    size_t kv_dim = (size_t)c->n_kv_heads * hs;
    size_t per_layer = add_size(add_size(dim, mul_size(dim, dim)), mul_size(2 * kv_dim, dim));
    per_layer = add_size(per_layer, mul_size(dim, dim));                  // rms_att wq wk wv wo
    per_layer = add_size(per_layer, add_size(dim, mul_size(3 * hid, dim))); // rms_ffn w1 w2 w3
    size_t n = mul_size(V, dim);                                            // token_embedding
    n = add_size(n, mul_size(L, per_layer));
    n = add_size(n, add_size(dim, mul_size((size_t)c->seq_len, hs)));      // rms_final, RoPE
    if (!shared) n = add_size(n, mul_size(V, dim));                         // wcls
    return n;
}

// The shapes a model must have (what llama2.c, specdec.c and train.c assume):
// every field positive and below 2^24 (vocab_size may be negative in a FILE,
// meaning an unshared classifier: pass its absolute value here), dim a multiple
// of n_heads, an even head size, n_heads a multiple of n_kv_heads. Returns 0,
// or -1 with a message in msg naming the field and what was expected.
static inline int check_config_fields(const Config *c, char *msg, size_t len) {
    const char *names[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
    const int v[7] = {c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads, c->vocab_size, c->seq_len};
    for (int i = 0; i < 7; i++)
        if (v[i] <= 0 || v[i] > (1 << 24)) {
            snprintf(msg, len, "header field %s = %d, expected a positive integer below 2^24 "
                     "(is this a llama2.c checkpoint?)", names[i], v[i]);
            return -1;
        }
    if (c->dim % c->n_heads != 0)
        snprintf(msg, len, "dim %d is not a multiple of n_heads %d", c->dim, c->n_heads);
    else if (c->n_heads % c->n_kv_heads != 0)
        snprintf(msg, len, "n_heads %d is not a multiple of n_kv_heads %d", c->n_heads, c->n_kv_heads);
    else if ((c->dim / c->n_heads) % 2 != 0)
        snprintf(msg, len, "head size %d is odd; RoPE rotates pairs", c->dim / c->n_heads);
    else
        return 0;
    return -1;
}

// The 28-byte header h of a checkpoint file of file_bytes bytes, checked:
// llama2.c's legacy format, sane shapes (check_config_fields), and a size that
// is exactly what the header describes. Fills c (vocab_size positive) and
// *shared. Returns 0, or -1 with a message in msg.
static inline int check_checkpoint(Config *c, int *shared, const int32_t h[7], size_t file_bytes,
                                   char *msg, size_t len) {
    if (h[0] == 0x616b3432) { // "ak42": llama2.c's versioned export
        snprintf(msg, len, "this is a versioned llama2.c export (magic \"ak42\") of version %d; the legacy "
                 "format and version 2 (int8) are read (export with --version 0 or 2)", (int)h[1]);
        return -1;
    }
    long long vocab = h[5] < 0 ? -(long long)h[5] : h[5]; // < 0: unshared classifier
    *c = (Config){h[0], h[1], h[2], h[3], h[4], vocab > INT32_MAX ? 0 : (int)vocab, h[6]};
    *shared = h[5] > 0;
    if (vocab > INT32_MAX) {
        snprintf(msg, len, "header field vocab_size = %d, expected a positive integer below 2^24 "
                 "(is this a llama2.c checkpoint?)", (int)h[5]);
        return -1;
    }
    if (check_config_fields(c, msg, len)) return -1;
    size_t need = add_size(CONFIG_HEADER_BYTES, mul_size(checkpoint_n_floats(c, *shared), sizeof(float)));
    if (file_bytes == need) return 0;
    char needs[48];
    if (need == SIZE_MAX) snprintf(needs, sizeof(needs), "more than 2^64 bytes");
    else snprintf(needs, sizeof(needs), "%zu", need);
    snprintf(msg, len, "file is %zu bytes but its header (dim %d, hidden_dim %d, n_layers %d, "
             "n_heads %d, n_kv_heads %d, vocab_size %d, seq_len %d, %s classifier) needs %s; the file "
             "is %s", file_bytes, c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads,
             c->vocab_size, c->seq_len, *shared ? "shared" : "unshared", needs,
             file_bytes < need ? "truncated (or its header is wrong)" : "longer than a legacy llama2.c checkpoint");
    return -1;
}

// Where each tensor starts, in floats after the header, in the table's (and
// TransformerWeights') order: off[13], wcls, is 0 (the embedding's) when shared.
#define CHECKPOINT_TENSORS 14
static inline void checkpoint_offsets(size_t off[CHECKPOINT_TENSORS], const Config *c, int shared) {
    size_t dim = (size_t)c->dim, hid = (size_t)c->hidden_dim, L = (size_t)c->n_layers;
    size_t hs = dim / (size_t)c->n_heads, kv = (size_t)c->n_kv_heads * hs, rope = (size_t)c->seq_len * hs / 2;
    size_t n[CHECKPOINT_TENSORS] = {(size_t)c->vocab_size * dim, L * dim, L * dim * dim, L * kv * dim,
                                    L * kv * dim, L * dim * dim, L * dim, L * hid * dim, L * dim * hid,
                                    L * hid * dim, dim, rope, rope, 0};
    for (size_t i = 0, at = 0; i < CHECKPOINT_TENSORS; at += n[i], i++) off[i] = at;
    if (shared) off[13] = 0;
}

// Point w's fields into the flat array `at` laid out as above.
static inline void map_weights(TransformerWeights *w, const Config *c, float *at, int shared) {
    size_t off[CHECKPOINT_TENSORS];
    float **f[CHECKPOINT_TENSORS] = {&w->token_embedding, &w->rms_att, &w->wq, &w->wk, &w->wv, &w->wo, &w->rms_ffn,
                                     &w->w1, &w->w2, &w->w3, &w->rms_final, &w->rope_cos, &w->rope_sin, &w->wcls};
    checkpoint_offsets(off, c, shared);
    for (int i = 0; i < CHECKPOINT_TENSORS; i++) *f[i] = at + off[i];
}

// The first float of v (n) that is NaN or inf, or n. A bit test (exponent all
// ones), so the compiler can vectorise the pass: a load reads the file once.
static inline size_t first_non_finite(const float *v, size_t n) {
    for (size_t i0 = 0; i0 < n; i0 += 4096) {
        size_t i1 = n - i0 < 4096 ? n : i0 + 4096;
        uint32_t bad = 0;
        for (size_t i = i0; i < i1; i++) {
            uint32_t b;
            memcpy(&b, &v[i], sizeof(b));
            bad |= (b & 0x7F800000u) == 0x7F800000u;
        }
        if (bad)
            for (size_t i = i0; i < i1; i++)
                if (!isfinite(v[i])) return i;
    }
    return n;
}

// v (n): elements first.. of the tensor `name`, layers of per_layer floats in rows of
// cols. Every weight must be a finite float: a NaN or inf (a diverged training run,
// a corrupted file) would otherwise decode silently into garbage. Returns 0, or -1
// with a message in msg naming the tensor, the layer, the row and the column.
static inline int check_finite_tensor(const float *v, size_t n, const char *name, size_t first, size_t per_layer,
                                      size_t cols, char *msg, size_t len) {
    size_t at = first_non_finite(v, n), e = first + at;
    if (at == n) return 0;
    snprintf(msg, len, "weight %s (layer %zu, row %zu, column %zu) is %s; a checkpoint must hold finite floats "
             "(a training run that diverged, or a damaged file?)", name, e / per_layer, e % per_layer / cols,
             e % cols, isnan(v[at]) ? "NaN" : "infinite");
    return -1;
}

// Every tensor of a checkpoint checked (check_finite_tensor)
static inline int check_finite_weights(const TransformerWeights *w, const Config *c, int shared,
                                       char *msg, size_t len) {
    size_t dim = (size_t)c->dim, hid = (size_t)c->hidden_dim, L = (size_t)c->n_layers;
    size_t hs = dim / (size_t)c->n_heads, kv = (size_t)c->n_kv_heads * hs, V = (size_t)c->vocab_size;
    struct { const char *name; const float *data; size_t layers, rows, cols; } t[] = {
        {"token_embedding", w->token_embedding, 1, V, dim}, {"rms_att", w->rms_att, L, 1, dim},
        {"wq", w->wq, L, dim, dim}, {"wk", w->wk, L, kv, dim}, {"wv", w->wv, L, kv, dim},
        {"wo", w->wo, L, dim, dim}, {"rms_ffn", w->rms_ffn, L, 1, dim}, {"w1", w->w1, L, hid, dim},
        {"w2", w->w2, L, dim, hid}, {"w3", w->w3, L, hid, dim}, {"rms_final", w->rms_final, 1, 1, dim},
        {"freq_cis_real", w->rope_cos, 1, (size_t)c->seq_len, hs / 2},
        {"freq_cis_imag", w->rope_sin, 1, (size_t)c->seq_len, hs / 2},
        {"wcls", w->wcls, shared ? 0 : 1, V, dim}};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (check_finite_tensor(t[i].data, t[i].layers * t[i].rows * t[i].cols, t[i].name, 0, t[i].rows * t[i].cols,
                                t[i].cols, msg, len))
            return -1;
    return 0;
}

// The legacy RoPE tables: cos/sin (seq_len, hs/2) of pos * 10000^(-2i/hs).
// Computed in double and rounded once, so every libm gives the same floats.
static inline void rope_tables(float *cos_out, float *sin_out, int seq_len, int head_size) {
    int half = head_size / 2;
    for (int pos = 0; pos < seq_len; pos++) {
        for (int i = 0; i < half; i++) {
            double theta = pow(10000.0, -2.0 * i / head_size);
            cos_out[(size_t)pos * half + i] = (float)cos(pos * theta);
            sin_out[(size_t)pos * half + i] = (float)sin(pos * theta);
        }
    }
}

// Write the 28-byte header; vocab_size is stored negated when !shared.
// Returns 0 on success, -1 on a write error.
static inline int write_config(FILE *f, const Config *c, int shared) {
    int32_t h[7] = {c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads,
                    shared ? c->vocab_size : -c->vocab_size, c->seq_len};
    return fwrite(h, sizeof(h), 1, f) == 1 ? 0 : -1;
}

// Write a file of `n_header` int32s h, then n floats `data` (a medusa.bin or an
// eagle.bin). Returns 0 on success, -1 on error.
// The _to variants write to an open f (an output's temp file) and leave it open.
static inline int write_ints_floats_to(FILE *f, const int32_t *h, size_t n_header, const float *data, size_t n) {
    return fwrite(h, sizeof(*h), n_header, f) != n_header || fwrite(data, sizeof(float), n, f) != n ? -1 : 0;
}

static inline int write_ints_floats(const char *path, const int32_t *h, size_t n_header, const float *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int bad = write_ints_floats_to(f, h, n_header, data, n);
    if (fclose(f) != 0) bad = 1;
    return bad ? -1 : 0;
}

// Write a whole checkpoint: header then the flat array `data` (checkpoint_n_floats
// floats, laid out as map_weights expects). Returns 0 on success, -1 on error.
static inline int write_checkpoint_to(FILE *f, const Config *c, const float *data, int shared) {
    size_t n = checkpoint_n_floats(c, shared);
    return write_config(f, c, shared) != 0 || fwrite(data, sizeof(float), n, f) != n ? -1 : 0;
}

static inline int write_checkpoint(const char *path, const Config *c, const float *data, int shared) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int bad = write_checkpoint_to(f, c, data, shared);
    if (fclose(f) != 0) bad = 1;
    return bad ? -1 : 0;
}

// ---------------------------------------------------------------------------
// Version 2: llama2.c's int8 export (export.py --version 2, read by runq.c), the
// same model with every matrix in groups of GS int8 values and one fp32 scale:
//
//   offset 0    uint32 magic Q80_MAGIC ("ak42"), int32 version 2, the 7 Config
//               ints (vocab_size positive), uint8 shared_classifier (1: wcls is the
//               embedding), int32 group_size GS at offset 37; zeros to offset 256
//   offset 256  rms_att (L, dim), rms_ffn (L, dim), rms_final (dim), fp32; then
//               token_embedding, wq, wk, wv, wo, w1, w2, w3, wcls when not shared
//               (shapes as above), each layer's matrix as its int8 values
//               (row-major) followed by one fp32 scale per GS of them: wq of layer
//               0, its scales, wq of layer 1, ... No RoPE tables: readers compute
//               rope_tables().
//
// A group's values are w_q * s: s = max|w| / 127, w_q = rint(w / s) (ties to even,
// torch.round's rule; 0 where s is 0), so |w_q| <= 127. GS divides dim, so a
// layer's matrix is whole groups; export.py halves GS until it divides dim only,
// so where it does not divide hidden_dim w2's groups run across its rows (the
// readers here split them at each row's end: q80_row_group). specdec takes GS
// a multiple of 4 whose parts of a row are too.
#define Q80_MAGIC 0x616b3432
#define Q80_HEADER_BYTES 256
enum { Q80_EMBEDDING, Q80_WQ, Q80_WK, Q80_WV, Q80_WO, Q80_W1, Q80_W2, Q80_W3, Q80_WCLS, Q80_MATRICES };

// The matrices in file order: their names and sizes in values over all layers
// (0: wcls, shared); L blocks of n / L values and their scales each but for the
// embedding and wcls (one block)
static inline void q80_sizes(const Config *c, int shared, size_t n[Q80_MATRICES]) {
    size_t dim = (size_t)c->dim, hid = (size_t)c->hidden_dim, L = (size_t)c->n_layers;
    size_t kv = (size_t)c->n_kv_heads * (dim / (size_t)c->n_heads), V = (size_t)c->vocab_size;
    size_t ld = mul_size(L, dim), v[Q80_MATRICES] = {mul_size(V, dim), mul_size(ld, dim), mul_size(ld, kv),
        mul_size(ld, kv), mul_size(ld, dim), mul_size(ld, hid), mul_size(ld, hid), mul_size(ld, hid),
        shared ? 0 : mul_size(V, dim)}; // SIZE_MAX: too many
    memcpy(n, v, sizeof(v));
}
static const char *const Q80_NAMES[Q80_MATRICES] = {"token_embedding", "wq", "wk", "wv", "wo",
                                                     "w1", "w2", "w3", "wcls"};

// Where value e (of the n over all layers) of matrix i sits, in bytes from the
// matrix's start; *scale_at: its group's scale
static inline size_t q80_at(const Config *c, int i, size_t n, size_t e, int gs, size_t *scale_at) {
    size_t each = i == Q80_EMBEDDING || i == Q80_WCLS ? n : n / (size_t)c->n_layers, w = e % each;
    size_t block = each + each / (size_t)gs * 4;
    *scale_at = e / each * block + each + w / (size_t)gs * 4;
    return e / each * block + w;
}

// Matrix i (Q80_NAMES) of a checkpoint file, legacy (q80 0) or version 2 in groups of gs:
// `layers` blocks (one for the embedding and wcls) of (rows, n) values each, the first at
// byte `at`, `layer_bytes` apart; a version-2 block's scales follow its values, at `scales`.
typedef struct { size_t at, layer_bytes, scales; int layers, rows, n; } CheckpointMatrix;
static inline CheckpointMatrix checkpoint_matrix(const Config *c, int shared, int q80, int gs, int i) {
    size_t n[Q80_MATRICES], off[CHECKPOINT_TENSORS];
    size_t at = Q80_HEADER_BYTES + (2 * (size_t)c->n_layers + 1) * (size_t)c->dim * 4; // the first matrix
    int d = c->dim, h = c->hidden_dim, V = c->vocab_size, kv = c->n_kv_heads * (d / c->n_heads);
    int rows[Q80_MATRICES] = {V, d, kv, kv, d, h, d, h, V}, legacy[Q80_MATRICES] = {0, 2, 3, 4, 5, 7, 8, 9, 13};
    int layers = i == Q80_EMBEDDING || i == Q80_WCLS ? 1 : c->n_layers;
    q80_sizes(c, shared, n);
    checkpoint_offsets(off, c, shared);
    for (int j = 0; q80 && j < i; j++) at += n[j] + n[j] / (size_t)gs * 4;
    size_t each = n[i] / (size_t)layers;
    CheckpointMatrix m = {q80 ? at : CONFIG_HEADER_BYTES + off[legacy[i]] * 4, q80 ? each + each / (size_t)gs * 4
                          : each * 4, each, layers, n[i] ? rows[i] : 0, i == Q80_W2 ? h : d};
    return m;
}

// Bytes of a version-2 file (SIZE_MAX: too many), with gs > 0 dividing dim
static inline size_t q80_file_bytes(const Config *c, int shared, int gs) {
    size_t n[Q80_MATRICES], bytes = Q80_HEADER_BYTES + (2 * (size_t)c->n_layers + 1) * (size_t)c->dim * 4;
    q80_sizes(c, shared, n);
    for (int i = 0; i < Q80_MATRICES; i++)
        bytes = add_size(bytes, add_size(n[i], mul_size(n[i] / (size_t)gs, sizeof(float))));
    return bytes;
}

// The group size for quantising c: export.py's rule (64, halved until it divides
// dim), also dividing hidden_dim (runq.c's matmul needs that) and at least 4;
// 0 if none
static inline int q80_group_size(const Config *c) {
    int gs = 64;
    while (gs >= 4 && (c->dim % gs || c->hidden_dim % gs)) gs /= 2;
    return gs >= 4 ? gs : 0;
}

// The groups a row of n values is held in: gcd(gs, n) (0 for gs 0, float). Where GS
// does not divide n, a group that runs across rows is split at the row's end, each
// part with the group's scale: the same weights, value for value.
static inline int q80_row_group(int gs, int n) {
    while (gs && n % gs) {
        int r = n % gs;
        n = gs, gs = r;
    }
    return gs;
}

// One group: x (gs) -> xq (gs), returns s. A group holding a NaN or inf gets
// s = NaN and zeros; an all-zero group (or one whose s rounds to 0) s = 0 and zeros.
// amax is taken on the bits: |x|'s bits order as |x| does, and inf and NaN
// come above every finite value, so the loop is an integer max (vectorised).
static inline float q80_group(int8_t *xq, const float *x, int gs) {
    uint32_t top = 0, bits;
    for (int i = 0; i < gs; i++) {
        memcpy(&bits, x + i, sizeof(bits));
        top = (bits & 0x7fffffffu) > top ? bits & 0x7fffffffu : top;
    }
    float amax;
    memcpy(&amax, &top, sizeof(amax));
    float s = top >= 0x7f800000u ? NAN : amax / 127.0f; // NaN or inf in the group
    if (s >= 0x1p-126f) { // a normal s: |x / s| <= 127.00001, so no value needs clamping (vectorised)
        for (int i = 0; i < gs; i++) xq[i] = (int8_t)(int)rintf(x[i] / s);
        return s;
    }
    for (int i = 0; i < gs; i++) {
        float v = s > 0.0f ? rintf(x[i] / s) : 0.0f; // NaN s: 0
        xq[i] = (int8_t)(v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v); // s subnormal: w / s may pass 127
    }
    return s;
}

// The version-2 image of the float model (c, w, shared) in groups of gs, written
// to dst (q80_file_bytes): what export.py --version 2 writes for the same floats.
static inline void q80_export(unsigned char *dst, const Config *c, const TransformerWeights *w, int shared,
                              int gs) {
    int32_t h[9] = {Q80_MAGIC, 2, c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads,
                    c->vocab_size, c->seq_len};
    size_t n[Q80_MATRICES], dim = (size_t)c->dim, L = (size_t)c->n_layers;
    memset(dst, 0, Q80_HEADER_BYTES);
    memcpy(dst, h, sizeof(h));
    dst[36] = (unsigned char)(shared != 0);
    memcpy(dst + 37, &gs, sizeof(gs));
    dst += Q80_HEADER_BYTES;
    const float *m[Q80_MATRICES] = {w->token_embedding, w->wq, w->wk, w->wv, w->wo, w->w1, w->w2, w->w3, w->wcls};
    memcpy(dst, w->rms_att, L * dim * sizeof(float));
    memcpy(dst + L * dim * 4, w->rms_ffn, L * dim * sizeof(float));
    memcpy(dst + 2 * L * dim * 4, w->rms_final, dim * sizeof(float));
    dst += (2 * L + 1) * dim * 4;
    q80_sizes(c, shared, n);
    for (int i = 0; i < Q80_MATRICES; dst += n[i] + n[i] / (size_t)gs * sizeof(float), i++)
        for (size_t g = 0, sat; g < n[i] / (size_t)gs; g++) {
            size_t at = q80_at(c, i, n[i], g * (size_t)gs, gs, &sat);
            float s = q80_group((int8_t *)dst + at, m[i] + g * (size_t)gs, gs);
            memcpy(dst + sat, &s, sizeof(s));
        }
}

// The version-2 header (the file's first Q80_HEADER_BYTES) and the file's size
static inline int check_q80_head(Config *c, int *shared, int *gs, const unsigned char *file, size_t bytes,
                                 char *msg, size_t len) {
    int32_t h[7];
    if (bytes < Q80_HEADER_BYTES) {
        snprintf(msg, len, "file is %zu bytes, shorter than the 256-byte version-2 header", bytes);
        return -1;
    }
    memcpy(h, file + 8, sizeof(h));
    memcpy(gs, file + 37, sizeof(*gs));
    *c = (Config){h[0], h[1], h[2], h[3], h[4], h[5], h[6]};
    *shared = file[36];
    if (check_config_fields(c, msg, len)) return -1;
    if (file[36] > 1)
        snprintf(msg, len, "header field shared_classifier = %d, expected 0 or 1", file[36]);
    else if (*gs <= 0 || c->dim % *gs || *gs % 4 || q80_row_group(*gs, c->hidden_dim) % 4)
        snprintf(msg, len, "header field group_size = %d, expected a positive multiple of 4 dividing dim %d "
                 "and sharing a multiple of 4 with hidden_dim %d", *gs, c->dim, c->hidden_dim);
    else if (bytes != q80_file_bytes(c, *shared, *gs)) {
        size_t other = q80_file_bytes(c, !*shared, *gs);
        snprintf(msg, len, "file is %zu bytes but its version-2 header (dim %d, hidden_dim %d, n_layers %d, "
                 "n_heads %d, n_kv_heads %d, vocab_size %d, seq_len %d, group_size %d, shared_classifier %d) "
                 "needs %zu; the file is %s", bytes, c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads,
                 c->vocab_size, c->seq_len, *gs, *shared, q80_file_bytes(c, *shared, *gs),
                 bytes == other ? "that size with the other shared_classifier (is the flag wrong?)"
                 : bytes < q80_file_bytes(c, *shared, *gs) ? "truncated (or its header is wrong)" : "too long");
    } else
        return 0;
    return -1;
}

// A checkpoint's header (its first Q80_HEADER_BYTES, zero-padded) and its size, in either
// format (check_checkpoint, check_q80_head): fills c, *shared and *gs (0: legacy, float32).
// Returns 1 for version 2, 0 for legacy, or -1 with a message in msg.
static inline int check_checkpoint_head(Config *c, int *shared, int *gs, const unsigned char *head, size_t bytes,
                                        char *msg, size_t len) {
    int32_t h[7];
    if (bytes < CONFIG_HEADER_BYTES) {
        snprintf(msg, len, "file is %zu bytes, shorter than the 28-byte llama2.c header", bytes);
        return -1;
    }
    memcpy(h, head, sizeof(h));
    *gs = 0;
    if (h[0] == Q80_MAGIC && h[1] == 2) return check_q80_head(c, shared, gs, head, bytes, msg, len) ? -1 : 1;
    return check_checkpoint(c, shared, h, bytes, msg, len);
}

// The whole version-2 file: the header and size, the norms finite, every scale finite and >= 0
static inline int check_q80(Config *c, int *shared, int *gs, const unsigned char *file, size_t bytes,
                            char *msg, size_t len) {
    if (check_q80_head(c, shared, gs, file, bytes, msg, len)) return -1;
    size_t dim = (size_t)c->dim, L = (size_t)c->n_layers, n[Q80_MATRICES], at = Q80_HEADER_BYTES;
    float v;
    for (size_t k = 0; k < (2 * L + 1) * dim; k++, at += 4)
        if (memcpy(&v, file + at, 4), !isfinite(v)) {
            snprintf(msg, len, "weight %s, element %zu, is not finite", k < L * dim ? "rms_att" : k < 2 * L * dim
                     ? "rms_ffn" : "rms_final", k % (L * dim));
            return -1;
        }
    q80_sizes(c, *shared, n);
    for (int i = 0; i < Q80_MATRICES; at += n[i] + n[i] / (size_t)*gs * 4, i++)
        for (size_t g = 0, sat; g < n[i] / (size_t)*gs; g++)
            if (q80_at(c, i, n[i], g * (size_t)*gs, *gs, &sat), memcpy(&v, file + at + sat, 4),
                !(v >= 0.0f && isfinite(v))) {
                snprintf(msg, len, "%s's scale %zu (of values %zu..) is %g; a scale must be finite and >= 0",
                         Q80_NAMES[i], g, g * (size_t)*gs, (double)v);
                return -1;
            }
    return 0;
}

// The float model a version-2 image (checked by check_q80) stands for: every
// value times its group's scale, into out laid out as map_weights expects
// (checkpoint_n_floats(c, shared)), RoPE tables from rope_tables()
static inline void q80_dequantize(float *out, const Config *c, int shared, int gs, const unsigned char *img) {
    TransformerWeights w;
    size_t n[Q80_MATRICES], dim = (size_t)c->dim, L = (size_t)c->n_layers;
    map_weights(&w, c, out, shared);
    float *m[Q80_MATRICES] = {w.token_embedding, w.wq, w.wk, w.wv, w.wo, w.w1, w.w2, w.w3, w.wcls};
    img += Q80_HEADER_BYTES;
    memcpy(w.rms_att, img, L * dim * sizeof(float));
    memcpy(w.rms_ffn, img + L * dim * 4, L * dim * sizeof(float));
    memcpy(w.rms_final, img + 2 * L * dim * 4, dim * sizeof(float));
    img += (2 * L + 1) * dim * 4;
    q80_sizes(c, shared, n);
    for (int i = 0; i < Q80_MATRICES; img += n[i] + n[i] / (size_t)gs * sizeof(float), i++)
        for (size_t k = 0, sat; k < n[i]; k++) {
            float s;
            size_t at = q80_at(c, i, n[i], k, gs, &sat);
            memcpy(&s, img + sat, sizeof(s));
            m[i][k] = (float)(int8_t)img[at] * s;
        }
    rope_tables(w.rope_cos, w.rope_sin, c->seq_len, c->dim / c->n_heads);
}

// ---------------------------------------------------------------------------
// medusa.bin: Medusa heads for one target (Cai et al. 2024, arXiv 2401.10774),
// trained by `./train medusa`, read by `specdec -d medusa`. Little-endian:
//
//   offset 0   5 x int32: magic MEDUSA_MAGIC ("MDUS" in bytes), version 1,
//              n_heads H (1..MEDUSA_MAX_HEADS), dim and vocab_size (the
//              target's: dim and |vocab_size| of the checkpoint they read)
//   offset 20  for each head h = 1..H: W (dim, dim) then b (dim), fp32
//
// Head h reads the target's final hidden state z = rmsnorm(x, rms_final) of
// the row at position t (the one whose classifier output is p for t+1) and
// gives logits for position t + 1 + h through the target's own classifier:
//   logits_h = wcls @ (z + silu(W_h z + b_h)),   silu(v) = v / (1 + exp(-v))
#define MEDUSA_MAGIC 0x5355444d
#define MEDUSA_HEADER_BYTES (5 * sizeof(int32_t))
#define MEDUSA_MAX_HEADS 16

// floats after the header: H heads of dim x dim + dim (SIZE_MAX on overflow)
static inline size_t medusa_n_floats(int n_heads, int dim) {
    return mul_size((size_t)n_heads, add_size(mul_size((size_t)dim, (size_t)dim), (size_t)dim));
}

// The 20-byte header h of a medusa.bin of file_bytes bytes, checked against
// the target it is for (dim, vocab_size). Returns H, or -1 with a message.
static inline int check_medusa(const int32_t h[5], size_t file_bytes, int dim, int vocab_size, char *msg,
                               size_t len) {
    if (file_bytes < MEDUSA_HEADER_BYTES || h[0] != MEDUSA_MAGIC)
        snprintf(msg, len, "not a medusa.bin (it starts with the bytes \"MDUS\"; ./train medusa writes one)");
    else if (h[1] != 1)
        snprintf(msg, len, "header field version = %d, expected 1", (int)h[1]);
    else if (h[2] < 1 || h[2] > MEDUSA_MAX_HEADS)
        snprintf(msg, len, "header field n_heads = %d, expected 1..%d", (int)h[2], MEDUSA_MAX_HEADS);
    else if (h[3] != dim || h[4] != vocab_size)
        snprintf(msg, len, "heads for dim %d and vocab_size %d, but the target has dim %d and vocab_size %d "
                 "(heads belong to the target they were trained on)", (int)h[3], (int)h[4], dim, vocab_size);
    else if (file_bytes != add_size(MEDUSA_HEADER_BYTES, mul_size(medusa_n_floats(h[2], dim), sizeof(float))))
        snprintf(msg, len, "file is %zu bytes but %d heads of dim %d need %zu", file_bytes, (int)h[2], dim,
                 MEDUSA_HEADER_BYTES + medusa_n_floats(h[2], dim) * sizeof(float));
    else
        return h[2];
    return -1;
}

// Write a medusa.bin: the header, then heads (medusa_n_floats) as laid out
// above. Returns 0 on success, -1 on error.
static inline int write_medusa(const char *path, int n_heads, int dim, int vocab_size, const float *heads) {
    int32_t h[5] = {MEDUSA_MAGIC, 1, n_heads, dim, vocab_size};
    return write_ints_floats(path, h, 5, heads, medusa_n_floats(n_heads, dim));
}

static inline int write_medusa_to(FILE *f, int n_heads, int dim, int vocab_size, const float *heads) {
    int32_t h[5] = {MEDUSA_MAGIC, 1, n_heads, dim, vocab_size};
    return write_ints_floats_to(f, h, 5, heads, medusa_n_floats(n_heads, dim));
}

// ---------------------------------------------------------------------------
// eagle.bin: an EAGLE-style feature drafter for one target (Li et al. 2024,
// arXiv 2401.15077, with one MLP in place of their decoder layer), trained by
// `./train eagle`, read by `specdec -d eagle`. Little-endian:
//
//   offset 0   5 x int32: magic EAGLE_MAGIC ("EAGL" in bytes), version 1,
//              dim and vocab_size (the target's), hidden (the MLP's width)
//   offset 20  W1 (hidden, 2 dim), b1 (hidden), W2 (dim, hidden), b2 (dim), fp32
//
// From a feature f (the target's final hidden state z = rmsnorm(x, rms_final)
// at position t, or a feature the drafter predicted) and the embedding e of
// the token at t + 1 (the target's token_embedding row), it predicts the
// feature at t + 1, and q for position t + 2 through the target's classifier:
//   f' = f + W2 silu(W1 [f; e] + b1) + b2,   logits = wcls @ f'
#define EAGLE_MAGIC 0x4c474145
#define EAGLE_HEADER_BYTES (5 * sizeof(int32_t))

// floats after the header (SIZE_MAX on overflow)
static inline size_t eagle_n_floats(int dim, int hidden) {
    size_t d = (size_t)dim, h = (size_t)hidden;
    return add_size(add_size(mul_size(h, 2 * d), h), add_size(mul_size(d, h), d));
}

// The 20-byte header h of an eagle.bin of file_bytes bytes, checked against
// the target (dim, vocab_size). Returns hidden, or -1 with a message.
static inline int check_eagle(const int32_t h[5], size_t file_bytes, int dim, int vocab_size, char *msg,
                              size_t len) {
    if (file_bytes < EAGLE_HEADER_BYTES || h[0] != EAGLE_MAGIC)
        snprintf(msg, len, "not an eagle.bin (it starts with the bytes \"EAGL\"; ./train eagle writes one)");
    else if (h[1] != 1)
        snprintf(msg, len, "header field version = %d, expected 1", (int)h[1]);
    else if (h[2] != dim || h[3] != vocab_size)
        snprintf(msg, len, "a drafter for dim %d and vocab_size %d, but the target has dim %d and vocab_size %d "
                 "(it belongs to the target it was trained on)", (int)h[2], (int)h[3], dim, vocab_size);
    else if (h[4] < 1 || h[4] > (1 << 16))
        snprintf(msg, len, "header field hidden = %d, expected 1..65536", (int)h[4]);
    else if (file_bytes != add_size(EAGLE_HEADER_BYTES, mul_size(eagle_n_floats(dim, h[4]), sizeof(float))))
        snprintf(msg, len, "file is %zu bytes but dim %d and hidden %d need %zu", file_bytes, dim, (int)h[4],
                 EAGLE_HEADER_BYTES + eagle_n_floats(dim, h[4]) * sizeof(float));
    else
        return h[4];
    return -1;
}

// Write an eagle.bin: the header, then eagle_n_floats(dim, hidden) floats laid
// out as above. Returns 0 on success, -1 on error.
static inline int write_eagle(const char *path, int dim, int vocab_size, int hidden, const float *w) {
    int32_t h[5] = {EAGLE_MAGIC, 1, dim, vocab_size, hidden};
    return write_ints_floats(path, h, 5, w, eagle_n_floats(dim, hidden));
}

static inline int write_eagle_to(FILE *f, int dim, int vocab_size, int hidden, const float *w) {
    int32_t h[5] = {EAGLE_MAGIC, 1, dim, vocab_size, hidden};
    return write_ints_floats_to(f, h, 5, w, eagle_n_floats(dim, hidden));
}

// ---------------------------------------------------------------------------
// tokenizer.bin (llama2.c's format), for the same two programs:
//   int32 max_token_length
//   then for each of vocab_size tokens: float32 score, int32 len, len bytes
// The vocabulary size is NOT stored: it is the model's vocab_size. Token 0 is
// <unk>, 1 is BOS (<s>), 2 is EOS (</s>), 3..258 are the byte tokens
// "<0x00>".."<0xFF>" used as fallback for bytes no other token covers. A
// higher score means the merge is applied earlier during encoding.
#define TOKEN_BOS 1
#define TOKEN_EOS 2
#define TOKEN_BYTE0 3
#define MAX_TOKEN_LENGTH 1024 // the longest max_token_length accepted

// Walk the records of a tokenizer.bin held in memory, buf (n): check the
// max_token_length field and every record (a token is 1..max_token_length
// bytes: an empty piece can never come out of encoding, and no llama2.c file
// has one), and call visit(ctx, i, score, bytes, len) for each if visit is not
// NULL. Returns the number of tokens, or -1 with a message in msg.
typedef void (*TokenVisit)(void *ctx, int i, float score, const unsigned char *bytes, int len);

static inline int walk_tokenizer(const unsigned char *buf, size_t n, int32_t *max_len,
                                 TokenVisit visit, void *ctx, char *msg, size_t len) {
    if (n < 4) {
        snprintf(msg, len, "%zu bytes, too short for the max_token_length field", n);
        return -1;
    }
    memcpy(max_len, buf, 4);
    if (*max_len <= 0 || *max_len > MAX_TOKEN_LENGTH) {
        snprintf(msg, len, "max_token_length = %d, expected 1..%d (is this a tokenizer.bin?)",
                 (int)*max_len, MAX_TOKEN_LENGTH);
        return -1;
    }
    int count = 0;
    for (size_t off = 4; off < n; count++) {
        int32_t tlen;
        float score;
        if (n - off < 8) {
            snprintf(msg, len, "token %d: the file ends inside its score/length fields", count);
            return -1;
        }
        memcpy(&score, buf + off, 4);
        memcpy(&tlen, buf + off + 4, 4);
        if (tlen < 1 || tlen > *max_len) {
            snprintf(msg, len, "token %d: length %d outside 1..max_token_length %d", count, (int)tlen,
                     (int)*max_len);
            return -1;
        }
        off += 8;
        if (n - off < (size_t)tlen) {
            snprintf(msg, len, "token %d: the file ends inside its %d bytes", count, (int)tlen);
            return -1;
        }
        if (count == INT32_MAX) {
            snprintf(msg, len, "more than 2^31 tokens");
            return -1;
        }
        if (visit) visit(ctx, count, score, buf + off, tlen);
        off += (size_t)tlen;
    }
    return count;
}

// ---------------------------------------------------------------------------
// The theory of speculative decoding, shared by specdec.c and plot.c
// (Leviathan, Kalman, Matias 2022, arXiv 2211.17192)

// Expected tokens per round for acceptance rate a and k drafts (Eq. 1):
// 1 + a + a^2 + ... + a^k = (1 - a^(k+1)) / (1 - a).
static inline double expected_tokens_per_round(double a, int k) {
    if (a >= 1.0) return k + 1;
    return (1.0 - pow(a, k + 1)) / (1.0 - a);
}

// Predicted walltime speedup over target-only decoding (Thm 3.8, with the
// verify pass costing r target steps instead of 1): a round costs its draft
// steps (c each: k, plus one more for the position after k accepted drafts,
// reached with probability a^k) and one verify pass (r), and yields
// (1 - a^(k+1)) / (1 - a) tokens, against 1 token per target step.
static inline double predicted_speedup(double a, int k, double c, double r) {
    return expected_tokens_per_round(a, k) / ((k + pow(a, k)) * c + r);
}

// ---------------------------------------------------------------------------
// The files a run reads and writes (specdec and train alike; POSIX only)
//
// Inputs are never modified, and outputs are whole or absent. Every input is
// registered when opened (note_input: its device and inode); every output is
// planned before any work (plan_output): its links are resolved (we write
// where a link points, where the kernel would follow it), it must be, or
// become, a regular file of ours in a directory that takes a new file (one is
// made and removed), and it may be no registered input and not where stdout or
// stderr goes. Planned outputs are registered too, so an input opened after
// the plan is checked against them: a new input kind is covered without new
// code. The bytes go to a temp file beside the target (begin_output), which
// is flushed, synced and renamed over it (commit_output), keeping an old
// file's permissions but not setuid/setgid; a signal during the write removes
// the temp file.
#if defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 200809L
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#define IO_PATH_MAX 4096
#define IO_FILES_MAX 64

typedef struct {
    dev_t dev;
    ino_t ino;                 // the file's; for an output not yet there, its directory's
    char base[256];            // "" ; for an output not yet there, its name in that directory
    int output;                // 1: a planned output, 0: an input
    char name[IO_PATH_MAX];    // as the user named it
} IoFile;

typedef struct {
    IoFile files[IO_FILES_MAX];
    int n;
} IoRegistry;

static inline IoRegistry *io_registry(void) {
    static IoRegistry r; // one per process
    return &r;
}

// The temp file being written, removed by a signal before it is renamed.
static inline char *io_pending(void) {
    static char tmp[IO_PATH_MAX + 8];
    return tmp;
}

static inline void io_on_signal(int sig) {
    if (io_pending()[0]) unlink(io_pending()); // async-signal-safe
    signal(sig, SIG_DFL);
    raise(sig);
}

typedef struct {
    char name[IO_PATH_MAX];    // the path the user gave
    char path[IO_PATH_MAX];    // where the bytes go, links resolved
    char tmp[IO_PATH_MAX + 8]; // path.XXXXXX while it is written
    int existed;               // 1: path exists, with this mode and owner:
    struct stat old;
    FILE *f;
    int reg;                   // its slot in the registry (commit_output moves it to the new file)
} OutputFile;

// Forget every registered file: a process that makes several runs (the
// trainer's tests) starts each with an empty registry.
static inline void io_forget(void) { io_registry()->n = 0; }

// Register the file (dev, ino) of `name` (base "": a file that exists), or
// the output `base` not yet in the directory (dev, ino); refuse it if it is
// registered already as a file of the other kind (an input that is an
// output, or the reverse) or as another output (two outputs of one run, one
// renamed over the other). An input opened again is registered once.
// Returns its slot in the registry, or -1 with the reason in msg.
static inline int io_register(dev_t dev, ino_t ino, const char *base, int output, const char *name, char *msg,
                              size_t len) {
    IoRegistry *r = io_registry();
    for (int i = 0; i < r->n; i++) {
        const IoFile *f = &r->files[i];
        if (f->dev != dev || f->ino != ino || strcmp(f->base, base)) continue;
        if (!f->output && !output) return i; // an input opened again
        if (f->output && output)
            snprintf(msg, len, "%s and %s are the same file: two outputs of this run would replace each "
                     "other; name another output file", f->name, name);
        else
            snprintf(msg, len, "%s (an output of this run) and %s are the same file: writing it would "
                     "replace an input of this run; name another output file", output ? name : f->name,
                     output ? f->name : name);
        return -1;
    }
    if (r->n == IO_FILES_MAX) {
        snprintf(msg, len, "%s: more than %d files in one run", name, IO_FILES_MAX);
        return -1;
    }
    IoFile *f = &r->files[r->n];
    size_t n = strlen(name) < IO_PATH_MAX ? strlen(name) : IO_PATH_MAX - 1; // a long name, cut for messages
    f->dev = dev, f->ino = ino, f->output = output;
    snprintf(f->base, sizeof(f->base), "%.255s", base);
    memcpy(f->name, name, n), f->name[n] = '\0';
    return r->n++;
}

// Register the input open at fd (named `name`).
static inline int note_input(int fd, const char *name, char *msg, size_t len) {
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(msg, len, "%s: cannot stat: %s", name, strerror(errno));
        return -1;
    }
    return io_register(st.st_dev, st.st_ino, "", 0, name, msg, len) < 0 ? -1 : 0;
}

// The directory part of path into dir (IO_PATH_MAX): "." for a bare name, "/" for /name.
static inline void io_dir_of(char *dir, const char *path) {
    const char *slash = strrchr(path, '/');
    snprintf(dir, IO_PATH_MAX, "%.*s", slash ? (int)(slash - path) + (slash == path) : 1, slash ? path : ".");
}

// Whether to follow the link (lstat l) in the directory (stat d), as the
// kernel's protected_symlinks rule would (we resolve links by hand, so the
// kernel never asks): anyone may plant a link in a sticky world-writable
// directory (/tmp), so there only one of ours or of the directory's owner.
static inline int io_link_trusted(const struct stat *l, const struct stat *d, uid_t euid) {
    const mode_t sticky = 01000; // S_ISVTX, an XSI name
    return (d->st_mode & (sticky | S_IWOTH)) != (sticky | S_IWOTH) || l->st_uid == euid || l->st_uid == d->st_uid;
}

// Follow a link's chain to the path it names (at most 32 links, each trusted).
static inline int io_follow_links(char *path, char *msg, size_t len) {
    for (int hops = 0; hops < 32; hops++) {
        struct stat st, ds;
        char to[IO_PATH_MAX];
        if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode)) return 0;
        io_dir_of(to, path);
        if (stat(to, &ds) == 0 && !io_link_trusted(&st, &ds, geteuid())) {
            snprintf(msg, len, "%s: a link of another user (uid %u) in a sticky world-writable directory: "
                     "not followed, as the kernel's protected_symlinks rule would not; name the file itself",
                     path, (unsigned)st.st_uid);
            return -1;
        }
        ssize_t n = readlink(path, to, sizeof(to) - 1);
        if (n < 0) break;
        to[n] = '\0';
        char *slash = strrchr(path, '/');
        size_t keep = to[0] != '/' && slash ? (size_t)(slash - path) + 1 : 0;
        if (keep + (size_t)n >= IO_PATH_MAX) break;
        memmove(path + keep, to, (size_t)n + 1);
    }
    snprintf(msg, len, "%s: a link that cannot be followed to a file", path);
    return -1;
}

// The checks on an output before any work; 0, or -1 with the reason in msg.
static inline int plan_output(OutputFile *o, const char *name, char *msg, size_t len) {
    memset(o, 0, sizeof(*o));
    o->reg = -1;
    if (!name || !name[0]) {
        snprintf(msg, len, "an empty file name (an unset shell variable?)");
        return -1;
    }
    if (strlen(name) >= IO_PATH_MAX) {
        snprintf(msg, len, "%.40s...: a path of more than %d bytes", name, IO_PATH_MAX - 1);
        return -1;
    }
    snprintf(o->name, sizeof(o->name), "%s", name);
    snprintf(o->path, sizeof(o->path), "%s", name);
    struct stat st;
    o->existed = stat(name, &o->old) == 0;
    if (o->existed && !S_ISREG(o->old.st_mode)) {
        snprintf(msg, len, "%s: not a regular file (a device, pipe or directory); outputs are "
                 "written to regular files only", name);
        return -1;
    }
    if (io_follow_links(o->path, msg, len)) return -1;
    if (o->existed) {
        if (o->old.st_uid != geteuid()) { // the renamed file would be ours: its owner's no more
            snprintf(msg, len, "%s belongs to another user (uid %u; this run's is %u): replacing it would "
                     "make it ours; remove it first or name another file", name, (unsigned)o->old.st_uid,
                     (unsigned)geteuid());
            return -1;
        }
        for (int fd = 1; fd <= 2; fd++)
            if (fstat(fd, &st) == 0 && st.st_dev == o->old.st_dev && st.st_ino == o->old.st_ino) {
                snprintf(msg, len, "%s is where standard %s goes: one would overwrite the other",
                         name, fd == 1 ? "output" : "error");
                return -1;
            }
        if ((o->reg = io_register(o->old.st_dev, o->old.st_ino, "", 1, name, msg, len)) < 0) return -1;
    }
    char dir[IO_PATH_MAX], *slash = strrchr(o->path, '/');
    const char *base = slash ? slash + 1 : o->path;
    io_dir_of(dir, o->path);
    if (!base[0] || strlen(base) + 7 > 255) {
        snprintf(msg, len, "%s: %s", name, base[0] ? "a file name of more than 248 bytes (the temp "
                 "file beside it adds 7)" : "names a directory, not a file");
        return -1;
    }
    // a temp file made and removed now: a directory that takes none (/proc, read-only) fails before the run
    strcat(strcpy(o->tmp, o->path), ".XXXXXX");
    errno = 0;
    int fd = stat(dir, &st) == 0 && S_ISDIR(st.st_mode) ? mkstemp(o->tmp) : -2;
    if (fd < 0) {
        snprintf(msg, len, "%s: cannot %s the directory %s: %s", name, fd == -1 ? "make a file in" : "write in",
                 dir, errno ? strerror(errno) : "not a directory");
        return -1;
    }
    close(fd), unlink(o->tmp), o->tmp[0] = '\0';
    if (!o->existed && (o->reg = io_register(st.st_dev, st.st_ino, base, 1, name, msg, len)) < 0) return -1;
    return 0;
}

// Open the temp file beside the planned output, with the old file's
// permissions less setuid/setgid (a new file: 0666 less the umask); NULL
// with the reason in msg.
static inline FILE *begin_output(OutputFile *o, char *msg, size_t len) {
    static int handlers; // once: SIGINT, SIGTERM, SIGHUP and SIGXFSZ (past ulimit -f) remove the temp file
    if (!handlers++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = io_on_signal;
        sigemptyset(&sa.sa_mask);
        for (int i = 0; i < 4; i++) {
            const int sig[4] = {SIGINT, SIGTERM, SIGHUP, SIGXFSZ};
            struct sigaction was;
            if (sigaction(sig[i], NULL, &was) == 0 && was.sa_handler == SIG_DFL) sigaction(sig[i], &sa, NULL);
        }
    }
    strcat(strcpy(o->tmp, o->path), ".XXXXXX"); // fits: path < IO_PATH_MAX (plan_output)
    sigset_t block, old;
    sigemptyset(&block), sigaddset(&block, SIGINT), sigaddset(&block, SIGTERM), sigaddset(&block, SIGHUP);
    sigaddset(&block, SIGXFSZ);
    sigprocmask(SIG_BLOCK, &block, &old); // the temp file exists only once io_pending names it
    int fd = mkstemp(o->tmp), err = errno;
    if (fd >= 0) memcpy(io_pending(), o->tmp, sizeof(o->tmp));
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (fd < 0) {
        snprintf(msg, len, "%s: cannot create a temp file beside it: %s", o->name, strerror(err));
        return NULL;
    }
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, o->existed ? o->old.st_mode & 0777 : 0666 & ~mask) != 0 || !(o->f = fdopen(fd, "w"))) {
        snprintf(msg, len, "%s: cannot set up its temp file: %s", o->name, strerror(errno));
        close(fd), unlink(o->tmp), io_pending()[0] = '\0';
        return NULL;
    }
    return o->f;
}

// Give up the output: remove the temp file, leave the target as it was.
static inline void abort_output(OutputFile *o) {
    if (o->f) fclose(o->f), o->f = NULL;
    if (o->tmp[0]) unlink(o->tmp), o->tmp[0] = '\0';
    io_pending()[0] = '\0';
}

// Flush, sync and rename the temp file over the target, then sync its
// directory (so a power loss leaves the old file or the whole new one);
// 0, or -1 with the reason in msg and the target untouched.
static inline int commit_output(OutputFile *o, char *msg, size_t len) {
    struct stat st;
    int bad = fflush(o->f) != 0 || ferror(o->f) || fsync(fileno(o->f)) != 0 || fstat(fileno(o->f), &st) != 0;
    int err = errno;
    if (fclose(o->f) != 0 && !bad) bad = 1, err = errno;
    o->f = NULL;
    if (!bad && rename(o->tmp, o->path) != 0) bad = 1, err = errno;
    if (bad) {
        snprintf(msg, len, "%s: write failed: %s (disk full?); the file is left as it was", o->name,
                 strerror(err));
        abort_output(o);
        return -1;
    }
    o->tmp[0] = io_pending()[0] = '\0';
    IoRegistry *r = io_registry(); // the registered output is the new file now (the old one's inode may be reused)
    if (o->reg >= 0 && o->reg < r->n && r->files[o->reg].output && !strcmp(r->files[o->reg].name, o->name))
        r->files[o->reg].dev = st.st_dev, r->files[o->reg].ino = st.st_ino, r->files[o->reg].base[0] = '\0';
    char dir[IO_PATH_MAX];
    io_dir_of(dir, o->path);
    int dfd = open(dir, O_RDONLY);
    if (dfd >= 0) fsync(dfd), close(dfd); // advice to the disk: the rename is done either way
    return 0;
}
#endif

#endif // SPECDEC_MODEL_H
