"""Sticheln referee: rules engine, bot protocol server, match runner and tournaments."""

from referee.runtime import grpcenv

# Before any module imports grpc, which reads these settings once (see referee/runtime/grpcenv.py).
grpcenv.configure()

__version__ = "0.1.0"
