"""Sandlot."""
