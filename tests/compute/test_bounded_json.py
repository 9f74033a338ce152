"""compute.bounded_json: the one bounded reader behind model configs and view files."""
import pytest

from compute import bounded_json as bj


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
