"""Sticheln referee: rules engine, bot protocol server, match runner and tournaments."""

__version__ = "0.1.0"
