"""Sticheln referee: rules engine, bot protocol server, match runner and tournaments."""

import os

# The referee starts bot processes while gRPC threads run. gRPC's fork handlers are not
# safe then (a child can crash between fork and exec), and the referee never needs gRPC
# in a forked child: turn them off before any module imports grpc.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

__version__ = "0.1.0"
