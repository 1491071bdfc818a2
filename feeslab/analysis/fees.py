"""Analysis of fees (being written)."""

__all__: list[str] = []
