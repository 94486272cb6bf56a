# specdec - speculative decoding in one C file.
#   make         build ./specdec (AVX2+FMA) and ./train
#   make run     sample from the shipped weights
#   make test    every test: kernels, forward, tokenizer, spec step, CLI, trainer;
#                then the same suite again built with -fsanitize=address,undefined
#   make clean
CC      ?= cc
OPT     ?= -O3
# -ffp-contract=off: no silent a*b+c -> fma, so the scalar path rounds exactly
# where the code says and matches the AVX2 path bit for bit.
CFLAGS  ?= -std=c11 $(OPT) -Wall -Wextra -pedantic -ffp-contract=off
SIMD    ?= -mavx2 -mfma
LDLIBS  = -lm
# tests #include specdec.c and use only part of it
TFLAGS  = $(CFLAGS) -Wno-unused-function
ASAN    = -std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
          -fno-sanitize-recover=all -ffp-contract=off -Wall -Wextra -pedantic -Wno-unused-function
TESTS   = test_kernels test_forward test_tokenizer test_spec
TEST_DEPS = specdec.c model.h test/check.h test/random_model.h

.PHONY: all run test test-core bench sweep clean

all: specdec train

specdec: specdec.c model.h
	$(CC) $(CFLAGS) $(SIMD) -o $@ specdec.c $(LDLIBS)

# the portable fallback (no AVX2): the tests check it prints the same bits
specdec_scalar: specdec.c model.h
	$(CC) $(CFLAGS) -o $@ specdec.c $(LDLIBS)

run: specdec
	@if [ ! -f weights/target.bin ]; then \
	  echo "no weights/target.bin yet: 'make weights' trains them from ../shared/data"; exit 1; fi
	./specdec weights/target.bin -d weights/draft.bin -z tokenizer.bin -i "Once upon a time" -n 200 -t 0.8

# ---- tests: build/bin (optimised), build/asan (sanitizers), build/scalar (no AVX2)
build/bin/%: test/%.c $(TEST_DEPS)
	@mkdir -p build/bin build/test
	$(CC) $(TFLAGS) $(SIMD) -o $@ $< $(LDLIBS)

build/asan/%: test/%.c $(TEST_DEPS)
	@mkdir -p build/asan build/test
	$(CC) $(ASAN) $(SIMD) -o $@ $< $(LDLIBS)

build/asan/specdec: specdec.c model.h
	@mkdir -p build/asan
	$(CC) $(ASAN) $(SIMD) -o $@ specdec.c $(LDLIBS)

build/scalar/test_forward: test/test_forward.c $(TEST_DEPS)
	@mkdir -p build/scalar build/test
	$(CC) $(TFLAGS) -o $@ $< $(LDLIBS)

build/bin/test_spec_wrong: test/test_spec.c $(TEST_DEPS)
	$(CC) $(TFLAGS) $(SIMD) -DSPECDEC_WRONG_RESIDUAL -o $@ $< $(LDLIBS)

test-core: specdec specdec_scalar build/bin/randckpt build/bin/test_spec_wrong \
           $(TESTS:%=build/bin/%) $(TESTS:%=build/asan/%) build/asan/specdec build/scalar/test_forward
	bash test/run.sh

test: test-core test-train

# ---- benchmarks (not tests: nothing asserted; numbers for README) -----------
build/bin/bench: test/bench.c $(TEST_DEPS)
	@mkdir -p build/bin
	$(CC) $(TFLAGS) $(SIMD) -o $@ $< $(LDLIBS)

# bandwidth, single-row forward, verify cost r(n), end to end (shipped pair and
# the emulated 110M target) -> bench.json and docs/*.csv; about 4 minutes
bench: build/bin/bench
	build/bin/bench all

# the shipped pair only: K = 1..8 and auto at t = 0, 1; a vs temperature
sweep: build/bin/bench
	build/bin/bench sweep

# --- train.c (owned by the trainer work; keep edits inside this block) ---
train: train.c model.h
	$(CC) $(CFLAGS) $(SIMD) -pthread -o $@ train.c $(LDLIBS)

test-train:
	@echo "train.c tests: none yet"
# --- end train.c ---

clean:
	rm -rf specdec specdec_scalar train plot build
