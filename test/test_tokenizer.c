// test_tokenizer.c - encode/decode round trips on hard text (UTF-8, bytes the
// vocabulary lacks, leading spaces, empty), on a synthetic tokenizer the test
// writes, on the shipped tokenizer.bin, and on llama2.c's 32000-token file
// from ../shared (skipped, saying so, when absent).
#define TESTING
#include "../specdec.c"
#include "harness.h"
#include "check.h"
#include "random_model.h"

static const char *HARD[] = {
    "",
    "Once upon a time",
    " leading space",
    "   three leading spaces and trailing  ",
    "tabs\tand\nnewlines\n\n",
    "UTF-8: naïve café — “quotes” ’ 日本語 🙂 ü",
    "bytes \x01\x02\x7f and invalid UTF-8 \xff\xfe\xc3 end",
    "\x80 starts with a continuation byte",
    "<0x41> looks like a byte token",
};

// decode tokens[1..n) (tokens[0] is BOS) into buf, as the generation loop prints
static void decode_all(const Tokenizer *t, const int *tokens, int n, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 1; i < n; i++) {
        const char *p = decode_piece(t, tokens[i - 1], tokens[i]);
        size_t m = strlen(p);
        if (m == 0 && tokens[i] == TOKEN_BYTE0) m = 1; // the byte 0x00 (not in these texts)
        if (len + m < cap) { memcpy(buf + len, p, m); len += m; buf[len] = '\0'; }
    }
}

static void round_trips(const char *name, const char *path, int vocab) {
    Tokenizer t;
    build_tokenizer(&t, path, vocab);
    int ok = 0, n_texts = (int)(sizeof(HARD) / sizeof(HARD[0]));
    for (int i = 0; i < n_texts; i++) {
        int *tokens = xmalloc((strlen(HARD[i]) + 3) * sizeof(int), "tokens");
        int n = encode(&t, tokens, HARD[i], 1, 0);
        int in_range = tokens[0] == TOKEN_BOS;
        for (int j = 0; j < n; j++) in_range &= tokens[j] >= 0 && tokens[j] < vocab;
        char buf[512];
        decode_all(&t, tokens, n, buf, sizeof(buf));
        CHECK(in_range && !strcmp(buf, HARD[i]), "%s: round trip of \"%s\" gave \"%s\" (%d tokens)",
              name, HARD[i], buf, n);
        ok += in_range && !strcmp(buf, HARD[i]);
        xfree(tokens);
    }
    printf("%s: %d of %d hard texts round-trip exactly\n", name, ok, n_texts);
    free_tokenizer(&t);
}

// merges follow scores: the synthetic vocab ranks "th" (-24) over "he" (-25)
// over " t" (-28) and has no " th" or "the", so "the" (with its dummy-prefix
// space) encodes as " ", "th", "e": the best-scored pair is merged first
static void test_merge_order(void) {
    Tokenizer t;
    build_tokenizer(&t, "build/test/synthetic.tok", 512);
    int tokens[16];
    int n = encode(&t, tokens, "the", 1, 1);
    CHECK(n == 5 && tokens[0] == TOKEN_BOS && tokens[4] == TOKEN_EOS, "bos/eos framing: n = %d", n);
    CHECK(n == 5 && !strcmp(t.vocab[tokens[1]], " ") && !strcmp(t.vocab[tokens[2]], "th") &&
          !strcmp(t.vocab[tokens[3]], "e"),
          "\"the\" -> \"%s\" \"%s\" ..., want \" \" \"th\" \"e\" (the higher-scored merge first)",
          t.vocab[tokens[1]], t.vocab[tokens[2]]);
    n = encode(&t, tokens, "\x01", 0, 0); // dummy prefix, then the byte token
    CHECK(n == 2 && tokens[1] == TOKEN_BYTE0 + 1, "byte fallback: \\x01 -> id %d, want %d",
          tokens[1], TOKEN_BYTE0 + 1);
    free_tokenizer(&t);
}

static void test_llama2(void) {
    const char *path = "../shared/data/ref/llama2_tokenizer.bin";
    if (access(path, R_OK) != 0) {
        printf("SKIP llama2 tokenizer: %s absent\n", path);
        return;
    }
    round_trips("llama2 (32000)", path, 32000);
    Tokenizer t;
    build_tokenizer(&t, path, 32000);
    int tokens[16];
    int n = encode(&t, tokens, "Hello world", 1, 0);
    CHECK(n == 3 && tokens[1] == 15043 && tokens[2] == 3186,
          "llama2 \"Hello world\" -> %d tokens [%d %d ...], want [1 15043 3186]", n, tokens[1], tokens[2]);
    free_tokenizer(&t);
}

int main(void) {
    write_tokenizer("build/test/synthetic.tok", 512);
    round_trips("synthetic (512)", "build/test/synthetic.tok", 512);
    test_merge_order();
    if (access("tokenizer.bin", R_OK) == 0) {
        // the shipped tokenizer: its vocab size is the shipped target's
        Transformer tr;
        if (access("weights/target.bin", R_OK) == 0) {
            build_transformer(&tr, "weights/target.bin", 1, NULL, 1);
            round_trips("shipped tokenizer.bin", "tokenizer.bin", tr.config.vocab_size);
            free_transformer(&tr);
        }
    } else {
        printf("SKIP shipped tokenizer.bin: not built yet\n");
    }
    test_llama2();
    return check_summary("test_tokenizer");
}
