"""Galene meta package."""
