"""What is kept and told after matches: the store of results (SQLite or PostgreSQL) that
tournaments and leagues share, the ratings (live Elo and Bradley-Terry standings), the
exports and report.html, the documents the web pages and the report show, and the audit
of a finished tournament (``referee verify``).
"""
