#!/usr/bin/env bash
# run.sh - the specdec.c test suite (make test-core): every test program, the
# power check, the scalar-vs-AVX2 comparison and the CLI tests, first built
# optimised (build/bin), then built with -fsanitize=address,undefined (build/asan).
# Prints one line per program and a total; exits non-zero if anything failed.
set -u
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1
passed=0; failed=0

# run a program; add up its closing "name: N passed, N failed" line
run() {
    local out rc
    out=$("$@" 2>&1); rc=$?
    echo "$out" | sed 's/^/    /'
    local line; line=$(echo "$out" | grep -E '[0-9]+ passed, [0-9]+ failed' | tail -n 1)
    local p; p=$(echo "$line" | sed -E 's/.* ([0-9]+) passed.*/\1/')
    local f; f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
    [ -n "$line" ] || { p=0; f=1; echo "    (no summary line: exit $rc)"; }
    [ $rc -ne 0 ] && [ "$f" = 0 ] && f=1
    passed=$((passed + p)); failed=$((failed + f))
    echo "== $1: exit $rc"
}

for dir in build/bin build/asan; do
    echo "=== $dir"
    for t in test_kernels test_forward test_tokenizer test_spec test_io test_load; do run $dir/$t; done
done

echo "=== power: the chi-square test must fail against a deliberately wrong residual"
out=$(build/bin/test_spec --power 2>&1); rc=$?
echo "$out" | grep -E 'power check' | sed 's/^/    /'  # its FAIL lines are the expected outcome
if [ $rc -ne 0 ] && echo "$out" | grep -q 'chi2 .* FAIL'; then passed=$((passed + 1)); echo "== power check: the wrong residual was caught"
else failed=$((failed + 1)); echo "== power check: FAIL, the wrong residual passed the chi-square test"; fi

echo "=== every build prints the same logits: forward logits fingerprints"
a=$(build/bin/test_forward | grep fingerprint); s=$(build/scalar/test_forward | grep fingerprint)
v=$(build/avx2/test_forward | grep fingerprint)
echo "    default build ($(build/bin/test_forward | head -1 | sed 's/.*(//; s/).*//')): $a"
echo "    8-lane build ($(build/avx2/test_forward | head -1 | sed 's/.*(//; s/).*//')): $v"
echo "    plain C build:  $s"
if [ -n "$a" ] && [ "$a" = "$s" ] && [ "$a" = "$v" ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "    FAIL: fingerprints differ"; fi

echo "=== golden files: specdec still computes what test/golden holds"
rm -rf build/golden && mkdir -p build/golden && build/bin/golden build/golden > /dev/null
for f in test/golden/*.txt; do
    if [ -f build/golden/$(basename $f) ] && cmp -s $f build/golden/$(basename $f); then passed=$((passed + 1))
    else failed=$((failed + 1)); echo "    FAIL: $f differs from what specdec computes now ('make golden' rewrites it; first difference:)"
         diff $f build/golden/$(basename $f) 2>&1 | head -n 4 | sed 's/^/      /'; fi
done
echo "    $(ls test/golden/*.txt | wc -l) golden files compared"

echo "=== cli (optimised build)"
run bash test/cli.sh ./specdec ./specdec_scalar build/bin/randckpt
echo "=== cli (sanitizer build, quick: fewer K, no repeated same-text runs)"
export CLI_QUICK=1
run bash test/cli.sh build/asan/specdec "" build/bin/randckpt
unset CLI_QUICK

echo "specdec: $passed passed, $failed failed"
[ $failed -eq 0 ]
