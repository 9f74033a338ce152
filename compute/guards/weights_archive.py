"""Bounded reading of a weights archive (.npz: a zip of .npy members) for compute.weights. No Qt, no torch.

Nothing is allocated for a member before the archive's own description of it has been checked:

1. The file is opened through compute.guards.guarded_io (a regular file only, at most `max_file_bytes`): a FIFO,
   device, directory or socket is refused before a byte is read.
2. The zip end record is read first (at most `max_members` entries, a directory of at most
   MAX_DIRECTORY_BYTES, no zip64), then the central directory (parsed by zipfile) is checked as a whole:
   names `<key>.npy` without duplicates, no encryption, a compression method from ALLOWED_METHODS (by name:
   "stored", "deflated"; anything else — zip method 99, bzip2, lzma — is refused), each member's declared
   size under `max_member_bytes` (and, when the caller gives the expected shapes, no larger than that
   array's exact size plus a header), the declared total under `max_file_bytes` * 4 for deflated members.
3. Each member's .npy header (format 1.0 / 2.0, at most MAX_HEADER_BYTES) is parsed and checked: dtype in
   the caller's allowed set (little-endian, by its dtype string), C order, a shape of non-negative ints with
   at most MAX_NDIM dims and at most `max_elements` elements, equal to the expected shape when one is given,
   and a data size that is exactly what the member declares. Only then are the data bytes read (exactly that
   many; zipfile checks the member's CRC at its end).

Every failure — a damaged, truncated or hostile archive, whatever error zipfile, zlib or numpy raise for
it — is an `ArchiveError` (a ValueError) with one line that names the member; compute.weights turns it into
its WeightsError.
"""
from __future__ import annotations

import math
import struct
import zipfile
from pathlib import Path

import numpy as np

from compute.guards import guarded_io

ALLOWED_METHODS = {"stored": zipfile.ZIP_STORED, "deflated": zipfile.ZIP_DEFLATED}
_METHOD_NAMES = {v: k for k, v in ALLOWED_METHODS.items()}
MAX_HEADER_BYTES = 4096  # an .npy header of the arrays we write is ~128 bytes
MAX_NDIM = 8
MAX_DIRECTORY_BYTES = 4 << 20  # the shipped file's is ~4 kB
_MAGIC = b"\x93NUMPY"


class ArchiveError(ValueError):
    """An archive, or one member of it, that cannot be read within the limits (one line)."""


def read_arrays(path: str | Path, *, allowed_dtypes: dict[str, set[str]] | set[str],
                expected: dict[str, tuple[int, ...]] | None = None, max_file_bytes: int = 256 << 20,
                max_member_bytes: int = 128 << 20, max_members: int = 512, max_elements: int = 32 << 20,
                only: set[str] | None = None) -> dict[str, np.ndarray]:
    """{key: array} of the .npz at `path` ("<key>.npy" members), read within the limits of the module
    docstring. allowed_dtypes: dtype strings ("<u2", "<f4", "|u1") allowed for every member, or per key
    ({key: {...}}, a key missing there refused). expected: {key: shape} — every member's shape must be the
    one given (a key without an entry is checked by the caps only). only: read just these keys (the whole
    directory is still checked). The arrays are read-only views of the bytes read. Raises ArchiveError."""
    try:
        fh = guarded_io.open_regular(path, max_file_bytes)
    except guarded_io.UnsafeFileError as e:
        raise ArchiveError(e.problem) from None
    except (OSError, TypeError, ValueError) as e:
        raise ArchiveError(f"cannot be opened: {getattr(e, 'strerror', None) or e}") from None
    try:
        with fh:
            return _read_open(fh, allowed_dtypes, expected, max_file_bytes, max_member_bytes, max_members,
                              max_elements, only)
    except ArchiveError:
        raise
    except MemoryError:
        raise ArchiveError("does not fit in memory") from None
    except Exception as e:  # zipfile / zlib / struct / numpy on a damaged archive: one line, never a traceback
        raise ArchiveError(f"is not a readable .npz ({type(e).__name__}: {_short(e)})") from None


def _check_end_record(fh, max_members: int) -> None:
    """The end-of-central-directory record, read before zipfile parses the directory: at most `max_members`
    entries in a directory of at most MAX_DIRECTORY_BYTES (zipfile would build one ZipInfo per declared entry,
    ~0.5 kB each, before any check of ours could run); zip64 end records (for archives of > 65,535 members or
    > 4 GiB, never a toy weights file) are refused."""
    size = fh.seek(0, 2)
    tail_len = min(size, 22 + 0xFFFF)  # the record, and a comment of at most 65,535 bytes
    fh.seek(size - tail_len)
    tail = fh.read(tail_len)
    pos = tail.rfind(b"PK\x05\x06")
    if pos < 0 or len(tail) - pos < 22:
        raise ArchiveError("is not a zip archive (no end of central directory record)")
    _, _, n_disk, n_total, cd_size, cd_offset = struct.unpack_from("<HHHHII", tail, pos + 4)
    if n_total == 0xFFFF or n_disk == 0xFFFF or cd_size == 0xFFFFFFFF or cd_offset == 0xFFFFFFFF \
            or tail.rfind(b"PK\x06\x07", 0, pos) >= 0:
        raise ArchiveError("is a zip64 archive (larger than a toy weights file can be)")
    if n_total > max_members or n_disk > max_members:
        raise ArchiveError(f"declares {max(n_total, n_disk)} members (at most {max_members})")
    if cd_size > MAX_DIRECTORY_BYTES:
        raise ArchiveError(f"has a {cd_size}-byte central directory (at most {MAX_DIRECTORY_BYTES})")
    fh.seek(0)


def _read_open(fh, allowed_dtypes, expected, max_file_bytes, max_member_bytes, max_members, max_elements, only):
    _check_end_record(fh, max_members)
    try:
        z = zipfile.ZipFile(fh)
    except zipfile.BadZipFile as e:
        raise ArchiveError(f"is not a zip archive ({_short(e)})") from None
    with z:
        infos = z.infolist()
        _check_directory(infos, allowed_dtypes, expected, max_file_bytes, max_member_bytes, max_members)
        out: dict[str, np.ndarray] = {}
        for info in infos:
            key = info.filename[:-4]
            if only is not None and key not in only:
                continue
            allowed = allowed_dtypes.get(key, set()) if isinstance(allowed_dtypes, dict) else allowed_dtypes
            want = None if expected is None else expected.get(key)
            out[key] = _read_member(z, info, key, allowed, want, max_elements)
        return out


def _check_directory(infos, allowed_dtypes, expected, max_file_bytes, max_member_bytes, max_members) -> None:
    if len(infos) > max_members:
        raise ArchiveError(f"has {len(infos)} members (at most {max_members})")
    seen: set[str] = set()
    total = 0
    for info in infos:
        name = info.filename
        shown = guarded_io.show_path(name, 80)
        if not name.endswith(".npy") or len(name) > 204 or not name[:-4] or "/" in name or "\\" in name \
                or not name.isprintable():
            raise ArchiveError(f"has a member {shown!r} that is not <name>.npy")
        if name in seen:
            raise ArchiveError(f"has the member {shown!r} twice")
        seen.add(name)
        if info.flag_bits & 0x1:
            raise ArchiveError(f"member {shown} is encrypted")
        if info.compress_type not in _METHOD_NAMES:
            raise ArchiveError(f"member {shown} uses zip compression method {info.compress_type}; "
                               f"allowed: {', '.join(ALLOWED_METHODS)}")
        if info.file_size < 0 or info.compress_size < 0:
            raise ArchiveError(f"member {shown} declares a negative size")
        if info.file_size > max_member_bytes:
            raise ArchiveError(f"member {shown} declares {info.file_size} bytes (at most {max_member_bytes})")
        if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
            raise ArchiveError(f"member {shown} is stored but declares {info.compress_size} bytes stored for "
                               f"{info.file_size}")
        if info.compress_size > max_file_bytes:
            raise ArchiveError(f"member {shown} declares {info.compress_size} compressed bytes, more than the file")
        key = name[:-4]
        if isinstance(allowed_dtypes, dict) and key not in allowed_dtypes:
            raise ArchiveError(f"has an unexpected member {shown}")
        if expected is not None and key in expected:
            size = _expected_bytes(expected[key], allowed_dtypes, key)
            if info.file_size > size + MAX_HEADER_BYTES + 16:
                raise ArchiveError(f"member {shown} declares {info.file_size} bytes; the array {key} "
                                   f"{tuple(expected[key])} needs about {size}")
        total += info.file_size
    if total > 4 * max_file_bytes:
        raise ArchiveError(f"declares {total} bytes of members in all (at most {4 * max_file_bytes})")


def _expected_bytes(shape, allowed_dtypes, key) -> int:
    allowed = allowed_dtypes.get(key, set()) if isinstance(allowed_dtypes, dict) else allowed_dtypes
    item = max((np.dtype(s).itemsize for s in allowed), default=8)
    return math.prod(int(n) for n in shape) * item


def _read_member(z: zipfile.ZipFile, info: zipfile.ZipInfo, key: str, allowed: set[str], want, max_elements):
    with z.open(info) as f:
        magic = f.read(8)
        if len(magic) != 8 or magic[:6] != _MAGIC:
            raise ArchiveError(f"member {key} is not an .npy array")
        major, minor = magic[6], magic[7]
        if (major, minor) not in ((1, 0), (2, 0)):
            raise ArchiveError(f"member {key} has .npy format {major}.{minor} (this build reads 1.0 and 2.0)")
        nlen = 2 if major == 1 else 4
        raw = f.read(nlen)
        if len(raw) != nlen:
            raise ArchiveError(f"member {key} ends inside its header")
        hlen = int.from_bytes(raw, "little")
        if hlen > MAX_HEADER_BYTES:
            raise ArchiveError(f"member {key} has a {hlen}-byte header (at most {MAX_HEADER_BYTES})")
        header = f.read(hlen)
        if len(header) != hlen:
            raise ArchiveError(f"member {key} ends inside its header")
        shape, dtype = _parse_header(header, key, allowed)
        if want is not None and tuple(shape) != tuple(want):
            raise ArchiveError(f"member {key} has shape {_brief_shape(shape)}, expected {tuple(want)}")
        count = math.prod(shape)
        if count > max_elements:
            raise ArchiveError(f"member {key} declares {count} elements (at most {max_elements})")
        nbytes = count * dtype.itemsize
        left = info.file_size - (8 + nlen + hlen)
        if left != nbytes:
            raise ArchiveError(f"member {key} holds {max(left, 0)} data bytes; its header says {nbytes}")
        data = f.read(nbytes)  # the member's end: zipfile checks its CRC here
        if len(data) != nbytes:
            raise ArchiveError(f"member {key} is truncated ({len(data)} of {nbytes} data bytes)")
        if f.read(1):
            raise ArchiveError(f"member {key} holds more bytes than it declares")
    return np.frombuffer(data, dtype=dtype).reshape(shape)  # read-only, over the bytes read (no second copy)


def _parse_header(header: bytes, key: str, allowed: set[str]) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) of an .npy header dict {'descr': str, 'fortran_order': bool, 'shape': tuple}, parsed
    with ast.literal_eval (literals only, no calls) and checked field by field."""
    import ast

    try:
        text = header.decode("latin1")
        d = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError) as e:
        raise ArchiveError(f"member {key} has an unreadable .npy header ({type(e).__name__})") from None
    if not isinstance(d, dict) or set(d) != {"descr", "fortran_order", "shape"}:
        raise ArchiveError(f"member {key} has an .npy header without exactly descr, fortran_order and shape")
    descr, fortran, shape = d["descr"], d["fortran_order"], d["shape"]
    if not isinstance(descr, str) or descr not in allowed:
        shown = repr(descr) if isinstance(descr, str) and len(descr) < 20 else type(descr).__name__
        raise ArchiveError(f"member {key} has dtype {shown}; allowed: {', '.join(sorted(allowed)) or 'none'}")
    if fortran is not False:
        raise ArchiveError(f"member {key} is stored in Fortran order; only C order is read")
    if not isinstance(shape, tuple) or len(shape) > MAX_NDIM \
            or not all(type(n) is int and n >= 0 for n in shape):
        raise ArchiveError(f"member {key} has an invalid shape in its header")
    return shape, np.dtype(descr)


def _brief_shape(shape) -> str:
    text = str(tuple(shape))
    return text if len(text) <= 60 else text[:57] + "..."


def _short(e: BaseException, limit: int = 120) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


__all__ = ["ArchiveError", "read_arrays", "ALLOWED_METHODS", "MAX_HEADER_BYTES"]
