# specdec - speculative decoding in one C file.
#   make         build ./specdec (AVX2+FMA) and ./train
#   make run     sample from the shipped weights
#   make test    every test (kernels, forward, tokenizer, spec step, CLI, trainer)
#   make clean
CC      ?= cc
OPT     ?= -O3
# -ffp-contract=off: no silent a*b+c -> fma, so the scalar path rounds exactly
# where the code says and matches the AVX2 path bit for bit.
CFLAGS  ?= -std=c11 $(OPT) -Wall -Wextra -pedantic -ffp-contract=off
SIMD    ?= -mavx2 -mfma
LDLIBS  = -lm

.PHONY: all run test clean

all: specdec train

specdec: specdec.c model.h
	$(CC) $(CFLAGS) $(SIMD) -o $@ specdec.c $(LDLIBS)

run: specdec
	@if [ ! -f weights/target.bin ]; then \
	  echo "no weights/target.bin yet: 'make weights' trains them from ../shared/data"; exit 1; fi
	./specdec weights/target.bin -d weights/draft.bin -z tokenizer.bin -i "Once upon a time" -n 200 -t 0.8

# --- train.c (owned by the trainer work; keep edits inside this block) ---
train: train.c model.h
	$(CC) $(CFLAGS) $(SIMD) -pthread -o $@ train.c $(LDLIBS)

test-train:
	@echo "train.c tests: none yet"
# --- end train.c ---

clean:
	rm -rf specdec specdec_scalar train plot test/bin build/test
