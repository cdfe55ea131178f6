"""Placeholder until `lazygen gen` writes the TS backend."""
