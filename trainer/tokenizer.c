// tokenizer.c - the first half of the trainer: the corpus (text files ->
// documents), byte-level BPE training in llama2.c's tokenizer.bin format,
// llama2.c's encoder, and the token streams ./train model reads.
//   ./train tokenizer   corpus -> tokenizer.bin
//   ./train data        corpus + tokenizer.bin -> token streams under runs/
//   ./train encode      token ids of a text file (for tests)
// train.c (the model trainer) includes this file.
#include "common.h"

// ----------------------------------------------------------------------------
// corpus: the text files -> documents of unwrapped paragraphs
//
// Books are hard-wrapped at ~70 columns with blank lines between paragraphs:
// lines of a paragraph are joined with spaces, paragraphs end with "\n", and
// two or more blank lines (chapter or book breaks) start a new document.
// Every document later gets a BOS token in front of it.

typedef enum {
    LAYOUT_BOOKS,     // wrapped paragraphs, 2+ blank lines between documents
    LAYOUT_ENDOFTEXT, // one paragraph per line, "<|endoftext|>" between stories
    LAYOUT_STORIES,   // one paragraph per blank-line block; a paragraph starting
                      // with story_start (e.g. "Once upon a time") starts a story
} Layout;

// One line of the sources file (trainer/sources.tsv: what the corpus is, as data).
typedef struct {
    char name[32];        // used by -mix; several files may share a name
    char file[256];       // inside the data directory (a path starting runs/: from the repo)
    Layout layout;
    char story_start[64]; // LAYOUT_STORIES only
    int val_every;        // every val_every-th document is held out (0: none)
    size_t never_tail;    // the paragraphs that start in the file's last never_tail bytes are
                          // never read: the held-out text of `train bpb` (docs/TRAINING.md)
} Source;

typedef struct {
    Source *s; // (n)
    size_t n;
} Sources;

// The yardstick's held-out text: paragraphs starting in the last 150,000 bytes
// of tinystories_valid_head.txt (its line in trainer/sources.tsv says so). No
// model of ours trains or tunes on it.
#define HELD_OUT_TAIL 150000

typedef struct {
    size_t off, len; // bytes of the document inside Corpus.text
    int copies;      // times it enters the training stream (0: held out or unused)
    int is_val;      // held out for validation
    int source;      // index into Corpus.sources
} Doc;

typedef struct {
    const Sources *sources; // where the documents came from
    CharBuf text;    // all documents back to back, each followed by '\0'
    Doc *docs;       // (n)
    size_t n, cap;
} Corpus;

static void corpus_add(Corpus *c, const char *s, size_t n, int source, int is_val, int copies) {
    grow((void **)&c->docs, &c->cap, c->n + 1, sizeof(Doc));
    c->docs[c->n++] = (Doc){.off = c->text.n, .len = n, .copies = copies, .is_val = is_val, .source = source};
    charbuf_add(&c->text, s, n);
    charbuf_add(&c->text, "", 1); // keeps documents NUL-separated
}

static void free_corpus(Corpus *c) {
    free(c->text.p);
    free(c->docs);
    memset(c, 0, sizeof(*c));
}

// Copies of document i for a mix weight w: floor(w), plus one more for a
// fraction frac(w) of the documents (spread by the golden ratio, deterministic).
static int copies_for(double w, size_t i) {
    double whole = floor(w), x = (double)i * 0.6180339887498949;
    return (int)whole + (x - floor(x) < w - whole);
}

// Does a (trimmed, non-blank) line start a new document of this source?
static int starts_document(const Source *s, const char *line, size_t n, int blank_run) {
    if (s->layout == LAYOUT_BOOKS) return blank_run >= 2;
    if (s->layout == LAYOUT_ENDOFTEXT) return n == 13 && !strncmp(line, "<|endoftext|>", 13);
    size_t k = strlen(s->story_start);
    return blank_run >= 1 && n >= k && !strncmp(line, s->story_start, k);
}

// End the document being built: every val_every-th is held out.
static void flush_document(Corpus *c, CharBuf *doc, int src, size_t *n_docs, double weight) {
    if (doc->n == 0) return;
    size_t every = (size_t)c->sources->s[src].val_every;
    int is_val = every && *n_docs % every == every / 2;
    corpus_add(c, doc->p, doc->n, src, is_val, is_val ? 0 : copies_for(weight, *n_docs));
    (*n_docs)++;
    doc->n = 0;
}

// The documents of one source file, unwrapped, into the corpus.
// Where the held-out tail begins: the first paragraph (after a blank line)
// starting at or after byte n - tail; n if tail is 0.
static size_t held_out_start(const char *text, size_t n, size_t tail) {
    if (tail == 0) return n;
    size_t i = n > tail ? n - tail : 0;
    while (i > 0 && i < n && !(text[i - 1] == '\n' && (i < 2 || text[i - 2] == '\n'))) i++;
    return i;
}

static void read_source(Corpus *c, const char *dir, int src, double weight) {
    const Source *s = &c->sources->s[src];
    char *path = strncmp(s->file, "runs/", 5) ? join_path(dir, s->file) : join_path(".", s->file);
    size_t n, n_docs = 0, j;
    char *text = read_file(path, &n);
    n = held_out_start(text, n, s->never_tail);
    CharBuf doc = {0};
    int blank_run = 0;
    for (size_t i = 0; i < n; i = j + 1) {
        for (j = i; j < n && text[j] != '\n'; j++) {}
        size_t a = i, b = j; // trim spaces, tabs and \r on both sides
        while (a < b && (text[a] == ' ' || text[a] == '\t' || text[a] == '\r')) a++;
        while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\t' || text[b - 1] == '\r')) b--;
        if (a == b) { blank_run++; continue; }
        int marker = s->layout == LAYOUT_ENDOFTEXT && starts_document(s, text + a, b - a, 0);
        if (starts_document(s, text + a, b - a, blank_run))
            flush_document(c, &doc, src, &n_docs, weight);
        else if (doc.n > 0) // a new paragraph ends the last with "\n"; wrapped lines join with " "
            charbuf_add(&doc, blank_run > 0 || s->layout == LAYOUT_ENDOFTEXT ? "\n" : " ", 1);
        if (!marker) charbuf_add(&doc, text + a, b - a);
        blank_run = 0;
    }
    flush_document(c, &doc, src, &n_docs, weight);
    free(doc.p);
    free(text);
    free(path);
}

// "children=1,tinystories=2" -> weight of each source name (unnamed: 0).
static double mix_weight(const char *mix, const char *name) {
    size_t nl = strlen(name);
    for (const char *p = mix; *p; ) {
        const char *eq = strchr(p, '='), *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        if (!eq || eq > end) die("-mix: expected name=weight in \"%s\" (e.g. children=1,tinystories=2)", mix);
        if ((size_t)(eq - p) == nl && !strncmp(p, name, nl)) {
            char *stop;
            double w = strtod(eq + 1, &stop);
            if (stop != end || w < 0 || w > 100) die("-mix: bad weight for %s in \"%s\" (0..100)", name, mix);
            return w;
        }
        p = *end ? end + 1 : end;
    }
    return 0;
}

// The sources file: one source per line, five tab-separated fields
//   name  file  layout  val_every  held_out_tail
// layout: books | endoftext | stories:PREFIX (a paragraph starting with PREFIX
// starts a story); '#' starts a comment line. Bad lines stop with file:line.
static void parse_source(Source *so, char **f, const char *path, int line) {
    const char *what[5] = {"name", "file", "layout", "val_every", "held_out_tail"};
    for (int i = 0; i < 5; i++)
        if (!f[i] || !*f[i]) die("%s:%d: field %d (%s) is missing; want 5 tab-separated fields", path, line, i + 1, what[i]);
    if (strlen(f[0]) >= sizeof(so->name) || strlen(f[1]) >= sizeof(so->file))
        die("%s:%d: name or file too long (at most %zu and %zu bytes)", path, line, sizeof(so->name) - 1, sizeof(so->file) - 1);
    memset(so, 0, sizeof(*so));
    strcpy(so->name, f[0]);
    strcpy(so->file, f[1]);
    if (!strcmp(f[2], "books")) so->layout = LAYOUT_BOOKS;
    else if (!strcmp(f[2], "endoftext")) so->layout = LAYOUT_ENDOFTEXT;
    else if (!strncmp(f[2], "stories:", 8) && f[2][8] && strlen(f[2] + 8) < sizeof(so->story_start)) {
        so->layout = LAYOUT_STORIES;
        strcpy(so->story_start, f[2] + 8);
    } else die("%s:%d: layout \"%s\": want books, endoftext or stories:PREFIX (e.g. stories:Once upon a time)", path, line, f[2]);
    char *end;
    long every = strtol(f[3], &end, 10);
    if (*end || every < 0 || every > 1000000) die("%s:%d: val_every \"%s\": want a whole number 0..1e6 (0: none held out)", path, line, f[3]);
    errno = 0;
    long tail = strtol(f[4], &end, 10);
    if (*end || tail < 0 || errno) die("%s:%d: held_out_tail \"%s\": want a byte count >= 0", path, line, f[4]);
    so->val_every = (int)every;
    so->never_tail = (size_t)tail;
}

static Sources read_sources(const char *path) {
    size_t n, cap = 0;
    char *text = read_file(path, &n), *save = NULL;
    Sources src = {.s = NULL, .n = 0};
    int line = 0;
    for (char *l = text; l && l < text + n; ) {
        char *next = strchr(l, '\n');
        if (next) *next++ = '\0';
        line++;
        if (*l && *l != '#') {
            char *f[5] = {0};
            f[0] = strtok_r(l, "\t", &save);
            for (int i = 1; i < 5; i++) f[i] = strtok_r(NULL, "\t", &save);
            if (strtok_r(NULL, "\t", &save)) die("%s:%d: more than 5 tab-separated fields", path, line);
            grow((void **)&src.s, &cap, src.n + 1, sizeof(Source));
            parse_source(&src.s[src.n++], f, path, line);
        }
        l = next;
    }
    free(text);
    if (src.n == 0) die("%s: no sources (lines of name, file, layout, val_every, held_out_tail)", path);
    return src;
}

// Does the sources table have a source called name[0..k)?
static int has_source(const Sources *src, const char *name, size_t k) {
    for (size_t s = 0; s < src->n; s++)
        if (strlen(src->s[s].name) == k && !strncmp(src->s[s].name, name, k)) return 1;
    return 0;
}

// Every source with a nonzero weight in `mix`; a zero-weight source is not read.
static void read_corpus(Corpus *c, const char *dir, const char *mix, const Sources *src) {
    c->sources = src;
    for (const char *p = mix; *p; p++) // every name in mix must be a source
        if ((p == mix || p[-1] == ',') && !has_source(src, p, strcspn(p, "=")))
            die("-mix: unknown source \"%.*s\" (the names in the sources file: -sources)", (int)strcspn(p, "="), p);
    for (size_t s = 0; s < src->n; s++) {
        const Source *so = &src->s[s];
        double w = mix_weight(mix, so->name);
        if (w <= 0) continue;
        char *path = strncmp(so->file, "runs/", 5) ? join_path(dir, so->file) : join_path(".", so->file);
        int have = file_exists(path), more = 0; // a source may span files; some may be absent
        for (size_t o = 0; o < src->n; o++)
            if (o != s && !strcmp(src->s[o].name, so->name)) more = 1;
        if (have) read_source(c, dir, (int)s, w);
        else if (more) fprintf(stderr, "note: %s not found; source \"%s\" uses its other files\n", path, so->name);
        else die("%s: cannot read source \"%s\"%s", path, so->name,
                 strncmp(so->file, "runs/", 5) ? "" : " (made by make; see the Makefile's trainer block)");
        free(path);
    }
    if (c->n == 0) die("no documents read from %s with -mix %s", dir, mix);
}

// ----------------------------------------------------------------------------
// string table: distinct byte strings -> ids (open addressing on FNV-1a)

typedef struct { size_t off; int len; } Span; // bytes [off, off+len) of a buffer

typedef struct {
    CharBuf bytes;   // all strings back to back
    Span *span;      // (n) where string i lies in bytes
    size_t n, cap;
    int *slot;       // (n_slots) string id or -1; n_slots a power of two
    size_t n_slots;
} StrTable;

static const char *strtable_str(const StrTable *t, int id) { return t->bytes.p + t->span[id].off; }
static int strtable_len(const StrTable *t, int id) { return t->span[id].len; }

// The slot holding string s, or the empty slot where it would go.
static size_t strtable_probe(const StrTable *t, const char *s, int len) {
    size_t mask = t->n_slots - 1, i = (size_t)fnv1a(s, (size_t)len) & mask;
    for (int id; (id = t->slot[i]) >= 0; i = (i + 1) & mask)
        if (t->span[id].len == len && !memcmp(strtable_str(t, id), s, (size_t)len)) break;
    return i;
}

// id of string s, or -1
static int strtable_find(const StrTable *t, const char *s, int len) {
    if (t->n_slots == 0) return -1;
    return t->slot[strtable_probe(t, s, len)];
}

static void strtable_rehash(StrTable *t, size_t n_slots) {
    free(t->slot);
    t->slot = xmalloc(n_slots * sizeof(int));
    t->n_slots = n_slots;
    for (size_t i = 0; i < n_slots; i++) t->slot[i] = -1;
    for (size_t id = 0; id < t->n; id++)
        t->slot[strtable_probe(t, strtable_str(t, (int)id), t->span[id].len)] = (int)id;
}

// id of string s, added if new
static int strtable_add(StrTable *t, const char *s, int len) {
    if (2 * (t->n + 1) > t->n_slots) strtable_rehash(t, t->n_slots ? 2 * t->n_slots : 1024);
    size_t i = strtable_probe(t, s, len);
    if (t->slot[i] >= 0) return t->slot[i];
    grow((void **)&t->span, &t->cap, t->n + 1, sizeof(Span));
    t->span[t->n] = (Span){.off = t->bytes.n, .len = len};
    charbuf_add(&t->bytes, s, (size_t)len);
    t->slot[i] = (int)t->n;
    return (int)t->n++;
}

static void free_strtable(StrTable *t) {
    free(t->bytes.p);
    free(t->span);
    free(t->slot);
    memset(t, 0, sizeof(*t));
}

// ----------------------------------------------------------------------------
// vocabulary: token strings with llama2.c scores (higher = merged earlier)

typedef struct {
    StrTable str;  // token id -> string, and back
    float *score;  // (str.n)
    size_t cap;
} Vocab;

static int vocab_add(Vocab *v, const char *s, int len, float score) {
    size_t before = v->str.n;
    int id = strtable_add(&v->str, s, len);
    if (v->str.n == before) die("tokenizer: duplicate token \"%.*s\"", len, s);
    grow((void **)&v->score, &v->cap, v->str.n, sizeof(float));
    v->score[id] = score;
    return id;
}

static void free_vocab(Vocab *v) {
    free_strtable(&v->str);
    free(v->score);
    memset(v, 0, sizeof(*v));
}

// The 259 fixed tokens: <unk>, BOS, EOS and the byte-fallback tokens.
static void vocab_add_special(Vocab *v) {
    vocab_add(v, "<unk>", 5, 0.0f);
    vocab_add(v, "\n<s>\n", 5, 0.0f);
    vocab_add(v, "\n</s>\n", 6, 0.0f);
    for (int b = 0; b < 256; b++) {
        char s[8];
        snprintf(s, sizeof(s), "<0x%02X>", b);
        vocab_add(v, s, 6, 0.0f);
    }
}

// llama2.c's tokenizer.bin: int32 max_token_length, then per token float
// score, int32 length, bytes. Only the first n_vocab tokens are written.
// Written to the planned output o, whole or not at all.
static void write_tokenizer(OutputFile *o, const Vocab *v, int n_vocab) {
    int32_t max_len = 0;
    for (int i = 0; i < n_vocab; i++)
        if (strtable_len(&v->str, i) > max_len) max_len = strtable_len(&v->str, i);
    FILE *f = begin_or_die(o);
    xfwrite(&max_len, sizeof(max_len), 1, f, o->name);
    for (int i = 0; i < n_vocab; i++) {
        int32_t len = strtable_len(&v->str, i);
        xfwrite(&v->score[i], sizeof(float), 1, f, o->name);
        xfwrite(&len, sizeof(len), 1, f, o->name);
        xfwrite(strtable_str(&v->str, i), 1, (size_t)len, f, o->name);
    }
    commit_or_die(o);
}

// walk_tokenizer's visit: add token i to the vocabulary
static void add_token(void *ctx, int i, float score, const unsigned char *bytes, int len) {
    (void)i;
    vocab_add(ctx, (const char *)bytes, len, score);
}

// Reads every token in the file (its vocabulary size is not stored), with
// model.h's record walker: the same checks specdec makes.
static void read_tokenizer(Vocab *v, const char *path) {
    size_t n;
    char *buf = read_file(path, &n), msg[256];
    int32_t max_len;
    if (walk_tokenizer((const unsigned char *)buf, n, &max_len, add_token, v, msg, sizeof(msg)) < 0)
        die("%s: %s", path, msg);
    free(buf);
    if (v->str.n < 259 + 96) die("%s: only %zu tokens; expected the 259 fixed ones, printable "
                                 "ASCII and merges (made by ./train tokenizer?)", path, v->str.n);
}

// ----------------------------------------------------------------------------
// pretokens: where BPE training may not merge across
//
// Training counts words cut by these rules so merges stay inside
// [space]word, [space]digits, [space]punctuation, runs of spaces and runs of
// newlines; a word may contain apostrophes between letters (don't, Alice's).
// Encoding does NOT use these cuts: it is llama2.c's merge-by-score over the
// whole text (see encode below), so what training saw and what specdec sees
// are the same tokens.

enum { CH_LETTER, CH_DIGIT, CH_SPACE, CH_NEWLINE, CH_PUNCT };

// Length of the UTF-8 piece at s the way llama2.c's encoder cuts text: one
// byte plus up to 3 continuation bytes (10xxxxxx).
static size_t utf8_piece_len(const unsigned char *s, size_t n) {
    size_t k = 1;
    while (k < n && k < 4 && (s[k] & 0xC0) == 0x80) k++;
    return k;
}

static uint32_t utf8_decode(const unsigned char *s, size_t k) {
    if (k == 1) return s[0];
    uint32_t cp = s[0] & (0x7Fu >> k);
    for (size_t i = 1; i < k; i++) cp = cp << 6 | (s[i] & 0x3Fu);
    return cp;
}

static int char_class(uint32_t cp) {
    if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return CH_LETTER;
    if (cp >= '0' && cp <= '9') return CH_DIGIT;
    if (cp == ' ') return CH_SPACE;
    if (cp < 0x20 || cp == 0x7F) return CH_NEWLINE; // \n, \t, controls
    // Latin-1 letters and beyond count as letters, except the x and division
    // signs and the general punctuation block (dashes, curly quotes, ...)
    if (cp >= 0xC0 && cp != 0xD7 && cp != 0xF7 && !(cp >= 0x2000 && cp <= 0x206F)) return CH_LETTER;
    return CH_PUNCT;
}

static int class_at(const unsigned char *s, size_t n, size_t *k) {
    *k = utf8_piece_len(s, n);
    return char_class(utf8_decode(s, *k));
}

static int is_apostrophe(const unsigned char *s, size_t n) {
    return s[0] == '\'' || (n >= 3 && s[0] == 0xE2 && s[1] == 0x80 && s[2] == 0x99);
}

// Byte length of the pretoken starting at s (n > 0 bytes left).
static size_t pretoken_len(const unsigned char *s, size_t n) {
    size_t k, k2, i = 0;
    int cls = class_at(s, n, &k);
    if (cls == CH_SPACE) {
        size_t run = 1;
        while (run < n && s[run] == ' ') run++;
        int next = run < n ? class_at(s + run, n - run, &k2) : CH_NEWLINE;
        if (next == CH_SPACE || next == CH_NEWLINE) return run;
        if (run > 1) return run - 1; // the last space goes with the word after it
        i = 1;
        cls = next;
    }
    while (i < n) {
        int c = class_at(s + i, n - i, &k);
        if (c == cls) { i += k; continue; }
        if (cls == CH_LETTER && i > 0 && is_apostrophe(s + i, n - i) && i + k < n &&
            class_at(s + i + k, n - i - k, &k2) == CH_LETTER) { i += k + k2; continue; }
        break;
    }
    return i ? i : k;
}

// ----------------------------------------------------------------------------
// BPE training: count pretokens, start from characters, merge the most
// frequent adjacent pair until the vocabulary is full
//
// Base tokens after the 259 fixed ones: "\n", printable ASCII, then the
// frequent non-ASCII characters (curly quotes, dashes, accented letters):
// llama2.c's encoder looks whole UTF-8 characters up before merging, so a
// character without its own token falls back to bytes, which never merge.
// Merged token k (k = 0, 1, ...) gets score -(k+1): llama2.c's encoder, which
// repeatedly merges the adjacent pair with the highest-scoring concatenation,
// then replays the merges in the order they were learned.

#define FIRST_CHAR_TOKEN (TOKEN_BYTE0 + 256)
#define MAX_EXTRA_CHARS 64

typedef struct {
    StrTable words;  // distinct pretokens
    double *count;   // (words.n) weighted occurrences
    size_t cap;
} WordCounts;

static void count_words(WordCounts *wc, const char *s, size_t n, double weight) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n; ) {
        size_t k = pretoken_len(u + i, n - i);
        int id = strtable_add(&wc->words, s + i, (int)k);
        grow((void **)&wc->count, &wc->cap, wc->words.n, sizeof(double));
        if ((size_t)id + 1 == wc->words.n) wc->count[id] = 0;
        wc->count[id] += weight;
        i += k;
    }
}

// Pretokens of every training document, each with llama2.c's dummy-prefix " ".
static void count_corpus_words(WordCounts *wc, const Corpus *c) {
    CharBuf tmp = {0};
    for (size_t d = 0; d < c->n; d++) {
        if (c->docs[d].copies == 0) continue;
        tmp.n = 0;
        charbuf_add(&tmp, " ", 1);
        charbuf_add(&tmp, c->text.p + c->docs[d].off, c->docs[d].len);
        count_words(wc, tmp.p, tmp.n, c->docs[d].copies);
    }
    free(tmp.p);
}

// Non-ASCII characters that get their own token: the typographic ones always,
// others if at least one in a million characters, most frequent first.
static int pick_extra_chars(const WordCounts *wc, uint32_t *out) {
    static const uint32_t always[] = {0x2018, 0x2019, 0x201C, 0x201D, 0x2014, 0x2013, 0x2026};
    enum { N_ALWAYS = sizeof(always) / sizeof(always[0]) };
    double *freq = xcalloc(0x110000, sizeof(double)); // per code point (8.9 MB)
    double total = 0;
    for (size_t w = 0; w < wc->words.n; w++) {
        const unsigned char *s = (const unsigned char *)strtable_str(&wc->words, (int)w);
        for (size_t i = 0, n = (size_t)strtable_len(&wc->words, (int)w), k; i < n; i += k) {
            k = utf8_piece_len(s + i, n - i);
            uint32_t cp = utf8_decode(s + i, k);
            total += wc->count[w];
            if (k > 1 && cp < 0x110000) freq[cp] += wc->count[w];
        }
    }
    int n = 0;
    for (int i = 0; i < N_ALWAYS; i++) { out[n++] = always[i]; freq[always[i]] = 0; }
    while (n < MAX_EXTRA_CHARS) { // selection by max: few picks, simple
        uint32_t best = 0;
        for (uint32_t cp = 0x80; cp < 0x110000; cp++) if (freq[cp] > freq[best]) best = cp;
        if (best == 0 || freq[best] < 1e-6 * total) break;
        out[n++] = best;
        freq[best] = 0;
    }
    free(freq);
    return n;
}

static int utf8_encode(uint32_t cp, char *s) {
    if (cp < 0x80) { s[0] = (char)cp; return 1; }
    if (cp < 0x800) { s[0] = (char)(0xC0 | cp >> 6); s[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        s[0] = (char)(0xE0 | cp >> 12); s[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        s[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    s[0] = (char)(0xF0 | cp >> 18); s[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    s[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); s[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

// Fixed tokens, "\n", printable ASCII and the picked characters.
static void vocab_add_chars(Vocab *v, const uint32_t *extra, int n_extra) {
    vocab_add(v, "\n", 1, 0.0f);
    for (char ch = ' '; ch <= '~'; ch++) vocab_add(v, &ch, 1, 0.0f);
    for (int i = 0; i < n_extra; i++) {
        char s[4];
        vocab_add(v, s, utf8_encode(extra[i], s), 0.0f);
    }
}

// Pair counts: (a,b) token pair -> weighted occurrences, open addressing.
typedef struct {
    uint64_t *key;   // (n_slots) a << 32 | b, or UINT64_MAX when empty
    double *count;   // (n_slots)
    size_t n, n_slots;
} PairCounts;

static size_t pair_slot(const PairCounts *p, uint64_t key) {
    size_t mask = p->n_slots - 1, i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & mask;
    while (p->key[i] != UINT64_MAX && p->key[i] != key) i = (i + 1) & mask;
    return i;
}

static void pair_add(PairCounts *p, int a, int b, double delta) {
    if (2 * (p->n + 1) > p->n_slots) { // grow and reinsert
        PairCounts q = {.key = xmalloc(2 * p->n_slots * 8), .count = xcalloc(2 * p->n_slots, 8),
                        .n = 0, .n_slots = 2 * p->n_slots};
        for (size_t i = 0; i < q.n_slots; i++) q.key[i] = UINT64_MAX;
        for (size_t i = 0; i < p->n_slots; i++)
            if (p->key[i] != UINT64_MAX && p->count[i] > 0) {
                size_t j = pair_slot(&q, p->key[i]);
                q.key[j] = p->key[i];
                q.count[j] = p->count[i];
                q.n++;
            }
        free(p->key); free(p->count);
        *p = q;
    }
    uint64_t key = (uint64_t)a << 32 | (uint32_t)b;
    size_t i = pair_slot(p, key);
    if (p->key[i] == UINT64_MAX) { p->key[i] = key; p->n++; }
    p->count[i] += delta;
}

// One pretoken as token ids, its weight, during training.
typedef struct { int *sym; int n; double count; } Word;

static int mergeable(int id) { return id >= FIRST_CHAR_TOKEN; }

static void word_pairs(PairCounts *p, const Word *w, double sign) {
    for (int i = 0; i + 1 < w->n; i++)
        if (mergeable(w->sym[i]) && mergeable(w->sym[i + 1]))
            pair_add(p, w->sym[i], w->sym[i + 1], sign * w->count);
}

// A pretoken's characters as base tokens; others become byte tokens.
static Word word_symbols(const Vocab *v, const char *s, int n, double count) {
    Word w = {.sym = xmalloc((size_t)n * sizeof(int)), .n = 0, .count = count};
    for (int i = 0, k; i < n; i += k) {
        k = (int)utf8_piece_len((const unsigned char *)s + i, (size_t)(n - i));
        int id = strtable_find(&v->str, s + i, k);
        if (id >= FIRST_CHAR_TOKEN) w.sym[w.n++] = id;
        else for (int j = 0; j < k; j++) w.sym[w.n++] = TOKEN_BYTE0 + (unsigned char)s[i + j];
    }
    return w;
}

// Replace every (a,b) in w by t, left to right.
static void word_merge(Word *w, int a, int b, int t) {
    int o = 0;
    for (int i = 0; i < w->n; i++) {
        if (i + 1 < w->n && w->sym[i] == a && w->sym[i + 1] == b) { w->sym[o++] = t; i++; }
        else w->sym[o++] = w->sym[i];
    }
    w->n = o;
}

static int word_has_pair(const Word *w, int a, int b) {
    for (int i = 0; i + 1 < w->n; i++) if (w->sym[i] == a && w->sym[i + 1] == b) return 1;
    return 0;
}

// The most frequent pair (ties: smallest a, then b); count 0 if none.
static double best_pair(const PairCounts *p, int *a, int *b) {
    double best = 0;
    uint64_t best_key = UINT64_MAX;
    for (size_t i = 0; i < p->n_slots; i++) {
        if (p->key[i] == UINT64_MAX) continue;
        if (p->count[i] > best || (p->count[i] == best && best > 0 && p->key[i] < best_key)) {
            best = p->count[i];
            best_key = p->key[i];
        }
    }
    *a = (int)(best_key >> 32);
    *b = (int)(best_key & 0xFFFFFFFFu);
    return best;
}

// Merge pairs until the vocabulary has n_vocab tokens (or nothing repeats).
static void bpe_merge(Vocab *v, Word *words, size_t n_words, int n_vocab) {
    PairCounts pc = {.key = xmalloc(1024 * 8), .count = xcalloc(1024, 8), .n = 0, .n_slots = 1024};
    for (size_t i = 0; i < pc.n_slots; i++) pc.key[i] = UINT64_MAX;
    for (size_t w = 0; w < n_words; w++) word_pairs(&pc, &words[w], +1);
    char buf[512];
    for (int rank = 0; (int)v->str.n < n_vocab; rank++) {
        int a, b;
        if (best_pair(&pc, &a, &b) < 2) {
            fprintf(stderr, "tokenizer: no pair repeats after %zu tokens; stopping early\n", v->str.n);
            break;
        }
        int la = strtable_len(&v->str, a), lb = strtable_len(&v->str, b);
        if (la + lb > (int)sizeof(buf)) die("tokenizer: token longer than %zu bytes", sizeof(buf));
        memcpy(buf, strtable_str(&v->str, a), (size_t)la);
        memcpy(buf + la, strtable_str(&v->str, b), (size_t)lb);
        int t = strtable_find(&v->str, buf, la + lb); // another pair may have made it already
        if (t < 0) t = vocab_add(v, buf, la + lb, -(float)(rank + 1));
        if (!mergeable(t)) die("tokenizer: the text spells the fixed token \"%s\"; remove it", buf);
        for (size_t w = 0; w < n_words; w++) {
            if (words[w].n < 2 || !word_has_pair(&words[w], a, b)) continue;
            word_pairs(&pc, &words[w], -1);
            word_merge(&words[w], a, b, t);
            word_pairs(&pc, &words[w], +1);
        }
    }
    free(pc.key);
    free(pc.count);
}

// The whole tokenizer from the training documents of a corpus.
static void train_tokenizer(Vocab *v, const Corpus *c, int n_vocab) {
    WordCounts wc = {0};
    count_corpus_words(&wc, c);
    uint32_t extra[MAX_EXTRA_CHARS];
    int n_extra = pick_extra_chars(&wc, extra);
    vocab_add_special(v);
    vocab_add_chars(v, extra, n_extra);
    if (n_vocab < (int)v->str.n) die("-v %d: the base tokens alone are %zu", n_vocab, v->str.n);
    Word *words = xmalloc(wc.words.n * sizeof(Word));
    for (size_t w = 0; w < wc.words.n; w++)
        words[w] = word_symbols(v, strtable_str(&wc.words, (int)w), strtable_len(&wc.words, (int)w), wc.count[w]);
    fprintf(stderr, "tokenizer: %zu distinct pretokens, %zu base tokens\n", wc.words.n, v->str.n);
    bpe_merge(v, words, wc.words.n, n_vocab);
    for (size_t w = 0; w < wc.words.n; w++) free(words[w].sym);
    free(words);
    free_strtable(&wc.words);
    free(wc.count);
}

// ----------------------------------------------------------------------------
// encoding: llama2.c's algorithm, exactly, in O(n log n)
//
// llama2.c cuts the text into UTF-8 characters (a character without a token
// becomes byte tokens), then repeatedly merges the adjacent pair whose
// concatenation is a token with the highest score, the leftmost one on ties.
// A heap of candidate pairs ordered by (score desc, position asc) gives the
// same merges; an entry whose two symbols changed after it was pushed is
// stale and skipped (the new neighbours were pushed when they changed).

typedef struct { int prev, next; } Link;

typedef struct {
    float score;        // of the merged token
    int pos;            // index of the left symbol (positions keep text order)
    int left, right;    // the symbols' tokens when pushed
    int token;          // their merge
} Candidate;

typedef struct {
    const Vocab *v;
    int n_vocab;        // tokens >= n_vocab are ignored: encodes with a vocab prefix
    int *sym;           // (cap_sym) token of each symbol, -1 once merged into its left
    Link *link;         // (cap_link) live symbols as a linked list, -1 at the ends
    size_t cap_sym, cap_link;
    Candidate *heap;    // (n_heap) binary heap, best first
    size_t n_heap, cap_heap;
    char *buf;          // (2 * longest token) concatenation scratch
} Encoder;

static void build_encoder(Encoder *e, const Vocab *v, int n_vocab) {
    memset(e, 0, sizeof(*e));
    e->v = v;
    e->n_vocab = n_vocab;
    int longest = 1;
    for (int i = 0; i < n_vocab; i++)
        if (strtable_len(&v->str, i) > longest) longest = strtable_len(&v->str, i);
    e->buf = xmalloc(2 * (size_t)longest);
}

static void free_encoder(Encoder *e) {
    free(e->sym); free(e->link); free(e->heap); free(e->buf);
    memset(e, 0, sizeof(*e));
}

static int encoder_find(const Encoder *e, const char *s, int len) {
    int id = strtable_find(&e->v->str, s, len);
    return id < e->n_vocab ? id : -1;
}

static int candidate_before(const Candidate *x, const Candidate *y) {
    return x->score > y->score || (x->score == y->score && x->pos < y->pos);
}

static void heap_push(Encoder *e, Candidate c) {
    grow((void **)&e->heap, &e->cap_heap, e->n_heap + 1, sizeof(Candidate));
    size_t i = e->n_heap++;
    for (; i > 0 && candidate_before(&c, &e->heap[(i - 1) / 2]); i = (i - 1) / 2)
        e->heap[i] = e->heap[(i - 1) / 2];
    e->heap[i] = c;
}

static Candidate heap_pop(Encoder *e) {
    Candidate top = e->heap[0], last = e->heap[--e->n_heap];
    size_t i = 0, n = e->n_heap;
    for (size_t c; (c = 2 * i + 1) < n; i = c) {
        if (c + 1 < n && candidate_before(&e->heap[c + 1], &e->heap[c])) c++;
        if (!candidate_before(&e->heap[c], &last)) break;
        e->heap[i] = e->heap[c];
    }
    if (n > 0) e->heap[i] = last;
    return top;
}

// Push the pair (symbol i, its right neighbour) if their concatenation is a token.
static void push_pair(Encoder *e, int i) {
    if (i < 0 || e->link[i].next < 0) return;
    int j = e->link[i].next;
    const StrTable *t = &e->v->str;
    int a = e->sym[i], b = e->sym[j], la = strtable_len(t, a), lb = strtable_len(t, b);
    memcpy(e->buf, strtable_str(t, a), (size_t)la);
    memcpy(e->buf + la, strtable_str(t, b), (size_t)lb);
    int id = encoder_find(e, e->buf, la + lb);
    if (id >= 0) heap_push(e, (Candidate){e->v->score[id], i, a, b, id});
}

// Cut text into characters as llama2.c does: a character's token, else its bytes.
static int encoder_symbols(Encoder *e, const char *text, size_t n, int dummy_prefix) {
    grow((void **)&e->sym, &e->cap_sym, n + 1, sizeof(int));
    int ns = 0;
    if (dummy_prefix && n > 0) {
        int sp = encoder_find(e, " ", 1);
        if (sp < 0) die("tokenizer has no \" \" token for llama2.c's dummy prefix");
        e->sym[ns++] = sp;
    }
    for (size_t i = 0, k; i < n; i += k) {
        k = utf8_piece_len((const unsigned char *)text + i, n - i);
        int id = encoder_find(e, text + i, (int)k);
        if (id >= 0) e->sym[ns++] = id;
        else for (size_t j = 0; j < k; j++) e->sym[ns++] = TOKEN_BYTE0 + (unsigned char)text[i + j];
    }
    return ns;
}

// Append the tokens of text to out (no BOS). dummy_prefix: llama2.c's leading " ".
static void encode(Encoder *e, const char *text, size_t n, int dummy_prefix, IntBuf *out) {
    int ns = encoder_symbols(e, text, n, dummy_prefix);
    grow((void **)&e->link, &e->cap_link, (size_t)ns, sizeof(Link));
    for (int i = 0; i < ns; i++) e->link[i] = (Link){i - 1, i + 1 < ns ? i + 1 : -1};
    e->n_heap = 0;
    for (int i = 0; i + 1 < ns; i++) push_pair(e, i);
    while (e->n_heap > 0) {
        Candidate c = heap_pop(e);
        int i = c.pos, j = e->link[i].next;
        if (e->sym[i] != c.left || j < 0 || e->sym[j] != c.right) continue; // stale
        e->sym[i] = c.token;
        e->sym[j] = -1;
        e->link[i].next = e->link[j].next;
        if (e->link[j].next >= 0) e->link[e->link[j].next].prev = i;
        push_pair(e, e->link[i].prev);
        push_pair(e, i);
    }
    for (int i = ns > 0 ? 0 : -1; i >= 0; i = e->link[i].next) intbuf_push(out, e->sym[i]);
}

// BOS, then the document's tokens with llama2.c's dummy prefix, as specdec sees a prompt.
static void encode_document(Encoder *e, const char *text, size_t len, IntBuf *out) {
    intbuf_push(out, TOKEN_BOS);
    encode(e, text, len, 1, out);
}

// Append one training copy of a document: whole (BOS + story), or split, every
// paragraph its own BOS-started document. A text need not begin a story: a
// prompt, or the yardstick's paragraphs (scored from BOS), often start mid-story,
// and a model that only ever saw "Once upon a time" after BOS pays for it.
static void push_copy(IntBuf *dst, Encoder *e, const char *text, size_t len, const IntBuf *whole, int split) {
    if (!split) {
        for (size_t i = 0; i < whole->n; i++) intbuf_push(dst, whole->p[i]);
        return;
    }
    for (size_t a = 0, b; a < len; a = b + 1) {
        for (b = a; b < len && text[b] != '\n'; b++) {}
        if (b > a) encode_document(e, text + a, b - a, dst);
    }
}

// Is copy k of document d split into paragraphs? A fraction `frac` of all
// copies, spread by the golden ratio (deterministic, like copies_for).
static int split_copy(double frac, size_t d, int k) {
    double x = ((double)d * 4.0 + k) * 0.6180339887498949;
    return x - floor(x) < frac;
}

// ----------------------------------------------------------------------------
// token streams: BOS + tokens of each document, as uint16 files under runs/
//   8 bytes "SDTOKENS", int32 vocab_size, int32 0, uint64 n, then n x uint16

typedef struct {
    uint16_t *tok;  // (n)
    size_t n;
    int vocab_size;
} Tokens;

// A token file (./train data): "SDTOKENS", int32 vocab_size, int32 0, uint64
// n, then n uint16 tokens; written to the planned output o, whole or not at all.
static void write_tokens_to(OutputFile *o, const IntBuf *t, int vocab_size) {
    FILE *f = begin_or_die(o);
    int32_t hdr[2] = {vocab_size, 0};
    uint64_t n = t->n;
    xfwrite("SDTOKENS", 1, 8, f, o->name);
    xfwrite(hdr, sizeof(hdr), 1, f, o->name);
    xfwrite(&n, sizeof(n), 1, f, o->name);
    uint16_t *u = xmalloc(t->n * sizeof(uint16_t));
    for (size_t i = 0; i < t->n; i++) u[i] = (uint16_t)t->p[i];
    xfwrite(u, sizeof(uint16_t), t->n, f, o->name);
    free(u);
    commit_or_die(o);
}

#define TOKENS_HEADER_BYTES 24

// Read a token file, checked: its count against the file's size before
// anything is sized by it, and every token < vocab_size.
static Tokens read_tokens(const char *path) {
    FILE *f = xfopen_in(path);
    char magic[8];
    int32_t hdr[2];
    uint64_t n;
    struct stat st;
    if (fstat(fileno(f), &st) != 0) die("%s: cannot stat: %s", path, strerror(errno));
    xfread(magic, 1, 8, f, path, "the magic");
    if (memcmp(magic, "SDTOKENS", 8)) die("%s: not a token file (made by ./train data)", path);
    xfread(hdr, sizeof(hdr), 1, f, path, "the header");
    xfread(&n, sizeof(n), 1, f, path, "the token count");
    if (hdr[0] < 259 || hdr[0] > 65536) die("%s: vocab_size %d out of range", path, (int)hdr[0]);
    uint64_t body = (uint64_t)st.st_size - TOKENS_HEADER_BYTES; // >= 0: the header was read
    if (n != body / sizeof(uint16_t) || body % sizeof(uint16_t))
        die("%s: its header says %llu tokens, but %llu bytes follow the %d-byte header: truncated or not this "
            "format", path, (unsigned long long)n, (unsigned long long)body, TOKENS_HEADER_BYTES);
    Tokens t = {.tok = xmalloc((size_t)n * sizeof(uint16_t)), .n = (size_t)n, .vocab_size = hdr[0]};
    xfread(t.tok, sizeof(uint16_t), t.n, f, path, "the tokens");
    fclose(f);
    for (size_t i = 0; i < t.n; i++)
        if (t.tok[i] >= t.vocab_size) die("%s: token %zu is %d >= vocab_size %d", path, i, t.tok[i], t.vocab_size);
    return t;
}

// ----------------------------------------------------------------------------
// ./train tokenizer, data, encode (left out under TESTING)
#ifndef TESTING

#define DEFAULT_DATA "../shared/data/corpus"
#define DEFAULT_MIX "tinystories=4,children=1,synthetic=1" // docs/TRAINING.md
#define DEFAULT_SOURCES "trainer/sources.tsv"


// Bytes per token of the held-out documents, per source, with the first n_vocab tokens.
static void report_compression(const Vocab *v, const Corpus *c, int n_vocab) {
    Encoder e;
    build_encoder(&e, v, n_vocab);
    size_t ns = c->sources->n;
    double *bytes = xcalloc(ns, sizeof(double)), *toks = xcalloc(ns, sizeof(double)), all_b = 0, all_t = 0;
    IntBuf out = {0};
    for (size_t d = 0; d < c->n; d++) {
        if (!c->docs[d].is_val) continue;
        out.n = 0;
        encode(&e, c->text.p + c->docs[d].off, c->docs[d].len, 1, &out);
        bytes[c->docs[d].source] += (double)c->docs[d].len;
        toks[c->docs[d].source] += (double)out.n;
    }
    printf("vocab %5d: held-out bytes/token", n_vocab);
    for (size_t s = 0; s < ns; s++)
        if (toks[s] > 0) {
            printf("  %s %.3f", c->sources->s[s].file, bytes[s] / toks[s]);
            all_b += bytes[s];
            all_t += toks[s];
        }
    printf("  all %.3f (%.0f tokens)\n", all_b / all_t, all_t);
    free(bytes); free(toks);
    free(out.p);
    free_encoder(&e);
}

static int cmd_tokenizer(int argc, char **argv) {
    const char *data = DEFAULT_DATA, *mix = DEFAULT_MIX, *out = "tokenizer.bin", *sizes = NULL,
               *sources = DEFAULT_SOURCES;
    int vocab = 2048;
    Opt opts[] = {
        {"-d", 's', &data, "corpus directory"},
        {"-sources", 's', &sources, "the corpus's files, layouts and held-out rules (tab-separated)"},
        {"-mix", 's', &mix, "source weights (children, tinystories, novels)"},
        {"-v", 'i', &vocab, "vocabulary size written"},
        {"-o", 's', &out, "output tokenizer.bin"},
        {"-sizes", 's', &sizes, "also report held-out bytes/token at these sizes, e.g. 512,1024,4096"},
    };
    parse_opts(argc, argv, "tokenizer", "byte-level BPE -> llama2.c tokenizer.bin", opts, sizeof(opts) / sizeof(opts[0]));
    IntBuf sz = {0};
    if (sizes) parse_int_list(&sz, sizes, "-sizes");
    intbuf_push(&sz, vocab);
    int most = 0;
    for (size_t i = 0; i < sz.n; i++) most = sz.p[i] > most ? sz.p[i] : most;
    if (most > 65536) die("-v/-sizes: at most 65536 tokens (uint16 token files)");
    OutputFile o;
    plan_or_die(&o, out);
    Corpus c = {0};
    Sources src = read_sources(sources);
    read_corpus(&c, data, mix, &src);
    double t0 = now_seconds();
    Vocab v = {0};
    train_tokenizer(&v, &c, most);
    printf("tokenizer: %zu tokens trained in %.1f s\n", v.str.n, now_seconds() - t0);
    if ((size_t)vocab > v.str.n) vocab = (int)v.str.n;
    write_tokenizer(&o, &v, vocab);
    printf("wrote %s (%d tokens)\n", out, vocab);
    for (size_t i = 0; i < sz.n; i++) if ((size_t)sz.p[i] <= v.str.n) report_compression(&v, &c, sz.p[i]);
    free(sz.p);
    free_vocab(&v);
    free_corpus(&c);
    free(src.s);
    return 0;
}

// ----------------------------------------------------------------------------
// ./train data

static int cmd_data(int argc, char **argv) {
    const char *data = DEFAULT_DATA, *mix = DEFAULT_MIX, *tok = "tokenizer.bin", *out = "runs/data",
               *sources = DEFAULT_SOURCES;
    float paragraphs = 0;
    Opt opts[] = {
        {"-d", 's', &data, "corpus directory"},
        {"-sources", 's', &sources, "the corpus's files, layouts and held-out rules (tab-separated)"},
        {"-mix", 's', &mix, "source weights: copies of each document (fractions: some get one more)"},
        {"-z", 's', &tok, "tokenizer.bin"},
        {"-o", 's', &out, "output directory for train.bin and val.bin"},
        {"-paragraphs", 'f', &paragraphs, "fraction of the stories' training copies split into "
                                          "paragraphs, each after its own BOS (0..1)"},
    };
    parse_opts(argc, argv, "data", "corpus -> token streams for ./train model", opts, sizeof(opts) / sizeof(opts[0]));
    if (!(paragraphs >= 0 && paragraphs <= 1)) die("data: -paragraphs %g: expected a fraction 0..1", (double)paragraphs);
    make_dir(out);
    char *tp = join_path(out, "train.bin"), *vp = join_path(out, "val.bin");
    OutputFile to, vo;
    plan_or_die(&to, tp);
    plan_or_die(&vo, vp);
    Vocab v = {0};
    read_tokenizer(&v, tok);
    Corpus c = {0};
    Sources src = read_sources(sources);
    read_corpus(&c, data, mix, &src);
    Encoder e;
    build_encoder(&e, &v, (int)v.str.n);
    IntBuf train = {0}, val = {0}, one = {0};
    double bytes[2] = {0, 0};
    for (size_t d = 0; d < c.n; d++) {
        const Doc *doc = &c.docs[d];
        one.n = 0;
        if (doc->is_val || doc->copies > 0) encode_document(&e, c.text.p + doc->off, doc->len, &one);
        IntBuf *dst = doc->is_val ? &val : &train;
        int copies = doc->is_val ? 1 : doc->copies;
        int story = src.s[doc->source].layout != LAYOUT_BOOKS;
        for (int k = 0; k < copies; k++) {
            int split = story && !doc->is_val && split_copy(paragraphs, d, k);
            push_copy(dst, &e, c.text.p + doc->off, doc->len, &one, split);
            bytes[doc->is_val] += (double)doc->len;
        }
    }
    write_tokens_to(&to, &train, (int)v.str.n);
    write_tokens_to(&vo, &val, (int)v.str.n);
    printf("%s: %zu tokens (%.2f bytes/token)\n%s: %zu tokens (%.2f bytes/token)\n", tp, train.n,
           bytes[0] / (double)train.n, vp, val.n, bytes[1] / (double)val.n);
    free(tp); free(vp); free(train.p); free(val.p); free(one.p);
    free_encoder(&e);
    free_corpus(&c);
    free(src.s);
    free_vocab(&v);
    return 0;
}

// Print the ids of a text file's tokens, BOS first, as specdec feeds a prompt.
static int cmd_encode(int argc, char **argv) {
    const char *tok = "tokenizer.bin", *file = NULL;
    Opt opts[] = {{"-z", 's', &tok, "tokenizer.bin"}, {"-f", 's', &file, "text file"}};
    parse_opts(argc, argv, "encode", "token ids of a text (tests)", opts, sizeof(opts) / sizeof(opts[0]));
    if (!file) die("encode: -f is required");
    size_t n;
    char *text = read_file(file, &n);
    Vocab v = {0};
    read_tokenizer(&v, tok);
    Encoder e;
    build_encoder(&e, &v, (int)v.str.n);
    IntBuf ids = {0};
    encode_document(&e, text, n, &ids);
    for (size_t i = 0; i < ids.n; i++) printf("%d%c", ids.p[i], i + 1 < ids.n ? ' ' : '\n');
    free(ids.p); free(text);
    free_encoder(&e); free_vocab(&v);
    return 0;
}

#endif // TESTING
