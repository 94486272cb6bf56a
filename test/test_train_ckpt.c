// test_train_ckpt.c - what ./train writes, read by specdec.c (make test-train):
//   1. ./train tokenizer, data and model on a small generated corpus (no
//      ../shared needed), as `make weights` runs them;
//   2. specdec's tokenizer loads tokenizer.bin and its encoder (llama2.c's
//      O(n^2) loop) gives the same ids as ./train encode on several texts;
//   3. specdec loads model.bin and its logits equal ./train dump-logits's
//      (the trainer's forward) within 1e-4, in one call and in KV-cache chunks;
//   4. a student distilled from that model (-teacher) learns.
// Run from the repository root after building ./train.
#ifndef TESTING
#define TESTING
#endif
#include "../specdec.c"
#include "harness.h"
#include "train_check.h"
#include <glob.h>
#include <sys/wait.h>

#define DIR "build/train/ckpt"


static void run(const char *cmd) {
    printf("$ %s\n", cmd);
    fflush(stdout);
    if (system(cmd) != 0) die("command failed: %s", cmd);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) die("cannot write %s", path);
}

// A few hundred short stories from word lists: enough text for BPE merges and a
// model that learns something, made fresh by the test.
static void write_corpus(void) {
    static const char *names[] = {"Tom", "Lily", "Ben", "Sue", "Max", "Anna"};
    static const char *things[] = {"ball", "kite", "cat", "red box", "little boat", "big tree"};
    static const char *feel[] = {"happy", "sad", "excited", "sleepy"};
    size_t cap = 1 << 20, n = 0;
    char *books = xmalloc(cap, "corpus"), *ts = xmalloc(cap, "corpus");
    size_t nts = 0;
    for (int i = 0; i < 300; i++) {
        const char *a = names[i % 6], *b = names[(i / 6) % 6], *t = things[(i * 7) % 6], *f = feel[(i / 3) % 4];
        n += (size_t)snprintf(books + n, cap - n,
                              "%s had a %s. One day %s saw the %s and\nfelt %s. \u2018Can I play?\u2019 "
                              "asked %s.\n\n\u201cYes!\u201d said %s \u2014 and they\nplayed all day.\n\n\n",
                              a, t, b, t, f, b, a);
        nts += (size_t)snprintf(ts + nts, cap - nts,
                                "Once upon a time, %s found a %s. %s was %s.\n%s said, \"Let's share it.\"\n"
                                "<|endoftext|>\n", a, t, a, f, b);
    }
    write_text(DIR "/corpus/children.txt", books);
    write_text(DIR "/corpus/tinystories_train_head.txt", ts);
    write_text(DIR "/corpus/tinystories_valid_head.txt", "Once upon a time, Ben had a kite.\n\nHe was happy.\n");
    xfree(books);
    xfree(ts);
}

static void read_exact(void *p, size_t size, size_t n, FILE *f, const char *path) {
    if (fread(p, size, n, f) != n) die("%s: truncated", path);
}

// The ids ./train encode gives for a text.
static int train_encode(const char *text, int *ids, int cap) {
    write_text(DIR "/probe.txt", text);
    FILE *p = popen("./train encode -z " DIR "/tok.bin -f " DIR "/probe.txt", "r");
    if (!p) die("cannot run ./train encode");
    int n = 0;
    while (n < cap && fscanf(p, "%d", &ids[n]) == 1) n++;
    if (pclose(p) != 0) die("./train encode failed");
    return n;
}

static void test_tokenizer(int vocab) {
    Tokenizer tok;
    build_tokenizer(&tok, DIR "/tok.bin", vocab);
    const char *probes[] = {
        "Once upon a time, Lily found a kite. Lily was happy.",
        "\u2018Can I play?\u2019 asked Tom.\n\u201cYes!\u201d said Sue \u2014 and they played all day.",
        "na\xc3\xafve caf\xc3\xa9 \xe2\x98\x83 zebra 1234   three  spaces\n\nnew lines",
        "x",
    };
    for (int i = 0; i < 4; i++) {
        int a[1024], b[1024];
        int na = train_encode(probes[i], a, 1024), nb = encode(&tok, b, probes[i], 1, 0);
        int same = na == nb && !memcmp(a, b, (size_t)na * sizeof(int));
        check(same, "probe %d: ./train encode == specdec encode (%d vs %d tokens, BOS + dummy prefix)", i, na, nb);
    }
    free_tokenizer(&tok);
}

static void test_logits(void) {
    int ids[256];
    int n = train_encode("Once upon a time, Tom had a big tree. \u2018Can I play?\u2019 asked Ben, and he felt "
                         "sleepy. Sue said, \"Let's share it.\"", ids, 32);
    char cmd[4096];
    int len = snprintf(cmd, sizeof(cmd), "./train dump-logits -m " DIR "/run/model.bin -o " DIR "/logits.bin -tokens ");
    for (int i = 0; i < n; i++) len += snprintf(cmd + len, sizeof(cmd) - (size_t)len, i ? ",%d" : "%d", ids[i]);
    run(cmd);
    FILE *f = fopen(DIR "/logits.bin", "rb");
    if (!f) die("no %s/logits.bin", DIR);
    int32_t hdr[2];
    read_exact(hdr, sizeof(hdr), 1, f, "logits.bin");
    int V = hdr[1], *toks = xmalloc((size_t)hdr[0] * sizeof(int), "tokens");
    float *want = xmalloc((size_t)hdr[0] * V * sizeof(float), "logits");
    read_exact(toks, sizeof(int), (size_t)hdr[0], f, "logits.bin");
    read_exact(want, sizeof(float), (size_t)hdr[0] * V, f, "logits.bin");
    fclose(f);
    check(hdr[0] == n && !memcmp(toks, ids, (size_t)n * sizeof(int)), "dump-logits: %d rows of %d logits", hdr[0], V);

    Transformer t;
    build_transformer(&t, DIR "/run/model.bin", n, NULL, 1);
    check(t.config.vocab_size == V && t.config.seq_len == 32 && t.config.n_kv_heads == 2,
          "specdec loads model.bin: dim %d layers %d heads %d/%d vocab %d seq_len %d", t.config.dim,
          t.config.n_layers, t.config.n_heads, t.config.n_kv_heads, t.config.vocab_size, t.config.seq_len);
    for (int chunked = 0; chunked < 2; chunked++) {
        double worst = 0, scale = 0;
        for (int start = 0; start < n; ) { // chunked: rows of 1, 2, 3, ... through the KV cache
            int rows = chunked ? (start % 5) + 1 : n;
            if (start + rows > n) rows = n - start;
            const float *got = forward(&t, ids + start, rows, start);
            for (size_t i = 0; i < (size_t)rows * V; i++) {
                float w = want[(size_t)start * V + i];
                worst = fmax(worst, fabs(got[i] - w) / fmax(1.0, fabs(w)));
                scale = fmax(scale, fabs(w));
            }
            start += rows;
        }
        check(worst < 1e-4, "specdec forward (%s) == trainer forward: worst |diff|/max(1,|logit|) %.2e over %d x "
              "%d logits (max |logit| %.2f)", chunked ? "in chunks via the KV cache" : "one call", worst, n, V, scale);
    }
    free_transformer(&t);
    xfree(toks);
    xfree(want);
}

// val_loss (5th CSV field) of the first and the last row of a progress CSV
static void csv_val_range(const char *path, double *first, double *last) {
    FILE *f = fopen(path, "rb");
    if (!f) die("no %s", path);
    char line[512];
    *first = *last = NAN;
    while (fgets(line, sizeof(line), f)) {
        const char *p = line;
        for (int field = 0; field < 4 && p; field++) p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL;
        if (!p || *p == ',' || !isdigit((unsigned char)line[0])) continue;
        double v = atof(p);
        if (isnan(*first)) *first = v;
        *last = v;
    }
    fclose(f);
}

// a 1-layer student distilled from the model above (the -teacher path of make weights)
static void test_distill(void) {
    run("./train model -data " DIR "/data -o " DIR "/distill -teacher " DIR "/run/model.bin -dim 32 -layers 1 "
        "-heads 2 -kv-heads 1 -seq 32 -batch 4 -accum 1 -steps 40 -warmup 5 -lr 3e-3 -eval-every 40 "
        "-eval-batches 1 -log-every 40 -ckpt-every 40 -threads 2 -csv " DIR "/distill.csv");
    double first, last;
    csv_val_range(DIR "/distill.csv", &first, &last);
    check(last < first - 1.0, "distilled student: val loss %.3f at step 0 -> %.3f after 40 steps", first, last);
}

// ./train bpb on a model whose every prediction is uniform (all weights zero:
// logits 0): each scored token costs ln V nats, so the answer is known,
// tokens x log2(V) / bytes; and a paragraph longer than seq_len is scored in
// windows, every token once. -tail keeps only the paragraphs that start in the
// file's last bytes.
static double test_bpb(void) {
    Config c = {16, 32, 1, 2, 1, 400, 8}; // seq_len 8: the long paragraph takes windows
    size_t n = checkpoint_n_floats(&c, 1);
    float *zero = xmalloc(n * sizeof(float), "zero weights");
    if (write_checkpoint(DIR "/zero.bin", &c, zero, 1) != 0) die("cannot write " DIR "/zero.bin");
    xfree(zero);
    write_text(DIR "/bpb.txt", "Once upon a time, Ben had a kite. He was happy, and Lily had a red box.\n"
                               "\nSue saw the cat.\n\n\nThe end.\n");
    const char *cmds[2] = {"./train bpb -m " DIR "/zero.bin -z " DIR "/tok.bin -f " DIR "/bpb.txt",
                           "./train bpb -m " DIR "/zero.bin -z " DIR "/tok.bin -f " DIR "/bpb.txt -tail 10"};
    const char *texts[2][3] = {{"Once upon a time, Ben had a kite. He was happy, and Lily had a red box.",
                                "Sue saw the cat.", "The end."}, {"The end."}};
    double whole = 0;
    for (int i = 0; i < 2; i++) {
        FILE *p = popen(cmds[i], "r");
        if (!p) die("cannot run ./train bpb");
        char line[512];
        double bpb = -1;
        while (fgets(line, sizeof(line), p)) sscanf(line, "bits per byte: %lf", &bpb);
        if (pclose(p) != 0) die("./train bpb failed");
        size_t tokens = 0, bytes = 0;
        for (int d = 0; d < (i ? 1 : 3); d++) {
            int ids[256];
            tokens += (size_t)train_encode(texts[i][d], ids, 256) - 1; // BOS is context, not scored
            bytes += strlen(texts[i][d]);
        }
        double want = (double)tokens * log2(400.0) / (double)bytes;
        check(fabs(bpb - want) < 1e-5 * want, "bpb of a uniform model%s: %.6f, want %zu tokens x log2(400) / "
              "%zu bytes = %.6f", i ? " (-tail 10: the last paragraph)" : "", bpb, tokens, bytes, want);
        whole = i ? whole : want;
    }
    return whole;
}

// ./train bpb on version-2 files (c as test_bpb's, groups of 16) of weights w_value
// (matrices m_value): exit status, stderr into err, and the bits per byte printed
static int bpb_q80(float w_value, float m_value, int seq_len, float wq_scale, char *err, size_t n, double *bpb) {
    Config c = {16, 32, 1, 2, 1, 400, 8};
    size_t nf = checkpoint_n_floats(&c, 1), bytes = q80_file_bytes(&c, 1, 16), sizes[Q80_MATRICES], sat;
    float *f = xmalloc(nf * sizeof(float), "weights");
    unsigned char *img = xmalloc(bytes, "version 2");
    TransformerWeights w;
    map_weights(&w, &c, f, 1);
    for (size_t i = 0; i < nf; i++) f[i] = f + i >= w.wq && f + i < w.rms_ffn ? m_value : w_value;
    q80_export(img, &c, &w, 1, 16);
    memcpy(img + 32, &seq_len, 4); // the header's seq_len (the file holds no RoPE tables)
    q80_sizes(&c, 1, sizes);
    q80_at(&c, 1, sizes[1], 0, 16, &sat); // wq's first scale, after the norms and the embedding
    size_t at = Q80_HEADER_BYTES + 3 * 16 * 4 + sizes[0] + sizes[0] / 16 * 4 + sat;
    if (wq_scale > 0) memcpy(img + at, &wq_scale, 4);
    FILE *o = fopen(DIR "/q80.bin", "wb");
    if (!o || fwrite(img, 1, bytes, o) != bytes || fclose(o) != 0) die("cannot write " DIR "/q80.bin");
    xfree(f);
    xfree(img);
    FILE *p = popen("timeout 60 ./train bpb -m " DIR "/q80.bin -z " DIR "/tok.bin -f " DIR "/bpb.txt 2> "
                    DIR "/err.txt", "r");
    char line[512];
    *bpb = -1;
    while (p && fgets(line, sizeof(line), p)) sscanf(line, "bits per byte: %lf", bpb);
    int rc = p ? pclose(p) : -1;
    FILE *e = fopen(DIR "/err.txt", "r");
    err[0] = '\0';
    if (e) { err[fread(err, 1, n - 1, e)] = '\0'; fclose(e); }
    return rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// ./train bpb refuses, naming the file and the field, what it cannot score (exit 1):
// seq_len 1 (windows overlapping by one token would not move: it looped forever), a
// scale that dequantises past float's range (3e38 x 127: inf), weights whose forward
// overflows (1e38 x 16: bits per byte NaN). A 110 KB-style header claiming seq_len
// 4,194,304 is scored in windows the text needs (it died out of memory).
static void test_bpb_refusals(double want) {
    char err[1024];
    double bpb;
    int rc = bpb_q80(0, 0, 1 << 22, 0, err, sizeof(err), &bpb);
    check(rc == 0 && fabs(bpb - want) < 1e-5 * want, "bpb, version 2, seq_len 4194304: exit %d, %.6f (want 0, "
          "%.6f) %.*s", rc, bpb, want, (int)strcspn(err, "\n"), err);
    const struct { float w, m; int seq_len; float scale; const char *says; } bad[3] = {
        {0, 0, 1, 0, "seq_len = 1"}, {1, 1, 8, 3e38f, "dequantised"}, {1, 1e38f, 8, 0, "not finite"}};
    for (int i = 0; i < 3; i++) {
        rc = bpb_q80(bad[i].w, bad[i].m, bad[i].seq_len, bad[i].scale, err, sizeof(err), &bpb);
        check(rc == 1 && strstr(err, DIR "/q80.bin") && strstr(err, bad[i].says), "bpb, version 2, seq_len %d, "
              "weights %g, matrices %g, wq's scale %g: exit %d (want 1), \"%s\" and the file named in: %.*s",
              bad[i].seq_len, bad[i].w, bad[i].m, bad[i].scale, rc, bad[i].says, (int)strcspn(err, "\n"), err);
    }
}

// A malformed sources file: ./train stops with exit status 1 and names the
// file, the line and the field.
static void test_bad_sources(void) {
    const char *bad[][2] = {{"x\ty.txt\tbogus\t1\t0\n", "s.tsv:1: layout \"bogus\""},
                            {"# ok\nx\ty.txt\tbooks\n", "s.tsv:2: field 4 (val_every) is missing"},
                            {"x\ty.txt\tbooks\t-3\t0\n", "s.tsv:1: val_every \"-3\""}};
    for (int i = 0; i < 3; i++) {
        write_text(DIR "/s.tsv", bad[i][0]);
        int rc = system("./train data -sources " DIR "/s.tsv -z " DIR "/tok.bin -o " DIR "/x 2> " DIR "/err.txt");
        FILE *f = fopen(DIR "/err.txt", "r");
        char err[512] = "";
        if (f) { size_t n = fread(err, 1, sizeof(err) - 1, f); err[n] = '\0'; fclose(f); }
        check(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 1 && strstr(err, bad[i][1]),
              "bad sources file %d: exit 1 and \"%s\" (got: %.*s)", i, bad[i][1], (int)strcspn(err, "\n"), err);
    }
}

// The temp files (NAME.XXXXXX: mkstemp's 6 letters and digits) left in dir
static int temp_files(const char *dir) {
    char pattern[256];
    snprintf(pattern, sizeof(pattern), "%s/*.??????", dir);
    glob_t g;
    int n = glob(pattern, 0, NULL, &g) == 0 ? (int)g.gl_pathc : 0;
    if (n) globfree(&g);
    return n;
}

// ./train data and ./train tokenizer killed while they write (a file-size
// limit of 1 KB: SIGXFSZ) leave their outputs as they were, whole, and no
// temp file behind.
static void test_killed_writes(void) {
    const char *files[3] = {DIR "/data/train.bin", DIR "/data/val.bin", DIR "/tok.bin"};
    unsigned char *before[3];
    size_t n[3];
    for (int i = 0; i < 3; i++) before[i] = read_file_checked(files[i], "an output", &n[i], NULL, NULL);
    const char *cmds[2] = {"ulimit -f 1; exec ./train data -d " DIR "/corpus -z " DIR "/tok.bin -o " DIR "/data "
                           "-mix children=1,tinystories=1 > /dev/null 2> " DIR "/err.txt",
                           "ulimit -f 1; exec ./train tokenizer -d " DIR "/corpus -v 400 -o " DIR "/tok.bin "
                           "-mix children=1,tinystories=1 > /dev/null 2> " DIR "/err.txt"};
    for (int c = 0; c < 2; c++) {
        int rc = system(cmds[c]), same = 1;
        for (int i = 0; i < 3; i++) {
            size_t m;
            unsigned char *now = read_file_checked(files[i], "an output", &m, NULL, NULL);
            same &= m == n[i] && !memcmp(now, before[i], m);
            xfree(now);
        }
        int left = temp_files(DIR "/data") + temp_files(DIR);
        check(rc != 0 && same && left == 0, "./train %s past ulimit -f 1: status %d (want not 0), train.bin, "
              "val.bin, tok.bin %s, %d temp files left", c ? "tokenizer" : "data", rc, same ? "unchanged" :
              "CHANGED", left);
    }
    for (int i = 0; i < 3; i++) xfree(before[i]);
}

int main(void) {
    run("mkdir -p " DIR "/corpus && rm -rf " DIR "/run " DIR "/distill");
    write_corpus();
    run("./train tokenizer -d " DIR "/corpus -v 400 -o " DIR "/tok.bin -mix children=1,tinystories=1");
    run("./train data -d " DIR "/corpus -z " DIR "/tok.bin -o " DIR "/data -mix children=1,tinystories=1");
    run("./train model -data " DIR "/data -o " DIR "/run -dim 48 -layers 2 -heads 4 -kv-heads 2 -seq 32 "
        "-batch 4 -accum 1 -steps 60 -warmup 5 -lr 3e-3 -eval-every 30 -eval-batches 1 -log-every 30 "
        "-ckpt-every 60 -threads 2 -csv " DIR "/run.csv");
    test_tokenizer(400);
    test_logits();
    test_distill();
    test_bpb_refusals(test_bpb());
    test_bad_sources();
    test_killed_writes();
    return check_exit("test_train_ckpt");
}
