"""compute.guards.bounded_json: the one bounded reader behind model configs and view files."""
import pytest

from compute.guards import bounded_json as bj


@pytest.mark.parametrize("text,words", [
    ("[" * 9 + "]" * 9, "nested 9 levels deep (at most 8)"),
    ('{"a": ' + "9" * 19 + "}", "19 digits"),
    ('{"a": NaN}', "NaN and Infinity"),
    ('{"a": 1e999}', "out of range"),
    ("[1, 2]", "top level must be a JSON object"),
    ('{"a": ', "invalid JSON"),
    ('{"a": "[[[[[[[[[[[["}', None),  # brackets inside a string do not count
])
def test_load_object_limits(text, words):
    if words is None:
        assert bj.load_object(text, 1000, 8) == {"a": "[[[[[[[[[[[["}
        return
    with pytest.raises(bj.JSONLimitError) as err:
        bj.load_object(text, 1000, 8)
    assert err.value.kind == "json" and words in err.value.problem


def test_read_text_kinds(tmp_path):
    (tmp_path / "big.json").write_bytes(b" " * 11)
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe")
    for name, kind in (("big.json", "size"), ("bin.json", "encoding"), ("missing.json", "read")):
        with pytest.raises(bj.JSONLimitError) as err:
            bj.read_text(tmp_path / name, 10)
        assert err.value.kind == kind and "\n" not in err.value.problem
    with pytest.raises(bj.JSONLimitError, match="larger than 10 bytes"):
        bj.load_object("{}" + " " * 9, 10, 8)


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="POSIX special files")
def test_read_text_refuses_special_files(tmp_path):
    """Configs and view files are read through compute.guards.guarded_io: a FIFO (direct or through a link), a device
    or a directory is refused at once, kind "read", saying what it is (no hang, no MemoryError)."""
    import os
    import signal

    from compute.config import ConfigError, ModelConfig

    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "link.json").symlink_to(tmp_path / "pipe")
    old = signal.signal(signal.SIGALRM, lambda *a: (_ for _ in ()).throw(TimeoutError("blocked")))
    signal.alarm(5)
    try:
        for path, what in ((tmp_path / "pipe", "a FIFO"), (tmp_path / "link.json", "a FIFO"),
                           ("/dev/zero", "a character device"), (tmp_path, "a directory")):
            with pytest.raises(bj.JSONLimitError) as err:
                bj.read_text(path, 1 << 20)
            assert err.value.kind == "read" and what in err.value.problem
            with pytest.raises(ConfigError, match=what):
                ModelConfig.from_json(path)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_a_refused_number_names_its_field():
    """A long integer or an out-of-range float is refused with the dotted path of the field that holds it, so a
    view saved by a newer version with a huge seed says 'knobs.sample_seed', not only 'an integer literal'."""
    from compute.guards.bounded_json import JSONLimitError, load_object
    with pytest.raises(JSONLimitError, match=r"^knobs\.sample_seed: integer literal with 21 digits"):
        load_object('{"format": "x", "knobs": {"top_p": 1.0, "sample_seed": 100000000000000000000}}', 10_000, 8)
    with pytest.raises(JSONLimitError, match=r"^layers\[2\]\.size: number '1e999' is out of range"):
        load_object('{"layers": [{}, {"size": 3}, {"size": 1e999}]}', 10_000, 8)
    with pytest.raises(JSONLimitError, match=r"^a: integer"):  # the first one in document order
        load_object('{"a": 1234567890123456789, "b": [1e999]}', 10_000, 8)
    assert load_object('{"a": 123456789012345678, "b": [-1.5e300]}', 10_000, 8) == {
        "a": 123456789012345678, "b": [-1.5e300]}


def test_a_refused_number_under_a_control_character_key_is_still_one_line(tmp_path):
    """Found by test_config_fuzz in a clean-clone CI run: {"\\n": 10**18} gave a two-line message (the key's
    newline went into the field path)."""
    from compute.config import ConfigError, ModelConfig

    p = tmp_path / "c.json"
    p.write_text('{"\\n\\t": 1000000000000000000, "x": 1}', encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        ModelConfig.from_json(p)
    msg = str(exc.value)
    assert "\n" not in msg and "\t" not in msg and "\\n\\t" in msg and "19 digits" in msg
