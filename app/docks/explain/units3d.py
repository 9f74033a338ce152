"""The heads' and experts' total effects the 3D view lights in the exploded layer (issue 39.5), computed for the
Explain dock on app.engine.background's "explain" lane, apart from the explanation itself: the lens, arcs and route come
at once; the heads' grid (one re-run per head, the quicker half) follows and is drawn at once; the experts' grid
(one re-run per chosen expert at every MoE layer) last. Never on the UI thread; kept per explanation (tokens,
position, knobs, weights, model, word), so that a layer change, a language switch or another 3D choice does not
compute them again.

    units = Units3D(dock)              # dock: current_request(), refresh_overlay()
    units.units_for(result)            # what to draw now (computing / heads only / whole / an error); starts the job
"""
from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Signal

from app.engine.background import BackgroundJobs
from app.slot_guard import guarded

CACHED = 8  # explanations whose grids are kept


def key_of(req) -> tuple:
    return (getattr(req.config, "name", None), req.weights, req.tokens, req.position, repr(req.knobs), req.word)


def _matches(res, req) -> bool:
    """Whether result `res` explains request `req`'s tokens and position (the dock's next request may already be
    another one: its grids are not this result's)."""
    return (res.position == req.position and res.weights == req.weights
            and list(res.pieces) == [p for p, _i in req.tokens][:len(res.pieces)])


class Units3D(QObject):
    """The grids' jobs and cache for one dock."""

    partial = Signal(object, object)  # key, UnitEffects with the heads only (emitted from the lane's thread)

    def __init__(self, dock):
        super().__init__(dock)
        self.dock = dock
        self.jobs = BackgroundJobs("explain", parent=self)
        self.jobs.done.connect(self._done)
        self.jobs.failed.connect(self._failed)
        self.partial.connect(self._partial)  # queued: delivered on the UI thread
        self.cache: dict = {}  # key -> UnitEffects (heads only while the experts are computed)
        self.errors: dict = {}  # key -> one line
        self.running = None  # the key being computed
        self.thread = None  # tests: the thread ident the last job ran on (never the UI thread's)

    def units_for(self, res):
        """The scene.effect_cells.UnitEffects to draw with result `res` (None without a request); starts their
        job when they are neither kept nor being computed."""
        from scene.effect_cells import UnitEffects

        req = self.dock.current_request()
        if req is None or res is None:
            return None
        if not _matches(res, req):
            return UnitEffects(computing=True)
        key = key_of(req)
        if key in self.errors:
            return UnitEffects(error=self.errors[key])
        got = self.cache.get(key)
        if (got is None or got.experts_computing) and self.running != key:
            self._start(key, req)
        return got if got is not None else UnitEffects(computing=True)

    def busy(self) -> bool:
        return self.jobs.busy()

    def _start(self, key, req) -> None:
        self.jobs.cancel_all()  # another explanation's grids are no longer wanted (it stops after its heads)
        self.running = key
        self.jobs.start(key, self._job(key, req))

    def _job(self, key, req):
        partial = self.partial

        def run(job):
            self.thread = threading.get_ident()
            from app.engine.explain_effects import experts_part, heads_part
            from app.engine.explain_service import ENGINE_LOCK, engine_for
            from compute.explain import Explanation

            with ENGINE_LOCK:
                ex = Explanation(engine_for(req.config, req.weights), list(req.tokens), req.position, knobs=req.knobs,
                                 word=req.word)
                heads = heads_part(ex)
            partial.emit(key, heads)  # drawn while the experts are computed
            if job.cancelled():
                return heads
            with ENGINE_LOCK:
                return experts_part(ex, heads)
        return run

    def _keep(self, key, units) -> None:
        self.cache.pop(key, None)
        while len(self.cache) >= CACHED:
            self.cache.pop(next(iter(self.cache)))
        self.cache[key] = units

    @guarded
    def _partial(self, key, heads) -> None:
        if key not in self.cache:
            self._keep(key, heads)
            self.dock.refresh_overlay()

    @guarded
    def _done(self, key, units) -> None:
        if self.running == key:
            self.running = None
        self._keep(key, units)
        self.dock.refresh_overlay()

    @guarded
    def _failed(self, key, message: str) -> None:
        if self.running == key:
            self.running = None
        self.errors[key] = message
        self.dock.refresh_overlay()
