"""Persistence: SQLModel tables, the engine, and tenant-scoped repositories."""
