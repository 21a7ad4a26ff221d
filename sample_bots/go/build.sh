#!/bin/sh
# Build the Go sample bot offline: the stubs from proto/ (protoc with Debian's
# protoc-gen-go and protoc-gen-go-grpc), then the bot, with Debian's Go packages
# (golang-google-grpc-dev, golang-github-golang-protobuf-1-5-dev) as the second half of
# GOPATH. The league runs it as the bot file's `build`, in its jail, without network.
set -eu
cd "$(dirname "$0")"
M="Msticheln/v1/game.proto=stichelnbot/sticheln/v1,Msticheln/v1/bot.proto=stichelnbot/sticheln/v1"
protoc -Iproto --go_out=src --go-grpc_out=src --go_opt="$M" --go-grpc_opt="$M" \
  proto/sticheln/v1/game.proto proto/sticheln/v1/bot.proto
# The build cache goes to /tmp (the league's build jail writes only there and here).
GOPATH="$PWD:/usr/share/gocode" GO111MODULE=off GOFLAGS=-trimpath \
  GOCACHE="${GOCACHE:-${TMPDIR:-/tmp}/sticheln-go-cache}" go build -o sticheln-bot stichelnbot
