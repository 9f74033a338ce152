"""Off-UI-thread 3D frames: a render thread draws the scene into an FBO and hands back a finished QImage.

On software GL (llvmpipe on these 2-core machines) one frame of the scene costs 20-60 ms. Drawn on the UI
thread that time is a stall for every slider drag and trace arrival; here it is spent in a render thread, and
the UI thread only blits the finished picture (labels included). The thread owns one QOpenGLContext (in the
application's share group) on an off-screen surface.

    renderer = FrameRenderer(source)   # source.frame_job() -> (w, h, logical_w, logical_h, dpr) | None
                                       # source.frame_snapshot() -> FrameState   (state copied under SCENE_LOCK)
                                       # source.frame_labels(state, job) -> QImage | None   (render thread)
    renderer.frame_ready.connect(slot) # slot(image: QImage, version: int, camera, complete: bool), UI thread
    renderer.request()                 # from the UI thread; requests while a frame is drawn coalesce
    renderer.stop()

What is drawn are render twins of the scene's items (scene/gl_items.py): their state is copied, by reference,
under SCENE_LOCK in a few microseconds, then drawn without it, so the UI thread never waits for a frame.
Requests coalesce: however many arrive while a frame is being drawn, one more frame follows, of the newest
state. Where the platform cannot make a context current in another thread, the same renderer runs on the UI
thread (correct, not stall-free).

Start-up: the very first frame is a preview without labels (complete=False) and the complete frame
follows at once, so the 3D picture is on screen one label layout (40-100 ms on 2 cores) sooner.

A frame that fails (a GL call raising, e.g. PyOpenGL looking for a GLX context where Qt made an EGL one) is
reported once through frame_failed(message) and ends the renderer: no traceback per frame, and the view can say
why it shows no picture.
"""
from __future__ import annotations

import atexit
import logging
import threading
import time
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
from OpenGL import GL
from OpenGL.error import Error as GLError
from pyqtgraph.opengl.GLViewWidget import GLViewMixin
from PySide6.QtCore import QCoreApplication, QObject, Qt, QThread, Signal, Slot
from PySide6.QtGui import QImage, QMatrix4x4, QOffscreenSurface, QOpenGLContext, QPainter, QSurfaceFormat
from PySide6.QtOpenGL import QOpenGLFramebufferObject, QOpenGLFramebufferObjectFormat

from scene import thread_priority
from scene.gc_main_thread import collect_on_main_thread
from scene.gl_items import PAINT_LOCK

log = logging.getLogger(__name__)

# Renderers whose thread may be running. Held strongly: a QThread destroyed while running aborts the process,
# so a renderer stays here (even if its view is gone) until stop() has ended its thread.
_LIVE: "set[FrameRenderer]" = set()
_QUIT_HOOKED = False
# Pacing: back-to-back frames (a camera animation, a drag) rest this fraction of the last frame's
# time before the next one starts, at most REST_MAX_S. On software GL a frame keeps both cores busy (the render
# thread, then llvmpipe's rasteriser threads) for 20-40 ms: frames without a rest left the UI thread and the X
# server a core only by chance (the soak's 100-150 ms heartbeat gaps during 4x auto-play). On a GPU a frame
# costs ~1-3 ms, so its rest is a millisecond or two and the animation keeps its rate.
REST_FRACTION = 0.5
REST_MAX_S = 0.025
GL_WORKER_PREFIX = "llvmpipe"  # Mesa's software rasteriser's threads (llvmpipe-0, -1, ...)


def surface_format() -> QSurfaceFormat:
    fmt = QSurfaceFormat.defaultFormat()
    fmt.setDepthBufferSize(24)
    fmt.setStencilBufferSize(8)
    return fmt


def new_context() -> tuple[QOffscreenSurface, QOpenGLContext]:
    """An off-screen surface and a GL context in the application's share group (created on the UI thread)."""
    surface = QOffscreenSurface()
    surface.setFormat(surface_format())
    surface.create()
    context = QOpenGLContext()
    context.setFormat(surface_format())
    share = QOpenGLContext.globalShareContext()
    if share is not None:
        context.setShareContext(share)
    if not context.create():
        raise RuntimeError("no OpenGL context could be created")
    return surface, context


@dataclass
class FrameState:
    """One frame's worth of scene state: twins in paint order, camera options, and what describes it."""
    twins: list
    opts: dict
    version: int
    camera: object = None
    overlay: object = None


class FrameView:
    """The view a render twin sees while it paints: the frame's matrices and options (pyqtgraph items ask
    their view for currentModelView / currentProjection, opts and width)."""

    def __init__(self):
        self.opts: dict = {}
        self._mv = QMatrix4x4()
        self._proj = QMatrix4x4()
        self._w = 1

    def currentModelView(self):  # noqa: N802 - pyqtgraph's names
        return self._mv

    def currentProjection(self):  # noqa: N802
        return self._proj

    def width(self) -> int:
        return self._w

    def update(self) -> None:  # a twin never asks for frames
        pass


def paint_twins(fv: FrameView, state: FrameState, w: int, h: int, lw: int, lh: int) -> None:
    """Draw the twins into the bound framebuffer of w x h device pixels, laid out for lw x lh logical pixels
    (pyqtgraph's own projection and view matrices). Caller holds PAINT_LOCK and has a context current."""
    ns = SimpleNamespace(opts=state.opts)
    region = (0, 0, lw, lh)
    fv.opts, fv._w = state.opts, lw
    fv._proj = GLViewMixin.projectionMatrix(ns, region, region)
    fv._mv = GLViewMixin.viewMatrix(ns)
    GL.glViewport(0, 0, w, h)
    GL.glClearColor(*state.opts["bgcolor"])
    GL.glClear(GL.GL_DEPTH_BUFFER_BIT | GL.GL_COLOR_BUFFER_BIT)
    for twin in state.twins:
        if not twin.visible():
            continue
        if not twin.isInitialized():
            twin.initialize()
        twin.paint()


def render_offscreen(fv: FrameView, state: FrameState, w: int, h: int, lw: int, lh: int,
                     samples: int = 4) -> QImage:
    """The twins drawn into a multisampled framebuffer of w x h device pixels, resolved and read back as an
    ARGB32_Premultiplied image (exports). Only PyOpenGL calls, which release the GIL while the driver works,
    so an 8K export in the render thread leaves the UI thread free. Caller holds PAINT_LOCK and has a
    context current."""
    fbos = [int(f) for f in np.atleast_1d(GL.glGenFramebuffers(2))]
    rbos = [int(r) for r in np.atleast_1d(GL.glGenRenderbuffers(3))]
    try:
        ms, resolve = fbos
        GL.glBindRenderbuffer(GL.GL_RENDERBUFFER, rbos[0])
        GL.glRenderbufferStorageMultisample(GL.GL_RENDERBUFFER, samples, GL.GL_RGBA8, w, h)
        GL.glBindRenderbuffer(GL.GL_RENDERBUFFER, rbos[1])
        GL.glRenderbufferStorageMultisample(GL.GL_RENDERBUFFER, samples, GL.GL_DEPTH24_STENCIL8, w, h)
        GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, ms)
        GL.glFramebufferRenderbuffer(GL.GL_FRAMEBUFFER, GL.GL_COLOR_ATTACHMENT0, GL.GL_RENDERBUFFER, rbos[0])
        GL.glFramebufferRenderbuffer(GL.GL_FRAMEBUFFER, GL.GL_DEPTH_STENCIL_ATTACHMENT, GL.GL_RENDERBUFFER,
                                     rbos[1])
        if GL.glCheckFramebufferStatus(GL.GL_FRAMEBUFFER) != GL.GL_FRAMEBUFFER_COMPLETE:
            raise RuntimeError(f"no {w} x {h} framebuffer could be made")
        paint_twins(fv, state, w, h, lw, lh)
        GL.glBindRenderbuffer(GL.GL_RENDERBUFFER, rbos[2])
        GL.glRenderbufferStorage(GL.GL_RENDERBUFFER, GL.GL_RGBA8, w, h)
        GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, resolve)
        GL.glFramebufferRenderbuffer(GL.GL_FRAMEBUFFER, GL.GL_COLOR_ATTACHMENT0, GL.GL_RENDERBUFFER, rbos[2])
        GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, ms)
        GL.glBindFramebuffer(GL.GL_DRAW_FRAMEBUFFER, resolve)
        GL.glBlitFramebuffer(0, 0, w, h, 0, 0, w, h, GL.GL_COLOR_BUFFER_BIT, GL.GL_NEAREST)
        GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, resolve)
        pixels = np.empty((h, w, 4), np.uint8)
        GL.glPixelStorei(GL.GL_PACK_ALIGNMENT, 4)
        GL.glReadPixels(0, 0, w, h, GL.GL_BGRA, GL.GL_UNSIGNED_BYTE, pixels)
    finally:
        GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, 0)
        GL.glDeleteRenderbuffers(3, np.array(rbos, np.uint32))
        GL.glDeleteFramebuffers(2, np.array(fbos, np.uint32))
    rows = np.ascontiguousarray(pixels[::-1])  # GL's rows run bottom-up
    return QImage(rows.data, w, h, 4 * w, QImage.Format.Format_ARGB32_Premultiplied).copy()


class FrameRenderer(QObject):
    """Draws frames of one view in its own thread (see the module docstring); frame_ready(image, version,
    camera, complete) is delivered to the UI thread."""

    frame_ready = Signal(QImage, int, object, bool)  # image, version, camera, complete (False: no labels yet)
    frame_failed = Signal(str)  # once, with a one-line reason; no frames follow
    job_done = Signal(object, object, object)  # (job, result, exception or None) of run_job
    _kick = Signal()
    _job = Signal(object)
    _halt = Signal()

    def __init__(self, view):
        super().__init__()
        self.view = view
        self._surface, self._context = new_context()
        # the GL driver's rasteriser threads: Mesa's llvmpipe makes them with the process's first context and
        # shares them among all (so these draw the render thread's frames): background work, as that thread
        self._gl_workers = thread_priority.threads_named(GL_WORKER_PREFIX)
        self._fbo: QOpenGLFramebufferObject | None = None
        self._pixels: np.ndarray | None = None
        self._mutex = threading.Lock()
        self._scheduled = False
        self._stopped = False
        self.failure = ""  # why frames could not be drawn ("" = they can)
        self.frames = 0
        self.timings: dict[str, float] = {}  # the last frame's phases in ms (benches read it)
        self._rest_until = 0.0  # perf_counter time before which the next frame does not start (pacing)
        self.threaded = bool(QOpenGLContext.supportsThreadedOpenGL())
        self._thread: QThread | None = None
        if self.threaded:
            collect_on_main_thread()  # no garbage collection (of Qt objects) in the render thread
            self._thread = QThread()
            self._thread.setObjectName("k3-render")
            self.moveToThread(self._thread)
            self._context.moveToThread(self._thread)
        # queued even without a thread: a request made while the UI changes the scene never draws re-entrantly
        self._kick.connect(self._render, Qt.ConnectionType.QueuedConnection)
        self._halt.connect(self._cleanup, Qt.ConnectionType.QueuedConnection)
        self._job.connect(self._run_job, Qt.ConnectionType.QueuedConnection)

    # --- UI thread ------------------------------------------------------------------------------------
    def request(self) -> None:
        """Ask for a frame of the current state (cheap; coalesces with pending requests)."""
        with self._mutex:
            if self._scheduled or self._stopped:
                return
            self._scheduled = True
        if self._thread is not None and not self._thread.isRunning():
            _LIVE.add(self)
            _hook_quit()
            self._thread.start()
        self._kick.emit()

    def run_job(self, job) -> None:
        """Run a job in the render thread (an export, so the UI thread keeps handling events): job.render_gl()
        -> image with this thread's context current and PAINT_LOCK held, then job.finish(image) -> result
        without them; job_done(job, result, error) follows (error: the exception, or None)."""
        if self._thread is not None and not self._thread.isRunning():
            _LIVE.add(self)
            _hook_quit()
            self._thread.start()
        self._job.emit(job)

    def stop(self) -> None:
        """Finish the render thread (idempotent); its GL objects are released in that thread."""
        self._stopped = True
        t = self._thread
        try:
            if t is not None and t.isRunning():
                self._halt.emit()
                t.wait(10000)
        except RuntimeError:  # the thread object is already gone (interpreter shutdown)
            pass
        _LIVE.discard(self)

    # --- render thread ----------------------------------------------------------------------------------
    @Slot()
    def _render(self) -> None:
        rest = self._rest_until - time.perf_counter()
        if rest > 0:  # a frame just ended: give the other threads the cores for a moment (requests coalesce)
            time.sleep(rest)
        with self._mutex:
            self._scheduled = False
        if self._stopped:
            return
        if self.frames == 0 and self._thread is not None:  # the render thread's first frame: it and its GL
            thread_priority.lower_this_thread()  # workers yield the cores to the UI thread when both want them
            thread_priority.lower(self._gl_workers)
        t0 = time.perf_counter()
        try:
            first = self.frames == 0  # the start-up preview: its labelled frame follows at once
            self._draw()
        except (GLError, RuntimeError) as exc:  # a GL failure: reported once, never a traceback per frame
            self._stopped = True
            self.failure = gl_failure_text(exc)
            log.info("3D frames cannot be drawn: %s", self.failure)  # the view shows it
            self.frame_failed.emit(self.failure)
            return
        if self._thread is not None and not first:  # never on the UI thread
            end = time.perf_counter()
            self._rest_until = end + min(REST_MAX_S, (end - t0) * REST_FRACTION)

    @Slot(object)
    def _run_job(self, job) -> None:
        result, error = None, None
        try:
            with PAINT_LOCK:
                if not self._context.makeCurrent(self._surface):
                    raise RuntimeError("the render thread's OpenGL context could not be made current")
                try:
                    image = job.render_gl()
                finally:
                    self._context.doneCurrent()
            result = job.finish(image)
        except Exception as exc:  # noqa: BLE001 - handed to the UI thread, which reports it
            error = exc
        self.job_done.emit(job, result, error)

    def _draw(self) -> None:
        job = self.view.frame_job()  # (w, h, logical_w, logical_h, dpr) or None when nothing is to be drawn
        if job is None:
            return
        w, h, lw, lh, dpr = job
        t0 = time.perf_counter()
        with PAINT_LOCK:
            if not self._context.makeCurrent(self._surface):
                return
            try:
                if self._fbo is None or self._fbo.width() != w or self._fbo.height() != h:
                    fmt = QOpenGLFramebufferObjectFormat()
                    fmt.setAttachment(QOpenGLFramebufferObject.Attachment.CombinedDepthStencil)
                    self._fbo = None
                    self._fbo = QOpenGLFramebufferObject(w, h, fmt)
                self._fbo.bind()
                state = self.view.frame_snapshot()
                t1 = time.perf_counter()
                paint_twins(self.view.frame_view, state, w, h, lw, lh)
                GL.glFlush()  # rasterisation runs in llvmpipe's threads while the labels are laid out here
                t2 = time.perf_counter()
                complete = self.frames > 0 or state.overlay is None  # the first: a preview without labels
                labels = self.view.frame_labels(state, job) if complete else None
                t3 = time.perf_counter()
                image = self._read_back(w, h)
                self._fbo.release()
            finally:
                self._context.doneCurrent()
        t4 = time.perf_counter()
        image.setDevicePixelRatio(dpr)  # the labels are laid out in logical pixels at this ratio
        if labels is not None:
            p = QPainter(image)
            try:
                p.drawImage(0, 0, labels)
            finally:
                p.end()
        t5 = time.perf_counter()
        self.frames += 1
        self.timings = {"snapshot_ms": (t1 - t0) * 1e3, "draw_calls_ms": (t2 - t1) * 1e3,
                        "labels_ms": (t3 - t2) * 1e3, "raster_readback_ms": (t4 - t3) * 1e3,
                        "composite_ms": (t5 - t4) * 1e3, "total_ms": (t5 - t0) * 1e3}
        self.frame_ready.emit(image, state.version, state.camera, complete)
        if not complete:
            self.request()  # the same state again, with its labels

    def _read_back(self, w: int, h: int) -> QImage:
        """The bound FBO as an RGB32 image (waits for the rasterisation): BGRA read straight into a buffer,
        then flipped (GL's rows run bottom-up), one copy in all."""
        if self._pixels is None or self._pixels.shape[:2] != (h, w):
            self._pixels = np.empty((h, w, 4), np.uint8)
        GL.glPixelStorei(GL.GL_PACK_ALIGNMENT, 4)
        GL.glReadPixels(0, 0, w, h, GL.GL_BGRA, GL.GL_UNSIGNED_BYTE, self._pixels)
        return QImage(self._pixels.data, w, h, 4 * w, QImage.Format.Format_RGB32).flipped(Qt.Orientation.Vertical)

    @Slot()
    def _cleanup(self) -> None:
        try:
            if self._context.makeCurrent(self._surface):
                self._fbo = None
                self._context.doneCurrent()
            app = QCoreApplication.instance()
            if app is not None:  # hand the objects back so the UI thread may delete them
                self._context.moveToThread(app.thread())
                self.moveToThread(app.thread())
        finally:
            QThread.currentThread().quit()


def gl_failure_text(exc: BaseException) -> str:
    """One line saying why a GL call failed (PyOpenGL's errors span several lines)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def stop_all() -> None:
    """Stop every render thread (the application is quitting; Python must not run in them any more)."""
    for r in list(_LIVE):
        r.stop()


def _hook_quit() -> None:
    global _QUIT_HOOKED
    app = QCoreApplication.instance()
    if not _QUIT_HOOKED and app is not None:
        app.aboutToQuit.connect(stop_all)
        _QUIT_HOOKED = True


atexit.register(stop_all)
