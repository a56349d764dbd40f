"""HTTP API v1: thin Litestar controllers over the services."""
