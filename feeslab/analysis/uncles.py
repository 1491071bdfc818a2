"""Analysis of uncles (being written)."""

__all__: list[str] = []
