#!/bin/sh
# Build the Java sample bot offline, with Debian's packages (the league's image has them):
# the stubs from proto/ (protoc and Debian's grpc_java_plugin) into gen/, the classes into
# classes/ (javac against Debian's grpc-java, protobuf-java and Netty in /usr/share/java),
# and the jars the bot runs with copied into lib/: a bot's jail shows it the Java runtime
# (runtime = "jvm"), not /usr/share/java. The league runs this as the bot file's `build`,
# jailed, without network.
set -eu
cd "$(dirname "$0")"
J=/usr/share/java
JARS="grpc-api grpc-core grpc-context grpc-netty grpc-protobuf grpc-protobuf-lite grpc-stub
  protobuf guava perfmark-api gson netty-common netty-buffer netty-transport netty-codec
  netty-codec-http netty-codec-http2 netty-handler netty-resolver"
# A JVM reserves 1 GiB for classes and 240 MiB for compiled code up front, more than the
# build jail's address space bound (build_memory_mb) leaves beside javac's heap.
export JAVA_TOOL_OPTIONS="${JAVA_TOOL_OPTIONS:-} -XX:CompressedClassSpaceSize=64m -XX:ReservedCodeCacheSize=64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xmx512m"
rm -rf gen classes lib && mkdir -p gen classes lib
protoc -Iproto --java_out=gen --grpc-java_out=gen \
  --plugin=protoc-gen-grpc-java="$(command -v grpc_java_plugin)" \
  proto/sticheln/v1/game.proto proto/sticheln/v1/bot.proto
for jar in $JARS; do cp "$J/$jar.jar" lib/; done
# The stubs name javax.annotation.Generated: Debian's geronimo annotation jar, at compile
# time only.
javac -nowarn -proc:none -encoding UTF-8 -d classes \
  -cp "lib/*:$J/geronimo-annotation-1.3-spec.jar" $(find gen src -name '*.java')
