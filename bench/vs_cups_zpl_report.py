"""The report of bench/vs_cups_zpl.py: drain rates, latency and the two systems' labels of
the same badge, as a table and a few lines of figures."""

from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from label_fit import LabelFit
from vs_cups import Phase

from badgeline.agent.printers.zpl import ZplFamily
from badgeline.badge.raster import fit_page

MODEL = "ZD421"
LABEL = (812, 609)  # 4 x 3 in at 203 dpi: the ZD421 emulator's default media


@dataclass
class Sample:
    system: str
    seconds: float
    png: Path | None


@dataclass
class Results:
    drains: dict[int, list[Phase]] = field(default_factory=dict)  # ms per label -> phases
    latency: list[Sample] = field(default_factory=list)
    fits: dict[str, LabelFit] = field(default_factory=dict)


def labels_out(phase: Phase) -> int:
    return sum(phase.printed.values())


def first_label_s(phase: Phase) -> float:
    firsts = [first for _, first, _ in phase.per_printer]
    return min(firsts) - phase.first_submit if firsts else float("nan")


def own_cpu(phase: Phase) -> float:
    return sum(cpu for name, cpu in phase.cpu_s.items() if name != "emulators")


def report(results: Results, args: argparse.Namespace, pdf: bytes) -> None:
    print(f"\n{args.printers} ZPL printers ({MODEL}, {LABEL[0]} x {LABEL[1]} dots), "
          f"{args.concurrency} kiosk clients, median over {args.rounds} round(s)")  # fmt: skip
    print(
        f"{'setting':<14} {'system':<10} {'badges':>6} {'drain s':>8} {'badges/s':>8} "
        f"{'out':>5} {'first label s':>13} {'gap ms':>6} {'CPU s':>6} {'machine CPU s':>13}"
    )
    for ms, phases in results.drains.items():
        report_drains(ms, phases)
    for system in ("cups", "badgeline"):
        seconds = sorted(s.seconds for s in results.latency if s.system == system)
        if seconds:
            print(f"submit -> label out, one badge on an idle {system}: median "
                  f"{statistics.median(seconds):.2f} s, min {seconds[0]:.2f}, "
                  f"max {seconds[-1]:.2f} ({len(seconds)} samples)")  # fmt: skip
    report_fits(results.fits, pdf)
    print(
        "drain: first submit to last label out; first label s: first submit to first label "
        "out; gap ms: median time between two labels of one printer; CPU s: the system's "
        "processes (cupsd with its filters and backends; coordinator, Redis, agents with "
        "their render workers); machine CPU s: everything (emulators, others)"
    )


def report_drains(ms: int, phases: list[Phase]) -> None:
    med = statistics.median
    rates = {}
    for system in ("cups", "badgeline"):
        mine = [p for p in phases if p.system == system]
        if not mine:
            continue
        rates[system] = med(p.rate for p in mine)
        out = f"{min(labels_out(p) for p in mine)}"
        print(f"{f'{ms} ms/label':<14} {system:<10} {mine[0].jobs:>6} "
              f"{med(p.drain_s for p in mine):8.2f} {rates[system]:8.2f} {out:>5} "
              f"{med(first_label_s(p) for p in mine):13.2f} "
              f"{med(statistics.median(p.print_gap_ms or [0]) for p in mine):6.0f} "
              f"{med(own_cpu(p) for p in mine):6.1f} "
              f"{med(p.machine_cpu_s for p in mine):13.1f}")  # fmt: skip
    if len(rates) == 2 and rates["cups"]:
        ratio = rates["badgeline"] / rates["cups"]
        pairs = zip([p for p in phases if p.system == "cups"],
                    [p for p in phases if p.system == "badgeline"], strict=False)  # fmt: skip
        rounds = " ".join(f"{ours.rate / cups.rate:.2f}" for cups, ours in pairs if cups.rate)
        verdict = "met" if ratio >= 1.0 else "MISSED"
        print(f"  {ms} ms/label: badgeline / CUPS drain rate {ratio:.2f}x (per round: "
              f"{rounds}; target >= 1.0x: {verdict})")  # fmt: skip
    for phase in phases:
        extra = sum(n - 1 for n in phase.printed.values() if n > 1)
        problems = {s: n for s, n in phase.statuses.items() if s != "ok"}
        if problems or extra or labels_out(phase) != phase.jobs:
            print(f"  {phase.system} at {ms} ms: answers {dict(phase.statuses)}, "
                  f"{labels_out(phase)} out for {phase.jobs}, {extra} twice")  # fmt: skip
    for phase in phases:
        # Where a drain's time goes besides the printing: the wait for each printer's
        # first label, and an uneven share of the badges between the printers.
        t0 = phase.first_submit
        spans = ", ".join(f"{n} {a - t0:.2f}-{b - t0:.2f}" for n, a, b in phase.per_printer)
        print(f"  {phase.system} at {ms} ms, labels per printer, first-last out (s): {spans}")
    for phase in phases:
        print(f"  CPU s of {phase.system}'s phase at {ms} ms: "
              + ", ".join(f"{name} {cpu:.1f}" for name, cpu in phase.cpu_s.items()))  # fmt: skip


def report_fits(fits: dict[str, LabelFit], pdf: bytes) -> None:
    print("\nthe same badge (the first PDF) from each system, as the emulator saved it:")
    for system, fit in fits.items():
        print(f"  {system:<10} {fit.describe()}")
    if len(fits) == 2:
        cups, ours = fits["cups"], fits["badgeline"]
        same = cups.size == ours.size and cups.dpi == ours.dpi
        print(f"  same label dots and resolution: {'yes' if same else 'NO'}; badge scale "
              f"badgeline / CUPS {ours.scale / cups.scale:.3f}; page shown: CUPS "
              f"{cups.page_shown:.1%}, badgeline {ours.page_shown:.1%}")  # fmt: skip
    band = footer_band()
    fitted = fit_page(*pdf_page_points(pdf), LABEL[0], LABEL[1])
    print(f"  (badgeline keeps a {band}-dot footer band for `job <id>`; with footer = false "
          f"the page would fill {fitted[0]} x {fitted[1]} dots of the label)")  # fmt: skip


def footer_band() -> int:
    """The dots badgeline's ZPL labels keep for the `job <id>` footer."""
    return ZplFamily.configured(model=MODEL, label_length_dots=LABEL[1]).layout(True).footer_dots


def pdf_page_points(pdf: bytes) -> tuple[float, float]:
    import pypdfium2

    document = pypdfium2.PdfDocument(pdf)
    try:
        width, height = document[0].get_size()
    finally:
        document.close()
    return float(width), float(height)
