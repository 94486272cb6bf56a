// fuzz_checkpoint.c - any bytes as a llama2.c checkpoint, legacy or version 2
// (int8; seeds/checkpoint/tiny_q80.bin): load (header, size, NaN/inf, scales,
// memory bound), pack (floats or int8), then a 1-row and a 3-row forward.
// Built by `make fuzz`.
#include "fuzz.h"

static char path[96]; // the input, written to a file: specdec streams a checkpoint from its file
static void remove_input(void) { unlink(path); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!path[0]) {
        snprintf(path, sizeof path, "/dev/shm/specdec-checkpoint-%d.bin", (int)getpid());
        atexit(remove_input);
    }
    FILE *f = fopen(path, "wb");
    if (!f) snprintf(path, sizeof path, "/tmp/specdec-checkpoint-%d.bin", (int)getpid()), f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) abort();
    FUZZ_TRY({
        Transformer t;
        build_transformer_as(&t, path, 3, NULL, 1, (int)(size % 2)); // f32 or int8
        int tokens[3] = {0, 1 % t.config.vocab_size, 2 % t.config.vocab_size};
        const float *lg = forward(&t, tokens, 1, 0);
        if (t.config.seq_len >= 4) lg = forward(&t, tokens, 3, 1);
        (void)lg;
        free_transformer(&t);
    });
    io_forget();
    fuzz_check_released(0);
    return 0;
}
