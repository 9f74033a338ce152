# K3 Explorer — two commands on a fresh Linux machine:
#   make run    create .venv, install the app (no torch: the CPU engine runs on numpy), launch it
#   make test   install what the tests need (Debian packages when root, the CPU torch wheel) and run the whole
#               suite under Xvfb
# TORCH: the torch requirement to install. Empty by default for `make run`; `make run TORCH=torch` for the GPU
# backend (CUDA build). `make test` installs $(TEST_TORCH) (TORCH when given, else the CPU wheel). The choice
# installed last is recorded in $(TORCH_FILE) and compared on every run: a different choice re-installs torch.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
TORCH ?=
TEST_TORCH := $(if $(TORCH),$(TORCH),torch==2.13.0)
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
APP_STAMP := $(VENV)/.k3-app-installed
STAMP := $(VENV)/.k3-installed
TORCH_FILE := $(VENV)/.k3-torch

# $(call torch_step,REQ): install torch REQ unless it is what $(TORCH_FILE) records (empty REQ: leave torch as it
# is). A changed recorded choice uninstalls first: pip would otherwise keep e.g. 2.13.0+cpu for a plain "torch".
define torch_step
	@want='$(1)'; have="$$(cat $(TORCH_FILE) 2>/dev/null)"; \
	if [ -n "$$want" ] && [ "$$want" != "$$have" ]; then \
	  echo "torch: installing $$want (was: $${have:-none recorded})"; \
	  if [ -n "$$have" ]; then $(PIP) uninstall -y -q torch >/dev/null 2>&1; fi; \
	  $(PIP) install -q "$$want" && printf '%s' "$$want" > $(TORCH_FILE); \
	fi
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

.PHONY: run test venv sysdeps run-sysdeps install-desktop uninstall-desktop bench clean

run: run-sysdeps $(APP_STAMP)
	$(call torch_step,$(TORCH))
	@$(VENV)/bin/k3-explorer --warm-kernels --if-needed || true  # the installed app's numba kernels into its disk cache (~30 s once)
	$(VENV)/bin/k3-explorer

venv: $(STAMP)

$(APP_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e .
	touch $(APP_STAMP)

$(STAMP): $(APP_STAMP)
	$(call torch_step,$(TEST_TORCH))
	$(PIP) install -q -e ".[test]"
	touch $(STAMP)

# Debian packages for Qt's xcb platform, Mesa GL, Xvfb and CJK fonts (the tests), or for the window alone (run).
sysdeps:
	$(call sysdeps_step,$(DEB_PACKAGES))

run-sysdeps:
	$(call sysdeps_step,$(RUN_DEB_PACKAGES))

test: sysdeps $(STAMP)
	$(call torch_step,$(TEST_TORCH))
	@$(PY) -m app.kernel_warmup --if-needed || true  # the tests' default engine then runs the compiled pass, as the app's
	$(PY) -m pytest -p no:cacheprovider $(PYTEST_ARGS)

# The shipped trained toy from scratch: compute.train's recipe v2 (seed 0, one torch thread, ATen's AVX2 kernels:
# compute/train.py pins them, since AVX-512's round differently), written over $(WEIGHTS_FILE), then --verify: its
# weights against the digest the repository records (compute/weights.py SHIPPED_TOY; assets/weights/SHA256SUMS
# is the shipped file's sha256: its metadata also names the commit it was built at). Measured in a clean clone
# on a quiet 2-core machine (AVX2, 2026-12-04): 16.8 min in all (training 784 s, the venv and the scoring 225 s).
# MODEL=<bundled config name>: that model's shipped toy (compute/weights.py SHIPPED_TOYS), the same recipe family with
# that config, into its own file, verified against its own recorded digest; plain `make weights` is K3's.
MODEL ?= kimi-k3
WEIGHTS_FILE ?= assets/weights/$(if $(filter kimi-k3,$(MODEL)),toy-k3-v2.npz,toy-$(MODEL)-v2.npz)
.PHONY: weights
weights: $(STAMP)
	$(call torch_step,$(TEST_TORCH))
	$(PY) -m compute.train --recipe v2 --seed 0 --threads 1 --config $(MODEL) --out $(WEIGHTS_FILE)
	$(PY) -m compute.train --verify $(WEIGHTS_FILE)

# The launcher entry, icons and AppStream metainfo in the user's XDG data folder (no root): the app menu then
# lists K3 Explorer. Exec names this checkout's .venv/bin/k3-explorer when it exists, else `k3-explorer` on PATH.
# No cache is written (no MimeType to index; a user-level icon-theme.cache would hide icons added later).
DATA_HOME := $(or $(XDG_DATA_HOME),$(HOME)/.local/share)
DESKTOP_DIR := assets/desktop
ICON_SIZES := 16 24 32 48 64 128 256 512
K3_BIN := $(if $(wildcard $(VENV)/bin/k3-explorer),$(abspath $(VENV))/bin/k3-explorer,k3-explorer)

install-desktop:
	install -d "$(DATA_HOME)/applications" "$(DATA_HOME)/metainfo" "$(DATA_HOME)/icons/hicolor/scalable/apps"
	sed 's|^Exec=k3-explorer |Exec=$(K3_BIN) |' $(DESKTOP_DIR)/k3-explorer.desktop > "$(DATA_HOME)/applications/k3-explorer.desktop"
	install -m 644 $(DESKTOP_DIR)/k3-explorer.metainfo.xml "$(DATA_HOME)/metainfo/k3-explorer.metainfo.xml"
	install -m 644 $(DESKTOP_DIR)/k3-explorer.svg "$(DATA_HOME)/icons/hicolor/scalable/apps/k3-explorer.svg"
	@for n in $(ICON_SIZES); do \
	  install -D -m 644 $(DESKTOP_DIR)/icons/k3-explorer-$$n.png "$(DATA_HOME)/icons/hicolor/$${n}x$${n}/apps/k3-explorer.png"; done
	@echo "install-desktop: K3 Explorer in the app menu (Exec=$(K3_BIN)); undo: make uninstall-desktop"

uninstall-desktop:
	rm -f "$(DATA_HOME)/applications/k3-explorer.desktop" "$(DATA_HOME)/metainfo/k3-explorer.metainfo.xml" \
	  "$(DATA_HOME)/icons/hicolor/scalable/apps/k3-explorer.svg"
	@for n in $(ICON_SIZES); do rm -f "$(DATA_HOME)/icons/hicolor/$${n}x$${n}/apps/k3-explorer.png"; done

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
	$(BUNDLE_VENV)/bin/python -m pip install -q -r .ci/bundle-requirements.txt -e .
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
