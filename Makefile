# K3 Explorer — two commands on a fresh Linux machine:
#   make run    create .venv, install the app (no torch: the CPU engine runs on numpy), launch it
#   make test   install what the tests need (Debian packages when root, PyTorch's CPU build) and run the suite
#               under Xvfb; the slow tests (a pip install into a fresh venv, the bundle, the warm-up child) only
#               with `make test K3_SLOW=1`, as .ci/run runs it; the repeated-object survey only with K3_SURVEY=1
# TORCH: the torch requirement to install. Empty by default for `make run`; `make run TORCH=torch` for the GPU
# backend (CUDA build). `make test` installs $(TEST_TORCH) (TORCH when given, else torch==2.13.0 from PyTorch's
# CPU index, TORCH_INDEX). The choice installed last is recorded in $(TORCH_FILE) and compared on every run: a
# different choice re-installs torch.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
TORCH ?=
K3_SLOW ?=  # 1: `make test` runs the tests marked slow too (.ci/run sets it; tests/conftest.py reads it)
export K3_SLOW
TEST_TORCH := $(if $(TORCH),$(TORCH),torch==2.13.0)
# PyTorch's CPU wheels (PyPI's torch for Linux is the CUDA build: torch + triton + ~15 nvidia-* wheels, several
# GB). Used for the default TEST_TORCH only; empty: pip's configured index alone.
TORCH_INDEX ?= $(if $(TORCH),,https://download.pytorch.org/whl/cpu)
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
APP_STAMP := $(VENV)/.k3-app-installed
STAMP := $(VENV)/.k3-installed
TORCH_FILE := $(VENV)/.k3-torch

# $(call torch_step,REQ): install torch REQ unless it is what $(TORCH_FILE) records (empty REQ: leave torch as it
# is). A changed recorded choice uninstalls first: pip would otherwise keep e.g. 2.13.0+cpu for a plain "torch".
# With TORCH_INDEX, torch comes from that index (5 s to answer, no retries); an index that cannot be reached (no
# network, a machine that reaches only its own package mirror) or that fails the install: one line, and the
# same requirement from pip's configured index.
define torch_step
	@want='$(1)'; have="$$(cat $(TORCH_FILE) 2>/dev/null)"; index='$(TORCH_INDEX)'; \
	if [ -n "$$want" ] && [ "$$want" != "$$have" ]; then \
	  echo "torch: installing $$want (was: $${have:-none recorded})"; \
	  if [ -n "$$have" ]; then $(PIP) uninstall -y -q torch >/dev/null 2>&1; fi; \
	  if [ -n "$$index" ] && $(PY) -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + '/torch/', timeout=5)" "$$index" >/dev/null 2>&1 \
	     && $(PIP) install -q --retries 0 --timeout 15 --index-url "$$index" "$$want"; then :; \
	  else \
	    if [ -n "$$index" ]; then echo "torch: $$index cannot be reached: $$want from pip's configured index (on PyPI that is the CUDA build)"; fi; \
	    $(PIP) install -q "$$want" || exit 1; \
	  fi; \
	  printf '%s' "$$want" > $(TORCH_FILE); \
	fi
endef

# A .venv without a working python or pip (made where python3-venv was missing, or by an interrupted run, or its
# Python removed) is removed and made again, with one line saying so; a failed `python3 -m venv` leaves none.
define venv_step
	@if [ -e $(VENV) ] && ! $(PIP) --version >/dev/null 2>&1; then \
	  echo "venv: $(VENV) has no working python or pip (half made): making it again"; rm -rf $(VENV); fi
	@if [ ! -e $(VENV) ]; then $(PYTHON) -m venv $(VENV) && $(PIP) --version >/dev/null 2>&1 || { rm -rf $(VENV); \
	  echo "venv: '$(PYTHON) -m venv' failed; on Debian/Ubuntu: sudo apt-get install -y python3-venv"; exit 1; }; fi
endef

# Debian packages (docs/spec/platform.md). RUN_DEB_PACKAGES: what Qt's xcb platform, QtGui and Mesa GL need to
# open a window (scene/display.py's QT_XCB_LIBRARIES names the same libraries); the tests add Xvfb, xauth and
# the CJK fonts (Korean text in rendered images).
RUN_DEB_PACKAGES := libgl1 libegl1 libglib2.0-0 libfontconfig1 libfreetype6 libdbus-1-3 libx11-6 libx11-xcb1 \
  libxkbcommon0 libxkbcommon-x11-0 libxcb1 libxcb-cursor0 libxcb-glx0 libxcb-icccm4 libxcb-image0 \
  libxcb-keysyms1 libxcb-randr0 libxcb-render0 libxcb-render-util0 libxcb-shape0 libxcb-shm0 \
  libxcb-sync1 libxcb-util1 libxcb-xfixes0 libxcb-xkb1
DEB_PACKAGES := $(RUN_DEB_PACKAGES) xvfb xauth fonts-noto-cjk

# $(call sysdeps_step,PACKAGES): every PACKAGE installed? Else install the missing ones as root, or print the one
# `sudo apt-get install` line that would and fail (so `make run` stops before launching). Not Debian (no
# dpkg-query): a note, and on.
define sysdeps_step
	@if ! command -v dpkg-query >/dev/null 2>&1; then \
	  echo "sysdeps: not Debian/Ubuntu (no dpkg-query): not checked; install the xcb, GL and font libraries Qt needs"; exit 0; fi; \
	missing=$$(for p in $(1); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q "install ok installed" || echo $$p; done); \
	missing=$$(echo $$missing); \
	if [ -z "$$missing" ]; then echo "sysdeps: all Debian packages present"; \
	elif [ "$$(id -u)" = 0 ]; then \
	  echo "sysdeps: installing $$missing"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	else \
	  echo "sysdeps: missing Debian packages; run:"; \
	  echo "  sudo apt-get install -y --no-install-recommends $$missing"; exit 1; fi
endef

.PHONY: run test venv venv-check torch sysdeps run-sysdeps install-desktop uninstall-desktop bench clean screenshots metainfo

# The window comes up at once on the numpy operators; on a first start (no compiled kernels in the cache) a
# low-priority child compiles them (~50 s of CPU on 2 cores) and the engine switches when it is done.
run: run-sysdeps venv-check $(APP_STAMP)
	$(call torch_step,$(TORCH))
	@$(PY) -c "import sys; from k3_explorer.compute import fused_nb; sys.exit(fused_nb.enabled() and not fused_nb.cache_ready())" \
	  || echo "run: first start: the engine's kernels compile in the background (about a minute on 2 cores); the window works meanwhile"
	$(VENV)/bin/k3-explorer

venv: venv-check $(STAMP)

venv-check:
	$(call venv_step)

# torch alone into .venv: $(TEST_TORCH) (what `make test` installs), e.g. `make torch TORCH=torch` for CUDA.
torch: venv-check
	$(call torch_step,$(TEST_TORCH))

$(APP_STAMP): pyproject.toml
	$(call venv_step)
	@$(PY) -c "import sys, pip; sys.exit(tuple(int(p) for p in pip.__version__.split('.')[:2]) < (21, 3))" \
	  || $(PIP) install -q --upgrade pip  # only a pip without editable pyproject installs (PEP 660, pip 21.3)
	$(PIP) install -q --no-compile -e ".[video]"  # no .pyc for ~600 MB up front; make test compiles: $(STAMP)
	touch $(APP_STAMP)

# The test venv's packages byte-compiled once (what make run's --no-compile left as source): with
# PYTHONDONTWRITEBYTECODE set, as in these machines' shells, Python never writes a .pyc, so each of the suite's ~100 child
# processes (exports, the CLI contract, the GL and torch-free checks) compiled numba, PyOpenGL, numpy and
# pyqtgraph from source again: an export child 3.3 -> 1.8 s of CPU. compileall writes whatever that variable says;
# a file it cannot compile (a package's own syntax-error fixtures) is skipped, as pip skips it.
$(STAMP): $(APP_STAMP)
	$(call torch_step,$(TEST_TORCH))
	$(PIP) install -q -e ".[test]"
	@sp="$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"; \
	  if [ -d "$$sp" ]; then $(PY) -m compileall -q -j 0 "$$sp" >/dev/null 2>&1 || true; fi
	touch $(STAMP)

# Debian packages for Qt's xcb platform, Mesa GL, Xvfb and CJK fonts (the tests), or for the window alone (run).
sysdeps:
	$(call sysdeps_step,$(DEB_PACKAGES))

run-sysdeps:
	$(call sysdeps_step,$(RUN_DEB_PACKAGES))

# The suite in two parts: first on PYTEST_WORKERS pytest-xdist workers, one test file per worker at a time
# (--dist loadfile keeps a file's module-scoped window in one process; PYTEST_WORKERS=0 runs it in this process),
# then the tests marked `alone` (they time the UI thread, tests/conftest.py) with nothing beside them. Both parts
# always run; the target fails when either fails (pytest's 5, "no test selected", counts as passed in one part:
# PYTEST_ARGS may name a file with no test of that part; in both parts it fails, as a run that tests nothing).
# A worker that crashes ends the parallel part as failed (--max-worker-restart=0): with a replacement worker,
# pytest-xdist 3.8 hung after a crash until killed (a dummy os.abort() test: rc 124 after 60 s, vs rc 1 in 5 s).
PYTEST_WORKERS ?= 2
# PYTHONDONTWRITEBYTECODE emptied for the tests: each pytest process (two workers, then the alone part) otherwise
# rewrites and compiles every test module's asserts again (collection 4.5 -> 12 s of CPU each), and their child
# processes compile what they import; the .pyc go to __pycache__ folders git ignores.
PYTEST := PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -p no:cacheprovider
test: sysdeps venv-check $(STAMP)
	$(call torch_step,$(TEST_TORCH))
	@$(PY) -m compileall -q -j 0 app compute scene >/dev/null 2>&1 || true  # the checkout's own .pyc: see $(STAMP)
	@$(PY) -m app.engine.kernel_warmup --if-needed || true  # the tests' default engine then runs the compiled pass, as the app's
	@$(MAKE) --no-print-directory test-parts

# the two parts alone (tests/app/test_setup_makefile.py runs this with a fake python)
.PHONY: test-parts
test-parts:
	@$(PYTEST) -n $(PYTEST_WORKERS) --dist loadfile --max-worker-restart=0 -m "not alone" $(PYTEST_ARGS); a=$$?; \
	echo "--- the tests marked alone (they time the UI thread), with no other test process beside them"; \
	$(PYTEST) -m alone $(PYTEST_ARGS); b=$$?; \
	if [ $$a = 5 ] && [ $$b = 5 ]; then echo "make test: no test selected"; exit 5; fi; \
	if { [ $$a != 0 ] && [ $$a != 5 ]; } || { [ $$b != 0 ] && [ $$b != 5 ]; }; then \
	  echo "make test: the parallel part exited $$a, the alone part $$b"; exit 1; fi

# The shipped trained toy from scratch: compute.training.train's recipe v2 (seed 0, one torch thread, ATen's AVX2 kernels:
# compute/training/train.py pins them), written over $(WEIGHTS_FILE) (a regular file or a new one: a device, FIFO, link or
# folder there is refused before training starts; the file keeps its mode), then --verify. Bit for bit only on
# the CPU class that made the shipped file (x86_64, AuthenticAMD, AVX2 without AVX-512: compute/training/cpu_info.py):
# float32 matmuls go through MKL, whose kernels differ between Intel and AMD and by ISA (issue 45: on an Intel
# Xeon with AVX-512 the loss differs by 2e-5 at step 1 and 1e-2 at step 2; no MKL setting tried made them agree).
# There --verify compares the weights' digest with the one the repository records (compute/weights.py
# SHIPPED_TOY; assets/weights/SHA256SUMS is the shipped file's sha256); on any other CPU class it scores the
# rebuilt toy (every-prefix greedy and sampled answers) against the shipped file's scores within a stated
# tolerance (compute/training/rebuild_check.py), and says which check it ran. Checked: the digest path and the recipe's
# first 12 losses on an AMD EPYC without AVX-512 (2026-12-05); the score path's branch with a simulated CPU class
# only (no Intel machine). Measured in a clean clone on a quiet 2-core machine (AVX2, 2026-12-04): 16.8 min in all
# (training 784 s, the venv and the scoring 225 s).
# MODEL=<bundled config name>: that model's shipped toy (compute/weights.py SHIPPED_TOYS), the same recipe family
# with that config, into its own file, verified against its own recorded digest; plain `make weights` is K3's.
# RECIPE: v2 for K3, v2-linear for Kimi Linear (v2, then the stage again at twice the lr), v2-mla for the all-MLA
# DeepSeek-V3 and Kimi K2 (v2-linear, then 400 steps at lr 2e-3): compute/training/train_recipes.py says why.
MODEL ?= kimi-k3
WEIGHTS_FILE ?= assets/weights/$(if $(filter kimi-k3,$(MODEL)),toy-k3-v2.npz,toy-$(MODEL)-v2.npz)
RECIPE ?= $(if $(filter kimi-linear-48b,$(MODEL)),v2-linear,$(if $(filter deepseek-v3 kimi-k2,$(MODEL)),v2-mla,v2))
.PHONY: weights
weights: $(STAMP)
	$(call torch_step,$(TEST_TORCH))
	$(PY) -m compute.training.train --recipe $(RECIPE) --seed 0 --threads 1 --config $(MODEL) --out $(WEIGHTS_FILE)
	$(PY) -m compute.training.train --verify $(WEIGHTS_FILE)

# The launcher entry, icons, AppStream metainfo and the *.k3view MIME type in the user's XDG data folder (no
# root): the app menu then lists K3 Explorer. The app does it (app/files/desktop_install.py), as for pip and bundle
# users (`k3-explorer --install-desktop`); Exec names this checkout's .venv/bin/k3-explorer.
install-desktop: venv-check $(APP_STAMP)
	$(VENV)/bin/k3-explorer --install-desktop

# The AppStream metainfo for a software centre, with the published address (none is published yet, so the shipped
# one names none): homepage, issue tracker and screenshots, e.g. make metainfo PROJECT_URL=https://github.com/OWNER/REPO
PROJECT_URL ?=
metainfo: venv-check $(APP_STAMP)
	@test -n "$(PROJECT_URL)" || { echo "metainfo: set PROJECT_URL=https://... (the published address)"; exit 2; }
	$(PY) -m app.files.desktop_metainfo --project-url "$(PROJECT_URL)" --out build/io.github.k3explorer.K3Explorer.metainfo.xml

uninstall-desktop:
	@if [ -x $(VENV)/bin/k3-explorer ]; then $(VENV)/bin/k3-explorer --uninstall-desktop; \
	else $(PYTHON) -m app --uninstall-desktop; fi

# The user guide's pictures (docs/screenshots/) from the running app: the real window under its own Xvfb when
# there is no display, the whole window through the app's export, then each panel (docs/make_screenshots.py).
screenshots: venv-check $(APP_STAMP)
	$(PY) docs/make_screenshots.py

bench: $(STAMP)
	$(call torch_step,$(TEST_TORCH))
	$(PY) bench/engine.py
	$(PY) bench/scene.py
	$(PY) bench/app.py
	$(PY) bench/experts.py

# Standalone one-folder build (PyInstaller, .ci/k3-explorer.spec): dist/k3-explorer/k3-explorer runs the app, its
# export and its numba warm-up (--warm-kernels) without Python or this checkout; copy or archive dist/k3-explorer/.
# PyInstaller gets its own venv (BUNDLE_VENV, pins in .ci/bundle-requirements.txt) next to the app's dependencies
# from pyproject.toml; the app's .venv is never touched. Needs no torch (the bundle runs the CPU engine).
BUNDLE_VENV := build/bundle-venv
BUNDLE_STAMP := $(BUNDLE_VENV)/.k3-bundle-installed
.PHONY: bundle

$(BUNDLE_STAMP): .ci/bundle-requirements.txt pyproject.toml
	test -x $(BUNDLE_VENV)/bin/python || $(PYTHON) -m venv $(BUNDLE_VENV)
	$(BUNDLE_VENV)/bin/python -m pip install -q -r .ci/bundle-requirements.txt -e ".[video]"
	touch $@

BUNDLE_DEB_PACKAGES := binutils  # objdump: PyInstaller reads the binaries' dependencies with it

bundle: $(BUNDLE_STAMP)
	$(call sysdeps_step,$(BUNDLE_DEB_PACKAGES))
	$(BUNDLE_VENV)/bin/python -m PyInstaller --noconfirm --clean --log-level WARN --distpath dist \
	  --workpath build/pyinstaller .ci/k3-explorer.spec
	@echo "bundle: dist/k3-explorer/k3-explorer ($$(du -sh dist/k3-explorer | cut -f1)); first start: dist/k3-explorer/k3-explorer --warm-kernels"

# The measured alternative to `make bundle` (README "Standalone build"): pyside6-deploy (PySide6's tool, Nuitka
# --standalone: every module compiled to C) into build/deploy-work/. Leaves numba out (Nuitka cannot run it
# standalone), so the numpy operators would run. Config .ci/pysidedeploy.spec, filled in on a copy (pyside6-deploy
# writes its config back); own venv (DEPLOY_VENV, .ci/deploy-requirements.txt). Slow: 803 C files, not finished
# within 34 min on the shared 2-core machine (README), so nothing here depends on it.
DEPLOY_VENV := build/deploy-venv
DEPLOY_STAMP := $(DEPLOY_VENV)/.k3-deploy-installed
.PHONY: deploy-bundle

$(DEPLOY_STAMP): .ci/deploy-requirements.txt pyproject.toml
	test -x $(DEPLOY_VENV)/bin/python || $(PYTHON) -m venv $(DEPLOY_VENV)
	$(DEPLOY_VENV)/bin/python -m pip install -q -r .ci/deploy-requirements.txt -e .
	touch $@

deploy-bundle: $(DEPLOY_STAMP)
	$(call sysdeps_step,gcc patchelf binutils)
	mkdir -p build/deploy-spec
	grep -v '^#' .ci/pysidedeploy.spec | sed 's|@ROOT@|$(CURDIR)|g' > build/deploy-spec/pysidedeploy.spec
	cd build/deploy-spec && PYTHONPATH=$(CURDIR) $(CURDIR)/$(DEPLOY_VENV)/bin/pyside6-deploy -c pysidedeploy.spec \
	  --no-install -f --extra-ignore-dirs=tests,bench,build,dist,docs,.venv
	@echo "deploy-bundle: Nuitka's output is in build/deploy-work/"

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache
