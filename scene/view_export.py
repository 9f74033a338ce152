"""The SceneView's exports (a part the view owns: `SceneView.exporter`): the current view rendered off screen at
any size, on the UI thread (render_image) or in the render thread (render_image_async: an _ExportJob), with the
labels laid out for the image; and the kept framebuffers of an animation's frames. It reads the view's public
state only (.gl, .labels_enabled, overlay_input())."""
from __future__ import annotations

import contextlib

from PySide6.QtCore import QTimer
from PySide6.QtGui import QImage, QPainter

from scene.frames import render_offscreen
from scene.gl_items import PAINT_LOCK
from scene.gl_widget import _ExportContext
from scene.labels import BACKGROUNDS, OverlayInput, paint_overlay
from scene.legend import export_label_scale

__all__ = ["SceneExporter", "paint_labels"]


class _ExportJob:
    """One export rendered in the render thread (SceneView.render_image_async). The labels' input is taken on
    the UI thread when the job is made, so the export shows the state of that moment."""

    def __init__(self, exporter, w: int, h: int, transparent: bool, theme: str, after, done):
        self.exporter, self.w, self.h, self.transparent, self.theme = exporter, w, h, transparent, theme
        view = exporter.view
        self.overlay = view.overlay_input() if view.labels_enabled else None
        self.after, self.done = after, done
        self.phase = 0  # 0 queued, 1 3D drawn, 2 labels drawn, 3 after() done
        self.image: QImage | None = None
        self.result = None
        self.error: BaseException | None = None

    def render_gl(self) -> QImage:  # render thread, context current, PAINT_LOCK held
        image = self.exporter.gl_image(self.w, self.h, self.transparent, self.theme)
        self.phase = 1
        return image

    def finish(self, image: QImage):  # render thread, no lock
        if self.overlay is not None:
            paint_labels(image, self.overlay, self.theme)
        self.image = image
        self.phase = 2
        result = self.after(image) if self.after is not None else image
        self.phase = 3
        return result

    def finish_ui(self, job, result, error) -> None:  # UI thread
        self.exporter.jobs.discard(self)
        self.result, self.error = result, error
        if self.done is not None:
            self.done(self)


class SceneExporter:
    """render_image / render_image_async / keeping_export_buffers of a SceneView."""

    def __init__(self, view):
        self.view = view
        self.jobs: set = set()  # export jobs in the render thread
        self._hooked = False  # the render thread's job_done connected

    def render_image(self, w: int, h: int, transparent: bool = False, theme: str = "dark") -> QImage:
        """The current view rendered at w x h (4x MSAA) with the labels; the widget's view is unchanged.
        theme "light" draws a light background (unless transparent) and dark text on light panels (slides)."""
        w, h = int(w), int(h)
        if w <= 0 or h <= 0:
            raise ValueError(f"image size must be positive, got {w}x{h}")
        return self.render(w, h, transparent, theme=theme)

    def render_image_async(self, w: int, h: int, transparent: bool = False, theme: str = "dark",
                           after=None, done=None) -> "_ExportJob":
        """render_image in the render thread, so the UI thread keeps handling events. after(image) -> result
        (e.g. encode and write the file) also runs there; done(job) follows on the UI thread, with job.image,
        job.result and job.error (an exception, or None) set; job.phase counts the phases done (0-3) for a
        progress display. Without a render thread (no OpenGL) done follows at once with the error."""
        w, h = int(w), int(h)
        if w <= 0 or h <= 0:
            raise ValueError(f"image size must be positive, got {w}x{h}")
        job = _ExportJob(self, w, h, transparent, theme, after, done)
        gl = self.view.gl
        renderer = gl.renderer
        if gl.gl_error or renderer is None:
            job.error = RuntimeError(gl.gl_error or "no OpenGL")
            QTimer.singleShot(0, lambda: job.finish_ui(job, None, job.error))
            return job
        if not self._hooked:  # a slot of the UI-thread view: delivered on the UI thread
            renderer.job_done.connect(self.view.export_job_done)
            self._hooked = True
        self.jobs.add(job)
        renderer.run_job(job)
        return job

    def job_done(self, job, result, error) -> None:
        """The render thread finished `job` (on the UI thread: SceneView.export_job_done)."""
        if job in self.jobs:
            job.finish_ui(job, result, error)

    def render(self, w: int, h: int, transparent: bool = False, label_size=None, dpr: float = 1.0,
               theme: str = "dark") -> QImage:
        """Render into an FBO of w x h device pixels with the off-screen export context. Labels are laid out
        for label_size logical pixels at dpr (the on-screen look), or scaled to the image size (exports).
        Raises RuntimeError when there is no OpenGL."""
        view = self.view
        if view.gl.gl_error:
            raise RuntimeError(view.gl.gl_error)
        ctx = _ExportContext.get()
        with PAINT_LOCK:  # the render thread's twins and buffers are ours until the image is read back
            ctx.make_current()
            try:
                img = self.gl_image(w, h, transparent, theme, label_size, ctx)
            finally:
                ctx.done_current()
        if view.labels_enabled:
            paint_labels(img, view.overlay_input(), theme, label_size, dpr)
        return img

    def gl_image(self, w: int, h: int, transparent: bool, theme: str, label_size=None, ctx=None) -> QImage:
        """The 3D picture at w x h (4x MSAA); a GL context is current and PAINT_LOCK held (any thread). With
        the export context `ctx`, into its kept buffers while an animation keeps them."""
        lw, lh = label_size if label_size is not None else (w, h)
        gl = self.view.gl
        state = gl.frame_snapshot()
        if transparent:
            state.opts["bgcolor"] = (0.0, 0.0, 0.0, 0.0)
        elif theme != "dark":
            state.opts["bgcolor"] = tuple(BACKGROUNDS.get(theme, BACKGROUNDS["dark"]))
        if ctx is not None:
            return ctx.render(gl.frame_view, state, w, h, lw, lh)
        return render_offscreen(gl.frame_view, state, w, h, lw, lh)

    @contextlib.contextmanager
    def keeping_export_buffers(self):
        """Within this block, render_image of one size reuses one framebuffer (an animation's frames)
        instead of making and freeing one per image; the buffers are freed when the block ends."""
        ctx = _ExportContext.get()
        ctx.keep += 1
        try:
            yield
        finally:
            ctx.keep -= 1
            if not ctx.keep and ctx.target is not None:
                with PAINT_LOCK:
                    ctx.make_current()
                    try:
                        ctx.release_target()
                    finally:
                        ctx.done_current()


def paint_labels(img: QImage, inp: OverlayInput, theme: str, label_size=None, dpr: float = 1.0) -> None:
    """The labels onto img (any thread): the on-screen look (label_size at dpr) or scaled to an export."""
    inp.theme = theme
    p = QPainter(img)
    try:
        if label_size is not None:
            p.scale(dpr, dpr)
            paint_overlay(p, inp, label_size[0], label_size[1], 1.0)
        else:
            inp.label_scale = 1.0  # exports: sized to the image, not to presentation mode
            w, h = img.width(), img.height()
            paint_overlay(p, inp, w, h, scale=export_label_scale(w, h))
    finally:
        p.end()
