// golden.c - the golden files a port checks itself against (make golden writes
// them into test/golden, make test checks that specdec still reproduces them;
// test/golden/README.md describes every file, docs/PORTING.md every rule).
//
//   golden DIR   write, for the shipped pair (if present) and for a small random
//                checkpoint this program writes deterministically:
//     coins.txt         coin_at(seed, position, purpose) and the stream rng_u32
//     tokens_MODEL.txt  ids of hard strings (BOS, then the text)
//     logits_MODEL.txt  the checkpoint's size and FNV-1a hash, then the logits of
//                       a 1-row step (BOS at position 0) and of a 5-row pass (the
//                       prompt's first 5 tokens at positions 0..4): the first 16
//                       of every row as %a, its argmax, an FNV-1a hash of its bits
//     run_MODEL_S.txt   a spec run (K = 4, seed 42, 40 new tokens) at sampling
//                       settings S, round by round: each position's proposal, its
//                       draw coin, q(x), p(x), min(1, p/q), accept coin, verdict,
//                       residual mass and resample coin, the committed token
//     pq_MODEL_S.txt    for the same run, p and q in full at the positions decided
//                       by a residual draw (every entry where p or q is nonzero)
//     tree_random.txt   a --tree 4,2,1 run: each round's nodes and decided positions
//     run_random_D_S.txt  spec runs with -d lookup, medusa, eagle (random heads and
//                       drafter, written here too) and the f32 draft at --lenience 0.5
//     plain_random_M_S.txt  -m target, -m draft (f32): each position's coin and token
//     text_random.txt   what specdec prints for the -m target run's ids and the hard strings'
// Every float is printed exactly (%a, or %.9g, which reads back to the same float).
#define TESTING
#include "../../specdec.c"
#include "../harness.h"
#include "../random_model.h"

#define RUN_K 4
#define RUN_NEW 40 // new tokens per run: the last round is capped to fit, as specdec -n caps it

static FILE *open_out(const char *dir, const char *name) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) die("%s: cannot write", path);
    return f;
}

// FNV-1a 64-bit over n bytes (offset basis 14695981039346656037, prime 1099511628211)
static uint64_t fnv1a(const void *v, size_t n) {
    uint64_t h = 14695981039346656037ULL;
    const unsigned char *b = (const unsigned char *)v;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

static const char *HARD[] = {"Once upon a time", "", " ", "  two spaces", "a\nb\tc\r\n",
                             "UTF-8 \xe2\x80\x9cquotes\xe2\x80\x9d \xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac",
                             "\x01\x7f\xff bytes", "The little dog said, \"Hello!\""};

// "LABEL PATH: N bytes, fnv1a H" for a whole file
static void write_file_hash(FILE *f, const char *label, const char *path) {
    size_t n;
    unsigned char *b = read_file_checked(path, label, &n, NULL, NULL);
    fprintf(f, "%s %s: %zu bytes, fnv1a %016llx\n", label, path, n, (unsigned long long)fnv1a(b, n));
    xfree(b);
}

static void write_tokens(FILE *f, const char *path, Tokenizer *tok) {
    write_file_hash(f, "tokenizer", path);
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
                (unsigned long long)fnv1a(row, (size_t)V * sizeof(float)));
        for (int i = 0; i < 16 && i < V; i++) fprintf(f, " %a", row[i]);
        fprintf(f, "\n");
    }
}

static void write_logits(FILE *f, const char *path, const char *draft, Tokenizer *tok) {
    write_file_hash(f, "target", path);
    write_file_hash(f, "draft", draft);
    Transformer tr;
    build_transformer(&tr, path, MAX_ROWS, NULL, 1);
    int ids[64], V = tr.config.vocab_size;
    int n = encode(tok, ids, "Once upon a time, there was a little", 1, 0);
    if (n < 5) die("golden: prompt too short");
    fprintf(f, "target: dim %d layers %d vocab %d; prompt ids", tr.config.dim, tr.config.n_layers, V);
    for (int i = 0; i < 5; i++) fprintf(f, " %d", ids[i]);
    fprintf(f, "\n");
    write_rows(f, "1-row step, BOS at position 0:", forward(&tr, ids, 1, 0), 1, V);
    write_rows(f, "5-row pass, positions 0..4:", forward(&tr, ids, 5, 0), 5, V);
    free_transformer(&tr);
}

static void write_coins(FILE *f) {
    uint64_t seeds[] = {0, 1, 2, 42};
    for (int s = 0; s < 4; s++) {
        Stream r;
        stream_seed(&r, seeds[s]);
        fprintf(f, "seed %llu: key %016llx\n", (unsigned long long)seeds[s], (unsigned long long)r.rng.key);
        for (int pos = 0; pos < 4; pos++)
            fprintf(f, "  position %d: draw %.9g accept %.9g resample %.9g\n", pos, coin_at(&r.rng, pos, COIN_DRAW),
                    coin_at(&r.rng, pos, COIN_ACCEPT), coin_at(&r.rng, pos, COIN_RESAMPLE));
        fprintf(f, "  stream rng_u32:");
        for (int i = 0; i < 4; i++) fprintf(f, " %u", rng_u32(&r));
        fprintf(f, "\n");
    }
}

// Sampling settings of a run, and how many residual positions its pq file holds
typedef struct { const char *name; float t, top_p; int top_k, pq_max; } Setting;

// p and q of one residual position: every index where either is nonzero
static void write_pq(FILE *f, const Verdict *v, int pos, const float *p, const float *q, int V) {
    int count = 0;
    for (int i = 0; i < V; i++) count += p[i] != 0.0f || q[i] != 0.0f;
    fprintf(f, "position %d: x %d reject residual_mass %.9g r %.9g -> token %d; %d entries\n", pos, v->x,
            v->residual_mass, v->r, v->token, count);
    for (int i = 0; i < V; i++)
        if (p[i] != 0.0f || q[i] != 0.0f) fprintf(f, "  %d %.9g %.9g\n", i, p[i], q[i]);
}

// one spec run, every examined position's numbers, round by round, into f;
// the p and q of its first s->pq_max residual positions into pq (NULL: none)
static void write_run(FILE *f, FILE *pq, const char *target, const char *draft, Tokenizer *tok,
                      const Setting *st) {
    Transformer tg, dr;
    build_transformer(&tg, target, MAX_ROWS, NULL, 1);
    build_transformer_as(&dr, draft, MAX_ROWS, NULL, 1, DRAFT_WEIGHTS);
    Sampler s;
    build_sampler(&s, tg.config.vocab_size, st->t, st->top_p, st->top_k);
    Rng rng;
    rng_seed(&rng, 42);
    Speculator sp;
    ModelDrafter md;
    build_speculator(&sp, &tg, model_drafter(&md, &dr, &s), &s, &rng);
    int tokens[512], V = tg.config.vocab_size;
    int n = encode(tok, tokens, "Once upon a time", 1, 0), start = n, residuals = 0, dumped = 0;
    fprintf(f, "spec run: K = %d, t = %.9g, top-p %.9g, top-k %d, seed 42, prompt \"Once upon a time\" "
            "(%d ids), %d new tokens, draft in %s\n", RUN_K, st->t, st->top_p, st->top_k, n, RUN_NEW,
            WEIGHTS_NAME[DRAFT_WEIGHTS]);
    forward_chunked(&tg, tokens, n - 1, 0);
    for (int round = 1; n - start < RUN_NEW; round++) {
        int want = RUN_NEW - (n - start), k = RUN_K < want - 1 ? RUN_K : want - 1;
        Round rd = speculative_step(&sp, tokens, n, k);
        fprintf(f, "round %d at position %d, K = %d\n", round, n, k);
        for (int i = 0; i < rd.committed; i++) {
            const Verdict *v = &sp.verdicts[i];
            fprintf(f, "  position %d: x %d d %.9g q %.9g p %.9g ratio %.9g u %.9g %s", n + i, v->x,
                    v->d, v->q, v->p, v->x < 0 ? 0.0f : acceptance_ratio(v->p, v->q, 1.0f), v->u,
                    v->accepted ? "accept" : "reject");
            if (!v->accepted) fprintf(f, " residual_mass %.9g r %.9g", v->residual_mass, v->r);
            fprintf(f, " -> token %d\n", v->token);
            if (v->x >= 0 && !v->accepted && residuals++ < st->pq_max && pq) {
                write_pq(pq, v, n + i, sp.p + (size_t)i * V, sp.q + (size_t)i * V, V);
                dumped++;
            }
        }
        n += rd.committed;
    }
    if (pq) fprintf(pq, "end: %d of the run's %d residual positions\n", dumped, residuals);
    free_speculator(&sp);
    free_sampler(&s);
    free_transformer(&tg);
    free_transformer(&dr);
}

// A tree run (--tree 4,2,1, t = 0.8, top-k 3: q holds at most 3 tokens, so the
// root's fourth candidate is the best remaining draft logit): round by round
// the tree's nodes, then each decided position's last tested candidate, up to
// the 40th new token (the last round's tree is whole, as specdec builds it).
static void write_tree_run(FILE *f, const char *target, const char *draft, Tokenizer *tok) {
    Transformer tg, dr;
    build_transformer(&tg, target, TREE_MAX, NULL, 1); // a pass of up to TREE_MAX rows, as specdec --tree
    build_transformer_as(&dr, draft, TREE_MAX, NULL, 1, DRAFT_WEIGHTS);
    Sampler s;
    build_sampler(&s, tg.config.vocab_size, 0.8f, 1.0f, 3);
    Rng rng;
    rng_seed(&rng, 42);
    Speculator sp;
    ModelDrafter md;
    build_speculator(&sp, &tg, model_drafter(&md, &dr, &s), &s, &rng);
    build_trees(&sp, (int[K_MAX]){4, 2, 1}, 3);
    int tokens[512], n = encode(tok, tokens, "Once upon a time", 1, 0), start = n;
    fprintf(f, "tree run: --tree 4,2,1, t = %.9g, top-p 1, top-k 3, seed 42, prompt \"Once upon a time\" "
            "(%d ids), %d new tokens, draft in %s\n", s.temperature, n, RUN_NEW, WEIGHTS_NAME[DRAFT_WEIGHTS]);
    forward_chunked(&tg, tokens, n - 1, 0);
    for (int round = 1; n - start < RUN_NEW; round++) {
        int k = 3; // a static tree is never cut by -n (start_round): the last round decides past it
        Round rd = tree_step(&sp, tokens, n, k);
        const Tree *t = &sp.trees->tree;
        fprintf(f, "round %d at position %d, depth %d, %d nodes\n", round, n, k, t->n);
        for (int v = 1; v < t->n; v++)
            fprintf(f, "  node %d: under %d, token %d, %s\n", v, t->parent[v], t->token[v],
                    t->onehot[v] ? "best logit" : "drawn");
        for (int i = 0; i < rd.committed && n + i - start < RUN_NEW; i++) { // what specdec prints
            const Verdict *v = &sp.verdicts[i];
            int node = i ? sp.trees->path[i - 1] : 0;
            fprintf(f, "  position %d: ", n + i);
            if (v->x < 0) fprintf(f, "no proposal d %.9g", v->d);
            else fprintf(f, "candidate %d of %d: x %d d %.9g q %.9g p %.9g ratio %.9g u %.9g %s", sp.trees->tested[i],
                         t->count[node] ? t->count[node] : 1, v->x, v->d, v->q, v->p,
                         acceptance_ratio(v->p, v->q, 1.0f), v->u, v->accepted ? "accept" : "reject");
            if (v->x >= 0 && !v->accepted) fprintf(f, " residual_mass %.9g r %.9g", v->residual_mass, v->r);
            fprintf(f, " -> token %d\n", v->token);
        }
        n += rd.committed;
    }
    free_trees(&sp);
    free_speculator(&sp);
    free_sampler(&s);
    free_transformer(&tg);
    free_transformer(&dr);
}

// ---- the drafters, lenience, plain decoding and the decoded text (files of
// their own, all on the random model, none on the int8 draft: a model draft runs
// its f32 weights, as --draft-weights f32)

// One decided position of a round, as run_M_S.txt prints it (lenience l: the
// ratio min(1, p/(l q)); a position without a proposal: drawn from p alone)
static void write_verdict(FILE *f, const Verdict *v, int pos, float l) {
    fprintf(f, "  position %d: ", pos);
    if (v->x < 0) {
        fprintf(f, "no proposal d %.9g -> token %d\n", v->d, v->token);
        return;
    }
    fprintf(f, "x %d d %.9g q %.9g p %.9g ratio %.9g u %.9g %s", v->x, v->d, v->q, v->p,
            acceptance_ratio(v->p, v->q, l), v->u, v->accepted ? "accept" : "reject");
    if (!v->accepted) fprintf(f, " residual_mass %.9g r %.9g", v->residual_mass, v->r);
    fprintf(f, " -> token %d\n", v->token);
}

// A spec run with sp's drafter as generate_spec runs it (the prefill, the
// drafter rewound and shown the prefill's last row, then rounds of up to K
// proposals: a drafter may make fewer), RUN_NEW new tokens, every decided
// position printed. tokens holds the prompt's n ids.
static void write_rounds(FILE *f, Speculator *sp, int *tokens, int n, int K) {
    Drafter *d = sp->drafter;
    int start = n;
    forward_chunked(sp->target, tokens, n - 1, 0);
    if (d->rewind) d->rewind(d, 0);
    if (d->observe) d->observe(d, n > 1 ? (n - 2) % sp->target->max_rows : -1, n - 2);
    for (int round = 1; n - start < RUN_NEW; round++) {
        int want = RUN_NEW - (n - start), k = K < want - 1 ? K : want - 1;
        Round rd = speculative_step(sp, tokens, n, k);
        fprintf(f, "round %d at position %d, K = %d\n", round, n, k);
        for (int i = 0; i < rd.committed; i++) {
            write_verdict(f, &sp->verdicts[i], n + i, sp->lenience);
            if (tokens[n + i] == TOKEN_BOS || tokens[n + i] == TOKEN_EOS) die("golden: a run met BOS or EOS");
        }
        n += rd.committed;
    }
}

// The sampling settings of the files below, and the random model's paths
static const Setting T1 = {"t1", 1, 1, 0, 0}, T08 = {"t0.8_p0.9_k40", 0.8f, 0.9f, 40, 0};
#define GOLDEN_TARGET "build/test/golden_target.bin"
#define GOLDEN_DRAFT "build/test/golden_draft.bin"
#define GOLDEN_MEDUSA "build/test/golden_medusa.bin"
#define GOLDEN_EAGLE "build/test/golden_eagle.bin"

// run_random_DRAFTER_S.txt: -d lookup (n-grams 1..3, K = 4), -d medusa (3 heads, K = 3),
// -d eagle (K = 4) or the f32 draft model with --lenience l < 1 (K = 4)
static void write_drafter_run(FILE *f, const char *drafter, float lenience, Tokenizer *tok, const Setting *st) {
    Transformer tg, dr;
    build_transformer(&tg, GOLDEN_TARGET, MAX_ROWS, NULL, 1);
    int V = tg.config.vocab_size, K = 4;
    Sampler s;
    build_sampler(&s, V, st->t, st->top_p, st->top_k);
    Rng rng;
    rng_seed(&rng, 42);
    ModelDrafter md;
    LookupDrafter lk;
    MedusaDrafter mh;
    EagleDrafter ed;
    Drafter *d;
    if (!strcmp(drafter, "lookup")) d = lookup_drafter(&lk, 1, 3, V);
    else if (!strcmp(drafter, "medusa")) d = medusa_drafter(&mh, GOLDEN_MEDUSA, &tg, &s), K = mh.n_heads;
    else if (!strcmp(drafter, "eagle")) d = eagle_drafter(&ed, GOLDEN_EAGLE, &tg, &s);
    else {
        build_transformer_as(&dr, GOLDEN_DRAFT, MAX_ROWS, NULL, 1, WEIGHTS_F32);
        d = model_drafter(&md, &dr, &s);
    }
    Speculator sp;
    build_speculator(&sp, &tg, d, &s, &rng);
    sp.lenience = lenience;
    int tokens[512], n = encode(tok, tokens, "Once upon a time", 1, 0);
    fprintf(f, "spec run: -d %s, K = %d, t = %.9g, top-p %.9g, top-k %d, seed 42, prompt \"Once upon a time\" "
            "(%d ids), %d new tokens", d->model ? "model (f32)" : drafter, K, st->t, st->top_p, st->top_k, n,
            RUN_NEW);
    if (lenience < 1.0f) fprintf(f, ", lenience %.9g", lenience);
    fprintf(f, "\n");
    if (!strcmp(drafter, "medusa")) write_file_hash(f, "medusa", GOLDEN_MEDUSA);
    if (!strcmp(drafter, "eagle")) write_file_hash(f, "eagle", GOLDEN_EAGLE);
    write_rounds(f, &sp, tokens, n, K);
    free_speculator(&sp);
    if (d->model) free_transformer(&dr);
    free_drafter(d);
    free_sampler(&s);
    free_transformer(&tg);
}

// plain_random_MODEL_S.txt: -m target or -m draft (f32), generate_plain's tokens and
// their draw coins; the run's ids (the prompt's, then the new) into ids, their count returned
static int write_plain_run(FILE *f, const char *mode, Tokenizer *tok, const Setting *st, int *ids) {
    Transformer tr;
    int draft = !strcmp(mode, "draft");
    build_transformer_as(&tr, draft ? GOLDEN_DRAFT : GOLDEN_TARGET, MAX_ROWS, NULL, 1, WEIGHTS_F32);
    Sampler s;
    build_sampler(&s, tr.config.vocab_size, st->t, st->top_p, st->top_k);
    Rng rng;
    rng_seed(&rng, 42);
    int tokens[512], generated[RUN_NEW + 1], n = encode(tok, tokens, "Once upon a time", 1, 0), start = n;
    Output o = {.tok = tok, .quiet = 1, .generated = generated, .max_new = RUN_NEW};
    start_output(&o, tokens, n);
    n = generate_plain(&tr, &s, &rng, tokens, n, &o);
    if (o.n_generated != RUN_NEW) die("golden: the plain run met BOS, EOS or the context's end");
    fprintf(f, "plain run: -m %s%s, t = %.9g, top-p %.9g, top-k %d, seed 42, prompt \"Once upon a time\" "
            "(%d ids), %d new tokens\n", mode, draft ? " (f32)" : "", st->t, st->top_p, st->top_k, start, RUN_NEW);
    for (int i = start; i < start + RUN_NEW; i++)
        fprintf(f, "  position %d: d %.9g -> token %d\n", i, coin_at(&rng, i, COIN_DRAW), tokens[i]);
    memcpy(ids, tokens, (size_t)(start + RUN_NEW) * sizeof(int));
    free_sampler(&s);
    free_transformer(&tr);
    return start + RUN_NEW;
}

// What print_piece writes for piece (at most room bytes), caught from stdout
static size_t printed_bytes(const char *piece, unsigned char *out, size_t room) {
    FILE *tmp = tmpfile();
    fflush(stdout);
    int saved = dup(1);
    if (!tmp || saved < 0 || dup2(fileno(tmp), 1) < 0) die("golden: cannot catch stdout");
    print_piece(piece);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    rewind(tmp);
    size_t n = fread(out, 1, room, tmp);
    fclose(tmp);
    return n;
}

static void write_hex(FILE *f, const unsigned char *b, size_t n) {
    for (size_t i = 0; i < n; i++) fprintf(f, "%02x", b[i]);
}

// The text specdec prints for ids (BOS first): each id after the first as
// decode_piece(previous id, id) through print_piece; per id when `each`
static void write_text(FILE *f, const Tokenizer *tok, const int *ids, int n, int each) {
    unsigned char text[4096], b[64];
    size_t len = 0;
    for (int i = 1; i < n; i++) {
        const char *piece = decode_piece(tok, ids[i - 1], ids[i]);
        size_t m = printed_bytes(piece, b, sizeof(b));
        if (each) {
            fprintf(f, "  position %d: id %d after %d: piece ", i, ids[i], ids[i - 1]);
            write_hex(f, (const unsigned char *)piece, strlen(piece));
            fprintf(f, strlen(piece) ? " -> printed " : "(empty) -> printed ");
            write_hex(f, b, m);
            fprintf(f, m ? "\n" : "(nothing)\n");
        }
        if (len + m > sizeof(text)) die("golden: text too long");
        memcpy(text + len, b, m);
        len += m;
    }
    fprintf(f, "text: %zu bytes ", len);
    write_hex(f, text, len);
    fprintf(f, "\n");
}

// text_random.txt: the plain target run's ids, then each hard string's, decoded
static void write_text_file(FILE *f, Tokenizer *tok, const int *ids, int n) {
    fprintf(f, "decoded text of plain_random_target_t1.txt (the prompt's ids after BOS, then the %d new)\n",
            RUN_NEW);
    write_text(f, tok, ids, n, 1);
    for (size_t i = 0; i < sizeof(HARD) / sizeof(HARD[0]); i++) {
        int hard[256], m = encode(tok, hard, HARD[i], 1, 0);
        fprintf(f, "decoded ids %zu of tokens_random.txt: ", i);
        write_text(f, tok, hard, m, 0);
    }
}

static void write_random_extras(const char *dir) {
    write_random_medusa(GOLDEN_MEDUSA, 3, 64, 400, 7, 0.05f);
    write_random_eagle(GOLDEN_EAGLE, 64, 400, 96, 8, 0.05f);
    Tokenizer tok;
    build_tokenizer(&tok, "build/test/golden_tok.bin", 0);
    FILE *f = open_out(dir, "run_random_lookup_t0.8_p0.9_k40.txt");
    write_drafter_run(f, "lookup", 1.0f, &tok, &T08);
    fclose(f);
    f = open_out(dir, "run_random_medusa_t1.txt");
    write_drafter_run(f, "medusa", 1.0f, &tok, &T1);
    fclose(f);
    f = open_out(dir, "run_random_eagle_t1.txt");
    write_drafter_run(f, "eagle", 1.0f, &tok, &T1);
    fclose(f);
    f = open_out(dir, "run_random_lenience0.5_t1.txt");
    write_drafter_run(f, "model", 0.5f, &tok, &T1);
    fclose(f);
    int ids[512], n;
    f = open_out(dir, "plain_random_draft_t0.8_p0.9_k40.txt");
    write_plain_run(f, "draft", &tok, &T08, ids);
    fclose(f);
    f = open_out(dir, "plain_random_target_t1.txt");
    n = write_plain_run(f, "target", &tok, &T1, ids);
    fclose(f);
    f = open_out(dir, "text_random.txt");
    write_text_file(f, &tok, ids, n);
    fclose(f);
    free_tokenizer(&tok);
}

static void write_model(const char *dir, const char *name, const char *target, const char *draft,
                        const char *tok_path, const Setting *settings, int n_settings) {
    Tokenizer tok0, *tok = &tok0;
    build_tokenizer(tok, tok_path, 0);
    char file[128];
    snprintf(file, sizeof(file), "tokens_%s.txt", name);
    FILE *f = open_out(dir, file);
    write_tokens(f, tok_path, tok);
    fclose(f);
    snprintf(file, sizeof(file), "logits_%s.txt", name);
    f = open_out(dir, file);
    write_logits(f, target, draft, tok);
    fclose(f);
    for (int i = 0; i < n_settings; i++) {
        const Setting *st = &settings[i];
        snprintf(file, sizeof(file), "run_%s_%s.txt", name, st->name);
        f = open_out(dir, file);
        FILE *pq = NULL;
        if (st->pq_max > 0) {
            snprintf(file, sizeof(file), "pq_%s_%s.txt", name, st->name);
            pq = open_out(dir, file);
            fprintf(pq, "p and q at the residual positions of run_%s_%s.txt (at most %d): per position a line, "
                    "then \"index p q\" for every index where p or q is nonzero\n", name, st->name, st->pq_max);
        }
        write_run(f, pq, target, draft, tok, st);
        fclose(f);
        if (pq) fclose(pq);
    }
    free_tokenizer(tok);
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
    // its pq files: all residual positions but at t = 1 (every entry nonzero: the first 3)
    const Setting random[] = {{"t0", 0, 1, 0, 1000}, {"t1", 1, 1, 0, 3}, {"t0.8_p0.9_k40", 0.8f, 0.9f, 40, 1000}};
    // the shipped pair's: none at t = 1 (2048 entries a position)
    const Setting shipped[] = {{"t0", 0, 1, 0, 1000}, {"t1", 1, 1, 0, 0}, {"t0.8_p0.9_k40", 0.8f, 0.9f, 40, 1000}};
    write_model(dir, "random", "build/test/golden_target.bin", "build/test/golden_draft.bin",
                "build/test/golden_tok.bin", random, 3);
    Tokenizer rtok;
    build_tokenizer(&rtok, "build/test/golden_tok.bin", 0);
    f = open_out(dir, "tree_random.txt");
    write_tree_run(f, "build/test/golden_target.bin", "build/test/golden_draft.bin", &rtok);
    fclose(f);
    // a version-2 (int8) target: a random model of groups of 64, exported; greedy, with the int8 draft
    write_random_checkpoint("build/test/golden_q80_f32.bin", &(Config){64, 192, 2, 4, 2, 400, 160}, 1, 5, 0, 0);
    write_q80_checkpoint("build/test/golden_q80_f32.bin", "build/test/golden_q80.bin");
    f = open_out(dir, "logits_q80.txt");
    write_logits(f, "build/test/golden_q80.bin", "build/test/golden_draft.bin", &rtok);
    fclose(f);
    f = open_out(dir, "run_q80_t0.txt");
    FILE *pq = open_out(dir, "pq_q80_t0.txt");
    fprintf(pq, "p and q at the residual positions of run_q80_t0.txt (at most 1000): per position a line, "
            "then \"index p q\" for every index where p or q is nonzero\n");
    write_run(f, pq, "build/test/golden_q80.bin", "build/test/golden_draft.bin", &rtok, &random[0]);
    fclose(f);
    fclose(pq);
    free_tokenizer(&rtok);
    write_random_extras(dir);
    if (access("weights/target.bin", R_OK) == 0 && access("weights/draft.bin", R_OK) == 0 &&
        access("tokenizer.bin", R_OK) == 0)
        write_model(dir, "shipped", "weights/target.bin", "weights/draft.bin", "tokenizer.bin", shipped, 3);
    else
        printf("golden: no shipped pair (weights/), only the random model's files\n");
    printf("golden: wrote %s\n", dir);
    return 0;
}
