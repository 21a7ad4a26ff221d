# syntax=docker/dockerfile:1
# The referee, with the Python sample bots it starts as command bots.
#
#   docker build -f deploy/docker/referee.Dockerfile -t sticheln-referee .   (repository root)
#   docker run --rm -p 9464:9464 sticheln-referee       (plays deploy/league.toml)
#
# Two stages: the first compiles the rules engine with mypyc (needs a C compiler), the
# second copies only the finished virtualenv, so no compiler ends up in the image.

FROM python:3.11-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY referee ./referee
COPY sticheln ./sticheln
# psycopg is the PostgreSQL driver for `--db postgresql://...` (sharded tournaments) and
# for a league whose database is PostgreSQL.
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check . "psycopg[binary]>=3.1"

FROM python:3.11-slim
# The bots' jail: bubblewrap makes each bot's sandbox, libseccomp2 compiles its system-call
# filter (through pyseccomp), setpriv (util-linux, already here) drops a root referee's bots
# to uids of their own. What the container must allow for it: docs/operations.md.
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap libseccomp2 \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 referee \
 && useradd --system --uid 10001 --gid 10001 --create-home --home-dir /home/referee referee
COPY --from=build /opt/venv /opt/venv
# The referee starts bots with "python3" from its own virtualenv first on PATH.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /app
COPY sample_bots/python ./sample_bots/python
COPY sample_bots/random.toml sample_bots/heuristic.toml sample_bots/montecarlo.toml sample_bots/minimal-python.toml ./sample_bots/
COPY deploy/league.toml ./deploy/league.toml
COPY deploy/bots ./deploy/bots
RUN mkdir -p /app/results && chown referee:referee /app/results
VOLUME ["/app/results"]
USER 10001:10001
# 50051: gRPC (bots, health, reflection); 9464: Prometheus metrics.
EXPOSE 50051 9464
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python", "-m", "referee.runtime.healthcheck", "127.0.0.1:50051"]
ENTRYPOINT ["referee"]
# A fixed --port: the health check knows where to ask, and every match runs in this one
# process (scale out with shards, see docs/sharding.md). --metrics-linger inf keeps the
# final metrics and the health service up after the tournament, until the container stops.
# --log-level info: the log is JSON lines, progress included, for the log collector.
CMD ["tournament", "deploy/league.toml", "--host", "0.0.0.0", "--port", "50051", \
     "--metrics-addr", "0.0.0.0", "--metrics-port", "9464", "--metrics-linger", "inf", \
     "--log-level", "info"]
