"""Galene txn package."""
