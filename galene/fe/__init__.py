"""Galene fe package."""
