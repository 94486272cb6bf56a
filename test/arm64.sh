#!/usr/bin/env bash
# arm64.sh - the ARM64 (NEON) build under qemu-user against this host's build:
# the kernel tests pass, the forward's logits fingerprint is the same, and the
# shipped pair prints the same text greedy and sampled (exp is specdec's own,
# so sampled text matches too). usage: test/arm64.sh "QEMU COMMAND"
set -u
RUN=$1
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

out=$($RUN build/arm64/test_kernels 2>&1); echo "$out" | tail -n 2 | sed 's/^/    /'
echo "$out" | grep -q "test_kernels: [0-9]* passed, 0 failed" && ok || bad "test_kernels under emulation"
arm=$($RUN build/arm64/test_forward 2>&1 | grep fingerprint); host=$(build/bin/test_forward | grep fingerprint)
echo "    arm64 ($($RUN build/arm64/test_forward 2>&1 | head -n 1 | sed 's/.*(//; s/).*//')): $arm"
echo "    host:  $host"
[ -n "$arm" ] && [ "$arm" = "$host" ] && ok || bad "logits fingerprints differ: arm64 '$arm', host '$host'"
rm -rf build/golden-arm64 && mkdir -p build/golden-arm64
$RUN build/arm64/golden build/golden-arm64 > /dev/null 2>&1
same=0; files=0
for f in test/golden/*.txt; do
    files=$((files + 1))
    cmp -s $f build/golden-arm64/$(basename $f) && same=$((same + 1)) || echo "    arm64 differs: $f"
done
echo "    golden files: $same of $files reproduced on arm64"
[ $files -gt 0 ] && [ $same -eq $files ] && ok || bad "golden files differ on arm64"
if [ -f weights/target.bin ] && [ -f weights/draft.bin ] && [ -f tokenizer.bin ]; then
    for args in "-t 0 -n 80" "-m target -t 0 -n 80" "-t 0.8 -s 3 -n 80" "-t 1 -s 7 -k 3 -n 60"; do
        $RUN build/arm64/specdec $args -i "Once upon a time" > build/test/arm.txt 2>/dev/null
        ./specdec $args -i "Once upon a time" > build/test/host.txt 2>/dev/null
        if [ -s build/test/arm.txt ] && cmp -s build/test/arm.txt build/test/host.txt; then ok; else bad "specdec $args: arm64 and host texts differ"; fi
    done
    echo "    shipped pair: greedy spec, greedy target, t = 0.8 and t = 1 text identical on arm64 and host"
else
    echo "    SKIP shipped pair: weights/ not built"
fi
echo "test-arm64: $pass passed, $fail failed"
[ $fail -eq 0 ]
