"""Sample PDFs are built once per test session: fpdf2 takes tens of milliseconds a badge."""

from __future__ import annotations

import pytest

from badgeline import samples


@pytest.fixture(scope="session")
def good_badge() -> bytes:
    return samples.sample_badge_pdf("A-1001", "Ada Lovelace", "Analytical Engines Ltd")


@pytest.fixture(scope="session")
def other_badge() -> bytes:
    return samples.sample_badge_pdf("A-1002", "Grace Hopper", "Compilers & Co")
