"""Analysis of storage (being written)."""

__all__: list[str] = []
