"""Pick a printer language (a `Family`, language.py) by name, with its model."""

from __future__ import annotations

from badgeline.emulator.brother_ql import MODELS as BROTHER_MODELS
from badgeline.emulator.brother_ql import BrotherQlFamily
from badgeline.emulator.escpos import EscPosFamily
from badgeline.emulator.language import Family, Language
from badgeline.emulator.zpl import MODELS as ZEBRA_MODELS
from badgeline.emulator.zpl import ZplFamily

MODELS: dict[Language, tuple[str, ...]] = {
    Language.ESCPOS: (EscPosFamily.model,),
    Language.ZPL: ZEBRA_MODELS,
    Language.BROTHER_QL: tuple(BROTHER_MODELS),
}


def family(language: Language | str, model: str | None = None) -> Family:
    """The family for `language` (and `model`, default the first of MODELS), or
    ValueError naming what is known."""
    language = Language(language)
    models = MODELS[language]
    if model is not None and model not in models:
        raise ValueError(f"{language} models are {', '.join(models)}, not {model!r}")
    if language is Language.ZPL:
        return ZplFamily(model or models[0])
    if language is Language.BROTHER_QL:
        return BrotherQlFamily(model or models[0])
    return EscPosFamily()
