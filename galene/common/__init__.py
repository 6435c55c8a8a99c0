"""Galene common package."""
