#!/usr/bin/env bash
# cli.sh - whole-program tests of ./specdec, as a user runs it:
#   greedy spec output == greedy target output, byte for byte (prompts x K = 1..8);
#   same seed -> same output, different seeds -> different output;
#   the AVX2 and scalar builds print the same text;
#   llama2.c's stories260K reproduces its known output (skipped if ../shared is absent);
#   -j writes the promised keys; every kind of bad input: exit 1, one clear message;
#   a llama2.c user's command lines work, a llama.cpp user's habits get a hint (issue 44).
# usage: test/cli.sh SPECDEC [SCALAR_SPECDEC] [RANDCKPT]
# CLI_QUICK=1 (the sanitizer pass): fewer K values and no repeat of the
# same-text runs, which test determinism, already checked by the optimised pass.
set -u
QUICK=${CLI_QUICK:-0}
# a child's SIGINT at its default, also where this script started with it ignored (nohup, a
# background job): a shell cannot reset a signal ignored on its entry, so trap - INT does not
SIGDFL=$(env --default-signal=INT true 2>/dev/null && echo "env --default-signal=INT")
SPECDEC=${1:-./specdec}
SCALAR=${2:-}
RANDCKPT=${3:-build/bin/randckpt}
D=build/test/cli
mkdir -p $D
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# fixtures: a random target, a noisy copy as draft, a short-context draft, a tokenizer
$RANDCKPT $D/target.bin 64 172 2 4 2 400 160 --seed 5 || exit 1
$RANDCKPT $D/draft.bin 64 172 2 4 2 400 160 --seed 5 --noise 0.4 --noise-seed 6 || exit 1
$RANDCKPT $D/draft_small.bin 32 64 1 2 1 400 160 --seed 7 --unshared || exit 1
$RANDCKPT $D/short.bin 64 172 2 4 2 400 16 --seed 5 || exit 1
$RANDCKPT $D/vocab500.bin 32 64 1 2 1 500 160 --seed 7 || exit 1
$RANDCKPT --tokenizer $D/tok.bin 400 || exit 1
$RANDCKPT --tokenizer $D/tok500.bin 500 || exit 1
M="$D/target.bin -z $D/tok.bin"

# ---- greedy spec == greedy target, byte for byte
# greedy_matches "TARGET ARGS" N "DRAFTS" "KS" PROMPT...: for each prompt, the
# target alone, then spec with every draft and K; counts matches in n_eq.
greedy_matches() {
    local model=$1 n=$2 drafts=$3 ks=$4 p d k
    shift 4
    for p in "$@"; do
        $SPECDEC $model -m target -t 0 -n $n -i "$p" > $D/ref.txt 2>/dev/null || bad "target run failed: '$p'"
        for d in $drafts; do
            for k in $ks; do
                $SPECDEC $model -d $d -m spec -t 0 -k $k -n $n -i "$p" > $D/spec.txt 2>/dev/null
                if cmp -s $D/ref.txt $D/spec.txt; then ok; n_eq=$((n_eq + 1)); else bad "greedy spec (K=$k, $d) != target for prompt '$p'"; fi
            done
        done
    done
}
n_eq=0
KS="0 1 2 3 4 5 6 7 8"; [ $QUICK = 1 ] && KS="0 1 4"
greedy_matches "$M" 120 "$D/draft.bin $D/draft_small.bin lookup" "$KS" \
    "" "Once upon a time" "the little dog said" "UTF-8 “quotes” é 日本"
echo "greedy: $n_eq spec runs (4 prompts x 2 drafts and -d lookup x K = $KS, 0 = auto) byte-identical to target-only output"

# ---- trees: greedy trees give the target's text; one candidate per level is the
# chain (-k 3) at t = 1; the text of a tree does not depend on the thread count
n_tree=0
$SPECDEC $M -m target -t 0 -n 120 -i "Once upon a time" > $D/ref.txt 2>/dev/null
for tr in 1 3,2,1 2,2,2,2 8,3 4; do
    $SPECDEC $M -d $D/draft.bin --tree $tr -t 0 -n 120 -i "Once upon a time" > $D/tree.txt 2>/dev/null
    if cmp -s $D/ref.txt $D/tree.txt; then ok; n_tree=$((n_tree + 1)); else bad "greedy --tree $tr != target"; fi
done
$SPECDEC $M -d $D/draft.bin -k 3 -t 1 -n 120 -s 9 > $D/chain3.txt 2>/dev/null
$SPECDEC $M -d $D/draft.bin --tree 1,1,1 -t 1 -n 120 -s 9 > $D/tree111.txt 2>/dev/null
if cmp -s $D/chain3.txt $D/tree111.txt; then ok; else bad "--tree 1,1,1 at t=1 differs from -k 3"; fi
for th in 1 2 3; do
    $SPECDEC $M -d $D/draft.bin --tree 3,2 --threads $th -t 1 -n 120 -s 9 > $D/tree_th$th.txt 2>/dev/null
done
if cmp -s $D/tree_th1.txt $D/tree_th2.txt && cmp -s $D/tree_th1.txt $D/tree_th3.txt && [ -s $D/tree_th1.txt ]; then ok
else bad "--tree 3,2 at t=1: the text depends on the thread count"; fi
$SPECDEC $M -d $D/draft.bin --tree 3,2 -t 1 -n 40 -s 9 -v > /dev/null 2> $D/tree_v.txt
marked=$(grep -c '^ *\* node' $D/tree_v.txt); accepted=$(grep -c 'pos [0-9]* draft .* accept' $D/tree_v.txt)
if [ "$marked" -gt 0 ] && [ "$marked" = "$accepted" ] && grep -q 'candidate 3 of 3 under node 0' $D/tree_v.txt; then ok
else bad "-v with --tree: $marked nodes marked on the path, $accepted draft positions accepted"; fi
echo "trees: $n_tree greedy tree runs byte-identical to the target; --tree 1,1,1 == -k 3 at t=1; --tree 3,2 the same on 1..3 threads"

# ---- drafters on the target's hidden state, random (the rule is exact for any):
# greedy runs give the target's text; at t = 1 a fixed -k gives the same text on
# every thread count. hidden_state_drafter D K "RUNS": -d D, t = 1 at -k K
hidden_state_drafter() {
    local d=$1 k=$2 runs=$3 a th n=0
    $SPECDEC $M -m target -t 0 -n 120 -i "the little dog" > $D/ref.txt 2>/dev/null
    for a in $runs; do
        a=${a//_/ } # "-k_3" -> "-k 3"
        $SPECDEC $M -d $d $a -t 0 -n 120 -i "the little dog" > $D/hs.txt 2>$D/hs.err
        if cmp -s $D/ref.txt $D/hs.txt; then ok; n=$((n + 1)); else bad "greedy -d $d $a != target: $(head -c 300 $D/hs.err)"; fi
    done
    for th in 1 2 3; do
        $SPECDEC $M -d $d -k $k --threads $th -t 1 -s 4 -n 100 > $D/hs_th$th.txt 2>/dev/null
    done
    if cmp -s $D/hs_th1.txt $D/hs_th2.txt && cmp -s $D/hs_th1.txt $D/hs_th3.txt && [ -s $D/hs_th1.txt ]; then ok
    else bad "-d $d -k $k at t=1: the text depends on the thread count"; fi
    echo "${d%%:*}: $n greedy runs (-k 0 and fixed K) byte-identical to the target; -k $k at t=1 the same on 1..3 threads"
}
$RANDCKPT --medusa $D/target.bin $D/medusa.bin 4 11 || exit 1
$RANDCKPT --eagle $D/target.bin $D/eagle.bin 96 12 || exit 1
hidden_state_drafter medusa:$D/medusa.bin 2 "-k_1 -k_3 -k_4 -k_0"
hidden_state_drafter eagle:$D/eagle.bin 3 "-k_1 -k_5 -k_4 -k_0"
$SPECDEC $M -d medusa:$D/medusa.bin -t 0 -n 60 2> $D/md.err > /dev/null
if grep -q "rounds, K = 4$" $D/md.err; then ok; else bad "-d medusa: K is not the 4 heads: $(grep rounds $D/md.err)"; fi
# their text depends on K, so -k 0 is their fixed K too (every head; 4), never auto-K's timed choice
for d in medusa:$D/medusa.bin eagle:$D/eagle.bin; do
    $SPECDEC $M -d $d -k 0 -t 1 -s 4 -n 60 -j $D/hk0.json > $D/hk0.txt 2> $D/hk0.err
    $SPECDEC $M -d $d -k 4 -t 1 -s 4 -n 60 > $D/hk4.txt 2> /dev/null
    if cmp -s $D/hk0.txt $D/hk4.txt && [ -s $D/hk0.txt ] && grep -q "rounds, K = 4$" $D/hk0.err &&
       grep -q '"auto_k": false' $D/hk0.json; then ok
    else bad "-d ${d%%:*} -k 0 is not its fixed K = 4: $(grep rounds $D/hk0.err)"; fi
done
echo "medusa, eagle: -k 0 is their fixed K (4 heads; 4), the text of -k 4 at t = 1"

# ---- an int8 target in groups of 64 (hidden 192): its version-2 file (randckpt --q80, what
# ./train quantize writes) and --target-weights int8 on the f32 file give the same text; greedy
# spec == int8 target-only with the draft model, the version-2 file as its own draft, lookup,
# Medusa, EAGLE, chains, auto-K and trees
$RANDCKPT $D/target192.bin 64 192 2 4 2 400 160 --seed 5 || exit 1
$RANDCKPT --q80 $D/target192.bin $D/t192q80.bin || exit 1
MQ="$D/t192q80.bin -z $D/tok.bin"
$SPECDEC $D/target192.bin -z $D/tok.bin --target-weights int8 -m target -t 0 -n 120 -i "the little dog" > $D/q8flag.txt 2>/dev/null
$SPECDEC $MQ -m target -t 0 -n 120 -i "the little dog" > $D/ref.txt 2>/dev/null
if cmp -s $D/q8flag.txt $D/ref.txt && [ -s $D/ref.txt ]; then ok
else bad "int8 target: the version-2 file and --target-weights int8 differ"; fi
n=0
for a in "-d_DRAFT_-k_0" "-d_DRAFT_-k_1" "-d_DRAFT_-k_4" "-d_DRAFT_-k_8" "-d_DRAFT_--tree_3,2,1" "-d_DRAFT_--tree_4" \
         "-d_DRAFT_--draft-weights_f32_-k_3" "-d_$D/t192q80.bin_-k_4" "-d_lookup_-k_3" "-d_medusa:$D/medusa.bin_-k_3" \
         "-d_medusa:$D/medusa.bin_-k_0" "-d_eagle:$D/eagle.bin_-k_4" "-d_eagle:$D/eagle.bin_-k_0"; do
    a=${a//_/ }; a=${a//DRAFT/$D/draft.bin}
    $SPECDEC $MQ $a -t 0 -n 120 -i "the little dog" > $D/spec.txt 2>$D/spec.err
    if cmp -s $D/ref.txt $D/spec.txt; then ok; n=$((n + 1)); else bad "int8 target: greedy $a != int8 target-only: $(head -c 300 $D/spec.err)"; fi
done
echo "int8 target (groups of 64): the version-2 file == --target-weights int8; $n greedy spec runs (draft model, itself, lookup, Medusa, EAGLE; chains, auto-K, trees) byte-identical to int8 target-only"

# ---- contexts shorter than K_MAX+1: auto-K calibrates within them; greedy stays exact
$SPECDEC $D/short.bin -z $D/tok.bin -m target -t 0 -n 20 > $D/ref.txt 2>/dev/null
if $SPECDEC $D/short.bin -z $D/tok.bin -d $D/short.bin -k 0 -t 0 -n 20 > $D/spec.txt 2>$D/err.txt &&
   cmp -s $D/ref.txt $D/spec.txt; then ok; else bad "auto-K on a 16-position target: $(head -c 300 $D/err.txt)"; fi

# ---- determinism
draft_for() { [ "$1" = target ] || echo "-d $D/draft.bin"; } # -m target loads no draft
for mode in spec target draft; do
    $SPECDEC $M $(draft_for $mode) -m $mode -t 1 -s 7 -n 80 > $D/a.txt 2>/dev/null
    $SPECDEC $M $(draft_for $mode) -m $mode -t 1 -s 7 -n 80 > $D/b.txt 2>/dev/null
    $SPECDEC $M $(draft_for $mode) -m $mode -t 1 -s 8 -n 80 > $D/c.txt 2>/dev/null
    if cmp -s $D/a.txt $D/b.txt; then ok; else bad "-m $mode: seed 7 twice gave different output"; fi
    if ! cmp -s $D/a.txt $D/c.txt; then ok; else bad "-m $mode: seeds 7 and 8 gave the same output"; fi
done
echo "determinism: same seed same text, different seed different text (spec, target, draft at t=1)"

# ---- the text depends on the seed only: every K, auto-K, every thread count
# same_text "MODEL ARGS" N T PROMPT: spec output for K = 1, 2, 4, 8, auto x threads 1, 2, 3
same_text() {
    local model=$1 n=$2 t=$3 prompt=$4 k th runs=0
    if [ $QUICK = 1 ]; then echo "same text: skipped in the quick pass"; return; fi
    $SPECDEC $model -t $t -s 5 -k 1 --threads 1 -n $n -i "$prompt" > $D/ref.txt 2>/dev/null || bad "spec run failed"
    for k in 1 2 4 8 0; do
        for th in 1 2 3; do
            $SPECDEC $model -t $t -s 5 -k $k --threads $th --draft-threads $th -n $n -i "$prompt" > $D/spec.txt 2>/dev/null
            if cmp -s $D/ref.txt $D/spec.txt; then ok; else bad "t=$t K=$k threads=$th: text differs from K=1 on 1 thread ($model)"; fi
            runs=$((runs + 1))
        done
    done
    echo "same text at t=$t: $runs runs (K = 1, 2, 4, 8, auto x 1..3 threads) equal ($model)"
}
same_text "$M -d $D/draft.bin" 100 0.8 "Once upon a time"
same_text "$M -d $D/draft.bin" 100 1 "the little dog"
same_text "$M -d lookup --ngram-max 4" 100 1 "the little dog the little dog"
same_text "$MQ -d $D/draft.bin" 100 1 "the little dog"
# a busy machine (a spinning process on each core: the stall rule sends passes to one
# thread, auto-K sees other costs) and any -n: the same text, a prefix of the longer one
if [ $QUICK = 0 ]; then
    $SPECDEC $M -d $D/draft.bin -t 0.9 -s 11 --threads 2 -n 100 -i "Once upon" > $D/quiet.txt 2>/dev/null
    spin() { local end=$((SECONDS + 20)); while [ $SECONDS -lt $end ]; do :; done; }
    spin & s1=$!; spin & s2=$!
    for th in 1 2 3; do
        $SPECDEC $M -d $D/draft.bin -t 0.9 -s 11 --threads $th -n 100 -i "Once upon" > $D/busy.txt 2>/dev/null
        if cmp -s $D/quiet.txt $D/busy.txt; then ok; else bad "a busy machine, --threads $th: the text changed"; fi
    done
    kill $s1 $s2 2>/dev/null; wait $s1 $s2 2>/dev/null
    for n in 7 33 64; do
        $SPECDEC $M -d $D/draft.bin -t 0.9 -s 11 --threads 2 -n $n -i "Once upon" > $D/short.txt 2>/dev/null
        a=$(tr -d '\n' < $D/short.txt); b=$(tr -d '\n' < $D/quiet.txt)
        if [ "${b#"$a"}" != "$b" ]; then ok; else bad "auto-K at t = 0.9: -n $n is not a prefix of -n 100"; fi
    done
    echo "busy machine: 1, 2, 3 threads beside two spinning processes print the quiet run's text; -n 7, 33, 64 are its prefixes"
fi

# ---- the scalar build prints the same text as the AVX2 build
if [ -n "$SCALAR" ]; then
    for t in 0 1; do
        $SPECDEC $M -d $D/draft.bin -t $t -n 100 -i "Once" > $D/avx.txt 2>/dev/null
        $SCALAR $M -d $D/draft.bin -t $t -n 100 -i "Once" > $D/scalar.txt 2>/dev/null
        if cmp -s $D/avx.txt $D/scalar.txt; then ok; else bad "scalar and AVX2 builds differ at t=$t"; fi
        $SPECDEC $MQ -d $D/draft.bin -t $t -n 100 -i "Once" > $D/avx.txt 2>/dev/null
        $SCALAR $MQ -d $D/draft.bin -t $t -n 100 -i "Once" > $D/scalar.txt 2>/dev/null
        if cmp -s $D/avx.txt $D/scalar.txt && [ -s $D/avx.txt ]; then ok; else bad "int8 target: scalar and AVX2 builds differ at t=$t"; fi
    done
    echo "scalar build: same spec output as the AVX2 build at t=0 and t=1 (f32 and int8 targets)"
fi

# ---- the shipped pair: greedy spec == greedy target; make run's command works
if [ -f weights/target.bin ] && [ -f weights/draft.bin ] && [ -f tokenizer.bin ]; then
    n_eq=0
    greedy_matches "weights/target.bin -z tokenizer.bin" 150 "weights/draft.bin lookup" "0 1 3 4 8" \
        "Once upon a time" "The dog"
    $SPECDEC weights/target.bin -d weights/draft.bin -z tokenizer.bin -t 0.8 -n 100 -i "Once upon a time" -j $D/run.json > $D/run.txt 2>/dev/null
    words=$(wc -w < $D/run.txt)
    gen=$(sed -n 's/.*"generated_tokens": \([0-9]*\).*/\1/p' $D/run.json)
    if [ "$words" -ge 20 ] && [ "${gen:-0}" -ge 30 ]; then ok; else bad "shipped pair at t=0.8: $words words, ${gen:-no} tokens"; fi
    echo "shipped pair: $n_eq greedy spec runs (2 prompts x the draft and -d lookup x K=1,3,4,8,auto) byte-identical to the target; t=0.8 writes $words words"
    # the draft's other weight formats (int8 is the default above): greedy text unchanged
    $SPECDEC weights/target.bin -z tokenizer.bin -m target -t 0 -n 150 -i "The dog" > $D/ref.txt 2>/dev/null
    for w in f32; do
        for k in 0 4; do
            $SPECDEC weights/target.bin -z tokenizer.bin -d weights/draft.bin --draft-weights $w -t 0 -k $k \
                -n 150 -i "The dog" > $D/spec.txt 2>/dev/null
            if cmp -s $D/ref.txt $D/spec.txt; then ok; else bad "greedy spec (--draft-weights $w, K=$k) != target"; fi
        done
    done
    echo "shipped pair: --draft-weights f32 (K = 4, auto): greedy spec byte-identical to the target"
    same_text "weights/target.bin -d weights/draft.bin -z tokenizer.bin" 120 0.8 "Once upon a time"
    same_text "weights/target.bin -d weights/draft.bin -z tokenizer.bin" 120 1 "Once upon a time"
else
    echo "SKIP shipped pair: weights/ not built yet ('make weights')"
fi

# ---- README's worked rounds (chain and tree): the commands they name still print their lines
worked() { # worked MARKER WHAT
    local args; args=$(sed -n "s/^<!-- $1: \(.*\) -->\$/\1/p" README.md)
    sed -n "/^<!-- $1:/,/^<!-- end $1 -->/p" README.md | grep -v '^<!--' | grep -v '^```' | grep -v '^$' > $D/$1_want.txt
    eval "$SPECDEC weights/target.bin -d weights/draft.bin -z tokenizer.bin $args" 2>&1 >/dev/null | grep -v '^$' | head -n $(wc -l < $D/$1_want.txt) > $D/$1_got.txt
    if [ -n "$args" ] && [ -s $D/$1_want.txt ] && cmp -s $D/$1_want.txt $D/$1_got.txt; then ok
    else bad "README's $2 is stale: specdec $args now prints $(diff $D/$1_want.txt $D/$1_got.txt | head -c 400)"; fi
    echo "README: the $2 ($(wc -l < $D/$1_want.txt) lines) is what specdec $args prints"
}
if [ -f README.md ] && [ -f weights/target.bin ] && [ -f weights/draft.bin ] && [ -f tokenizer.bin ]; then
    worked worked-round "worked round"
    worked worked-tree "worked tree round"
fi

# ---- specdec.c's table of contents: each "// FROM-TO  Title" names the line of its section
if [ -f specdec.c ]; then
    n_toc=0
    while read -r from to title; do
        n_toc=$((n_toc + 1))
        got=$(sed -n "${from}p" specdec.c)
        bar=$(sed -n "$((from - 1))p" specdec.c)
        if [ "${got#// $title}" != "$got" ] && [ "${bar#// ---}" != "$bar" ]; then ok
        else bad "specdec.c's contents say '$title' starts at line $from, which reads: $got"; fi
    done < <(sed -n '/^\/\/ CONTENTS/,/^\/\/ Build:/p' specdec.c | sed -n 's|^// *\([0-9][0-9]*\)-\([0-9][0-9]*\) *\(.*\)$|\1 \2 \3|p')
    [ $n_toc -ge 10 ] && ok || bad "specdec.c's contents list $n_toc sections"
    echo "contents: specdec.c's $n_toc section line numbers are where its sections start"
fi

# ---- the book's line budget (test/budget.sh prints it; make budget)
if [ -f specdec.c ] && [ -f test/budget.sh ]; then
    if out=$(bash test/budget.sh specdec.c); then ok; else bad "over budget: $out"; fi
    echo "$out"
fi

# ---- llama2.c's runq.c (RUNQ=path/to/runq, built from llama2.c) on the shipped target's
# version-2 file: specdec's greedy text starts with runq's (its -n counts the prompt too)
if [ -n "${RUNQ:-}" ] && [ -x "${RUNQ:-}" ] && [ -f weights/target.bin ] && [ -f tokenizer.bin ]; then
    $RANDCKPT --q80 weights/target.bin $D/shipped_q80.bin || exit 1
    want=$("$RUNQ" $D/shipped_q80.bin -z tokenizer.bin -t 0 -n 80 -i "Once upon a time" 2>/dev/null)
    got=$($SPECDEC $D/shipped_q80.bin -z tokenizer.bin -m target -t 0 -n 80 -i "Once upon a time" 2>/dev/null)
    if [ -n "$want" ] && [ "${got#"$want"}" != "$got" ]; then ok; else bad "runq.c: '$want' is not where specdec's '$got' starts"; fi
    echo "runq.c: the shipped target's version-2 file decodes runq.c's greedy text"
else
    echo "SKIP runq.c: give RUNQ=path/to/runq (llama2.c's runq.c, built)"
fi

# ---- llama2.c's stories260K
R=../shared/data/ref
if [ -f $R/stories260K.bin ] && [ -f $R/tok512.bin ]; then
    want="Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball."
    for mode in target spec; do
        d=""; [ $mode = spec ] && d="-d $R/stories260K.bin"
        out=$($SPECDEC $R/stories260K.bin $d -z $R/tok512.bin -m $mode -t 0 -n 60 -i "Once upon a time" 2>/dev/null)
        case "$out" in "$want"*) ok ;; *) bad "stories260K -m $mode: got '$out'" ;; esac
    done
    $RANDCKPT --q80 $R/stories260K.bin $D/s260q80.bin || exit 1 # its version-2 export (groups of 4)
    for d in "-m target" "-d $R/stories260K.bin"; do
        out=$($SPECDEC $D/s260q80.bin $d -z $R/tok512.bin -t 0 -n 60 -i "Once upon a time" 2>/dev/null)
        case "$out" in "$want"*) ok ;; *) bad "stories260K in int8 ($d): got '$out'" ;; esac
    done
    # export.py's own version 2 (groups of 64, run across w2's rows of 172): read exactly, its text
    # as its weights' in f32 (dequantised) for 60 tokens, where int8 activations have not yet told
    $RANDCKPT --q80 $R/stories260K.bin $D/s260x.bin 64 && $RANDCKPT --dequantize $D/s260x.bin $D/s260x_f32.bin || exit 1
    f32=$($SPECDEC $D/s260x_f32.bin -z $R/tok512.bin -m target -t 0 -n 60 -i "Once upon a time" 2>/dev/null)
    for d in "-m target" "-d $R/stories260K.bin"; do
        out=$($SPECDEC $D/s260x.bin $d -z $R/tok512.bin -t 0 -n 60 -i "Once upon a time" 2>/dev/null)
        case "$out" in "$want"*) [ "$out" = "$f32" ] && ok || bad "stories260K export.py GS 64 ($d): '$out', in f32 '$f32'" ;;
                       *) bad "stories260K export.py GS 64 ($d): got '$out'" ;; esac
    done
    echo "stories260K: greedy output starts with llama2.c's known text (target and spec; its version-2 exports too,"
    echo "    export.py's with groups across w2's rows the same 60 tokens as its weights in f32)"
else
    echo "SKIP stories260K: $R absent"
fi

# ---- -v teaching trace: every round, each examined position's q, p, u and
# verdict; every round ends at one REJECT (with its residual draw) or at an
# accepted proposal for the position after K accepted drafts
$SPECDEC $M -d $D/draft.bin -t 1 -n 40 -k 3 -q -v 2> $D/trace.txt
rounds=$(LC_ALL=C grep -c '^round [0-9]* at position [0-9]*, K=' $D/trace.txt)
verdicts=$(LC_ALL=C grep -cE '^  pos [0-9]+ (draft|next ) .* d=[0-9.]+  q=[0-9.]+ p=[0-9.]+ p/q=[0-9.]+ u=[0-9.]+  (accept|REJECT -> residual mass [0-9.]+, coin [0-9.]+: .+)$' $D/trace.txt)
endings=$(LC_ALL=C grep -cE '(REJECT -> residual mass|^  pos [0-9]+ next .*accept$)' $D/trace.txt)
if [ "$rounds" -gt 0 ] && [ "$endings" -eq "$rounds" ] && [ "$verdicts" -ge "$rounds" ]; then ok
else bad "-v trace: $rounds rounds, $verdicts position lines, $endings rounds' endings"; fi
echo "trace: -v shows $rounds rounds, $verdicts position verdicts, each round ending in a rejection or an accepted next position"

# ---- --lenience below 1 is lossy, and says so on stderr and in the JSON
$SPECDEC $M -d $D/draft.bin -t 1 -n 40 -q --lenience 0.5 -j $D/len.json 2> $D/len.txt
if grep -q "LOSSY: --lenience 0.5" $D/len.txt && grep -q '"lossy": true' $D/len.json; then ok
else bad "--lenience 0.5 did not say it is lossy: $(head -c 300 $D/len.txt)"; fi
echo "lenience: --lenience 0.5 says LOSSY on stderr and \"lossy\": true in the JSON"

# ---- -j JSON keys
for mode in spec target draft; do
    $SPECDEC $M $(draft_for $mode) -m $mode -n 30 -q -j $D/s.json 2>/dev/null || bad "-j run failed"
    keys="mode target drafter draft draft_weights target_weights tokenizer prompt tree n seed temperature top_p top_k threads prompt_tokens prompt_seconds generated_tokens ended_by tokens seconds tokens_per_second"
    [ $mode = spec ] && keys="$keys lenience lossy k auto_k target_forwards draft_forwards drafted examined accepted acceptance_rate alpha tokens_per_round per_position_acceptance accepted_histogram rounds_per_k rounds draft_seconds verify_seconds plain_target_tokens target_step_seconds c r expected_tokens_per_round predicted_speedup estimated_speedup calibration_seconds draft_threads"
    for key in $keys; do
        if grep -q "\"$key\":" $D/s.json; then ok; else bad "-m $mode -j: key $key missing"; fi
    done
done
echo "json: every promised key present in spec, target and draft modes"

# ---- the JSON records the run, and its counts agree with the text's: rounds_per_k
# from K = 0 sums to rounds; the positions counted are the ones generated (none
# past -n or the end of the text); -k 0 is auto-K; a tree says so, not K
jv() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@" 2>/dev/null; }
for args in "-k 0 -t 1 -n 37" "-k 5 -t 0 -n 41" "--tree 3,2,1 -t 1 -n 23" "-d lookup -k 3 -t 0.8 -n 50 -i x_x_x_x_x"; do
    $SPECDEC $M -d $D/draft.bin $args -q -j $D/c.json 2> $D/c.err
    got=$(jv $D/c.json "sum(d['rounds_per_k']) == d['rounds'] and len(d['rounds_per_k']) == 17 and d['examined'] + d['plain_target_tokens'] == d['generated_tokens'] and d['prompt'] is not None and d['n'] > 0")
    if [ "$got" = True ]; then ok; else bad "-j $args: rounds_per_k, counted positions or the run's record disagree: $(head -c 400 $D/c.json)"; fi
done
if [ "$(jv $D/c.json "d['drafter']")" = lookup ]; then ok; else bad "-d lookup: the JSON's drafter is $(jv $D/c.json "d['drafter']")"; fi
$SPECDEC $M -d $D/draft.bin -k 0 -n 30 -q -j $D/c.json 2>/dev/null
if [ "$(jv $D/c.json "d['auto_k']")" = True ]; then ok; else bad "-k 0: auto_k is not true"; fi
$SPECDEC $M -d $D/draft.bin --tree 3,2,1 -n 30 -q -j $D/c.json 2> $D/c.err
if [ "$(jv $D/c.json "(d['tree'], d['auto_k'], d['k'])")" = "('3,2,1', False, 0)" ] && grep -q "rounds, --tree 3,2,1" $D/c.err && ! grep -q "K = " $D/c.err; then ok
else bad "--tree 3,2,1: the JSON or the report reads like a chain: $(jv $D/c.json "(d['tree'], d['auto_k'], d['k'])") $(grep rounds $D/c.err)"; fi
# a run that ends on the end-of-text token counts no position after it (-v shows none)
$SPECDEC $M -d $D/draft.bin -k 8 -t 0 -n 150 -q -j $D/c.json 2>/dev/null
if [ "$(jv $D/c.json "d['examined'] + d['plain_target_tokens'] == d['generated_tokens']")" = True ]; then ok
else bad "-k 8: counted positions past the end of the text ($(jv $D/c.json "d['ended_by'], d['examined'], d['generated_tokens']"))"; fi
echo "json: the run recorded; counts agree with the generated tokens; auto-K and trees labelled"

# ---- a static tree at t = 1 is not cut by -n: any -n is a prefix of a longer run
$SPECDEC $M -d $D/draft.bin --tree 3,3 -t 1 -s 1 -n 10 -i "Once upon" > $D/t10.txt 2>/dev/null
$SPECDEC $M -d $D/draft.bin --tree 3,3 -t 1 -s 1 -n 11 -i "Once upon" > $D/t11.txt 2>/dev/null
$SPECDEC $M -d $D/draft.bin --tree 3,3 -t 1 -s 1 -n 40 -i "Once upon" > $D/t40.txt 2>/dev/null
a=$(tr -d '\n' < $D/t10.txt); b=$(tr -d '\n' < $D/t11.txt); c=$(tr -d '\n' < $D/t40.txt)
if [ "${b#"$a"}" != "$b" ] && [ "${c#"$b"}" != "$c" ]; then ok; else bad "--tree 3,3 -t 1: -n 10 / 11 / 40 are not prefixes: '$a' / '$b' / '$c'"; fi
echo "trees: at t = 1, -n 10 and 11 are prefixes of -n 40"

# ---- Ctrl-C stops the generation and prints the statistics of what was generated
$RANDCKPT $D/ctrlc.bin 128 344 4 4 4 400 8192 --seed 9 || exit 1
# (a script's background job starts with SIGINT ignored, which specdec keeps: trap - INT restores it,
# and $SIGDFL where this script itself started with it ignored)
(trap - INT; exec $SIGDFL $SPECDEC $D/ctrlc.bin -z $D/tok.bin -d $D/ctrlc.bin -t 0 -k 1 -n 8000 -q -j $D/int.json 2> $D/int.err) &
pid=$!; sleep 2; kill -INT $pid 2>/dev/null; wait $pid; rc=$?
if grep -q "(interrupted by Ctrl-C)" $D/int.err && grep -q "rounds, K = " $D/int.err && [ $rc = 0 ] &&
   [ "$(jv $D/int.json "d['ended_by']")" = interrupt ]; then ok
elif grep -q "(-n reached)\|(the model ended the text)" $D/int.err; then echo "ctrl-c: SKIPPED (the run ended within 2 s)"
else bad "Ctrl-C: exit $rc, no statistics: $(head -c 300 $D/int.err)"; fi
echo "ctrl-c: the run stops, prints its statistics and writes its JSON (ended_by: interrupt)"

# ---- make run prints README's story, word for word (its seed fixes it on every machine)
if [ -f README.md ] && [ -f weights/target.bin ] && [ -f weights/draft.bin ] && [ "$QUICK" = 0 ]; then
    $SPECDEC weights/target.bin -d weights/draft.bin -z tokenizer.bin -i "Once upon a time" -n 200 -t 0.8 -p 0.9 -s 6 \
        > $D/story.txt 2>/dev/null
    python3 -c "import sys; r=open('README.md').read(); c='-p 0.9 -s 6\n'; i=r.index(c)+len(c); s=open(sys.argv[1]).read(); sys.exit(0 if s.strip() and r[i:].startswith(s.rstrip()) else 1)" $D/story.txt 2>/dev/null
    if [ $? = 0 ]; then ok; else bad "make run's story is not README's: $(head -c 200 $D/story.txt)"; fi
fi
# ---- timing a user can compare (llama.cpp's habit): the prompt and the generation on
# their own lines, each with its tokens per second; bench has a usage screen
$SPECDEC $M -d $D/draft.bin -n 20 -i "Once upon a time" -q 2> $D/tl.err
if grep -q "^prompt: [0-9]* tokens, prefilled in [0-9.]* s, [0-9.]* tok/s" $D/tl.err &&
   grep -q "^spec: 20 tokens in [0-9.]* s, [0-9.]* tok/s" $D/tl.err; then ok
else bad "the prompt and generation lines: $(head -c 300 $D/tl.err)"; fi
if [ -x build/bin/bench ]; then
    if build/bin/bench --help > $D/bh.txt 2>&1 && grep -q "usage" $D/bh.txt && grep -q "tree" $D/bh.txt; then ok
    else bad "bench --help: $(head -c 200 $D/bh.txt)"; fi
fi
echo "timing: prompt and generation lines with their own tok/s; bench --help prints its usage"

# ---- the draft's threads: as given, else 1 (a small draft runs fastest alone); never a different text
$SPECDEC $M -d $D/draft.bin --threads 2 --draft-threads 2 -t 0.8 -n 40 -j $D/dt2.json > $D/dt2.txt 2>/dev/null
$SPECDEC $M -d $D/draft.bin --threads 2 -t 0.8 -n 40 -j $D/dta.json > $D/dta.txt 2>/dev/null
if grep -q '"draft_threads": 2' $D/dt2.json && grep -Eq '"draft_threads": 1[,}]' $D/dta.json; then ok
else bad "draft_threads: --draft-threads 2 gave $(grep -o '"draft_threads": [0-9]*' $D/dt2.json), the default $(grep -o '"draft_threads": [0-9]*' $D/dta.json)"; fi
if cmp -s $D/dt2.txt $D/dta.txt; then ok; else bad "the draft's thread count changed the text"; fi
echo "draft threads: --draft-threads 2 kept, the default 1 ($(grep -o '"draft_threads": [0-9]*' $D/dta.json)), same text"

# ---- the default thread count: the CPUs this process may use, not the machine's
# (a process pinned to one CPU that started a thread per online CPU ran 80x slower)
if command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null; then
    taskset -c 0 $SPECDEC $M -d $D/draft.bin -t 0 -n 8 -j $D/pin.json > /dev/null 2>$D/pin.err
    if grep -q '"threads": 1,' $D/pin.json && ! grep -q warning $D/pin.err; then ok
    else bad "pinned to CPU 0, the default ran $(grep -o '"threads": [0-9]*' $D/pin.json)"; fi
    taskset -c 0 $SPECDEC $M -d $D/draft.bin -t 0 -n 8 --threads 2 > /dev/null 2>$D/pin.err
    if grep -q "warning: --threads 2, but this process may use 1 CPU:" $D/pin.err; then ok
    else bad "--threads 2 on one allowed CPU: no warning ($(head -c 200 $D/pin.err))"; fi
    echo "threads: pinned to one CPU the default is 1 thread, and --threads 2 warns"
else
    echo "threads: SKIPPED the pinned-CPU check (no taskset here)"
fi

# ---- bad input: exit code 1 and a message naming the problem
le32() { local v=$(( $1 & 0xffffffff )); printf "\\x$(printf %02x $((v & 255)))\\x$(printf %02x $(((v >> 8) & 255)))\\x$(printf %02x $(((v >> 16) & 255)))\\x$(printf %02x $(((v >> 24) & 255)))"; }
header() { for v in "$@"; do le32 $v; done; }
header 0 172 2 4 2 400 160 > $D/zero_dim.bin
header 64 172 2 4 2 400 -5 > $D/neg_seq.bin
header 66 172 2 4 2 400 160 > $D/dim_heads.bin
header 64 172 2 4 3 400 160 > $D/kv_heads.bin
head -c 20 $D/target.bin > $D/tiny.bin
head -c 100000 $D/target.bin > $D/trunc.bin
{ cat $D/target.bin; printf 'xxxx'; } > $D/long.bin
{ le32 16; for i in 0 1 2; do le32 0; le32 50; done; } > $D/badlen.tok   # length 50 > max 16
head -c 300 $D/tok.bin > $D/shorttok.tok
{ le32 16; for i in $(seq 400); do printf '\x00\x00\x00\x00\x01\x00\x00\x00a'; done; } > $D/badbytes.tok
long_prompt=$(printf 'word %.0s' $(seq 40))
expect_fail() { # expect_fail "message substring" args...
    local want=$1; shift
    local err; err=$($SPECDEC "$@" 2>&1 >/dev/null); local rc=$?
    if [ $rc -eq 1 ] && grep -qF -- "$want" <<<"$err"; then ok
    else bad "specdec $* -> exit $rc, stderr: $(head -c 300 <<<"$err") (want exit 1 and '$want')"; fi
}
expect_fail "cannot open Medusa heads" $M -d medusa:$D/missing.bin
expect_fail "not a medusa.bin" $M -d medusa:$D/target.bin
head -c 1000 $D/medusa.bin > $D/md_trunc.bin
expect_fail "file is 1000 bytes but 4 heads of dim 64 need" $M -d medusa:$D/md_trunc.bin
expect_fail "heads for dim 64 and vocab_size 400, but the target has dim 32" $D/vocab500.bin -z $D/tok500.bin -d medusa:$D/medusa.bin
python3 -c "import sys; b=bytearray(open(sys.argv[1],'rb').read()); b[8:12]=(17).to_bytes(4,'little'); open(sys.argv[2],'wb').write(b)" $D/medusa.bin $D/md_heads.bin 2>/dev/null &&
    expect_fail "header field n_heads = 17, expected 1..16" $M -d medusa:$D/md_heads.bin
python3 -c "import sys; b=bytearray(open(sys.argv[1],'rb').read()); b[20+4*(64*64+64+3):24+4*(64*64+64+3)]=bytes([0,0,0xc0,0x7f]); open(sys.argv[2],'wb').write(b)" $D/medusa.bin $D/md_nan.bin 2>/dev/null &&
    expect_fail "head 2's W, element 3, is not finite" $M -d medusa:$D/md_nan.bin
expect_fail "-d medusa: only spec mode drafts" $M -m draft -d medusa
expect_fail "not an eagle.bin" $M -d eagle:$D/medusa.bin
head -c 1000 $D/eagle.bin > $D/eg_trunc.bin
expect_fail "file is 1000 bytes but dim 64 and hidden 96 need" $M -d eagle:$D/eg_trunc.bin
expect_fail "a drafter for dim 64 and vocab_size 400, but the target has dim 32" $D/vocab500.bin -z $D/tok500.bin -d eagle:$D/eagle.bin
expect_fail "cannot open EAGLE drafter" $M -d eagle:$D/missing.bin
expect_fail "cannot open checkpoint" $D/missing.bin -z $D/tok.bin -m target
expect_fail "not a regular file" $D -z $D/tok.bin -m target
expect_fail "shorter than the 28-byte" $D/tiny.bin -z $D/tok.bin -m target
expect_fail "truncated" $D/trunc.bin -z $D/tok.bin -m target
expect_fail "longer than a legacy" $D/long.bin -z $D/tok.bin -m target
expect_fail "dim = 0" $D/zero_dim.bin -z $D/tok.bin -m target
expect_fail "seq_len = -5" $D/neg_seq.bin -z $D/tok.bin -m target
expect_fail "not a multiple of n_heads" $D/dim_heads.bin -z $D/tok.bin -m target
expect_fail "not a multiple of n_kv_heads" $D/kv_heads.bin -z $D/tok.bin -m target
expect_fail "cannot open checkpoint" $M -d $D/missing.bin
expect_fail "cannot open tokenizer" $D/target.bin -z $D/missing.tok -m target
expect_fail "has 500 tokens but the model's vocab_size is 400" $D/target.bin -z $D/tok500.bin -m target
expect_fail "outside 1..max_token_length" $D/target.bin -z $D/badlen.tok -m target
expect_fail "file ends inside" $D/target.bin -z $D/shorttok.tok -m target
expect_fail "must be the byte token" $D/target.bin -z $D/badbytes.tok -m target
expect_fail "differs from the target's" $M -d $D/vocab500.bin
expect_fail "prompt is" $D/short.bin -z $D/tok.bin -m target -i "$long_prompt"
expect_fail "-k -1" $M -k -1
expect_fail "-k 17" $M -k 17
expect_fail "-n -1" $M -n -1
expect_fail "-n abc" $M -n abc
expect_fail "-t xyz" $M -t xyz
expect_fail "-t -1" $M -t -1
expect_fail "-p 2" $M -p 2
expect_fail "-s 1.5" $M -s 1.5
expect_fail "unknown flag -x" $M -x 3
expect_fail "-m fast" $M -m fast
expect_fail "-n (missing)" $M -n
# hardening regressions (issue 11): each once crashed, hung or decoded garbage
python3 -c "import struct,sys;sys.stdout.buffer.write(struct.pack('<7i',65536,13903263,3363637,32768,1,2048,1)+b'\0'*8)" > $D/ovf.bin
header 64 172 2 4 2 -2147483648 160 > $D/intmin.bin
poke() { cp $2 $3; printf "$4" | dd of=$3 bs=1 seek=$1 conv=notrunc status=none; } # poke OFFSET SRC DST BYTES
poke $((28 + 4 * 5000)) $D/target.bin $D/nan.bin '\x00\x00\xc0\x7f'
poke $((28 + 4 * (400 * 64 + 100))) $D/target.bin $D/inf.bin '\x00\x00\x80\xff'
$RANDCKPT $D/kv16g.bin 2 1 8192 1 1 512 131072 || exit 1
mkdir -p $D/adir
long16k=$(head -c 16384 /dev/zero | tr '\0' 'a')
expect_fail "needs more than 2^64 bytes" $D/ovf.bin -d $D/ovf.bin -n 4
expect_fail "vocab_size = -2147483648" $D/intmin.bin -z $D/tok.bin -m target
expect_fail "weight token_embedding (layer 0, row 78, column 8) is NaN" $D/nan.bin -z $D/tok.bin -m target
expect_fail "weight rms_att (layer 1, row 0, column 36) is infinite" $D/inf.bin -z $D/tok.bin -m target
expect_fail "GB of KV caches for 131072 positions, 0.0 GB held already) where specdec allows a run" $D/kv16g.bin -z $D/tok.bin -m target
# ... which a run of 4 tokens does not need: its caches hold the prompt, -n and a verify pass (issue 49)
$RANDCKPT --tokenizer $D/tok512.bin 512 || exit 1
if $SPECDEC $D/kv16g.bin -z $D/tok512.bin -m target -n 4 -q 2>/dev/null; then ok; else bad "kv16g.bin -n 4: sized for all of seq_len"; fi
expect_fail "at least 1e-6" $M -t 1.2e-38
expect_fail "not a regular file" $M -z $D/adir
expect_fail "-j /dev/full: not a regular file" $M -j /dev/full -n 5
expect_fail "a file name among the options" $M -n 5 $D/target.bin
expect_fail "-k: only speculative decoding" $M -m target -k 3
expect_fail "-v: only speculative decoding" $M -m draft -d $D/draft.bin -v
# a llama2.c habit: make run's line with -m target; the draft flags are ignored with a warning
$SPECDEC $M -m target -t 0 -n 30 > $D/tgt.txt 2>/dev/null
$SPECDEC $M -m target -d $D/draft.bin --draft-threads 1 -t 0 -n 30 > $D/tgt_d.txt 2> $D/tgt_d.err
if cmp -s $D/tgt.txt $D/tgt_d.txt && grep -q "warning: -d ignored: -m target decodes with the target alone" $D/tgt_d.err; then ok
else bad "-m target -d: want the target's text and a warning, got: $(head -c 300 $D/tgt_d.err)"; fi
$SPECDEC $M -d lookup --draft-weights f32 -t 0 -n 10 > /dev/null 2> $D/lk_d.err
$SPECDEC $M -d $D/draft.bin --ngram-max 2 -t 0 -n 10 > /dev/null 2> $D/ng_d.err
if grep -q "warning: --draft-threads/--draft-weights ignored: this -d loads no draft model" $D/lk_d.err &&
   grep -q "warning: --ngram-min/--ngram-max ignored" $D/ng_d.err; then ok
else bad "unused draft flags: want warnings, got: $(cat $D/lk_d.err $D/ng_d.err | head -c 300)"; fi
expect_fail "at least 2342 tokens" $D/short.bin -z $D/tok.bin -m target -i "$long16k"
expect_fail "-d lookup: only spec mode" $M -m draft -d lookup
expect_fail "--lenience: only speculative decoding" $M -m target --lenience 0.5
expect_fail "--lenience 0: expected a number in (0, 1]" $M --lenience 0
expect_fail "--ngram-min 4 is above --ngram-max 2" $M -d lookup --ngram-min 4 --ngram-max 2
expect_fail "--threads 0" $M --threads 0
expect_fail "--threads many" $M --threads many
expect_fail "--draft-threads 99" $M --draft-threads 99
expect_fail "-j /nonexistent/x.json: cannot write" $M -j /nonexistent/x.json
expect_fail "--draft-weights int4: expected int8 or f32" $M --draft-weights int4
expect_fail "--draft-weights bf16: expected int8 or f32" $M --draft-weights bf16
$RANDCKPT $D/wide_ffn.bin 16 16388 1 2 1 400 16 --seed 3 || exit 1
expect_fail "$D/wide_ffn.bin: int8 takes dim and hidden_dim multiples of 4 up to 16384, not 16 and 16388 (use f32 weights)" $M -d $D/wide_ffn.bin
expect_fail "--target-weights int4: expected int8 or f32" $M --target-weights int4
# a malformed version-2 file: exit 1, one message naming the file and the field
q80poke() { python3 -c "import struct,sys; b=bytearray(open(sys.argv[1],'rb').read()); o=int(sys.argv[3]); b[o:o+len(bytes.fromhex(sys.argv[4]))]=bytes.fromhex(sys.argv[4]); open(sys.argv[2],'wb').write(b[:int(sys.argv[5])] if len(sys.argv) > 5 else b)" "$@"; }
Q=$D/t192q80.bin; QS=$(stat -c %s $Q)
S0=$((256 + 5 * 64 * 4 + 400 * 64)) # the embedding's first scale
if command -v python3 > /dev/null; then
    q80poke $Q $D/q_trunc.bin 0 "" $((QS - 3)); expect_fail "$D/q_trunc.bin: file is $((QS - 3)) bytes but its version-2 header" $D/q_trunc.bin -z $D/tok.bin -m target
    q80poke $Q $D/q_trunc.bin 0 "" 100; expect_fail "$D/q_trunc.bin: file is 100 bytes, shorter than the 256-byte version-2 header" $D/q_trunc.bin -z $D/tok.bin -m target
    q80poke $Q $D/q_gs0.bin 37 00000000; expect_fail "$D/q_gs0.bin: header field group_size = 0, expected a positive multiple of 4 dividing dim 64" $D/q_gs0.bin -z $D/tok.bin -m target
    q80poke $Q $D/q_gs3.bin 37 30000000; expect_fail "$D/q_gs3.bin: header field group_size = 48" $D/q_gs3.bin -z $D/tok.bin -m target
    q80poke $Q $D/q_gsneg.bin 37 f0ffffff; expect_fail "$D/q_gsneg.bin: header field group_size = -16" $D/q_gsneg.bin -z $D/tok.bin -m target
    q80poke $Q $D/q_nan.bin $S0 0000c07f; expect_fail "$D/q_nan.bin: token_embedding's scale 0 (of values 0..) is nan; a scale must be finite and >= 0" $D/q_nan.bin -z $D/tok.bin -m target
    q80poke $Q $D/q_inf.bin $((S0 + 8)) 0000807f; expect_fail "$D/q_inf.bin: token_embedding's scale 2 (of values 128..) is inf" $D/q_inf.bin -z $D/tok.bin -m target
    q80poke $Q $D/q_neg.bin $((S0 + 4)) 000080bf; expect_fail "$D/q_neg.bin: token_embedding's scale 1 (of values 64..) is -1" $D/q_neg.bin -z $D/tok.bin -m target
    q80poke $Q $D/q_shared.bin 36 00; expect_fail "that size with the other shared_classifier (is the flag wrong?)" $D/q_shared.bin -z $D/tok.bin -m target
    q80poke $Q $D/q_flag.bin 36 07; expect_fail "$D/q_flag.bin: header field shared_classifier = 7, expected 0 or 1" $D/q_flag.bin -z $D/tok.bin -m target
    q80poke $Q $D/q_v1.bin 4 01000000; expect_fail "$D/q_v1.bin: this is a versioned llama2.c export" $D/q_v1.bin -z $D/tok.bin -m target
    q80poke $Q $D/q_v3.bin 4 03000000; expect_fail "$D/q_v3.bin: this is a versioned llama2.c export" $D/q_v3.bin -z $D/tok.bin -m target
    q80poke $Q $D/q_dim.bin 8 41000000; expect_fail "$D/q_dim.bin: dim 65 is not a multiple of n_heads 4" $D/q_dim.bin -z $D/tok.bin -m target
    q80poke $Q $D/q_norm.bin 300 0000c07f; expect_fail "$D/q_norm.bin: weight rms_att (layer 0, row 0, column 11) is NaN" $D/q_norm.bin -z $D/tok.bin -m target
    q80poke $Q $D/q_magic.bin 0 616b3433; expect_fail "$D/q_magic.bin: header field dim = 859073377" $D/q_magic.bin -z $D/tok.bin -m target
fi
# issue 30: an output that names an input is refused, the input intact
cp $D/target.bin $D/victim.bin; cp $D/tok.bin $D/victim.tok; cp $D/draft.bin $D/victim_d.bin
expect_fail "$D/victim.bin (an output of this run) and the checkpoint (a llama2.c .bin) $D/victim.bin are the same file" $D/victim.bin -z $D/tok.bin -m target -n 5 -j $D/victim.bin
expect_fail "$D/victim.tok (an output of this run) and the tokenizer (-z FILE) $D/victim.tok are the same file" $D/target.bin -z $D/victim.tok -m target -n 5 -j $D/victim.tok
expect_fail "$D/victim_d.bin (an output of this run) and the checkpoint (a llama2.c .bin) $D/victim_d.bin are the same file" $M -d $D/victim_d.bin -n 5 -j $D/victim_d.bin
if cmp -s $D/victim.bin $D/target.bin && cmp -s $D/victim.tok $D/tok.bin && cmp -s $D/victim_d.bin $D/draft.bin; then ok
else bad "-j naming an input changed the input"; fi
# -j naming the Medusa or EAGLE file the run reads (the registry covers every input kind);
# -j through a link writes where the link points; a device, stdout's file, "" are refused first
cp $D/medusa.bin $D/victim_m.bin; cp $D/eagle.bin $D/victim_e.bin
expect_fail "$D/victim_m.bin (an output of this run) and the Medusa heads" $M -d medusa:$D/victim_m.bin -n 5 -j $D/victim_m.bin
expect_fail "$D/victim_e.bin (an output of this run) and the EAGLE drafter" $M -d eagle:$D/victim_e.bin -n 5 -j $D/victim_e.bin
if cmp -s $D/victim_m.bin $D/medusa.bin && cmp -s $D/victim_e.bin $D/eagle.bin; then ok; else bad "-j naming a drafter file changed it"; fi
echo '{}' > $D/data.json; rm -f $D/link.json; ln -s data.json $D/link.json
$SPECDEC $M -m target -n 5 -q -j $D/link.json 2>/dev/null
if [ -L $D/link.json ] && grep -q '"generated_tokens": 5' $D/data.json; then ok; else bad "-j through a link: the link replaced or its file not written"; fi
expect_fail "-j /dev/null: not a regular file" $M -m target -n 5 -q -j /dev/null
expect_fail "-j an empty file name" $M -m target -n 5 -q -j ""
$SPECDEC $M -m target -n 5 -j $D/same.log > $D/same.log 2> $D/same.err
if grep -q "is where standard output goes" $D/same.err; then ok; else bad "-j FILE > FILE not refused: $(cat $D/same.err)"; fi
# a failed run leaves the previous JSON as it was, and says so; no temporary file stays behind
echo '{"previous": 1}' > $D/keep.json
expect_fail "-j $D/keep.json: not written (left as it was)" $M -d $D/missing.bin -n 5 -j $D/keep.json
if [ "$(cat $D/keep.json)" = '{"previous": 1}' ] && [ -z "$(ls $D/keep.json.* 2>/dev/null)" ]; then ok
else bad "a failed run changed $D/keep.json or left a temporary file"; fi
# write errors on the text: exit 1 with the reason (a full device; a closed pipe with SIGPIPE ignored)
err=$( { $SPECDEC $M -m target -n 50 > /dev/full; } 2>&1 ); rc=$?
if [ $rc -eq 1 ] && grep -q "No space left on device" <<<"$err"; then ok; else bad "> /dev/full: exit $rc, $err"; fi
err=$( { trap '' PIPE; { sleep 0.3; $SPECDEC $M -m target -n 50; } | { exec 0<&-; sleep 0.6; }; echo "rc=${PIPESTATUS[0]}"; } 2>&1 )
if grep -q "rc=1" <<<"$err" && grep -q "Broken pipe" <<<"$err"; then ok; else bad "closed pipe, SIGPIPE ignored: $err"; fi
# a FIFO as checkpoint or tokenizer is refused at once instead of waiting for a writer
rm -f $D/fifo; mkfifo $D/fifo
err=$(timeout 10 $SPECDEC $D/fifo -z $D/tok.bin -m target -n 5 2>&1); rc=$?
if [ $rc -eq 1 ] && grep -q "not a regular file" <<<"$err"; then ok; else bad "FIFO checkpoint: exit $rc (124: it hung), $err"; fi
err=$(timeout 10 $SPECDEC $D/target.bin -z $D/fifo -m target -n 5 2>&1); rc=$?
if [ $rc -eq 1 ] && grep -q "not a regular file" <<<"$err"; then ok; else bad "FIFO tokenizer: exit $rc (124: it hung), $err"; fi
# a draft whose logits overflow (rms_final = 3e38, finite) proposes nothing: the run
# goes on and prints the target's text, in both draft formats; a target like it
# ends the run, naming the file and the position
huge_final() { python3 -c "
import struct,sys
b=bytearray(open(sys.argv[1],'rb').read()); d,h,L,nh,kv,V,S=struct.unpack('<7i',b[:28]); V=abs(V); hs=d//nh
off=28+4*(V*d+L*d+L*d*d+2*L*d*kv*hs+L*d*d+L*d+3*L*h*d)
b[off:off+4*d]=struct.pack('<f',3e38)*d; open(sys.argv[2],'wb').write(b)" $1 $2; }
huge_final $D/draft.bin $D/huge_draft.bin; huge_final $D/target.bin $D/huge_target.bin
$SPECDEC $M -m target -t 0 -n 40 > $D/ref.txt 2>/dev/null
for w in int8 f32; do
    $SPECDEC $M -d $D/huge_draft.bin --draft-weights $w -t 0 -n 40 > $D/huge.txt 2> $D/huge.err
    if cmp -s $D/ref.txt $D/huge.txt && grep -q "positions had no proposal" $D/huge.err; then ok
    else bad "a draft with non-finite logits ($w): want the target's text, got $(head -c 300 $D/huge.err)"; fi
done
expect_fail "$D/huge_target.bin: the logits at position 1 are not finite (inf or NaN): its activations overflow float32" $D/huge_target.bin -z $D/tok.bin -m target -t 0 -n 5
err=$($SPECDEC $D/huge_target.bin -z $D/tok.bin -m target -t 0 -n 5 2>&1 >/dev/null)
if ! grep -q -- "-t is too small" <<<"$err"; then ok; else bad "-t 0 given, yet the message suggests -t: $err"; fi
# the prompt's bound comes from the longest piece, not the header's max_token_length
# (set to 1024 here, a 24,000-byte prompt took 68 s to refuse)
python3 -c "import sys;b=bytearray(open(sys.argv[1],'rb').read());b[0:4]=(1024).to_bytes(4,'little');open(sys.argv[2],'wb').write(b)" $D/tok.bin $D/tok1024.bin
long24k=$(head -c 24000 /dev/zero | tr '\0' 'a')
err=$(timeout 10 $SPECDEC $D/target.bin -z $D/tok1024.bin -m target -n 5 -i "$long24k" 2>&1 >/dev/null); rc=$?
if [ $rc -eq 1 ] && grep -q "the prompt is 24000 bytes, at least" <<<"$err"; then ok; else bad "a 24,000-byte prompt, max_token_length 1024: exit $rc (124: over 10 s), $err"; fi
expect_fail "--tree 0: expected 1..8 children per level" $M --tree 0
expect_fail "--tree 9,1: expected 1..8 children per level" $M --tree 9,1
expect_fail "--tree 8,8: expected 1..8 children per level" $M --tree 8,8
expect_fail "--tree 2,x: expected 1..8 children per level" $M --tree 2,x
expect_fail "--tree 2,2 with -d lookup: a tree needs spec mode, a draft model, the exact rule" $M -d lookup --tree 2,2
expect_fail "--tree 2,2 with -d medusa: a tree needs spec mode, a draft model" $M -d medusa:$D/medusa.bin --tree 2,2
expect_fail "--tree 2,2 with -d eagle: a tree needs spec mode, a draft model" $M -d eagle:$D/eagle.bin --tree 2,2
expect_fail "--tree auto: expected 1..8 children per level" $M --tree auto
expect_fail "--tree 2,2 with -k: a tree needs" $M --tree 2,2 -k 3
echo "bad input: 70 cases, each exit 1 with a message naming the file or flag"

# ---- issue 44: a llama2.c user's files and habits work; a llama.cpp user's habits get a hint
# 1. no -d and a default draft that does not fit the target (vocab 500 here, 2048 or missing
# in weights/): the target decodes alone, with one note; a -d the user named must fit
$SPECDEC $D/vocab500.bin -z $D/tok500.bin -m target -t 0 -n 30 > $D/v500_ref.txt 2>/dev/null
$SPECDEC $D/vocab500.bin -z $D/tok500.bin -t 0 -n 30 > $D/v500.txt 2> $D/v500.err; rc=$?
if [ $rc -eq 0 ] && cmp -s $D/v500_ref.txt $D/v500.txt && [ "$(grep -c 'specdec:' $D/v500.err)" = 1 ] &&
   grep -q "note: the default draft .* so $D/vocab500.bin decodes alone (-m target); to speculate, name a draft" $D/v500.err
then ok; else bad "no -d, a default draft that does not fit: exit $rc, $(head -c 400 $D/v500.err)"; fi
expect_fail "-k: the default draft" $D/vocab500.bin -z $D/tok500.bin -k 3 -n 5
expect_fail "$D/draft.bin: vocab_size 400 differs from the target's 500 ($D/vocab500.bin); -m draft runs the draft" $D/vocab500.bin -z $D/tok500.bin -m draft -d $D/draft.bin -n 5
expect_fail "$D/nosuch.bin: cannot open checkpoint" $D/nosuch.bin -z $D/tok.bin -m draft -d $D/draft.bin -n 5
if [ -f $R/stories260K.bin ] && [ -f $R/tok512.bin ]; then # llama2.c's own command line
    out=$($SPECDEC $R/stories260K.bin -z $R/tok512.bin -i "Once upon a time" -t 0 -n 60 2> $D/s260.err)
    case "$out" in "$want"*) ok ;; *) bad "stories260K, no -d: got '$out' $(head -c 300 $D/s260.err)" ;; esac
    [ -f weights/draft.bin ] && expect_fail "weights/draft.bin: vocab_size 2048 differs from the target's 512" $R/stories260K.bin -z $R/tok512.bin -m draft -n 5
fi
# 2. llama.cpp's flags: what they probably meant
expect_fail "-m $D/target.bin: expected a mode: spec, target or draft (-m is the mode, run.c's generate is spec or target, no chat; the model is the first argument" -m $D/target.bin -z $D/tok.bin
expect_fail "-p Once upon a time: expected a number in (0, 1] (-p is top-p, as in llama2.c; the prompt is -i TEXT or -f FILE" $M -p "Once upon a time"
expect_fail "unknown flag --temp (the temperature is -t T" $M --temp 0.7
expect_fail "-m generate: expected a mode: spec, target or draft (-m is the mode, run.c's generate is spec or target" $M -m generate
expect_fail "-n -1: expected an integer in 0..16777216 (without -n it decodes until the context is full" $M -n -1
expect_fail "-s -1: expected an integer in 0..18446744073709551615 (llama.cpp's -s -1, a random seed, is -s \$RANDOM here" $M -s -1
expect_fail "unknown flag -md (the draft is -d FILE" $M -md $D/draft.bin
expect_fail "unknown flag -c (the context is the checkpoint's seq_len" $M -c 512
expect_fail "unknown flag -ngl (specdec runs on the CPU" $M -ngl 99
$SPECDEC $M -m target -t 4 -n 3 -q 2> $D/t4.err
if grep -q "warning: -t 4 is the temperature, as in llama2.c (above 2 the text is close to noise); threads are --threads N" $D/t4.err; then ok
else bad "-t 4: no warning naming --threads: $(head -c 300 $D/t4.err)"; fi
# 3. -f FILE and -f - (stdin): the same text as -i, one final newline dropped; a prompt too long for a shell line
p3="the little dog said hello to the big cat and the cat said hello back"
printf '%s\n' "$p3" > $D/prompt.txt
$SPECDEC $M -m target -t 0 -n 20 -i "$p3" > $D/pi.txt 2>/dev/null
$SPECDEC $M -m target -t 0 -n 20 -f $D/prompt.txt > $D/pf.txt 2>/dev/null
$SPECDEC $M -m target -t 0 -n 20 -f - < $D/prompt.txt > $D/ps.txt 2>/dev/null
if [ -s $D/pi.txt ] && cmp -s $D/pi.txt $D/pf.txt && cmp -s $D/pi.txt $D/ps.txt; then ok; else bad "-f FILE / -f - print other text than -i"; fi
head -c 300000 /dev/zero | tr '\0' 'a' > $D/long_prompt.txt
expect_fail "-f -: the prompt is 300000 bytes, at least" $M -m target -n 5 -f - < $D/long_prompt.txt
expect_fail "-f $D/long_prompt.txt: the prompt is 300000 bytes" $M -m target -n 5 -f $D/long_prompt.txt
head -c 17000000 /dev/zero | tr '\0' a > $D/huge_prompt.txt
expect_fail "-f -: more than 16 MB; expected a prompt" $M -m target -n 5 -f - < $D/huge_prompt.txt
rm -f $D/huge_prompt.txt
expect_fail "-f $D/nosuch.txt: cannot open the prompt file" $M -n 5 -f $D/nosuch.txt
expect_fail "-f $D: not a regular file (a FIFO, device or directory)" $M -n 5 -f $D
expect_fail "-i and -f both give the prompt" $M -n 5 -i hi -f $D/prompt.txt
printf 'a\0b' > $D/nul.txt
expect_fail "-f $D/nul.txt: a NUL byte at offset 1" $M -n 5 -f $D/nul.txt
# 7. the real limits; trees: no overflow, no trailing comma, sign or space; what --tree needs
expect_fail "-n 20000000: expected an integer in 0..16777216" $M -n 20000000
expect_fail "-t 1e7: expected a number in 0..1e6" $M -t 1e7
expect_fail "-s 18446744073709551616: expected an integer in 0..18446744073709551615" $M -s 18446744073709551616
$SPECDEC $M -n 3 -q -s 18446744073709551615 -j $D/seed.json 2>/dev/null
if grep -q '"seed": 18446744073709551615,' $D/seed.json; then ok; else bad "-s 2^64-1 not taken: $(grep -o '"seed": [0-9]*' $D/seed.json)"; fi
for tr in 20 7,7,7,7,7,7,7,7,7,7,7 3,2,1, " 3" +3 2,,2 "" 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1; do
    expect_fail "--tree $tr: expected 1..8 children per level like 3,2,1 (3 + 6 + 6 = 15 nodes), at most 16 levels and 32 nodes" $M -d $D/draft.bin --tree "$tr"
done
expect_fail "--tree 3,1 with -d lookup: a tree needs spec mode, a draft model, the exact rule (no --lenience) and no -k" $M -d lookup --tree 3,1
expect_fail "--tree 3,1 with --lenience: a tree needs" $M -d $D/draft.bin --tree 3,1 --lenience 0.5
expect_fail "--tree 2 with -m target: a tree needs" $M -m target --tree 2
$SPECDEC $D/draft_small.bin -z $D/tok.bin -d $D/target.bin -t 0 -n 5 > /dev/null 2> $D/swap.err
if grep -q "warning: the draft $D/target.bin (.* MB) is larger than the target $D/draft_small.bin (.* MB)" $D/swap.err &&
   [ "$(grep -n 'warning: the draft' $D/swap.err | cut -d: -f1)" = 1 ]; then ok
else bad "a draft larger than the target: no warning before the run: $(head -c 300 $D/swap.err)"; fi
# 8. -n's default: until the context is full, said without alarm; default files beside the binary; -h says so
$SPECDEC $D/short.bin -z $D/tok.bin -m target -t 0 -j $D/ndef.json > /dev/null 2> $D/ndef.err
if ! grep -q "note: stopped" $D/ndef.err && grep -q "the context (seq_len) is full" $D/ndef.err &&
   grep -q '"generated_tokens": 15,' $D/ndef.json && grep -q '"ended_by": "context"' $D/ndef.json; then ok
else bad "the default -n on a 16-position model: $(head -c 300 $D/ndef.err)"; fi
rm -rf $D/beside $D/elsewhere; mkdir -p $D/beside/weights $D/elsewhere
cp $SPECDEC $D/beside/specdec && cp $D/target.bin $D/beside/weights/target.bin && cp $D/draft.bin $D/beside/weights/draft.bin && cp $D/tok.bin $D/beside/tokenizer.bin
(cd $D/elsewhere && ../beside/specdec -t 0 -n 30 > out.txt 2> err.txt); rc=$?
$SPECDEC $M -d $D/draft.bin -t 0 -n 30 > $D/beside_ref.txt 2>/dev/null
if [ $rc -eq 0 ] && cmp -s $D/beside_ref.txt $D/elsewhere/out.txt && ! grep -q note $D/elsewhere/err.txt; then ok
else bad "default files beside the binary: exit $rc, $(head -c 300 $D/elsewhere/err.txt)"; fi
$SPECDEC -h > $D/help.txt
for w in "until the context is full" "taken from beside the binary" "-d medusa" "whose text depends on K, take a fixed K" "-f FILE" "0..2^64-1"; do
    if grep -qF -- "$w" $D/help.txt; then ok; else bad "-h does not say '$w'"; fi
done
# 9. the docs say what the build and the files are
if [ -f weights/draft.bin ]; then
    mb=$(awk -v b=$(wc -c < weights/draft.bin) 'BEGIN { printf "%.1f", b / 1e6 }')
    if grep -q "$mb MB on disk" README.md && grep -q "^#   make .*AVX-512 + VNNI, AVX-512, AVX2+FMA" Makefile &&
       ! grep -q "the next run goes on" README.md && grep -q "with llama2.c's \`tokenizer.bin\`" README.md; then ok
    else bad "README/Makefile: the draft's $mb MB on disk, make's SIMD, the stall rule or the tokenizers misstated"; fi
fi
echo "issue 44: default draft fallback, -m draft's check, llama.cpp hints, -f, true limits, trees, swapped pair, -n and paths"

# a prompt that (nearly) fills the context: it says so, on stderr and in the JSON
prompt14=$(printf 'a %.0s' $(seq 12)) # 13 tokens with BOS: 3 positions left of 16
$SPECDEC $D/short.bin -z $D/tok.bin -m target -t 0 -n 50 -i "$prompt14" -j $D/ctx.json > /dev/null 2> $D/ctx.txt
gen=$(sed -n 's/.*"generated_tokens": \([0-9]*\).*/\1/p' $D/ctx.json)
if grep -q 'note: stopped after [0-9]* of the 50 tokens asked for (-n): the context of 16 positions is full' $D/ctx.txt &&
   grep -q '"ended_by": "context"' $D/ctx.json && [ "${gen:-99}" -lt 50 ]; then ok
else bad "a prompt near seq_len: $(cat $D/ctx.txt | head -c 300)"; fi
echo "context: a run cut short by seq_len says so on stderr and in the JSON ($gen of 50 tokens)"

# ---- issue 49: files
# -f's file is an input: -j naming it (by its name, or as stdin) is refused, the prompt kept
printf 'Once upon a time\n' > $D/p49.txt
expect_fail "$D/p49.txt (an output of this run) and $D/p49.txt are the same file" $M -m target -n 5 -f $D/p49.txt -j $D/p49.txt
err=$($SPECDEC $M -m target -n 5 -f - -j $D/p49.txt < $D/p49.txt 2>&1 >/dev/null); rc=$?
if [ $rc -eq 1 ] && grep -qF "$D/p49.txt (an output of this run) and the prompt (-f -: stdin) are the same file" <<<"$err" &&
   [ "$(cat $D/p49.txt)" = "Once upon a time" ]; then ok
else bad "-f - -j p.txt < p.txt: exit $rc, $(head -c 300 <<<"$err"), the prompt now: $(head -c 100 $D/p49.txt)"; fi
# -f FIFO (no writer) and -f /dev/zero: refused at once, not waited on or read (timeout: 124 if it hangs)
rm -f $D/fifo49; mkfifo $D/fifo49
for f in $D/fifo49 /dev/zero; do
    err=$(timeout 10 $SPECDEC $M -m target -n 5 -f $f 2>&1 >/dev/null); rc=$?
    if [ $rc -eq 1 ] && grep -qF -- "-f $f: not a regular file" <<<"$err"; then ok; else bad "-f $f: exit $rc (124: it hung), $(head -c 300 <<<"$err")"; fi
done
# -j in a directory that takes no file (/proc): refused by the plan, before a token is generated
out=$($SPECDEC $M -m target -n 5 -j /proc/x49.json 2> $D/proc49.err); rc=$?
if [ $rc -eq 1 ] && [ -z "$out" ] && grep -qF -- "-j /proc/x49.json: cannot make a file in the directory /proc" $D/proc49.err; then ok
else bad "-j /proc/x49.json: exit $rc, $(wc -c <<<"$out") bytes of text, $(head -c 300 $D/proc49.err)"; fi
# -j through another user's link in a sticky world-writable directory: refused (root only: lchown)
if [ "$(id -u)" = 0 ]; then
    rm -rf $D/sticky49; mkdir -m 1777 $D/sticky49; echo keep > $D/victim49.txt
    ln -s ../victim49.txt $D/sticky49/j.json && chown -h 65534 $D/sticky49/j.json
    expect_fail "$D/sticky49/j.json: a link of another user (uid 65534) in a sticky world-writable directory" $M -m target -n 5 -j $D/sticky49/j.json
    if [ "$(cat $D/victim49.txt)" = keep ]; then ok; else bad "-j through another user's link in a sticky dir changed the file"; fi
else echo "SKIP -j through another user's link: not root"; fi
# bench: its outputs are checked before anything is measured (timeout: 124 if it started measuring)
if [ -x build/bin/bench ]; then
    err=$(timeout 20 build/bin/bench all --csv $D/nosuch49 2>&1 >/dev/null); rc=$?
    if [ $rc -eq 1 ] && grep -qF -- "--csv $D/nosuch49/verify_cost.csv: cannot write in the directory" <<<"$err"; then ok
    else bad "bench all --csv (missing dir): exit $rc (124: it measured), $(head -c 300 <<<"$err")"; fi
    cp $D/target.bin $D/victim49.bin
    err=$(timeout 20 build/bin/bench all --target $D/victim49.bin --json $D/victim49.bin 2>&1 >/dev/null); rc=$?
    if [ $rc -eq 1 ] && grep -qF "are the same file" <<<"$err" && cmp -s $D/victim49.bin $D/target.bin; then ok
    else bad "bench all --json naming its --target: exit $rc (124: it measured), $(head -c 300 <<<"$err")"; fi
fi
echo "issue 49: -f registered and FIFOs refused, -j planned to the directory, foreign links refused, bench's outputs first"

# ---- issue 49: results and habits
# 6. a version-2 draft or target runs int8 whatever --draft-weights/--target-weights say:
# one warning line, and the JSON records what ran
$SPECDEC $M -d $D/t192q80.bin --draft-weights f32 -t 0 -n 5 -q -j $D/w49d.json 2> $D/w49d.err
$SPECDEC $MQ -m target --target-weights f32 -t 0 -n 5 -q -j $D/w49t.json 2> $D/w49t.err
if grep -q '"draft_weights": "int8"' $D/w49d.json && grep -q '"target_weights": "int8"' $D/w49t.json &&
   [ "$(grep -c "warning: --draft-weights f32 ignored: $D/t192q80.bin is a version-2 file" $D/w49d.err)" = 1 ] &&
   [ "$(grep -c "warning: --target-weights f32 ignored: $D/t192q80.bin is a version-2 file" $D/w49t.err)" = 1 ]; then ok
else bad "f32 asked of a version-2 file: $(grep -o '"[a-z]*_weights": "[a-z0-9]*"' $D/w49d.json $D/w49t.json | tr '\n' ' ') $(head -c 200 $D/w49d.err)"; fi
# 7. a Latin-1 prompt: the JSON is UTF-8, each byte that is not as \u00XX (its Latin-1 character)
printf 'caf\xe9 na\xefve \xe2\x80\x94 \xed\xa0\x80 ok\n' > $D/latin1.txt
$SPECDEC $M -m target -t 0 -n 3 -q -f $D/latin1.txt -j $D/latin1.json 2>/dev/null
if python3 -c "import json,sys; p=json.loads(open(sys.argv[1],'rb').read().decode('utf-8'))['prompt']
sys.exit(p != 'caf\xe9 na\xefve \u2014 \xed\xa0\x80 ok')" $D/latin1.json 2>/dev/null; then ok
else bad "a Latin-1 prompt's JSON is not UTF-8 with \\u00XX escapes: $(grep -ao '"prompt": "[^"]*"' $D/latin1.json)"; fi
# 9. signals: SIGINT ignored at the start (a script's background job) stays ignored; a Ctrl-C
# during the prefill stops it there (a 4,000-token prompt on a 4-layer model; 1,000 in the
# sanitizer pass, whose prefill is 25 times slower)
$RANDCKPT $D/long.bin 512 1376 4 8 4 400 4096 --seed 3 || exit 1 # dim 512: seconds of prefill on a busy machine too
reps=$([ "$QUICK" = 1 ] && echo 250 || echo 1000)
p4k=$(for i in $(seq $reps); do printf 'ab cd '; done)
wait_for_text() { for i in $(seq 3000); do [ -s $1 ] && return; sleep 0.01; done; } # the prompt, echoed
(trap - INT; exec $SIGDFL $SPECDEC $D/long.bin -z $D/tok.bin -m target -t 0 -n 5 -i "$p4k" > $D/pre.out 2> $D/pre.err) &
pid=$!; wait_for_text $D/pre.out; kill -INT $pid; wait $pid; rc=$?
if [ $rc -eq 0 ] && grep -q "^prompt: $((4 * reps + 2)) tokens, prefilled in .*, stopped by Ctrl-C" $D/pre.err &&
   grep -q "^target: 0 tokens .*(interrupted by Ctrl-C)" $D/pre.err; then ok
else bad "Ctrl-C during the prefill: exit $rc, $(head -c 300 $D/pre.err)"; fi
(trap '' INT; exec $SPECDEC $D/long.bin -z $D/tok.bin -m target -t 0 -n 5 -i "$p4k" > $D/ign.out 2> $D/ign.err) &
pid=$!; wait_for_text $D/ign.out; kill -INT $pid; wait $pid; rc=$? # sent during the prefill, as above
if [ $rc -eq 0 ] && grep -q "^target: 5 tokens .*(-n reached)" $D/ign.err && ! grep -q "Ctrl-C" $D/ign.err; then ok
else bad "SIGINT ignored at the start, then sent: exit $rc, $(head -c 300 $D/ign.err)"; fi
# 11. a llama.cpp command line: one message naming every flag and what it is here
expect_llama() { # expect_llama "message substring"...: all in the one message for the command line below
    local err; err=$($SPECDEC -m model.bin -p "Once upon a time" --temp 0.7 -c 256 -ngl 0 -md draft.bin -y sys -cnv \
        --repeat-penalty 1.1 --min-p 0.05 -e -fa 2>&1 >/dev/null); local rc=$? w
    for w in "$@"; do grep -qF -- "$w" <<<"$err" || { bad "llama.cpp's line: no '$w' in: $err"; return; }; done
    [ $rc -eq 1 ] && [ "$(grep -c 'specdec:' <<<"$err")" = 1 ] && ok || bad "llama.cpp's line: exit $rc, $err"
}
expect_llama "12 flags to change (see specdec -h):" "-m model.bin: expected a mode" "the model is the first argument" \
    "-p Once upon a time: expected a number in (0, 1] (-p is top-p" "unknown flag --temp (the temperature is -t T)" \
    "unknown flag -c (the context is the checkpoint's seq_len" "unknown flag -ngl (specdec runs on the CPU)" \
    "unknown flag -md (the draft is -d FILE)" "unknown flag -y (no chat" "unknown flag -cnv (no chat" \
    "unknown flag --repeat-penalty (no such sampler here" "unknown flag --min-p (no such sampler here" \
    "unknown flag -e (-i takes the text as it is" "unknown flag -fa (one attention kernel"
# 12. -n 0: up to the context, as run.c's -n 0
$SPECDEC $D/short.bin -z $D/tok.bin -m target -t 0 -n 0 -j $D/n0.json > /dev/null 2> $D/n0.err
if grep -q '"generated_tokens": 15,' $D/n0.json && grep -q '"ended_by": "context"' $D/n0.json &&
   $SPECDEC -h | tr -s '\n ' '  ' | grep -q "(default: until the context is full; so does 0, as in llama2.c)"; then ok
else bad "-n 0 on a 16-position model: $(grep -o '"generated_tokens": [0-9]*' $D/n0.json) $(head -c 200 $D/n0.err)"; fi
# 13. the start-up calibration's time is on stderr (auto-K), beside the JSON's calibration_seconds
$SPECDEC $M -d $D/draft.bin -k 0 -t 0 -n 20 -q 2> $D/cal.err
if grep -q "; before them, auto-K's calibration [0-9.]* s$" $D/cal.err; then ok; else bad "auto-K's calibration time not on stderr: $(cat $D/cal.err)"; fi
# 15. the docs: the golden count (every file in test/golden), ./train bpb with its required
# flags, README's make run block: tokens per round = examined / rounds, proposals defined
n_golden=$(ls test/golden/*.txt | wc -l)
bpb_bare=$(grep -ho '\./train bpb -m [^`]*' README.md docs/*.md | grep -v -- '-f ' | head -1)
rounds=$(sed -n 's/^  \([0-9]*\) rounds, K = .*/\1/p' README.md | head -1)
examined=$(sed -n 's/^  [0-9]* proposals, \([0-9]*\) examined.*/\1/p' README.md | head -1)
per=$(sed -n 's/^  tokens per round \([0-9.]*\);.*/\1/p' README.md | head -1)
if grep -q "22 of the $n_golden files" README.md && grep -q "# all $n_golden: adds" port/README.md &&
   ! grep -q "# 19 files\|# all 24" port/README.md && [ -z "$bpb_bare" ] && grep -q '\*\*proposals\*\*' README.md &&
   [ "$(awk -v e="${examined:-0}" -v r="${rounds:-1}" 'BEGIN { printf "%.2f", e / r }')" = "${per:-x}" ] &&
   grep -q 'with \*\*hidden 192\*\*' docs/PORTING.md && grep -q 'if fabs(x\[k\]) > amax or x\[k\] is NaN' docs/PORTING.md &&
   grep -q "rounds activations with \`round\` (ties away from" docs/PORTING.md; then ok
else bad "docs: $n_golden golden files, a bare '$bpb_bare', make run's $examined examined / $rounds rounds vs $per, or PORTING's q80 model, NaN rule or rint"; fi
echo "issue 49: version-2 weights recorded as run, Latin-1 JSON, SIGINT ignored/prefill stopped, llama.cpp's line, -n 0, calibration, docs"

echo "cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
