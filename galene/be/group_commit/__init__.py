"""Group commit on the BE (see manager.py)."""
