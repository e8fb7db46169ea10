"""NumPy dequantizers of GGUF's 256-element block types (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K,
IQ4_XS), written from the GGUF / ggml block layouts (ggml-common.h's block_* structs and
the element order of ggml's dequantize_row_*), not from facet's C.

Each function takes the raw bytes of whole superblocks (a uint8 array, a multiple of the
block size) and returns float32 values in file order. The arithmetic is float32 in the
order ggml's C uses, w = (d * scale) * q - (dmin * min), so the result is the format's
exact value of every weight.

Also: a small GGUF reader (header, metadata skipped, tensor infos) to copy blocks out of
the corpus files, and `main` that writes tests/data/quant_k/ (see its SOURCE.md).
"""

import struct
import sys
from pathlib import Path

import numpy as np

QK = 256
KVALUES_IQ4NL = np.array([-127, -104, -83, -65, -49, -35, -22, -10,
                          1, 13, 25, 38, 53, 69, 89, 113], dtype=np.int8)

# name: (ggml type id, bytes per 256 elements)
TYPES = {"Q2_K": (10, 84), "Q3_K": (11, 110), "Q4_K": (12, 144), "Q5_K": (13, 176),
         "Q6_K": (14, 210), "IQ4_XS": (23, 136)}


def _blocks(raw, nbytes):
    raw = np.frombuffer(bytes(raw), dtype=np.uint8)
    assert raw.size % nbytes == 0
    return raw.reshape(-1, nbytes)


def _f16(b, off):
    return b[:, off:off + 2].copy().view("<f2").astype(np.float32)  # (nb, 1)


def _bits(a, shift, mask):
    return (a >> np.uint8(shift)) & np.uint8(mask)


def _expand(scale_per_group, group):
    """(nb, G) -> (nb, G * group): each scale repeated over its group of elements."""
    return np.repeat(scale_per_group, group, axis=1)


def _finish(d, sc, q, dmin=None, m=None, group=16):
    """w = (d * sc) * q - (dmin * m), float32, per group of elements."""
    dl = _expand((d * sc.astype(np.float32)).astype(np.float32), group)
    w = (dl * q.astype(np.float32)).astype(np.float32)
    if dmin is not None:
        ml = _expand((dmin * m.astype(np.float32)).astype(np.float32), group)
        w = (w - ml).astype(np.float32)
    return w.reshape(-1)


def dequant_q2_K(raw):
    # scales[16] | qs[64] | d f16 | dmin f16
    b = _blocks(raw, 84)
    scales, qs = b[:, 0:16], b[:, 16:80]
    d, dmin = _f16(b, 80), _f16(b, 82)
    # element 128 h + 32 j + t = bits 2j, 2j+1 of qs[32 h + t]
    q = np.stack([np.stack([_bits(qs[:, 32 * h:32 * h + 32], 2 * j, 3) for j in range(4)], 1)
                  for h in range(2)], 1).reshape(-1, 256)
    return _finish(d, scales & 0xF, q, dmin, scales >> 4)


def dequant_q3_K(raw):
    # hmask[32] | qs[64] | scales[12] | d f16
    b = _blocks(raw, 110)
    hmask, qs, s, d = b[:, 0:32], b[:, 32:96], b[:, 96:108].astype(np.int32), _f16(b, 108)
    low = np.stack([np.stack([_bits(qs[:, 32 * h:32 * h + 32], 2 * j, 3) for j in range(4)], 1)
                    for h in range(2)], 1).reshape(-1, 256).astype(np.int8)
    # high bit of element 128 h + 32 j + t: bit (4 h + j) of hmask[t]; clear -> minus 4
    hb = np.stack([_bits(hmask, k, 1) for k in range(8)], 1).reshape(-1, 256)
    q = low - np.where(hb == 0, 4, 0).astype(np.int8)
    # 16 six-bit scales: low 4 bits from the nibbles of s[0..7] (low nibbles first),
    # high 2 bits from s[8..11], two bits per scale, 4 scales per bit pair
    lo4 = np.concatenate([s[:, 0:8] & 0xF, s[:, 0:8] >> 4], axis=1)
    hi2 = np.concatenate([(s[:, 8:12] >> (2 * k)) & 3 for k in range(4)], axis=1)
    sc = (lo4 | (hi2 << 4)) - 32
    return _finish(d, sc, q)


def _scale_min_k4(s):
    """12 packed bytes -> 8 six-bit scales, 8 six-bit mins (Q4_K, Q5_K)."""
    s = s.astype(np.int32)
    sc = np.concatenate([s[:, 0:4] & 63, (s[:, 8:12] & 0xF) | ((s[:, 0:4] >> 6) << 4)], axis=1)
    m = np.concatenate([s[:, 4:8] & 63, (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)], axis=1)
    return sc, m


def dequant_q4_K(raw):
    # d f16 | dmin f16 | scales[12] | qs[128]
    b = _blocks(raw, 144)
    d, dmin, qs = _f16(b, 0), _f16(b, 2), b[:, 16:144]
    sc, m = _scale_min_k4(b[:, 4:16])
    # chunk c of 64: low nibbles of qs[32c..32c+31], then their high nibbles
    q = np.concatenate([np.concatenate([qs[:, 32 * c:32 * c + 32] & 0xF, qs[:, 32 * c:32 * c + 32] >> 4], 1)
                        for c in range(4)], axis=1)
    return _finish(d, sc, q, dmin, m, group=32)


def dequant_q5_K(raw):
    # d f16 | dmin f16 | scales[12] | qh[32] | qs[128]
    b = _blocks(raw, 176)
    d, dmin, qh, qs = _f16(b, 0), _f16(b, 2), b[:, 16:48], b[:, 48:176]
    sc, m = _scale_min_k4(b[:, 4:16])
    parts = []
    for c in range(4):
        lo = qs[:, 32 * c:32 * c + 32]
        parts.append((lo & 0xF) + (_bits(qh, 2 * c, 1) << 4))
        parts.append((lo >> 4) + (_bits(qh, 2 * c + 1, 1) << 4))
    return _finish(d, sc, np.concatenate(parts, axis=1), dmin, m, group=32)


def dequant_q6_K(raw):
    # ql[128] | qh[64] | scales[16] int8 | d f16
    b = _blocks(raw, 210)
    ql, qh, sc, d = b[:, 0:128], b[:, 128:192], b[:, 192:208].view(np.int8), _f16(b, 208)
    parts = []
    for h in range(2):
        l0, l1 = ql[:, 64 * h:64 * h + 32], ql[:, 64 * h + 32:64 * h + 64]
        hh = qh[:, 32 * h:32 * h + 32]
        for k, low in enumerate([l0 & 0xF, l1 & 0xF, l0 >> 4, l1 >> 4]):
            parts.append((low | (_bits(hh, 2 * k, 3) << 4)).astype(np.int16) - 32)
    return _finish(d, sc, np.concatenate(parts, axis=1))


def dequant_iq4_xs(raw):
    # d f16 | scales_h u16 | scales_l[4] | qs[128]
    b = _blocks(raw, 136)
    d = _f16(b, 0)
    sh = b[:, 2:4].copy().view("<u2").astype(np.int32)  # (nb, 1)
    sl = b[:, 4:8].astype(np.int32)
    ls = np.stack([((sl[:, j // 2] >> (4 * (j % 2))) & 0xF) | (((sh[:, 0] >> (2 * j)) & 3) << 4)
                   for j in range(8)], axis=1) - 32
    qs = b[:, 8:136]
    idx = np.concatenate([np.concatenate([qs[:, 16 * j:16 * j + 16] & 0xF, qs[:, 16 * j:16 * j + 16] >> 4], 1)
                          for j in range(8)], axis=1)
    return _finish(d, ls, KVALUES_IQ4NL[idx], group=32)


DEQUANT = {"Q2_K": dequant_q2_K, "Q3_K": dequant_q3_K, "Q4_K": dequant_q4_K,
           "Q5_K": dequant_q5_K, "Q6_K": dequant_q6_K, "IQ4_XS": dequant_iq4_xs}


# --- a minimal GGUF v3 reader: enough to find a tensor's bytes -------------------------

_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
           10: "<Q", 11: "<q", 12: "<d"}


def _skip_value(f, vtype):
    if vtype in _SCALAR:
        f.read(struct.calcsize(_SCALAR[vtype]))
    elif vtype == 8:
        (n,) = struct.unpack("<Q", f.read(8))
        f.read(n)
    elif vtype == 9:
        et, n = struct.unpack("<IQ", f.read(12))
        for _ in range(n):
            _skip_value(f, et)
    else:
        raise ValueError(f"unknown GGUF value type {vtype}")


def gguf_tensor_bytes(path, name, nbytes):
    """The first nbytes of tensor `name`'s data in GGUF file `path`, and its type id."""
    with open(path, "rb") as f:
        magic, version, n_tensors, n_kv = struct.unpack("<4sIQQ", f.read(24))
        assert magic == b"GGUF" and version == 3, (path, magic, version)
        align = 32
        for _ in range(n_kv):
            (klen,) = struct.unpack("<Q", f.read(8))
            key = f.read(klen).decode()
            (vtype,) = struct.unpack("<I", f.read(4))
            if key == "general.alignment":
                (align,) = struct.unpack("<I", f.read(4))
            else:
                _skip_value(f, vtype)
        infos = {}
        for _ in range(n_tensors):
            (nlen,) = struct.unpack("<Q", f.read(8))
            tname = f.read(nlen).decode()
            (nd,) = struct.unpack("<I", f.read(4))
            f.read(8 * nd)
            ttype, off = struct.unpack("<IQ", f.read(12))
            infos[tname] = (ttype, off)
        data = (f.tell() + align - 1) // align * align
        ttype, off = infos[name]
        f.seek(data + off)
        return f.read(nbytes), ttype


# --- tests/data/quant_k ---------------------------------------------------------------

# type -> (corpus file, tensor); blk.0.ffn_up.weight has that type in each file
SOURCES = {"Q2_K": "llama-Q2_K", "Q3_K": "llama-Q3_K_M", "Q4_K": "llama-Q4_K_M",
           "Q5_K": "llama-Q5_K_M", "Q6_K": "llama-Q6_K", "IQ4_XS": "llama-IQ4_XS"}
TENSOR = "blk.0.ffn_up.weight"
N_CORPUS = 16  # superblocks copied from the corpus (rows 0..15 of a 256-column matrix)


def crafted(tname, nbytes, rng):
    """Extreme superblocks: every bit set, every bit clear, two random-byte blocks and an
    alternating pattern, with the f16 scale fields set to finite values (largest normal,
    negative, subnormal, one) so the values stay finite."""
    out = []
    d_off = {"Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2],
             "Q6_K": [208], "IQ4_XS": [0]}[tname]
    for fill, dvals in [(0xFF, [1.0, 1.0]), (0x00, [1.0, 0.5]), (None, [-3.5, 0.25]),
                        (None, [65504.0, -2.0]), (0xA5, [2.0 ** -24, 6.1e-5])]:
        blk = bytearray(rng.integers(0, 256, nbytes, dtype=np.uint8).tobytes() if fill is None
                        else bytes([fill]) * nbytes)
        for off, v in zip(d_off, dvals):
            blk[off:off + 2] = np.float16(v).tobytes()
        out.append(bytes(blk))
    return b"".join(out)


def main(corpus_dir, out_dir):
    corpus_dir, out_dir = Path(corpus_dir), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(18)
    for tname, (tid, nbytes) in TYPES.items():
        raw, ttype = gguf_tensor_bytes(corpus_dir / f"{SOURCES[tname]}.gguf", TENSOR, N_CORPUS * nbytes)
        assert ttype == tid, (tname, ttype)
        raw += crafted(tname, nbytes, rng)
        w = DEQUANT[tname](raw)
        assert np.all(np.isfinite(w)), tname
        (out_dir / f"{tname}.bin").write_bytes(raw)
        w.astype("<f4").tofile(out_dir / f"{tname}.f32")
        print(f"{tname}: {len(raw) // nbytes} superblocks, {len(raw)} bytes")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
