"""`badgeline emulator`: run one printer emulator until SIGTERM or SIGINT.

`--language` picks what it speaks: ESC/POS (the default), ZPL II or Brother QL
raster (language.py); `--dpi`, `--media-width` and `--label-length` the media it
has loaded, checked against what that printer takes.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
from pathlib import Path

from badgeline.emulator.families import MODELS, family
from badgeline.emulator.language import Language, fault_error
from badgeline.emulator.media import Media
from badgeline.emulator.printhead import DEFAULT_BUFFER_BYTES
from badgeline.emulator.server import PrinterEmulator
from badgeline.emulator.state import Fault, PrinterCondition

logger = logging.getLogger(__name__)
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _ms_per_badge(text: str) -> int:
    value = int(text)
    if not 0 <= value <= PrinterCondition.MAX_MS_PER_BADGE:
        raise argparse.ArgumentTypeError(f"must be within 0..{PrinterCondition.MAX_MS_PER_BADGE}")
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError("must be within 0..65535 (0 picks a free one)")
    return value


def _buffer_bytes(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _dots(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be at least 0")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument(
        "--port", type=_port, default=9100, help="printer port (0 picks a free one)"
    )
    parser.add_argument(
        "--language", type=Language, choices=list(Language), default=Language.ESCPOS,
        help="printer language (default escpos)",
    )  # fmt: skip
    models = "; ".join(f"{language}: {', '.join(names)}" for language, names in MODELS.items())
    parser.add_argument("--model", help=f"printer model ({models}; default the first)")
    parser.add_argument("--dpi", type=int, help="print head resolution (203 or 300)")
    parser.add_argument(
        "--media-width", type=_dots, help="printable width of the loaded media, in dots"
    )
    parser.add_argument(
        "--label-length", type=_dots, help="label length in dots (0: continuous media)"
    )
    parser.add_argument(
        "--control-port", type=_port, default=9101, help="control API port (0 picks a free one)"
    )
    parser.add_argument(
        "--out", type=Path, default=Path("emulator-out"), help="directory for badge PNGs"
    )
    parser.add_argument(
        "--fault", type=Fault, choices=list(Fault), default=Fault.NONE, help="fault at start"
    )
    parser.add_argument(
        "--ms-per-badge", type=_ms_per_badge, default=0, help="slow mode: delay per badge"
    )
    parser.add_argument(
        "--buffer-bytes",
        type=_buffer_bytes,
        default=DEFAULT_BUFFER_BYTES,
        help=f"receive buffer: bytes received but not yet printed (default {DEFAULT_BUFFER_BYTES})",
    )
    parser.add_argument(
        "--write-only", action="store_true",
        help="answer nothing (no status, no confirmation), as many cheap network printers",
    )  # fmt: skip
    parser.add_argument(
        "--log-level", type=str.upper, choices=LOG_LEVELS, default="INFO",
        help="logging level (default INFO)",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    try:
        args.media = _media(args)
    except ValueError as error:
        logger.error("emulator could not start: %s", error)
        return 2
    try:
        asyncio.run(_serve(args))
    except OSError as error:
        # Typically the port is taken: say so in one line rather than a traceback.
        logger.error("emulator could not start: %s", error)
        return 1
    return 0


def _media(args: argparse.Namespace) -> Media:
    """The media the options load, checked against the printer (ValueError saying why not)."""
    printer = family(args.language, args.model)
    if (problem := fault_error(printer, args.fault)) is not None:
        raise ValueError(problem)
    default = printer.default_media(args.dpi)
    media = Media(
        dpi=default.dpi if args.dpi is None else args.dpi,
        width_dots=default.width_dots if args.media_width is None else args.media_width,
        length_dots=default.length_dots if args.label_length is None else args.label_length,
    )
    return printer.check_media(media)


async def _serve(args: argparse.Namespace) -> None:
    emulator = PrinterEmulator(
        args.host, args.port, args.control_port, args.out,
        fault=args.fault, ms_per_badge=args.ms_per_badge, buffer_bytes=args.buffer_bytes,
        write_only=args.write_only, language=args.language, model=args.model, media=args.media,
    )  # fmt: skip
    stop_requested = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signal_number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signal_number, stop_requested.set)
    await emulator.start()
    try:
        await stop_requested.wait()
        logger.info("emulator stopping")
    finally:
        await emulator.stop()
