"""A printer that speaks another family's language, under each family's status probe: it is
reported unreachable, with the setting to change when it answered in its own language,
and with `check printer.language` when it kept quiet (as a real label printer does to
DLE EOT, and the emulators do: the last two tests)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from badgeline.agent.printers import AsyncPrinterLink, EmulatorConnection, link_for
from badgeline.agent.printers.brother_ql import BrotherQlFamily
from badgeline.agent.printers.brother_ql.media import ql_media
from badgeline.agent.printers.family import EscposFamily, PrinterFamily
from badgeline.emulator import PrinterEmulator

from .label_printers import ZebraResponder, ql_status
from .servers import TcpPrinter

DIE_CUT = ql_media("QL-820NWB", "62x100")


class AnswersAnything:
    """A printer that answers whatever it is sent with `reply` (its own family's status)."""

    def __init__(self, reply: bytes) -> None:
        self.reply = reply

    def feed(self, data: bytes) -> bytes:
        return self.reply if data else b""


def link_to(port: int, family: PrinterFamily, language: str) -> AsyncPrinterLink:
    media = {"media": "62x100"} if language == "brother_ql" else {}
    connection = EmulatorConnection(host="127.0.0.1", port=port, timeout_s=0.3,
                                    language=language, **media)  # type: ignore[arg-type]  # fmt: skip
    return AsyncPrinterLink(link_for(connection, family=family), family)


@pytest.mark.parametrize(
    ("reply", "speaks"),
    [(ql_status(kind=0x06, phase=0x01), "brother_ql"), (ZebraResponder().feed(b"~HS"), "zpl")],
    ids=["a Brother QL's notice", "a Zebra's ~HS answer"],
)
async def test_an_escpos_printer_that_answers_as_a_label_printer_is_named(
    tcp_printer: Callable[..., TcpPrinter], reply: bytes, speaks: str
) -> None:
    # GIVEN an "ESC/POS" printer that answers its status queries in a label printer's
    # language (some bytes of a QL's status even pass as ESC/POS status bytes)
    printer = tcp_printer()
    printer.responder = AnswersAnything(reply)  # type: ignore[assignment]
    link = link_to(printer.port, EscposFamily(), "escpos")
    # WHEN it is probed
    report = await link.probe()
    # THEN it is unreachable as an ESC/POS printer, and the detail names the setting
    assert not report.reachable
    assert f'it answered as a {speaks} printer: set printer.language = "{speaks}"' in (
        report.detail or ""
    )
    await link.close()


async def test_a_brother_ql_that_answers_as_a_zebra_is_named(
    tcp_printer: Callable[..., TcpPrinter],
) -> None:
    # GIVEN a "Brother QL" that answers anything with a Zebra's ~HS strings
    printer = tcp_printer()
    printer.responder = AnswersAnything(ZebraResponder().feed(b"~HS"))  # type: ignore[assignment]
    link = link_to(printer.port, BrotherQlFamily(DIE_CUT), "brother_ql")
    # WHEN it is probed
    report = await link.probe()
    # THEN it is unreachable, and the detail says which setting to change
    assert not report.reachable
    assert report.detail == (
        'no answer to ESC i S (it answered as a zpl printer: set printer.language = "zpl")'
    )
    await link.close()


@pytest.fixture
async def label_emulator(
    tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[PrinterEmulator]:
    emulator = PrinterEmulator("127.0.0.1", 0, 0, tmp_path / "printed", language=request.param)
    await emulator.start()
    yield emulator
    await emulator.stop()


@pytest.mark.parametrize("label_emulator", ["zpl", "brother-ql"], indirect=True)
async def test_an_escpos_agent_on_a_silent_label_printer_is_told_to_check_the_language(
    label_emulator: PrinterEmulator,
) -> None:
    # GIVEN an ESC/POS link to an emulated label printer, which ignores DLE EOT
    link = link_to(label_emulator.port, EscposFamily(), "escpos")
    # WHEN it is probed
    report = await link.probe()
    # THEN it is unreachable, the detail pointing at the language setting
    assert not report.reachable
    assert report.detail == (
        "no reply to DLE EOT 1 (printer off, hung, or not ESC/POS: check printer.language)"
    )
    await link.close()


@pytest.mark.parametrize("label_emulator", ["zpl"], indirect=True)
async def test_a_brother_agent_on_a_silent_zebra_is_told_to_check_the_language(
    label_emulator: PrinterEmulator,
) -> None:
    link = link_to(label_emulator.port, BrotherQlFamily(DIE_CUT), "brother_ql")
    report = await link.probe()
    assert not report.reachable
    assert report.detail == (
        "no answer to ESC i S (printer off, or not a Brother QL: check printer.language)"
    )
    await link.close()
