"""The package version, in the core layer so that any module can record it without importing the facade."""

__version__ = "0.1.0"
