#!/usr/bin/env python3
"""An independent port of specdec, written from docs/PORTING.md and
test/golden/README.md alone, that reproduces the golden files bit for bit.

python3 port/port.py             the random golden model (generated here) and
                                      the cheap shipped files (tokens, logits)
python3 port/port.py --shipped   also the shipped pair's runs (minutes)
python3 port/port.py --out DIR   also write every file it prints into DIR

Standard library only. Float32 arithmetic is exact: see f32.py.
"""

import math
import os
from operator import mul
import struct
import sys
import time
from array import array

sys.dont_write_bytecode = True          # no __pycache__ left in the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from f32 import (f32, r32, fma, vfma, vfma_s, matvec_cols, dot_lanes8,  # noqa: E402
                 sum_lanes8, exp_vec, hexfloat)

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
GOLDEN = os.path.join(ROOT, 'test', 'golden')
M64 = (1 << 64) - 1
FLT_MAX = float.fromhex('0x1.fffffep+127')


def fnv1a(data):
    h = 14695981039346656037
    for b in data:
        h = ((h ^ b) * 1099511628211) & M64
    return h


# ---- coins (section 6) ------------------------------------------------------

G = 0x9E3779B97F4A7C15
DRAW, ACCEPT, RESAMPLE = 0, 1, 2


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def key_of(seed):
    return mix64((seed + G) & M64)


def element(key, i):
    return mix64((key + (i + 1) * G) & M64)


def coin_of(bits):
    return float(bits >> 40) / 16777216.0


def coin(seed, position, purpose):
    return coin_of(element(key_of(seed), 4 * position + purpose))


class Stream:
    """The sequential stream: elements 0, 1, 2, ... in turn."""

    def __init__(self, seed):
        self.key = key_of(seed)
        self.i = 0

    def element(self):
        e = element(self.key, self.i)
        self.i += 1
        return e

    def u32(self):
        return self.element() >> 32

    def coin(self):
        return coin_of(self.element())


# ---- the random golden model (section 11) -----------------------------------

PIECES = [
    " the", " a", " and", " to", " was", " he", " she", " it", " of", " in", " said", " day",
    " little", " big", " happy", " play", " friend", " once", " upon", " time", " there",
    "ing", "ed", "er", "th", "he", "in", "an", " t", " s", " w", " b", " c", " f", " l", " m",
    " p", " d", " h", "ll", "ou", "on", "re", "at", "en", "or", "es", "is", "it", "ar", "ay",
    " Lily", " Tom", " dog", " cat", " tree", " ball", " sun", ".\n", "\n\n", "\u00e9", "\u2014",
    "\u201c", "\u201d", "\u2019", "\u00fc", "\u65e5", "\u672c",
]


def random_tokenizer_bytes(vocab=400):
    out = [struct.pack('<i', 16)]

    def piece(s, score):
        out.append(struct.pack('<fi', score, len(s)) + s)
    piece(b'<unk>', 0.0)
    piece(b'\n<s>\n', 0.0)
    piece(b'\n</s>\n', 0.0)
    for b in range(256):
        piece(b'<0x%02X>' % b, 0.0)
    n = 259
    for i, p in enumerate(PIECES):
        if n >= vocab:
            break
        piece(p.encode("utf-8"), float(-i))
        n += 1
    c = 0x20
    while n < vocab:
        piece(bytes([c]), -1000.0 - c)
        c += 1
        n += 1
    return b''.join(out)


def rope_tables(S, hs):
    """cos then sin (S, hs/2) of p * 10000^(-2i/hs), in double, rounded once (2.1)"""
    half = hs // 2
    theta = [math.pow(10000.0, -2.0 * i / hs) for i in range(half)]
    return r32([math.cos(p * theta[i]) for p in range(S) for i in range(half)] +
               [math.sin(p * theta[i]) for p in range(S) for i in range(half)])


RANDOM_CONFIG = dict(dim=64, hidden_dim=172, n_layers=2, n_heads=4, n_kv_heads=2,
                     vocab_size=400, seq_len=160)


def random_checkpoint_bytes(seed=5, noise_seed=6, eps=0.0, hidden=172):
    c = dict(RANDOM_CONFIG, hidden_dim=hidden)
    dim, hid, L, V, S = c['dim'], c['hidden_dim'], c['n_layers'], c['vocab_size'], c['seq_len']
    hs = dim // c['n_heads']
    kv_dim = c['n_kv_heads'] * hs
    r = Stream(seed)
    noise = Stream(noise_seed)
    eps = f32(eps)
    vals = []

    def uniform(st, a):
        return f32((2.0 * st.coin() - 1.0) * a)

    def fill(n, a):
        out = []
        for _ in range(n):
            w = uniform(r, a)
            if eps > 0:
                w = f32(w + f32(eps * uniform(noise, a)))
            out.append(w)
        return out

    def gain(n):
        a = f32(0.1)
        return [f32(1.0 + uniform(r, a)) for _ in range(n)]

    a_in = f32(math.sqrt(f32(3.0 / 64.0)))
    a_hid = f32(math.sqrt(f32(3.0 / hid)))
    a_emb = f32(4.0 / f32(math.sqrt(64.0)))
    emb = fill(V * dim, a_emb)
    milli = f32(1e-3)
    for tok in (1, 2):
        for i in range(tok * dim, tok * dim + dim):
            emb[i] = f32(emb[i] * milli)
    vals += emb
    vals += gain(L * dim)
    vals += fill(L * dim * dim, a_in)
    vals += fill(L * kv_dim * dim, a_in)
    vals += fill(L * kv_dim * dim, a_in)
    vals += fill(L * dim * dim, a_in)
    vals += gain(L * dim)
    vals += fill(L * hid * dim, a_in)
    vals += fill(L * dim * hid, a_hid)
    vals += fill(L * hid * dim, a_in)
    vals += gain(dim)
    vals += rope_tables(S, hs)
    header = struct.pack('<7i', dim, hid, L, c['n_heads'], c['n_kv_heads'], V, S)
    a = array('f', vals)
    if sys.byteorder != 'little':
        a.byteswap()
    return header + a.tobytes()


# ---- the checkpoint (2.1) and the model -------------------------------------

Q80_MAGIC = 0x616b3432


def q80_group(x):
    """One group of floats -> (ints, scale) (section 5): s = max|x| / 127,
    q = rint(x / s) ties to even, clamped to +-127; zeros where s is 0."""
    amax = 0.0
    for v in x:
        if abs(v) > amax:
            amax = abs(v)
    s = f32(amax / 127.0)
    if s == 0.0:
        return [0] * len(x), s
    return [max(-127, min(127, round(v))) for v in r32([v / s for v in x])], s


def group_size(dim, hid):
    gs = 64
    while gs >= 4 and (dim % gs or hid % gs):
        gs //= 2
    return gs


def q80_export(data):
    """A legacy f32 checkpoint's bytes -> its version-2 file (section 2.3)."""
    dim, hid, L, nh, nkv, V, S = struct.unpack_from('<7i', data, 0)
    shared = V > 0
    V = abs(V)
    hs = dim // nh
    kv = nkv * hs
    w = array('f')
    w.frombytes(data[28:])
    if sys.byteorder != 'little':
        w.byteswap()
    sizes = [('emb', V * dim), ('rms_att', L * dim), ('wq', L * dim * dim), ('wk', L * kv * dim),
             ('wv', L * kv * dim), ('wo', L * dim * dim), ('rms_ffn', L * dim), ('w1', L * hid * dim),
             ('w2', L * dim * hid), ('w3', L * hid * dim), ('rms_final', dim), ('cos', S * hs // 2),
             ('sin', S * hs // 2), ('wcls', 0 if shared else V * dim)]
    t, pos = {}, 0
    for name, n in sizes:
        t[name] = w[pos:pos + n]
        pos += n
    gs = group_size(dim, hid)
    head = struct.pack('<Ii7iBi', Q80_MAGIC, 2, dim, hid, L, nh, nkv, V, S, int(shared), gs)
    out = [head + bytes(256 - len(head))]
    for name in ('rms_att', 'rms_ffn', 'rms_final'):
        out.append(array('f', t[name]).tobytes())
    for name in ('emb', 'wq', 'wk', 'wv', 'wo', 'w1', 'w2', 'w3', 'wcls'):
        m = t[name].tolist()
        count = 1 if name in ('emb', 'wcls') else L    # a block per layer: its values, its scales
        each = len(m) // count if m else 0
        for l in range(count if m else 0):
            qs, ss = [], []
            for g in range(l * each, (l + 1) * each, gs):
                q, sc = q80_group(m[g:g + gs])
                qs += q
                ss.append(sc)
            out.append(struct.pack('<%db' % len(qs), *qs) + array('f', ss).tobytes())
    return b''.join(out)


class Model:
    def __init__(self, data, int8=False):
        if int8 and struct.unpack_from('<I', data, 0)[0] != Q80_MAGIC:
            data = q80_export(data)         # an f32 file in int8: its version-2 export
        self.int8 = struct.unpack_from('<I', data, 0)[0] == Q80_MAGIC
        if self.int8:
            dim, hid, L, nh, nkv, V, S, shared, gs = struct.unpack_from('<7iBi', data, 8)
            self.gs = gs
        else:
            dim, hid, L, nh, nkv, V, S = struct.unpack_from('<7i', data, 0)
            shared = V > 0
        self.shared = shared = bool(shared)
        V = abs(V)
        self.dim, self.hid, self.L, self.nh, self.nkv, self.V, self.seq_len = dim, hid, L, nh, nkv, V, S
        self.hs = hs = dim // nh
        self.kv_dim = kv_dim = nkv * hs
        half = hs // 2
        if self.int8:
            norms = array('f')
            norms.frombytes(data[256:256 + (2 * L + 1) * dim * 4])
            if sys.byteorder != 'little':
                norms.byteswap()
            norms = norms.tolist()
            rms_att, rms_ffn = norms[:L * dim], norms[L * dim:2 * L * dim]
            self.rms_final = norms[2 * L * dim:]
            pos = [256 + (2 * L + 1) * dim * 4]

            def take_q(n, count):       # (ints, per-group scales) of count blocks of n values
                q, scs = [], []
                for _ in range(count):
                    q += struct.unpack_from('<%db' % n, data, pos[0])
                    sc = array('f')
                    sc.frombytes(data[pos[0] + n:pos[0] + n + n // gs * 4])
                    if sys.byteorder != 'little':
                        sc.byteswap()
                    scs += sc.tolist()
                    pos[0] += n + n // gs * 4
                return q, scs
            emb = take_q(V * dim, 1)
            wq, wk, wv, wo = (take_q(dim * dim, L), take_q(kv_dim * dim, L), take_q(kv_dim * dim, L),
                              take_q(dim * dim, L))
            w1, w2, w3 = take_q(hid * dim, L), take_q(dim * hid, L), take_q(hid * dim, L)
            wcls = emb if shared else take_q(V * dim, 1)
            if pos[0] != len(data):
                raise ValueError('version-2 file size does not match its header')
            self.emb = r32([q * emb[1][k // gs] for k, q in enumerate(emb[0])])
            tables = rope_tables(S, hs)
            self.cos, self.sin = tables[:S * half], tables[S * half:]
        else:
            w = array('f')
            w.frombytes(data[28:])
            if sys.byteorder != 'little':
                w.byteswap()
            w = w.tolist()
            pos = [0]

            def take(n):
                t = w[pos[0]:pos[0] + n]
                pos[0] += n
                return t
            self.emb = take(V * dim)
            rms_att = take(L * dim)
            wq = take(L * dim * dim)
            wk = take(L * kv_dim * dim)
            wv = take(L * kv_dim * dim)
            wo = take(L * dim * dim)
            rms_ffn = take(L * dim)
            w1 = take(L * hid * dim)
            w2 = take(L * dim * hid)
            w3 = take(L * hid * dim)
            self.rms_final = take(dim)
            self.cos = take(S * half)
            self.sin = take(S * half)
            wcls = self.emb if shared else take(V * dim)
            if pos[0] != len(w):
                raise ValueError('checkpoint size does not match its header')

        def rows(m, l, n_out, n_in):        # layer l's rows (floats, or ints and scales)
            a, b = l * n_out * n_in, (l + 1) * n_out * n_in
            return (m[0][a:b], m[1][a // gs:b // gs]) if self.int8 else m[a:b]

        def cat(*ms):
            return (sum((m[0] for m in ms), []), sum((m[1] for m in ms), [])) if self.int8 else sum(ms, [])
        prep = self.groups if self.int8 else self.columns
        self.layers = []
        for l in range(L):
            lay = {}
            lay['rms_att'] = rms_att[l * dim:(l + 1) * dim]
            lay['rms_ffn'] = rms_ffn[l * dim:(l + 1) * dim]
            # q, k, v as one stacked matrix, w1 and w3 likewise (every output its own chain)
            lay['qkv'] = prep(cat(rows(wq, l, dim, dim), rows(wk, l, kv_dim, dim), rows(wv, l, kv_dim, dim)), dim)
            lay['wo'] = prep(rows(wo, l, dim, dim), dim)
            lay['w13'] = prep(cat(rows(w1, l, hid, dim), rows(w3, l, hid, dim)), dim)
            lay['w2'] = prep(rows(w2, l, dim, hid), hid)
            self.layers.append(lay)
        self.cls = prep(wcls, dim)
        self.matvec = self.matvec_int8 if self.int8 else matvec_cols

    @staticmethod
    def columns(flat, n_in):
        # fresh float objects, allocated column by column (the matvec walks columns)
        return [array('f', flat[k::n_in]).tolist() for k in range(n_in)]

    # -- int8 (section 5)
    def groups(self, m, n_in):
        """(ints, scales) of a stacked matrix -> per group g: the rows' ints and scales"""
        q, sc = m
        gs, G, d = self.gs, n_in // self.gs, len(q) // n_in
        return [([q[r * n_in + g * gs:r * n_in + (g + 1) * gs] for r in range(d)],
                 [sc[r * G + g] for r in range(d)]) for g in range(G)]

    def matvec_int8(self, qm, x):
        gs = self.gs
        acc = [0.0] * len(qm[0][1])
        for g, (qrows, sw) in enumerate(qm):
            qx, sx = q80_group(x[g * gs:(g + 1) * gs])
            isums = [float(sum(map(mul, row, qx))) for row in qrows]
            t = r32([v * sx for v in r32([i * s for i, s in zip(isums, sw)])])
            acc = r32([a + b for a, b in zip(acc, t)])
        return acc

    # -- the float pieces (section 4)
    def rmsnorm(self, x, w):
        n = len(x)
        ss = dot_lanes8(x, x)
        ss = f32(ss / float(n))
        ss = f32(ss + RMS_EPS)
        ss = f32(1.0 / f32(math.sqrt(ss)))
        t = array('f', [ss * v for v in x]).tolist()
        return array('f', [a * b for a, b in zip(w, t)]).tolist()

    def rope(self, v, p):
        half = self.hs // 2
        c = self.cos[p * half:(p + 1) * half]
        s = self.sin[p * half:(p + 1) * half]
        nheads = len(v) // self.hs
        c = c * nheads
        s = s * nheads
        v0 = v[0::2]
        v1 = v[1::2]
        a = r32([x * y for x, y in zip(v0, c)])
        b = r32([x * y for x, y in zip(v1, s)])
        e = r32([x - y for x, y in zip(a, b)])
        a = r32([x * y for x, y in zip(v0, s)])
        b = r32([x * y for x, y in zip(v1, c)])
        o = r32([x + y for x, y in zip(a, b)])
        out = [0.0] * len(v)
        out[0::2] = e
        out[1::2] = o
        return out


RMS_EPS = float.fromhex('0x1.4f8b58p-17')


class Row:
    """What one row leaves behind: its keys and values per layer and the final
    normalised x (the logits are computed from it when asked for)."""
    __slots__ = ('k', 'vexp', 'xn', 'logits')

    def __init__(self):
        self.k = []
        self.vexp = []
        self.xn = None
        self.logits = None


class Session:
    """A model's KV cache along one sequence. Rows are shared between sessions
    through a memo keyed by the token prefix (a row depends only on it)."""

    def __init__(self, model, memo):
        self.m = model
        self.memo = memo
        L = model.L
        self.kcols = [[[[] for _ in range(model.hs)] for _ in range(model.nkv)] for _ in range(L)]
        self.vexp = [[] for _ in range(L)]
        self.n = 0

    def copy(self):
        s = Session(self.m, self.memo)
        s.kcols = [[[list(c) for c in g] for g in lay] for lay in self.kcols]
        s.vexp = [list(v) for v in self.vexp]
        s.n = self.n
        return s

    def _append(self, row):
        m = self.m
        for l in range(m.L):
            k = row.k[l]
            for g in range(m.nkv):
                cols = self.kcols[l][g]
                base = g * m.hs
                for c in range(m.hs):
                    cols[c].append(k[base + c])
            self.vexp[l].append(row.vexp[l])
        self.n += 1

    def advance(self, tokens):
        """Run the rows the cache lacks for tokens[0..len) (row i at position i)."""
        while self.n < len(tokens):
            key = tuple(tokens[:self.n + 1])
            row = self.memo.get(key)
            if row is None:
                row = self.forward_row(tokens[self.n], self.n)
                self.memo[key] = row
            else:
                self._append(row)

    def logits(self, tokens):
        """The logits of the row at position len(tokens)-1."""
        self.advance(tokens)
        row = self.memo[tuple(tokens)]
        if row.logits is None:
            row.logits = self.m.matvec(self.m.cls, row.xn)
        return row.logits

    def forward_row(self, tok, p):
        m = self.m
        dim, hs, nh, nkv, kv_dim = m.dim, m.hs, m.nh, m.nkv, m.kv_dim
        grp = nh // nkv
        row = Row()
        x = m.emb[tok * dim:(tok + 1) * dim]
        scale = f32(1.0 / f32(math.sqrt(float(hs))))
        for l, lay in enumerate(m.layers):
            xn = m.rmsnorm(x, lay['rms_att'])
            qkv = m.matvec(lay['qkv'], xn)
            q = m.rope(qkv[:dim], p)
            k = m.rope(qkv[dim:dim + kv_dim], p)
            v = qkv[dim + kv_dim:]
            vexp = []
            for h in range(nh):
                g = h // grp
                vexp += v[g * hs:(g + 1) * hs]
            row.k.append(k)
            row.vexp.append(vexp)
            for g in range(nkv):
                cols = self.kcols[l][g]
                for c in range(hs):
                    cols[c].append(k[g * hs + c])
            self.vexp[l].append(vexp)
            # attention (4.4): scores, softmax weights, weighted sums, then / S
            E, S = [], []
            for h in range(nh):
                kc = self.kcols[l][h // grp]
                acc = [0.0] * (p + 1)
                for c in range(hs):
                    acc = vfma_s(kc[c], q[h * hs + c], acc)
                s = r32([a * scale for a in acc])
                mx = max(s)
                e = exp_vec(r32([a - mx for a in s]))
                E.append(e)
                S.append(sum_lanes8(e))
            o = [0.0] * dim
            vrows = self.vexp[l]
            for t in range(p + 1):
                b = []
                for h in range(nh):
                    b += [E[h][t]] * hs
                o = vfma(vrows[t], b, o)
            xb = r32([o[i] / S[i // hs] for i in range(dim)])
            xb2 = m.matvec(lay['wo'], xb)
            x = r32([a + b for a, b in zip(x, xb2)])
            # feed-forward (4.5)
            xn = m.rmsnorm(x, lay['rms_ffn'])
            h13 = m.matvec(lay['w13'], xn)
            h1 = h13[:m.hid]
            h3 = h13[m.hid:]
            e = exp_vec([-a for a in h1])
            sig = r32([1.0 / d for d in r32([1.0 + a for a in e])])
            hb = r32([a * s for a, s in zip(h1, sig)])
            hb = r32([a * b for a, b in zip(hb, h3)])
            xb2 = m.matvec(lay['w2'], hb)
            x = r32([a + b for a, b in zip(x, xb2)])
        row.xn = m.rmsnorm(x, m.rms_final)
        self.n += 1
        return row


# ---- the tokenizer (2.2, 9) --------------------------------------------------

class Tokenizer:
    def __init__(self, data, V):
        (self.max_len,) = struct.unpack_from('<i', data, 0)
        off = 4
        self.pieces, self.scores = [], []
        for _ in range(V):
            score, n = struct.unpack_from('<fi', data, off)
            off += 8
            self.pieces.append(bytes(data[off:off + n]))
            self.scores.append(score)
            off += n
        if off != len(data):
            raise ValueError('tokenizer size does not match the vocabulary')
        self.ids = {}
        for i, p in enumerate(self.pieces):
            self.ids.setdefault(p, i)

    def encode(self, text, bos=True):
        ids = [1] if bos else []
        if text:
            ids.append(self.ids.get(b' ', 3 + 0x20))
        i = 0
        while i < len(text):
            j = i + 1
            while j < len(text) and j - i < 4 and (text[j] & 0xC0) == 0x80:
                j += 1
            grp = text[i:j]
            if grp in self.ids:
                ids.append(self.ids[grp])
            else:
                ids += [3 + b for b in grp]
            i = j
        while True:
            best, best_score, best_id = -1, -1e10, -1
            for i in range(len(ids) - 1):
                t = self.ids.get(self.pieces[ids[i]] + self.pieces[ids[i + 1]])
                if t is not None and self.scores[t] > best_score:
                    best, best_score, best_id = i, self.scores[t], t
            if best < 0:
                break
            ids[best:best + 2] = [best_id]
        return ids


# ---- from logits to a distribution (7) ---------------------------------------

class Sampler:
    def __init__(self, T, top_p, top_k):
        self.T, self.top_p, self.top_k = f32(T), f32(top_p), top_k

    def probs(self, logits):
        V = len(logits)
        if self.T == 0:
            b = argmax(logits)
            p = [0.0] * V
            p[b] = 1.0
            return p
        T = self.T
        p = r32([v / T for v in logits])
        m = max(p)
        p = exp_vec(r32([v - m for v in p]))
        S = sum_lanes8(p)
        if S - S != 0.0:
            raise ValueError('softmax sum not finite')
        p = r32([v / S for v in p])
        if self.top_p < 1 or self.top_k > 0:
            p = self.truncate(p)
        return p

    def truncate(self, probs):
        V = len(probs)
        top_p, top_k = self.top_p, self.top_k
        cutoff = f32(f32(1.0 - top_p) / float(V - 1)) if top_p < 1 else 0.0
        cand = [(v, i) for i, v in enumerate(probs) if v >= cutoff and v > 0]
        if not cand:
            b = argmax(probs)
            cand = [(probs[b], b)]
        cand.sort(key=lambda c: (-c[0], c[1]))
        keep = top_k if 0 < top_k < len(cand) else len(cand)
        if top_p < 1:
            mass = 0.0
            for i in range(keep):
                mass = f32(mass + cand[i][0])
                if mass >= top_p:
                    keep = i + 1
                    break
        mass = 0.0
        for i in range(keep):
            mass = f32(mass + cand[i][0])
        out = [0.0] * V
        for i in range(keep):
            out[cand[i][1]] = f32(cand[i][0] / mass)
        return out


def argmax(v):
    b = 0
    for i in range(1, len(v)):
        if v[i] > v[b]:
            b = i
    return b


def sample(probs, c):
    cdf, last = 0.0, 0
    for i, v in enumerate(probs):
        if v <= 0:
            continue
        cdf = f32(cdf + v)
        last = i
        if c < cdf:
            return i
    return last


# ---- speculative decoding (8) ------------------------------------------------

def g9(x):
    return '%.9g' % x


def spec_run(target, draft, tok, prompt, sampler, memo_t, memo_d, seed=42, K=4, n_new=40):
    """Decide position after position (8.1), grouped into the rounds specdec runs
    (8.2, 8.3). Returns the run file's lines and the residual positions' p and q."""
    tokens = tok.encode(prompt)
    n0 = len(tokens)
    ts = Session(target, memo_t)
    ds = Session(draft, memo_d)
    key = key_of(seed)
    lines, residuals = [], []
    generated = 0
    rnd = 0
    done = False
    while not done and generated < n_new and len(tokens) < target.seq_len:
        n = len(tokens)
        want = n_new - generated
        k = max(0, min(K, want - 1, target.seq_len - 1 - n))
        rnd += 1
        lines.append('round %d at position %d, K = %d' % (rnd, n, k))
        for i in range(k + 1):
            m = len(tokens)
            d = coin_of(element(key, 4 * m + DRAW))
            u = coin_of(element(key, 4 * m + ACCEPT))
            r = coin_of(element(key, 4 * m + RESAMPLE))
            p = sampler.probs(ts.logits(tokens))
            if m - 1 >= draft.seq_len:              # no proposal: from p alone
                t = sample(p, d)
                lines.append('  position %d: no proposal d %s -> token %d' % (m, g9(d), t))
                rejected = True
            else:
                q = sampler.probs(ds.logits(tokens))
                x = sample(q, d)
                ratio = f32(p[x] / q[x])
                if ratio >= 1:
                    ratio = 1.0
                head = '  position %d: x %d d %s q %s p %s ratio %s u %s' % (
                    m, x, g9(d), g9(q[x]), g9(p[x]), g9(ratio), g9(u))
                if u < ratio:
                    t = x
                    rejected = False
                    lines.append(head + ' accept -> token %d' % t)
                else:
                    res = [f32(a - b) if a > b else 0.0 for a, b in zip(p, q)]
                    mass = 0.0
                    for v in res:
                        mass = f32(mass + v)
                    if mass <= 0:
                        res = p
                    else:
                        res = r32([v / mass for v in res])
                    t = sample(res, r)
                    rejected = True
                    lines.append(head + ' reject residual_mass %s r %s -> token %d' % (g9(mass), g9(r), t))
                    residuals.append((m, x, mass, r, t, p, q))
            if t in (1, 2):              # BOS or EOS ends the text, not output
                done = True
                break
            tokens.append(t)
            generated += 1
            if rejected or generated >= n_new:
                break
    return tokens[n0:], n0, lines, residuals


# ---- tree speculation (8.2a) ----------------------------------------------------

def candidate_coin(key, pos, purpose, j):
    if j == 0:
        return coin_of(element(key, 4 * pos + purpose))
    return coin_of(mix64((element(key, 4 * pos + 3) + (2 * j + purpose) * G) & M64))


def remove_candidate(q, x):
    """q_{j+1} from q_j: x removed, the rest divided by their float sum (index order)."""
    q = list(q)
    q[x] = 0.0
    mass = 0.0
    for v in q:
        mass = f32(mass + v)
    if mass > 0:
        q = r32([v / mass for v in q])
    return q, mass


def draw_candidates(q, logits, b, key, pos):
    out, mass = [], 1.0
    for j in range(b):
        if mass > 0:
            x = sample(q, candidate_coin(key, pos, DRAW, j))
            out.append((x, False))
            q, mass = remove_candidate(q, x)
        else:                       # the best logit no earlier candidate took
            taken = [c for c, _ in out]
            best = -1
            for i, l in enumerate(logits):
                if i not in taken and (best < 0 or l > logits[best]):
                    best = i
            out.append((best, True))
    return out


def residual(p, q):
    res = [f32(a - b) if a > b else 0.0 for a, b in zip(p, q)]
    mass = 0.0
    for v in res:
        mass = f32(mass + v)
    return (p if mass <= 0 else r32([v / mass for v in res])), mass


def ratio_of(px, qx):
    r = f32(px / qx)
    return 1.0 if r >= 1 else r


def tree_run(target, draft, tok, memo_t, memo_d, branch=(4, 2, 1), seed=42, n_new=40):
    """specdec's tree rounds (8.2a) with --tree 4,2,1 at t = 0.8, top-k 3."""
    sampler = Sampler(0.8, 1.0, 3)
    tokens = tok.encode(PROMPT)
    n0 = len(tokens)
    key = key_of(seed)

    def logits(model, memo, seq):
        return Session(model, memo).logits(seq)

    lines = ['tree run: --tree 4,2,1, t = %s, top-p 1, top-k 3, seed 42, prompt "Once upon a time" '
             '(%d ids), %d new tokens, draft in int8' % (g9(sampler.T), n0, n_new)]
    rnd = 0
    while len(tokens) - n0 < n_new:
        n = len(tokens)
        k = min(len(branch), target.seq_len - 1 - n)     # never cut by -n (8.2a)
        rnd += 1
        # the tree: node 0 the root; (token, parent, depth, onehot); q and logits per node
        nodes = [(tokens[-1], -1, 0, False)]
        kids = [[]]
        path_of = [[]]
        qs, ls = {}, {}
        ok = k > 0 and n <= draft.seq_len
        if ok:
            ls[0] = logits(draft, memo_d, tokens)
            qs[0] = sampler.probs(ls[0])
        first = 0
        for level in range(k):
            if not ok:
                break
            last = len(nodes)
            for v in range(first, last):
                for x, onehot in draw_candidates(qs[v], ls[v], branch[level], key, n + nodes[v][2]):
                    if len(nodes) >= 33:
                        break
                    kids[v].append(len(nodes))
                    nodes.append((x, v, nodes[v][2] + 1, onehot))
                    kids.append([])
                    path_of.append(path_of[v] + [x])
            first = last
            if level + 1 == k or first == len(nodes):
                continue
            if n + level >= draft.seq_len:      # the pass would run past the draft's context
                ok = False
                continue
            for v in range(first, len(nodes)):
                ls[v] = logits(draft, memo_d, tokens + path_of[v])
                qs[v] = sampler.probs(ls[v])
        lines.append('round %d at position %d, depth %d, %d nodes' % (rnd, n, k, len(nodes)))
        for v in range(1, len(nodes)):
            x, u, _, onehot = nodes[v]
            lines.append('  node %d: under %d, token %d, %s' % (v, u, x, 'best logit' if onehot else 'drawn'))
        walk = []                       # the decided positions' lines
        v = 0
        while True:
            pos = n + nodes[v][2]
            seq = tokens + path_of[v]
            p = sampler.probs(logits(target, memo_t, seq))
            d = coin_of(element(key, 4 * pos + DRAW))
            u = coin_of(element(key, 4 * pos + ACCEPT))
            r = coin_of(element(key, 4 * pos + RESAMPLE))
            if not kids[v]:                      # decided as the chain's last position
                if v == 0 and 0 in qs:
                    q = qs[0]
                elif pos <= draft.seq_len:
                    q = sampler.probs(logits(draft, memo_d, seq))
                else:
                    t = sample(p, d)
                    walk.append('  position %d: no proposal d %s -> token %d' % (pos, g9(d), t))
                    path_of[v] = path_of[v] + [t]
                    break
                x = sample(q, d)
                ratio = ratio_of(p[x], q[x])
                head = '  position %d: candidate 1 of 1: x %d d %s q %s p %s ratio %s u %s' % (
                    pos, x, g9(d), g9(q[x]), g9(p[x]), g9(ratio), g9(u))
                if u < ratio:
                    t = x
                    walk.append(head + ' accept -> token %d' % t)
                else:
                    res, mass = residual(p, q)
                    t = sample(res, r)
                    walk.append(head + ' reject residual_mass %s r %s -> token %d' % (g9(mass), g9(r), t))
                path_of[v] = path_of[v] + [t]
                break
            q = list(qs[v])
            child = None
            for j, c in enumerate(kids[v]):
                x, _, _, onehot = nodes[c]
                qj = [0.0] * len(q) if onehot else q
                if onehot:
                    qj[x] = 1.0
                dj = candidate_coin(key, pos, DRAW, j)
                uj = candidate_coin(key, pos, ACCEPT, j)
                ratio = ratio_of(p[x], qj[x])
                head = '  position %d: candidate %d of %d: x %d d %s q %s p %s ratio %s u %s' % (
                    pos, j + 1, len(kids[v]), x, g9(dj), g9(qj[x]), g9(p[x]), g9(ratio), g9(uj))
                if uj < ratio:
                    child = c
                    walk.append(head + ' accept -> token %d' % x)
                    break
                p, mass = residual(p, qj)
                if not onehot:
                    q, _ = remove_candidate(q, x)
            if child is None:
                t = sample(p, r)
                walk.append(head + ' reject residual_mass %s r %s -> token %d' % (g9(mass), g9(r), t))
                path_of[v] = path_of[v] + [t]
                break
            v = child
        lines += walk[:n0 + n_new - n]   # positions past -n are decided, not printed
        tokens = tokens + path_of[v]
    return lines


# ---- the other drafters, lenience, plain decoding, the text (8.1-8.3, 9.2, 11) ---------

DRAFT_A = f32(0.05)


def random_medusa_bytes(H=3, dim=64, V=400, seed=7):
    """Section 11: every W element uniform(r7, 0.05) in file order, b zero."""
    r = Stream(seed)
    vals = []
    for _ in range(H):
        vals += [f32((2.0 * r.coin() - 1.0) * DRAFT_A) for _ in range(dim * dim)]
        vals += [0.0] * dim
    return struct.pack('<5i', 0x5355444d, 1, H, dim, V) + array('f', vals).tobytes()


def random_eagle_bytes(dim=64, V=400, hidden=96, seed=8):
    """Section 11: W1's then W2's elements uniform(r8, 0.05), b1 and b2 zero."""
    r = Stream(seed)
    w1 = [f32((2.0 * r.coin() - 1.0) * DRAFT_A) for _ in range(hidden * 2 * dim)]
    w2 = [f32((2.0 * r.coin() - 1.0) * DRAFT_A) for _ in range(dim * hidden)]
    vals = w1 + [0.0] * hidden + w2 + [0.0] * dim
    return struct.pack('<5i', 0x4c474145, 1, dim, V, hidden) + array('f', vals).tobytes()


def floats_of(data, at):
    a = array('f')
    a.frombytes(data[at:])
    if sys.byteorder != 'little':
        a.byteswap()
    return a.tolist()


def silu_vec(u):
    """u * (1 / (1 + exp_canonical(-u))), each step rounded (4.5)."""
    e = exp_vec([-a for a in u])
    sig = r32([1.0 / d for d in r32([1.0 + a for a in e])])
    return r32([a * s for a, s in zip(u, sig)])


def hidden_state(target, memo, seq):
    """z: the final rmsnorm(x) of the row that ran position len(seq)-1 (8.2b)."""
    Session(target, memo).advance(seq)
    return memo[tuple(seq)].xn


class MedusaDraft:
    """8.2b: head h's q for position t + 1 + h from the z of the row at t."""

    def __init__(self, data, target, memo, sampler):
        _, _, H, dim, _ = struct.unpack_from('<5i', data, 0)
        w = floats_of(data, 20)
        per = dim * dim + dim
        self.heads = [(Model.columns(w[h * per:h * per + dim * dim], dim), w[h * per + dim * dim:(h + 1) * per])
                      for h in range(H)]
        self.t, self.memo, self.sampler = target, memo, sampler

    def propose(self, tokens, m, n):
        h = m - (n - 2) - 1                       # z from the row that ran position n-2
        if n < 2 or not 1 <= h <= len(self.heads):
            return None
        z = hidden_state(self.t, self.memo, tokens[:n - 1])
        cols, b = self.heads[h - 1]
        u = r32([a + c for a, c in zip(matvec_cols(cols, z), b)])
        y = r32([a + s for a, s in zip(z, silu_vec(u))])
        return self.sampler.probs(self.t.matvec(self.t.cls, y))


class EagleDraft:
    """8.2c: feature 1 = step(z, token n-1), feature j = step(feature j-1, token n-2+j)."""

    def __init__(self, data, target, memo, sampler):
        _, _, dim, _, hid = struct.unpack_from('<5i', data, 0)
        w = floats_of(data, 20)
        self.w1 = Model.columns(w[:hid * 2 * dim], 2 * dim)
        self.b1 = w[hid * 2 * dim:hid * 2 * dim + hid]
        at = hid * 2 * dim + hid
        self.w2 = Model.columns(w[at:at + dim * hid], hid)
        self.b2 = w[at + dim * hid:at + dim * hid + dim]
        self.dim, self.t, self.memo, self.sampler = dim, target, memo, sampler

    def step(self, f, x):
        fe = f + self.t.emb[x * self.dim:(x + 1) * self.dim]
        h = silu_vec(r32([a + b for a, b in zip(matvec_cols(self.w1, fe), self.b1)]))
        o = matvec_cols(self.w2, h)
        return r32([a + c for a, c in zip(f, r32([a + b for a, b in zip(o, self.b2)]))])

    def propose(self, tokens, m, n):
        j = m - (n - 2) - 1
        if n < 2 or j < 1:
            return None
        f = hidden_state(self.t, self.memo, tokens[:n - 1])
        for i in range(1, j + 1):
            f = self.step(f, tokens[n - 2 + i])
        return self.sampler.probs(self.t.matvec(self.t.cls, f))


class LookupDraft:
    """8.2d: the token after the latest earlier occurrence of the last g tokens; q one-hot."""

    def __init__(self, V, ngram_min=1, ngram_max=3):
        self.V, self.lo, self.hi = V, ngram_min, ngram_max

    def propose(self, tokens, m, n):
        for g in range(min(self.hi, m - 1), self.lo - 1, -1):
            for j in range(m - g - 1, -1, -1):
                if tokens[j:j + g] == tokens[m - g:m]:
                    q = [0.0] * self.V
                    q[tokens[j + g]] = 1.0
                    return q
        return None


class ModelDraft:
    def __init__(self, draft, memo, sampler):
        self.d, self.memo, self.sampler = draft, memo, sampler

    def propose(self, tokens, m, n):
        if m > self.d.seq_len:
            return None
        return self.sampler.probs(Session(self.d, self.memo).logits(tokens[:m]))


def decide_lenient(p, q, x, u, r, l):
    """8.1 with lenience l: (ratio, accepted, mass, token)."""
    lq = f32(l * q[x])
    ratio = 1.0 if lq <= 0 else ratio_of(p[x], lq)
    if u < ratio:
        return ratio, True, None, x
    res, mass = [], 0.0
    for a, b in zip(p, q):
        b = f32(l * b)
        v = f32(a - b) if a > b else 0.0
        res.append(v)
        mass = f32(mass + v)
    res = p if mass <= 0 else r32([v / mass for v in res])
    return ratio, False, mass, sample(res, r)


def drafter_run(target, tok, sampler, drafter, K, memo_t, lenience=1.0, seed=42, n_new=40):
    """Rounds as 8.2 and 8.3 run them, any drafter: the run file's position lines."""
    tokens = tok.encode(PROMPT)
    n0 = len(tokens)
    key = key_of(seed)
    lines, rnd = [], 0
    while len(tokens) - n0 < n_new:
        n = len(tokens)
        k = max(0, min(K, n_new - (n - n0) - 1, target.seq_len - 1 - n))
        rnd += 1
        lines.append('round %d at position %d, K = %d' % (rnd, n, k))
        drafts, ctx = [], list(tokens)
        for i in range(k):                      # 1. draft, until a position has no proposal
            q = drafter.propose(ctx, n + i, n)
            if q is None:
                break
            x = sample(q, coin_of(element(key, 4 * (n + i) + DRAW)))
            drafts.append((q, x))
            ctx.append(x)
        for i in range(len(drafts) + 1):        # 3. decide, position by position
            m = n + i
            d, u, r = (coin_of(element(key, 4 * m + c)) for c in (DRAW, ACCEPT, RESAMPLE))
            p = sampler.probs(Session(target, memo_t).logits(tokens))
            if i < len(drafts):
                q, x = drafts[i]
            else:
                q = drafter.propose(tokens, m, n)
                if q is None:
                    t = sample(p, d)
                    lines.append('  position %d: no proposal d %s -> token %d' % (m, g9(d), t))
                    tokens.append(t)
                    break
                x = sample(q, d)
            ratio, ok, mass, t = decide_lenient(p, q, x, u, r, lenience)
            head = '  position %d: x %d d %s q %s p %s ratio %s u %s' % (
                m, x, g9(d), g9(q[x]), g9(p[x]), g9(ratio), g9(u))
            lines.append(head + (' accept -> token %d' % t if ok else
                                 ' reject residual_mass %s r %s -> token %d' % (g9(mass), g9(r), t)))
            if t in (1, 2):
                raise ValueError('a golden run met BOS or EOS')
            tokens.append(t)
            if not ok:
                break
    return lines


def drafter_file(target, tok, memo_t, which, setting, data=None, path=None, draft=None, memo_d=None):
    label, T, top_p, top_k = setting
    sampler = Sampler(T, top_p, top_k)
    K, lenience, extra = 4, 1.0, []
    if which == 'lookup':
        drafter = LookupDraft(target.V)
    elif which == 'medusa':
        drafter = MedusaDraft(data, target, memo_t, sampler)
        K = len(drafter.heads)
    elif which == 'eagle':
        drafter = EagleDraft(data, target, memo_t, sampler)
    else:
        drafter, lenience = ModelDraft(draft, memo_d, sampler), 0.5
    if data is not None:
        extra = ['%s %s: %d bytes, fnv1a %016x' % (which, path, len(data), fnv1a(data))]
    head = ('spec run: -d %s, K = %d, t = %s, top-p %s, top-k %d, seed 42, prompt "Once upon a time" '
            '(%d ids), 40 new tokens%s' % ('model (f32)' if draft else which, K, g9(sampler.T),
                                           g9(sampler.top_p), top_k, len(tok.encode(PROMPT)),
                                           ', lenience %s' % g9(lenience) if lenience < 1 else ''))
    return [head] + extra + drafter_run(target, tok, sampler, drafter, K, memo_t, lenience)


def plain_file(model, tok, memo, mode, setting, seed=42, n_new=40):
    """8.3's plain decoding; returns the file's lines and the run's ids."""
    label, T, top_p, top_k = setting
    sampler = Sampler(T, top_p, top_k)
    tokens = tok.encode(PROMPT)
    n0 = len(tokens)
    lines = ['plain run: -m %s%s, t = %s, top-p %s, top-k %d, seed 42, prompt "Once upon a time" '
             '(%d ids), %d new tokens' % (mode, ' (f32)' if mode == 'draft' else '', g9(sampler.T),
                                          g9(sampler.top_p), top_k, n0, n_new)]
    for m in range(n0, n0 + n_new):
        d = coin(seed, m, DRAW)
        t = sample(sampler.probs(Session(model, memo).logits(tokens)), d)
        lines.append('  position %d: d %s -> token %d' % (m, g9(d), t))
        tokens.append(t)
    return lines, tokens


def piece_text(tok, prev, t):
    """9.2: the decoded text of t after prev."""
    if 3 <= t < 259:
        return bytes([t - 3]) if t > 3 else b''
    piece = tok.pieces[t].split(b'\0')[0]
    if prev == 1 and piece[:1] == b' ':
        piece = piece[1:]
    return piece


def printed(piece):
    if len(piece) == 1 and (piece[0] <= 0x08 or 0x0e <= piece[0] <= 0x1f or piece[0] == 0x7f):
        return b''
    return piece


def text_lines(tok, ids, each):
    out, text = [], b''
    for i in range(1, len(ids)):
        piece = piece_text(tok, ids[i - 1], ids[i])
        b = printed(piece)
        if each:
            out.append('  position %d: id %d after %d: piece %s -> printed %s' % (
                i, ids[i], ids[i - 1], piece.hex() if piece else '(empty)', b.hex() if b else '(nothing)'))
        text += b
    return out, 'text: %d bytes %s' % (len(text), text.hex())


def text_file(tok, ids):
    lines, total = text_lines(tok, ids, True)
    out = ['decoded text of plain_random_target_t1.txt (the prompt\'s ids after BOS, then the 40 new)']
    out += lines + [total]
    for i, s in enumerate(HARD):
        out.append('decoded ids %d of tokens_random.txt: %s' % (i, text_lines(tok, tok.encode(s), False)[1]))
    return out


def drafter_files(check, target, ddata, rtok, memo_t):
    """The random model's files for the drafters, lenience, plain decoding, the text."""
    t1, t08 = SETTINGS[1], SETTINGS[2]
    check('run_random_lookup_t0.8_p0.9_k40.txt', drafter_file(target, rtok, memo_t, 'lookup', t08))
    check('run_random_medusa_t1.txt', drafter_file(target, rtok, memo_t, 'medusa', t1, random_medusa_bytes(),
                                                   'build/test/golden_medusa.bin'))
    check('run_random_eagle_t1.txt', drafter_file(target, rtok, memo_t, 'eagle', t1, random_eagle_bytes(),
                                                  'build/test/golden_eagle.bin'))
    draft32, memo_d32 = Model(ddata), {}           # the draft's f32 weights (--draft-weights f32)
    check('run_random_lenience0.5_t1.txt', drafter_file(target, rtok, memo_t, 'model', t1, draft=draft32,
                                                        memo_d=memo_d32))
    check('plain_random_draft_t0.8_p0.9_k40.txt', plain_file(draft32, rtok, memo_d32, 'draft', t08)[0])
    lines, ids = plain_file(target, rtok, memo_t, 'target', t1)
    check('plain_random_target_t1.txt', lines)
    check('text_random.txt', text_file(rtok, ids))


# ---- a self-test of the exact fma ---------------------------------------------

def fma_selftest():
    """The golden runs never meet a double-rounding case (rounding a*b + c in
    double, then to float32, happens to give the fma's bits everywhere), so the
    exact paths are checked here on cases where the naive way is wrong."""
    a = 2.0 ** -24 * (1 + 2.0 ** -23)          # a*b + c = 1 + 3*2^-24 - 2^-70:
    b = 1 - 2.0 ** -23                         # just below a float32 midpoint
    c = 1 + 2.0 ** -23
    want = 1 + 2.0 ** -23
    assert f32(a * b + c) != want              # the naive way rounds up
    tiny = 2.0 ** -75
    cases = [((a, b, c), want), ((-a, b, -c), -want),
             ((tiny, tiny, 0.0), 0.0),                     # 2^-150: a tie, to even (0)
             ((1.5 * tiny, tiny, 0.0), 2.0 ** -149),       # above the tie: up
             ((tiny, tiny, 2.0 ** -149), 2.0 ** -148)]     # 2^-149 + 2^-150: a tie, to even
    for (x, y, z), w in cases:
        assert fma(x, y, z) == w, (x, y, z)
    A, B, C = zip(*[abc for abc, _ in cases])
    want = [w for _, w in cases]
    assert vfma(list(A), list(B), list(C)) == want
    assert vfma_s([a, -a], b, [c, -c]) == want[:2]
    # a matvec whose second step is the hard case: acc = c, then fma(a, b, acc)
    assert matvec_cols([[c, -c], [a, -a]], [1.0, b]) == want[:2]


# ---- the golden files ------------------------------------------------------

HARD = [b'Once upon a time', b'', b' ', b'  two spaces', b'a\nb\tc\r\n',
        '\u0055TF-8 \u201cquotes\u201d \u00e9 \u65e5\u672c'.encode('utf-8'),
        b'\x01\x7f\xff bytes', b'The little dog said, "Hello!"']
PROMPT = b'Once upon a time'
SETTINGS = [('t0', 0.0, 1.0, 0), ('t1', 1.0, 1.0, 0), ('t0.8_p0.9_k40', 0.8, 0.9, 40)]


def coins_file():
    out = []
    for seed in (0, 1, 2, 42):
        k = key_of(seed)
        out.append('seed %d: key %016x' % (seed, k))
        for p in range(4):
            out.append('  position %d: draw %s accept %s resample %s' % (
                p, g9(coin(seed, p, DRAW)), g9(coin(seed, p, ACCEPT)), g9(coin(seed, p, RESAMPLE))))
        st = Stream(seed)
        out.append('  stream rng_u32: ' + ' '.join(str(st.u32()) for _ in range(4)))
    return out


def tokens_file(path, data, tok):
    out = ['tokenizer %s: %d bytes, fnv1a %016x' % (path, len(data), fnv1a(data))]
    for i, s in enumerate(HARD):
        out.append(('text %d:' % i) + ''.join(' %02x' % b for b in s))
        out.append(('ids %d: ' % i) + ' '.join(str(t) for t in tok.encode(s)))
    return out


def row_line(label, r, logits):
    raw = array('f', logits).tobytes()
    if sys.byteorder != 'little':
        a = array('f', logits)
        a.byteswap()
        raw = a.tobytes()
    return '%s: row %d: argmax %d fnv1a %016x first16 %s' % (
        label, r, argmax(logits), fnv1a(raw), ' '.join(hexfloat(v) for v in logits[:16]))


def logits_file(tpath, tdata, dpath, ddata, target, tok, memo_t):
    ids = tok.encode(b'Once upon a time, there was a little')[:5]
    out = ['target %s: %d bytes, fnv1a %016x' % (tpath, len(tdata), fnv1a(tdata)),
           'draft %s: %d bytes, fnv1a %016x' % (dpath, len(ddata), fnv1a(ddata)),
           'target: dim %d layers %d vocab %d; prompt ids %s' % (
               target.dim, target.L, target.V, ' '.join(map(str, ids)))]
    s = Session(target, {})                  # a fresh cache: a 1-row step at position 0
    out.append(row_line('1-row step, BOS at position 0', 0, s.logits(ids[:1])))
    s = Session(target, memo_t)              # the pass; its rows are the runs' rows too
    for r in range(5):
        out.append(row_line('5-row pass, positions 0..4', r, s.logits(ids[:r + 1])))
    return out


def run_files(name, target, draft, tok, memo_t, memo_d, setting, pq_max):
    label, T, top_p, top_k = setting
    sampler = Sampler(T, top_p, top_k)
    new, n0, lines, residuals = spec_run(target, draft, tok, PROMPT, sampler, memo_t, memo_d)
    head = ('spec run: K = 4, t = %s, top-p %s, top-k %d, seed 42, prompt "Once upon a time" '
            '(%d ids), %d new tokens, draft in %s' % (g9(sampler.T), g9(sampler.top_p), top_k,
                                                      n0, len(new), 'int8'))
    run = [head] + lines
    if pq_max is None:
        return run, None
    pq = ['p and q at the residual positions of run_%s_%s.txt (at most %d): per position a line, '
          'then "index p q" for every index where p or q is nonzero' % (name, label, pq_max)]
    shown = residuals[:pq_max]
    for (m, x, mass, r, t, p, q) in shown:
        ent = [(i, a, b) for i, (a, b) in enumerate(zip(p, q)) if a != 0 or b != 0]
        pq.append('position %d: x %d reject residual_mass %s r %s -> token %d; %d entries' % (
            m, x, g9(mass), g9(r), t, len(ent)))
        pq += ['  %d %s %s' % (i, g9(a), g9(b)) for (i, a, b) in ent]
    pq.append("end: %d of the run's %d residual positions" % (len(shown), len(residuals)))
    return run, pq


def compare(name, lines, outdir):
    text = ''.join(l + '\n' for l in lines)
    if outdir:
        with open(os.path.join(outdir, name), 'w') as f:
            f.write(text)
    with open(os.path.join(GOLDEN, name)) as f:
        want = f.read()
    if text == want:
        return True, '%s: same' % name
    got_l, want_l = text.split('\n'), want.split('\n')
    for i in range(max(len(got_l), len(want_l))):
        g = got_l[i] if i < len(got_l) else '<end of file>'
        w = want_l[i] if i < len(want_l) else '<end of file>'
        if g != w:
            return False, '%s: DIFFERS at line %d: got %s want %s' % (name, i + 1, g[:300], w[:300])
    return False, '%s: DIFFERS' % name


def main(argv):
    shipped_runs = '--shipped' in argv
    outdir = None
    if '--out' in argv:
        outdir = argv[argv.index('--out') + 1]
        os.makedirs(outdir, exist_ok=True)
    t0 = time.time()
    results = []

    def check(name, lines):
        ok, msg = compare(name, lines, outdir)
        results.append(ok)
        print(msg, '(%.1f s)' % (time.time() - t0), flush=True)

    fma_selftest()
    check('coins.txt', coins_file())

    # the random golden model
    tok_data = random_tokenizer_bytes()
    tdata = random_checkpoint_bytes(5, 6, 0.0)
    ddata = random_checkpoint_bytes(5, 6, 0.4)
    rtok = Tokenizer(tok_data, 400)
    check('tokens_random.txt', tokens_file('build/test/golden_tok.bin', tok_data, rtok))
    target = Model(tdata)
    draft = Model(ddata, int8=True)
    memo_t, memo_d = {}, {}
    check('logits_random.txt', logits_file('build/test/golden_target.bin', tdata,
                                           'build/test/golden_draft.bin', ddata, target, rtok, memo_t))
    for s in SETTINGS:
        run, pq = run_files('random', target, draft, rtok, memo_t, memo_d, s,
                            3 if s[0] == 't1' else 1000)
        check('run_random_%s.txt' % s[0], run)
        check('pq_random_%s.txt' % s[0], pq)
    check('tree_random.txt', tree_run(target, draft, rtok, memo_t, memo_d))
    drafter_files(check, target, ddata, rtok, memo_t)

    # a version-2 (int8) target: the random model with hidden 192, exported
    qdata = q80_export(random_checkpoint_bytes(5, 6, 0.0, hidden=192))
    qtarget = Model(qdata)
    memo_q = {}
    check('logits_q80.txt', logits_file('build/test/golden_q80.bin', qdata, 'build/test/golden_draft.bin', ddata,
                                        qtarget, rtok, memo_q))
    run, pq = run_files('q80', qtarget, draft, rtok, memo_q, memo_d, SETTINGS[0], 1000)
    check('run_q80_t0.txt', run)
    check('pq_q80_t0.txt', pq)

    # the shipped pair
    with open(os.path.join(ROOT, 'tokenizer.bin'), 'rb') as f:
        stok_data = f.read()
    with open(os.path.join(ROOT, 'weights', 'target.bin'), 'rb') as f:
        stdata = f.read()
    with open(os.path.join(ROOT, 'weights', 'draft.bin'), 'rb') as f:
        sddata = f.read()
    V = abs(struct.unpack_from('<i', stdata, 20)[0])
    stok = Tokenizer(stok_data, V)
    check('tokens_shipped.txt', tokens_file('tokenizer.bin', stok_data, stok))
    starget = Model(stdata)
    smemo_t, smemo_d = {}, {}
    check('logits_shipped.txt', logits_file('weights/target.bin', stdata, 'weights/draft.bin', sddata,
                                            starget, stok, smemo_t))
    if shipped_runs:
        sdraft = Model(sddata, int8=True)
        for s in SETTINGS:
            run, pq = run_files('shipped', starget, sdraft, stok, smemo_t, smemo_d, s,
                                None if s[0] == 't1' else 1000)
            check('run_shipped_%s.txt' % s[0], run)
            if pq is not None:
                check('pq_shipped_%s.txt' % s[0], pq)
    n_ok = sum(results)
    print('port: %d of %d golden files reproduced (%.1f s)%s' % (
        n_ok, len(results), time.time() - t0,
        '' if shipped_runs else '; the shipped runs need --shipped'))
    return 0 if n_ok == len(results) else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
