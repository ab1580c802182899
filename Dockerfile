# syntax=docker/dockerfile:1
# The kro controller image: `docker build -t kro:$(version) .` (see docs/install.md).
#
# Two stages. The builder turns this checkout and its dependencies into wheels; the final stage
# installs those wheels and nothing else: no compiler, no source tree, no dev extras. The base is
# Debian (glibc), because the CEL engine and other dependencies ship manylinux wheels only.
# The final image runs as uid 1000 and writes nothing, so it works with readOnlyRootFilesystem.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1
# A compiler, for any dependency without a wheel for the target platform; it stays in this stage.
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md ./
COPY kro ./kro
# The kro wheel plus a wheel for every runtime dependency (no [dev] extras).
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM ${PYTHON_IMAGE}
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONUNBUFFERED=1
RUN groupadd --system --gid 1000 kro \
 && useradd --system --uid 1000 --gid 1000 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin kro
# Install from the builder's wheels only (--no-index): the wheels are bind-mounted, not copied,
# so they never become a layer of this image. pip compiles the .pyc files here, at build time.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --find-links=/wheels kro
# From here on, nothing writes to the filesystem: no bytecode next to the code at run time.
ENV PYTHONDONTWRITEBYTECODE=1
USER 1000:1000
WORKDIR /
# Metrics, health probes (the chart's defaults for --metrics-bind-address and
# --health-probe-bind-address).
EXPOSE 8078 8079
ENTRYPOINT ["kro", "controller"]
