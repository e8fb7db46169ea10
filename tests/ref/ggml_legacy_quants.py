"""NumPy dequantizers of GGUF's 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
IQ4_NL), written from the GGUF / ggml block layouts (ggml-common.h's block_* structs and
the element order of ggml's dequantize_row_*), not from facet's C.

Layouts (little-endian; f16 = IEEE half), 32 weights per block; element j < 16 is the low
nibble of qs[j], element j >= 16 the high nibble of qs[j - 16]; in the 5-bit types bit j
of the 32-bit qh is element j's fifth bit:

    Q4_0   18 B  d | qs[16]               w = d * (q - 8)
    Q4_1   20 B  d | m | qs[16]           w = d * q + m
    Q5_0   22 B  d | qh[4] | qs[16]       w = d * (q - 16)
    Q5_1   24 B  d | m | qh[4] | qs[16]   w = d * q + m
    Q8_0   34 B  d | qs[32] (int8)        w = d * q
    IQ4_NL 18 B  d | qs[16]               w = d * kvalues_iq4nl[q]

Each function takes the raw bytes of whole blocks and returns float32 values in file
order, computed in float32 in the order ggml's C uses (one rounding per product, one more
for + m), so the result is the format's exact value of every weight.

`main` writes tests/data/quant_legacy/ (see its SOURCE.md), reading blocks out of the
corpus files with ggml_kquants.gguf_tensor_bytes.
"""

import sys
from pathlib import Path

import numpy as np

import ggml_kquants

KVALUES_IQ4NL = ggml_kquants.KVALUES_IQ4NL

# name: (ggml type id, bytes per 32 elements)
TYPES = {"Q4_0": (2, 18), "Q4_1": (3, 20), "Q5_0": (6, 22), "Q5_1": (7, 24),
         "Q8_0": (8, 34), "IQ4_NL": (20, 18)}


def _blocks(raw, nbytes):
    raw = np.frombuffer(bytes(raw), dtype=np.uint8)
    assert raw.size % nbytes == 0
    return raw.reshape(-1, nbytes)


def _f16(b, off):
    return b[:, off:off + 2].copy().view("<f2").astype(np.float32)  # (nb, 1)


def _nibbles(qs):
    """(nb, 16) bytes -> (nb, 32) 4-bit values in element order."""
    return np.concatenate([qs & np.uint8(15), qs >> np.uint8(4)], axis=1).astype(np.int32)


def _fifth_bits(qh):
    """(nb, 4) bytes -> (nb, 32): bit j of the little-endian u32, times 16."""
    v = qh.copy().view("<u4").astype(np.uint64)  # (nb, 1)
    j = np.arange(32, dtype=np.uint64)
    return (((v >> j) & np.uint64(1)) * np.uint64(16)).astype(np.int32)


def dequant_q4_0(raw):
    b = _blocks(raw, 18)
    q = _nibbles(b[:, 2:18]) - 8
    return (q.astype(np.float32) * _f16(b, 0)).astype(np.float32).reshape(-1)


def dequant_q4_1(raw):
    b = _blocks(raw, 20)
    q = _nibbles(b[:, 4:20])
    w = (q.astype(np.float32) * _f16(b, 0)).astype(np.float32)
    return (w + _f16(b, 2)).astype(np.float32).reshape(-1)


def dequant_q5_0(raw):
    b = _blocks(raw, 22)
    q = (_nibbles(b[:, 6:22]) | _fifth_bits(b[:, 2:6])) - 16
    return (q.astype(np.float32) * _f16(b, 0)).astype(np.float32).reshape(-1)


def dequant_q5_1(raw):
    b = _blocks(raw, 24)
    q = _nibbles(b[:, 8:24]) | _fifth_bits(b[:, 4:8])
    w = (q.astype(np.float32) * _f16(b, 0)).astype(np.float32)
    return (w + _f16(b, 2)).astype(np.float32).reshape(-1)


def dequant_q8_0(raw):
    b = _blocks(raw, 34)
    q = b[:, 2:34].view(np.int8).astype(np.float32)
    return (q * _f16(b, 0)).astype(np.float32).reshape(-1)


def dequant_iq4_nl(raw):
    b = _blocks(raw, 18)
    q = KVALUES_IQ4NL[_nibbles(b[:, 2:18])].astype(np.float32)
    return (_f16(b, 0) * q).astype(np.float32).reshape(-1)


DEQUANT = {"Q4_0": dequant_q4_0, "Q4_1": dequant_q4_1, "Q5_0": dequant_q5_0,
           "Q5_1": dequant_q5_1, "Q8_0": dequant_q8_0, "IQ4_NL": dequant_iq4_nl}

# --- tests/data/quant_legacy -----------------------------------------------------------

TENSOR = "blk.0.ffn_up.weight"
N_CORPUS = 128  # blocks copied from the corpus: rows 0..15 of a 256-column matrix


def crafted(tname, nbytes, rng):
    """Extreme blocks: every bit set, every bit clear, two of random bytes, an
    alternating pattern, and one holding every 4-bit value in both nibbles (qs[j] =
    j | (15 - j) << 4; Q8_0: -128..120 in steps of 8); their f16 scale fields
    (d, and m where the type has one) set to finite values (one, largest normal, negative,
    subnormal) so the values stay finite."""
    m_off = 2 if tname in ("Q4_1", "Q5_1") else None
    qs_off = nbytes - 16 if tname != "Q8_0" else 2
    qh_off = 2 if tname == "Q5_0" else 4 if tname == "Q5_1" else None
    out = []
    for fill, (d, m) in [(0xFF, (1.0, 1.0)), (0x00, (1.0, 0.5)), (None, (-3.5, 0.25)),
                         (None, (65504.0, -2.0)), (0xA5, (2.0 ** -24, 6.1e-5)),
                         ("all", (0.125, -1.0))]:
        if fill is None:
            blk = bytearray(rng.integers(0, 256, nbytes, dtype=np.uint8).tobytes())
        elif fill == "all":
            blk = bytearray(nbytes)
            if tname == "Q8_0":
                blk[2:34] = np.arange(-128, 128, 8, dtype=np.int8).tobytes()
            else:
                blk[qs_off:qs_off + 16] = bytes(j | (15 - j) << 4 for j in range(16))
            if qh_off is not None:
                blk[qh_off:qh_off + 4] = (0x5A5AA5A5).to_bytes(4, "little")
        else:
            blk = bytearray(bytes([fill]) * nbytes)
        blk[0:2] = np.float16(d).tobytes()
        if m_off is not None:
            blk[m_off:m_off + 2] = np.float16(m).tobytes()
        out.append(bytes(blk))
    return b"".join(out)


def main(corpus_dir, out_dir):
    corpus_dir, out_dir = Path(corpus_dir), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(32)
    for tname, (tid, nbytes) in TYPES.items():
        raw, ttype = ggml_kquants.gguf_tensor_bytes(corpus_dir / f"llama-{tname}.gguf", TENSOR,
                                                    N_CORPUS * nbytes)
        assert ttype == tid, (tname, ttype)
        raw += crafted(tname, nbytes, rng)
        w = DEQUANT[tname](raw)
        assert np.all(np.isfinite(w)), tname
        (out_dir / f"{tname}.bin").write_bytes(raw)
        w.astype("<f4").tofile(out_dir / f"{tname}.f32")
        print(f"{tname}: {len(raw) // nbytes} blocks, {len(raw)} bytes")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
