# A production image of one quorumq node. Configure it with QUORUMQ_* environment variables
# (QUORUMQ_NODE, QUORUMQ_ADVERTISE_RAFT, QUORUMQ_SEEDS, QUORUMQ_ADVERTISE_HTTP, QUORUMQ_CLUSTER_SECRET, ...);
# see docs/use/docker.md. The built-in guest is disabled (a port-forward or sidecar reaches a container's
# loopback). docker/spark.Dockerfile extends it with Java and PySpark for the Spark example.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS install
COPY . /src/
# the client distribution (client/) first: the server depends on it and it is on no package index
RUN python3 -m venv /opt/quorumq && /src/docker/pip-install.sh /src/docker/wheels /src/client /src

FROM ${PYTHON_IMAGE}
RUN useradd --system --uid 10001 --user-group --no-create-home --home-dir /var/lib/quorumq quorumq \
    && install -d -o quorumq -g quorumq -m 0750 /var/lib/quorumq
COPY --from=install /opt/quorumq /opt/quorumq
COPY docker/healthcheck.py /opt/quorumq/healthcheck.py
ENV PATH=/opt/quorumq/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    QUORUMQ_DATA_DIR=/var/lib/quorumq \
    QUORUMQ_HTTP=0.0.0.0:8080 \
    QUORUMQ_RAFT=0.0.0.0:8180 \
    QUORUMQ_LOOPBACK_GUEST=false
USER quorumq
VOLUME ["/var/lib/quorumq"]
EXPOSE 8080 8180
HEALTHCHECK --interval=5s --timeout=3s --start-period=60s --retries=3 \
    CMD ["python3", "/opt/quorumq/healthcheck.py"]
STOPSIGNAL SIGTERM
# Exec form: the server is PID 1 and receives SIGTERM itself, so `docker stop` is a clean stop.
ENTRYPOINT ["quorumq", "server"]
