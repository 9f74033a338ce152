"""Animation export without the `video` extra (issue 43.7): imageio-ffmpeg is an extra, and the system's ffmpeg on
PATH does the same work; with neither, one translated line names both ways."""
import os
import sys
import tomllib
from pathlib import Path

import pytest

from app import i18n
from app.export import video_out

ROOT = Path(__file__).resolve().parents[2]
ARGS = ["-f", "rawvideo", "-pix_fmt", "rgb24", "-s", "32x24", "-r", "5", "-i", "-"]


def _without_imageio_ffmpeg(monkeypatch, path_dirs: list[Path]):
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)  # `import imageio_ffmpeg` raises ImportError
    monkeypatch.setenv("PATH", os.pathsep.join(str(d) for d in path_dirs))


def test_the_systems_ffmpeg_writes_the_video_when_the_extra_is_missing(tmp_path, monkeypatch):
    import imageio_ffmpeg

    real = imageio_ffmpeg.get_ffmpeg_exe()
    system = tmp_path / "bin"
    system.mkdir()
    (system / "ffmpeg").symlink_to(real)  # stands for /usr/bin/ffmpeg
    _without_imageio_ffmpeg(monkeypatch, [system])
    assert video_out.ffmpeg_exe() == str(system / "ffmpeg")
    for name, head in (("a.gif", b"GIF89a"), ("a.mp4", None)):
        codec = ["-c:v", "libx264", "-pix_fmt", "yuv420p"] if name.endswith(".mp4") else []
        with video_out.VideoOut(str(tmp_path / name), ARGS + codec) as video:
            for shade in (0, 120, 240):
                video.write(bytes([shade]) * (32 * 24 * 3))
            path = video.commit()
        data = Path(path).read_bytes()
        assert (data.startswith(head) if head else b"ftyp" in data[:16] and b"moov" in data), name


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_without_any_ffmpeg_one_line_names_both_ways(tmp_path, monkeypatch, lang):
    _without_imageio_ffmpeg(monkeypatch, [tmp_path])
    before = i18n.language()
    i18n.set_language(lang)
    try:
        with pytest.raises(video_out.VideoError) as err:
            video_out.VideoOut(str(tmp_path / "a.mp4"), ARGS)
    finally:
        i18n.set_language(before)
    text = str(err.value)
    assert "\n" not in text and "k3-explorer[video]" in text and "apt-get install ffmpeg" in text, text
    assert not list(tmp_path.iterdir())  # nothing was made


def test_make_run_and_the_bundle_install_the_extra():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "video" in project["optional-dependencies"]
    makefile = (ROOT / "Makefile").read_text()
    assert '$(PIP) install -q --no-compile -e ".[video]"' in makefile  # make run: animation export works out of the box
    assert '-r .ci/bundle-requirements.txt -e ".[video]"' in makefile
