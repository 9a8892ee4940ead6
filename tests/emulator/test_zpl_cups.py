"""CUPS's own Zebra driver as an independent client: the ZPL its filters make of a badge PDF
(pdftopdf, Ghostscript, `rastertolabel` with the ZPL PPD CUPS generates from its
sample.drv: a `~DG` download, a format recalling it with `^XG` under `^POI`, one deleting
it with `^ID`) prints on the emulated Zebra, on a label of the same dots as the agent's
label of the same PDF. The short version of `bench/vs_cups.py --language zpl`.

`cupsfilter` runs a queue's filters without a scheduler; Debian's `cups`, `cups-filters`
and `cups-ppdc` provide it, the filters and `ppdc` (./dev installs them).
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

from PIL import Image, ImageOps

from badgeline.agent.printers.zpl import ZplFamily
from badgeline.badge.raster import job_footer, render_label
from badgeline.samples import sample_badge_pdf
from tests.emulator.conftest import StartPrinter

CUPSFILTER = Path("/usr/sbin/cupsfilter")
SAMPLE_DRIVERS = Path("/usr/share/cups/drv/sample.drv")
INSTALL = "apt-get install -y --no-install-recommends cups cups-filters cups-ppdc"
LABEL = (812, 609)  # 4 x 3 in at 203 dpi, the ZD421's default media


def cups_zpl(pdf: bytes, tmp_path: Path) -> bytes:
    """What a CUPS queue with the Zebra ZPL driver sends for `pdf` on 4 x 3 in labels."""
    ppdc = shutil.which("ppdc")
    assert ppdc and CUPSFILTER.exists() and SAMPLE_DRIVERS.exists(), f"CUPS is missing: {INSTALL}"
    subprocess.run([ppdc, "-d", str(tmp_path), str(SAMPLE_DRIVERS)], check=True,
                   capture_output=True)  # fmt: skip
    source = tmp_path / "badge.pdf"
    source.write_bytes(pdf)
    converted = subprocess.run(
        [str(CUPSFILTER), "-p", str(tmp_path / "zebra.ppd"), "-m", "printer/zebra", "-e",
         "-o", "PageSize=w288h216", "-o", "Resolution=203dpi", str(source)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return converted.stdout


def black_box(path: Path) -> tuple[int, int, int, int]:
    with Image.open(path) as image:
        box = ImageOps.invert(image.convert("L")).getbbox()
    assert box is not None, f"{path} is blank"
    return box


async def test_cups_zebra_driver_and_the_agent_print_the_same_badge_on_labels_of_the_same_dots(
    start_printer: StartPrinter, tmp_path: Path
) -> None:
    # GIVEN a badge PDF, and what CUPS's Zebra driver and the agent make of it
    pdf = sample_badge_pdf("A-CUPS-01", "Grace Hopper", "Side By Side Ltd")
    from_cups = await asyncio.to_thread(cups_zpl, pdf, tmp_path)
    assert from_cups.startswith(b"~DGR:CUPS.GRF,") and b"^XGR:CUPS.GRF" in from_cups
    family = ZplFamily.configured(model="ZD421", label_length_dots=LABEL[1])
    footer = job_footer("cups-side-01")
    picture = render_label(pdf, family.layout(footer=True), footer)
    from_agent = family.encode(picture.tobytes(), picture.size, footer)
    # WHEN both are sent to an emulated ZD421
    printer, client = await start_printer(language="zpl", model="ZD421")
    await client.send(from_cups)
    await printer.wait_until(lambda p: len(p.printed) == 1)
    await client.send(from_agent)
    await printer.wait_until(lambda p: len(p.printed) == 2)
    # THEN each is one label (CUPS's format deleting its graphic prints nothing), of the
    # same dots at the same resolution, with the page turned onto it in both
    cups_label, agent_label = printer.printed
    assert (cups_label.job_id, agent_label.job_id) == (None, "cups-side-01")
    for label in (cups_label, agent_label):
        assert label.png is not None
        with Image.open(label.png) as png:
            assert png.size == LABEL
            assert tuple(round(float(v)) for v in png.info["dpi"]) == (203, 203)
    for left, top, right, bottom in (black_box(cups_label.png), black_box(agent_label.png)):  # type: ignore[arg-type]
        assert right - left > bottom - top  # a portrait page, turned a quarter
