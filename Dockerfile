# syntax=docker/dockerfile:1
# The kro controller image: `docker build -t kro:$(version) .` (see docs/install.md).
#
# Two stages. The builder turns this checkout and its dependencies into wheels; the final stage
# installs those wheels and nothing else: no compiler, no source tree, no dev extras. The base is
# Debian (glibc), because the CEL engine and other dependencies ship manylinux wheels only.
# The final image runs as uid 1000 and writes nothing, so it works with readOnlyRootFilesystem.
#
# PYTHON_IMAGE may be the official python image (the default) or plain Debian 12 with Debian's
# python3 and python3-venv (what `make image` builds when no registry serves base images). The
# steps below work on both: they call `python3` (the official image has no Debian python3, Debian
# has no `python`), never a system `pip` (Debian has none, and its python3 refuses system-wide
# installs), and install into a virtual environment at /opt/kro instead.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1
# A compiler, for any dependency without a wheel for the target platform; it stays in this stage.
# The official image carries Python's C headers; Debian's python3 needs python3-dev for them.
RUN include="$(python3 -c 'import sysconfig; print(sysconfig.get_path("include"))')" \
 && if [ -e "$include/Python.h" ]; then headers=; else headers=python3-dev; fi \
 && apt-get update \
 && apt-get install -y --no-install-recommends build-essential $headers \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY kro ./kro
# The kro wheel plus a wheel for every runtime dependency (no [dev] extras), with the pip of a
# throwaway virtual environment, and a list of their checksums for the final stage.
RUN python3 -m venv /opt/build \
 && /opt/build/bin/pip wheel --no-cache-dir --wheel-dir /wheels . \
 && cd /wheels && sha256sum -- *.whl > /wheels.sha256

FROM ${PYTHON_IMAGE}
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONUNBUFFERED=1
RUN groupadd --system --gid 1000 kro \
 && useradd --system --uid 1000 --gid 1000 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin kro
# Which wheels the image holds. Copied before the install so that the install's layer cache
# follows the wheels: podman (buildah 1.28) keys a cached RUN on its text only, not on what a
# `--mount=from=builder` brings, and would otherwise keep installing yesterday's kro.
COPY --from=builder /wheels.sha256 /opt/kro/wheels.sha256
# Install from the builder's wheels only (--no-index): the wheels are bind-mounted, not copied,
# so they never become a layer of this image. pip compiles the .pyc files here, at build time.
# Then pip and setuptools leave the environment: nothing installs anything at run time.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    python3 -m venv /opt/kro \
 && /opt/kro/bin/pip install --no-cache-dir --no-index --find-links=/wheels kro \
 && /opt/kro/bin/python -m pip uninstall --yes --quiet pip setuptools
ENV PATH=/opt/kro/bin:$PATH
# From here on, nothing writes to the filesystem: no bytecode next to the code at run time.
ENV PYTHONDONTWRITEBYTECODE=1
USER 1000:1000
WORKDIR /
# Metrics, health probes (the chart's defaults for --metrics-bind-address and
# --health-probe-bind-address).
EXPOSE 8078 8079
ENTRYPOINT ["kro", "controller"]
