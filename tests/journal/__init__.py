"""Tests of the agent journal (badgeline.agent.journal)."""
