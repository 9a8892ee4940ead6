"""Typed settings from a TOML file plus environment overrides, into a plain pydantic model.

The coordinator and the agent load their settings here. pydantic-settings does
the same, but importing it cost the agent ~1 MB of its idle RSS on top of
pydantic (its sources for AWS, Azure, GCP, YAML, dotenv and the CLI all load
with it), and on a Raspberry Pi beside one printer that counts
(docs/benchmarks.md, "agent idle memory"); one loader for both sides keeps the
rules the same. What they need is small:

- precedence, highest first: keyword arguments, `<PREFIX><FIELD>` environment
  variables (any case), the TOML file, the model's defaults;
- a field that takes a list, a table or a model reads its variable as JSON, and
  a table is merged into the file's: `<PREFIX>PRINTER='{"port": 9101}'` changes
  only the port; `<PREFIX>PRINTER__HOST=…` sets one key of it as text
  (as pydantic-settings does with `env_nested_delimiter="__"`);
- a bad value stops loading with every wrong key named (`ConfigError`).
"""

from __future__ import annotations

import json
import os
import tomllib
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

ModelT = TypeVar("ModelT", bound=BaseModel)
NESTED_DELIMITER = "__"


class ConfigError(Exception):
    """The configuration cannot be used; the message names every bad key."""


def describe_validation_error(
    error: ValidationError, source: str, what: str = "", model: type[BaseModel] | None = None
) -> str:
    lines = [f"invalid {what + ' ' if what else ''}configuration in {source}:"]
    for problem in error.errors():
        loc = problem["loc"]
        key = ".".join(str(part) for part in loc) or "(top level)"
        lines.append(f"  {key}: {problem['msg']}")
        if _misplaced_top_level_key(problem, model):
            # TOML's classic trap: every key after a [table] or [[array]] header
            # belongs to that table, however it is indented.
            header = f"[[{loc[0]}]]" if isinstance(loc[1], int) else f"[{loc[0]}]"
            lines.append(f"    ({loc[-1]} is a top-level setting: in TOML it must come before "
                         f"the first {header} header, or it belongs to that table)")  # fmt: skip
    return "\n".join(lines)


def _misplaced_top_level_key(problem: Any, model: type[BaseModel] | None) -> bool:
    loc = problem["loc"]
    return (model is not None and problem["type"] == "extra_forbidden" and len(loc) >= 2
            and isinstance(loc[-1], str) and loc[-1] in model.model_fields)  # fmt: skip


def load_toml_env(
    model: type[ModelT],
    path: Path | None,
    env_prefix: str,
    what: str = "",
    environ: Mapping[str, str] | None = None,
    **overrides: Any,
) -> ModelT:
    """Read and validate the settings once, at start-up; ConfigError names what is wrong."""
    values: dict[str, Any] = {}
    if path is not None:
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist")
        try:
            values = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
            raise ConfigError(f"config file {path} is not valid TOML: {error}") from None
    environ = os.environ if environ is None else environ
    from_environment = environment_values(model, env_prefix, environ)
    values = _merged(_merged(values, from_environment), overrides)
    try:
        return model.model_validate(values)
    except ValidationError as error:
        # Name every source: a bad BADGELINE_* value reported as "in coordinator.toml"
        # sent people looking for a key their file does not have.
        sources = [str(path)] if path is not None else []
        sources += _variables_used(model, env_prefix, environ)
        sources += ["the command line"] if overrides else []
        source = ", ".join(sources) or "environment"
        raise ConfigError(describe_validation_error(error, source, what, model)) from None


def _variables_used(
    model: type[BaseModel], env_prefix: str, environ: Mapping[str, str]
) -> list[str]:
    prefix = env_prefix.lower()
    return sorted(
        name for name in environ
        if name.lower().startswith(prefix)
        and name.lower()[len(prefix):].split(NESTED_DELIMITER)[0] in model.model_fields
    )  # fmt: skip


def environment_values(
    model: type[BaseModel], env_prefix: str, environ: Mapping[str, str]
) -> dict[str, Any]:
    """The model's fields set by `environ`; variables naming no field are ignored."""
    prefix = env_prefix.lower()
    whole: dict[str, Any] = {}
    nested: dict[str, Any] = {}
    # Sorted: of two spellings of one variable (case differs), the outcome does not
    # depend on the environment's order.
    for name, text in sorted(environ.items()):
        lowered = name.lower()
        if not lowered.startswith(prefix):
            continue
        field, *path = lowered[len(prefix) :].split(NESTED_DELIMITER)
        info = model.model_fields.get(field)
        if info is None:
            continue
        if not path:
            whole[field] = _decoded(name, text) if _takes_json(info.annotation) else text
        elif all(path):
            target = nested.setdefault(field, {})
            for key in path[:-1]:
                target = target.setdefault(key, {})
            target[path[-1]] = text
    return _merged(whole, nested)


def _takes_json(annotation: Any) -> bool:
    """Whether a field's environment variable is JSON: lists, tables, models, unions of them."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _takes_json(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return any(_takes_json(member) for member in typing.get_args(annotation))
    if origin is not None:
        annotation = origin
    return isinstance(annotation, type) and issubclass(
        annotation, (BaseModel, list, tuple, set, frozenset, dict)
    )


def _decoded(name: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"environment variable {name}: lists and tables are JSON here ({error})"
        ) from None


def _merged(base: dict[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `update` on top; tables on both sides are merged, key by key."""
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merged(dict(merged[key]), value)
        else:
            merged[key] = value
    return merged
