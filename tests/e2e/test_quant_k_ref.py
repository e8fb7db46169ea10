"""tests/data/quant_k (the K-type superblocks test_quant_k.c reads) stays what its
SOURCE.md says: each .f32 is tests/ref/ggml_kquants.py's NumPy dequantization of the .bin,
the .bin's first 16 superblocks are the corpus file's bytes, and their values track the
llama-F32 file's original weights of the same rows (a wrong element order or scale
decoding would not: correlation 0.96 for Q2_K .. 0.9998 for Q6_K, with the relative RMS
error each bit width allows). The corpus checks skip loudly without ../shared."""

from pathlib import Path

import numpy as np
import pytest

import ggml_kquants as kq

DATA = Path(__file__).resolve().parents[1] / "data" / "quant_k"
# type -> (smallest correlation, largest relative RMS error) against the F32 originals
TRACK = {"Q2_K": (0.95, 0.33), "Q3_K": (0.985, 0.17), "Q4_K": (0.997, 0.08),
         "Q5_K": (0.999, 0.04), "Q6_K": (0.9997, 0.02), "IQ4_XS": (0.997, 0.08)}


@pytest.mark.parametrize("name", list(kq.TYPES))
def test_values_are_numpys(name):
    raw = (DATA / f"{name}.bin").read_bytes()
    want = np.fromfile(DATA / f"{name}.f32", dtype="<f4")
    assert np.array_equal(kq.DEQUANT[name](raw), want)


@pytest.mark.parametrize("name", list(kq.TYPES))
def test_corpus_blocks_track_the_f32_originals(name, facet_shared):
    models = facet_shared / "corpus" / "gguf" / "models"
    if not models.is_dir():
        pytest.skip(f"SKIPPED LOUDLY: {models} is absent: the K-type data was NOT checked")
    nbytes = kq.TYPES[name][1]
    raw, ttype = kq.gguf_tensor_bytes(models / f"{kq.SOURCES[name]}.gguf", kq.TENSOR,
                                      kq.N_CORPUS * nbytes)
    assert ttype == kq.TYPES[name][0]
    assert raw == (DATA / f"{name}.bin").read_bytes()[:len(raw)]
    f32, _ = kq.gguf_tensor_bytes(models / "llama-F32.gguf", kq.TENSOR, kq.N_CORPUS * 256 * 4)
    ref = np.frombuffer(f32, dtype="<f4").astype(np.float64)
    w = kq.DEQUANT[name](raw).astype(np.float64)
    corr = np.corrcoef(w, ref)[0, 1]
    rms = np.sqrt(np.mean((w - ref) ** 2) / np.mean(ref ** 2))
    lo, hi = TRACK[name]
    assert corr >= lo and rms <= hi, (name, corr, rms)
