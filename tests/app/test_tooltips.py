"""Tooltips on every slider, button and preset, in both languages; Tab reaches the 3D view and leaves tables
Real main window under Xvfb, real key and mouse events."""
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QTableWidget, QToolTip

from app import i18n
from app.window import tooltips
from app.window.actions import ACTIONS


def _all_docks_built(qtbot, win):
    from app.docks.registry import DOCKS

    qtbot.waitUntil(lambda: len(win.docks) == len(DOCKS), timeout=30000)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_slider_button_and_preset_has_a_tooltip(main_window, qtbot, lang):
    win = main_window
    _all_docks_built(qtbot, win)
    i18n.set_language(lang)
    try:
        controls = tooltips.app_controls(win)
        assert len(controls) > 60  # the walk really reaches the panels' controls
        missing = [f"{type(w).__name__} {w.objectName()!r} {getattr(w, 'text', lambda: '')()!r}"
                   for w in controls if not w.toolTip().strip()]
        assert not missing, f"controls without a tooltip ({lang}): {missing}"
        for spec in ACTIONS:  # menu items, toolbar buttons, the camera presets
            assert win.registry.actions[spec.id].toolTip().strip(), spec.id
        bare = [a.objectName() for a in win.toolbar.actions() if not a.isSeparator() and not a.toolTip().strip()]
        assert not bare
    finally:
        i18n.set_language("en")


def test_tooltips_follow_the_language(main_window, qtbot):
    win = main_window
    _all_docks_built(qtbot, win)
    slider = win.docks["ControlsDock"].slider("temperature")
    front = win.registry.actions["camera_front"]
    english = slider.toolTip(), front.toolTip()
    i18n.set_language("ko")
    try:
        korean = slider.toolTip(), front.toolTip()
        assert korean[0] == i18n.tr("tip.slider_temperature", lang="ko") and "온도" in korean[0]
        assert "카메라 프리셋" in korean[1] and "Ctrl+1" in korean[1]
        assert korean[0] != english[0] and korean[1] != english[1]
    finally:
        i18n.set_language("en")
    assert (slider.toolTip(), front.toolTip()) == english


def test_hovering_a_slider_shows_its_tooltip(main_window, qtbot):
    main_window.docks["ControlsDock"].raise_()  # on a small default layout the controls are a tab
    slider = main_window.docks["ControlsDock"].slider("top_p")
    qtbot.waitUntil(lambda: not slider.visibleRegion().isEmpty(), timeout=3000)
    QTest.mouseMove(slider, QPoint(5, slider.height() // 2))
    QTest.mouseMove(slider, slider.rect().center())
    qtbot.waitUntil(QToolTip.isVisible, timeout=5000)
    assert QToolTip.text() == i18n.tr("tip.slider_top_p")
    QToolTip.hideText()


def _tab_until(qtbot, predicate, presses=200):
    """Press Tab on the focused widget until predicate(focus widget) holds; returns the widgets visited."""
    seen = []
    for _ in range(presses):
        focus = QApplication.focusWidget()
        QTest.keyClick(focus, Qt.Key_Tab)
        qtbot.waitUntil(lambda focus=focus: QApplication.focusWidget() is not focus, timeout=3000)  # Tab moved on
        focus = QApplication.focusWidget()
        seen.append(focus)
        if predicate(focus):
            break
    return seen


def test_tab_from_the_prompt_reaches_the_3d_view(main_window, qtbot):
    win = main_window
    _all_docks_built(qtbot, win)
    prompt = win.docks["TracePlayerDock"].prompt
    prompt.setFocus(Qt.TabFocusReason)
    qtbot.waitUntil(prompt.hasFocus, timeout=3000)
    seen = _tab_until(qtbot, lambda w: w is win.scene.gl)
    assert seen[-1] is win.scene.gl, [f"{type(w).__name__}:{w.objectName()}" for w in seen[-12:]]


def test_tab_leaves_a_table(main_window, qtbot):
    win = main_window
    _all_docks_built(qtbot, win)
    tables = win.findChildren(QTableWidget)
    assert tables
    assert all(not t.tabKeyNavigation() for t in tables), [t.objectName() for t in tables if t.tabKeyNavigation()]
    inspector = win.docks["inspectorDock"]
    win.state.select_block("L37/kda.q_proj")  # the values table shows once a block is picked
    inspector.raise_()
    table = inspector.findChildren(QTableWidget)[0]
    qtbot.waitUntil(table.isVisible, timeout=3000)
    table.setFocus(Qt.TabFocusReason)
    qtbot.waitUntil(table.hasFocus, timeout=3000)
    QTest.keyClick(table, Qt.Key_Tab)
    assert QApplication.focusWidget() is not table
    win.state.select_block("")


def test_the_shortcuts_table_does_not_trap_tab(main_window, qtbot):
    dialog = main_window.show_shortcuts()
    try:
        qtbot.waitExposed(dialog)
        dialog.table.setFocus(Qt.TabFocusReason)
        qtbot.waitUntil(dialog.table.hasFocus, timeout=3000)
        QTest.keyClick(dialog.table, Qt.Key_Tab)
        assert QApplication.focusWidget() is not dialog.table
    finally:
        dialog.close()
