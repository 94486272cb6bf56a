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
LDLIBS  = -lm -pthread
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

test: test-core test-train test-plot

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
# make weights [DATA=dir] [THREADS=n]: tokenizer -> token streams -> target ->
# draft (distilled from the target) and draft_text (text only) -> weights/.
# Every step keeps its state under runs/ and re-running resumes where it
# stopped; `rm -rf runs` starts over. Shapes and numbers: docs/TRAINING.md.
DATA    ?= ../shared/data/corpus
THREADS ?= 2
MIX     ?= children=1,tinystories=2
VOCAB   ?= 2048
TARGET  ?= -dim 256 -layers 6 -heads 8 -kv-heads 4 -seq 256 -batch 8 -accum 4 -steps 1700 -warmup 100 -lr 1e-3 -ckpt-every 50
DRAFT   ?= -dim 96 -layers 2 -heads 3 -kv-heads 3 -seq 256 -batch 8 -accum 4 -steps 800 -warmup 50 -lr 3e-3
MODEL   = ./train model -data runs/data -threads $(THREADS)
TRAIN_TESTS = build/train/test_train build/train/test_train_ckpt

.PHONY: test-train target drafts weights

train: train.c model.h
	$(CC) $(CFLAGS) $(SIMD) -pthread -o $@ train.c $(LDLIBS)

build/train/test_train: test/test_train.c test/train_check.h train.c model.h
	@mkdir -p build/train
	$(CC) $(CFLAGS) $(SIMD) -pthread -o $@ test/test_train.c $(LDLIBS)

build/train/test_train_ckpt: test/test_train_ckpt.c test/train_check.h specdec.c model.h
	@mkdir -p build/train
	$(CC) $(CFLAGS) -Wno-unused-function $(SIMD) -o $@ test/test_train_ckpt.c $(LDLIBS)

test-train: train $(TRAIN_TESTS)
	./build/train/test_train
	./build/train/test_train_ckpt

runs/tokenizer.bin: | train
	@mkdir -p runs
	./train tokenizer -d $(DATA) -mix $(MIX) -v $(VOCAB) -o $@

runs/data/val.bin: runs/tokenizer.bin | train
	./train data -d $(DATA) -mix $(MIX) -z runs/tokenizer.bin -o runs/data

target: runs/data/val.bin | train
	$(MODEL) -o runs/target $(TARGET) -csv docs/train_target.csv

drafts: target
	$(MODEL) -o runs/draft_distill $(DRAFT) -teacher runs/target/model.bin -csv docs/train_draft_distill.csv
	$(MODEL) -o runs/draft_text $(DRAFT) -csv docs/train_draft_text.csv

# ships the draft with the higher acceptance a on held-out prompts (bench accept)
weights: drafts build/bin/bench
	@mkdir -p weights
	build/bin/bench accept --target runs/target/model.bin --tokenizer runs/tokenizer.bin \
	  --draft runs/draft_distill/model.bin --draft2 runs/draft_text/model.bin \
	  --prompts $(DATA)/tinystories_train_head.txt | tee runs/draft_acceptance.txt
	cp runs/tokenizer.bin tokenizer.bin
	cp runs/target/model.bin weights/target.bin
	cp "$$(sed -n 's/^better: //p' runs/draft_acceptance.txt)" weights/draft.bin
# --- end train.c ---

# --- plot.c ---
# ./plot draws the figures (docs/*.png) from the CSVs the sweeps and train write.
# Only plot.c needs stb_image_write (Debian: apt-get install libstb-dev).
STB_WRITE = /usr/include/stb/stb_image_write.h
NEED_STB  = @test -f $(STB_WRITE) || { echo "plot.c needs $(STB_WRITE): apt-get install libstb-dev"; exit 1; }
.PHONY: plots test-plot

plot: plot.c
	$(NEED_STB)
	$(CC) $(CFLAGS) -o $@ plot.c -lm

plots: plot
	./plot all docs

build/plot/test_plot: test/test_plot.c plot.c test/check.h
	$(NEED_STB)
	@mkdir -p build/plot
	$(CC) $(CFLAGS) -Wno-unused-function -o $@ test/test_plot.c -lm

test-plot:
	@if [ -f $(STB_WRITE) ]; then $(MAKE) --no-print-directory build/plot/test_plot && ./build/plot/test_plot; \
	else echo "test-plot: skipped, no $(STB_WRITE) (apt-get install libstb-dev)"; fi
# --- end plot.c ---

clean:
	rm -rf specdec specdec_scalar train plot build
