"""MXFP4 in NumPy (float64), written from the OCP Microscaling Formats (MX) v1.0
definition and ggml's block layout (ggml-common.h block_mxfp4; read, not copied),
independently of facet's C (src/kernels/cpu/quant_mxfp4.c, src/engine/weights.c).

An MXFP4 block is 32 FP4 E2M1 elements sharing one E8M0 scale. An E2M1 code (4 bits) is
sign (bit 3), a 2-bit exponent (bias 1) and a 1-bit mantissa: exponent 0 is subnormal,
m * 0.5; otherwise 2^(e - 1) * (1 + m / 2). The magnitudes are 0, 0.5, 1, 1.5, 2, 3, 4, 6.
An E8M0 byte s is the power of two 2^(s - 127). A weight is e2m1(code) * 2^(s - 127).

Two storage forms:
  Hugging Face (gpt-oss; transformers' Mxfp4 integration, convert_moe_packed_tensors):
    NAME_blocks [..., R, C / 32, 16] uint8: byte j of a block holds elements 2j (low
    nibble) and 2j + 1 (high nibble); NAME_scales [..., R, C / 32] uint8. [R, C] is the
    matrix as nn.Linear stores it (rows = outputs); transformers transposes the dequantized
    [..., R, C] to [..., C, R] (x @ W), the layout of the unquantized gate_up_proj and
    down_proj.
  GGUF (ggml type 39): 17-byte blocks, e then qs[16]; element j < 16 is the low nibble of
    qs[j], element j >= 16 the high nibble of qs[j - 16]; value 2 * e2m1 * 2^(e - 128)
    (ggml keeps doubled codes), the same number.
"""

import numpy as np


def e2m1_value(code):
    """The value of a 4-bit E2M1 code, from its fields."""
    sign = -1.0 if code & 8 else 1.0
    e, m = (code >> 1) & 3, code & 1
    mag = m * 0.5 if e == 0 else 2.0 ** (e - 1) * (1.0 + m / 2.0)
    return sign * mag


E2M1 = np.array([e2m1_value(c) for c in range(16)], dtype=np.float64)


def e8m0_value(s):
    """2^(s - 127) for E8M0 bytes (array)."""
    return np.ldexp(1.0, np.asarray(s, dtype=np.int64) - 127)


def dequant_hf(blocks, scales):
    """Hugging Face blocks [..., R, G, 16] and scales [..., R, G] (uint8, or float arrays
    holding the byte values) -> float64 [..., R, G * 32] (nn.Linear layout)."""
    b = np.asarray(blocks).astype(np.uint8)
    s = np.asarray(scales).astype(np.int64)
    codes = np.empty(b.shape[:-1] + (32,), dtype=np.uint8)
    codes[..., 0::2] = b & 15
    codes[..., 1::2] = b >> 4
    w = E2M1[codes] * e8m0_value(s)[..., None] + 0.0  # -0 (code 8) as +0
    return w.reshape(b.shape[:-2] + (b.shape[-2] * 32,))


def dequant_gguf(raw):
    """Raw GGUF MXFP4 blocks (17 bytes each) -> float64 values in file order."""
    b = np.frombuffer(bytes(raw), dtype=np.uint8).reshape(-1, 17)
    qs = b[:, 1:]
    codes = np.concatenate([qs & 15, qs >> 4], axis=1)
    return (E2M1[codes] * e8m0_value(b[:, :1]) + 0.0).reshape(-1)  # + 0.0: code 8 is +0, as ggml


def quantize_hf(w):
    """float [..., R, C] (C a multiple of 32) -> (blocks [..., R, C/32, 16], scales
    [..., R, C/32]) uint8 in the Hugging Face form. Per block: s = 127 + ceil(log2(amax /
    6)) clamped to [0, 254] (the largest magnitude fits E2M1's 6), each element the
    nearest E2M1 value of w / 2^(s - 127) (ties: the smaller magnitude); an all-zero block
    gets s = 127 and zero codes. A generator's choice: readers only need the bytes."""
    w = np.asarray(w, dtype=np.float64)
    g = w.reshape(w.shape[:-1] + (w.shape[-1] // 32, 32))
    amax = np.abs(g).max(axis=-1)
    with np.errstate(divide="ignore"):
        exp = np.where(amax > 0, np.ceil(np.log2(np.where(amax > 0, amax, 1.0) / 6.0)), 0.0)
    s = np.clip(exp + 127, 0, 254).astype(np.int64)
    x = g / e8m0_value(s)[..., None]
    mags = E2M1[:8]
    idx = np.abs(np.abs(x)[..., None] - mags).argmin(axis=-1).astype(np.uint8)  # first = smaller
    codes = np.where((x < 0) & (idx > 0), idx | 8, idx).astype(np.uint8)
    blocks = (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)
    return blocks, s.astype(np.uint8)


def hf_to_gguf_blocks(blocks, scales):
    """The GGUF bytes of Hugging Face blocks/scales (same values; rows flattened)."""
    b = np.asarray(blocks, dtype=np.uint8).reshape(-1, 16)
    s = np.asarray(scales, dtype=np.uint8).reshape(-1, 1)
    codes = np.empty((b.shape[0], 32), dtype=np.uint8)
    codes[:, 0::2] = b & 15
    codes[:, 1::2] = b >> 4
    qs = codes[:, :16] | (codes[:, 16:] << 4)
    return np.concatenate([s, qs], axis=1).astype(np.uint8).tobytes()


# --- tests/data/quant_mxfp4 -------------------------------------------------------------

TENSOR = "blk.0.ffn_gate_exps.weight"  # expert 0's rows come first
N_CORPUS = 128  # blocks: rows 0..15 of expert 0 (256 columns: 8 blocks per row)
CRAFTED_E = (0, 1, 2, 100, 127, 128, 252)  # exponent bytes of the crafted blocks


def crafted(rng):
    """One block per exponent of CRAFTED_E (subnormal scales 2^-128, 2^-127, the smallest
    normal, ordinary ones, and the largest whose 12 x 2^(e - 128) is a finite float32),
    alternating every code in both nibbles (qs[j] = j | (15 - j) << 4) and random bytes."""
    out = []
    for k, e in enumerate(CRAFTED_E):
        qs = (bytes(j | (15 - j) << 4 for j in range(16)) if k % 2 == 0
              else rng.integers(0, 256, 16, dtype=np.uint8).tobytes())
        out.append(bytes([e]) + qs)
    return b"".join(out)


def main(mxfp4_gguf, out_dir):
    """Write out_dir/MXFP4.bin (N_CORPUS blocks of TENSOR copied from mxfp4_gguf, then the
    crafted ones) and MXFP4.f32 (their values, dequant_gguf, as float32: exact)."""
    import ggml_kquants
    from pathlib import Path
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    raw, ttype = ggml_kquants.gguf_tensor_bytes(mxfp4_gguf, TENSOR, N_CORPUS * 17)
    assert ttype == 39, ttype
    raw += crafted(np.random.default_rng(39))
    w = dequant_gguf(raw)
    assert np.all(np.isfinite(w.astype(np.float32)))
    assert np.array_equal(w.astype(np.float32).astype(np.float64), w)  # exact in float32
    (out_dir / "MXFP4.bin").write_bytes(raw)
    w.astype("<f4").tofile(out_dir / "MXFP4.f32")
    print("MXFP4: %d blocks, %d bytes" % (len(raw) // 17, len(raw)))


if __name__ == "__main__":
    import sys
    main(sys.argv[1], sys.argv[2])
