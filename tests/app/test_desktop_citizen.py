"""A desktop citizen: one reverse-DNS id everywhere, a desktop entry and AppStream metainfo the freedesktop tools
accept (checked with them when installed), a MIME type for *.k3view, and `k3-explorer --install-desktop` /
`--uninstall-desktop` for any install (the Makefile's targets call it)."""
import configparser
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from app.files import desktop, desktop_install

ROOT = Path(__file__).resolve().parents[2]
DESKTOP = ROOT / "assets/desktop"
APP_ID = "io.github.k3explorer.K3Explorer"
MIME_NS = "{http://www.freedesktop.org/standards/shared-mime-info}"


def _entry(path: Path) -> configparser.SectionProxy:
    entry = configparser.ConfigParser(interpolation=None, strict=True)
    entry.optionxform = str
    entry.read(path, encoding="utf-8")
    return entry["Desktop Entry"]


def test_one_reverse_dns_id_names_every_file():
    assert desktop.APP_ID == APP_ID == desktop.DESKTOP_ID
    assert re.fullmatch(r"[a-z]+(\.[a-z0-9]+)+\.[A-Za-z0-9]+", APP_ID)  # reverse-DNS, no hyphen
    for name in (f"{APP_ID}.desktop", f"{APP_ID}.metainfo.xml", f"{APP_ID}.mime.xml", f"{APP_ID}.svg"):
        assert (DESKTOP / name).is_file(), name
    assert sorted(p.name for p in (DESKTOP / "icons").iterdir()) == sorted(
        f"{APP_ID}-{n}.png" for n in desktop.ICON_SIZES)
    assert not list(DESKTOP.rglob("k3-explorer*"))  # no file left under the old id


def test_desktop_entry_names_the_id_the_command_and_the_mime_type():
    import tomllib

    d = _entry(DESKTOP / f"{APP_ID}.desktop")
    assert d["Type"] == "Application" and d["Name"] == "K3 Explorer" and d["Terminal"] == "false"
    assert d["Exec"] == "k3-explorer %f"  # the console script of pyproject; %f: the *.k3view to open
    assert "k3-explorer" in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert d["Icon"] == APP_ID and "Name[ko]" in d and "Comment[ko]" in d
    assert d["MimeType"] == f"{desktop.MIME_TYPE};"
    if shutil.which("desktop-file-validate"):
        done = subprocess.run(["desktop-file-validate", str(DESKTOP / f"{APP_ID}.desktop")], capture_output=True,
                              text=True, timeout=30)
        assert done.returncode == 0 and not done.stdout.strip(), done.stdout  # not even a hint


def test_mime_type_globs_view_files_as_json():
    root = ET.parse(DESKTOP / f"{APP_ID}.mime.xml").getroot()
    (kind,) = root.findall(f"{MIME_NS}mime-type")
    assert kind.get("type") == desktop.MIME_TYPE
    assert [g.get("pattern") for g in kind.findall(f"{MIME_NS}glob")] == ["*.k3view"]
    assert kind.find(f"{MIME_NS}sub-class-of").get("type") == "application/json"  # a view file is JSON
    from app.files import viewfile

    assert f"*{viewfile.SUFFIX}" == "*.k3view"  # what File -> Save view writes


def _changelog_release() -> tuple[str, str]:
    """(version, date of its latest build) of the newest released section of CHANGELOG.md."""
    text = (ROOT / "CHANGELOG.md").read_text()
    section = re.search(r"^## \[(\d+\.\d+\.\d+)\](.*?)(?=^## |\Z)", text, re.M | re.S)
    dates = re.findall(r"^### (\d{4}-\d{2}-\d{2})", section.group(2), re.M)
    return section.group(1), max(dates)


def test_metainfo_matches_the_package_and_the_changelog():
    import tomllib

    import app

    root = ET.parse(DESKTOP / f"{APP_ID}.metainfo.xml").getroot()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert root.get("type") == "desktop-application" and root.findtext("id") == APP_ID
    assert root.findtext("project_license") == project["license"]
    assert root.find("launchable").text == f"{APP_ID}.desktop"
    assert root.find("provides/binary").text == "k3-explorer"
    assert root.find("provides/mediatype").text == desktop.MIME_TYPE
    assert root.find("developer/name").text
    # no web address is published yet: the shipped file names none (a dead homepage or screenshot is worse)
    assert root.find("url") is None and root.find("screenshots") is None
    assert "http" not in ET.tostring(root, encoding="unicode").replace("http://www.w3.org/XML/1998/namespace", "")
    release = root.find("releases/release")
    version, date = _changelog_release()
    assert (release.get("version"), release.get("date")) == (version, date) and version == app.__version__


def test_a_release_adds_its_address_and_the_generated_screenshots():
    """`make metainfo PROJECT_URL=...` (app/files/desktop_metainfo.py): the homepage, the issue tracker and the
    screenshots `make screenshots` keeps, as the repository's main branch serves them; anything but a plain https
    address is refused in one line."""
    from app.files.desktop_metainfo import metainfo_xml

    assert metainfo_xml("") == (DESKTOP / f"{APP_ID}.metainfo.xml").read_text(encoding="utf-8")
    root = ET.fromstring(metainfo_xml("https://github.com/someone/k3-explorer/").encode())
    assert root.findtext("url[@type='homepage']") == "https://github.com/someone/k3-explorer"
    assert root.findtext("url[@type='bugtracker']") == "https://github.com/someone/k3-explorer/issues"
    shots = root.findall("screenshots/screenshot")
    assert shots[0].get("type") == "default" and [s.get("type") for s in shots[1:]] == [None] * (len(shots) - 1)
    raw = "https://raw.githubusercontent.com/someone/k3-explorer/main/"
    for shot in shots:
        image = shot.findtext("image")
        assert image.startswith(raw) and (ROOT / image.removeprefix(raw)).is_file(), image
        assert shot.findtext("caption")
    other = ET.fromstring(metainfo_xml("https://k3.example.org/app").encode())  # not GitHub: the homepage only
    assert [u.get("type") for u in other.findall("url")] == ["homepage"] and other.find("screenshots") is None
    for bad in ("http://github.com/a/b", "javascript:alert(1)", "https://x.org/<b>", 'https://x.org/"', 3):
        with pytest.raises(ValueError) as err:
            metainfo_xml(bad)
        assert "\n" not in str(err.value)
    done = subprocess.run([sys.executable, "-m", "app.files.desktop_metainfo", "--project-url", "ftp://x"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith("metainfo: the project URL must be"), done.stderr


@pytest.mark.skipif(not shutil.which("appstreamcli"), reason="appstreamcli not installed (apt-get install appstream)")
@pytest.mark.parametrize("project_url", ["", "https://github.com/someone/k3-explorer"])
def test_appstreamcli_validates_the_metainfo(tmp_path, project_url):
    from app.files.desktop_metainfo import metainfo_xml

    path = tmp_path / f"{APP_ID}.metainfo.xml"  # the validator checks the file name against the id
    path.write_text(metainfo_xml(project_url), encoding="utf-8")
    done = subprocess.run(["appstreamcli", "validate", "--no-net", "--format=yaml", str(path)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    found = re.findall(r"severity: (\w+)", done.stdout)
    assert set(found) <= {"pedantic", "info"}, done.stdout  # no warning, no error
    assert "severity: error" not in done.stdout and "severity: warning" not in done.stdout, done.stdout
    # at most: appstream < 1.0 does not know <developer> (the current spec's element), an info; the id's
    # CamelCase last part (as org.gnome.TextEditor), a pedantic remark
    assert set(re.findall(r"severity: (\w+)", done.stdout)) <= {"info", "pedantic"}, done.stdout
    assert set(re.findall(r"- tag: (\S+)", done.stdout)) <= {"unknown-tag", "cid-contains-uppercase-letter"}


def test_install_desktop_and_its_reverse(tmp_path, monkeypatch):
    data = tmp_path / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    program = tmp_path / "my apps" / "k3-explorer"  # a path with a space: quoted in Exec
    written = desktop_install.install(program=str(program))
    ours = sorted(str(p.relative_to(data)) for p in written)
    assert ours == sorted([f"applications/{APP_ID}.desktop", f"metainfo/{APP_ID}.metainfo.xml",
                           f"mime/packages/{APP_ID}.xml", f"icons/hicolor/scalable/apps/{APP_ID}.svg"] +
                          [f"icons/hicolor/{n}x{n}/apps/{APP_ID}.png" for n in desktop.ICON_SIZES])
    entry = data / f"applications/{APP_ID}.desktop"
    assert _entry(entry)["Exec"] == f'"{program}" %f'
    if shutil.which("desktop-file-validate"):
        done = subprocess.run(["desktop-file-validate", str(entry)], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0 and not done.stdout.strip(), done.stdout
    if shutil.which("update-mime-database"):  # the desktop's MIME database now maps *.k3view to the type
        assert f"{desktop.MIME_TYPE}:*.k3view" in (data / "mime/globs2").read_text()
    removed = desktop_install.uninstall()
    assert sorted(removed) == sorted(written)
    assert not [p for p in written if p.exists()]
    if shutil.which("update-mime-database"):
        assert "k3view" not in (data / "mime/globs2").read_text()


def test_exec_quoting_follows_the_desktop_entry_spec():
    assert desktop_install.exec_value("/usr/bin/k3-explorer") == "/usr/bin/k3-explorer %f"
    assert desktop_install.exec_value("/a b/k3") == '"/a b/k3" %f'
    # inside quotes: " ` $ \\ get a backslash, and the string level doubles every backslash
    assert desktop_install.exec_value('/a $b/k"3') == '"/a \\\\$b/k\\\\"3" %f'


def test_the_command_line_installs_for_the_running_command(tmp_path):
    """`python -m app --install-desktop` in this venv: Exec is the venv's console script (beside this Python)."""
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "data"))
    done = subprocess.run([sys.executable, "-m", "app", "--install-desktop"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.strip().splitlines()) == 1 and "--uninstall-desktop" in done.stdout
    exec_ = _entry(tmp_path / f"data/applications/{APP_ID}.desktop")["Exec"]
    beside = Path(sys.executable).parent / "k3-explorer"
    assert exec_ == (f"{beside} %f" if os.access(beside, os.X_OK) else exec_)
    done = subprocess.run([sys.executable, "-m", "app", "--uninstall-desktop"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "removed 12 files" in done.stdout, done.stdout + done.stderr


def test_the_makefile_targets_call_the_app():
    done = subprocess.run(["make", "-n", "-C", str(ROOT), "install-desktop", "uninstall-desktop",
                           "APP_STAMP=pyproject.toml"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "bin/k3-explorer --install-desktop" in done.stdout and "--uninstall-desktop" in done.stdout
    done = subprocess.run(["make", "-n", "-C", str(ROOT), "metainfo", "PROJECT_URL=https://github.com/a/b",
                           "APP_STAMP=pyproject.toml"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "-m app.files.desktop_metainfo --project-url \"https://github.com/a/b\"" in done.stdout
    assert f"--out build/{APP_ID}.metainfo.xml" in done.stdout
