#!/usr/bin/env bash
# bench_cli.sh - build/bin/bench as a newcomer meets it (issue 44, item 6):
#   --help prints the usage (every mode, what it writes, about how long) and exits 0;
#   no argument prints the usage and starts nothing (it used to start a five-minute run);
#   an unknown mode or option: a message naming it, the usage, exit 1;
#   bench kernels prints the FMA and int8 peaks and the int8 matmul's 17 rows against its peak;
#   `make help` lists the targets; `make -n bench` writes docs/ only with PUBLISH=1.
# usage: test/bench_cli.sh [BENCH]   (run from the repository root; make test-plot runs it)
set -u
BENCH=${1:-build/bin/bench}
D=build/test/bench_cli
mkdir -p $D
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# $1: what; then the command; sets rc, out (stdout), err (stderr); a run that
# does not end within 20 s (a benchmark started) counts as rc 124
run() {
  local what=$1; shift
  timeout 20 "$@" > $D/out 2> $D/err; rc=$?
  out=$(cat $D/out); err=$(cat $D/err)
  echo "bench_cli: $what: exit $rc, $(wc -l < $D/out) lines on stdout, $(wc -l < $D/err) on stderr"
}

run "bench --help" $BENCH --help
[ $rc -eq 0 ] || bad "bench --help exits $rc, want 0"
for m in all sweep drafters lenience tree runc llamacpp selftest kernels; do
  grep -q "^  $m " <<< "$out" || bad "bench --help does not list mode $m"
done
grep -q "usage: bench MODE" <<< "$out" && grep -q "min" <<< "$out" && grep -q -- "--publish" <<< "$out" \
  && grep -q "sweep_k.csv" <<< "$out" && ok || bad "bench --help lacks the usage line, the times, --publish or the CSVs"
run "bench -h" $BENCH -h
[ $rc -eq 0 ] && grep -q "usage: bench MODE" <<< "$out" && ok || bad "bench -h: exit $rc"

run "bench (no argument)" $BENCH
[ $rc -eq 1 ] || bad "bench with no argument exits $rc, want 1 (124: it started a run)"
grep -q "usage: bench MODE" <<< "$err" && grep -q "nothing was run" <<< "$err" && ok \
  || bad "bench with no argument: no usage or no 'nothing was run' on stderr"
grep -q "specdec bench:" <<< "$out$err" && bad "bench with no argument started a run" || ok

run "bench nosuch" $BENCH nosuch
[ $rc -eq 1 ] && grep -q 'unknown mode "nosuch"' <<< "$err" && grep -q "usage: bench MODE" <<< "$err" && ok \
  || bad "bench nosuch: exit $rc (want 1), stderr: $(head -1 $D/err)"
run "bench all --bogus" $BENCH all --bogus
[ $rc -eq 1 ] && grep -q "unknown option --bogus" <<< "$err" && ok || bad "bench all --bogus: exit $rc"
run "bench sweep --csv" $BENCH sweep --csv
[ $rc -eq 1 ] && grep -q -- "--csv needs a value" <<< "$err" && ok || bad "bench sweep --csv: exit $rc"
run "bench all --publish --csv x" $BENCH all --publish --csv x
[ $rc -eq 1 ] && ok || bad "bench all --publish --csv x: exit $rc (want 1: they contradict)"

run "bench selftest" $BENCH selftest
[ $rc -eq 0 ] && grep -q "bench selftest: [0-9]* passed, 0 failed" <<< "$out" && ok || bad "bench selftest: exit $rc"

# bench kernels (a few seconds): the peaks, then the int8 matmul's 17 rows, each a rate with its share of the int8 peak
run "bench kernels" $BENCH kernels
rates=$(grep "^int8 matmul, W (1152, 768) in L2" <<< "$out" | grep -oE " [0-9]+\([0-9]+\)" | wc -l)
[ $rc -eq 0 ] && grep -q "int8 (.*12 chains of the tiles' step): [0-9.]* G multiply-adds" <<< "$out" && [ "$rates" -eq 17 ] \
  && ok || bad "bench kernels: exit $rc, $rates of 17 int8 rates: $out"

# the Makefile: help lists the targets; the bench targets publish into docs/ only when asked
run "make help" make -s --no-print-directory help
for t in all run test test-plot bench sweep bench-tree plots weights clean help; do
  grep -q "^  $t " <<< "$out" || bad "make help does not list $t"
done
[ $rc -eq 0 ] && ok || bad "make help: exit $rc"
for t in bench sweep bench-tree; do
  cmd=$(make -n --no-print-directory $t 2>/dev/null | grep "build/bin/bench ")
  grep -q -- "--publish" <<< "$cmd" && bad "make $t publishes into docs/ unasked: $cmd" || ok
  cmd=$(make -n --no-print-directory $t PUBLISH=1 2>/dev/null | grep "build/bin/bench ")
  grep -q -- "--publish" <<< "$cmd" && ok || bad "make $t PUBLISH=1 does not publish: $cmd"
done

echo "bench_cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
