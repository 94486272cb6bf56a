"""Exact IEEE-754 binary32 arithmetic on Python floats (doubles), stdlib only.

Every value handled here is a Python float that holds a binary32 value exactly.

- add, sub, mul, div and sqrt: computed in double, then rounded once to float32.
  Double (53 bits) has at least 2*24+2 bits, so rounding the double result to
  float32 gives the correctly rounded float32 result (double rounding is
  innocuous for these five operations).
- fma(a, b, c): a*b is exact in a double (24+24 bits), but a*b + c in double can
  round, and rounding that double again to float32 can then differ from the
  correctly rounded result. It can only differ when the double sum s is exactly
  half-way between two float32 values (such midpoints are doubles, and rounding
  is monotonic), so:
    * the vector routines compute s in double for every element, round the lot
      with array('f'), and check all the s at once (one big integer holding the
      doubles' bit patterns) for a float32 midpoint pattern or a magnitude below
      2^-126 (float32 subnormals, where midpoints have other patterns); only the
      flagged elements (rare) are redone by the exact scalar fma;
    * the exact scalar fma uses round-to-odd: TwoSum gives the exact error e of
      s = a*b + c; if e != 0 and s's last mantissa bit is even, s moves one ulp
      toward e; rounding that double to float32 is then the correctly rounded
      fma (53 >= 24 + 2).
- array('f', doubles) converts with a C cast, which rounds to nearest even,
  handles subnormals and gives +-inf on overflow.
"""

import math
import struct
import sys
from array import array

_ORDER = sys.byteorder
_D = struct.Struct('<d')
_Q = struct.Struct('<Q')
_INF = math.inf


def f32(x):
    """Round a double to the nearest float32 (ties to even)."""
    return array('f', (x,))[0]


def r32(values):
    """Round every double of a list to float32."""
    return array('f', values).tolist()


def fma(a, b, c):
    """Exact float32 fused multiply-add: a*b + c rounded once."""
    p = a * b                       # exact: 24 x 24 bits
    s = p + c
    if s - s != 0.0:                # inf or nan
        return f32(s)
    bb = s - p                      # TwoSum: p + c == s + e exactly
    e = (p - (s - bb)) + (c - bb)
    if e != 0.0 and not (_Q.unpack(_D.pack(s))[0] & 1):
        s = math.nextafter(s, _INF if e > 0.0 else -_INF)   # round to odd
    return f32(s)


# ---- the vector check ------------------------------------------------------
# For n doubles laid out as n 64-bit words in one integer:
#   midpoint: the 29 bits that float32 drops are exactly 1 followed by 28 zeros;
#   small: the exponent field is below 1023 - 126 (|s| < 2^-126, or s == 0).
# SWAR: ((B & M29) ^ P28) + M29 sets bit 29 of a word unless the word's low 29
# bits equal P28; (B & EXP) + C1151 sets bit 63 unless the exponent is < 897.

_masks = {}


def _word_masks(n):
    m = _masks.get(n)
    if m is None:
        def rep(v):
            return int.from_bytes(array('Q', [v]).tobytes() * n, _ORDER)
        m29 = rep((1 << 29) - 1)
        p28 = rep(1 << 28)
        h29 = rep(1 << 29)
        exp = rep(0x7FF << 52)
        c1151 = rep(1151 << 52)
        s63 = rep(1 << 63)
        m = (m29, p28, h29, exp, c1151, s63, h29 | s63)
        _masks[n] = m
    return m


def suspects(s):
    """Indices i where rounding the double s[i] to float32 may not be the
    correctly rounded exact value (a float32 midpoint, or tiny); [] if none."""
    m29, p28, h29, exp, c1151, s63, allbits = _word_masks(len(s))
    B = int.from_bytes(array('d', s), _ORDER)
    V = ((((B & m29) ^ p28) + m29) & h29) | (((B & exp) + c1151) & s63)
    if V == allbits:
        return ()
    X = V ^ allbits
    out = set()
    while X:
        low = X & -X
        out.add((low.bit_length() - 1) >> 6)
        X ^= low
    return sorted(out)


def vfma(A, B, C):
    """[fma(a, b, c)] element by element (lists of equal length)."""
    s = [a * b + c for a, b, c in zip(A, B, C)]
    f = array('f', s).tolist()
    for i in suspects(s):
        f[i] = fma(A[i], B[i], C[i])
    return f


def vfma_s(A, b, C):
    """[fma(a, b, c)] with one scalar b."""
    s = [a * b + c for a, c in zip(A, C)]
    f = array('f', s).tolist()
    for i in suspects(s):
        f[i] = fma(A[i], b, C[i])
    return f


def vfma_c(A, B, c):
    """[fma(a, b, c)] with one scalar c."""
    s = [a * b + c for a, b in zip(A, B)]
    f = array('f', s).tolist()
    for i in suspects(s):
        f[i] = fma(A[i], B[i], c)
    return f


def matvec_cols(cols, x):
    """out[r] = chain over k of fma(W[r][k], x[k], acc), from acc = +0.0, for a
    matrix given by its columns (cols[k][r] = W[r][k]); every row its own chain,
    run side by side one k at a time (the accumulators stay in an array('f'))."""
    n = len(cols[0])
    m29, p28, h29, exp, c1151, s63, allbits = _word_masks(n)
    frombytes = int.from_bytes
    order = _ORDER
    acc = array('f', bytes(4 * n))
    for col, xk in zip(cols, x):
        s = [w * xk + a for w, a in zip(col, acc)]
        B = frombytes(array('d', s), order)
        if ((((B & m29) ^ p28) + m29) & h29) | (((B & exp) + c1151) & s63) == allbits:
            acc = array('f', s)
        else:
            f = array('f', s)
            for i in suspects(s):
                f[i] = fma(col[i], xk, acc[i])
            acc = f
    return acc.tolist()


# ---- the three reductions (PORTING.md section 3) ---------------------------

def chain(a, b):
    acc = 0.0
    for x, y in zip(a, b):
        acc = fma(x, y, acc)
    return acc


def _tree(l):
    return f32(f32(f32(l[0] + l[4]) + f32(l[2] + l[6])) +
               f32(f32(l[1] + l[5]) + f32(l[3] + l[7])))


def dot_lanes8(x, y):
    n = len(x)
    n8 = n - n % 8
    lanes = [0.0] * 8
    for k in range(0, n8, 8):
        lanes = vfma(x[k:k + 8], y[k:k + 8], lanes)
    s = _tree(lanes)
    for k in range(n8, n):
        s = fma(x[k], y[k], s)
    return s


def sum_lanes8(x):
    n = len(x)
    n8 = n - n % 8
    lanes = [0.0] * 8
    for k in range(0, n8, 8):
        lanes = array('f', [a + b for a, b in zip(lanes, x[k:k + 8])]).tolist()
    s = _tree(lanes)
    for k in range(n8, n):
        s = f32(s + x[k])
    return s


# ---- exp_canonical (section 3.3) --------------------------------------------

def _hexf(s):
    return float.fromhex(s)


LOG2E = _hexf('0x1.715476p+0')
LN2_HI = _hexf('0x1.63p-1')
LN2_LO = _hexf('-0x1.bd0106p-13')
EXP_P = [_hexf('0x1.a0d2cep-13'), _hexf('0x1.6e879cp-10'), _hexf('0x1.11121p-7'),
         _hexf('0x1.555382p-5'), _hexf('0x1.555554p-3'), _hexf('0x1p-1')]
EXP_HI = _hexf('0x1.613334p+6')     # 88.3f
EXP_LO = _hexf('-0x1.5cp+6')        # -87.0f


def exp_canonical(x):
    if x >= EXP_HI:
        return _INF
    if not (x >= EXP_LO):
        return x if x != x else 0.0
    n = round(f32(x * LOG2E))        # round(): ties to even
    nf = float(n)
    r = fma(nf, -LN2_HI, x)
    r = fma(nf, -LN2_LO, r)
    poly = EXP_P[0]
    for c in EXP_P[1:]:
        poly = fma(poly, r, c)
    y = f32(fma(poly, f32(r * r), r) + 1.0)
    return f32(math.ldexp(y, n))


def exp_vec(xs):
    """exp_canonical of every element."""
    idx = [i for i, x in enumerate(xs) if x < EXP_HI and x >= EXP_LO]
    if len(idx) == len(xs):
        v = xs
    else:
        v = [xs[i] for i in idx]
    if v:
        t = array('f', [x * LOG2E for x in v]).tolist()
        ns = [round(x) for x in t]
        nf = [float(n) for n in ns]
        r = vfma_s(nf, -LN2_HI, v)
        r = vfma_s(nf, -LN2_LO, r)
        poly = [EXP_P[0]] * len(v)
        for c in EXP_P[1:]:
            poly = vfma_c(poly, r, c)
        rr = array('f', [x * x for x in r]).tolist()
        y = vfma(poly, rr, r)
        y = array('f', [x + 1.0 for x in y]).tolist()
        ldexp = math.ldexp
        res = array('f', [ldexp(a, n) for a, n in zip(y, ns)]).tolist()
    else:
        res = []
    if len(idx) == len(xs):
        return res
    out = [exp_canonical(x) for x in xs]     # the out-of-range ones
    for j, i in enumerate(idx):
        out[i] = res[j]
    return out


def hexfloat(x):
    """C's printf("%a") of a float promoted to double."""
    if x != x:
        return 'nan'
    if x in (_INF, -_INF):
        return 'inf' if x > 0 else '-inf'
    if x == 0.0:
        return '-0x0p+0' if math.copysign(1.0, x) < 0 else '0x0p+0'
    h = x.hex()                                   # [-]0x1.hhhhhhhhhhhhhp+e
    sign = '-' if h[0] == '-' else ''
    h = h.lstrip('-')
    mant, e = h[2:].split('p')
    ip, _, fp = mant.partition('.')
    fp = fp.rstrip('0')
    return '%s0x%s%sp%s' % (sign, ip, '.' + fp if fp else '', e)
