"""Galene engine package."""
