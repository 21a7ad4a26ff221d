"""Process plumbing every command shares and no game logic: the event loop, gRPC's
process-wide settings, structured logs, private files and folders, and the health-check
probe. Nothing here imports another part of the referee.
"""
