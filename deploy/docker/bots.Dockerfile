# syntax=docker/dockerfile:1
# The sample bots as external bots: each container is one bot that dials a referee.
#
#   docker build -f deploy/docker/bots.Dockerfile -t sticheln-bots .   (repository root)
#   docker run --rm -e STICHELN_REFEREE=host:50051 -e STICHELN_TOKEN=... sticheln-bots
#        (the Node.js bot; append e.g. `python3 python/heuristic_bot.py` for another)
#
# Three stages: npm installs the Node bot's pinned packages in the official Node image,
# pip builds the Python bots' virtualenv, and the final image takes the node binary, the
# packages and the virtualenv, without npm, pip caches or a compiler.

FROM node:22-bookworm-slim AS node
WORKDIR /bots/sample_bots/node
COPY sample_bots/node/package.json sample_bots/node/package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund --loglevel=error

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY referee ./referee
COPY sticheln ./sticheln
# The Monte Carlo bot simulates with the referee's rules engine; the others need only
# grpcio, protobuf and the generated stubs. Pure Python here: no compiler in this stage.
RUN python -m venv /opt/venv \
 && STICHELN_PURE_PYTHON=1 /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check .

FROM python:3.11-slim
# The official image's node binary needs only glibc and libstdc++.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libstdc++6 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10002 bot \
 && useradd --system --uid 10002 --gid 10002 --create-home --home-dir /home/bot bot
COPY --from=node /usr/local/bin/node /usr/local/bin/node
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /bots/sample_bots
COPY proto /bots/proto
COPY sample_bots/python ./python
COPY sample_bots/node/bot.js sample_bots/node/minimal_bot.js sample_bots/node/package.json ./node/
COPY sample_bots/node/proto ./node/proto
COPY --from=node /bots/sample_bots/node/node_modules ./node/node_modules
USER 10002:10002
# Healthy while the referee this bot plays on answers its gRPC health check.
HEALTHCHECK --interval=15s --timeout=5s --start-period=10s --retries=3 \
  CMD python -m referee.runtime.healthcheck "$STICHELN_REFEREE"
CMD ["node", "node/bot.js"]
