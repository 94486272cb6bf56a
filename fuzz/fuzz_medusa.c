// fuzz_medusa.c - any bytes as a medusa.bin (or, starting "EAGL", an
// eagle.bin) for a tiny target: load (header against the target, size,
// NaN/inf, packing), then the drafter proposes after a one-row forward, a
// chain: each q must be a distribution, or no proposal. Built by
// `make fuzz`; seeds: fuzz/seeds/medusa (valid files and damaged ones).
#include "fuzz.h"
#include "../test/random_model.h"

#define FUZZ_VOCAB 40
static char dir[64], medusa_path[96], target_path[96];

static void remove_files(void) {
    unlink(medusa_path);
    unlink(target_path);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    snprintf(dir, sizeof dir, "%s", "/dev/shm/specdec-medusa-XXXXXX");
    if (!mkdtemp(dir)) {
        snprintf(dir, sizeof dir, "%s", "/tmp/specdec-medusa-XXXXXX");
        if (!mkdtemp(dir)) { perror("fuzz_medusa: mkdtemp"); exit(1); }
    }
    snprintf(target_path, sizeof target_path, "%s/target.bin", dir);
    const Config c = {16, 32, 1, 2, 1, FUZZ_VOCAB, 8}; // dim 16: the seeds' heads are for it
    write_random_checkpoint(target_path, &c, 1, 1, 2, 0);
    snprintf(medusa_path, sizeof medusa_path, "%s/medusa.bin", dir);
    atexit(remove_files);
    return 0;
}

// q (FUZZ_VOCAB) must be a distribution where a drafter proposed (ok)
static void check_q(const float *q, int ok) {
    double sum = 0;
    for (int i = 0; ok && i < FUZZ_VOCAB; i++) {
        if (!(q[i] >= 0.0f)) abort(); // NaN or negative
        sum += q[i];
    }
    if (ok && fabs(sum - 1.0) > 1e-3) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FILE *f = fopen(medusa_path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) abort();
    int eagle = size >= 4 && !memcmp(data, "EAGL", 4);
    FUZZ_TRY({
        Transformer t;
        Sampler s;
        MedusaDrafter md;
        EagleDrafter ed;
        build_transformer_as(&t, target_path, 3, NULL, 1, WEIGHTS_F32);
        build_sampler(&s, FUZZ_VOCAB, 1.0f, 1.0f, 0);
        Drafter *d = eagle ? eagle_drafter(&ed, medusa_path, &t, &s) : medusa_drafter(&md, medusa_path, &t, &s);
        int tokens[8] = {TOKEN_BOS, 5, 7, 9, 11, 13, 15, 17};
        forward(&t, tokens, 2, 0);
        d->observe(d, 1, 1);
        float q[FUZZ_VOCAB];
        for (int pos = 2; pos <= 7; pos++) { // z ran position 1: proposals from position 3 on
            int ok = d->propose(d, q, tokens, pos);
            if (ok && (pos < 3 || (!eagle && pos - 2 > md.n_heads))) abort();
            check_q(q, ok);
        }
        free_drafter(d);
        free_sampler(&s);
        free_transformer(&t);
    });
    fuzz_check_released(0);
    return 0;
}
