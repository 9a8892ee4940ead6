"""Loading typed settings from a TOML file plus environment overrides.

The coordinator's, through pydantic-settings: arguments beat `BADGELINE_*`
environment variables, which beat the TOML file, which beats the defaults; a
bad value stops start-up with every wrong key named. The agent loads its
settings the same way without pydantic-settings (toml_env.py: memory on a
Pi); both raise the same ConfigError.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from badgeline.toml_env import ConfigError, describe_validation_error

__all__ = ["ConfigError", "TomlThenEnvironment", "describe_validation_error", "load_settings"]

SettingsT = TypeVar("SettingsT", bound=BaseSettings)


class TomlThenEnvironment(BaseSettings):
    """Base for settings read from `toml_file` (set per load) under the environment."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_path = settings_cls.model_config.get("toml_file")
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if toml_path:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_path))
        return tuple(sources)


def load_settings(
    settings_cls: type[SettingsT], path: Path | None, what: str = "", **overrides: Any
) -> SettingsT:
    """Read and validate the settings once, at start-up; ConfigError names what is wrong."""
    if path is not None and not path.is_file():
        raise ConfigError(f"config file {path} does not exist")

    class FromFile(settings_cls):  # type: ignore[valid-type,misc]
        model_config = SettingsConfigDict(toml_file=path)

    try:
        loaded: SettingsT = FromFile(**overrides)
    except ValidationError as error:
        source = str(path or "environment")
        raise ConfigError(describe_validation_error(error, source, what)) from None
    return loaded
