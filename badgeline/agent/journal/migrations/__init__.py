"""Numbered schema migrations of the agent journal (`NNNN_name.sql`), applied in order."""
