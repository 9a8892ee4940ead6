"""badgeline: exactly-once event badge printing on ESC/POS thermal printers."""

__version__ = "0.1.0"
