"""The AppStream metainfo with the project's web addresses, set when a release is built (issue 43.6).

The shipped metainfo (assets/desktop/APP_ID.metainfo.xml, what `--install-desktop` installs) names no web address:
none is published yet, and a software centre would show a dead homepage and broken screenshots. Whoever publishes
the project builds the metainfo for a software centre with its address:

    make metainfo PROJECT_URL=https://github.com/OWNER/REPO      # -> build/APP_ID.metainfo.xml
    python -m app.files.desktop_metainfo --project-url https://github.com/OWNER/REPO --out FILE

which adds the homepage, for a GitHub repository its issue tracker, and the screenshots `make screenshots` keeps in
docs/screenshots/ as that repository's main branch serves them. Both files pass `appstreamcli validate`.
"""
from __future__ import annotations

import argparse
import re
import sys
from html import escape
from pathlib import Path

from app.files.desktop import APP_ID
from assets import asset_path

# (file in docs/screenshots/, caption): the first is the default screenshot
SCREENSHOTS = (
    ("window.png", "The 93-layer stack with layer 37 opened out, the trace player and the answer strip"),
    ("explain.png", "Why this word: the sources of the answer, the logit lens, attention and the causal route"),
    ("expert-grid.png", "The router's scores for all 896 routed experts, the selected top-k lit"),
)
_GITHUB = re.compile(r"https://github\.com/([A-Za-z0-9-]+)/([A-Za-z0-9._-]+?)/?")
_URL = re.compile(r"https://[A-Za-z0-9.-]+(?::\d+)?(?:/[A-Za-z0-9._~/-]*)?")


def check_project_url(url: str) -> str:
    """The URL without a trailing slash; ValueError (one line) unless it is a plain https address."""
    if not isinstance(url, str) or not _URL.fullmatch(url):
        raise ValueError(f"the project URL must be a plain https:// address (letters, digits, . _ ~ / -), got "
                         f"{url!r:.80}")
    return url.rstrip("/")


def metainfo_xml(project_url: str = "") -> str:
    """The shipped metainfo, plus for `project_url` its homepage, issue tracker and screenshots (see the module
    docstring); "" gives the shipped file unchanged."""
    text = asset_path("desktop", f"{APP_ID}.metainfo.xml").read_text(encoding="utf-8")
    if not project_url:
        return text
    url = check_project_url(project_url)
    urls = [f'  <url type="homepage">{escape(url)}</url>']
    shots = ""
    github = _GITHUB.fullmatch(url)
    if github:
        owner, repo = github.groups()
        urls.append(f'  <url type="bugtracker">{escape(url)}/issues</url>')
        urls.append(f'  <url type="vcs-browser">{escape(url)}</url>')
        raw = f"https://raw.githubusercontent.com/{owner}/{repo}/main/docs/screenshots"
        items = []
        for i, (name, caption) in enumerate(SCREENSHOTS):
            kind = ' type="default"' if i == 0 else ""
            items.append(f"    <screenshot{kind}>\n      <caption>{escape(caption)}</caption>\n"
                         f"      <image>{raw}/{name}</image>\n    </screenshot>")
        shots = "  <screenshots>\n" + "\n".join(items) + "\n  </screenshots>\n"
    text = _insert_after(text, "</developer>\n", "\n".join(urls) + "\n")
    return _insert_after(text, "</provides>\n", shots)


def _insert_after(text: str, anchor: str, added: str) -> str:
    at = text.index(anchor) + len(anchor)
    return text[:at] + added + text[at:]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.files.desktop_metainfo",
                                     description="The AppStream metainfo with the project's web addresses.")
    parser.add_argument("--project-url", default="", help="https://github.com/OWNER/REPO (empty: no address)")
    parser.add_argument("--out", type=Path, help="file to write (default: standard output)")
    args = parser.parse_args(argv)
    try:
        text = metainfo_xml(args.project_url)
    except ValueError as exc:
        print(f"metainfo: {exc}", file=sys.stderr)
        return 2
    if args.out is None:
        sys.stdout.write(text)
        return 0
    from compute.guards.safe_write import write_bytes

    write_bytes(args.out, text.encode("utf-8"), make_folder=True)  # a regular file, replaced atomically
    print(f"metainfo: wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
