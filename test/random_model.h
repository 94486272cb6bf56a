// random_model.h - random-weight checkpoints and a synthetic tokenizer, for
// the tests and benchmarks. Include after specdec.c (uses Rng, die, model.h).
#ifndef SPECDEC_RANDOM_MODEL_H
#define SPECDEC_RANDOM_MODEL_H

// The sequential stream of a seed, the tests' random numbers: call i returns
// element i of the seed's coin stream (rng_at; PORTING.md section 6), which
// the position coins (coin_at) never move: 32 random bits, or a coin
typedef struct { Rng rng; uint64_t next; } Stream;
static void stream_seed(Stream *s, uint64_t seed) {
    rng_seed(&s->rng, seed);
    s->next = 0;
}
static uint32_t rng_u32(Stream *s) { return (uint32_t)(rng_at(&s->rng, s->next++) >> 32); }
static float rng_coin(Stream *s) { return coin_of(rng_at(&s->rng, s->next++)); }

// u uniform in [-a, a]
static float uniform(Stream *r, float a) { return (2.0f * rng_coin(r) - 1.0f) * a; }

// fill (n) with uniform [-a, a], plus eps * uniform [-a, a] from the noise rng
static void fill(float *w, size_t n, float a, Stream *r, Stream *noise, float eps) {
    for (size_t i = 0; i < n; i++) {
        w[i] = uniform(r, a);
        if (eps > 0) w[i] += eps * uniform(noise, a);
    }
}

static void fill_gain(float *w, size_t n, Stream *r) {
    for (size_t i = 0; i < n; i++) w[i] = 1.0f + uniform(r, 0.1f);
}

// Init scales: matrices sqrt(3/fan_in) (unit-variance outputs); embedding
// 4/sqrt(dim), so the classifier's logits have a standard deviation of about 2.3
// and sampling at t = 1 is neither flat nor one-hot. BOS and EOS get tiny
// embeddings (logit ~ 0) so random models seldom stop early.
static void random_weights(float *p, const Config *c, int shared, uint64_t seed, uint64_t nseed,
                           float eps) {
    TransformerWeights w;
    map_weights(&w, c, p, shared);
    Stream r, noise;
    stream_seed(&r, seed);
    stream_seed(&noise, nseed);
    size_t dim = (size_t)c->dim, hid = (size_t)c->hidden_dim, L = (size_t)c->n_layers;
    size_t V = (size_t)c->vocab_size, hs = dim / (size_t)c->n_heads;
    size_t kv = (size_t)c->n_kv_heads * hs;
    float a_in = sqrtf(3.0f / (float)dim), a_hid = sqrtf(3.0f / (float)hid);
    fill(w.token_embedding, V * dim, 4.0f / sqrtf((float)dim), &r, &noise, eps);
    for (size_t i = TOKEN_BOS * dim; i < (TOKEN_EOS + 1) * dim; i++) w.token_embedding[i] *= 1e-3f;
    fill_gain(w.rms_att, L * dim, &r);
    fill(w.wq, L * dim * dim, a_in, &r, &noise, eps);
    fill(w.wk, L * kv * dim, a_in, &r, &noise, eps);
    fill(w.wv, L * kv * dim, a_in, &r, &noise, eps);
    fill(w.wo, L * dim * dim, a_in, &r, &noise, eps);
    fill_gain(w.rms_ffn, L * dim, &r);
    fill(w.w1, L * hid * dim, a_in, &r, &noise, eps);
    fill(w.w2, L * dim * hid, a_hid, &r, &noise, eps);
    fill(w.w3, L * hid * dim, a_in, &r, &noise, eps);
    fill_gain(w.rms_final, dim, &r);
    rope_tables(w.rope_cos, w.rope_sin, c->seq_len, (int)hs);
    if (!shared) fill(w.wcls, V * dim, 4.0f / sqrtf((float)dim), &r, &noise, eps);
}

// English fragments for the synthetic tokenizer, most useful first
static const char *PIECES[] = {
    " the", " a", " and", " to", " was", " he", " she", " it", " of", " in", " said", " day",
    " little", " big", " happy", " play", " friend", " once", " upon", " time", " there",
    "ing", "ed", "er", "th", "he", "in", "an", " t", " s", " w", " b", " c", " f", " l", " m",
    " p", " d", " h", "ll", "ou", "on", "re", "at", "en", "or", "es", "is", "it", "ar", "ay",
    " Lily", " Tom", " dog", " cat", " tree", " ball", " sun", ".\n", "\n\n", "é", "—", "“", "”",
    "’", "ü", "日", "本",
};

static int write_piece(FILE *f, const char *s, float score) {
    int32_t len = (int32_t)strlen(s);
    return fwrite(&score, 4, 1, f) == 1 && fwrite(&len, 4, 1, f) == 1 &&
           fwrite(s, 1, (size_t)len, f) == (size_t)len;
}

static void write_tokenizer(const char *path, int vocab) {
    int n_pieces = (int)(sizeof(PIECES) / sizeof(PIECES[0]));
    if (vocab < 259 + 95) die("--tokenizer: vocab %d too small, need >= %d", vocab, 259 + 95);
    FILE *f = fopen(path, "wb");
    if (!f) die("%s: cannot write", path);
    int32_t maxlen = 16;
    int ok = fwrite(&maxlen, 4, 1, f) == 1;
    ok = ok && write_piece(f, "<unk>", 0) && write_piece(f, "\n<s>\n", 0) && write_piece(f, "\n</s>\n", 0);
    char buf[32];
    for (int b = 0; b < 256; b++) {
        snprintf(buf, sizeof(buf), "<0x%02X>", b);
        ok = ok && write_piece(f, buf, 0);
    }
    int id = 259;
    for (int i = 0; i < n_pieces && id < vocab; i++, id++) ok = ok && write_piece(f, PIECES[i], (float)-i);
    for (int c = ' '; c <= '~' && id < vocab; c++, id++) { // single characters: never merged away
        buf[0] = (char)c; buf[1] = '\0';
        ok = ok && write_piece(f, buf, -1000.0f - (float)c);
    }
    for (; id < vocab; id++) { // filler pieces, distinct, unreachable by merges of real text
        snprintf(buf, sizeof(buf), "<fill%d>", id);
        ok = ok && write_piece(f, buf, -1e6f);
    }
    if (fclose(f) != 0 || !ok) die("%s: write failed", path);
}

// Write a random checkpoint for config c to path (dies on error).
static void write_random_checkpoint(const char *path, const Config *c, int shared, uint64_t seed,
                                    uint64_t noise_seed, float eps) {
    size_t n = checkpoint_n_floats(c, shared);
    float *p = xmalloc(n * sizeof(float), "weights");
    random_weights(p, c, shared, seed, noise_seed, eps);
    if (write_checkpoint(path, c, p, shared) != 0) die("%s: write failed", path);
    xfree(p);
}

// The f32 checkpoint `path` read whole (the tests' own reader, not specdec's stream): its
// config, classifier and weights (pointers into the returned buffer, xfree it)
static unsigned char *read_f32_checkpoint(const char *path, Config *c, int *shared, TransformerWeights *w) {
    size_t n;
    char msg[512];
    int32_t h[7] = {0};
    unsigned char *file = read_file_checked(path, "checkpoint", &n, NULL, NULL);
    memcpy(h, file, n < sizeof(h) ? n : sizeof(h));
    if (check_checkpoint(c, shared, h, n, msg, sizeof(msg))) die("%s: %s", path, msg);
    map_weights(w, c, (float *)(void *)(file + CONFIG_HEADER_BYTES), *shared);
    return file;
}

// Write the version-2 (int8) export of the f32 checkpoint `in` to `out` in groups of gs (0:
// q80_group_size's): what specdec packs at load with int8 weights (model.h's q80_export)
static void write_q80_checkpoint_gs(const char *in, const char *out, int gs) {
    Config c;
    int shared;
    TransformerWeights w;
    unsigned char *file = read_f32_checkpoint(in, &c, &shared, &w);
    if (!gs) gs = q80_group_size(&c);
    size_t bytes = q80_file_bytes(&c, shared, gs);
    unsigned char *img = xmalloc(bytes, "version-2 image");
    q80_export(img, &c, &w, shared, gs);
    FILE *f = fopen(out, "wb");
    if (!f || fwrite(img, 1, bytes, f) != bytes || fclose(f) != 0) die("%s: write failed", out);
    xfree(img);
    xfree(file);
}
static void write_q80_checkpoint(const char *in, const char *out) { write_q80_checkpoint_gs(in, out, 0); }

// ---- the emulated large target (make bench) -----------------------------------
// base's layers, then `extra` layers whose output projections wo and w2 are zero:
// each extra layer adds exactly 0 to the residual stream, so the logits are
// bit for bit the base model's while every token still streams the extra
// layers' weights from memory, as a model of that size would.

// write n copies of the value v (dies on error)
static void write_fill(FILE *f, float v, size_t n, const char *path) {
    float buf[1024];
    for (size_t i = 0; i < 1024; i++) buf[i] = v;
    for (size_t done = 0; done < n;) {
        size_t m = n - done < 1024 ? n - done : 1024;
        if (fwrite(buf, sizeof(float), m, f) != m) die("%s: write failed", path);
        done += m;
    }
}

// write n uniform [-a, a] floats
static void write_random(FILE *f, Stream *r, float a, size_t n, const char *path) {
    float buf[1024];
    for (size_t done = 0; done < n;) {
        size_t m = n - done < 1024 ? n - done : 1024;
        for (size_t i = 0; i < m; i++) buf[i] = uniform(r, a);
        if (fwrite(buf, sizeof(float), m, f) != m) die("%s: write failed", path);
        done += m;
    }
}

static void write_floats(FILE *f, const float *p, size_t n, const char *path) {
    if (fwrite(p, sizeof(float), n, f) != n) die("%s: write failed", path);
}

static void write_emulated_checkpoint(const char *path, const Transformer *base, int extra) {
    Config c;
    int shared;
    TransformerWeights bw, *w = &bw;
    unsigned char *file = read_f32_checkpoint(base->path, &c, &shared, &bw);
    size_t dim = (size_t)c.dim, hid = (size_t)c.hidden_dim, L = (size_t)c.n_layers, E = (size_t)extra;
    size_t hs = dim / (size_t)c.n_heads, kv = (size_t)c.n_kv_heads * hs;
    FILE *f = fopen(path, "wb");
    if (!f) die("%s: cannot write", path);
    Stream r;
    stream_seed(&r, 99);
    float a = sqrtf(3.0f / (float)dim);
    c.n_layers += extra;
    if (write_config(f, &c, shared) != 0) die("%s: write failed", path);
    write_floats(f, w->token_embedding, (size_t)c.vocab_size * dim, path);
    write_floats(f, w->rms_att, L * dim, path);        write_fill(f, 1.0f, E * dim, path);
    write_floats(f, w->wq, L * dim * dim, path);       write_random(f, &r, a, E * dim * dim, path);
    write_floats(f, w->wk, L * kv * dim, path);        write_random(f, &r, a, E * kv * dim, path);
    write_floats(f, w->wv, L * kv * dim, path);        write_random(f, &r, a, E * kv * dim, path);
    write_floats(f, w->wo, L * dim * dim, path);       write_fill(f, 0.0f, E * dim * dim, path);
    write_floats(f, w->rms_ffn, L * dim, path);        write_fill(f, 1.0f, E * dim, path);
    write_floats(f, w->w1, L * hid * dim, path);       write_random(f, &r, a, E * hid * dim, path);
    write_floats(f, w->w2, L * dim * hid, path);       write_fill(f, 0.0f, E * dim * hid, path);
    write_floats(f, w->w3, L * hid * dim, path);       write_random(f, &r, a, E * hid * dim, path);
    write_floats(f, w->rms_final, dim, path);
    write_floats(f, w->rope_cos, (size_t)c.seq_len * hs / 2, path);
    write_floats(f, w->rope_sin, (size_t)c.seq_len * hs / 2, path);
    if (!shared) write_floats(f, w->wcls, (size_t)c.vocab_size * dim, path);
    if (fclose(f) != 0) die("%s: write failed", path);
    xfree(file);
}

// Where the embedded writer's rows go: floats (gs 0), or a version-2 file's int8 groups,
// each matrix's scales after its values (model.h's q80_group; every row whole groups)
typedef struct { FILE *f; const char *path; int gs; int8_t *q; float *sc; size_t n_sc; } RowOut;
static void row_out(RowOut *o, const float *row, size_t n) {
    if (!o->gs) { write_floats(o->f, row, n, o->path); return; }
    for (size_t g = 0; g < n / (size_t)o->gs; g++)
        o->sc[o->n_sc++] = q80_group(o->q + g * (size_t)o->gs, row + g * (size_t)o->gs, o->gs);
    if (fwrite(o->q, 1, n, o->f) != n) die("%s: write failed", o->path);
}
static void end_matrix(RowOut *o) {
    if (o->gs && fwrite(o->sc, sizeof(float), o->n_sc, o->f) != o->n_sc) die("%s: write failed", o->path);
    o->n_sc = 0;
}

typedef struct { RowOut o; Stream r; float *row; size_t L, E; } Embed;
// One weight of every layer: the base's `rows` rows (src_in floats each, per layer) zero-padded
// to `in`, then pad_rows rows of zeros; the extra layers' rows uniform in [-a, a] (0: zeros).
// A norm is one row (matrix 0: floats in both formats), its padding 0, extra layers' gains 1.
static void embed_weight(Embed *e, const float *src, size_t rows, size_t src_in, size_t in, size_t pad_rows,
                         float a, float gain, int matrix) {
    for (size_t l = 0; l < e->L + e->E; l++) {
        for (size_t i = 0; i < rows + pad_rows; i++) {
            for (size_t k = 0; k < in; k++)
                e->row[k] = l >= e->L ? (matrix ? (a > 0 ? uniform(&e->r, a) : 0.0f) : 1.0f)
                          : i < rows && k < src_in ? gain * src[(l * rows + i) * src_in + k] : 0.0f;
            if (matrix) row_out(&e->o, e->row, in);
            else write_floats(e->o.f, e->row, in, e->o.path);
        }
        if (matrix) end_matrix(&e->o);
    }
}

// A weight the model has once (the embedding, the classifier, rms_final): no extra layers
static void embed_once(Embed *e, const float *src, size_t rows, size_t src_in, size_t in, float gain, int matrix) {
    Embed one = *e;
    one.L = 1, one.E = 0;
    embed_weight(&one, src, rows, src_in, in, 0, 0, gain, matrix);
}

// The base model embedded, zero-padded, in a model `scale` times as wide with `layers`
// layers and `hidden` hidden units (0: scale times the base's), as a legacy f32 file (gs 0)
// or a version-2 file in groups of gs (a realistic DRAM-bound shape: the shipped target in
// dim 768 x 12 layers is ~325 MB in f32; in dim 4096, hidden 11008, 32 layers 6.3 GB in int8).
// Width: the base's heads, kv heads, hidden units and embedding columns come first, the rest
// are zeros (an extra head scores 0 everywhere and reads zero values: it adds nothing); the
// RMSNorm gains are divided by sqrt(scale), since the mean square over the padded width is
// 1/scale of the base's. Depth: extra layers with random wq, wk, wv, w1, w3 and zero wo, w2
// leave the residual stream unchanged. The logits match the base's to rounding (RMSNorm's
// eps is the one difference; int8: the base's own groups, as its export's).
static void write_embedded_checkpoint(const char *path, const char *base, int scale, int layers, int hidden, int gs) {
    Config b, c;
    int shared;
    TransformerWeights bw, *w = &bw;
    unsigned char *file = read_f32_checkpoint(base, &b, &shared, &bw);
    c = b;
    c.dim *= scale, c.hidden_dim = hidden ? hidden : c.hidden_dim * scale, c.n_layers = layers;
    c.n_heads *= scale, c.n_kv_heads *= scale;
    size_t D = (size_t)c.dim, H = (size_t)c.hidden_dim, d = (size_t)b.dim, h = (size_t)b.hidden_dim;
    size_t hs = d / (size_t)b.n_heads, kv = (size_t)b.n_kv_heads * hs, KV = kv * (size_t)scale;
    size_t V = (size_t)c.vocab_size, most = (V > H ? V : H) * (D > H ? D : H);
    float g = 1.0f / sqrtf((float)scale), a = 0.05f;
    Embed e = {.o = {.f = fopen(path, "wb"), .path = path, .gs = gs}, .L = (size_t)b.n_layers,
               .E = (size_t)(layers - b.n_layers), .row = xmalloc((D > H ? D : H) * sizeof(float), "row")};
    if (!e.o.f || layers < b.n_layers || H < h || (gs && (D % (size_t)gs || H % (size_t)gs)))
        die("%s: cannot write", path);
    if (gs) e.o.q = xmalloc(D > H ? D : H, "row"), e.o.sc = xmalloc(most / (size_t)gs * sizeof(float), "scales");
    stream_seed(&e.r, 99);
    if (gs) { // version 2: the header, the norms, then each matrix of each layer, values then scales
        unsigned char hd[Q80_HEADER_BYTES] = {0};
        int32_t v[9] = {Q80_MAGIC, 2, c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size, c.seq_len};
        memcpy(hd, v, sizeof(v)), hd[36] = (unsigned char)shared, memcpy(hd + 37, &gs, sizeof(gs));
        if (fwrite(hd, 1, sizeof(hd), e.o.f) != sizeof(hd)) die("%s: write failed", path);
        embed_weight(&e, w->rms_att, 1, d, D, 0, 0, g, 0);
        embed_weight(&e, w->rms_ffn, 1, d, D, 0, 0, g, 0);
        embed_once(&e, w->rms_final, 1, d, D, g, 0);
        embed_once(&e, w->token_embedding, V, d, D, 1.0f, 1);
    } else {
        if (write_config(e.o.f, &c, shared) != 0) die("%s: write failed", path);
        embed_once(&e, w->token_embedding, V, d, D, 1.0f, 1);
        embed_weight(&e, w->rms_att, 1, d, D, 0, 0, g, 0);
    }
    embed_weight(&e, w->wq, d, d, D, D - d, a, 1.0f, 1);
    embed_weight(&e, w->wk, kv, d, D, KV - kv, a, 1.0f, 1);
    embed_weight(&e, w->wv, kv, d, D, KV - kv, a, 1.0f, 1);
    embed_weight(&e, w->wo, d, d, D, D - d, 0, 1.0f, 1);
    if (!gs) embed_weight(&e, w->rms_ffn, 1, d, D, 0, 0, g, 0);
    embed_weight(&e, w->w1, h, d, D, H - h, a, 1.0f, 1);
    embed_weight(&e, w->w2, d, h, H, D - d, 0, 1.0f, 1);
    embed_weight(&e, w->w3, h, d, D, H - h, a, 1.0f, 1);
    if (!gs) {
        embed_once(&e, w->rms_final, 1, d, D, g, 0);
        write_floats(e.o.f, w->rope_cos, (size_t)c.seq_len * hs / 2, path);
        write_floats(e.o.f, w->rope_sin, (size_t)c.seq_len * hs / 2, path);
    }
    if (!shared) embed_once(&e, w->wcls, V, d, D, 1.0f, 1);
    if (fclose(e.o.f) != 0) die("%s: write failed", path);
    xfree(e.row), xfree(e.o.q), xfree(e.o.sc), xfree(file);
}

// A drafter file `in` (what: its kind) read whole into *file, its 5-int header into h and
// checked by `check` against its own dims (h[at], h[at + 1]: dim, vocab_size);
// returns check's count (heads, or the MLP's width)
static int read_own_drafter(unsigned char **file, int32_t h[5], const char *in, const char *what, DrafterCheck check,
                            int at) {
    size_t bytes;
    char msg[256];
    *file = read_file_checked(in, what, &bytes, NULL, NULL);
    memset(h, 0, 5 * sizeof(int32_t));
    memcpy(h, *file, bytes < 5 * sizeof(int32_t) ? bytes : 5 * sizeof(int32_t));
    int n = check(h, bytes, h[at], h[at + 1], msg, sizeof(msg));
    if (n < 0) die("%s: %s", in, msg);
    return n;
}

// Medusa heads `in` (for a base target) for that target embedded `scale` times
// wider (write_embedded_checkpoint): W and b zero-padded, so the padded hidden
// state (z, 0) gives (z + silu(W z + b), 0) and the same logits.
static void write_embedded_medusa(const char *path, const char *in, int scale) {
    unsigned char *file;
    int32_t h[5];
    int H = read_own_drafter(&file, h, in, "medusa.bin", check_medusa, 3), d = h[3], D = d * scale;
    const float *src = (const float *)(void *)(file + MEDUSA_HEADER_BYTES);
    float *out = xmalloc(medusa_n_floats(H, D) * sizeof(float), "heads"), *o = out; // zeroed
    for (int i = 0; i < H; i++, src += (size_t)d * d + (size_t)d, o += (size_t)D * D + (size_t)D) {
        for (int r = 0; r < d; r++) memcpy(o + (size_t)r * D, src + (size_t)r * d, (size_t)d * sizeof(float));
        memcpy(o + (size_t)D * D, src + (size_t)d * d, (size_t)d * sizeof(float));
    }
    if (write_medusa(path, H, D, h[4], out)) die("%s: cannot write", path);
    xfree(out);
    xfree(file);
}

// H random Medusa heads for a target of dim and vocab (W uniform in +-a, b zero)
static void write_random_medusa(const char *path, int H, int dim, int vocab, uint64_t seed, float a) {
    size_t n = medusa_n_floats(H, dim), per = (size_t)dim * dim + (size_t)dim;
    float *w = xmalloc(n * sizeof(float), "heads"); // zeroed
    Stream r;
    stream_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        if (i % per < (size_t)dim * dim) w[i] = uniform(&r, a);
    if (H < 1 || H > MEDUSA_MAX_HEADS || write_medusa(path, H, dim, vocab, w)) die("%s: cannot write %d heads", path, H);
    xfree(w);
}

// A random EAGLE drafter for a target of dim and vocab (W1, W2 uniform in +-a, b zero)
static void write_random_eagle(const char *path, int dim, int vocab, int hidden, uint64_t seed, float a) {
    size_t n = eagle_n_floats(dim, hidden), H = (size_t)hidden, D = (size_t)dim;
    float *w = xmalloc(n * sizeof(float), "eagle"); // zeroed
    Stream r;
    stream_seed(&r, seed);
    for (size_t i = 0; i < H * 2 * D; i++) w[i] = uniform(&r, a);                  // W1
    for (size_t i = 0; i < D * H; i++) w[H * 2 * D + H + i] = uniform(&r, a);      // W2
    if (write_eagle(path, dim, vocab, hidden, w)) die("%s: cannot write", path);
    xfree(w);
}

// The EAGLE drafter `in` (for a base target) for that target embedded `scale`
// times wider: W1's f and e halves and W2's rows zero-padded, so the padded
// feature (f, 0) and embedding (e, 0) give (f', 0) and the same logits.
static void write_embedded_eagle(const char *path, const char *in, int scale) {
    unsigned char *file;
    int32_t h[5];
    int hid = read_own_drafter(&file, h, in, "eagle.bin", check_eagle, 2);
    size_t d = (size_t)h[2], D = d * (size_t)scale, H = (size_t)hid;
    const float *w1 = (const float *)(void *)(file + EAGLE_HEADER_BYTES), *b1 = w1 + H * 2 * d, *w2 = b1 + H,
                *b2 = w2 + d * H;
    float *out = xmalloc(eagle_n_floats((int)D, hid) * sizeof(float), "eagle"); // zeroed
    float *o1 = out, *ob1 = o1 + H * 2 * D, *o2 = ob1 + H, *ob2 = o2 + D * H;
    for (size_t r = 0; r < H; r++) {
        memcpy(o1 + r * 2 * D, w1 + r * 2 * d, d * sizeof(float));         // the f half
        memcpy(o1 + r * 2 * D + D, w1 + r * 2 * d + d, d * sizeof(float)); // the e half
    }
    memcpy(ob1, b1, H * sizeof(float));
    memcpy(o2, w2, d * H * sizeof(float)); // rows 0..d-1
    memcpy(ob2, b2, d * sizeof(float));
    if (write_eagle(path, (int)D, h[3], hid, out)) die("%s: cannot write", path);
    xfree(out);
    xfree(file);
}

#endif
