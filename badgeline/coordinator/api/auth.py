"""Bearer-token authentication and role checks.

Tokens live in the config only as SHA-256 digests. A presented token is hashed
and its digest looked up, then confirmed with `hmac.compare_digest`. The lookup
costs the same for 3 tokens or 500 (a venue with an agent token per printer),
and its timing can only tell an attacker about the SHA-256 of a token they
chose, never about a configured token (the same argument as enrolment.py's). Agent
tokens issued by enrolment live in Redis, also only as digests (enrolment.py).
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import secrets
import sys
from dataclasses import dataclass

from pydantic import ValidationError

from badgeline.coordinator.config import Role, TokenEntry
from badgeline.protocol.errors import BadgelineError, ErrorCode
from badgeline.protocol.ids import is_printer_id


@dataclass(frozen=True)
class Identity:
    name: str
    role: Role
    printer_id: str | None = None
    group: str | None = None  # a kiosk's group (visibility.py)

    @property
    def actor(self) -> str:
        return f"{self.role}:{self.name}"


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


# Keeps a session proof from being any other HMAC made with a token's digest.
_SESSION_PROOF_CONTEXT = b"badgeline dashboard session\x00"


def session_proof(token_sha256: bytes, session_id: str) -> str:
    """What a dashboard session's record holds (sessions.py): an HMAC of its cookie
    keyed by the configured digest of the token that signed in. Only the config
    holds that key, so a record made from anything Redis holds does not verify."""
    message = _SESSION_PROOF_CONTEXT + session_id.encode("utf-8")
    return hmac.new(token_sha256, message, hashlib.sha256).hexdigest()


def bearer_digest(authorization: str | None) -> bytes | None:
    """The SHA-256 of the token in an `Authorization: Bearer` header; None without one."""
    # The scheme name is case-insensitive (RFC 9110 §11.1): "bearer" is Bearer.
    if not authorization or authorization[:7].lower() != "bearer ":
        return None
    # aiohttp decodes header bytes that are not UTF-8 with surrogateescape;
    # hash the original bytes so such a token is unknown (401), not a 500.
    token = authorization[7:].encode("utf-8", "surrogateescape")
    return hashlib.sha256(token).digest()


class TokenAuthority:
    def __init__(self, entries: list[TokenEntry]) -> None:
        self._by_digest = {bytes.fromhex(e.sha256): e for e in entries}
        self._operators = [
            (bytes.fromhex(e.sha256), Identity(e.name, e.role)) for e in entries
            if e.role == "operator"
        ]  # fmt: skip

    def identify(self, authorization: str | None) -> Identity:
        presented = bearer_digest(authorization)
        if presented is None:
            raise BadgelineError(
                ErrorCode.UNAUTHORIZED, "send an Authorization: Bearer <token> header"
            )
        identity = self.identify_digest(presented)
        if identity is None:
            raise BadgelineError(ErrorCode.UNAUTHORIZED, "unknown API token")
        return identity

    def identify_digest(self, presented: bytes) -> Identity | None:
        """The identity whose token hashes to `presented`."""
        match = self._by_digest.get(presented)
        if match is None or not hmac.compare_digest(bytes.fromhex(match.sha256), presented):
            return None
        return Identity(match.name, match.role, match.printer_id, match.group)

    def operator_of_session(self, session_id: str, proof: str) -> Identity | None:
        """The configured operator whose token made this session's proof, if one did."""
        presented = proof.encode("utf-8", "surrogateescape")
        for digest, identity in self._operators:
            if hmac.compare_digest(session_proof(digest, session_id).encode(), presented):
                return identity
        return None


def require_role(identity: Identity, *roles: Role) -> None:
    if identity.role not in roles:
        raise BadgelineError(
            ErrorCode.FORBIDDEN,
            f"a {identity.role} token cannot call this endpoint (needs {' or '.join(roles)})",
        )


def require_printer(identity: Identity, printer_id: str) -> None:
    require_role(identity, "agent")
    if identity.printer_id != printer_id:
        raise BadgelineError(
            ErrorCode.FORBIDDEN,
            f"this agent token is bound to {identity.printer_id}, not {printer_id}",
        )


# ---- `badgeline hash-token`

# A token the operator chose is only as strong as its length: 16 characters is
# about what an 8-byte random token holds; the generated ones carry 32 bytes.
MIN_CHOSEN_TOKEN_CHARS = 16
EXIT_BAD_ARGUMENTS = 2
# The entry's fields as the command's options, so an error names what to change.
_OPTION_OF_FIELD = {"name": "--name", "role": "--role", "printer_id": "--printer-id"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", required=True, help="who holds the token, e.g. kiosk-hall-a")
    parser.add_argument("--role", required=True, choices=["kiosk", "agent", "operator", "metrics"],
                        help="metrics: a Prometheus server's, for GET /metrics only")  # fmt: skip
    parser.add_argument("--printer-id", help="the printer an agent token is bound to")
    parser.add_argument(
        "--token",
        help=f"hash this token instead of generating a new one "
        f"(at least {MIN_CHOSEN_TOKEN_CHARS} characters)",
    )


def _describe(error: ValidationError) -> list[str]:
    problems = []
    for problem in error.errors(include_url=False):
        field = str(problem["loc"][0]) if problem["loc"] else ""
        message = problem["msg"].removeprefix("Value error, ")
        option = _OPTION_OF_FIELD.get(field)
        problems.append(f"{option}: {message}" if option else message)
    return problems


def toml_string(value: object) -> str:
    """A TOML basic string: JSON's escapes are TOML's, except that TOML has no
    UTF-16 surrogate pairs (so no ASCII-only output) and wants DEL escaped."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def _option_problems(args: argparse.Namespace) -> list[str]:
    """What the options get wrong before a config entry can be built from them."""
    problems = []
    if args.role == "agent" and not args.printer_id:
        problems.append("--printer-id: an agent token is bound to one printer; "
                        "name it, e.g. --printer-id printer-a1")  # fmt: skip
    if args.role != "agent" and args.printer_id:
        problems.append(f"--printer-id: only agent tokens are bound to a printer; "
                        f"leave it out for a {args.role} token")  # fmt: skip
    if args.printer_id and not is_printer_id(args.printer_id):
        problems.append(f"--printer-id: {args.printer_id!r} is not a printer id: `printer-` "
                        f"then 1-16 lowercase letters or digits, e.g. printer-a1")  # fmt: skip
    if args.token is not None and len(args.token) < MIN_CHOSEN_TOKEN_CHARS:
        problems.append(f"--token: {len(args.token)} characters is too easy to guess; use at "
                        f"least {MIN_CHOSEN_TOKEN_CHARS}, or leave out --token for a random "
                        f"one")  # fmt: skip
    return problems


def run(args: argparse.Namespace) -> int:
    problems = _option_problems(args)
    token = args.token or secrets.token_urlsafe(32)
    entry = None
    if not problems:
        try:
            entry = TokenEntry(name=args.name, role=args.role, sha256=token_digest(token),
                               printer_id=args.printer_id)  # fmt: skip
        except ValidationError as error:
            problems = _describe(error)
    if entry is None:
        for problem in problems:
            print(f"badgeline hash-token: {problem}", file=sys.stderr)
        return EXIT_BAD_ARGUMENTS
    print(f"# give this token to {toml_string(args.name)}; only its hash goes into the config")
    print(f"# token: {token}")
    print("[[tokens]]")
    for key, value in entry.model_dump(exclude_none=True).items():
        print(f"{key} = {toml_string(value)}")
    return 0
