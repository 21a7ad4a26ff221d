"""Tournaments: configuration, deterministic schedules, persistence and the run loop."""
