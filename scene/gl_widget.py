"""The 3D picture of the SceneView: a plain (raster) widget holding pyqtgraph's GLViewMixin state, whose frames a
render thread draws (scene/frames.py) and this widget blits, with the labels (scene/label_cache.py) over them.
Input events go to the owner's event adapter (scene/input.py), never to pyqtgraph's handlers.

Also the export context (`_ExportContext`): an off-screen GL context of the app's share group in which
SceneView.render_image draws, and the framebuffer it keeps for the frames of an animation."""
from __future__ import annotations

import numpy as np
from pyqtgraph.opengl.GLViewWidget import GLViewMixin
from PySide6.QtCore import QEventLoop, QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QWidget

from scene import palette
from scene.frames import FrameRenderer, FrameState, FrameView, new_context, render_offscreen
from scene.gl_items import SCENE_LOCK, make_twin, sync_twin
from scene.label_cache import LabelCache
from scene.overlay_style import qcolor


class GLWidget(GLViewMixin, QWidget):
    """The 3D picture: a plain (raster) widget showing frames that a render thread draws (scene/frames.py).

    pyqtgraph's GLViewMixin keeps the items and the camera options; `update()` (called by the items and the
    mixin whenever something changes) asks the render thread for a frame instead of drawing here, so the UI
    thread never waits for software GL. The render thread draws render twins of the items and the labels (for
    the camera of that frame) and this widget blits the result. Input goes to the owner (picking, camera), never
    to pyqtgraph's own handlers. Signals frameSwapped when a new frame reaches the screen; paint_count counts
    those frames and shown_version says which state the last one showed. The renderer's first frame is a preview
    without labels (scene/frames.py): it signals frameSwapped too, but counts as shown only once the complete
    frame (with the labels) follows."""

    frameSwapped = Signal()

    def __init__(self, owner: QWidget, parent: QWidget):
        # owner: the scene.view.SceneView holding this picture (its parts, tr and input are used); not imported
        # here, so scene/view.py -> scene/gl_widget.py is the one direction between the two modules
        super().__init__(parent)
        self.owner = owner
        self.setMouseTracking(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)
        self.labels = LabelCache()
        self.paint_count = 0
        self.version = 0  # bumped by every change of what the frame shows
        self.shown_version = -1  # the version the frame on screen was drawn from
        self._frame: QImage | None = None
        self._frame_version = -1
        self._preview_pending = False  # a labels-less first frame is waiting to be painted
        self._job = None
        self.frame_view = FrameView()
        self._twins: list = []  # (item, render twin), in the order the items were added
        self.gl_error = ""  # why no GL context could be made ("" = frames are drawn)
        try:
            self.renderer = FrameRenderer(self)
        except RuntimeError as exc:  # no OpenGL: the view says so, the rest of the app works
            self.renderer = None
            self.gl_error = str(exc)
        else:
            self.renderer.frame_ready.connect(self._on_frame)
            self.renderer.frame_failed.connect(self._on_frame_failed)
            renderer = self.renderer
            self.destroyed.connect(lambda *_: renderer.stop())
        self._ready = True
        self.setBackgroundColor(tuple(int(c * 255) for c in palette.role("background")))

    # --- what GLViewMixin expects of a QOpenGLWidget ------------------------------------------------
    def isValid(self) -> bool:
        return False  # items are never drawn here; their render twins are initialised where they are drawn

    def addItem(self, item) -> None:
        twin = make_twin(item)
        twin._setView(self.frame_view)
        with SCENE_LOCK:
            self._twins.append((item, twin))
        super().addItem(item)

    def removeItem(self, item) -> None:
        with SCENE_LOCK:
            self._twins = [(i, t) for i, t in self._twins if i is not item]
        super().removeItem(item)

    def clear(self) -> None:
        with SCENE_LOCK:
            self._twins = []
        super().clear()

    def update(self) -> None:
        """The scene changed: a new frame (drawn in the render thread) will follow."""
        if not getattr(self, "_ready", False):
            return
        self.version += 1
        if not self.isVisible():
            return  # drawn when shown
        dpr = self.devicePixelRatioF()
        w, h = max(1, self.width()), max(1, self.height())
        self._job = (max(1, int(w * dpr)), max(1, int(h * dpr)), w, h, dpr)
        if self.renderer is None:
            QWidget.update(self)  # the message instead of a picture
        else:
            self.renderer.request()

    def repaint(self) -> None:
        """Draw the current state now and wait until it is on screen (at most 5 s)."""
        self.update()
        if not self.isVisible() or self.renderer is None:
            return
        target = self.version
        if self.shown_version >= target:
            return
        loop = QEventLoop()
        timer = QTimer()
        timer.setSingleShot(True)
        timer.timeout.connect(loop.quit)

        def check():
            if self.shown_version >= target:
                loop.quit()
        self.frameSwapped.connect(check)
        timer.start(5000)
        loop.exec()
        timer.stop()
        self.frameSwapped.disconnect(check)

    def grabFramebuffer(self) -> QImage:
        """What the view shows (3D + labels) at its device-pixel size, rendered again from the current state
        (exact, and works while hidden)."""
        dpr = float(self.devicePixelRatioF())
        w, h = max(1, self.width()), max(1, self.height())
        img = self.owner.exporter.render(int(w * dpr), int(h * dpr), transparent=False, label_size=(w, h), dpr=dpr)
        img.setDevicePixelRatio(dpr)
        return img

    # --- the render thread's side (called there; reads plain Python state only) ----------------------
    def frame_job(self):
        return self._job

    def frame_snapshot(self) -> FrameState:
        """The scene's state for one frame, copied by reference under SCENE_LOCK (any thread)."""
        o = self.owner
        o.apply_colours()  # computed without SCENE_LOCK: the UI thread does not wait for the cell colours
        if o.labels_enabled:
            o.texts.explain_labels()  # the lens column's labels, laid out once per change: here, not under the lock
        with SCENE_LOCK:
            o.apply_colours()  # only if the scene changed meanwhile
            for item, twin in self._twins:
                sync_twin(twin, item)
            order = sorted(self._twins, key=lambda pair: pair[0].depthValue())  # stable: insertion order
            overlay = None
            if o.labels_enabled:
                overlay = (o.overlay_version, o.overlay_input(o.cam))
            return FrameState([t for _, t in order], dict(self.opts), self.version, o.cam, overlay)

    def frame_labels(self, state: FrameState, job) -> QImage | None:
        """The labels of a frame (render thread; QPainter on a QImage is thread-safe)."""
        if state.overlay is None:
            return None
        _w, _h, lw, lh, dpr = job
        return self.labels.image(state.overlay[1], state.overlay[0], lw, lh, dpr)

    # --- showing frames -------------------------------------------------------------------------------
    def _on_frame(self, image: QImage, version: int, cam, complete: bool = True) -> None:
        if not complete and self.shown_version >= 0:
            return  # a preview after a complete frame would only take the labels away
        self._frame, self._frame_version = image, (version if complete else -1)
        self._preview_pending = not complete
        if self.isVisible():
            QWidget.repaint(self)  # on screen now, not one event-loop turn later

    def _on_frame_failed(self, message: str) -> None:
        """The render thread cannot draw (it said why, once): show the no-GL message instead of a picture."""
        self.gl_error = message
        self._frame = None
        self.update()

    def paintEvent(self, ev):
        p = QPainter(self)
        new = False
        try:
            frame = self._frame
            if frame is None:
                p.fillRect(self.rect(), qcolor(tuple(self.opts["bgcolor"])))
                if self.gl_error:
                    p.setPen(qcolor("no_gl_text"))
                    p.drawText(self.rect().adjusted(40, 40, -40, -40),
                               Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap,
                               self.owner.tr("scene.no_gl", error=self.gl_error))
            else:
                p.drawImage(QRectF(0, 0, self.width(), self.height()), frame, QRectF(frame.rect()))
                new = self._frame_version >= 0 and self._frame_version != self.shown_version
        finally:
            p.end()
        if self._preview_pending and frame is not None:
            self._preview_pending = False
            self.frameSwapped.emit()
        if new:
            self.shown_version = self._frame_version
            self.paint_count += 1
            self.frameSwapped.emit()

    def showEvent(self, ev):
        super().showEvent(ev)
        self.update()

    def resizeEvent(self, ev):
        super().resizeEvent(ev)
        self.update()

    # --- input ----------------------------------------------------------------------------------------
    def mousePressEvent(self, ev):
        self.owner.input.press(ev)

    def mouseMoveEvent(self, ev):
        self.owner.input.move(ev)

    def mouseReleaseEvent(self, ev):
        self.owner.input.release(ev)

    def mouseDoubleClickEvent(self, ev):
        self.owner.input.double_click(ev)

    def wheelEvent(self, ev):
        self.owner.input.wheel(ev)

    def contextMenuEvent(self, ev):
        keyboard = ev.reason() == ev.Reason.Keyboard
        self.owner.pointer.context(QPointF(ev.pos()), ev.globalPos(), keyboard)
        ev.accept()

    def keyPressEvent(self, ev):
        self.owner.input.key(ev)

    def keyReleaseEvent(self, ev):
        ev.ignore()

    def leaveEvent(self, ev):
        self.owner.input.leave()
        super().leaveEvent(ev)


class _ExportContext:
    """An off-screen GL context in the app's share group for exports on the UI thread, whether or not the
    view was ever shown (the items' buffers and pyqtgraph's shader programs are shared)."""
    _instance: "_ExportContext | None" = None

    def __init__(self):
        self.surface, self.context = new_context()

    @classmethod
    def get(cls) -> "_ExportContext":
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def make_current(self) -> None:
        if not self.context.makeCurrent(self.surface):
            raise RuntimeError("an OpenGL context could not be made current")

    def done_current(self) -> None:
        self.context.doneCurrent()

    # --- a kept framebuffer for a series of same-size renders (an animation) ----------------------------
    keep = 0  # > 0 while some caller keeps buffers between renders (SceneView.keeping_export_buffers)
    target: "_ExportTarget | None" = None

    def render(self, fv: FrameView, state: FrameState, w: int, h: int, lw: int, lh: int) -> QImage:
        """render_offscreen, but into the kept buffers while `keep` (made once per size); context current."""
        if not self.keep:
            self.release_target()
            return render_offscreen(fv, state, w, h, lw, lh)
        if self.target is None or (self.target.w, self.target.h) != (w, h):
            self.release_target()
            self.target = _ExportTarget(w, h)
        return self.target.draw(fv, state, lw, lh)

    def release_target(self) -> None:
        if self.target is not None:
            self.target.release()
            self.target = None


class _ExportTarget:
    """A 4x multisampled framebuffer of w x h with its resolve buffer and a read-back array, made once and
    drawn into many times (the frames of one animation): render_offscreen makes and frees ~70 MB of buffers
    per 1080p image. Used with the export context current (PAINT_LOCK held)."""

    SAMPLES = 4

    def __init__(self, w: int, h: int):
        from OpenGL import GL

        self.w, self.h = w, h
        self.fbos = [int(f) for f in np.atleast_1d(GL.glGenFramebuffers(2))]
        self.rbos = [int(r) for r in np.atleast_1d(GL.glGenRenderbuffers(3))]
        ms, resolve = self.fbos
        storage = ((GL.GL_RGBA8, self.SAMPLES), (GL.GL_DEPTH24_STENCIL8, self.SAMPLES), (GL.GL_RGBA8, 0))
        for rbo, (fmt, samples) in zip(self.rbos, storage):
            GL.glBindRenderbuffer(GL.GL_RENDERBUFFER, rbo)
            if samples:
                GL.glRenderbufferStorageMultisample(GL.GL_RENDERBUFFER, samples, fmt, w, h)
            else:
                GL.glRenderbufferStorage(GL.GL_RENDERBUFFER, fmt, w, h)
        try:
            GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, ms)
            GL.glFramebufferRenderbuffer(GL.GL_FRAMEBUFFER, GL.GL_COLOR_ATTACHMENT0, GL.GL_RENDERBUFFER,
                                         self.rbos[0])
            GL.glFramebufferRenderbuffer(GL.GL_FRAMEBUFFER, GL.GL_DEPTH_STENCIL_ATTACHMENT, GL.GL_RENDERBUFFER,
                                         self.rbos[1])
            ok = GL.glCheckFramebufferStatus(GL.GL_FRAMEBUFFER) == GL.GL_FRAMEBUFFER_COMPLETE
            GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, resolve)
            GL.glFramebufferRenderbuffer(GL.GL_FRAMEBUFFER, GL.GL_COLOR_ATTACHMENT0, GL.GL_RENDERBUFFER,
                                         self.rbos[2])
            ok = ok and GL.glCheckFramebufferStatus(GL.GL_FRAMEBUFFER) == GL.GL_FRAMEBUFFER_COMPLETE
        finally:
            GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, 0)
        if not ok:
            self.release()
            raise RuntimeError(f"no {w} x {h} framebuffer could be made")
        self.pixels = np.empty((h, w, 4), np.uint8)

    def draw(self, fv: FrameView, state: FrameState, lw: int, lh: int) -> QImage:
        from OpenGL import GL

        from scene.frames import paint_twins

        w, h = self.w, self.h
        ms, resolve = self.fbos
        try:
            GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, ms)
            paint_twins(fv, state, w, h, lw, lh)
            GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, ms)
            GL.glBindFramebuffer(GL.GL_DRAW_FRAMEBUFFER, resolve)
            GL.glBlitFramebuffer(0, 0, w, h, 0, 0, w, h, GL.GL_COLOR_BUFFER_BIT, GL.GL_NEAREST)
            GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, resolve)
            GL.glPixelStorei(GL.GL_PACK_ALIGNMENT, 4)
            GL.glReadPixels(0, 0, w, h, GL.GL_BGRA, GL.GL_UNSIGNED_BYTE, self.pixels)
        finally:
            GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, 0)
        image = QImage(w, h, QImage.Format.Format_ARGB32_Premultiplied)
        rows = np.frombuffer(image.bits(), np.uint8).reshape(h, image.bytesPerLine())[:, : 4 * w]
        rows.reshape(h, w, 4)[:] = self.pixels[::-1]  # GL's rows run bottom-up; one copy into the image
        return image

    def release(self) -> None:
        from OpenGL import GL

        GL.glDeleteRenderbuffers(3, np.array(self.rbos, np.uint32))
        GL.glDeleteFramebuffers(2, np.array(self.fbos, np.uint32))
