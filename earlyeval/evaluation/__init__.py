"""Offline evaluation: datasets, leave-one-agent-out and as-of evaluation, adaptation."""
