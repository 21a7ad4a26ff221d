# syntax=docker/dockerfile:1
# The hosted league's image: the referee as a league that takes uploaded bots (`referee
# serve`, which builds and validates them) and as its workers (`referee league worker`,
# which play them), with both jail tiers and what a hosted bot may use to build and run.
#
#   docker build -f deploy/docker/league.Dockerfile -t sticheln-league .   (repository root)
#
# Used by deploy/compose.yaml's `league` profile and deploy/kubernetes/league/. What it
# holds, its size and what a container of it needs: docs/hosting.md ("The league's image").
#
# Two stages: the first compiles the rules engine with mypyc, the second holds the finished
# virtualenv and Debian's packages. Debian 12 (bookworm), with runsc (the gVisor tier)
# from bookworm-backports.

FROM python:3.11-slim-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY referee ./referee
COPY sticheln ./sticheln
# psycopg: the league's PostgreSQL database, which its workers share.
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check . "psycopg[binary]>=3.1"

FROM python:3.11-slim-bookworm
# The jail: runsc (gVisor, the strongest tier: a root referee gives each bot an application
# kernel of its own), bubblewrap and libseccomp2 (the other tier, and the filter). runsc
# comes from bookworm-backports (20240729): its systrap platform answers a bot's system
# call in about 2 µs where bookworm's runsc (20221219), without KVM, has only ptrace, some
# 50 µs (docs/hosting.md); only runsc is taken from backports.
# What hosted bots build and run with (docs/hosting.md, the kits of sample_bots/):
#   Python  the referee's own interpreter (grpcio, protobuf, the sticheln.v1 stubs)
#   Node    Debian's nodejs (18); a bot brings its node_modules
#   C++     cmake, g++, pkg-config, gRPC and protobuf's development files, protoc and its
#           gRPC plugin
#   Go      Debian's Go with its gRPC and protobuf packages (/usr/share/gocode), protoc's
#           Go plugins: builds offline, as the jail has no network
#   Java    Debian's OpenJDK 17 (headless), grpc-java and the jars it runs with (Netty,
#           protobuf, Guava, perfmark, gson, which libgrpc-java does not depend on), the
#           stubs' annotation jar, protoc's Java gRPC plugin
RUN echo 'deb http://deb.debian.org/debian bookworm-backports main' \
      > /etc/apt/sources.list.d/bookworm-backports.list \
 && apt-get update \
 && apt-get install -y --no-install-recommends -t bookworm-backports runsc \
 && apt-get install -y --no-install-recommends \
      bubblewrap libseccomp2 \
      nodejs \
      cmake make g++ pkg-config libgrpc++-dev libprotobuf-dev libssl-dev \
      protobuf-compiler protobuf-compiler-grpc \
      golang-go golang-google-grpc-dev golang-github-golang-protobuf-1-5-dev \
      protoc-gen-go protoc-gen-go-grpc \
      openjdk-17-jdk-headless libgrpc-java libprotobuf-java libnetty-java libguava-java \
      libperfmark-java libgoogle-gson-java libgeronimo-annotation-1.3-spec-java \
      protobuf-compiler-grpc-java-plugin \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/venv /opt/venv
# The referee starts hosted Python bots with "python3" from its own virtualenv first on PATH.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /app
COPY deploy/hosted-league.toml ./deploy/hosted-league.toml
# The code folder (uploads unpacked by hash) and the records: a volume. 0755: each bot
# runs as a uid of its own and must reach its folder.
RUN mkdir -p /app/results && chmod 0755 /app/results
VOLUME ["/app/results"]
# Root: the gVisor tier needs a root referee (it binds each bot's folder by descriptor
# and starts runsc); every bot runs as a uid of its own, never as root.
USER 0:0
# 50051: uploads, dial-in bots, the League API, health; 8080: the pages; 9464: metrics.
EXPOSE 50051 8080 9464
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-m", "referee.runtime.healthcheck", "127.0.0.1:50051"]
ENTRYPOINT ["referee"]
CMD ["serve", "--config", "deploy/hosted-league.toml"]
