"""The Explain dock's background job: app/engine/explain_service.py computes an explanation on app.engine.background's "explain"
lane (one pool thread owned by the application, at the background nice value: the re-run threads that
compute.explain starts from there inherit it), and the lane hands the result or a one-line failure back to the
UI thread."""
from __future__ import annotations

from app.engine.explain_service import ExplainRequest, ExplainResult, explain_result


def explain_job(req: ExplainRequest):
    """The job of one request: fn(job) -> ExplainResult (for BackgroundJobs.start)."""
    def run(_job) -> ExplainResult:
        return explain_result(req)
    return run
