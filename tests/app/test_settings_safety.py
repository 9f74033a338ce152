"""The settings file is untrusted input (`--settings FILE`): nothing in it may run code, bad values fall back to
the defaults with a note, and it is written atomically.

The payload is what PySide6 writes for a Python object: `@Variant(… PySide::PyObjectWrapper … pickle)`. When
Qt reads it, the pickle runs (here: it creates a folder). Each test first shows that plain QSettings does run
it, so the test would fail without the guard.
"""
from __future__ import annotations

import errno
import json
import os
import random

import pytest
from PySide6.QtCore import QByteArray, QSettings

from app.files import atomic_io, ini_guard
from app.files.settings import PROMPT_TOKEN_LIMIT, Settings, camera_values
from compute.language.tokenizer import ToyTokenizer

pytestmark = pytest.mark.window(explain=False)  # no test here looks at the explanation


class _MakeFolder:
    """Unpickling this creates the folder: the proof that code ran."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return os.mkdir, (self.path,)


def payload_value(tmp_path, marker) -> bytes:
    """The raw INI value PySide6 writes for a Python object (Qt's own escaping of the pickle)."""
    scratch = tmp_path / "scratch.ini"
    q = QSettings(str(scratch), QSettings.IniFormat)
    q.setValue("x", _MakeFolder(str(marker)))
    q.sync()
    del q
    line = next(l for l in scratch.read_bytes().splitlines() if l.startswith(b"x="))
    scratch.unlink()
    assert line.startswith(b"x=@Variant(") and b"PyObjectWrapper" in line
    return line[2:]


def runs_in_plain_qsettings(path, marker) -> bool:
    """Does Qt's own reading of path run the payload? (touching any key parses the whole file)"""
    q = QSettings(str(path), QSettings.IniFormat)
    try:
        q.contains("version")
        for key in q.allKeys():
            q.value(key)
    except Exception:  # noqa: BLE001 - a damaged pickle fails to load; did an intact one run first?
        pass
    del q
    ran = marker.exists()
    if ran:
        marker.rmdir()
    return ran


def only_plain_values(path) -> bool:
    """Qt reads nothing but text, bytes and lists of text from path (no object is ever loaded)."""
    q = QSettings(str(path), QSettings.IniFormat)
    values = [q.value(key) for key in q.allKeys()]
    return all(v is None or isinstance(v, (str, bytes, QByteArray)) or
               (isinstance(v, list) and all(isinstance(x, str) for x in v)) for v in values)


def write_settings(path, **values) -> None:
    """A settings file (format version 1) holding `values`, written by plain QSettings as an old app would."""
    q = QSettings(str(path), QSettings.IniFormat)
    q.setValue("version", 1)
    for key, value in values.items():
        q.setValue(key, value)
    q.sync()
    del q


def read_like_the_app(path) -> Settings:
    s = Settings(str(path))
    for key in s.q.allKeys():  # every value Qt holds from the screened copy
        s.q.value(key)
    s.language("en"), s.layer(0, 93), s.knobs(), s.prompt("p"), s.camera()
    return s


def plain_file(extra: bytes) -> bytes:
    return b"[General]\nversion=1\nlayer=12\nlanguage=en\n" + extra + b"\n[knobs]\ntemperature=0.5\n"


def test_a_pickled_prompt_runs_nothing_and_the_plain_values_still_load(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "crafted.ini"
    path.write_bytes(plain_file(b"prompt=" + payload_value(tmp_path, marker)))
    assert runs_in_plain_qsettings(path, marker)  # the payload is real
    s = read_like_the_app(path)
    assert not marker.exists()
    assert s.refused == ["prompt"]
    assert s.layer(0, 93) == 12 and s.knobs().temperature == 0.5 and s.prompt("default") == "default"
    assert "prompt" in s.note_texts()[0]
    # saving writes only the plain values back: the payload is gone from the file
    assert s.sync() is None
    assert b"PyObjectWrapper" not in path.read_bytes() and b"@Variant" not in path.read_bytes()
    assert not runs_in_plain_qsettings(path, marker)


def variants(value: bytes) -> dict[str, bytes]:
    """The same payload in every spelling Qt's reader accepts as an '@Variant(' value."""
    body = value[len(b"@"):]
    return {
        "plain": b"prompt=" + value,
        "hex escape": b"prompt=\\x40" + body,
        "long hex escape": b"prompt=\\x10040" + body,
        "octal escape": b"prompt=\\100" + body,
        "quoted": b'prompt="' + value + b'"',
        "second list item": b"prompt=hello, " + value,
        "quoted list item": b'prompt="a", "' + value + b'"',
        "spaces before": b"   prompt =   " + value,
        "line continuation": b"prompt=\\\n" + value,
        "quote across lines": b'prompt="a\nother=",' + value,
        "datetime": b"prompt=@DateTime(" + value[len(b"@Variant("):],
        "in a section": b"[knobs]\nalpha=" + value + b"\n[General]",
        "escaped key": b"pro%6Dpt=" + value,
    }


def test_no_spelling_of_the_payload_runs(tmp_path):
    marker = tmp_path / "ran"
    value = payload_value(tmp_path, marker)
    for number, (name, entry) in enumerate(variants(value).items()):
        path = tmp_path / f"variant-{number}.ini"
        path.write_bytes(plain_file(entry))
        real = runs_in_plain_qsettings(path, marker)
        s = read_like_the_app(path)
        assert not marker.exists(), name
        if real:  # Qt would have run it: the guard must have said which key it left out
            assert s.refused, name
        assert s.layer(0, 93) == 12, name
    # CR-only line ends and a byte-order mark
    path = tmp_path / "cr.ini"
    path.write_bytes(b"\xef\xbb\xbf" + plain_file(b"prompt=" + value).replace(b"\n", b"\r"))
    assert runs_in_plain_qsettings(path, marker)
    s = read_like_the_app(path)
    assert not marker.exists() and s.refused == ["prompt"] and s.layer(0, 93) == 12


def test_random_damage_around_the_payload_never_runs_it(tmp_path):
    """Quotes, backslashes, commas, line ends and ';' dropped in at random: whatever Qt would make of the
    result, what the guard hands it never runs the pickle."""
    marker = tmp_path / "ran"
    value = payload_value(tmp_path, marker)
    head = b"[General]\nversion=1\nlayer=12\na=x\nprompt="
    tail = b"\nb=y\n[knobs]\ntemperature=0.5\n"
    rng = random.Random(11)
    noise = [b'"', b"\\", b",", b"\n", b"\r", b";", b"=", b"@", b" ", b"[", b"]", b"\\x4", b"\\1", b"a=\""]
    spellings = [value, b"\\x40" + value[1:], b"\\100" + value[1:], b'"' + value + b'"']
    ran_raw = 0
    for _ in range(300):
        parts = [bytearray(head), bytearray(tail)]  # the pickle itself stays intact, the rest is damaged
        for _ in range(rng.randint(1, 4)):
            part = rng.choice(parts)
            at = rng.randrange(len(part) + 1)
            part[at:at] = rng.choice(noise)
        damaged = bytes(parts[0]) + rng.choice(spellings) + bytes(parts[1])
        path = tmp_path / "damaged.ini"
        path.write_bytes(damaged)
        clean = tmp_path / "screened.ini"
        clean.write_bytes(ini_guard.screen(damaged)[0])
        ran_raw += runs_in_plain_qsettings(path, marker)
        assert only_plain_values(clean), damaged
        assert not marker.exists(), damaged
    assert ran_raw > 150  # most damaged files still carried a live payload (237 of 300 with this seed)


def test_a_window_started_on_a_crafted_file_runs_nothing_and_says_so(make_window, tmp_path, qtbot):
    marker = tmp_path / "ran"
    path = tmp_path / "crafted.ini"
    path.write_bytes(plain_file(b"prompt=" + payload_value(tmp_path, marker)))
    win = make_window("crafted.ini", wait_trace=False)
    assert not marker.exists()
    assert win.state.layer == 12 and win.state.knobs.temperature == 0.5
    message = win.statusBar().currentMessage()
    assert "ignored prompt" in message, message
    win.close()
    assert not marker.exists() and b"PyObjectWrapper" not in path.read_bytes()
    again = make_window("crafted.ini", wait_trace=False)
    assert again.settings.notes == [] and again.state.layer == 12


def test_camera_values_are_checked():
    good = {"center": [1.0, 2.0, 3.0], "distance": 50.0, "azimuth": -90.0, "elevation": 10.0, "fov": 38.0}
    assert camera_values(good) == good
    bad = {"center": [1.0, [2.0], 3.0], "distance": float("inf"), "azimuth": {"x": 1}, "elevation": "10",
           "fov": 0.0}
    assert camera_values(bad) is None
    assert camera_values({"fov": float("nan"), "distance": -5, "elevation": True}) is None
    assert camera_values({"fov": 179.0, "distance": 10**400, "center": [0, 0]}) == {"fov": 179.0}
    assert camera_values([1, 2, 3]) is None and camera_values("x") is None


@pytest.mark.parametrize("text", ['{"fov": NaN, "distance": Infinity}', '[' * 5000 + ']' * 5000,
                                  '{"center": [1e999, 0, 0]}', "not json", '{"x": "' + "y" * 9000 + '"}'])
def test_a_bad_saved_camera_gives_the_default_view(tmp_path, text):
    path = tmp_path / "cam.ini"
    write_settings(path, camera=text)
    assert Settings(str(path)).camera() is None


def test_a_window_with_a_broken_saved_camera_starts_with_finite_default_values(make_window, tmp_path):
    path = tmp_path / "cam.ini"
    write_settings(path, camera=json.dumps({"distance": 1e308 * 10, "fov": 0, "azimuth": 30.0,
                                            "center": [[1], 2, 3]}))
    win = make_window("cam.ini", wait_trace=False)
    cam = win.scene.camera_state()
    assert cam["azimuth"] == 30.0  # the one good value is used
    assert 0 < cam["fov"] < 180 and 0 < cam["distance"] < 1e4
    assert all(abs(v) < 1e4 for v in cam["center"])


def test_prompt_limit_matches_the_engine():
    from compute.engine import MAX_PROMPT_TOKENS

    assert PROMPT_TOKEN_LIMIT == MAX_PROMPT_TOKENS


def test_a_saved_prompt_over_the_limit_is_cut_with_a_note_and_the_app_runs(make_window, tmp_path):
    long = " ".join(["로봇이 컵을 집었다"] * 200)  # about 800 toy tokens
    assert len(ToyTokenizer().split(long)) > PROMPT_TOKEN_LIMIT
    path = tmp_path / "long.ini"
    write_settings(path, prompt=long)
    win = make_window("long.ini")  # waits for the first trace: never an empty app
    prompt = win.state.trace.text
    assert long.startswith(prompt) and 0 < len(ToyTokenizer().split(prompt)) <= PROMPT_TOKEN_LIMIT
    assert len(ToyTokenizer().split(long[:len(prompt) + 1])) > PROMPT_TOKEN_LIMIT  # the longest start that fits
    assert str(PROMPT_TOKEN_LIMIT) in win.statusBar().currentMessage()


def test_settings_write_is_atomic_and_names_the_cause(tmp_path, monkeypatch):
    path = tmp_path / "s.ini"
    s = Settings(str(path))
    s.q.setValue("version", 1)
    s.q.setValue("layer", 7)
    assert s.sync() is None
    before = path.read_bytes()
    s.q.setValue("layer", 8)

    def full(fd, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic_io.os, "write", full)
    problem = s.sync()
    monkeypatch.undo()
    assert problem and "disk is full" in problem and str(path) in problem
    assert path.read_bytes() == before
    assert [n for n in os.listdir(tmp_path) if n != "s.ini"] == []
    assert s.sync() is None and Settings(str(path)).layer(0, 93) == 8


def test_an_unreadable_settings_file_is_left_alone(tmp_path):
    path = tmp_path / "dir.ini"
    path.mkdir()
    s = Settings(str(path))
    assert s.valid is False and "dir.ini" in s.note_texts()[0]
    assert "dir.ini" in s.sync() and path.is_dir()


def _alarm(seconds: int = 10):
    """A settings file that blocks (a FIFO with no writer) fails the test instead of hanging it."""
    import signal

    def fire(*_a):
        raise TimeoutError("reading the settings blocked")

    signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX special files")
@pytest.mark.parametrize("kind", ["fifo", "link_to_fifo", "dev_zero", "link_to_dev_null", "directory"])
def test_a_special_settings_file_is_not_read_nor_written(tmp_path, kind):
    """A FIFO (no hang), /dev/zero (no MemoryError), a link to a device or a directory: one note naming the
    path and what it is, the defaults, and sync() leaves the special file as it is (no INI written over it)."""
    import signal
    import stat

    if kind in ("fifo", "link_to_fifo"):
        os.mkfifo(tmp_path / "pipe")
        target, what = tmp_path / "pipe", "a FIFO"
    elif kind == "directory":
        (tmp_path / "folder").mkdir()
        target, what = tmp_path / "folder", "a directory"
    else:
        target, what = "/dev/zero" if kind == "dev_zero" else "/dev/null", "a character device"
        if not os.path.exists(target):
            pytest.skip(f"no {target}")
    path = tmp_path / "s.ini" if kind.startswith("link") else target
    if kind.startswith("link"):
        path.symlink_to(target)
    mode = os.stat(target).st_mode
    _alarm()
    try:
        s = Settings(str(path))
        notes = s.note_texts()
        assert len(notes) == 1 and str(path) in notes[0] and what in notes[0] and "\n" not in notes[0], notes
        assert s.valid is False and s.layer(36, 93) == 36 and s.knobs().temperature == 1.0
        s.save_values(language="en", layer=3, knobs=s.knobs(), prompt="x", camera=None)
        message = s.sync()
        assert message and str(path) in message
        assert os.stat(target).st_mode == mode
        if kind.startswith("link"):
            assert os.path.islink(path)
    finally:
        signal.alarm(0)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX special files")
def test_a_settings_file_over_the_limit_is_left_alone(tmp_path, monkeypatch):
    import app.files.settings as settings_module

    monkeypatch.setattr(settings_module, "MAX_BYTES", 100)
    path = tmp_path / "big.ini"
    path.write_bytes(b"[General]\nversion=1\n" + b";" * 200 + b"\n")
    before = path.read_bytes()
    s = Settings(str(path))
    assert "larger than 100 bytes" in s.note_texts()[0]
    assert s.sync() and path.read_bytes() == before


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX special files")
def test_a_window_started_on_a_fifo_as_settings_starts_with_defaults(make_window, tmp_path):
    import signal

    os.mkfifo(tmp_path / "pipe.ini")
    _alarm(60)
    try:
        win = make_window("pipe.ini", wait_trace=False)
    finally:
        signal.alarm(0)
    assert "a FIFO" in win.statusBar().currentMessage()
    win.close()
    assert os.path.exists(tmp_path / "pipe.ini") and not os.path.isfile(tmp_path / "pipe.ini")
