"""The guided tour "Why this word" (Help -> Tour: why this word; `start_tour(window)` for any other button).

Six chapters, as llm-viz's guided chapters move the camera block by block: the answer strip -> the lens column
-> the contribution route -> a knock-out -> the attention arcs -> side by side. Each moves the 3D camera to frame
its part (`chapter_box`, `chapter_camera`), outlines it (TourHighlight: the part's box as the camera will show
it, or the widget), switches on what it needs in the Explain dock's "In the 3D view" controls (restored when the
tour ends) and says in one or two sentences what the part shows and what it does not. Next / Back / Esc (the
panel has the keyboard focus); Korean and English; the chapters seen are remembered (app/files/settings.py). The same
chapters make a video with `export --animate --tour` (app/window/tour_video.py).
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, QObject, QPoint, QRect, QRectF, Qt
from PySide6.QtGui import QPainter, QPen
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from app.i18n import tr
from app.slot_guard import guarded
from app.widgets.paint import qcolor
from scene import camera as camlib
from scene import navigation as nav
from scene.attention_arcs import BULGE_MAX, first_token_wall, ladder
from scene.lens_column import STRIP_W, STRIP_X

CHAPTERS: tuple[str, ...] = ("answer", "lens", "route", "knockout", "arcs", "side")
# what each chapter switches on in the Explain dock's 3D view controls (lens, route, arcs; None: as it is)
NEEDS = {"answer": (None, None, None), "lens": (True, None, None), "route": (None, True, None),
         "knockout": (None, None, None), "arcs": (None, None, True), "side": (None, None, None)}
BOX_FILL = 0.9  # a chapter's box fills this much of the free band (its part is the subject)


def chapter_text(chapter: str, t=tr) -> tuple[str, str]:
    """(title, one or two sentences) of a chapter, in the translator's language."""
    return t(f"tour.title.{chapter}"), t(f"tour.body.{chapter}")


def chapter_box(layout, chapter: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The world box a chapter frames; None: the exploded layer's framing (its part is a widget)."""
    slabs = [b for b in layout.blocks if b.part == "slab"]
    if not slabs:
        return None
    lo = np.min([b.lo for b in slabs], axis=0)
    hi = np.max([b.hi for b in slabs], axis=0)
    if chapter == "lens":  # the strip and its words left of the stack, with the stack beside it
        return np.array([STRIP_X - STRIP_W / 2 - 3.0, lo[1], lo[2]]), hi
    if chapter == "route":  # the whole stack: the route lights its slabs
        return lo, hi
    if chapter in ("knockout", "arcs"):  # the token wall and the arcs' ladder beside it
        wall, lad = first_token_wall(layout), ladder(layout)
        if wall is None or lad is None:
            return None
        x, zs = lad
        return (np.array([x - BULGE_MAX - (0.5 if chapter == "arcs" else 1.5), wall.lo[1] - 0.5, wall.lo[2] - 1.0]),
                np.array([wall.hi[0] + (0.5 if chapter == "arcs" else 3.5), wall.hi[1] + 0.5, max(zs) + 0.6]))
    return None


def chapter_camera(view, chapter: str) -> camlib.Camera:
    """The camera a chapter moves to (view: a SceneView): the whole stack seen from the front for the lens
    column and the route (the strip stands left of the stack), the chapter's box framed for the arcs and the
    knock-out, the exploded layer's framing for the widgets' chapters."""
    if chapter in ("lens", "route") and view.layout is not None:
        return nav.preset_camera("stack", view.layout, view.camera.aspect(), view.free_band())
    box = chapter_box(view.layout, chapter) if view.layout is not None else None
    return view.box_camera(*box, fill=BOX_FILL) if box is not None else view.camera.layer_camera()


def box_on_screen(box, cam: camlib.Camera, w: float, h: float) -> QRectF | None:
    lo, hi = box
    pts, ok = camlib.project(camlib.box_corners(np.asarray(lo, float), np.asarray(hi, float)), cam, w, h)
    if not ok.all():
        return None
    (x0, y0), (x1, y1) = pts.min(axis=0), pts.max(axis=0)
    return QRectF(float(x0), float(y0), float(x1 - x0), float(y1 - y0)).intersected(QRectF(0, 0, w, h))


class TourHighlight(QWidget):
    """An amber outline over the window (mouse events pass through it)."""

    def __init__(self, parent):
        super().__init__(parent)
        self.setAttribute(Qt.WA_TransparentForMouseEvents, True)
        self.setAttribute(Qt.WA_NoSystemBackground, True)
        self.setObjectName("tour_highlight")

    def paintEvent(self, _event) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.Antialiasing)
        p.setPen(QPen(qcolor("tour_highlight"), 3))
        p.drawRoundedRect(QRectF(self.rect()).adjusted(2, 2, -2, -2), 8, 8)
        p.end()


class TourPanel(QFrame):
    """The chapter's text and Back / Next / Close, over the 3D view's bottom right."""

    def __init__(self, tour: "Tour", parent):
        super().__init__(parent)
        self.tour = tour
        self.setObjectName("tour_panel")
        self.setFrameShape(QFrame.StyledPanel)
        self.setAutoFillBackground(True)
        lay = QVBoxLayout(self)
        self.title = QLabel()
        self.title.setObjectName("tour_title")
        f = self.title.font()
        f.setBold(True)
        self.title.setFont(f)
        self.body = QLabel()
        self.body.setObjectName("tour_body")
        self.body.setWordWrap(True)
        self.body.setTextFormat(Qt.PlainText)
        self.title.setTextFormat(Qt.PlainText)
        row = QHBoxLayout()
        self.count = QLabel()
        self.back = QPushButton()
        self.back.setObjectName("tour_back")
        self.next = QPushButton()
        self.next.setObjectName("tour_next")
        self.close_button = QPushButton()
        self.close_button.setObjectName("tour_close")
        row.addWidget(self.count, 1)
        for b in (self.back, self.next, self.close_button):
            row.addWidget(b)
        lay.addWidget(self.title)
        lay.addWidget(self.body)
        lay.addLayout(row)
        self.back.clicked.connect(guarded(lambda _c=False: self.tour.go(self.tour.index - 1)))
        self.next.clicked.connect(guarded(lambda _c=False: self.tour.next()))
        self.close_button.clicked.connect(guarded(lambda _c=False: self.tour.close()))

    def keyPressEvent(self, event) -> None:
        if event.key() == Qt.Key_Escape:
            self.tour.close()
            event.accept()
            return
        super().keyPressEvent(event)


class _FollowResize(QObject):
    """Re-places the panel and the outline when the window or the 3D view is resized."""

    def __init__(self, tour: "Tour"):
        super().__init__(tour.window)
        self.tour = tour

    def eventFilter(self, obj, event) -> bool:
        if event.type() == QEvent.Resize and self.tour.active:
            self.tour._place()
        return False


class Tour:
    """The tour over a MainWindow: `go(i)`, `next()`, `close()`; `index` is the chapter shown (-1: closed)."""

    def __init__(self, window):
        self.window = window
        self._follow = _FollowResize(self)
        window.installEventFilter(self._follow)
        window.scene.installEventFilter(self._follow)
        self.index = -1
        self.panel = TourPanel(self, window)
        self.highlight = TourHighlight(window)
        self.panel.hide()
        self.highlight.hide()
        self._saved = None  # the Explain dock's 3D view controls before the tour
        window.state.language_changed.connect(guarded(lambda _l: self._show_texts()))

    @property
    def active(self) -> bool:
        return self.index >= 0

    def _dock(self):
        return self.window.docks["ExplainDock"]  # built now if it was not yet

    def start(self) -> None:
        if not self.active:
            self._saved = self._dock().show3d.values()
        self.go(0)

    def next(self) -> None:
        if self.index >= len(CHAPTERS) - 1:
            self.close()
        else:
            self.go(self.index + 1)

    def go(self, i: int) -> None:
        i = min(max(int(i), 0), len(CHAPTERS) - 1)
        self.index = i
        chapter = CHAPTERS[i]
        dock = self._dock()
        lens, route, pct, arcs = self._saved if self._saved is not None else dock.show3d.values()
        need = NEEDS[chapter]  # on top of the choices the tour started with (the route off again after its chapter)
        dock.show3d.set_values(lens if need[0] is None else need[0], route if need[1] is None else need[1], pct,
                               arcs if need[2] is None else need[2])
        if chapter == "side":
            self.window.state.show_dock("ExplainDock", "")
            from app.docks.explain.fit import show_page

            show_page(dock.pages, "side")  # the side-by-side part is on the dock's Compare page
        scene = self.window.scene
        cam = chapter_camera(scene, chapter)
        scene.camera.animate_to(cam, True, refit=lambda c=chapter: chapter_camera(scene, c))
        self.window.settings.set_tour_seen(CHAPTERS[: i + 1])
        self._show_texts()
        self._place(cam)
        self.panel.show()
        self.panel.raise_()
        self.panel.next.setFocus(Qt.OtherFocusReason)

    def close(self) -> None:
        if not self.active:
            return
        self.index = -1
        self.panel.hide()
        self.highlight.hide()
        if self._saved is not None:
            self._dock().show3d.set_values(*self._saved)
            self._saved = None

    def target_rect(self, cam: camlib.Camera | None = None) -> QRect | None:
        """Where the chapter's part is, in window coordinates (the 3D part as `cam` shows it)."""
        if not self.active:
            return None
        chapter, w = CHAPTERS[self.index], self.window
        widget = None
        if chapter == "answer":
            widget = w.answer_strip
        elif chapter == "side":
            widget = self._dock().side
        if widget is not None:
            return QRect(widget.mapTo(w, QPoint(0, 0)), widget.size()) if widget.isVisible() else None
        scene = w.scene
        box = chapter_box(scene.layout, chapter)
        r = box_on_screen(box, cam or scene.camera.target(), scene.container.width(),
                          scene.container.height()) if box is not None else None
        if r is None:
            return None
        return QRect(scene.container.mapTo(w, QPoint(0, 0)) + r.topLeft().toPoint(), r.size().toSize())

    def _place(self, cam: camlib.Camera | None = None) -> None:
        w, scene = self.window, self.window.scene
        area = QRect(scene.mapTo(w, QPoint(0, 0)), scene.size())
        pw = min(460, max(260, area.width() - 40))
        self.panel.setFixedWidth(pw)
        self.panel.adjustSize()
        self.panel.move(area.right() - pw - 12, area.bottom() - self.panel.height() - 12)
        r = self.target_rect(cam)
        if r is None:
            self.highlight.hide()
        else:
            self.highlight.setGeometry(r.adjusted(-6, -6, 6, 6))
            self.highlight.show()
            self.highlight.raise_()
            self.panel.raise_()

    def _show_texts(self) -> None:
        if not self.active:
            return
        title, body = chapter_text(CHAPTERS[self.index])
        p = self.panel
        p.title.setText(title)
        p.body.setText(body)
        p.count.setText(tr("tour.count", n=self.index + 1, total=len(CHAPTERS)))
        p.back.setText(tr("tour.back"))
        p.back.setEnabled(self.index > 0)
        p.next.setText(tr("tour.done") if self.index == len(CHAPTERS) - 1 else tr("tour.next"))
        p.close_button.setText(tr("tour.close"))
        p.adjustSize()


def start_tour(window) -> Tour:
    """Start (or restart) the tour over `window` (a MainWindow): what Help -> Tour: why this word does, and what
    a button elsewhere (the Explain dock's) calls."""
    tour = getattr(window, "tour", None)
    if tour is None:
        tour = window.tour = Tour(window)
    tour.start()
    return tour
