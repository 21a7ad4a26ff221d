"""What plays one match over gRPC: the bot files and the processes they start (in a
sandbox), the gRPC server and its per-seat streams, the pool of long-lived bot streams,
the match runner (clocks, faults, the pain-card reveal, per-seat views), the match record,
the deal key that makes each match's seed, and the metrics of matches and decisions.

Built on :mod:`referee.rules` (the engine), :mod:`referee.convert` (engine <-> wire) and
:mod:`referee.runtime`; used by tournaments, leagues, comparisons and ``check-bot``.
"""
