"""Config files: the tables they share as typed models (:mod:`referee.config.tables`),
their errors in one line (:mod:`referee.config.errors`) and their JSON Schemas
(:mod:`referee.config.schema`, shipped in ``schemas/``)."""

#: The config file types (``referee schema KIND``), each with its schema's title.
KINDS = {
    "tournament": "Sticheln referee: tournament file (referee tournament FILE)",
    "league": "Sticheln referee: league file (referee serve --config FILE)",
    "bot": "Sticheln referee: bot file (--bot FILE, [[bots]] file = FILE)",
    "compare": "Sticheln referee: comparison file (referee compare FILE)",
}
