#!/usr/bin/env bash
# specdec.c's line budget (issue 43, the reference as a book): the whole file, Part I
# (the chain, from line 1 to the PART II banner), where speculative_step starts, and
# Part II (from its banner to the appendices'). Prints the numbers; exits 1 if one
# is over. The whole file's goal is 3,900 lines; until it gets there, CEILING (its
# size when this was last lowered) is the line it may not cross: a new mechanism
# brings a PERFORMANCE.md row showing >= 3% end to end, or removes as many lines as
# it adds, and every cut lowers CEILING.
GOAL=3900
CEILING=3900
f=${1:-specdec.c}
total=$(wc -l < "$f")
part2=$(grep -n '^// PART II\.' "$f" | head -1 | cut -d: -f1)
apps=$(grep -n '^// APPENDICES' "$f" | head -1 | cut -d: -f1)
step=$(grep -n '^static Round speculative_step(' "$f" | head -1 | cut -d: -f1)
if [ -z "$part2" ] || [ -z "$apps" ] || [ -z "$step" ]; then
    echo "budget: $f lacks the PART II or APPENDICES banner, or speculative_step"; exit 1
fi
part1=$((part2 - 2)) # the banner's first "// ====" line is part2 - 1
len2=$((apps - part2))
echo "budget: specdec.c $total lines (ceiling $CEILING, goal $GOAL); Part I ends at line $part1 of 1000," \
     "speculative_step at line $step (before 800); Part II $len2 of 700 lines"
[ "$total" -le "$CEILING" ] && [ "$part1" -le 1000 ] && [ "$step" -lt 800 ] && [ "$len2" -le 700 ]
