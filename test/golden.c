// golden.c - the golden files a port checks itself against (make golden writes
// them into test/golden, make test checks that specdec still reproduces them).
//
//   golden DIR   write, for the shipped pair (if present) and for a small random
//                checkpoint this program writes deterministically:
//     tokens_MODEL.txt  ids of hard strings (BOS, then the text)
//     logits_MODEL.txt  logits of a 1-row step (BOS at position 0) and of a 5-row
//                       pass (the prompt's first 5 tokens at positions 0..4):
//                       the first 16 of every row as %a, its argmax, and an
//                       FNV-1a hash of all of the row's float bits
//     coins.txt         coin_at(seed, position, purpose) and the stream rng_u32
//     run_MODEL_tT.txt  a spec run, round by round: each position's proposal,
//                       its draw coin, q(x), p(x), min(1, p/q), accept coin, verdict,
//                       residual mass and resample coin, the committed token
// Every float is printed exactly (%a, or %.9g, which reads back to the same float).
#define TESTING
#include "../specdec.c"
#include "random_model.h"

static FILE *open_out(const char *dir, const char *name) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) die("%s: cannot write", path);
    return f;
}

static uint64_t fnv1a(const float *v, size_t n) {
    uint64_t h = 14695981039346656037ULL;
    const unsigned char *b = (const unsigned char *)v;
    for (size_t i = 0; i < n * sizeof(float); i++) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

static const char *HARD[] = {"Once upon a time", "", " ", "  two spaces", "a\nb\tc\r\n",
                             "UTF-8 \xe2\x80\x9cquotes\xe2\x80\x9d \xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac",
                             "\x01\x7f\xff bytes", "The little dog said, \"Hello!\""};

static void write_tokens(FILE *f, Tokenizer *tok) {
    for (size_t i = 0; i < sizeof(HARD) / sizeof(HARD[0]); i++) {
        int ids[256];
        int n = encode(tok, ids, HARD[i], 1, 0);
        fprintf(f, "text %zu:", i);
        for (const unsigned char *c = (const unsigned char *)HARD[i]; *c; c++) fprintf(f, " %02x", *c);
        fprintf(f, "\nids %zu:", i);
        for (int j = 0; j < n; j++) fprintf(f, " %d", ids[j]);
        fprintf(f, "\n");
    }
}

static void write_rows(FILE *f, const char *what, const float *logits, int rows, int V) {
    for (int r = 0; r < rows; r++) {
        const float *row = logits + (size_t)r * V;
        fprintf(f, "%s row %d: argmax %d fnv1a %016llx first16", what, r, argmax(row, V),
                (unsigned long long)fnv1a(row, (size_t)V));
        for (int i = 0; i < 16 && i < V; i++) fprintf(f, " %a", row[i]);
        fprintf(f, "\n");
    }
}

static void write_logits(FILE *f, const char *path, Tokenizer *tok) {
    Transformer tr;
    build_transformer(&tr, path, MAX_ROWS, NULL, 1);
    int ids[64], V = tr.config.vocab_size;
    int n = encode(tok, ids, "Once upon a time, there was a little", 1, 0);
    if (n < 5) die("golden: prompt too short");
    fprintf(f, "model %s: dim %d layers %d vocab %d; prompt ids", path, tr.config.dim,
            tr.config.n_layers, V);
    for (int i = 0; i < 5; i++) fprintf(f, " %d", ids[i]);
    fprintf(f, "\n");
    write_rows(f, "1-row step, BOS at position 0:", forward(&tr, ids, 1, 0), 1, V);
    write_rows(f, "5-row pass, positions 0..4:", forward(&tr, ids, 5, 0), 5, V);
    free_transformer(&tr);
}

static void write_coins(FILE *f) {
    uint64_t seeds[] = {0, 1, 2, 42};
    for (int s = 0; s < 4; s++) {
        Rng r;
        rng_seed(&r, seeds[s]);
        fprintf(f, "seed %llu: key %016llx\n", (unsigned long long)seeds[s], (unsigned long long)r.key);
        for (int pos = 0; pos < 4; pos++)
            fprintf(f, "  position %d: draw %.9g accept %.9g resample %.9g\n", pos,
                    coin_at(&r, pos, COIN_DRAW), coin_at(&r, pos, COIN_ACCEPT), coin_at(&r, pos, COIN_RESAMPLE));
        fprintf(f, "  stream rng_u32:");
        for (int i = 0; i < 4; i++) fprintf(f, " %u", rng_u32(&r));
        fprintf(f, "\n");
    }
}

// one spec run, every examined position's numbers, round by round
static void write_run(FILE *f, const char *target, const char *draft, Tokenizer *tok, float t) {
    Transformer tg, dr;
    build_transformer(&tg, target, MAX_ROWS, NULL, 1);
    build_transformer_as(&dr, draft, MAX_ROWS, NULL, 1, DRAFT_WEIGHTS);
    Sampler s;
    build_sampler(&s, tg.config.vocab_size, t, 1.0f, 0);
    Rng rng;
    rng_seed(&rng, 42);
    Speculator sp;
    ModelDrafter md;
    build_speculator(&sp, &tg, model_drafter(&md, &dr, &s), &s, &rng);
    int tokens[512];
    int n = encode(tok, tokens, "Once upon a time", 1, 0), start = n;
    fprintf(f, "spec run: K = 4, t = %g, seed 42, prompt \"Once upon a time\" (%d ids), draft in %s\n", t, n,
            WEIGHTS_NAME[DRAFT_WEIGHTS]);
    forward_chunked(&tg, tokens, n - 1, 0);
    for (int round = 1; n - start < 40 && n + 6 < tg.config.seq_len; round++) {
        int m = speculative_step(&sp, tokens, n, 4).committed;
        fprintf(f, "round %d at position %d\n", round, n);
        for (int i = 0; i < m; i++) {
            const Verdict *v = &sp.verdicts[i];
            fprintf(f, "  position %d: x %d d %.9g q %.9g p %.9g ratio %.9g u %.9g %s", n + i, v->x,
                    v->d, v->q, v->p, v->x < 0 ? 0.0f : acceptance_ratio(v->p, v->q, 1.0f), v->u,
                    v->accepted ? "accept" : "reject");
            if (!v->accepted) fprintf(f, " residual_mass %.9g r %.9g", v->residual_mass, v->r);
            fprintf(f, " -> token %d\n", v->token);
        }
        n += m;
    }
    free_speculator(&sp);
    free_sampler(&s);
    free_transformer(&tg);
    free_transformer(&dr);
}

static void write_model(const char *dir, const char *name, const char *target, const char *draft,
                        Tokenizer *tok) {
    char file[128];
    snprintf(file, sizeof(file), "tokens_%s.txt", name);
    FILE *f = open_out(dir, file);
    write_tokens(f, tok);
    fclose(f);
    snprintf(file, sizeof(file), "logits_%s.txt", name);
    f = open_out(dir, file);
    write_logits(f, target, tok);
    fclose(f);
    for (int t = 0; t <= 1; t++) {
        snprintf(file, sizeof(file), "run_%s_t%d.txt", name, t);
        f = open_out(dir, file);
        write_run(f, target, draft, tok, (float)t);
        fclose(f);
    }
}

int main(int argc, char **argv) {
    if (argc != 2) die("usage: golden DIR");
    const char *dir = argv[1];
    FILE *f = open_out(dir, "coins.txt");
    write_coins(f);
    fclose(f);
    // the small model: fixed shape and seed, written here, so any machine can make it
    write_random_checkpoint("build/test/golden_target.bin", &(Config){64, 172, 2, 4, 2, 400, 160}, 1, 5, 0, 0);
    write_random_checkpoint("build/test/golden_draft.bin", &(Config){64, 172, 2, 4, 2, 400, 160}, 1, 5, 6, 0.4f);
    write_tokenizer("build/test/golden_tok.bin", 400);
    Tokenizer tok;
    build_tokenizer(&tok, "build/test/golden_tok.bin", 400);
    write_model(dir, "random", "build/test/golden_target.bin", "build/test/golden_draft.bin", &tok);
    free_tokenizer(&tok);
    if (access("weights/target.bin", R_OK) == 0 && access("weights/draft.bin", R_OK) == 0 &&
        access("tokenizer.bin", R_OK) == 0) {
        Tokenizer st;
        build_tokenizer(&st, "tokenizer.bin", 0);
        write_model(dir, "shipped", "weights/target.bin", "weights/draft.bin", &st);
        free_tokenizer(&st);
    } else {
        printf("golden: no shipped pair (weights/), only the random model's files\n");
    }
    printf("golden: wrote %s\n", dir);
    return 0;
}
