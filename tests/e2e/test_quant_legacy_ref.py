"""tests/data/quant_legacy (the 32-element blocks test_quant_legacy.c reads) stays what
its SOURCE.md says: each .f32 is tests/ref/ggml_legacy_quants.py's NumPy dequantization of
the .bin, the .bin's first 128 blocks are the corpus file's bytes, and their values track
the llama-F32 file's original weights of the same rows (a wrong element order or scale
decoding would not). The corpus checks skip loudly without ../shared."""

from pathlib import Path

import numpy as np
import pytest

import ggml_kquants
import ggml_legacy_quants as lq

DATA = Path(__file__).resolve().parents[1] / "data" / "quant_legacy"
# type -> (smallest correlation, largest relative RMS error) against the F32 originals
TRACK = {"Q4_0": (0.99, 0.12), "Q4_1": (0.99, 0.12), "Q5_0": (0.997, 0.06),
         "Q5_1": (0.997, 0.06), "Q8_0": (0.9999, 0.01), "IQ4_NL": (0.99, 0.12)}


@pytest.mark.parametrize("name", list(lq.TYPES))
def test_values_are_numpys(name):
    raw = (DATA / f"{name}.bin").read_bytes()
    want = np.fromfile(DATA / f"{name}.f32", dtype="<f4")
    assert np.array_equal(lq.DEQUANT[name](raw), want)


def test_hand_worked_blocks():
    """The dequantizers on blocks worked by hand from the layouts."""
    d = np.float16(0.5).tobytes()
    qs = bytes(j | (15 - j) << 4 for j in range(16))
    w = lq.dequant_q4_0(d + qs)  # low nibble j: (j - 8) / 2; high: (15 - j - 8) / 2
    assert list(w[:16]) == [(j - 8) / 2 for j in range(16)]
    assert list(w[16:]) == [(7 - j) / 2 for j in range(16)]
    m = np.float16(-1.0).tobytes()
    w = lq.dequant_q4_1(d + m + qs)
    assert list(w[:3]) == [-1.0, -0.5, 0.0] and w[16] == 15 / 2 - 1
    qh = (1 << 0 | 1 << 17).to_bytes(4, "little")  # fifth bit of elements 0 and 17
    w = lq.dequant_q5_0(d + qh + qs)
    assert w[0] == (16 - 16) / 2 and w[1] == (1 - 16) / 2 and w[17] == (14 + 16 - 16) / 2
    w = lq.dequant_q5_1(d + m + qh + qs)
    assert w[0] == 16 / 2 - 1 and w[17] == 30 / 2 - 1
    w = lq.dequant_q8_0(d + bytes([0x80, 0x7F] + [1] * 30))
    assert w[0] == -64.0 and w[1] == 63.5 and w[2] == 0.5
    w = lq.dequant_iq4_nl(d + qs)
    assert w[0] == -127 / 2 and w[15] == 113 / 2 and w[16] == 113 / 2


@pytest.mark.parametrize("name", list(lq.TYPES))
def test_corpus_blocks_track_the_f32_originals(name, facet_shared):
    models = facet_shared / "corpus" / "gguf" / "models"
    if not models.is_dir():
        pytest.skip(f"SKIPPED LOUDLY: {models} is absent: the 32-element data was NOT checked")
    tid, nbytes = lq.TYPES[name]
    raw, ttype = ggml_kquants.gguf_tensor_bytes(models / f"llama-{name}.gguf", lq.TENSOR,
                                                lq.N_CORPUS * nbytes)
    assert ttype == tid
    assert raw == (DATA / f"{name}.bin").read_bytes()[:len(raw)]
    f32, _ = ggml_kquants.gguf_tensor_bytes(models / "llama-F32.gguf", lq.TENSOR,
                                            lq.N_CORPUS * 32 * 4)
    ref = np.frombuffer(f32, dtype="<f4").astype(np.float64)
    w = lq.DEQUANT[name](raw).astype(np.float64)
    corr = np.corrcoef(w, ref)[0, 1]
    rms = np.sqrt(np.mean((w - ref) ** 2) / np.mean(ref ** 2))
    lo, hi = TRACK[name]
    print(f"{name}: correlation {corr:.5f}, relative RMS {rms:.4f}")
    assert corr >= lo and rms <= hi, (name, corr, rms)
