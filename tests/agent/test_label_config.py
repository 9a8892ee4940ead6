"""A label printer's `[printer]` settings: each family's example loads, and every setting
that cannot work names itself at start-up (ConfigError), before any badge is leased."""

from __future__ import annotations

from pathlib import Path

import pytest

from badgeline.agent.config import ConfigError, load_agent_settings

HEAD = """
printer_id = "printer-a"
coordinator_url = "http://venue:8420/"
token = "secret-agent-token"
state_dir = "/var/lib/badgeline"
{top}
[printer]
{printer}
"""


def load(tmp_path: Path, printer: str, top: str = "") -> object:
    path = tmp_path / "agent.toml"
    path.write_text(HEAD.format(top=top, printer=printer))
    return load_agent_settings(path)


@pytest.mark.parametrize(
    ("printer", "described"),
    [
        ('kind = "network"\nhost = "10.0.0.21"', "unknown"),
        (
            'kind = "network"\nhost = "10.0.0.22"\nlanguage = "zpl"\nmodel = "ZD421"\n'
            "label_length_dots = 609",
            "ZD421 203 dpi 812x609 dots",
        ),
        (
            'kind = "usb"\nvendor_id = "0a5f"\nproduct_id = "0185"\nlanguage = "zpl"\n'
            'model = "ZD411"\ndpi = 300',
            "ZD411 300 dpi 600x? dots",
        ),
        (
            'kind = "usb"\nvendor_id = "04f9"\nproduct_id = "209d"\nlanguage = "brother_ql"\n'
            'model = "QL-820NWB"\nmedia = "62x100"',
            "QL-820NWB DK 62x100 mm",
        ),
        (
            'kind = "device"\npath = "/dev/usb/lp0"\nlanguage = "brother_ql"\n'
            'model = "QL-1110NWB"\nmedia = "102x152"',
            "QL-1110NWB DK 102x152 mm",
        ),
    ],
    ids=["escpos", "zd421 network", "zd411 usb", "ql-820nwb usb", "ql-1110nwb device"],
)
def test_each_family_s_example_loads(tmp_path: Path, printer: str, described: str) -> None:
    settings = load(tmp_path, printer)
    assert settings.printer.family().describe() == described  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("printer", "top", "named"),
    [
        # the cable cannot carry the family's confirmation: a QL answers nothing on TCP
        (
            'kind = "network"\nhost = "h"\nlanguage = "brother_ql"',
            "",
            'a Brother QL answers nothing on its TCP port.*print_confirmation = "sent"',
        ),
        # a confirmation of another family
        (
            'kind = "network"\nhost = "h"\nlanguage = "zpl"',
            'print_confirmation = "process_id"',
            'print_confirmation = "process_id" is not for a zpl printer',
        ),
        # ESC/POS paper settings on a label printer
        (
            'kind = "network"\nhost = "h"\nlanguage = "zpl"',
            "width_dots = 576",
            "printer.label_width_dots",
        ),
        # media the model does not take, or that does not exist
        (
            'kind = "network"\nhost = "h"\nlanguage = "brother_ql"\nmedia = "102"',
            "",
            "printer.media 102 is 102 mm wide: a QL-820NWB takes at most 62",
        ),
        (
            'kind = "network"\nhost = "h"\nlanguage = "brother_ql"\nmedia = "63x100"',
            "",
            "printer.media '63x100' is not a DK roll",
        ),
        (
            'kind = "network"\nhost = "h"\nlanguage = "zpl"\nmodel = "ZD411"\n'
            "label_width_dots = 812",
            "",
            "printer.label_width_dots 812 is wider than the ZD411",
        ),
        (
            'kind = "network"\nhost = "h"\nlanguage = "zpl"\ndpi = 600',
            "",
            "printer.dpi: a ZD421 prints at 203 or 300 dpi",
        ),
        # a setting of another family
        (
            'kind = "network"\nhost = "h"\nmedia = "62"',
            "",
            'printer.media is for language = "brother_ql"',
        ),
        # a USB maker whose printers speak another language
        (
            'kind = "usb"\nvendor_id = "0a5f"\nproduct_id = "0185"',
            "",
            'vendor_id 0a5f is Zebra.*set printer.language = "zpl"',
        ),
        (
            'kind = "usb"\nvendor_id = "04f9"\nproduct_id = "209d"\nlanguage = "zpl"',
            "",
            'Brother.*set printer.language = "brother_ql"',
        ),
    ],
)
def test_settings_that_cannot_work_stop_the_start_naming_what_to_fix(
    tmp_path: Path, printer: str, top: str, named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        load(tmp_path, printer, top)


def test_a_brother_on_tcp_confirmed_by_sent_is_taken(tmp_path: Path) -> None:
    settings = load(tmp_path, 'kind = "network"\nhost = "h"\nlanguage = "brother_ql"',
                    'print_confirmation = "sent"')  # fmt: skip
    assert settings.printer.language == "brother_ql"  # type: ignore[attr-defined]
