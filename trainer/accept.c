// accept.c - the draft's acceptance a on held-out prompts, the number `make
// weights` reports for the draft it ships (docs/TRAINING.md), and the one to
// compare drafts by: spec decoding (K = 4) at t = 0 and t = 1 from the first 8
// words of 32 TinyStories the trainer held out (every 10th story of the train
// head in ../shared, read at run time), 64 tokens each, a = accepted / examined.
//
//   build/bin/accept --target F --draft F [--draft2 F] [--tokenizer F] [--prompts FILE]
//
// It runs specdec.c itself (included, as the tests do), so a is measured by
// the same speculative step users run.
#define TESTING
#include "../specdec.c"
#include "../test/harness.h" // build_transformer(_as), the free_* functions, DRAFT_WEIGHTS
#include <ctype.h>

typedef struct {
    const char *target, *draft, *draft2, *tokenizer, *prompts;
} AcceptOptions;

#define N_HELD 32
#define PROMPT_WORDS 8

// The first PROMPT_WORDS words of N_HELD stories the models never trained on:
// TinyStories' train head, stories separated by <|endoftext|>, where the trainer
// holds out every 10th story (index % 10 == 5). Returns how many were found.
static int held_out_prompts(char prompts[N_HELD][256], const char *path) {
    size_t n;
    char *text = (char *)read_file_checked(path, "prompts (--prompts FILE)", &n, NULL, NULL);
    const char *sep = "<|endoftext|>";
    int found = 0, index = 0;
    for (size_t i = 0; i < n && found < N_HELD; index++) {
        char *end = strstr(text + i, sep); // read_file puts a NUL after the text
        size_t stop = end ? (size_t)(end - text) : n;
        if (index % 10 == 5) {
            int words = 0, len = 0, in_word = 0;
            for (size_t j = i; j < stop && len < 255; j++) {
                int space = isspace((unsigned char)text[j]);
                if (!space && !in_word && ++words > PROMPT_WORDS) break;
                if (space && (len == 0 || prompts[found][len - 1] == ' ')) { in_word = 0; continue; }
                in_word = !space;
                prompts[found][len++] = space ? ' ' : text[j];
            }
            while (len > 0 && prompts[found][len - 1] == ' ') len--;
            prompts[found][len] = '\0';
            if (words >= PROMPT_WORDS) found++;
        }
        i = stop + strlen(sep);
    }
    xfree(text);
    return found;
}

#define ACCEPT_TOKENS 64 // tokens generated per held-out prompt

// spec decoding with draft over every prompt, ACCEPT_TOKENS each; stats summed.
// Returns the mean of a at t = 0 and t = 1.
static double draft_acceptance(Transformer *target, const char *draft_path, Tokenizer *tok,
                               char prompts[N_HELD][256], int n_prompts) {
    Transformer draft;
    build_transformer_as(&draft, draft_path, MAX_ROWS, NULL, 1, DRAFT_WEIGHTS); // as specdec runs it
    int *tokens = xmalloc((size_t)target->config.seq_len * sizeof(int), "tokens");
    float *probs = xmalloc((size_t)target->config.vocab_size * sizeof(float), "probs");
    int gen[ACCEPT_TOKENS];
    double sum_a = 0;
    for (int ti = 0; ti < 2; ti++) {
        Sampler s;
        build_sampler(&s, target->config.vocab_size, (float)ti, 1.0f, 0);
        Speculator sp;
        ModelDrafter md;
        SpecStats st;
        build_speculator(&sp, target, model_drafter(&md, &draft, &s), &s, NULL);
        plan_rounds(&sp, &st, &(Options){.k = 4, .n_new = 1}, NULL); // K = 4
        for (int i = 0; i < n_prompts; i++) {
            int n = encode_prompt(tok, tokens, prompts[i], NULL, target);
            Output o = {.tok = tok, .quiet = 1, .generated = gen, .max_new = ACCEPT_TOKENS};
            start_output(&o, tokens, n);
            Rng rng;
            rng_seed(&rng, 7 + (uint64_t)i);
            sp.rng = &rng;
            generate_spec(&sp, &st, tokens, n, &o);
        }
        Output none = {0};
        Report rp = {.out = &none, .sp = &sp, .st = &st, .target_step = 1.0};
        SpecSummary m = summarize(&rp);
        printf("%-34s t=%d K=4: a = %.3f per examined draft, accepted/drafted = %.3f, "
               "tokens per round %.2f (%ld rounds)\n", draft_path, ti, m.a, m.acceptance_rate,
               m.tokens_per_round, st.rounds);
        sum_a += m.a;
        free_speculator(&sp);
        free_sampler(&s);
    }
    xfree(tokens); xfree(probs);
    free_transformer(&draft);
    return sum_a / 2;
}

// With two drafts, the last line names the one with the higher mean a
// ("better: PATH").
static void accept_report(const AcceptOptions *o) {
    static char prompts[N_HELD][256];
    int n = held_out_prompts(prompts, o->prompts);
    printf("held-out prompts: %d from %s, e.g. \"%s\"\n", n, o->prompts, prompts[0]);
    Transformer target;
    build_transformer(&target, o->target, MAX_ROWS, NULL, 1);
    Tokenizer tok;
    build_tokenizer(&tok, o->tokenizer, target.config.vocab_size);
    double a1 = draft_acceptance(&target, o->draft, &tok, prompts, n);
    if (o->draft2) {
        double a2 = draft_acceptance(&target, o->draft2, &tok, prompts, n);
        printf("mean a over t=0 and t=1: %.3f vs %.3f\nbetter: %s\n", a1, a2,
               a2 > a1 ? o->draft2 : o->draft);
    }
    free_tokenizer(&tok);
    free_transformer(&target);
}

static void parse_accept(AcceptOptions *o, int argc, char **argv) {
    *o = (AcceptOptions){.target = "weights/target.bin", .draft = "weights/draft.bin",
                         .tokenizer = "tokenizer.bin",
                         .prompts = "../shared/data/corpus/tinystories_train_head.txt"};
    int i = 1;
    for (; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--target")) o->target = argv[i + 1];
        else if (!strcmp(argv[i], "--draft")) o->draft = argv[i + 1];
        else if (!strcmp(argv[i], "--draft2")) o->draft2 = argv[i + 1];
        else if (!strcmp(argv[i], "--tokenizer")) o->tokenizer = argv[i + 1];
        else if (!strcmp(argv[i], "--prompts")) o->prompts = argv[i + 1];
        else die("accept: unknown option %s (--target, --draft, --draft2, --tokenizer, --prompts)", argv[i]);
    }
    if (i < argc) die("accept: %s needs a value", argv[i]);
}

int main(int argc, char **argv) {
    AcceptOptions o;
    parse_accept(&o, argc, argv);
    accept_report(&o);
    return 0;
}
