#!/usr/bin/env python3
"""Small vocabulary-only GGUF files (no tensors), written from scratch: the seeds of
fuzz_gguf_tokenizer and the hand-made vocabularies of tests/e2e/test_gguf_tokenizer.py.

GGUF v3 layout (ggml docs/gguf.md): "GGUF", u32 version 3, u64 n_tensors, u64 n_kv, then
each pair: string key, u32 value type, value; strings are u64 length + bytes; arrays are
u32 element type, u64 count, elements. No tensors, so no data section is needed.

usage: gguf_vocab_seeds.py OUT_DIR   (writes spm.gguf, bpe.gguf, wpm.gguf)
"""

import struct
import sys
from pathlib import Path

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
_SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
           BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}


def _str(s):
    b = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def _value(t, v):
    if t == STR:
        return _str(v)
    if t == ARR:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(_value(et, x) for x in items)
    return struct.pack(_SCALAR[t], v)


def gguf_bytes(kvs):
    """kvs: list of (key, type, value); an array value is (element type, [items])."""
    out = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs))
    for k, t, v in kvs:
        out += _str(k) + struct.pack("<I", t) + _value(t, v)
    return out


def _skip_value(b, pos, t):
    if t == STR:
        return pos + 8 + struct.unpack_from("<Q", b, pos)[0]
    if t == ARR:
        et, n = struct.unpack_from("<IQ", b, pos)
        pos += 12
        if et in _SCALAR:
            return pos + n * struct.calcsize(_SCALAR[et])
        for _ in range(n):
            pos = _skip_value(b, pos, et)
        return pos
    return pos + struct.calcsize(_SCALAR[t])


def add_kvs(data, kvs, alignment=32):
    """A copy of GGUF file `data` with the pairs kvs appended to its metadata and the
    tensor data moved to the next multiple of `alignment` (tensor offsets are relative
    to the data section, so they stay)."""
    b = bytes(data)
    n_tensors, n_kv = struct.unpack_from("<QQ", b, 8)
    pos = 24
    for _ in range(n_kv):
        pos += 8 + struct.unpack_from("<Q", b, pos)[0]
        t = struct.unpack_from("<I", b, pos)[0]
        pos = _skip_value(b, pos + 4, t)
    kv_end = pos
    for _ in range(n_tensors):
        pos += 8 + struct.unpack_from("<Q", b, pos)[0]
        nd = struct.unpack_from("<I", b, pos)[0]
        pos += 4 + 8 * nd + 4 + 8
    info_end = pos
    data_start = -(-info_end // alignment) * alignment
    extra = b"".join(_str(k) + struct.pack("<I", t) + _value(t, v) for k, t, v in kvs)
    head = b[:8] + struct.pack("<QQ", n_tensors, n_kv + len(kvs)) + b[24:kv_end] + extra + b[kv_end:info_end]
    head += b"\0" * (-len(head) % alignment)
    return head + b[data_start:]


def spm_kvs():
    """A SentencePiece vocabulary: <unk> <s> </s>, 256 byte tokens, pieces with scores."""
    pieces = [("▁", -1.0), ("a", -2.0), ("b", -2.0), ("ab", -1.5), ("▁ab", -1.2), ("▁a", -3.0),
              ("c", -2.5), ("<|user|>", 0.0)]
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % i for i in range(256)] + [p for p, _ in pieces]
    scores = [0.0, 0.0, 0.0] + [0.0] * 256 + [s for _, s in pieces]
    types = [2, 3, 3] + [6] * 256 + [1] * (len(pieces) - 1) + [4]
    return [("general.architecture", STR, "llama"),
            ("tokenizer.ggml.model", STR, "llama"),
            ("tokenizer.ggml.tokens", ARR, (STR, tokens)),
            ("tokenizer.ggml.scores", ARR, (F32, scores)),
            ("tokenizer.ggml.token_type", ARR, (I32, types)),
            ("tokenizer.ggml.bos_token_id", U32, 1),
            ("tokenizer.ggml.eos_token_id", U32, 2),
            ("tokenizer.ggml.unknown_token_id", U32, 0),
            ("tokenizer.ggml.add_bos_token", BOOL, True),
            ("tokenizer.chat_template", STR,
             "{{ bos_token }}{% for m in messages %}<|user|>{{ m['content'] }}{% endfor %}")]


def bpe_kvs(pre="gpt-2"):
    """A byte-level BPE vocabulary: the 256 byte characters, a few merges, <|endoftext|>."""
    keep = set(list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256)))
    alpha, n = {}, 0
    for b in range(256):
        if b in keep:
            alpha[b] = chr(b)
        else:
            alpha[b] = chr(256 + n)
            n += 1
    tokens = [alpha[b] for b in range(256)]
    merges = ["Ġ h", "h e", "l l", "Ġh e", "ll o", "he llo", "Ġhe llo"]
    for m in merges:
        a, b = m.split(" ")
        tokens.append(a + b)
    tokens.append("<|endoftext|>")
    types = [1] * (len(tokens) - 1) + [3]
    return [("general.architecture", STR, "gpt2"),
            ("tokenizer.ggml.model", STR, "gpt2"),
            ("tokenizer.ggml.pre", STR, pre),
            ("tokenizer.ggml.tokens", ARR, (STR, tokens)),
            ("tokenizer.ggml.token_type", ARR, (I32, types)),
            ("tokenizer.ggml.merges", ARR, (STR, merges)),
            ("tokenizer.ggml.bos_token_id", U32, len(tokens) - 1),
            ("tokenizer.ggml.eos_token_id", U32, len(tokens) - 1)]


def wpm_kvs():
    """A WordPiece vocabulary in llama.cpp's converted form (word starts "▁w", pieces
    inside a word without "##")."""
    tokens = ["[PAD]"] + ["[unused%d]" % i for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]",
                                                                 "▁hello", "▁play", "ing", "▁,", "▁!"]
    types = [3] + [1] * 99 + [3, 3, 3, 3] + [1] * 5
    return [("general.architecture", STR, "bert"),
            ("tokenizer.ggml.model", STR, "bert"),
            ("tokenizer.ggml.pre", STR, "bert-bge"),
            ("tokenizer.ggml.tokens", ARR, (STR, tokens)),
            ("tokenizer.ggml.token_type", ARR, (I32, types)),
            ("tokenizer.ggml.unknown_token_id", U32, 100),
            ("tokenizer.ggml.seperator_token_id", U32, 102),
            ("tokenizer.ggml.cls_token_id", U32, 101)]


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, kvs in (("spm", spm_kvs()), ("bpe", bpe_kvs()), ("wpm", wpm_kvs())):
        (out / f"{name}.gguf").write_bytes(gguf_bytes(kvs))


if __name__ == "__main__":
    main()
