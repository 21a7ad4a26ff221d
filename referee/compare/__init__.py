"""``referee compare``: is a new version of a bot better than the old one?

Paired duplicate matches (the same deal, seat and opponents for the candidate and the
baseline) streamed into a sequential test (:mod:`referee.compare.sprt`) until it decides.
"""
