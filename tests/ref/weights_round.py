"""Weight matrices rounded as facet's block formats store them, for a reference that
rounds the same way (reference.Reference(..., weights_round="q4")).

Written from the format definitions in facet's headers (src/kernels/cpu/kernels.h and
matmul_internal.h), in NumPy, independently of the C code:

- int8 (facet's Q8_0 rule): per row and block of 32 inputs (zero-padded), d = f16(max|w| /
  127), q = clamp(round_even(w / d), -127, 127), w' = q * d.
- q4: per row and block of 32, m = the value of largest |w| (the first on ties); for each
  c of -9, -8.5, -8, -7.5, -7, 7, 7.5, 8: d = f16(m / c), codes clamp(round_even(w * (1 / d)),
  -8, 7) in float32, then the least-squares refit d' = f16(sum w q / sum q^2) of those
  codes with its own codes; the first candidate with the smallest sum (w - d q)^2 wins;
  w' = d q. `--weights q4` keeps the output projection (lm_head, or the tied embedding)
  in GGUF Q6_K blocks where its rows are a multiple of 256 inputs, else in int8.
- Q6_K (facet's own quantizer, quant.h facet_quantize_row_q6_K): per group of 16, m the
  value of largest |w| (the first on ties); for c = -4..4: is = -(32 + c / 4) / m, codes
  clamp(round_even(is w), -32, 31), refit s = sum w q / sum q^2, error sum (w - s q)^2; the
  first smallest error wins. Per 256: d = f16(max |s| / 127), sc = clamp(round_even(s / d),
  -128, 127), codes clamp(round_even(w / (d sc)), -32, 31) (0 where d sc = 0); w' =
  (d sc) q, all in float32.

The sums are float64 in another order than the C code's, so a block whose two best
candidates tie to the last bit may pick the other (never seen; it would move one block's
error by nothing).
"""

import numpy as np

CANDIDATES = (-9.0, -8.5, -8.0, -7.5, -7.0, 7.0, 7.5, 8.0)


def _f16(x):
    return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float32)


def _blocks(w):
    """[rows, cols] float -> ([rows * nblk, 32] float32 zero-padded, cols)."""
    w = np.asarray(w, dtype=np.float32)
    rows, cols = w.shape
    kp = (cols + 31) // 32 * 32
    pad = np.zeros((rows, kp), dtype=np.float32)
    pad[:, :cols] = w
    return pad.reshape(-1, 32), cols


def _unblock(b, rows, cols):
    return b.reshape(rows, -1)[:, :cols].astype(np.float64)


def round_q8(w):
    b, cols = _blocks(w)
    amax = np.abs(b).max(axis=1)
    d = _f16(amax / np.float32(127.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(d[:, None] > 0, np.rint(b / d[:, None]), 0)
    q = np.clip(q, -127, 127).astype(np.float32)
    return _unblock(q * d[:, None], np.shape(w)[0], cols)


def _codes(b, d):
    """codes (float32, -8..7) and squared errors (float64) of blocks b at scales d."""
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1.0) / d, np.float32(0.0)).astype(np.float32)
    t = np.clip(b * inv[:, None], np.float32(-8.0), np.float32(7.0))
    q = np.rint(t).astype(np.float32)
    e = b.astype(np.float64) - d.astype(np.float64)[:, None] * q.astype(np.float64)
    return q, (e * e).sum(axis=1)


def round_q4(w):
    b, cols = _blocks(w)
    idx = np.abs(b).argmax(axis=1)  # the first of largest |w|
    m = b[np.arange(len(b)), idx]
    best = np.full(len(b), np.inf)
    bd = np.zeros(len(b), dtype=np.float32)
    bq = np.zeros_like(b)
    def offer(d, q, e):
        take = (e < best) & (m != 0)
        best[:] = np.where(take, e, best)
        bd[:] = np.where(take, d, bd)
        bq[:] = np.where(take[:, None], q, bq)

    for c in CANDIDATES:
        d = _f16(m / np.float32(c))
        q, e = _codes(b, d)
        offer(d, q, e)
        swq = (b.astype(np.float64) * q).sum(axis=1)
        sqq = (q.astype(np.float64) ** 2).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            dl = _f16(np.where(sqq > 0, swq / np.maximum(sqq, 1), 0).astype(np.float32))
        # no refit without a nonzero code, or when f16 cannot hold it
        ok = (sqq > 0) & np.isfinite(dl)
        dl = np.where(ok, dl, np.float32(0)).astype(np.float32)
        q, e = _codes(b, dl)
        offer(dl, q, np.where(ok, e, np.inf))
    return _unblock(bq * bd[:, None], np.shape(w)[0], cols)


def round_q6_K(w):
    w = np.asarray(w, dtype=np.float32)
    rows, cols = w.shape
    g = w.reshape(-1, 16)
    idx = np.argmax(np.abs(g), axis=1)
    m = g[np.arange(g.shape[0]), idx]
    best_e = np.full(g.shape[0], np.inf)
    s = np.zeros(g.shape[0], dtype=np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        for c in range(-4, 5):
            inv = np.where(m != 0, -(np.float32(32.0) + np.float32(0.25) * np.float32(c)) / m, 0).astype(np.float32)
            q = np.clip(np.rint(inv[:, None] * g), -32, 31).astype(np.float32)
            sqq = (q * q).sum(axis=1, dtype=np.float64)
            sc = np.where(sqq > 0, (g * q).sum(axis=1, dtype=np.float64) / np.where(sqq > 0, sqq, 1), 0)
            sc = sc.astype(np.float32)
            e = ((g.astype(np.float64) - sc.astype(np.float64)[:, None] * q) ** 2).sum(axis=1)
            better = (sqq > 0) & (e < best_e)
            best_e = np.where(better, e, best_e)
            s = np.where(better, sc, s)
    s = s.reshape(-1, 16)
    d = _f16(np.abs(s).max(axis=1) / np.float32(127.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        sc = np.where(d[:, None] > 0, np.clip(np.rint(s / d[:, None]), -128, 127), 0).astype(np.float32)
        ds = (d[:, None] * sc).astype(np.float32)  # [blocks, 16]
        x = w.reshape(-1, 16, 16)
        q = np.where(ds[:, :, None] != 0, np.clip(np.rint(x / ds[:, :, None]), -32, 31), 0).astype(np.float32)
    return (ds[:, :, None] * q).astype(np.float32).reshape(rows, cols).astype(np.float64)


class RoundedStore:
    """A reference.Reference tensor store whose 2-D weight matrices read back rounded as
    `--weights kind` stores them (kind "q4": layers q4, the output projection Q6_K (int8
    where its rows are not a multiple of 256); "int8":
    every matrix int8). `output` names the output projection's tensor."""

    def __init__(self, store, kind, output):
        if kind not in ("q4", "int8"):
            raise ValueError("weights_round %r: expected 'q4' or 'int8'" % (kind,))
        self.store, self.kind, self.output, self._cache = store, kind, output, {}

    def names(self):
        return self.store.names()

    def __contains__(self, name):
        return name in self.store

    def get(self, name):
        return self[name] if name in self.store else None

    def __getitem__(self, name):
        if name not in self._cache:
            t = self.store[name]
            if np.ndim(t) == 2 and name.endswith(".weight"):
                if self.kind == "q4" and name == self.output and np.shape(t)[1] % 256 == 0:
                    t = round_q6_K(t)
                else:
                    q8 = self.kind == "int8" or name == self.output
                    t = round_q8(t) if q8 else round_q4(t)
            self._cache[name] = t
        return self._cache[name]
