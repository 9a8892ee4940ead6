"""The operator CLI: `badgeline printers`, `queues`, `reconcile`, … over the
coordinator's HTTP API (never Redis directly), so it works from any laptop on
the venue network with an operator token and can do nothing the API refuses.

Each command is a module with `add_arguments` and `run`, registered in
`badgeline.cli.SUBCOMMANDS`. Shared parts: `client` (HTTP), `command`
(common options, error handling, --json), `tables` (plain-text output).
"""
