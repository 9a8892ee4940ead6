"""The agent's printer settings that only make sense together, checked at start-up.

Each refusal names the setting to change: the printer's language against its
confirmation, its cable and its USB maker, and the ESC/POS-only width settings.
"""

from __future__ import annotations

from badgeline.agent.printers.connection import (
    NetworkConnection,
    PrinterConnection,
    UsbConnection,
)
from badgeline.agent.printers.family import PrinterFamily

# USB vendor ids of the makers whose printers speak one language only.
VENDOR_LANGUAGES = {0x04B8: ("Epson", "escpos"), 0x0A5F: ("Zebra", "zpl"),
                    0x04F9: ("Brother", "brother_ql")}  # fmt: skip


def check_printer_settings(
    printer: PrinterConnection,
    family: PrinterFamily,
    *,
    print_confirmation: str,
    width_dots: int | None,
    escpos_profile: str | None,
) -> None:
    """ValueError saying what to fix, for settings that cannot work together."""
    language = printer.language
    if language != "escpos" and (width_dots is not None or escpos_profile is not None):
        where = "printer.label_width_dots" if language == "zpl" else "printer.media"
        raise ValueError(f"width_dots and escpos_profile are for ESC/POS paper; a {language}"
                         f" printer's width is {where}")  # fmt: skip
    if print_confirmation not in family.confirmations:
        raise ValueError(
            f'print_confirmation = "{print_confirmation}" is not for a {language} printer:'
            f" one of {', '.join(sorted(family.confirmations))}"
        )
    if (language == "brother_ql" and isinstance(printer, NetworkConnection)
            and print_confirmation != "sent"):  # fmt: skip
        raise ValueError(
            "a Brother QL answers nothing on its TCP port (Raster Command Reference, 5.9"
            ' network flow: no status): set print_confirmation = "sent" (a badge counts as'
            " printed once the printer took it), or connect the printer by USB"
        )
    if isinstance(printer, UsbConnection) and printer.vendor_id in VENDOR_LANGUAGES:
        maker, speaks = VENDOR_LANGUAGES[printer.vendor_id]
        if speaks != language:
            raise ValueError(
                f"printer.vendor_id {printer.vendor_id:04x} is {maker}'s, whose"
                f' printers speak {speaks}: set printer.language = "{speaks}"'
            )
