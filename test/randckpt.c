// randckpt - write random-weight llama2.c checkpoints (and a matching
// synthetic tokenizer) for tests and benchmarks.
//
//   randckpt OUT.bin dim hidden_dim n_layers n_heads n_kv_heads vocab seq_len
//            [--seed S] [--unshared] [--noise EPS --noise-seed S2]
//       Random weights from seed S. With --noise, every weight w becomes
//       w + EPS * a * u (u uniform in [-1,1] from seed S2, a = w's init scale):
//       a "draft" that agrees with the seed-S model most of the time.
//   randckpt --tokenizer OUT.bin vocab
//       A tokenizer.bin of `vocab` (>= 259) tokens: <unk>, BOS, EOS, the 256
//       byte tokens, then printable ASCII and common English pieces.
//   randckpt --medusa TARGET.bin OUT.bin H SEED
//       H random Medusa heads for TARGET (W uniform in +-0.05, b zero).
//   randckpt --eagle TARGET.bin OUT.bin HIDDEN SEED
//       A random EAGLE drafter for TARGET (W1, W2 uniform in +-0.05, b zero).
//   randckpt --embed-eagle IN.bin OUT.bin SCALE
//       IN for the target --embed made SCALE x wider (zero-padded alike).
//   randckpt --q80 IN.bin OUT.bin [GS]
//       IN (f32) as llama2.c's version 2 (int8 groups), as ./train quantize writes it;
//       with GS, in groups of GS (export.py's: 64 halved until it divides dim).
//   randckpt --dequantize IN.bin OUT.bin
//       the weights of IN (version 2) as an f32 checkpoint (model.h's q80_dequantize).
//   randckpt --embed-medusa IN.bin OUT.bin SCALE
//       IN's heads for the target --embed made SCALE x wider: W and b
//       zero-padded, so the padded hidden state (z, 0) gives the same logits.
#define TESTING
#include "../specdec.c"
#include "harness.h"

#include "random_model.h"

int main(int argc, char **argv) {
    if ((argc == 6 || argc == 8) && !strcmp(argv[1], "--embed")) { // --embed BASE.bin OUT.bin SCALE LAYERS [HIDDEN GS]
        write_embedded_checkpoint(argv[3], argv[2], atoi(argv[4]), atoi(argv[5]), argc == 8 ? atoi(argv[6]) : 0,
                                  argc == 8 ? atoi(argv[7]) : 0);
        return 0;
    }
    if (argc == 6 && !strcmp(argv[1], "--medusa")) {
        Transformer t;
        build_transformer(&t, argv[2], 1, NULL, 1);
        write_random_medusa(argv[3], atoi(argv[4]), t.config.dim, t.config.vocab_size, strtoull(argv[5], NULL, 10),
                            0.05f);
        free_transformer(&t);
        return 0;
    }
    if (argc == 6 && !strcmp(argv[1], "--eagle")) {
        Transformer t;
        build_transformer(&t, argv[2], 1, NULL, 1);
        write_random_eagle(argv[3], t.config.dim, t.config.vocab_size, atoi(argv[4]), strtoull(argv[5], NULL, 10),
                           0.05f);
        free_transformer(&t);
        return 0;
    }
    if (argc == 5 && !strcmp(argv[1], "--embed-eagle")) {
        write_embedded_eagle(argv[3], argv[2], atoi(argv[4]));
        return 0;
    }
    if (argc == 5 && !strcmp(argv[1], "--embed-medusa")) {
        write_embedded_medusa(argv[3], argv[2], atoi(argv[4]));
        return 0;
    }
    if ((argc == 4 || argc == 5) && !strcmp(argv[1], "--q80")) {
        write_q80_checkpoint_gs(argv[2], argv[3], argc == 5 ? atoi(argv[4]) : 0);
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "--dequantize")) {
        size_t n;
        char msg[512];
        Config c;
        int shared, gs;
        unsigned char *img = read_file_checked(argv[2], "version-2 file", &n, NULL, NULL);
        if (check_q80(&c, &shared, &gs, img, n, msg, sizeof(msg))) die("%s: %s", argv[2], msg);
        float *f = xmalloc(checkpoint_n_floats(&c, shared) * sizeof(float), "weights");
        q80_dequantize(f, &c, shared, gs, img);
        if (write_checkpoint(argv[3], &c, f, shared)) die("%s: write failed", argv[3]);
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "--tokenizer")) {
        write_tokenizer(argv[2], atoi(argv[3]));
        return 0;
    }
    if (argc < 9) {
        fprintf(stderr, "usage: randckpt OUT.bin dim hidden n_layers n_heads n_kv_heads vocab seq_len "
                        "[--seed S] [--unshared] [--noise EPS --noise-seed S2]\n"
                        "       randckpt --tokenizer OUT.bin vocab\n"
                        "       randckpt --q80 IN.bin OUT.bin [GS]  (IN as llama2.c's version 2, int8)\n"
                        "       randckpt --dequantize IN.bin OUT.bin  (a version-2 IN's weights as f32)\n"
                        "       randckpt --embed BASE.bin OUT.bin SCALE LAYERS  (BASE zero-padded, SCALE x wider)\n"
                        "       randckpt --medusa TARGET.bin OUT.bin H SEED\n"
                        "       randckpt --embed-medusa IN.bin OUT.bin SCALE\n"
                        "       randckpt --eagle TARGET.bin OUT.bin HIDDEN SEED\n"
                        "       randckpt --embed-eagle IN.bin OUT.bin SCALE\n");
        return 1;
    }
    Config c = {atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]),
                atoi(argv[7]), atoi(argv[8])};
    if (c.dim <= 0 || c.hidden_dim <= 0 || c.n_layers <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 ||
        c.vocab_size <= 0 || c.seq_len <= 0 || c.dim % c.n_heads || c.n_heads % c.n_kv_heads)
        die("randckpt: bad config");
    uint64_t seed = 1, nseed = 2;
    int shared = 1;
    float eps = 0;
    for (int i = 9; i < argc; i++) {
        if (!strcmp(argv[i], "--unshared")) shared = 0;
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--noise") && i + 1 < argc) eps = strtof(argv[++i], NULL);
        else if (!strcmp(argv[i], "--noise-seed") && i + 1 < argc) nseed = strtoull(argv[++i], NULL, 10);
        else die("randckpt: unknown argument %s", argv[i]);
    }
    write_random_checkpoint(argv[1], &c, shared, seed, nseed, eps);
    return 0;
}
