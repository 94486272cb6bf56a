// fuzz_prompt.c - any bytes as a prompt for the shipped tokenizer: encode
// (llama2.c's BPE: dummy prefix, codepoints, byte fallback, merges by score),
// then decode: the text must come back byte for byte. Built by `make fuzz`.
#include "fuzz.h"

static Tokenizer tok;
static size_t baseline;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    build_tokenizer(&tok, "tokenizer.bin", 0);
    baseline = owned_count();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0; // the CLI refuses longer prompts for the shipped target
    char *text = xmalloc(size + 1, "prompt");
    memcpy(text, data, size);
    size_t len = strlen(text); // a prompt ends at its first NUL, as on a command line
    int *ids = xmalloc((len + 3) * sizeof(int), "ids");
    char *back = xmalloc(len + 8, "decoded");
    int n = encode(&tok, ids, text, 1, 0);
    size_t got = 0;
    for (int i = 1; i < n; i++) {
        const char *piece = decode_piece(&tok, ids[i - 1], ids[i]);
        size_t k = strlen(piece);
        if (got + k > len) {
            fprintf(stderr, "fuzz_prompt: decoding is longer than the prompt\n");
            abort();
        }
        memcpy(back + got, piece, k);
        got += k;
    }
    if (got != len || memcmp(back, text, len)) {
        fprintf(stderr, "fuzz_prompt: the prompt did not round-trip (%zu bytes back of %zu)\n", got, len);
        abort();
    }
    xfree(text);
    xfree(ids);
    xfree(back);
    fuzz_check_released(baseline);
    return 0;
}
