"""As a new user sees it: the real main window opened at 1280×720, 1366×768 (English and Korean)
and 1920×1080. The default layout leaves the 3D view at least 55 % of the window; no text is clipped (the
slider help lines, the serving diagram, the memory calculator); the inspector shows a hint, not empty boxes,
until something is picked; at 1920×1080 follow-one-number and expert 17's bias slider show without scrolling.
Screenshots of every checked state are written to $TMPDIR/k3_small_screens/ for a person to look at.
"""
import os
import tempfile

import pytest
from PySide6.QtCore import QPoint, QRect, QRectF, Qt
from PySide6.QtWidgets import QAbstractScrollArea, QLabel, QScrollArea

from app import i18n
from app.window.main_window import MainWindow
from gui_helpers import flush_layouts

SHOTS = os.path.join(tempfile.gettempdir(), "k3_small_screens")
SMALL = [(1280, 720), (1366, 768)]


def open_window(qtbot, tmp_path, w: int, h: int, lang: str) -> MainWindow:
    """The window as it opens on a screen whose usable area is w × h: sized before it is first shown, so the
    default layout is the one for that size."""
    win = MainWindow(settings_path=str(tmp_path / f"s_{w}_{lang}.ini"), language=lang)
    qtbot.addWidget(win)
    win.resize(w, h)
    win.show()
    qtbot.waitExposed(win)
    # the first trace and the docks built after it (MainWindow._after_first_show), laid out
    qtbot.waitUntil(lambda: win.state.trace is not None and win.late_docks_built, timeout=120000)
    assert "LearnDock" in win.docks
    flush_layouts()
    return win


@pytest.fixture
def sized(qtbot, tmp_path):
    windows = []

    def make(w, h, lang="en"):
        win = open_window(qtbot, tmp_path, w, h, lang)
        windows.append(win)
        return win

    yield make
    for win in windows:
        win.close()
    i18n.set_language("en")


def shot(widget, name: str) -> None:
    os.makedirs(SHOTS, exist_ok=True)
    widget.grab().save(os.path.join(SHOTS, f"{name}.png"))


def front(win, dock_name: str, tab: str | None = None):
    dock = win.docks[dock_name]
    dock.raise_()
    if tab is not None:
        dock.show_tab(tab)
    flush_layouts()
    assert not dock.visibleRegion().isEmpty(), f"{dock_name} is not on screen"
    return dock


def clipped_labels(root) -> list[str]:
    """Every shown label under root whose text does not fit its box (wrapped: too short for its
    height-for-width; one line: narrower than its text) or whose box leaves its parent."""
    bad = []
    for lab in root.findChildren(QLabel):
        if not lab.isVisible() or not lab.text() or lab.width() <= 0:
            continue
        if lab.wordWrap():
            need = lab.heightForWidth(lab.width())
            if need > lab.height() + 1:
                bad.append(f"{lab.objectName() or lab.text()[:40]!r}: {need} px of text in {lab.height()} px")
        elif lab.sizeHint().width() > lab.width() + 1:
            bad.append(f"{lab.objectName() or lab.text()[:40]!r}: {lab.sizeHint().width()} px wide in {lab.width()}")
        parent = lab.parentWidget()
        if parent is not None and not parent.rect().contains(lab.geometry()):
            bad.append(f"{lab.objectName() or lab.text()[:40]!r} lies outside its parent")
    return bad


def sideways_scrolling(root) -> list[str]:
    return [a.objectName() or type(a).__name__ for a in root.findChildren(QAbstractScrollArea)
            if a.isVisible() and a.horizontalScrollBar().isVisible() and a.horizontalScrollBar().maximum() > 0]


def shown_whole(widget, win) -> bool:
    """widget is on screen without scrolling: not covered, inside the window and inside the viewport of the
    scroll area that holds it."""
    if widget.visibleRegion().isEmpty():
        return False
    top_left = widget.mapTo(win, QPoint(0, 0))
    if not win.rect().contains(QRect(top_left, widget.size())):
        return False
    area = widget.parentWidget()
    while area is not None and not isinstance(area, QScrollArea):
        area = area.parentWidget()
    if area is None:
        return True
    port = area.viewport()
    return port.rect().contains(QRect(widget.mapTo(port, QPoint(0, 0)), widget.size()))


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("size", SMALL, ids=lambda s: f"{s[0]}x{s[1]}")
def test_small_window_gives_the_scene_room_and_clips_no_text(sized, size, lang):
    w, h = size
    win = sized(w, h, lang)
    assert (win.width(), win.height()) == (w, h), "the default layout made the window larger than the screen"
    shot(win, f"{lang}_{w}x{h}")
    share = win.scene.width() * win.scene.height() / (w * h)
    assert share >= 0.55, f"the 3D view has {share:.0%} of the window"

    controls = front(win, "ControlsDock")
    shot(win, f"{lang}_{w}x{h}_controls")
    hints = [row.hint for row in controls.rows.values()]
    assert len(hints) == 4 and all(h.isVisible() and h.text() for h in hints)
    for hint in hints:  # all four help lines, every wrapped line of them
        assert hint.height() + 1 >= hint.heightForWidth(hint.width()), hint.text()
    assert clipped_labels(controls) == []
    assert sideways_scrolling(controls) == []

    learn = front(win, "LearnDock", "serving")
    diagram = learn.pages["serving"].diagram
    learn.pages["serving"].ensureWidgetVisible(diagram)
    flush_layouts()
    shot(win, f"{lang}_{w}x{h}_serving")
    diagram.grab()  # paints it: the diagram notes where each label went
    assert len(diagram.text_boxes) >= 2 + 8 + 8 + 3  # host, NVLink, 8 GPU heads and SMs, the HBM parts
    outside = [(b.getRect(), t.getRect()) for b, t in diagram.text_boxes
               if not b.adjusted(-0.5, -0.5, 0.5, 0.5).contains(t)]
    assert outside == [], "serving diagram labels outside their boxes"
    assert sideways_scrolling(learn) == []

    silicon = front(win, "SiliconDock", "calc")
    calc = silicon.pages["calc"]
    for mode in range(calc.modes.count()):
        calc.modes.setCurrentIndex(mode)
        flush_layouts()
        shot(win, f"{lang}_{w}x{h}_calc{mode}")
        assert clipped_labels(calc.modes.currentWidget()) == []
        assert sideways_scrolling(silicon) == []
    calc.modes.setCurrentIndex(0)


def test_the_inspector_opens_with_a_hint_and_comes_forward_when_a_block_is_picked(sized):
    win = sized(1280, 720)
    insp = win.docks["inspectorDock"]
    assert insp.visibleRegion().isEmpty()  # one column: the trace player is in front
    front(win, "inspectorDock")
    shot(win, "en_1280x720_inspector_empty")
    assert insp.name_label.isVisible() and insp.name_label.text() == i18n.tr("inspector.empty")
    for empty in (insp.what, insp.table, insp.follow_box, insp.meta_label):
        assert not empty.isVisible()  # no blank boxes before a pick
    front(win, "TracePlayerDock")
    assert insp.visibleRegion().isEmpty()
    win.state.select_block("L37/kda.q_proj")
    flush_layouts()
    assert not insp.visibleRegion().isEmpty(), "picking a block left the inspector behind its tab"
    for shown in (insp.what, insp.table, insp.follow_box, insp.meta_label):
        assert shown.isVisible()
    assert clipped_labels(insp) == []


def test_full_hd_shows_follow_one_number_and_expert_17s_bias_slider_without_scrolling(sized):
    win = sized(1920, 1080)
    share = win.scene.width() * win.scene.height() / (1920 * 1080)
    assert share >= 0.55, f"the 3D view has {share:.0%} of the window"
    win.state.select_block("L37/kda.q_proj")
    insp = win.docks["inspectorDock"]
    insp.show_cell("L37/kda.q_proj", 0, 3)
    flush_layouts()
    shot(win, "en_1920x1080_follow")
    assert "x[0]" in insp.follow_label.text()  # the sum is written out
    assert shown_whole(insp.follow_box, win), "follow-one-number needs scrolling"

    experts = front(win, "ExpertGridDock", "grid")
    spin = experts.findChild(type(experts.grid_tab.expert_spin), "experts.bias_expert")
    spin.setValue(17)
    flush_layouts()
    shot(win, "en_1920x1080_bias17")
    slider = experts.findChild(type(experts.grid_tab.slider), "experts.bias_slider")
    assert spin.value() == 17 and shown_whole(slider, win), "expert 17's bias slider needs scrolling"
    assert shown_whole(spin, win)


def test_fit_text_wraps_shrinks_or_elides_inside_its_box(qapp):
    from PySide6.QtGui import QImage, QPainter

    from app.widgets.paint import fit_text, font

    img = QImage(200, 100, QImage.Format_ARGB32)
    p = QPainter(img)
    p.setFont(font(10))
    box = QRectF(10, 10, 60, 26)
    short = fit_text(p, box, "HBM")
    wrapped = fit_text(p, box, "SMs / Tensor Cores")
    hopeless = fit_text(p, QRectF(10, 10, 18, 14), "MLA cache and more words")
    p.end()
    assert box.contains(short) and box.contains(wrapped)
    assert QRectF(10, 10, 18, 14).adjusted(-0.5, -0.5, 0.5, 0.5).contains(hopeless)
