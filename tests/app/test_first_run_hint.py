"""The first-run hint over the 3D view: shown on a first start, closed by a real click, remembered in the settings
file, brought back by Help -> Show hint again; never by itself where K3_NO_FIRST_RUN_HINT is set (the suite)."""
import numpy as np
from PySide6.QtCore import QPoint, Qt

from app.window.first_run_hint import HINT_KEY
from app.i18n import tr


def _pixels(widget) -> np.ndarray:
    from PySide6.QtGui import QImage

    image = widget.grab().toImage().convertToFormat(QImage.Format_RGB32)
    w, h = image.width(), image.height()
    return np.frombuffer(image.constBits(), np.uint8).reshape(h, image.bytesPerLine() // 4, 4)[:, :w, :3]


def _help_action(win, action_id: str):
    action = win.registry.actions[action_id]
    menu = next(a.menu() for a in win.menuBar().actions() if a.menu() and action in a.menu().actions())
    assert menu.title() == tr("app.menu.help")
    return menu, action


def test_first_start_shows_the_hint_a_click_closes_it_for_good(make_window, qtbot, monkeypatch, tmp_path):
    monkeypatch.delenv("K3_NO_FIRST_RUN_HINT", raising=False)
    win = make_window("first.ini")
    qtbot.waitUntil(win.hint.visible, timeout=10000)
    card = win.hint.card
    assert card.parent() is win.scene and card.geometry().intersects(win.scene.gl.geometry())
    text = card.label.text()
    for key in ("hint.orbit", "hint.click", "hint.keys", "hint.why"):
        assert tr(key).split(",")[0] in text, key
    assert "F1" in text
    # drawn over the 3D view: the card's dark fill where it sits, the 3D frame around it
    shot = _pixels(win.scene)
    g = card.geometry()
    inside = shot[g.top() + 4: g.top() + 10, g.left() + 4: g.left() + 40].reshape(-1, 3).mean(axis=0)
    from app.widgets.paint import UI_ROLES

    assert np.abs(inside - UI_ROLES["answer_fill"][:3]).max() < 40, inside
    assert win.settings.q.value(HINT_KEY) is None

    qtbot.mouseClick(card, Qt.LeftButton, pos=QPoint(card.width() // 2, card.height() // 2))
    assert not win.hint.visible() and not card.isVisible()
    assert int(win.settings.q.value(HINT_KEY)) == 1
    win.close()  # the settings are written

    again = make_window("first.ini")
    qtbot.wait(300)
    assert not again.hint.visible()  # remembered: a second start shows no hint


def test_help_shows_it_again_and_a_press_in_the_3d_view_closes_it(make_window, qtbot, monkeypatch):
    monkeypatch.setenv("K3_NO_FIRST_RUN_HINT", "1")
    win = make_window("again.ini")
    qtbot.wait(200)
    assert not win.hint.visible()  # the suite's default: no hint by itself
    menu, action = _help_action(win, "show_hint")
    assert action.text() == tr("app.action.show_hint")
    action.trigger()
    assert win.hint.visible()
    # a press in the 3D view (where a drag orbits) closes it too, and still reaches the view
    gl = win.scene.gl
    point = QPoint(gl.width() // 2, gl.height() - 40)
    qtbot.mousePress(gl, Qt.LeftButton, pos=point)
    qtbot.mouseRelease(gl, Qt.LeftButton, pos=point)
    assert not win.hint.visible()
    assert int(win.settings.q.value(HINT_KEY)) == 1


def test_the_hint_follows_the_language(make_window, qtbot):
    win = make_window("lang.ini")
    win.hint.show_hint()
    win.state.set_language("ko")
    qtbot.waitUntil(lambda: tr("hint.title") in win.hint.card.label.text(), timeout=5000)
    assert "환영" in win.hint.card.label.text()
    win.hint.dismiss()
