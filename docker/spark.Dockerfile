# The node image plus Java and PySpark, to run the Spark example job (compose profile `spark`).
# Build context: this docker/ directory. Build the node image first (`docker compose build`);
# NODE_IMAGE names it. Java comes from the Debian mirror; PySpark from docker/spark-wheels when the
# host built it there (scripts/build-docker-wheels.sh --spark), else from the package index.
ARG NODE_IMAGE=quorumq:latest
FROM ${NODE_IMAGE}
USER root
# slim images have no man directories, which the JRE's post-install script needs
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update -q \
    && apt-get install -y -q --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/*
COPY pip-install.sh /tmp/spark/
COPY spark-wheels/ /tmp/spark/wheels/
# the installed quorumq's metadata names the Spark extra's requirements
RUN /tmp/spark/pip-install.sh /tmp/spark/wheels "quorumq[spark]" && rm -rf /tmp/spark
USER quorumq
WORKDIR /var/lib/quorumq
ENTRYPOINT ["python3"]
