// fuzz_checkpoint.c - any bytes as a llama2.c checkpoint, legacy or version 2
// (int8; seeds/checkpoint/tiny_q80.bin): load (header, size, NaN/inf, scales,
// memory bound), pack (floats or int8), then a 1-row and a 3-row forward.
// Built by `make fuzz`.
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    float *file = malloc(size + 4); // 4-byte aligned, as a mapping is; not owned: die()
    if (!file) return 0;             // releases what specdec owns, not the harness's input
    memcpy(file, data, size);
    FUZZ_TRY({
        Transformer t;
        load_checkpoint(&t, file, size, "input", 3, NULL, 1, (int)(size % 2)); // f32 or int8
        int tokens[3] = {0, 1 % t.config.vocab_size, 2 % t.config.vocab_size};
        const float *lg = forward(&t, tokens, 1, 0);
        if (t.config.seq_len >= 4) lg = forward(&t, tokens, 3, 1);
        (void)lg;
        free_transformer(&t);
    });
    free(file);
    fuzz_check_released(0);
    return 0;
}
