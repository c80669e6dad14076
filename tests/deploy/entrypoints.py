"""Check that a deployment's command runs one of the console's real entry points.

Each command is parsed by the program's own argument parser, so a misspelt option fails here
and not in a crash-looping pod:

- ``gunicorn APP_MODULE [options]``: gunicorn's parser; the module imports and its WSGI
  callable (``application`` unless ``module:name``) exists.
- ``celery -A APP worker|beat|inspect ... [options]``: Celery's click commands; ``-A`` finds
  the console's Celery app.
- ``python manage.py COMMAND [options]``: the Django management command exists and its parser
  accepts the options.
- ``sh -c 'SCRIPT'``: each of the above inside the script (``echo`` / ``sleep`` are allowed);
  at least one must be there.
"""

from __future__ import annotations

import importlib
import shlex

import click
from celery import Celery
from celery.app.utils import find_app
from celery.bin.base import CLIContext
from celery.bin.celery import celery as celery_cli
from django.core.management import get_commands, load_command_class
from gunicorn.config import Config

SHELL_BUILTINS = {"echo", "sleep", "true", "exit"}
_SHELL_KEYWORDS = {"until", "while", "do", "done", "if", "then", "else", "fi", "!"}
_SEPARATORS = {";", "&&", "||", "|", "&", "\n"}


class CommandError(AssertionError):
    """The command does not run a console entry point (message says why)."""


def _gunicorn(args: list[str]) -> str:
    parser = Config(usage="%(prog)s [OPTIONS] [APP_MODULE]", prog="gunicorn").parser()
    try:
        parsed = parser.parse_args(args)
    except SystemExit:
        raise CommandError(f"gunicorn rejects {args}") from None
    if len(parsed.args) != 1:
        raise CommandError(f"gunicorn needs one APP_MODULE, got {parsed.args}")
    module, _, name = parsed.args[0].partition(":")
    application = getattr(importlib.import_module(module), name or "application", None)
    if not callable(application):
        raise CommandError(f"{parsed.args[0]} is no WSGI callable")
    return f"gunicorn {parsed.args[0]}"


def _celery(args: list[str]) -> str:
    try:
        index = next(i for i, arg in enumerate(args) if arg in celery_cli.commands)
    except StopIteration:
        raise CommandError(f"no celery subcommand in {args}") from None
    try:
        ctx = celery_cli.make_context("celery", args[:index])
        try:
            app = find_app(ctx.params["app"] or "")
        except Exception as exc:  # noqa: BLE001 - any import failure means no app
            raise CommandError(f"-A {ctx.params['app']}: {exc!r}") from None
        if not isinstance(app, Celery):
            raise CommandError(f"-A {ctx.params['app']} is no Celery app")
        ctx.obj = CLIContext(app=app, no_color=True, workdir=None)
        name = args[index]
        celery_cli.commands[name].make_context(name, args[index + 1 :], parent=ctx)
    except click.ClickException as exc:
        raise CommandError(f"celery {' '.join(args)}: {exc.format_message()}") from None
    return f"celery {name}"


def _manage(args: list[str]) -> str:
    if not args:
        raise CommandError("manage.py without a command")
    name, options = args[0], args[1:]
    app = get_commands().get(name)
    if app is None:
        raise CommandError(f"manage.py has no command {name!r}")
    parser = load_command_class(app, name).create_parser("manage.py", name)
    try:
        parser.parse_args(options)
    except Exception as exc:  # noqa: BLE001 - CommandParser raises CommandError
        raise CommandError(f"manage.py {name} {options}: {exc}") from None
    return f"manage.py {name}"


def _simple_commands(script: str) -> list[list[str]]:
    """The simple commands of a plain shell script: split at separators and keywords,
    redirections (``> /dev/null``, ``2>&1``) dropped."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    tokens = list(lexer)
    commands: list[list[str]] = [[]]
    index = 0
    while index < len(tokens):
        token = tokens[index]
        after = tokens[index + 1] if index + 1 < len(tokens) else ""
        if token[0] in "<>":
            index += 1  # the redirection's target
        elif token.isdigit() and after[:1] in ("<", ">"):
            pass  # a file descriptor number
        elif token in _SEPARATORS or token in _SHELL_KEYWORDS:
            commands.append([])
        else:
            commands[-1].append(token)
        index += 1
    return [command for command in commands if command]


def check_command(argv: list[str]) -> list[str]:
    """The entry points ``argv`` runs, e.g. ``["celery worker"]``.

    Raises:
        CommandError: an unknown program or subcommand, an option its parser refuses, or a
            shell script that runs no entry point.
    """
    if not argv:
        raise CommandError("empty command")
    program, args = argv[0].rpartition("/")[2], list(argv[1:])
    if program in ("sh", "bash") and args[:1] == ["-c"] and len(args) == 2:
        found = []
        for command in _simple_commands(args[1]):
            if command[0] not in SHELL_BUILTINS:
                found += check_command(command)
        if not found:
            raise CommandError(f"the script runs no console entry point: {args[1]!r}")
        return found
    if program == "gunicorn":
        return [_gunicorn(args)]
    if program == "celery":
        return [_celery(args)]
    if program in ("python", "python3") and args[:1] == ["manage.py"]:
        return [_manage(args[1:])]
    raise CommandError(
        f"{' '.join(argv)!r} is no console entry point (gunicorn, celery, python manage.py)"
    )
