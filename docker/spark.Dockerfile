# The node image plus Java and PySpark, to run the Spark example job (compose profile `spark`).
# Build the node image first (`docker compose build`); NODE_IMAGE names it. Unlike the node image,
# this build needs the Debian mirror (Java) and the package index (PySpark, unless in docker/wheels).
ARG NODE_IMAGE=quorumq:latest
FROM ${NODE_IMAGE}
USER root
RUN apt-get update -q \
    && apt-get install -y -q --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/*
COPY . /src/
RUN pip install --no-cache-dir --disable-pip-version-check --find-links /src/docker/wheels "/src[spark]" \
    && rm -rf /src
USER quorumq
WORKDIR /var/lib/quorumq
ENTRYPOINT ["python3"]
