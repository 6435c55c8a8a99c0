"""Galene storage package."""
