"""The usage map's wait: while the map is computed the tab shows a progress bar counting the
prompts, no axes; the axes appear with the map. The computation is held after its first prompt (a wrapper of
the real compute_usage waits on an event in its progress callback), so the test looks at the tab mid-way."""
import threading

import numpy as np

from app.i18n import tr
from tests.app.gui_helpers import image_array
from tests.app.weights_helpers import trained_asset  # noqa: F401 - fixture


def test_progress_then_axes(make_window, qtbot, trained_asset, monkeypatch, tmp_path):
    from app.docks.experts import usage as usage_mod
    from app.docks.experts.usage import UsageTab

    monkeypatch.setattr(UsageTab, "max_prompts", 3)
    release = threading.Event()
    real = usage_mod.compute_usage

    def held(engine, prompts, progress=None, cancelled=None, **kw):
        def step(done, total):
            progress(done, total)
            if done >= 1:
                release.wait(60)
        return real(engine, prompts, progress=step, cancelled=cancelled, **kw)
    monkeypatch.setattr(usage_mod, "compute_usage", held)

    win = make_window()
    qtbot.waitUntil(lambda: "ExpertGridDock" in win.docks, timeout=30000)
    dock = win.docks["ExpertGridDock"]
    tab = dock.usage_tab
    dock.show_tab("usage")
    try:
        qtbot.waitUntil(lambda: tab.progress.value() == 1, timeout=60000)
        assert tab.current_map() is None
        assert tab.progress.isVisible() and tab.progress.maximum() == 3
        assert tab.progress.text() == tr("experts.usage.progress", done=1, total=3) == \
            "Computing usage over 3 prompts… 1/3"
        assert not tab.heat.isVisible()  # no empty axes while computing
        tab.grab().save(str(tmp_path / "usage_computing.png"))
    finally:
        release.set()
    qtbot.waitUntil(lambda: tab.current_map() is not None, timeout=120000)
    qtbot.waitUntil(lambda: tab.heat.isVisible(), timeout=5000)
    assert not tab.progress.isVisible()
    img = image_array(tab.heat.grab().toImage())[..., :3].astype(int)
    assert np.ptp(img.reshape(-1, 3), axis=0).max() > 60  # the map is drawn, not a blank plot
    tab.grab().save(str(tmp_path / "usage_done.png"))


def test_progress_text_in_korean():
    assert tr("experts.usage.progress", lang="ko", done=2, total=9) == "프롬프트 9개로 사용량 계산 중… 2/9"
