"""Minimal hand-written safetensors reader/writer (no `safetensors` package).

File format (K3-MODEL-SPEC §6.3):
    [u64 little-endian N][N bytes of JSON header][data section]
Header entries: {"dtype": str, "shape": [..], "data_offsets": [a, b]} with a, b
relative to the start of the data section.  An optional "__metadata__" entry is
skipped by the reader and never written by the writer.

Dtypes handled: F32, BF16, F16 (read only), U8.
  * BF16 is produced from f32 by round-to-nearest-even on the top 16 bits and
    stored as little-endian uint16.
  * The reader widens BF16 exactly (the 16 bits go into the high half of a u32,
    which is then an f32) and returns float64; F32/F16 are returned as float64;
    U8 is returned as raw numpy uint8.
"""
import json
import struct

import numpy as np

DTYPE_SIZE = {"F32": 4, "BF16": 2, "F16": 2, "U8": 1}


# --------------------------------------------------------------------------- #
# BF16 helpers
# --------------------------------------------------------------------------- #
def f32_to_bf16_bits(x):
    """float array -> uint16 BF16 bit patterns, round-to-nearest-even.

    The input is first rounded to float32 (IEEE RNE), then the upper 16 bits are
    rounded RNE.  NaN/Inf are not expected in this project's data.
    """
    u = np.ascontiguousarray(np.asarray(x, dtype=np.float32)).view(np.uint32).astype(np.uint64)
    rounding = ((u >> 16) & 1) + 0x7FFF
    return ((u + rounding) >> 16).astype(np.uint16)


def bf16_bits_to_f64(bits):
    """uint16 BF16 bit patterns -> float64, exactly (high half of a u32 -> f32)."""
    u32 = np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16
    return u32.view(np.float32).astype(np.float64)


def round_to_bf16(x):
    """Round values to the nearest BF16 value (RNE) and return them as float64."""
    return bf16_bits_to_f64(f32_to_bf16_bits(x))


def encode(dtype, values):
    """numpy values -> raw little-endian bytes for `dtype` (F32, BF16, U8)."""
    if dtype == "F32":
        return np.ascontiguousarray(np.asarray(values, dtype="<f4")).tobytes()
    if dtype == "BF16":
        return np.ascontiguousarray(f32_to_bf16_bits(values).astype("<u2")).tobytes()
    if dtype == "U8":
        a = np.asarray(values)
        assert a.dtype == np.uint8, "U8 tensors must be given as uint8"
        return np.ascontiguousarray(a).tobytes()
    raise ValueError(f"unsupported dtype {dtype}")


# --------------------------------------------------------------------------- #
# Writer
# --------------------------------------------------------------------------- #
def write_safetensors(path, tensors, pad_header_to_8=True):
    """Write a safetensors file.

    tensors: ordered list of (name, dtype, shape, raw_bytes); data is laid out in
    exactly this order with no gaps.
    pad_header_to_8: True  -> pad the JSON header with trailing spaces so that the
                              data section starts at a multiple of 8;
                     False -> no padding (data may start at an odd offset).
    Returns (header_len N, data_bytes).
    """
    header = {}
    off = 0
    seen = set()
    for name, dtype, shape, raw in tensors:
        if name in seen:
            raise ValueError(f"duplicate tensor name {name}")
        seen.add(name)
        numel = 1
        for s in shape:
            numel *= int(s)
        if len(raw) != numel * DTYPE_SIZE[dtype]:
            raise ValueError(f"{name}: {len(raw)} bytes for {dtype}{list(shape)}")
        header[name] = {"dtype": dtype, "shape": [int(s) for s in shape],
                        "data_offsets": [off, off + len(raw)]}
        off += len(raw)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    if pad_header_to_8:
        hjson += b" " * ((-(8 + len(hjson))) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for _, _, _, raw in tensors:
            f.write(raw)
    return len(hjson), off


# --------------------------------------------------------------------------- #
# Reader
# --------------------------------------------------------------------------- #
def read_header(path):
    """Return (header dict without __metadata__, absolute data-section start)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n).decode("utf-8"))
    header.pop("__metadata__", None)
    return header, 8 + n


def read_safetensors(path):
    """Read every tensor of a file.

    Returns {name: (dtype, shape, array)} where array is float64 for F32/BF16/F16
    (exact widening) and uint8 for U8, reshaped to `shape`.
    """
    header, data_start = read_header(path)
    with open(path, "rb") as f:
        f.seek(0, 2)
        file_size = f.tell()
        out = {}
        for name, e in header.items():
            dtype, shape = e["dtype"], list(e["shape"])
            a, b = e["data_offsets"]
            numel = int(np.prod(shape)) if shape else 1
            if dtype not in DTYPE_SIZE:
                raise ValueError(f"{path}: {name}: unsupported dtype {dtype}")
            if b - a != numel * DTYPE_SIZE[dtype]:
                raise ValueError(f"{path}: {name}: byte span {b - a} != numel*size")
            if data_start + b > file_size:
                raise ValueError(f"{path}: {name}: runs past end of file")
            f.seek(data_start + a)
            raw = f.read(b - a)
            if dtype == "F32":
                arr = np.frombuffer(raw, dtype="<f4").astype(np.float64)
            elif dtype == "F16":
                arr = np.frombuffer(raw, dtype="<f2").astype(np.float64)
            elif dtype == "BF16":
                arr = bf16_bits_to_f64(np.frombuffer(raw, dtype="<u2"))
            else:  # U8
                arr = np.frombuffer(raw, dtype=np.uint8).copy()
            out[name] = (dtype, shape, arr.reshape(shape))
    return out
