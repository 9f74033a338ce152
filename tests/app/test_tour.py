"""The guided tour "why this word" (issue 40.4) in the real window with real events: Help -> Tour opens it at
chapter 1; Next (a real click) walks the six chapters in order — answer strip, lens column, route, knock-out,
arcs, side by side — each moving the camera to frame its part (the part's box lies inside the view as the camera
ends), outlining it (amber pixels on the window's grab), switching on what it needs (the route for its chapter)
and saying what it shows and what it does not; Back goes back; Esc closes it and puts the Explain dock's 3D
choices back; the chapters seen are in the settings file a new window reads; the texts follow the language."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from app import i18n
from app.files.settings import Settings
from app.window.tour import CHAPTERS, chapter_box, chapter_text
from scene import navigation as nav
from tests.app.gui_helpers import image_array, pump, wait_idle


def _amber(win, rect) -> int:
    img = image_array(win.grab().toImage())[..., :3].astype(int)
    x0, y0 = max(0, rect.left() - 2), max(0, rect.top() - 2)
    band = img[y0:rect.bottom() + 3, x0:rect.right() + 3]
    r, g, b = band[..., 0], band[..., 1], band[..., 2]
    return int(((r > 230) & (g > 170) & (g < 215) & (b < 100)).sum())


def _settled(qtbot, win):
    qtbot.waitUntil(lambda: win.scene.camera.path is None, timeout=10000)
    pump(60)


def test_the_tour_walks_its_chapters(make_window, qtbot, tmp_path):
    win = make_window("tour.ini")
    wait_idle(qtbot, win)
    dock = win.docks["ExplainDock"]
    before = dock.show3d.values()
    assert not before[1]  # the route is off by default: its chapter turns it on
    win.registry.actions["tour"].trigger()  # Help -> Tour: why this word
    tour = win.tour
    panel = tour.panel
    assert tour.index == 0 and panel.isVisible()
    seen_titles = []
    for i, chapter in enumerate(CHAPTERS):
        assert tour.index == i
        _settled(qtbot, win)
        title, body = chapter_text(chapter)
        assert panel.title.text() == title and panel.body.text() == body and len(body) > 60
        assert panel.count.text() == f"{i + 1} / {len(CHAPTERS)}"
        seen_titles.append(title)
        box = chapter_box(win.scene.layout, chapter)
        if box is not None:  # its 3D part framed: whole in the view, between the header and the legend
            assert nav.box_in_view(*box, win.scene.cam, win.scene.container.width(), win.scene.container.height(),
                                   margin=-4.0), chapter
        rect = tour.target_rect()
        assert rect is not None and tour.highlight.isVisible(), chapter
        assert _amber(win, tour.highlight.geometry()) > 100, chapter  # the outline is drawn
        strip = win.answer_strip
        assert not panel.geometry().intersects(strip.geometry().translated(strip.mapTo(win, strip.rect().topLeft())
                                                                             - strip.pos()))  # the strip stays seen
        if chapter == "route":  # the causal route (the default) is computed off the UI thread: its blocks come
            assert dock.show3d.values()[1]  # when its knock-outs are done
            qtbot.waitUntil(lambda: win.scene.explanation is not None and bool(win.scene.explanation.route),
                            timeout=120000)
        if chapter == "arcs":
            assert win.scene.explanation.attention
        if i == 2:  # Back once, then on
            qtbot.mouseClick(panel.back, Qt.LeftButton)
            assert tour.index == 1
            _settled(qtbot, win)
            qtbot.mouseClick(panel.next, Qt.LeftButton)
            assert tour.index == 2
        if i < len(CHAPTERS) - 1:
            qtbot.mouseClick(panel.next, Qt.LeftButton)
    assert len(set(seen_titles)) == len(CHAPTERS)
    old = panel.geometry()
    win.resize(win.width() - 120, win.height() - 60)  # the panel follows the 3D view's corner
    pump(100)
    scene_box = win.scene.geometry().translated(win.scene.mapTo(win, win.scene.rect().topLeft()) - win.scene.pos())
    assert panel.geometry() != old and scene_box.contains(panel.geometry())
    assert panel.next.text() == i18n.tr("tour.done")
    QTest.keyClick(panel.next, Qt.Key_Escape)  # Esc closes it
    assert tour.index == -1 and not panel.isVisible() and not tour.highlight.isVisible()
    qtbot.waitUntil(lambda: dock.show3d.values() == before, timeout=5000)  # the dock's choices are back
    win.settings.sync()
    again = Settings(str(tmp_path / "tour.ini"))
    assert set(again.tour_seen()) == set(CHAPTERS)


def test_the_tour_speaks_korean(make_window, qtbot):
    win = make_window("tour_ko.ini", language="ko")
    wait_idle(qtbot, win)
    win.registry.actions["tour"].trigger()
    panel = win.tour.panel
    title, body = chapter_text("answer")
    assert panel.title.text() == title == "답 막대" and "확률" in body
    assert panel.next.text() == "다음"
    win.state.set_language("en")
    pump(50)
    assert panel.title.text() == "The answer strip" and panel.next.text() == "Next"
    win.tour.close()


def test_the_explain_dock_has_a_tour_button(make_window, qtbot):
    """Issue 40.4: the Explain dock's own tour button (a real click) starts Help -> Tour at chapter 1; its
    tooltip says what the tour is, in Korean after a language switch; Esc closes the tour."""
    win = make_window("tour_button.ini")
    wait_idle(qtbot, win)
    dock = win.docks["ExplainDock"]
    win.state.show_dock("ExplainDock", "")
    button = dock.tour_button
    qtbot.waitUntil(button.isVisible, timeout=5000)
    assert button.text() == "Tour ▸" and "guided tour" in button.toolTip()
    assert button.mapTo(dock, button.rect().bottomRight()).x() <= dock.width()  # wholly in the dock
    assert getattr(win, "tour", None) is None or win.tour.index == -1
    qtbot.mouseClick(button, Qt.LeftButton)
    tour = win.tour
    assert tour.index == 0 and tour.panel.isVisible()
    assert tour.panel.title.text() == chapter_text(CHAPTERS[0])[0]
    QTest.keyClick(tour.panel.next, Qt.Key_Escape)
    assert tour.index == -1 and not tour.panel.isVisible()
    win.state.set_language("ko")
    pump(50)
    assert button.text() == "둘러보기 ▸" and "둘러보기" in button.toolTip()
    win.state.set_language("en")
