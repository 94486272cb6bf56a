// fuzz_e2e.c - the whole program, end to end. Any bytes become a command line
// (mode, target, drafter, K, temperature, top-p, top-k, lenience, n-gram
// lengths, draft and target weights, threads, -n, seed, prompt) for tiny random
// checkpoints and a tokenizer written once at start-up; specdec_main runs it
// with its stdout captured, and the text must keep the README's promises:
//   t = 0: the speculative text is -m target's, byte for byte, and stays the
//          same with another K, thread count, drafter and draft weights;
//   t > 0: the same command line gives the same text twice, and another K and
//          thread count give it again (every position has its own coins, and
//          the forward is batch invariant; -d medusa: another thread count, the
//          same K, since a head's q depends on where its round began, and -k 0
//          is its fixed K);
//   -m target / -m draft: the same text on another thread count;
//   -q: nothing on stdout; -j: one JSON object, with -n, EOS and seq_len
//          accounting for the tokens it counts;
// and on every input: no crash or sanitizer report, a die() exactly where the
// command line is refused by design (parse_options' rules, a prompt longer
// than the context), nothing left owned and no file left open afterwards.
// A failed property aborts naming the command lines (the files they name are
// kept: an abort skips the clean-up). Built by `make fuzz`. FUZZ_E2E_SHOW=1
// prints every command line, its text, its stderr and its time.
//
// The input, byte by byte (missing bytes read as 0; fuzz/seeds/e2e has examples):
//   0  mode (b % 8: 0-5 spec, 6 target, 7 draft); bit 3: target model;
//      (b >> 4) % 6: drafter (0-2 draft models, 3 the target itself, 4 -d lookup,
//      5 -d medusa with 3 random heads for the target)
//   1  -k (b % 17); spec mode gives -k unless it is 0 and bit 7 is set
//   2  -t: b < 96 is 0, else 0.1 .. 2
//   3  -p: b < 128 not given, else (b - 127) / 128
//   4  --top-k: b < 128 not given, else 3 (b - 128)
//   5  --lenience: b < 192 not given, else (b - 191) / 64
//   6  --ngram-min (low nibble: 0 not given, else 1..4), --ngram-max (high: 0 not given, else 1..6)
//   7  --draft-weights (b % 3: none, f32, int8), --threads ((b >> 2) % 4, 0: not given;
//      3 only if bit 6 is set, else 1), --draft-threads ((b >> 4) % 4, 0: not given);
//      bit 7: --target-weights int8 (every run of the input)
//   8  -n (b % 41; 0: up to the context)
//   9, 10  -s (little endian)
//   11 bit 0: -v; bit 1: -j FILE; bit 2: one more run with -q; bit 3 (target, draft
//      modes): flags only spec mode takes (-k, --lenience, -d lookup/medusa, -v), to be
//      refused (-m target ignores a -d);
//      b >> 4 (spec mode with a model draft): 10..15 --tree with a shape (then no -k and
//      no --lenience), else the chain
//   12 the second run's K (b % 17)
//   13 the second run's draft threads (1 + (b >> 4) % 3); at t = 0 its drafter
//      ((b & 7) % 6), and bit 3 flips its draft weights
//   14 the second run's threads: 1 if the first had more, else 2; 3 (or 2 after 3)
//      if b % 8 == 7. More threads than the 2 cores of a small machine are slow:
//      spinning barriers wait for a thread that has no core. With -j, (b >> 4) & 3:
//      2 names a link to the JSON file (written where it points, the link kept),
//      3 a link to the tokenizer (an input: refused, the tokenizer unchanged)
//   15.. the prompt, at most 112 bytes (printable ASCII, newlines, a few UTF-8 letters):
//      one longer than the decoding model's context must be refused
#include "fuzz.h"
#include "../test/random_model.h"
#include <dirent.h>

#define VOCAB 360 // write_tokenizer's smallest is 354: ids 3..258 are llama2.c's byte tokens
#define PROMPT_MAX 112 // tokens: up to 114, more than every model's seq_len
#define TEXT_MAX (1 << 16)
enum { SPEC, TARGET, DRAFT };
static const char *MODE_NAME[] = {"spec", "target", "draft"};
enum { N_TARGETS = 2, N_DRAFT_MODELS = 3, SELF = 3, LOOKUP = 4, MEDUSA = 5, N_DRAFTERS = 6 };

static char dir[64], tok_path[96], json_path[96], target_path[N_TARGETS][96], draft_path[N_DRAFT_MODELS][96];
static char json_link[96], input_link[96]; // -j through links: to the JSON file, to the tokenizer
static off_t tok_size;
static char medusa_arg[N_TARGETS][104]; // "medusa:" + the heads' file for target i
static int out_fd = -1, saved_stdout = -1;
static FILE *err_file;
static size_t baseline;
static int baseline_fds; // open file descriptors as an input starts (counted per input:
                         // libFuzzer's symbolizer, started for its first NEW_FUNC line, keeps two pipes)
static int usable; // the default --threads
static int show;   // FUZZ_E2E_SHOW=1: print every command line and its text (to see what runs)
static unsigned char *tok_file; // the tokenizer's bytes (not owned), to count a prompt's tokens
static size_t tok_bytes;

// A model whose EOS is about as likely as a common token, so some runs end by
// EOS (random_weights makes BOS and EOS nearly silent): its embedding (and
// classifier row) copies token 300's, 1.2 times over.
static void write_model(const char *path, const Config *c, int shared, uint64_t seed, uint64_t nseed,
                        float eps, int eos_likely) {
    size_t n = checkpoint_n_floats(c, shared), dim = (size_t)c->dim;
    float *p = xmalloc(n * sizeof(float), "weights");
    random_weights(p, c, shared, seed, nseed, eps);
    if (eos_likely) {
        TransformerWeights w;
        map_weights(&w, c, p, shared);
        for (size_t i = 0; i < dim; i++) {
            w.token_embedding[TOKEN_EOS * dim + i] = 1.2f * w.token_embedding[300 * dim + i];
            w.wcls[TOKEN_EOS * dim + i] = 1.2f * w.wcls[300 * dim + i];
        }
    }
    if (write_checkpoint(path, c, p, shared) != 0) {
        fprintf(stderr, "fuzz_e2e: cannot write %s\n", path);
        exit(1);
    }
    xfree(p);
}

// 3 random Medusa heads (W uniform in +-0.3: they often agree with the target
// by chance in a vocabulary this small) for a target of config c
static void write_heads(const char *path, const Config *c, uint64_t seed) {
    size_t n = medusa_n_floats(3, c->dim);
    float *w = xmalloc(n * sizeof(float), "heads");
    Stream r;
    stream_seed(&r, seed);
    for (size_t i = 0; i < n; i++) w[i] = uniform(&r, 0.3f);
    if (write_medusa(path, 3, c->dim, c->vocab_size, w) != 0) {
        fprintf(stderr, "fuzz_e2e: cannot write %s\n", path);
        exit(1);
    }
    xfree(w);
}

// open file descriptors (a FILE or descriptor left open by a run is a leak too)
static int count_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    if (!d) return 0;
    int n = 0;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

// open file descriptors, the fewest of a few counts 20 ms apart: libFuzzer's own
// threads (its RSS watch reads /proc/self/statm) open files for a moment
static int open_fds(void) {
    int n = count_fds();
    for (int i = 0; i < 5 && n > baseline_fds; i++) {
        nanosleep(&(struct timespec){0, 20000000}, NULL);
        int m = count_fds();
        n = m < n ? m : n;
    }
    return n;
}

static void remove_files(void) {
    const char *paths[] = {target_path[0], target_path[1], draft_path[0], draft_path[1], draft_path[2],
                           medusa_arg[0] + 7, medusa_arg[1] + 7,
                           tok_path, json_path, json_link, input_link};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) unlink(paths[i]);
    char p[128];
    snprintf(p, sizeof p, "%s/stdout", dir); unlink(p);
    snprintf(p, sizeof p, "%s/stderr", dir); unlink(p);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    struct stat st;
    snprintf(dir, sizeof dir, "%s/specdec-e2e-XXXXXX",
             stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp");
    if (!mkdtemp(dir)) {
        perror("fuzz_e2e: mkdtemp");
        exit(1);
    }
    snprintf(tok_path, sizeof tok_path, "%s/tok.bin", dir);
    snprintf(json_path, sizeof json_path, "%s/stats.json", dir);
    snprintf(json_link, sizeof json_link, "%s/link.json", dir);
    snprintf(input_link, sizeof input_link, "%s/input.json", dir);
    if (symlink("stats.json", json_link) != 0 || symlink("tok.bin", input_link) != 0) {
        perror("fuzz_e2e: symlink");
        exit(1);
    }
    for (int i = 0; i < N_TARGETS; i++) snprintf(target_path[i], 96, "%s/target%d.bin", dir, i);
    for (int i = 0; i < N_DRAFT_MODELS; i++) snprintf(draft_path[i], 96, "%s/draft%d.bin", dir, i);
    // target 0 (shared classifier, seq_len 96); its draft 0 is it plus noise (agrees
    // often: long accepted runs); draft 1 is small and unrelated, with a shorter
    // context than either target (no proposals past it); target 1 (unshared,
    // dim 24: partial panels, seq_len 64, EOS likely) and its noisy copy, draft 2
    const Config t0 = {32, 64, 2, 4, 2, VOCAB, 96}, t1 = {24, 40, 1, 2, 1, VOCAB, 64};
    const Config d1 = {20, 36, 1, 2, 1, VOCAB, 48};
    write_model(target_path[0], &t0, 1, 1, 0, 0, 0);
    write_model(draft_path[0], &t0, 1, 1, 2, 0.3f, 0);
    write_model(draft_path[1], &d1, 0, 3, 0, 0, 0);
    write_model(target_path[1], &t1, 0, 4, 0, 0, 1);
    write_model(draft_path[2], &t1, 0, 4, 5, 0.3f, 1);
    write_tokenizer(tok_path, VOCAB);
    struct stat tok_st;
    tok_size = stat(tok_path, &tok_st) == 0 ? tok_st.st_size : -1;
    for (int i = 0; i < N_TARGETS; i++) {
        snprintf(medusa_arg[i], sizeof medusa_arg[i], "medusa:%s/medusa%d.bin", dir, i);
        write_heads(medusa_arg[i] + 7, i ? &t1 : &t0, 7 + (uint64_t)i);
    }
    char p[128];
    snprintf(p, sizeof p, "%s/stdout", dir);
    out_fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
    snprintf(p, sizeof p, "%s/stderr", dir);
    err_file = fopen(p, "w+");
    saved_stdout = dup(STDOUT_FILENO);
    if (out_fd < 0 || !err_file || saved_stdout < 0) {
        perror("fuzz_e2e: capture files");
        exit(1);
    }
    atexit(remove_files); // an abort skips it: a failure's files stay for its reproducer
    usable = usable_cpus();
    show = getenv("FUZZ_E2E_SHOW") != NULL;
    unsigned char *file = read_file_checked(tok_path, "tokenizer", &tok_bytes, NULL, NULL);
    tok_file = malloc(tok_bytes); // the harness's: a die() releases everything owned
    if (!tok_file) abort();
    memcpy(tok_file, file, tok_bytes);
    xfree(file);
    baseline = owned_count();
    return 0;
}

// ---- one command line -------------------------------------------------------

typedef struct {
    int mode, target, drafter;   // drafter: 0..2 draft models, SELF, LOOKUP
    int k, give_k;
    float t, top_p, lenience;    // top_p, lenience: 0 not given
    int top_k;                   // -1 not given
    int ngram_min, ngram_max;    // 0 not given
    int draft_weights;           // -1 not given, else WEIGHTS_F32 / WEIGHTS_INT8
    int target_int8;             // --target-weights int8
    int threads, draft_threads;  // 0 not given
    int n, verbose, json, quiet, give_d;
    int prompt_tokens;           // BOS and the prompt's tokens
    unsigned seed;
    const char *prompt;
    const char *tree;            // --tree's argument, or NULL
} Run;

typedef struct {
    int argc;
    char *argv[48];
    char buf[48][32];
} Argv;

static void arg(Argv *a, const char *s) { a->argv[a->argc++] = (char *)s; }

static void arg_f(Argv *a, const char *flag, const char *fmt, double v) {
    arg(a, flag);
    snprintf(a->buf[a->argc], sizeof a->buf[0], fmt, v);
    arg(a, a->buf[a->argc]);
}

static void arg_i(Argv *a, const char *flag, long v) { arg_f(a, flag, "%.0f", (double)v); }

static void build_argv(const Run *r, Argv *a) {
    a->argc = 0;
    arg(a, "specdec");
    arg(a, target_path[r->target]);
    arg(a, "-z"); arg(a, tok_path);
    arg(a, "-m"); arg(a, MODE_NAME[r->mode]);
    if (r->give_d || r->mode != TARGET) {
        arg(a, "-d");
        arg(a, r->drafter == LOOKUP ? "lookup" : r->drafter == MEDUSA ? medusa_arg[r->target]
               : r->drafter == SELF ? target_path[r->target] : draft_path[r->drafter]);
    }
    if (r->give_k) arg_i(a, "-k", r->k);
    arg_f(a, "-t", "%.9g", r->t);
    if (r->top_p > 0) arg_f(a, "-p", "%.9g", r->top_p);
    if (r->top_k >= 0) arg_i(a, "--top-k", r->top_k);
    if (r->lenience > 0) arg_f(a, "--lenience", "%.9g", r->lenience);
    if (r->ngram_min) arg_i(a, "--ngram-min", r->ngram_min);
    if (r->ngram_max) arg_i(a, "--ngram-max", r->ngram_max);
    if (r->draft_weights >= 0) { arg(a, "--draft-weights"); arg(a, WEIGHTS_NAME[r->draft_weights]); }
    if (r->target_int8) { arg(a, "--target-weights"); arg(a, "int8"); }
    if (r->threads) arg_i(a, "--threads", r->threads);
    if (r->draft_threads) arg_i(a, "--draft-threads", r->draft_threads);
    arg_i(a, "-n", r->n);
    arg_i(a, "-s", r->seed);
    arg(a, "-i"); arg(a, r->prompt);
    if (r->verbose) arg(a, "-v");
    if (r->json) { arg(a, "-j"); arg(a, r->json == 3 ? input_link : r->json == 2 ? json_link : json_path); }
    if (r->quiet) arg(a, "-q");
    if (r->tree) { arg(a, "--tree"); arg(a, r->tree); }
}

// the decoding model's context
static int seq_len_of(const Run *r) {
    static const int target_seq[N_TARGETS] = {96, 64}, draft_seq[N_DRAFT_MODELS] = {96, 48, 64};
    return r->mode == DRAFT && r->drafter < N_DRAFT_MODELS ? draft_seq[r->drafter] : target_seq[r->target];
}

// BOS and the prompt's tokens (a tokenizer of its own each time: a die()
// releases all that is owned, so nothing owned may live from input to input)
static int prompt_tokens(const char *prompt) {
    Tokenizer tok;
    parse_tokenizer(&tok, tok_file, tok_bytes, tok_path, VOCAB);
    int *ids = xmalloc((strlen(prompt) + 3) * sizeof(int), "ids");
    int n = encode(&tok, ids, prompt, 1, 0);
    xfree(ids);
    free_tokenizer(&tok);
    return n;
}

// Is this command line refused by design (parse_options' checks, and a prompt
// longer than the decoding model's context)?
static int refused_by_design(const Run *r) {
    int lo = r->ngram_min ? r->ngram_min : 1, hi = r->ngram_max ? r->ngram_max : 3;
    int no_model = (r->drafter == LOOKUP || r->drafter == MEDUSA) && r->mode == DRAFT; // nothing to run alone
    return lo > hi || no_model || (r->mode != SPEC && ((r->lenience > 0 && r->lenience < 1) || r->give_k ||
                                                       r->verbose)) ||
           r->prompt_tokens > seq_len_of(r) || r->json == 3;
}

// the command line, pasteable into a shell (./specdec for specdec)
static void print_command(FILE *f, const Run *r) {
    Argv a;
    build_argv(r, &a);
    fprintf(f, "  ./specdec");
    for (int i = 1; i < a.argc; i++) {
        fputs(" '", f);
        for (const char *c = a.argv[i]; *c; c++)
            if (*c == '\'') fputs("'\\''", f);
            else fputc(*c, f);
        fputc('\'', f);
    }
    fputc('\n', f);
}

typedef struct {
    int died;
    size_t len;
    char text[TEXT_MAX];
} Result;

static void dump_stderr(FILE *to) {
    fflush(err_file);
    rewind(err_file);
    char line[512];
    while (fgets(line, sizeof line, err_file)) fprintf(to, "    | %s", line);
}

static void print_text(const char *name, const Result *res) {
    fprintf(stderr, "  %s (%zu bytes): \"", name, res->len);
    for (size_t i = 0; i < res->len && i < 2000; i++) {
        unsigned char c = (unsigned char)res->text[i];
        if (c == '\n') fputs("\\n", stderr);
        else if (c == '"' || c == '\\') fprintf(stderr, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f) fprintf(stderr, "\\x%02x", c);
        else fputc(c, stderr);
    }
    fputs("\"\n", stderr);
}

// Run specdec_main on r with stdout into a file and stderr (warnings, the
// statistics, -v) into another: only the code that writes through stderr's FILE
// is redirected, so sanitizer and libFuzzer reports still reach the terminal.
static void run(const Run *r, Result *res) {
    static Argv a; // its strings must outlive the run only
    build_argv(r, &a);
    fflush(stdout);
    fflush(err_file);
    rewind(err_file);
    if (ftruncate(out_fd, 0) != 0 || lseek(out_fd, 0, SEEK_SET) != 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
        ftruncate(fileno(err_file), 0) != 0) {
        perror("fuzz_e2e: redirecting the output");
        abort();
    }
    FILE *real_stderr = stderr;
    stderr = err_file;
    volatile int died = 1;
    double t0 = now_seconds();
    FUZZ_TRY({
        specdec_main(a.argc, a.argv);
        died = 0;
    });
    fflush(stdout);
    fflush(err_file);
    stderr = real_stderr;
    dup2(saved_stdout, STDOUT_FILENO);
    fuzz_check_released(baseline);
    res->died = died;
    ssize_t got = pread(out_fd, res->text, TEXT_MAX - 1, 0);
    res->len = got > 0 ? (size_t)got : 0;
    res->text[res->len] = '\0';
    if (show) {
        fprintf(stderr, "  [%.1f ms]", 1e3 * (now_seconds() - t0));
        print_command(stderr, r);
        if (died) fprintf(stderr, "  (died)\n");
        else print_text("stdout", res);
        dump_stderr(stderr);
    }
    if (died != refused_by_design(r)) {
        fprintf(stderr, "fuzz_e2e: this command line %s:\n", died ? "died (a die() it should not reach)"
                                                                     : "was accepted, but it should be refused");
        print_command(stderr, r);
        fprintf(stderr, "  its stderr:\n");
        dump_stderr(stderr);
        abort();
    }
}

// abort unless runs a and b printed the same text
static void same_text(const char *property, const Run *ra, const Result *a, const Run *rb, const Result *b) {
    if (a->len == b->len && !memcmp(a->text, b->text, a->len)) return;
    fprintf(stderr, "fuzz_e2e: %s, but the texts differ:\n", property);
    print_command(stderr, ra);
    print_command(stderr, rb);
    print_text("first", a);
    print_text("second", b);
    abort();
}

// ---- -j: the file must be one JSON object (no nan or inf), its counts consistent

static const char *json_ws(const char *s) { return s + strspn(s, " \t\n\r"); }

// the end of the JSON value at s, or NULL if there is none (RFC 8259's grammar)
static const char *json_value(const char *s, int depth) {
    s = json_ws(s);
    if (depth > 16) return NULL;
    if (*s == '{' || *s == '[') {
        char close = *s == '{' ? '}' : ']';
        s = json_ws(s + 1);
        if (*s == close) return s + 1;
        for (;; s = json_ws(s)) {
            if (close == '}') {
                if (*s != '"' || !(s = json_value(s, depth + 1))) return NULL;
                s = json_ws(s);
                if (*s++ != ':') return NULL;
            }
            if (!(s = json_value(s, depth + 1))) return NULL;
            s = json_ws(s);
            if (*s == close) return s + 1;
            if (*s++ != ',') return NULL;
        }
    }
    if (*s == '"') {
        for (s++; *s != '"'; s++) {
            if ((unsigned char)*s < 0x20) return NULL;
            if (*s == '\\' && !strchr("\"\\/bfnrtu", *++s)) return NULL;
        }
        return s + 1;
    }
    for (const char *lit = "true\0false\0null\0"; *lit; lit += strlen(lit) + 1)
        if (!strncmp(s, lit, strlen(lit))) return s + strlen(lit);
    const char *start = s;
    if (*s == '-') s++;
    if (*s == '0') s++;
    else if (*s >= '1' && *s <= '9') s += strspn(s, "0123456789");
    else return NULL;
    if (*s == '.' && !(s += 1 + strspn(s + 1, "0123456789"), s[-1] >= '0' && s[-1] <= '9')) return NULL;
    if (*s == 'e' || *s == 'E') {
        s += s[1] == '+' || s[1] == '-' ? 2 : 1;
        size_t digits = strspn(s, "0123456789");
        if (!digits) return NULL;
        s += digits;
    }
    return s > start ? s : NULL;
}

static long json_long(const char *json, const char *key) {
    const char *at = strstr(json, key);
    return at ? strtol(at + strlen(key), NULL, 10) : -1;
}

static void check_json(const Run *r) {
    static char json[TEXT_MAX];
    FILE *f = fopen(json_path, "rb");
    size_t n = f ? fread(json, 1, sizeof json - 1, f) : 0;
    if (f) fclose(f);
    json[n] = '\0';
    const char *end = n ? json_value(json, 0) : NULL;
    const char *problem = !end || json[0] != '{' || *json_ws(end) ? "is not one JSON object" : NULL;
    long prompt = json_long(json, "\"prompt_tokens\": "), gen = json_long(json, "\"generated_tokens\": ");
    int length = strstr(json, "\"ended_by\": \"length\"") != NULL;
    int context = strstr(json, "\"ended_by\": \"context\"") != NULL;
    long most = r->n > 0 ? r->n : seq_len_of(r) - prompt; // -n 0: up to the context, as run.c's
    if (!problem && (prompt < 1 || gen < 0 || gen > most))
        problem = "has prompt_tokens or generated_tokens out of range";
    else if (!problem && length && (r->n == 0 || gen != r->n))
        problem = "says ended_by length, but generated_tokens is not -n";
    else if (!problem && context && prompt + gen != seq_len_of(r))
        problem = "says ended_by context, but prompt_tokens + generated_tokens is not seq_len";
    if (!problem) return;
    fprintf(stderr, "fuzz_e2e: the -j file %s:\n", problem);
    print_command(stderr, r);
    fprintf(stderr, "  %s\n", json);
    abort();
}

// ---- the input as command lines ---------------------------------------------

static const char *UTF8[] = {"\xc3\xa9", "\xe2\x80\x94", "\xe6\x97\xa5", "\xc3\xbc"}; // é — 日 ü

static void decode_prompt(char *out, const uint8_t *p, size_t n) {
    size_t len = 0;
    for (size_t i = 0; i < n && len < PROMPT_MAX; i++) {
        uint8_t b = p[i];
        if (b >= 0xf8 && len + 3 <= PROMPT_MAX) { // a UTF-8 letter
            const char *u = UTF8[b & 3];
            memcpy(out + len, u, strlen(u));
            len += strlen(u);
        } else if (b >= 0xf0) out[len++] = '\n';
        else out[len++] = (char)(' ' + b % 95);
    }
    out[len] = '\0';
}

static Result res_a, res_b, res_c;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    baseline_fds = count_fds();
    uint8_t b[15] = {0};
    memcpy(b, data, size < sizeof b ? size : sizeof b);
    char prompt[PROMPT_MAX + 1];
    decode_prompt(prompt, data + sizeof b, size > sizeof b ? size - sizeof b : 0);

    Run r = {.mode = b[0] % 8 < 6 ? SPEC : b[0] % 8 == 6 ? TARGET : DRAFT, .target = (b[0] >> 3) & 1,
             .drafter = (b[0] >> 4) % N_DRAFTERS, .k = b[1] % (K_MAX + 1),
             .t = b[2] < 96 ? 0.0f : 0.1f + (float)(b[2] - 96) * (1.9f / 159.0f),
             .top_p = b[3] < 128 ? 0.0f : (float)(b[3] - 127) / 128.0f,
             .top_k = b[4] < 128 ? -1 : 3 * (b[4] - 128),
             .lenience = b[5] < 192 ? 0.0f : (float)(b[5] - 191) / 64.0f,
             .ngram_min = b[6] & 15 ? 1 + ((b[6] & 15) - 1) % 4 : 0,
             .ngram_max = b[6] >> 4 ? 1 + ((b[6] >> 4) - 1) % 6 : 0,
             .draft_weights = b[7] % 3 - 1, .threads = (b[7] >> 2) % 4 == 3 && !(b[7] & 0x40) ? 1 : (b[7] >> 2) % 4,
             .draft_threads = (b[7] >> 4) % 4, .target_int8 = b[7] >> 7,
             .n = b[8] % 41, .seed = (unsigned)b[9] | (unsigned)b[10] << 8,
             .verbose = b[11] & 1, .json = (b[11] >> 1) & 1 ? (((b[14] >> 4) & 3) < 2 ? 1 : (b[14] >> 4) & 3) : 0,
             .prompt = prompt,
             .prompt_tokens = prompt_tokens(prompt)};
    int misplaced = (b[11] >> 3) & 1;
    static const char *TREES[] = {"1,1,1", "3,2,1", "2,2,2,2", "8,3"};
    if (r.mode == SPEC) {
        r.give_k = r.k != 0 || !(b[1] & 0x80);
        if (b[11] >> 4 >= 10) { // a tree: a model draft, the depth as K, the exact rule
            r.tree = TREES[((b[11] >> 4) - 10) % 4];
            r.give_k = 0, r.lenience = 0;
            if (r.drafter == LOOKUP || r.drafter == MEDUSA) r.drafter = SELF;
        }
    } else { // flags only spec mode takes: given (and then refused) only when asked
        r.give_k = misplaced && (b[1] & 1);
        if (!misplaced || !(b[5] & 1)) r.lenience = 0;
        r.give_d = misplaced || (r.drafter != LOOKUP && r.drafter != MEDUSA);
        if (!misplaced) r.verbose = 0;
        if (!misplaced && (r.drafter == LOOKUP || r.drafter == MEDUSA)) r.drafter = SELF;
    }
    run(&r, &res_a);
    struct stat st;
    if ((r.json == 3 && (stat(tok_path, &st) != 0 || st.st_size != tok_size)) ||
        (r.json == 2 && (lstat(json_link, &st) != 0 || !S_ISLNK(st.st_mode)))) {
        fprintf(stderr, "fuzz_e2e: -j through a link %s:\n", r.json == 3 ? "changed the input it names"
                                                                         : "replaced the link");
        print_command(stderr, &r);
        abort();
    }
    if (res_a.died) goto done;
    if (r.json) check_json(&r);

    // the second run: another K and thread count (-m draft: the draft's threads),
    // and the draft's threads, which never change the text either
    int threads = r.threads ? r.threads : usable;
    int draft_threads = r.draft_threads ? r.draft_threads : 1;
    if (r.mode == DRAFT && draft_threads < threads) threads = draft_threads;
    Run r2 = r;
    r2.verbose = r2.json = 0;
    r2.k = b[12] % (K_MAX + 1);
    if (r2.k == r.k) r2.k = (r2.k + 1) % (K_MAX + 1);
    r2.give_k = r.mode == SPEC && !r.tree;
    r2.threads = b[14] % 8 == 7 ? (threads == 3 ? 2 : 3) : threads == 1 ? 2 : 1;
    r2.draft_threads = r.mode == DRAFT ? r2.threads : 1 + (b[13] >> 4) % 3;
    if (r.mode != SPEC) {
        run(&r2, &res_b);
        same_text("the same command line on another thread count must print the same text", &r, &res_a, &r2, &res_b);
    } else if (r.t == 0.0f) {
        // greedy: the target's own text, whatever drafts, K or threads (r2 varies the threads)
        Run rt = {.mode = TARGET, .target = r.target, .t = 0, .top_p = r.top_p, .top_k = r.top_k,
                  .draft_weights = -1, .target_int8 = r.target_int8, .threads = r.threads, .n = r.n,
                  .seed = r.seed, .prompt = prompt,
                  .prompt_tokens = r.prompt_tokens};
        run(&rt, &res_b);
        same_text("at t = 0 the speculative text must be -m target's", &r, &res_a, &rt, &res_b);
        r2.drafter = (b[13] & 7) % N_DRAFTERS;
        if (r2.drafter == LOOKUP || r2.drafter == MEDUSA) r2.tree = NULL, r2.give_k = 1; // the chain: the same text
        if (b[13] & 8) r2.draft_weights = r.draft_weights == WEIGHTS_F32 ? WEIGHTS_INT8 : WEIGHTS_F32;
        run(&r2, &res_c);
        same_text("at t = 0 another K, thread count or drafter must print the same text", &r, &res_a, &r2, &res_c);
    } else {
        if (r.drafter == MEDUSA) r2.k = r.k, r2.give_k = r.give_k; // the same K
        Run again = r;
        again.verbose = again.json = 0;
        run(&again, &res_b);
        same_text("the same command line must print the same text twice", &r, &res_a, &again, &res_b);
        run(&r2, &res_c);
        same_text("another K and thread count must print the same text", &r, &res_a, &r2, &res_c);
    }
    if ((b[11] >> 2) & 1) { // -q: no text
        Run rq = r;
        rq.quiet = 1;
        rq.verbose = rq.json = 0;
        run(&rq, &res_b);
        if (res_b.len) {
            fprintf(stderr, "fuzz_e2e: -q printed text:\n");
            print_command(stderr, &rq);
            print_text("stdout", &res_b);
            abort();
        }
    }
done:
    fuzz_check_released(baseline);
    if (open_fds() > baseline_fds) {
        fprintf(stderr, "fuzz_e2e: %d file descriptors still open after an input; its first command line:\n",
                open_fds() - baseline_fds);
        print_command(stderr, &r);
        abort();
    }
    return 0;
}
