"""mempalace-cli: a local-first memory palace for AI agents and the people who work with them."""

__version__ = "0.1.0"
