# specdec - speculative decoding in one C file.
#   make         build ./specdec (with the host's SIMD: AVX-512 + VNNI, AVX-512, AVX2+FMA or
#                plain C, see SIMD below) and ./train
#   make run     sample from the shipped weights
#   make test    every test: kernels, forward, tokenizer, spec step, CLI, trainer;
#                then the same suite again built with -fsanitize=address,undefined
#   make clean
SHELL   := /bin/bash
# a recipe that fails or is interrupted leaves no target behind that a later
# make would take as up to date (./train's outputs are whole or absent anyway)
.DELETE_ON_ERROR:
CC      ?= cc
OPT     ?= -O3
CFLAGS  ?= $(OPT) -Wall -Wextra -pedantic
# What the results depend on, added to every compile whatever CFLAGS says:
# C11, and -ffp-contract=off (no silent a*b+c -> fma, so the plain C path rounds
# exactly where the code says and matches the SIMD paths bit for bit).
REQUIRED = -std=c11 -ffp-contract=off
# SIMD: what the host's CPU has. AVX-512 adds 16-lane matmul tiles (and VNNI
# int8 models' byte dot products), AVX2+FMA the 8-lane kernels; without
# either the portable C path runs. All give the same bits. Override with make SIMD="-mavx2 -mfma" (or SIMD= for plain C).
HOST_FLAGS := $(shell $(CC) -march=native -dM -E -x c /dev/null 2>/dev/null)
ifneq ($(findstring __AVX512VNNI__,$(HOST_FLAGS)),)
SIMD    ?= -mavx2 -mfma -mavx512f -mavx512vnni
else ifneq ($(findstring __AVX512F__,$(HOST_FLAGS)),)
SIMD    ?= -mavx2 -mfma -mavx512f
else ifneq ($(and $(findstring __AVX2__,$(HOST_FLAGS)),$(findstring __FMA__,$(HOST_FLAGS))),)
SIMD    ?= -mavx2 -mfma
else
SIMD    ?=
endif
LDLIBS  = -lm -pthread
# tests #include specdec.c and use only part of it
TFLAGS  = $(REQUIRED) $(CFLAGS) -Wno-unused-function
ASAN    = -std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
          -fno-sanitize-recover=all -ffp-contract=off -Wall -Wextra -pedantic -Wno-unused-function
TESTS   = test_kernels test_forward test_tokenizer test_spec test_io test_load
TEST_DEPS = specdec.c model.h test/check.h test/random_model.h test/harness.h

.PHONY: all run test test-core test-port bench sweep bench-tree bench-scale clean golden

all: specdec train

specdec: specdec.c model.h
	$(CC) $(REQUIRED) $(CFLAGS) $(SIMD) -o $@ specdec.c $(LDLIBS)

# the portable fallback (no AVX2): the tests check it prints the same bits
specdec_scalar: specdec.c model.h
	$(CC) $(REQUIRED) $(CFLAGS) -o $@ specdec.c $(LDLIBS)

run: specdec
	@if [ ! -f weights/target.bin ]; then \
	  echo "no weights/target.bin yet: 'make weights' trains them from ../shared/data"; exit 1; fi
	./specdec weights/target.bin -d weights/draft.bin -z tokenizer.bin -i "Once upon a time" -n 200 -t 0.8 -p 0.9 -s 6

# ---- tests: build/bin (optimised, $(SIMD)), build/asan (sanitizers), build/scalar
# (plain C), build/avx2 (8-lane kernels only)
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

# the 8-lane kernels alone (on an AVX-512 host the default build uses 16-lane tiles)
build/avx2/test_forward: test/test_forward.c $(TEST_DEPS)
	@mkdir -p build/avx2 build/test
	$(CC) $(TFLAGS) $(if $(findstring mavx2,$(SIMD)),-mavx2 -mfma) -o $@ $< $(LDLIBS)

build/bin/golden: test/golden/golden.c $(TEST_DEPS)
	@mkdir -p build/bin build/test
	$(CC) $(TFLAGS) $(SIMD) -o $@ $< $(LDLIBS)

# the golden files a port checks itself against (test/golden/README.md)
golden: build/bin/golden
	build/bin/golden test/golden

test-core: specdec specdec_scalar build/bin/randckpt build/bin/golden build/bin/bench \
           $(TESTS:%=build/bin/%) $(TESTS:%=build/asan/%) build/asan/specdec build/scalar/test_forward \
           build/avx2/test_forward
	bash test/run.sh

# the Python port written from the docs alone reproduces the golden files
# (port/README.md; --shipped adds the shipped pair's runs)
test-port:
	@if command -v python3 >/dev/null; then python3 port/port.py; \
	else echo "SKIP test-port: python3 not found"; fi

# one after another: test-core and test-arm64 write the same fixtures in
# build/test, so under make -j they would race (a checkpoint rewritten under a
# running test's mapping); each one's binaries build in parallel (compiling is
# most of the suite's time), its tests then run as its recipe says
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
test:
	@for t in test-core test-train test-plot test-arm64 test-port; do $(MAKE) -j$(JOBS) --no-print-directory $$t || exit 1; done

# ---- benchmarks (not tests: nothing asserted; numbers for README) -----------
build/bin/bench: bench/bench.c $(TEST_DEPS)
	@mkdir -p build/bin
	$(CC) $(TFLAGS) $(SIMD) -o $@ $< $(LDLIBS)

# Every mode writes its CSVs into build/bench/ and leaves docs/ (tracked: the
# figures' sources) alone; PUBLISH=1 writes them into docs/ (bench MODE
# --publish), then make plots redraws the figures. build/bin/bench --help (make
# build/bin/bench builds it): the modes.
BENCH_PUBLISH = $(if $(filter 1,$(PUBLISH)),--publish)

# bandwidth, single-row forward, verify cost r(n), end to end (shipped pair and
# the shipped target embedded in a 325 MB one) -> bench.json and build/bench/*.csv
# (docs/*.csv with PUBLISH=1); about 15 minutes (longer on a busy machine, where rows are measured again). With
# RUNC=path/to/run (llama2.c's run.c, -Ofast -march=native -fopenmp) it also
# compares target-only decoding with it (bench runc: that comparison alone); RUNQ=path/to/runq
# (llama2.c's runq.c) compares int8 target-only on the 325 MB target's version-2 export;
# LLAMACPP=dir (llama.cpp's build/bin: llama-bench, llama-quantize, llama-convert-llama2c-to-ggml)
# compares int8 target-only on the 325 MB target with llama-bench on its Q8_0 and Q4_0
# GGUFs (bench llamacpp: that comparison alone)
bench: build/bin/bench
	RUNC="$(RUNC)" RUNQ="$(RUNQ)" LLAMACPP="$(LLAMACPP)" build/bin/bench all $(BENCH_PUBLISH)

# the shipped pair only: K = 1..8 and auto at t = 0, 1; a vs temperature
sweep: build/bin/bench
	build/bin/bench sweep $(BENCH_PUBLISH)

# trees against the chain at t = 0, 1: the shipped pair, then the shipped target
# embedded, zero-padded, in dim 768 x 12 layers (325 MB, DRAM-bound); about a minute; writes trees.csv
bench-tree: build/bin/bench
	build/bin/bench tree $(BENCH_PUBLISH)

# speed at real sizes: the shipped target embedded in 81M, 1.0B and 6.0B-parameter shapes,
# int8 (~8 GB of disk in $$TMPDIR, deleted after); about 10 minutes; RUNQ= adds runq.c; writes scale.csv
bench-scale: build/bin/bench specdec
	RUNQ="$(RUNQ)" build/bin/bench scale $(BENCH_PUBLISH)

# specdec.c's line budget: the file, Part I, speculative_step, Part II (test/cli.sh checks it)
.PHONY: budget
budget:
	@bash test/budget.sh specdec.c

.PHONY: help
help:
	@echo "make targets (README.md and docs/ say more):"
	@echo "  all          ./specdec and ./train (the default)"
	@echo "  specdec      ./specdec, with the host's SIMD (override: make SIMD=...)"
	@echo "  train        ./train, the trainer (trainer/)"
	@echo "  run          sample a story from the shipped weights"
	@echo "  test         every test: test-core test-train test-plot test-arm64 test-port"
	@echo "  test-core    kernels, forward, tokenizer, spec step, CLI; again under ASan+UBSan"
	@echo "  test-train   the trainer's tests"
	@echo "  test-plot    the figures against their CSVs; bench selftest and bench's usage"
	@echo "  test-arm64   the NEON build under qemu (skipped without the cross compiler)"
	@echo "  test-port    the Python port reproduces the golden files (needs python3)"
	@echo "  golden       rewrite test/golden (the files a port checks itself against)"
	@echo "  fuzz         build and run the fuzzers"
	@echo "  bench        the whole benchmark, about 15 min: bench.json, build/bench/*.csv (PUBLISH=1: docs/)"
	@echo "  sweep        K = 1..8 and auto-K, a over temperature, about 1 min (PUBLISH=1: docs/)"
	@echo "  bench-tree   trees against chains, about 1 min (PUBLISH=1: docs/trees.csv)"
	@echo "  bench-scale  speed at real sizes (1B and 7B-class int8), about 10 min (PUBLISH=1: docs/scale.csv)"
	@echo "  plots        draw docs/*.png from docs/*.csv (./plot all DIR for another folder)"
	@echo "  weights      train the shipped weights from ../shared/data (hours; docs/TRAINING.md)"
	@echo "    its steps, each resumable and each running the ones before it: base, target, drafts,"
	@echo "    target-dropout, draft-run (their commands: docs/TRAINING.md's first table)"
	@echo "  bpb          bits per byte of every model in runs/ and of stories260K (the yardstick)"
	@echo "  medusa       Medusa heads for weights/target.bin (about 13 min)"
	@echo "  eagle        the EAGLE-style drafter for weights/target.bin (about 11 min)"
	@echo "  clean        remove the binaries and build/"
	@echo "  budget       specdec.c's line budget (the file, Part I, Part II)"
	@echo "  help         this list"

# --- trainer/ (./train; keep edits inside this block) ---
# make weights [DATA=dir] [THREADS=n]: tokenizer -> token streams -> base
# (the broad mix) -> target (the base fine-tuned on stories) -> stories the
# target writes -> draft (distilled from the target on stories and those);
# target_dropout (the same fine-tuning with residual dropout: the shipped
# target) -> stories it writes at make run's settings -> draft_run (the draft
# fine-tuned on those, target_dropout as its teacher: the shipped draft) ->
# weights/. Every step keeps its state under runs/ and re-running resumes
# where it stopped; `rm -rf runs` starts over.
# Shapes, numbers and what each choice bought: docs/TRAINING.md.
DATA    ?= ../shared/data/corpus
REF     ?= ../shared/data/ref
THREADS ?= 2
MIX     ?= tinystories=4,children=1,synthetic=1
STORIES ?= tinystories=3,synthetic=0.5
PARAGRAPHS ?= 0.35
VOCAB   ?= 2048
SYNTH_STORIES ?= 16000
TARGET_STORIES ?= 8000
KD      ?= tinystories=3,synthetic=0.5,targetgen=2
KD_RUN  ?= tinystories=3,synthetic=0.5,targetgen=1,targetrun=2
RUN_STORIES ?= 6000
SHAPE   ?= -dim 256 -layers 6 -heads 8 -kv-heads 4 -seq 256 -batch 8 -accum 4
# stage 1 stops at step 2000 of a 2600-step cosine, where the learning rate is
# still 2.2e-4; stage 2 anneals from there on stories alone
BASE    ?= $(SHAPE) -steps 2600 -stop-at 2000 -warmup 100 -lr 1e-3 -ckpt-every 50
TARGET  ?= $(SHAPE) -steps 1600 -warmup 30 -lr 3e-4 -lr-min 1e-5 -ckpt-every 50
DROPOUT ?= 0.1
DRAFT_SHAPE ?= -dim 96 -layers 2 -heads 3 -kv-heads 3 -seq 256 -batch 8 -accum 4
DRAFT   ?= $(DRAFT_SHAPE) -steps 3200 -warmup 50 -lr 3e-3 -ckpt-every 25
# the draft's second stage (draft-run), from the first stage's weights
DRAFT_RUN ?= $(DRAFT_SHAPE) -steps 800 -warmup 20 -lr 6e-4 -lr-min 6e-5 -ckpt-every 25
MODEL   = ./train model -threads $(THREADS)
TRAIN_TESTS = build/train/test_train build/train/test_train_ckpt

.PHONY: test-train base target target-dropout drafts draft-run weights medusa eagle

TRAINER = trainer/train.c trainer/tokenizer.c trainer/common.h model.h

train: $(TRAINER)
	$(CC) $(REQUIRED) $(CFLAGS) $(SIMD) -pthread -o $@ trainer/train.c $(LDLIBS)

build/train/test_train: test/test_train.c test/train_check.h $(TRAINER)
	@mkdir -p build/train
	$(CC) $(REQUIRED) $(CFLAGS) $(SIMD) -pthread -o $@ test/test_train.c $(LDLIBS)

build/train/test_train_ckpt: test/test_train_ckpt.c test/train_check.h test/harness.h specdec.c model.h
	@mkdir -p build/train
	$(CC) $(REQUIRED) $(CFLAGS) -Wno-unused-function $(SIMD) -o $@ test/test_train_ckpt.c $(LDLIBS)

# the same two tests built with ASan+UBSan (ASAN above)
build/train/asan/test_train: test/test_train.c test/train_check.h $(TRAINER)
	@mkdir -p build/train/asan
	$(CC) $(ASAN) $(SIMD) -pthread -o $@ test/test_train.c $(LDLIBS)

build/train/asan/test_train_ckpt: test/test_train_ckpt.c test/train_check.h test/harness.h specdec.c model.h
	@mkdir -p build/train/asan
	$(CC) $(ASAN) $(SIMD) -o $@ test/test_train_ckpt.c $(LDLIBS)

test-train: train $(TRAIN_TESTS) build/train/asan/test_train build/train/asan/test_train_ckpt build/bin/accept
	./build/train/test_train
	./build/train/test_train_ckpt
	@echo "test-train: again under ASan+UBSan"
	./build/train/asan/test_train
	./build/train/asan/test_train_ckpt

# the "synthetic" source: stories sampled from llama2.c's stories260K (a model
# that saw all of TinyStories) by specdec itself, t = 1, one per seed; they
# stay in runs/, never in the repo
# $(call sample_stories,N,MODEL,TOKENIZER[,SAMPLING]): N stories into $@,
# seeds 1..N, at SAMPLING (default t = 1)
sample_stories = mkdir -p $(dir $@) && for s in $$(seq 1 $(1)); do \
	  ./specdec $(2) -m target -z $(3) $(or $(4),-t 1) -s $$s -n 600 --threads 1 2>/dev/null; \
	  printf '\n<|endoftext|>\n'; done > $@.tmp && mv $@.tmp $@

runs/synth/stories260k.txt: | specdec
	$(call sample_stories,$(SYNTH_STORIES),$(REF)/stories260K.bin,$(REF)/tok512.bin)

# the "targetgen" source: stories sampled from our own target by specdec, t = 1,
# one per seed, for the draft (sequence-level distillation: the draft learns
# the target's distribution on the text the target itself writes)
runs/synth/target.txt: | specdec target
	$(call sample_stories,$(TARGET_STORIES),runs/target/model.bin,runs/tokenizer.bin)

# the "targetrun" source: stories the shipped target writes at make run's
# settings, for the draft's last stage (it learns the text users sample)
runs/synth/target_run.txt: | specdec target-dropout
	$(call sample_stories,$(RUN_STORIES),runs/target_dropout/model.bin,runs/tokenizer.bin,-t 0.8 -p 0.9)

runs/tokenizer.bin: runs/synth/stories260k.txt | train
	@mkdir -p runs
	./train tokenizer -d $(DATA) -mix $(MIX) -v $(VOCAB) -o $@

# the broad mix (stage 1), and stories only with some copies split into
# paragraphs, each after its own BOS (stage 2 and the draft)
runs/data/val.bin: runs/tokenizer.bin | train
	./train data -d $(DATA) -mix $(MIX) -z runs/tokenizer.bin -o runs/data

runs/data_stories/val.bin: runs/tokenizer.bin | train
	./train data -d $(DATA) -mix $(STORIES) -paragraphs $(PARAGRAPHS) -z runs/tokenizer.bin -o runs/data_stories

runs/data_kd/val.bin: runs/synth/target.txt | train
	./train data -d $(DATA) -mix $(KD) -paragraphs $(PARAGRAPHS) -z runs/tokenizer.bin -o runs/data_kd

runs/data_kd_run/val.bin: runs/synth/target.txt runs/synth/target_run.txt | train
	./train data -d $(DATA) -mix $(KD_RUN) -paragraphs $(PARAGRAPHS) -z runs/tokenizer.bin -o runs/data_kd_run

base: runs/data/val.bin | train
	$(MODEL) -data runs/data -o runs/base $(BASE) -csv docs/train_base.csv

target: base runs/data_stories/val.bin
	$(MODEL) -data runs/data_stories -o runs/target $(TARGET) -init runs/base/model.bin -csv docs/train_target.csv

drafts: target runs/data_kd/val.bin
	$(MODEL) -data runs/data_kd -o runs/draft $(DRAFT) -teacher runs/target/model.bin -csv docs/train_draft.csv

# the shipped draft: the draft fine-tuned, the shipped target as the teacher,
# on the stories plus what that target writes at make run's settings
draft-run: drafts target-dropout runs/data_kd_run/val.bin
	$(MODEL) -data runs/data_kd_run -o runs/draft_run $(DRAFT_RUN) -init runs/draft/model.bin \
	  -teacher runs/target_dropout/model.bin -csv docs/train_draft_run.csv

# the shipped target: stage 2 again from the same base, with residual dropout
target-dropout: base runs/data_stories/val.bin
	$(MODEL) -data runs/data_stories -o runs/target_dropout $(TARGET) -dropout $(DROPOUT) \
	  -init runs/base/model.bin -csv docs/train_target_dropout.csv

# the yardstick (docs/TRAINING.md): bits per byte on the held-out paragraphs
BPB_TEXT = $(DATA)/tinystories_valid_head.txt
bpb: train
	@for m in runs/base runs/target runs/target_dropout runs/draft runs/draft_run; do test -f $$m/model.bin && \
	  ./train bpb -m $$m/model.bin -z runs/tokenizer.bin -f $(BPB_TEXT) -tail 150000 | tail -1 | sed "s|^|$$m: |"; done; true
	@./train bpb -m $(REF)/stories260K.bin -z $(REF)/tok512.bin -f $(BPB_TEXT) -tail 150000 | tail -1 | sed "s|^|stories260K: |"

# a of the draft on held-out prompts (trainer/accept.c runs specdec.c's step)
build/bin/accept: trainer/accept.c specdec.c model.h test/harness.h
	@mkdir -p build/bin
	$(CC) $(TFLAGS) $(SIMD) -o $@ trainer/accept.c $(LDLIBS)

# ship: tokenizer, target, draft, with the draft's a on held-out prompts; then
# the Medusa heads and the EAGLE-style drafter of the target just shipped
weights: draft-run target-dropout build/bin/accept
	@mkdir -p weights
	build/bin/accept --target runs/target_dropout/model.bin --tokenizer runs/tokenizer.bin \
	  --draft runs/draft_run/model.bin --prompts $(DATA)/tinystories_train_head.txt | tee runs/draft_acceptance.txt
	cp runs/tokenizer.bin tokenizer.bin
	cp runs/target_dropout/model.bin weights/target.bin
	cp runs/draft_run/model.bin weights/draft.bin
	$(MAKE) --no-print-directory medusa
	$(MAKE) --no-print-directory eagle

# make medusa: Medusa heads (./train medusa -h) on the frozen weights/target.bin,
# self-distilled (each head learns the target's own softmax h tokens on) on the
# stories tokenized with the shipped tokenizer.bin -> weights/medusa.bin. The
# heads' state stays in runs/medusa and re-running resumes; a changed target
# makes the run stop and ask for runs/medusa/state.bin to be deleted.
# MEDUSA: a step is 8 x 256 tokens; on this 2-core VM, 2 threads, 4 heads, a
# step takes ~0.48 s (~0.2 s the target's forward, ~0.07 s a head), so 1500
# steps and 16 evals take about 12-13 minutes. lr: 300-step runs (warmup 30)
# reached val loss 5.59 / 5.41 / 5.37 and head-1 agreement with the target's
# top-1 0.25 / 0.29 / 0.31 at -lr 1e-3 (the command's default) / 3e-3 / 1e-2.
MEDUSA  ?= -heads 4 -steps 1500 -warmup 50 -lr 1e-2 -eval-every 100 -ckpt-every 50

runs/data_medusa/val.bin: tokenizer.bin | train
	@mkdir -p runs
	./train data -d $(DATA) -mix tinystories=1 -paragraphs $(PARAGRAPHS) -z tokenizer.bin -o runs/data_medusa

medusa: runs/data_medusa/val.bin weights/target.bin | train
	./train medusa -threads $(THREADS) -m weights/target.bin -data runs/data_medusa -o runs/medusa $(MEDUSA) \
	  -csv docs/train_medusa.csv
	cp runs/medusa/medusa.bin weights/medusa.bin

# make eagle: an EAGLE-style feature drafter (./train eagle -h) on the frozen
# weights/target.bin, on the same token streams -> weights/eagle.bin. Each row
# runs -unroll steps on its own predicted features (as generation does), each
# learning the target's softmax and its hidden state at t + s. State stays in
# runs/eagle and re-running resumes; a changed target asks for a fresh start.
# EAGLE: a step is 8 x 256 tokens; on this 2-core VM, 2 threads, hidden 512,
# 2 unrolled steps, a step takes ~0.40 s (~0.2 s the target's forward), so
# 1600 steps and 17 evals take about 11 minutes. lr: 300-step runs (warmup 30)
# reached val loss 4.39 / 3.82 / 3.41 / 3.69 and step-1 agreement with the
# target's top-1 0.36 / 0.47 / 0.55 / 0.49 at -lr 1e-3 (the command's
# default) / 3e-3 / 1e-2 / 3e-2.
EAGLE   ?= -steps 1600 -warmup 50 -lr 1e-2 -eval-every 100 -ckpt-every 50

eagle: runs/data_medusa/val.bin weights/target.bin | train
	./train eagle -threads $(THREADS) -m weights/target.bin -data runs/data_medusa -o runs/eagle $(EAGLE) \
	  -csv docs/train_eagle.csv
	cp runs/eagle/eagle.bin weights/eagle.bin
# --- end trainer/ ---

# --- plot.c ---
# ./plot (figures/plot.c) draws the figures (docs/*.png) from the CSVs the
# sweeps and the trainer write. Only it needs libstb-dev: stb_easy_font.h sets
# its text, stb_image_write.h writes the PNG (Debian: apt-get install libstb-dev).
# The directory holding stb/: found in the usual places, or
# make STB_INCLUDE=/path (Homebrew: $(brew --prefix)/include)
STB_HEADERS = stb/stb_image_write.h stb/stb_easy_font.h
STB_INCLUDE ?= $(firstword $(foreach d,/usr/include /usr/local/include /opt/homebrew/include /opt/local/include,\
                 $(if $(wildcard $(addprefix $(d)/,$(STB_HEADERS))),$(d))))
NEED_STB  = @for h in $(STB_HEADERS); do test -n "$(STB_INCLUDE)" -a -f "$(STB_INCLUDE)/$$h" || \
              { echo "figures/plot.c needs $$h: apt-get install libstb-dev (Debian), brew install stb, or make STB_INCLUDE=DIR"; exit 1; }; done
PLOT_DEPS = figures/plot.c model.h
.PHONY: plots test-plot

plot: $(PLOT_DEPS)
	$(NEED_STB)
	$(CC) $(REQUIRED) $(CFLAGS) -I$(STB_INCLUDE) -o $@ figures/plot.c -lm

plots: plot
	./plot all docs

build/plot/test_plot: figures/test_plot.c test/check.h $(PLOT_DEPS)
	$(NEED_STB)
	@mkdir -p build/plot
	$(CC) $(REQUIRED) $(CFLAGS) -I$(STB_INCLUDE) -Wno-unused-function -o $@ figures/test_plot.c -lm

# the same test built with ASan+UBSan (ASAN above)
build/plot/asan/test_plot: figures/test_plot.c test/check.h $(PLOT_DEPS)
	$(NEED_STB)
	@mkdir -p build/plot/asan
	$(CC) $(ASAN) -I$(STB_INCLUDE) -o $@ figures/test_plot.c -lm

test-plot: build/bin/bench
	build/bin/bench selftest
	bash test/bench_cli.sh build/bin/bench
	@if [ -n "$(STB_INCLUDE)" ]; then \
	  $(MAKE) --no-print-directory build/plot/test_plot build/plot/asan/test_plot && ./build/plot/test_plot && \
	  echo "test-plot: again under ASan+UBSan" && \
	  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ./build/plot/asan/test_plot; \
	else echo "test-plot: skipped, no $(STB_HEADERS) (apt-get install libstb-dev, or make STB_INCLUDE=DIR)"; fi
# --- end plot.c ---

# ---- ARM64 under emulation: the NEON build, with ARMv8.2's sdot for int8
# (cross-compiled with Debian's gcc-aarch64-linux-gnu, run by qemu-user as a CPU
# that has it), must print this host's bits: the kernel tests, the forward's
# logits fingerprint, greedy and sampled text. NEON without sdot runs the plain C
# int8 step, which the host's plain C build (specdec_scalar) tests.
ARM_CC   ?= aarch64-linux-gnu-gcc
ARM_RUN  ?= qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu
# -fno-tree-vectorize: gcc 12's aarch64 vectoriser crashes on a test loop; bits do not depend on it
ARM_FLAGS = -std=c11 -O3 -march=armv8.2-a+dotprod -fno-tree-vectorize -Wall -Wextra -pedantic -ffp-contract=off -pthread
.PHONY: test-arm64

build/arm64/%: test/%.c $(TEST_DEPS)
	@mkdir -p build/arm64 build/test
	$(ARM_CC) $(ARM_FLAGS) -Wno-unused-function -o $@ $< -lm

build/arm64/golden: test/golden/golden.c $(TEST_DEPS)
	@mkdir -p build/arm64 build/test
	$(ARM_CC) $(ARM_FLAGS) -Wno-unused-function -o $@ $< -lm

build/arm64/specdec: specdec.c model.h
	@mkdir -p build/arm64
	$(ARM_CC) $(ARM_FLAGS) -o $@ specdec.c -lm

test-arm64:
	@if ! command -v $(ARM_CC) >/dev/null || ! command -v $(firstword $(ARM_RUN)) >/dev/null; then \
	  echo "test-arm64: skipped, no $(ARM_CC) or $(firstword $(ARM_RUN)) (apt-get install gcc-aarch64-linux-gnu qemu-user)"; \
	else $(MAKE) --no-print-directory build/arm64/test_kernels build/arm64/test_forward build/arm64/specdec build/arm64/golden \
	       build/bin/test_forward specdec && bash test/arm64.sh "$(ARM_RUN)"; fi

# --- fuzzing: libFuzzer targets (clang) in fuzz/, each run for FUZZ_TIME seconds;
# any crash, sanitizer report, leak or broken round trip fails. The seed corpora
# (fuzz/seeds, a few KB) are made by our own tools; what the fuzzer finds is kept
# in build/fuzz/corpus. make fuzz FUZZ_TIME=3600 fuzzes longer. e2e runs the whole
# program 3-4 times an input (10-20 inputs a second on 2 cores, not thousands), and
# libFuzzer replays a saved corpus before FUZZ_TIME starts: rm -rf build/fuzz/corpus/e2e
# to make a short run short again.
FUZZ_TIME ?= 60
FUZZ_CC   ?= clang
FUZZ_TARGETS = checkpoint tokenizer prompt options medusa e2e
FUZZ_FLAGS = -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
             -ffp-contract=off -Wall -Wextra -Wno-unused-function $(SIMD)
.PHONY: fuzz fuzz-build

build/fuzz/%: fuzz/fuzz_%.c fuzz/fuzz.h test/harness.h specdec.c model.h
	@mkdir -p build/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< -lm -pthread

build/fuzz/medusa: test/random_model.h

# the end-to-end target writes its random checkpoints with the tests' code, and
# takes no coverage feedback from code whose branches follow the clock
# (fuzz/e2e.nocov; clang 13 or later, older ones build it without)
build/fuzz/e2e: test/random_model.h fuzz/e2e.nocov
build/fuzz/e2e: FUZZ_FLAGS += $(if $(shell $(FUZZ_CC) -fsanitize-coverage-ignorelist=fuzz/e2e.nocov \
                  -E -x c /dev/null -o /dev/null 2>/dev/null && echo ok),-fsanitize-coverage-ignorelist=fuzz/e2e.nocov)

fuzz-build: $(FUZZ_TARGETS:%=build/fuzz/%)

fuzz: fuzz-build
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p build/fuzz/corpus/$$t; \
	  echo "=== fuzz $$t: $(FUZZ_TIME) s"; \
	  build/fuzz/$$t -max_total_time=$(FUZZ_TIME) -rss_limit_mb=2048 -print_final_stats=1 \
	    -artifact_prefix=build/fuzz/$$t- build/fuzz/corpus/$$t fuzz/seeds/$$t > build/fuzz/$$t.log 2>&1; \
	  rc=$$?; grep -E "stat::number_of_executed_units|Done" build/fuzz/$$t.log; \
	  [ $$rc -eq 0 ] || { grep -v -E "^#[0-9]|^INFO|^MS: " build/fuzz/$$t.log | head -60; \
	    echo "fuzz $$t: FAILED (the log is build/fuzz/$$t.log; the input is in build/fuzz/$$t-*)"; exit 1; }; \
	done; echo "fuzz: all targets ran clean"

clean:
	rm -rf specdec specdec_scalar train plot build
