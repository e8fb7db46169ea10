"""Minimal safetensors reader and writer (NumPy + struct only, no safetensors package).

The format (https://huggingface.co/docs/safetensors): an 8-byte little-endian unsigned
header length N, N bytes of UTF-8 JSON {name: {"dtype", "shape", "data_offsets": [b, e]},
"__metadata__": {str: str}}, then the data section; offsets are relative to the start
of the data section. Tensors are row-major, little-endian.

Sharded checkpoints carry model.safetensors.index.json:
{"metadata": {"total_size": BYTES}, "weight_map": {tensor name: shard file name}}.

Used by tests/ref/gen_checkpoint.py (writing) and tests/ref/reference.py (reading); it
is test tooling, independent of facet's C reader.
"""

import json
import os
import struct

import numpy as np

# Element size in bytes of the dtypes this module can write/read (U8: MXFP4's blocks and
# scales, read as their byte values; F8_E4M3: float8 e4m3fn values).
DTYPE_SIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "U8": 1, "F8_E4M3": 1}


def _e4m3_table():
    """The value of each float8 e4m3fn code (1 sign, 4 exponent bits of bias 7, 3
    mantissa bits; exponent 0 subnormal m x 2^-9; S.1111.111 NaN, no infinities)."""
    v = np.empty(256)
    for c in range(256):
        e, m = (c >> 3) & 15, c & 7
        x = m * 2.0 ** -9 if e == 0 else (1 + m / 8.0) * 2.0 ** (e - 7)
        v[c] = np.nan if (e == 15 and m == 7) else (-x if c & 128 else x)
    return v


E4M3 = _e4m3_table()


def f8e4m3_bits_to_f64(bits):
    return E4M3[np.asarray(bits, dtype=np.uint8)]


def f64_to_f8e4m3_bits(x):
    """Codes of values that are exactly e4m3 values (as e4m3_round gives)."""
    pos = E4M3[:127]  # codes 0..126: 0 .. 448, increasing
    x = np.asarray(x, dtype=np.float64)
    idx = np.searchsorted(pos, np.abs(x))
    if not np.array_equal(pos[np.minimum(idx, 126)], np.abs(x)):
        raise ValueError("F8_E4M3: a value that is not an e4m3 value (round with e4m3_round)")
    return (idx | np.where(np.signbit(x) & (x != 0), 128, 0)).astype(np.uint8)


def e4m3_round(x):
    """x rounded to the nearest e4m3fn value, ties to the even code (|x| <= 448)."""
    pos = E4M3[:127]
    a = np.abs(np.asarray(x, dtype=np.float64))
    hi = np.clip(np.searchsorted(pos, a), 1, 126)
    lo = hi - 1
    dl, dh = a - pos[lo], pos[hi] - a
    pick = np.where(dl < dh, lo, np.where(dh < dl, hi, np.where(lo % 2 == 0, lo, hi)))
    return np.copysign(pos[pick], x)


def f32_to_bf16_bits(x):
    """float32 array -> uint16 bfloat16 bit patterns, round to nearest even (as torch's
    .to(torch.bfloat16)); NaN stays NaN (quiet)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32)
    # uint32 cannot overflow for finite values: the largest finite pattern 0xFF7FFFFF
    # plus 0x8000 stays below 2^32; NaNs are fixed up below.
    out = ((u + (((u >> 16) & 1) + np.uint32(0x7FFF))) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    if nan.any():
        out[nan] = (u[nan] >> 16).astype(np.uint16) | np.uint16(0x0040)
    return out


def bf16_bits_to_f32(bits):
    """uint16 bfloat16 bit patterns -> float32 (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def encode(arr, dtype):
    """Bytes of a float array stored as safetensors dtype 'F32', 'F16', 'BF16' or 'F64'
    (little-endian). F16/F32/F64 round with NumPy's round-to-nearest-even; BF16 with
    f32_to_bf16_bits from the float32 value."""
    if dtype == "F32":
        return np.ascontiguousarray(arr, dtype="<f4").tobytes()
    if dtype == "F16":
        return np.ascontiguousarray(arr, dtype="<f2").tobytes()
    if dtype == "F64":
        return np.ascontiguousarray(arr, dtype="<f8").tobytes()
    if dtype == "BF16":
        return f32_to_bf16_bits(np.asarray(arr, dtype=np.float32)).astype("<u2").tobytes()
    if dtype == "U8":
        a = np.asarray(arr)
        if a.size and (a.min() < 0 or a.max() > 255 or np.any(a != np.round(a))):
            raise ValueError("U8 data outside the bytes 0..255")
        return np.ascontiguousarray(a, dtype=np.uint8).tobytes()
    if dtype == "F8_E4M3":
        return f64_to_f8e4m3_bits(arr).tobytes()
    raise ValueError("unsupported dtype %r (expected F32, F16, BF16 or F64)" % (dtype,))


def _header_bytes(entries, metadata):
    """entries: list of (name, dtype, shape); returns (header bytes padded to 8, offsets)."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = dict(metadata)
    offsets = {}
    pos = 0
    for name, dtype, shape in entries:
        n = DTYPE_SIZE[dtype]
        for d in shape:
            n *= int(d)
        header[name] = {"dtype": dtype, "shape": [int(d) for d in shape], "data_offsets": [pos, pos + n]}
        offsets[name] = (pos, pos + n)
        pos += n
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * ((8 - len(raw) % 8) % 8)  # pad with spaces as the reference writer does
    return raw, offsets, pos


def write_file(path, entries, make_data, metadata=None):
    """Write one safetensors file, streaming tensor by tensor (full-size checkpoints
    never hold more than one tensor in memory).

    entries: list of (name, dtype, shape) in file order; make_data(name) -> float array
    of that shape (converted to dtype here). metadata: dict of str -> str or None
    (default {"format": "pt"} like torch's save_file). Returns the data-section size."""
    if metadata is None:
        metadata = {"format": "pt"}
    raw, offsets, total = _header_bytes(entries, metadata)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for name, dtype, shape in entries:
            arr = np.asarray(make_data(name))
            if tuple(arr.shape) != tuple(int(d) for d in shape):
                raise ValueError("tensor %s: data shape %s, declared %s" % (name, arr.shape, tuple(shape)))
            start, end = offsets[name]
            flat = arr.reshape(-1)
            step = 1 << 24  # convert in slices: bounded memory for full-size tensors
            written = 0
            for k in range(0, max(flat.size, 1), step):
                b = encode(flat[k:k + step], dtype)
                f.write(b)
                written += len(b)
            if written != end - start:
                raise AssertionError("tensor %s: %d bytes, expected %d" % (name, written, end - start))
    return total


def read_header(path):
    """(header dict without __metadata__, metadata dict, data-section start offset)."""
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) != 8:
            raise ValueError("%s: shorter than the 8-byte header length" % path)
        (n,) = struct.unpack("<Q", head)
        size = os.path.getsize(path)
        if n > size - 8:
            raise ValueError("%s: header length %d past end of file (%d bytes)" % (path, n, size))
        header = json.loads(f.read(n).decode("utf-8"))
    meta = header.pop("__metadata__", {}) or {}
    return header, meta, 8 + n


def read_tensor(path, info, data_start, out_dtype=np.float64):
    """One tensor of a safetensors file as a NumPy array of out_dtype (exact widening
    from F32/F16/BF16/F64)."""
    dtype = info["dtype"]
    shape = tuple(info["shape"])
    b, e = info["data_offsets"]
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if dtype not in DTYPE_SIZE:
        raise ValueError("%s: dtype %s not readable as float" % (path, dtype))
    if (e - b) != count * DTYPE_SIZE[dtype]:
        raise ValueError("%s: span %d != shape %s x %d" % (path, e - b, shape, DTYPE_SIZE[dtype]))
    np_dtype = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2", "U8": "u1",
                "F8_E4M3": "u1"}[dtype]
    arr = np.fromfile(path, dtype=np_dtype, count=count, offset=data_start + b)
    if dtype == "BF16":
        arr = bf16_bits_to_f32(arr)
    if dtype == "F8_E4M3":
        arr = f8e4m3_bits_to_f64(arr)
    return arr.astype(out_dtype).reshape(shape)


class TensorStore:
    """All tensors of a checkpoint folder (model.safetensors, or the shards named by
    model.safetensors.index.json), read on demand as float64.

    store.names() -> sorted tensor names; name in store; store[name] -> np.ndarray;
    store.dtype(name) -> safetensors dtype string; store.shape(name) -> tuple."""

    def __init__(self, folder):
        self.folder = folder
        self._where = {}  # name -> (file path, info, data start)
        index = os.path.join(folder, "model.safetensors.index.json")
        if os.path.exists(index):
            with open(index) as f:
                weight_map = json.load(f)["weight_map"]
            files = sorted(set(weight_map.values()))
        else:
            files = sorted(p for p in os.listdir(folder) if p.endswith(".safetensors"))
            weight_map = None
        if not files:
            raise FileNotFoundError("%s: no *.safetensors files" % folder)
        for fn in files:
            path = os.path.join(folder, fn)
            header, _, start = read_header(path)
            for name, info in header.items():
                if name in self._where:
                    raise ValueError("tensor %s appears in two files" % name)
                self._where[name] = (path, info, start)
        if weight_map is not None:
            for name, fn in weight_map.items():
                if name not in self._where or os.path.basename(self._where[name][0]) != fn:
                    raise ValueError("index maps %s to %s, not found there" % (name, fn))
        self._cache = {}

    def names(self):
        return sorted(self._where)

    def __contains__(self, name):
        return name in self._where

    def dtype(self, name):
        return self._where[name][1]["dtype"]

    def shape(self, name):
        return tuple(self._where[name][1]["shape"])

    def __getitem__(self, name):
        if name not in self._cache:
            if name not in self._where:
                raise KeyError("tensor %s not in checkpoint %s" % (name, self.folder))
            path, info, start = self._where[name]
            self._cache[name] = read_tensor(path, info, start)
        return self._cache[name]

    def get(self, name):
        """The tensor, or None when the checkpoint does not have it."""
        return self[name] if name in self._where else None
