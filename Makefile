# K3 Explorer — two commands on a fresh Linux machine:
#   make run    create .venv, install, launch the app
#   make test   install what the tests need (Debian packages when root) and run the whole suite under Xvfb
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.k3-installed

DEB_PACKAGES := libgl1 libegl1 libglib2.0-0 libfontconfig1 libfreetype6 libdbus-1-3 libx11-6 libx11-xcb1 \
  libxkbcommon0 libxkbcommon-x11-0 libxcb1 libxcb-cursor0 libxcb-glx0 libxcb-icccm4 libxcb-image0 \
  libxcb-keysyms1 libxcb-randr0 libxcb-render0 libxcb-render-util0 libxcb-shape0 libxcb-shm0 \
  libxcb-sync1 libxcb-util1 libxcb-xfixes0 libxcb-xkb1 xvfb xauth fonts-noto-cjk

.PHONY: run test venv sysdeps bench clean

run: $(STAMP)
	$(VENV)/bin/k3-explorer

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "$(TORCH)"
	$(PIP) install -q -e ".[test]"
	touch $(STAMP)

# Debian packages for Qt's xcb platform, Mesa GL, Xvfb and CJK fonts (spec/platform.md).
sysdeps:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q "install ok installed" || echo $$p; done); \
	if [ -z "$$missing" ]; then echo "sysdeps: all Debian packages present"; \
	elif [ "$$(id -u)" = 0 ]; then \
	  echo "sysdeps: installing $$missing"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	else \
	  echo "sysdeps: missing Debian packages; run:"; \
	  echo "  sudo apt-get install -y --no-install-recommends $$missing"; exit 1; fi

test: sysdeps $(STAMP)
	$(PY) -m pytest -p no:cacheprovider $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) bench/engine.py
	$(PY) bench/scene.py
	$(PY) bench/app.py
	$(PY) bench/experts.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
