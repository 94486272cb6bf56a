#!/usr/bin/env python3
# make_e2e.py - writes the seed corpus of fuzz/fuzz_e2e.c into fuzz/seeds/e2e:
# a few command lines spelled in that harness's input layout (its header
# comment), from named fields. Run from the repository root.
import os

def seed(mode="spec", target=0, drafter=0, k=4, auto_k_omitted=False, t=0, top_p=None, top_k=None,
         lenience=None, ngram=0, draft_weights=0, threads=0, draft_threads=0, n=40, s=1,
         verbose=False, json=False, quiet=False, misplaced=False, k2=2, threads2_odd=False,
         drafter2=4, flip_weights=False, draft_threads2=0, tree=0, target_int8=False, prompt=""):
    b = bytearray(15)
    b[0] = {"spec": 0, "target": 6, "draft": 7}[mode] | target << 3 | drafter << 4
    b[1] = k | (0x80 if auto_k_omitted else 0)
    b[2] = 0 if t == 0 else 96 + round((t - 0.1) * 159 / 1.9)
    b[3] = 0 if top_p is None else 127 + round(top_p * 128)
    b[4] = 0 if top_k is None else 128 + top_k // 3
    b[5] = 0 if lenience is None else 191 + round(lenience * 64)
    b[6] = ngram
    b[7] = draft_weights | threads << 2 | draft_threads << 4 | (threads == 3) << 6 | target_int8 << 7
    b[8] = n
    b[9], b[10] = s & 255, s >> 8
    b[11] = verbose | json << 1 | quiet << 2 | misplaced << 3 | tree << 4  # tree 10..15 shapes
    b[12] = k2
    b[13] = drafter2 | flip_weights << 3 | draft_threads2 << 4
    b[14] = 7 if threads2_odd else 0
    return bytes(b) + bytes(ord(c) - 32 for c in prompt)

SEEDS = {
    "greedy_draft": seed(k=4, prompt="Once upon a time"),
    "greedy_self_quiet": seed(drafter=3, k=0, auto_k_omitted=True, n=20, quiet=True, drafter2=0,
                              flip_weights=True, prompt="the cat"),
    "sampled_lookup": seed(drafter=4, k=0, t=0.8, top_p=0.9, ngram=0x31, threads=2, verbose=True,
                           json=True, k2=5, prompt="the cat the cat the"),
    "lenient_small_draft": seed(target=1, drafter=1, k=3, t=1.0, lenience=0.5, top_k=30,
                                draft_weights=1, threads=1, draft_threads=1, k2=7, threads2_odd=True,
                                prompt="Lily and Tom"),
    "target_mode": seed(mode="target", target=1, t=1.0, s=7, prompt="Lily"),
    "draft_mode": seed(mode="draft", drafter=1, t=0.5, n=30, s=3, prompt="a big dog"),
    "refused_k_in_target_mode": seed(mode="target", k=1, misplaced=True, prompt="no"),
    "refused_ngram": seed(drafter=4, ngram=0x24, prompt="x"),
    "long_prompt_context_full": seed(target=1, drafter=2, k=6, t=1.5, json=True,
                                    prompt="Once upon a time there was a little dog and a cat."),
    "greedy_int8_target": seed(k=3, target_int8=True, drafter2=4, threads=2, prompt="Once upon a time"),
    "sampled_int8_target_tree": seed(target=1, t=1.0, n=30, tree=11, target_int8=True, prompt="Lily"),
    "greedy_tree": seed(k=0, tree=11, drafter2=0, prompt="Once upon a time"),
    "sampled_tree_short_draft": seed(target=0, drafter=1, t=1.0, n=40, tree=13, json=True, prompt="Lily"),
    "sampled_tree_one_per_level": seed(t=0.7, n=30, tree=14, verbose=True, prompt="the cat"),
    "greedy_medusa": seed(drafter=5, k=3, drafter2=0, prompt="Once upon a time"),
    "sampled_medusa_heads": seed(target=1, drafter=5, k=8, auto_k_omitted=True, t=1.0, threads=2, json=True,
                                 prompt="Lily"),
    "sampled_medusa_k0": seed(drafter=5, k=0, t=0.8, n=30, verbose=True, prompt="the cat"),
    "refused_medusa_draft_mode": seed(mode="draft", drafter=5, misplaced=True, prompt="a"),
    # refused: 62 tokens, draft 1's seq_len is 48
    "refused_long_prompt_json": seed(mode="draft", drafter=1, t=0.5, n=30, json=True, prompt="abcdefghij" * 6),
}

out = "fuzz/seeds/e2e"
os.makedirs(out, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
