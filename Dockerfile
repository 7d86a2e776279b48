# specdecode-exporter: the sidecar (and simulator) image. Small, non-root, pinned.
FROM python:3.11.11-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY exporter ./exporter
RUN python -m venv /opt/specdecode \
    && /opt/specdecode/bin/pip install --no-cache-dir --disable-pip-version-check .

FROM python:3.11.11-slim-bookworm
LABEL org.opencontainers.image.title="specdecode-exporter" \
      org.opencontainers.image.description="Is speculative decoding paying off? Prometheus sidecar for vLLM" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/specdecode /opt/specdecode
# Every path a service of this image writes exists here, owned by its user: a named volume mounted
# on it starts as a copy of it (owner included), where a path the image lacks is created root-owned
# and the non-root simulator could not write its log (tests/test_compose_files.py checks the list).
RUN useradd --system --uid 10001 --home-dir /var/lib/specdecode --create-home specdecode \
    && install -d -o 10001 -g 10001 /var/log/vllm /var/lib/specdecode-plugin /var/lib/specdecode-secrets
ENV PATH=/opt/specdecode/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 10001
EXPOSE 9847
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9847/-/healthy', timeout=2)"]
ENTRYPOINT ["specdecode-exporter"]
CMD ["serve", "--log", "/var/log/vllm/vllm.log", "--target", "http://vllm:8000/metrics", "--listen", "0.0.0.0:9847"]
