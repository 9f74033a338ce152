"""RichTextView (app/widgets/rich_text_view.py): the trace player's facts table, laid out once per text and as tall
as its text, never wider than its panel, in the window's colours."""
import numpy as np
from PySide6.QtWidgets import QVBoxLayout, QWidget

from app.widgets.rich_text_view import RichTextView
from tests.app.gui_helpers import image_array


def _panel(qtbot, width=300):
    panel = QWidget()
    lay = QVBoxLayout(panel)
    view = RichTextView("facts")
    lay.addWidget(view)
    lay.addStretch(1)
    qtbot.addWidget(panel)
    panel.resize(width, 400)
    panel.show()
    qtbot.waitExposed(panel)
    return panel, view


def _rows(n: int) -> str:
    return "<table>" + "".join(f"<tr><td>row</td><td>value {i}</td></tr>" for i in range(n)) + "</table>"


def test_its_height_follows_the_text(qtbot):
    panel, view = _panel(qtbot)
    view.setText(_rows(1))
    one = view.height()
    view.setText(_rows(5))
    five = view.height()
    assert view.text() == _rows(5)
    assert five > 3 * one > 0, (one, five)
    view.setText(_rows(1))
    assert view.height() == one
    view.setText("")
    assert view.height() == 0


def test_the_same_text_again_changes_nothing(qtbot):
    panel, view = _panel(qtbot)
    view.setText(_rows(3))
    changes = []
    view.document().contentsChanged.connect(lambda: changes.append(1))
    view.setText(_rows(3))
    assert changes == []


def test_a_long_word_wraps_within_the_panel_and_a_narrower_panel_makes_it_taller(qtbot):
    panel, view = _panel(qtbot, width=300)
    view.setText("<code>" + "x" * 400 + "</code>")
    qtbot.waitUntil(lambda: view.height() > 3 * view.fontMetrics().height(), timeout=5000)  # 400 x's wrap
    assert view.width() <= panel.width()
    tall = view.height()
    panel.resize(200, 400)
    qtbot.waitUntil(lambda: view.height() > tall, timeout=2000)
    assert view.width() <= panel.width()


def test_it_is_painted_like_a_label(qtbot):
    panel, view = _panel(qtbot)
    view.setText("<b>" + "█" * 6 + "</b>")
    qtbot.waitUntil(lambda: view.height() > 0, timeout=5000)  # laid out at the text's height
    img = image_array(view.grab().toImage())  # grab() paints the widget as it is now
    window = panel.palette().window().color()
    ink = panel.palette().windowText().color()
    corner = img[-1, -1, :3].astype(int)
    assert np.abs(corner - [window.red(), window.green(), window.blue()]).max() <= 8, "the window's background"
    dist = np.abs(img[..., :3].astype(int) - [ink.red(), ink.green(), ink.blue()]).max(axis=-1)
    assert (dist <= 40).sum() > 20, "the text in the window's text colour"
