"""`export --animate --tour` (issue 40.4): the guided tour as a video, its six chapters' captions burnt in below
the picture (each chapter's caption band differs from the last one's; the picture moves between the chapters),
in Korean too; --tour without --animate is one line and exit code 2."""
import numpy as np

from app.i18n import tr
from app.window.tour import CHAPTERS
from app.window.tour_video import TOUR_HOLD_S
from tests.app.test_animate import decoded, run_cli


def _bands(frames, band_top):
    return [f[band_top:].astype(int) for f in frames]


def test_the_tour_video_has_one_captioned_hold_per_chapter(tmp_path):
    out = tmp_path / "tour.mp4"
    fps = 4
    r = run_cli("--animate", "--tour", "--out", str(out), "--size", "480x270", "--fps", str(fps), "--lang", "ko")
    assert r.returncode == 0, r.stderr
    frames = decoded(str(out))
    hold = round(TOUR_HOLD_S * fps)
    assert len(frames) >= len(CHAPTERS) * hold and frames[0].shape == (270, 480, 3)
    # the caption band (the frame's bottom rows) changes exactly where a chapter's hold begins
    bottom = [f[-60:].astype(int) for f in frames]
    changes = [i for i in range(1, len(frames)) if np.abs(bottom[i] - bottom[i - 1]).mean() > 2]
    assert len(changes) >= len(CHAPTERS) - 1, changes
    # the caption text is drawn: light glyph pixels in the band of every chapter's first frame
    starts = [0] + changes[:len(CHAPTERS) - 1]
    for s in starts:
        assert (frames[s][-60:].astype(int).sum(-1) > 500).sum() > 200
    # the picture above the band differs between the first chapter (the exploded layer) and the lens's (the stack)
    top = [f[:150].astype(int) for f in frames]
    assert np.abs(top[starts[0]] - top[starts[1] + 2]).mean() > 3


def test_tour_without_animate_is_one_line(tmp_path):
    r = run_cli("--tour", "--out", str(tmp_path / "x.png"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--animate" in r.stderr
    assert tr("tour.cli.needs_animate", lang="en").split(":")[0] in r.stderr
