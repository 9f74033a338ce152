"""A video file written by an ffmpeg process, safely (no Qt).

- The container follows the requested name: `-f mp4`, `-f webm` or `-f gif` from the extension of the path
  asked for (also when that path is a link to a name with another extension or none); any other extension is
  a one-line VideoError before anything is made.
- The target must be a regular file if it exists (app/files/atomic_io.py check_target): a link to /dev/full, a FIFO
  or a device is refused, before and again just before the rename.
- The temporary file is ours: created O_EXCL beside the target as ".NAME.XXXXXXXX.part.EXT"
  (tempfile.mkstemp: a planted link with that name makes it pick another name, never follow the link),
  locked with flock while it is written, and handed to ffmpeg as an open descriptor (pass_fds, written to as
  /proc/self/fd/N: the process's own descriptor, never the name), so nothing can swap the file under it.
- The encoder's failure is an error: a non-zero exit status, a broken pipe, an fsync error (ENOSPC, EDQUOT)
  or a file whose container is not complete (an MP4 without its moov box, a truncated WebM or GIF). The old
  file then stays as it was, the temporary file goes, the message is one translated line, and the encoder's
  own words (its stderr tail) go to the log at INFO (`--verbose`).
- On success: fsync, the old file's permission bits, an atomic rename over the target, the folder synced.
- Our own stale parts (a process killed with SIGKILL cannot clean up) are swept at the next export into the
  folder (atomic_io.sweep_stale: our pattern only, untouched for minutes, not locked by a live writer).

    with VideoOut("talk.mp4", ffmpeg_input_and_codec_args) as video:
        video.write(frame_bytes)
        path = video.commit()
"""
from __future__ import annotations

import errno
import fcntl
import logging
import os
import re
import shutil
import signal
import subprocess
import tempfile

from app.files import atomic_io
from app.i18n import tr

log = logging.getLogger(__name__)

FORMATS = {".mp4": "mp4", ".webm": "webm", ".gif": "gif"}  # the requested name's extension -> ffmpeg's -f
STDERR_TAIL = 4000  # bytes of the encoder's stderr kept for the log
_SPACE = {"No space left on device": errno.ENOSPC, "Disk quota exceeded": errno.EDQUOT,
          "File too large": errno.EFBIG}


class VideoError(Exception):
    """The video could not be written; str() is one translated line. `detail`: the encoder's stderr tail."""

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.detail = detail


def container_format(path: str) -> str:
    """ffmpeg's container name for the requested path's extension; VideoError for any other."""
    fmt = FORMATS.get(os.path.splitext(os.fspath(path))[1].lower())
    if fmt is None:
        raise VideoError(tr("writer.format.unknown", path=path))
    return fmt


def ffmpeg_exe() -> str:
    """imageio-ffmpeg's own binary (the `video` extra), else the system's ffmpeg on PATH; RuntimeError (one
    translated line naming both ways) when there is neither."""
    try:
        import imageio_ffmpeg  # ships its own ffmpeg binary
    except ImportError:
        found = shutil.which("ffmpeg")
        if found:
            return found
        raise RuntimeError(tr("writer.encode.no_ffmpeg")) from None
    return imageio_ffmpeg.get_ffmpeg_exe()


class VideoOut:
    """An ffmpeg process writing `path` through a temporary file; see the module docstring. `encoder_args`
    are ffmpeg's arguments up to the output (input, codec, filters); frames go to its stdin (write())."""

    def __init__(self, path: str, encoder_args: list[str], exe: str | None = None):
        self.shown = os.path.abspath(os.path.expanduser(os.fspath(path)))
        self.format = container_format(self.shown)
        self.proc: subprocess.Popen | None = None
        self.fd: int | None = None
        self.tmp: str | None = None
        self._stderr = None
        try:
            exe = exe or ffmpeg_exe()
        except (RuntimeError, OSError, ImportError) as exc:  # imageio-ffmpeg without its binary
            raise VideoError(tr("writer.encode.missing", reason=" ".join(str(exc).split())[:200])) from exc
        try:
            self.path = atomic_io.check_target(self.shown)
            folder = os.path.dirname(self.path)
            atomic_io.sweep_stale(folder)
            self.fd, self.tmp = tempfile.mkstemp(prefix=f".{os.path.basename(self.path)}.",
                                                 suffix=f".part.{self.format}", dir=folder)
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a sweeper elsewhere leaves it alone
        except atomic_io.WriteError as exc:
            self.abort()
            raise VideoError(atomic_io.message(exc)) from exc
        except OSError as exc:
            self.abort()
            raise VideoError(atomic_io.message(atomic_io.WriteError(self.shown, exc))) from exc
        cmd = [exe, "-y", *encoder_args, "-f", self.format, f"file:/proc/self/fd/{self.fd}"]
        try:
            self._stderr = tempfile.TemporaryFile()
            # its own session: a Ctrl-C at the terminal reaches us, not the encoder; abort() ends it
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                         stderr=self._stderr, pass_fds=(self.fd,), start_new_session=True)
        except OSError as exc:
            self.abort()
            raise VideoError(tr("writer.encode.missing", reason=exc.strerror or str(exc))) from exc
        log.debug("video: %s -> %s via %s", cmd[0], self.path, self.tmp)

    # -------------------------------------------------------------------------------------------

    def __enter__(self) -> "VideoOut":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()

    def write(self, data) -> None:
        """One chunk (a frame) to the encoder; VideoError (after abort) when it has stopped taking them."""
        try:
            self.proc.stdin.write(data)
        except (BrokenPipeError, OSError, ValueError):
            raise self._fail(self._wait()) from None

    def commit(self) -> str:
        """Finish the file and rename it over the target; returns the path written (links resolved).
        VideoError (after abort: the old file unchanged, no temporary file) when anything failed."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass  # a broken pipe: the exit status says why
        rc = self._wait()
        if rc != 0:
            raise self._fail(rc)
        try:
            os.fsync(self.fd)
        except OSError as exc:
            raise self._fail(rc, exc) from exc
        problem = container_problem(self.fd, self.format)
        if problem:
            raise self._fail(rc, incomplete=problem)
        try:
            atomic_io.check_target(self.path)  # again: it may have changed while the video was encoded
            if not os.path.samestat(os.fstat(self.fd), os.lstat(self.tmp)):
                raise OSError(errno.EEXIST, "the temporary file was replaced by another")
            os.fchmod(self.fd, atomic_io._mode_for(self.path))
            os.replace(self.tmp, self.path)
        except atomic_io.WriteError as exc:
            self.abort()
            raise VideoError(atomic_io.message(exc)) from exc
        except OSError as exc:
            raise self._fail(rc, exc) from exc
        self.tmp = None  # renamed: nothing to remove
        self.abort()  # closes the descriptor and the stderr file
        atomic_io._sync_folder(os.path.dirname(self.path))
        return self.path

    def abort(self) -> None:
        """Stop the encoder and remove the temporary file (if it is still ours); safe to call twice."""
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                try:
                    proc.kill()
                except OSError:
                    pass
            try:
                proc.stdin.close()
            except (OSError, ValueError):
                pass
            _wait_quietly(proc)
            self.proc = None
        if self.tmp is not None:
            try:
                if self.fd is None or os.path.samestat(os.fstat(self.fd), os.lstat(self.tmp)):
                    os.unlink(self.tmp)
            except OSError:
                pass
            self.tmp = None
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    # -------------------------------------------------------------------------------------------

    def _wait(self) -> int:
        proc = self.proc
        if proc is None:
            return -1
        try:
            proc.stdin.close()
        except OSError:
            pass
        return proc.wait()

    def stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.flush()
            size = self._stderr.seek(0, os.SEEK_END)
            self._stderr.seek(max(0, size - STDERR_TAIL))
            return self._stderr.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _fail(self, rc: int, exc: OSError | None = None, incomplete: str = "") -> VideoError:
        """The one-line VideoError for a failure (the encoder's stderr to the log); aborts."""
        tail = self.stderr_tail()
        # INFO, shown with --verbose: the user's one line is the VideoError (the CLI prints it once)
        log.info("video: the encoder failed writing %s (exit status %s%s); its output:\n%s", self.shown, rc,
                    f", {exc}" if exc else "", tail.strip() or "(no output)")
        self.abort()
        code = exc.errno if exc is not None and isinstance(exc.errno, int) else \
            next((c for words, c in _SPACE.items() if words in tail), None)
        if code is not None:
            return VideoError(atomic_io.message(atomic_io.WriteError(self.shown, OSError(code, os.strerror(code)))),
                              tail)
        if incomplete:
            return VideoError(tr("writer.encode.incomplete", path=self.shown, detail=incomplete), tail)
        return VideoError(tr("writer.encode.failed", path=self.shown, detail=_detail(rc, tail)), tail)


def _wait_quietly(proc: subprocess.Popen) -> None:
    try:
        proc.wait(timeout=10)
    except (subprocess.TimeoutExpired, OSError):
        pass


_PREFIX = re.compile(r"^\[[^\]]*\]\s*")  # "[out#0/mp4 @ 0x55...] " before ffmpeg's messages


def _detail(rc: int, tail: str) -> str:
    """A short reason: the encoder's last error line (without its [component @ address] prefix), or how it
    ended."""
    lines = [_PREFIX.sub("", line).strip() for line in tail.splitlines()]
    lines = [line for line in lines if line and not line.startswith("Last message repeated")]
    if lines:
        text = lines[-1]
        return text if len(text) <= 160 else text[:159] + "…"
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit status {rc}"


# ------------------------------------------------------------------------------------------- containers


def container_problem(fd: int, fmt: str) -> str | None:
    """None when the file's container is complete as far as its structure shows, else what is wrong
    (English, short): catches an encoder that stopped early yet exited 0 (the issue's MP4 without moov)."""
    size = os.fstat(fd).st_size
    if size == 0:
        return "the file is empty"
    if fmt == "mp4":
        return _mp4_problem(fd, size)
    if fmt == "gif":
        head = os.pread(fd, 6, 0)
        if head not in (b"GIF87a", b"GIF89a"):
            return "no GIF header"
        return None if os.pread(fd, 1, size - 1) == b"\x3b" else "the GIF has no trailer"
    if fmt == "webm":
        return _webm_problem(fd, size)
    return None


def _mp4_problem(fd: int, size: int) -> str | None:
    pos, seen = 0, set()
    for _ in range(100000):
        if pos == size:
            break
        head = os.pread(fd, 16, pos)
        if len(head) < 8:
            return "a box is cut short"
        box = int.from_bytes(head[:4], "big")
        kind = head[4:8]
        if box == 1:
            if len(head) < 16:
                return "a box is cut short"
            box = int.from_bytes(head[8:16], "big")
        elif box == 0:
            box = size - pos  # to the end of the file
        if box < 8 or pos + box > size:
            return "a box is cut short"
        seen.add(kind)
        pos += box
    if b"moov" not in seen:
        return "no moov box"
    if b"mdat" not in seen:
        return "no mdat box"
    return None


def _vint(fd: int, pos: int) -> tuple[int, int, bool]:
    """An EBML variable-size integer at pos: (value, its length, all value bits set = unknown size)."""
    first = os.pread(fd, 1, pos)
    if not first or first[0] == 0:
        raise ValueError("bad EBML number")
    length = 8 - first[0].bit_length() + 1
    raw = os.pread(fd, length, pos)
    if len(raw) < length:
        raise ValueError("cut short")
    value = int.from_bytes(raw, "big") & ((1 << (7 * length)) - 1)
    return value, length, value == (1 << (7 * length)) - 1


def _webm_problem(fd: int, size: int) -> str | None:
    try:
        if os.pread(fd, 4, 0) != b"\x1a\x45\xdf\xa3":
            return "no EBML header"
        header, n, _ = _vint(fd, 4)
        pos = 4 + n + header
        if os.pread(fd, 4, pos) != b"\x18\x53\x80\x67":
            return "no Segment"
        segment, n, unknown = _vint(fd, pos + 4)
    except ValueError as exc:
        return f"the WebM header is damaged ({exc})"
    if unknown:
        return None  # a live stream's segment: its end is not recorded
    return None if pos + 4 + n + segment == size else "the Segment is cut short"
