// test_load.c - the streamed load (specdec.c, Appendix B). The packed matrices hold
// the file's weights value for value: f32 files, f32 files quantised at load, and
// version-2 files, export.py's included, whose groups run across w2's rows; on one
// thread and three alike. A version-2 file agrees with an f32 run of its weights
// dequantised as far as int8 activations allow. A file truncated or rewritten while
// it loads exits 1 naming it; a header claiming a 7B shape on a short file, and a
// 13B-class f32 file, are refused before any large allocation; the KV caches and
// RoPE tables hold the positions a run reaches, with the same logits.
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include <sys/types.h>
#include <unistd.h>
#undef _DEFAULT_SOURCE // specdec.c defines it again (features.h has seen it)
// Every pread of specdec.c goes through here: at call change_at, change() alters the file
static int pread_calls, change_at;
static void (*change)(void);
static ssize_t pread_changing(int fd, void *buf, size_t n, off_t at) {
    if (change && ++pread_calls == change_at) change();
    return pread(fd, buf, n, at);
}
#define pread pread_changing
#define TESTING
#include "../specdec.c"
#include "harness.h"
#undef pread
#include "check.h"
#include "random_model.h"
#include <sys/resource.h>
#include <sys/wait.h>

#define DIR_ "build/test/load"

// Run fn(arg) in a child with stderr to DIR_/child.txt; its exit code
static int in_child(void (*fn)(const void *), const void *arg) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(DIR_ "/child.txt", "w", stderr)) _exit(99);
#if !defined(__SANITIZE_ADDRESS__) // the sanitizers reserve terabytes of address space
        struct rlimit lim = {(rlim_t)256 << 20, (rlim_t)256 << 20}; // no large allocation
        setrlimit(RLIMIT_AS, &lim);
#endif
        fn(arg);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int child_said(const char *want) {
    char buf[4096] = {0};
    FILE *f = fopen(DIR_ "/child.txt", "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    if (!strstr(buf, want)) printf("    the child said: %s", buf);
    return strstr(buf, want) != NULL;
}

// Row j of m (matrix_row) against ref (n floats), bit for bit: 1 if it differs
static int row_differs(const Matrix *m, int j, const float *ref, float *row) {
    matrix_row(row, m, j);
    return memcmp(row, ref, (size_t)m->n * sizeof(float)) != 0;
}

// Every row of every packed matrix of t, the embedding's too, against w's: the rows that differ
static int rows_differ(const Transformer *t, const TransformerWeights *w) {
    const Config *c = &t->config;
    size_t dim = (size_t)c->dim, hid = (size_t)c->hidden_dim, kv = (size_t)c->n_kv_heads * (dim / (size_t)c->n_heads);
    float *row = xmalloc((dim > hid ? dim : hid) * sizeof(float), "row");
    int bad = 0;
    for (size_t l = 0; l < (size_t)c->n_layers; l++) {
        const Layer *ly = &t->layers[l];
        for (size_t j = 0; j < dim + 2 * kv; j++)
            bad += row_differs(&ly->qkv, (int)j, j < dim ? w->wq + (l * dim + j) * dim : j < dim + kv ?
                               w->wk + (l * kv + j - dim) * dim : w->wv + (l * kv + j - dim - kv) * dim, row);
        for (size_t j = 0; j < dim; j++) bad += row_differs(&ly->wo, (int)j, w->wo + (l * dim + j) * dim, row);
        for (size_t j = 0; j < hid; j++) { // w1 and w3 panels interleaved (Layer)
            bad += row_differs(&ly->w13, (int)(j / PANEL * 2 * PANEL + j % PANEL), w->w1 + (l * hid + j) * dim, row);
            bad += row_differs(&ly->w13, (int)(j / PANEL * 2 * PANEL + PANEL + j % PANEL), w->w3 + (l * hid + j) * dim,
                               row);
        }
        for (size_t j = 0; j < dim; j++) bad += row_differs(&ly->w2, (int)j, w->w2 + (l * dim + j) * hid, row);
    }
    for (int j = 0; j < c->vocab_size; j++) {
        bad += row_differs(&t->wcls, j, w->wcls + (size_t)j * dim, row);
        bad += row_differs(&t->embedding, j, w->token_embedding + (size_t)j * dim, row);
    }
    xfree(row);
    return bad;
}

// The weights a version-2 file stands for (model.h's q80_dequantize), into *w; xfree the result
static float *dequantized(const char *path, Config *c, int *shared, int *gs, TransformerWeights *w) {
    size_t n;
    char msg[512];
    unsigned char *img = read_file_checked(path, "version-2 file", &n, NULL, NULL);
    if (check_q80(c, shared, gs, img, n, msg, sizeof(msg))) die("%s: %s", path, msg);
    float *f = xmalloc(checkpoint_n_floats(c, *shared) * sizeof(float), "dequantized");
    q80_dequantize(f, c, *shared, *gs, img);
    map_weights(w, c, f, *shared);
    xfree(img);
    return f;
}

// export.py's group size: 64, halved until it divides dim (not hidden_dim)
static int export_gs(const Config *c) {
    int gs = 64;
    while (c->dim % gs) gs /= 2;
    return gs;
}

// name's f32 file (c, shared): loaded as f32 and as int8, and its version-2 exports (groups
// of q80_group_size and export.py's), on 1 and 3 threads: every packed row the file's
// weights (or the export's, dequantised), bit for bit; the 3-thread pack byte for byte the
// 1-thread one. Then export.py's file against an f32 run of its weights dequantised.
static void test_exact(const char *name, Config c, int shared, ThreadPool *pool) {
    char f32[256], v2[256], v2x[256], deq[256];
    snprintf(f32, sizeof(f32), DIR_ "/%s.bin", name);
    snprintf(v2, sizeof(v2), DIR_ "/%s_q80.bin", name);
    snprintf(v2x, sizeof(v2x), DIR_ "/%s_export.bin", name);
    snprintf(deq, sizeof(deq), DIR_ "/%s_export_f32.bin", name);
    write_random_checkpoint(f32, &c, shared, 5, 0, 0.0f);
    write_q80_checkpoint_gs(f32, v2, 0);
    write_q80_checkpoint_gs(f32, v2x, export_gs(&c));
    Config fc;
    int fs, gs, xgs;
    TransformerWeights fw, qw, xw;
    unsigned char *file = read_f32_checkpoint(f32, &fc, &fs, &fw);
    float *q = dequantized(v2, &fc, &fs, &gs, &qw), *x = dequantized(v2x, &fc, &fs, &xgs, &xw);
    struct { const char *path; int weights; const TransformerWeights *w; const char *what; } cases[] = {
        {f32, WEIGHTS_F32, &fw, "f32"}, {f32, WEIGHTS_INT8, &qw, "f32 quantised at load"},
        {v2, WEIGHTS_F32, &qw, "version 2"}, {v2x, WEIGHTS_F32, &xw, "export.py's version 2"}};
    for (int i = 0; i < 4; i++) {
        Transformer one, three;
        build_transformer_as(&one, cases[i].path, MAX_ROWS, NULL, 1, cases[i].weights);
        build_transformer_as(&three, cases[i].path, MAX_ROWS, pool, 3, cases[i].weights);
        size_t bytes = packed_bytes(&one.config, one.gs, one.shared_classifier);
        int bad = rows_differ(&one, cases[i].w), same = !memcmp(one.packed, three.packed, bytes);
        CHECK(bad == 0 && same, "%s, %s: %d packed rows differ from the file's weights; 3 threads %s", name,
              cases[i].what, bad, same ? "pack the same bytes" : "pack other bytes");
        free_transformer(&three);
        free_transformer(&one);
    }
    printf("%s (dim %d, hidden %d, %s): every packed row is the file's weights, f32, quantised at load, version 2 "
           "(groups of %d, and export.py's %d%s), 1 and 3 threads alike\n", name, c.dim, c.hidden_dim,
           shared ? "shared" : "unshared", gs, xgs, c.hidden_dim % xgs ? ": across w2's rows" : "");

    // export.py's file against an f32 run of the same weights dequantised: int8 activations round
    if (write_checkpoint(deq, &fc, x, fs)) die("%s: write failed", deq);
    Transformer a, b;
    build_transformer(&a, v2x, MAX_ROWS, NULL, 1);
    build_transformer(&b, deq, MAX_ROWS, NULL, 1);
    int tok[16], agree = 0, V = c.vocab_size;
    double worst = 0, scale = 0;
    for (int i = 0; i < 16; i++) tok[i] = (i * 37 + 5) % V;
    for (int i = 0; i < 16; i++) {
        const float *la = forward(&a, tok + i, 1, i), *lb = forward(&b, tok + i, 1, i);
        int ia = 0, ib = 0;
        for (int v = 0; v < V; v++) {
            worst = fmax(worst, fabs((double)la[v] - lb[v])), scale = fmax(scale, fabs((double)lb[v]));
            ia = la[v] > la[ia] ? v : ia, ib = lb[v] > lb[ib] ? v : ib;
        }
        agree += ia == ib;
    }
    CHECK(worst <= 0.05 * scale && agree >= 14, "%s: export.py's file against its weights in f32: logits within %.3f "
          "of %.3f, the argmax agrees at %d of 16", name, worst, scale, agree);
    printf("%s: export.py's file (groups of %d) against its weights dequantised, run in f32: logits within %.4f "
           "(largest %.2f), the argmax agrees at %d of 16 positions\n", name, xgs, worst, scale, agree);
    free_transformer(&a);
    free_transformer(&b);
    xfree(x), xfree(q), xfree(file);
}

// ---- files that change while they load, and headers that ask too much
static const char *changing; // the file change() alters
static void truncate_half(void) {
    struct stat st;
    if (stat(changing, &st) || truncate(changing, st.st_size / 2)) exit(98);
}
static void rewrite_middle(void) { // the same size, other bytes
    struct stat st;
    int fd = open(changing, O_WRONLY);
    float v = 0.5f;
    if (fd < 0 || fstat(fd, &st) || pwrite(fd, &v, sizeof(v), st.st_size / 2 & ~(off_t)3) != sizeof(v)) exit(98);
    close(fd);
}
static void load(const void *path) {
    Transformer t;
    build_transformer(&t, path, MAX_ROWS, NULL, 1);
}

// a copy of src at dst, its time an hour ago (so a rewrite changes it, whatever the clock's grain)
static void copy_old(const char *src, const char *dst) {
    size_t n;
    unsigned char *b = read_file_checked(src, "file", &n, NULL, NULL);
    FILE *f = fopen(dst, "wb");
    if (!f || fwrite(b, 1, n, f) != n || fclose(f)) die("%s: write failed", dst);
    xfree(b);
    struct timespec t[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
    utimensat(AT_FDCWD, dst, t, 0);
}

static void test_changing(void) {
    const char *src = DIR_ "/small.bin", *moving = DIR_ "/moving.bin";
    const char *kinds[2] = {"truncated between its header and its body", "rewritten (the same size) as it loads"};
    void (*how[2])(void) = {truncate_half, rewrite_middle};
    const char *want[2] = {"moving.bin: read failed at byte", "moving.bin: the file changed while it was read"};
    for (int i = 0; i < 2; i++) {
        copy_old(src, moving);
        changing = moving, change = how[i], change_at = i ? 8 : 2, pread_calls = 0;
        int rc = in_child(load, moving);
        change = NULL;
        CHECK(rc == 1 && child_said(want[i]), "a checkpoint %s: exit %d (want 1 and '%s')", kinds[i], rc, want[i]);
    }
    printf("a checkpoint truncated between its header and its body, or rewritten as it loads: exit 1, the file "
           "named\n");
}

// a file of `bytes` bytes (sparse: no disk) holding the header h (n bytes)
static int write_sparse(const char *path, const void *h, size_t n, off_t bytes) {
    FILE *f = fopen(path, "wb");
    return f && fwrite(h, 1, n, f) == n && fclose(f) == 0 && truncate(path, bytes) == 0;
}

static void test_too_big(void) {
    const char *p7 = DIR_ "/claims7B.bin", *p13 = DIR_ "/13B_f32.bin";
    const Config c7 = {4096, 11008, 32, 32, 32, 32000, 4096}, c13 = {5120, 13824, 40, 40, 40, 32000, 4096};
    int32_t h7[7] = {c7.dim, c7.hidden_dim, c7.n_layers, c7.n_heads, c7.n_kv_heads, c7.vocab_size, c7.seq_len};
    int32_t h13[7] = {c13.dim, c13.hidden_dim, c13.n_layers, c13.n_heads, c13.n_kv_heads, c13.vocab_size, c13.seq_len};
    char need[64];
    snprintf(need, sizeof(need), "needs %zu", CONFIG_HEADER_BYTES + checkpoint_n_floats(&c7, 1) * 4);
    int rc = write_sparse(p7, h7, sizeof(h7), 1 << 20) ? in_child(load, p7) : -1;
    CHECK(rc == 1 && child_said("claims7B.bin: file is 1048576 bytes") && child_said(need),
          "a 7B header on a 1 MB file under a 256 MB address-space limit: exit %d (want 1, the file and '%s')", rc,
          need);
    off_t bytes = (off_t)(CONFIG_HEADER_BYTES + checkpoint_n_floats(&c13, 1) * 4);
    if (!write_sparse(p13, h13, sizeof(h13), bytes)) {
        printf("SKIP a 13B f32 file: this filesystem cannot hold a sparse %.0f GB file\n", (double)bytes / 1e9);
        return;
    }
    rc = in_child(load, p13);
    CHECK(rc == 1 && child_said("13B_f32.bin: dim 5120, 40 layers") && child_said("GB of f32 weights") &&
          child_said("as int8 (--target-weights or --draft-weights int8) it would need"),
          "a 13B-class f32 file: exit %d (want 1, what it needs and what its int8 export would)", rc);
    unlink(p7), unlink(p13);
    printf("a 7B header on a 1 MB file, and a %.0f GB f32 file: refused before any large allocation, saying what "
           "they need\n", (double)bytes / 1e9);
}

// A version-2 file that claims seq_len 4,194,304: a run of a few positions holds KV caches
// and RoPE tables for those alone, and the logits at them are the full context's
static void test_positions(void) {
    const char *f32 = DIR_ "/small.bin", *v2 = DIR_ "/long_q80.bin";
    write_q80_checkpoint(f32, v2);
    int seq = 4194304, tok[8] = {1, 5, 9, 40, 41, 42, 7, 8};
    FILE *f = fopen(v2, "r+b");
    if (!f || fseek(f, 8 + 6 * 4, SEEK_SET) || fwrite(&seq, 4, 1, f) != 1 || fclose(f)) die("%s: cannot poke", v2);
    size_t before = allocated;
    Transformer t, full, part;
    load_transformer(&t, v2, MAX_ROWS, NULL, 1, WEIGHTS_F32, 8 + MAX_ROWS, 0);
    size_t held = allocated - before;
    forward(&t, tok, 8, 0);
    CHECK(held < (size_t)8 << 20 && t.config.seq_len == 8 + MAX_ROWS, "seq_len 4194304, %d positions: %zu bytes held",
          8 + MAX_ROWS, held);
    free_transformer(&t);
    build_transformer(&full, f32, MAX_ROWS, NULL, 1);
    load_transformer(&part, f32, MAX_ROWS, NULL, 1, WEIGHTS_F32, 12, 0);
    int V = full.config.vocab_size, same = 1;
    for (int i = 0; i < 8; i++)
        same &= !memcmp(forward(&full, tok + i, 1, i), forward(&part, tok + i, 1, i), (size_t)V * 4);
    CHECK(same, "caches for 12 positions: logits differ from the full context's");
    printf("a version-2 file claiming seq_len %d, run at %d positions: %.1f MB held; caches sized to 12 positions give "
           "the full context's logits\n", seq, 8 + MAX_ROWS, (double)held / 1e6);
    free_transformer(&full);
    free_transformer(&part);
}

int main(void) {
    mkdir("build", 0777), mkdir("build/test", 0777), mkdir(DIR_, 0777);
    write_random_checkpoint(DIR_ "/small.bin", &(Config){64, 172, 2, 8, 4, 512, 64}, 1, 5, 0, 0.0f);
    test_changing(); // first: a child that dies releases what the parent owns, a thread pool's threads it lacks
    test_too_big();
    test_positions();
    ThreadPool *pool = build_pool(3);
    test_exact("mha", (Config){64, 172, 2, 8, 4, 512, 64}, 1, pool);           // stories260K's shape: GS 64, 172
    test_exact("gqa_unshared", (Config){48, 100, 2, 6, 2, 300, 40}, 0, pool); // GS 16 across rows of 100
    test_exact("odd_widths", (Config){36, 52, 1, 3, 1, 260, 40}, 1, pool);
    test_exact("w2_groups32", (Config){128, 344, 1, 4, 4, 300, 32}, 1, pool); // stories42M's: 64 and 1376 / 4
    release_since(&owned);
    return check_summary("test_load");
}
