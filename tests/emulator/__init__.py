"""Tests of the ESC/POS printer emulator."""
