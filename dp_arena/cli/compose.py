"""A command line's config, checked before Hydra starts: one message and exit status 2.

Hydra composes the config files and overrides against the typed schemas
(:mod:`dp_arena.run.config_store`) and, on a bad value, prints OmegaConf's multi-line report and
exits 1. The commands check first instead:

- :func:`override_syntax_problem`: an override Hydra's grammar cannot read (Hydra's message
  has no fix), or an argument that is not ``key=value``;
- :func:`unknown_group_choice`: a group option that does not exist (``mechanism=nosuch``),
  with the choices;
- :func:`composition_problem`: the config composed once with the command's overrides (those
  that are not sweeps; each job of a sweep is composed again by the sweep's preflight), and
  an error turned into the setting, the problem and the fix by
  :func:`dp_arena.params.config_problem`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import dp_arena.audit.config_store  # noqa: F401 - registers every room's config schemas
from dp_arena.params import config_problem


def unknown_group_choice(argv: list[str], conf_dir: Path) -> str | None:
    """A config-group override naming an option that does not exist (``mechanism=nosuch``),
    as one line with the choices; ``None`` when all exist or when the command adds config
    search paths (then Hydra reports it)."""
    overrides = [a for a in argv if "=" in a and not a.startswith("-")]
    if any(a.split("=", 1)[0].lstrip("+~").startswith("hydra.searchpath") for a in overrides):
        return None
    for arg in overrides:
        key, value = arg.split("=", 1)
        group = conf_dir / key.lstrip("+~")
        if key.startswith("hydra") or "." in key or not group.is_dir() or not value:
            continue
        choices = sorted(p.stem for p in group.glob("*.yaml"))
        wanted = [v.strip() for v in value.split(",")]
        missing = [v for v in wanted if v not in choices and v != "null"]
        if missing:
            return (f"{key}: no option named {', '.join(repr(m) for m in missing)}\n"
                    f"  fix: choose from {', '.join(choices)}")
    return None


def override_syntax_problem(argv: list[str]) -> str | None:
    """The first override Hydra's grammar cannot read, with Hydra's reason and the fix
    (Hydra says only ``mismatched input '(' expecting <EOF>`` and exits 1); ``None`` when all
    parse. An argument without ``=`` that is not a flag is one too (Hydra wants
    ``key=value``)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    for arg in argv:
        if arg.startswith("-"):
            continue
        if "=" not in arg and not arg.startswith("~"):
            return (f"cannot read the argument {arg!r}: settings are key=value\n  fix: write it "
                    f"as key=value (e.g. mechanism=independent privacy.epsilon=1), one setting "
                    f"per argument")
        try:
            parser.parse_override(arg)
        except Exception as exc:  # noqa: BLE001 - Hydra's grammar error, said with the fix
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            key, _, value = arg.partition("=")
            return (f"cannot read the override {arg!r} ({reason})\n  fix: write key=value; "
                    f"put a value with spaces or any of ()[]{{}},:= in double quotes for Hydra "
                    f"and the whole argument in single quotes for the shell, e.g. "
                    f"'{key}=\"{value}\"' (a list is [a,b], a sweep a,b)")
    return None


def fixed_overrides(argv: list[str]) -> list[str] | None:
    """The command's overrides that are not sweeps (``a=1,2``, ``a=range(..)``), as given;
    ``None`` when they do not parse (Hydra then says why)."""
    parsed = parsed_overrides(argv)
    return None if parsed is None else [o.input_line for o in parsed
                                        if not o.is_sweep_override()]


def parsed_overrides(argv: list[str]) -> list | None:
    """The command's ``key=value`` arguments as Hydra's parsed overrides; ``None`` when they
    do not parse (a syntax error, said by its own check or by Hydra)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    given = [a for a in argv if "=" in a and not a.startswith("-")]
    try:
        return OverridesParser.create().parse_overrides(given)
    except Exception:  # noqa: BLE001 - a syntax error: Hydra's own message is the clear one
        return None


def swept_open_groups(argv: list[str]) -> list:
    """The command's sweeps of an open group (``mechanism=a,b``), as parsed overrides."""
    return [o for o in parsed_overrides(argv) or []
            if o.is_sweep_override() and o.key_or_group in OPEN_GROUPS]


def composition_problem(conf_dir: Path, config_name: str, argv: list[str]) -> str | None:
    """The first problem composing ``config_name`` with the command's fixed overrides, as
    ``problem\\n  fix: ...``; ``None`` when it composes."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import MissingConfigException

    overrides = fixed_overrides(argv)
    if overrides is None:
        return None
    with initialize_config_dir(config_dir=str(conf_dir), version_base="1.3", job_name="check"):
        for variant in swept_open_choices(argv):
            try:
                compose(config_name, overrides=overrides + variant)
            except MissingConfigException as exc:  # an option no search path holds
                choices = f"choose from {', '.join(exc.options)}" if exc.options else \
                    "check the option's name and hydra.searchpath"
                return f"{str(exc).strip().splitlines()[0]}\n  fix: {choices}"
            except Exception as exc:  # noqa: BLE001 - every composition error: one message
                problem = config_problem(exc)
                return options_lacking(config_name, overrides, argv, problem) or str(problem)
    return None


def swept_open_choices(argv: list[str]) -> list[list[str]]:
    """The compositions that check a command: one per option of each swept open group
    (``mechanism=a,b``: ``[mechanism=a]``, ``[mechanism=b]``), since a setting such as
    ``mechanism.iters=5`` belongs to the chosen options, not to the config's default one;
    ``[[]]`` when no open group is swept."""
    variants = [[f"{o.key_or_group}={value}"] for o in swept_open_groups(argv)
                for value in o.sweep_string_iterator()]
    return variants or [[]]


#: Config groups whose options are open mappings (each option has its own settings).
OPEN_GROUPS = ("mechanism", "dataset")


def options_lacking(config_name: str, overrides: list[str], argv: list[str],
                    problem: BaseException) -> str | None:
    """For an unknown setting of an open group (``mechanism.k=5``), which of the command's
    options of that group lack it, each with its settings:
    ``mechanism 'independent' has no setting k (its settings: max_contrib, noise)``. Runs
    inside an initialized Hydra; ``None`` when it does not apply."""
    from hydra import compose

    text = str(problem).splitlines()[0]
    if not text.startswith("unknown setting"):
        return None
    key = text.split()[2]
    group, _, name = key.partition(".")
    if group not in OPEN_GROUPS or not name or "." in name:
        return None
    chosen = [a.split("=", 1)[1] for a in argv if a.split("=", 1)[0].lstrip("+~") == group]
    options = chosen[-1].split(",") if chosen else [None]
    rest = [o for o in overrides if o.split("=", 1)[0].lstrip("+~") != key]
    lacking = []
    for option in options:
        try:
            cfg = compose(config_name, overrides=rest + ([f"{group}={option}"] if option else []))
        except Exception:  # noqa: BLE001 - another problem: said by the plain message
            return None
        settings = sorted(k for k in cfg[group] if k != "name")
        if name not in settings:
            lacking.append(f"{group} {option or cfg[group].get('name')!r} has no setting {name} "
                           f"(its settings: {', '.join(settings) or 'none'})")
    if not lacking:
        return None
    return (f"unknown setting {key}: " + "; ".join(lacking) +
            f"\n  fix: remove {key}, or sweep it only with the {group} options that have it "
            f"(one command per option)")


def forced_option_settings(argv: list[str]) -> list[str]:
    """``argv`` with each setting of a swept open group (``mechanism.iters=300`` beside
    ``mechanism=a,b``) written ``++mechanism.iters=300``. Hydra composes a sweep's base config
    with the config's default options (mechanism ``independent``, which has no ``iters``)
    before it expands the sweep, so the plain form fails there though every swept option has
    the setting; ``++`` sets it in each job's config. Call it after :func:`refuse_bad_command`,
    which has checked the setting against each swept option."""
    swept = {o.key_or_group for o in swept_open_groups(argv)}
    out = []
    for arg in argv:
        key = arg.split("=", 1)[0]
        group, dot, _ = key.partition(".")
        forced = "=" in arg and not arg.startswith(("-", "+", "~")) and dot and group in swept
        out.append("++" + arg if forced else arg)
    return out


#: Hydra's flags that take a value as the next argument (``-sc install=bash``, ``-c job``).
FLAGS_WITH_VALUE = ("-sc", "--shell-completion", "-c", "--cfg", "-p", "--package",
                    "--info", "-cp", "--config-path", "-cn", "--config-name", "-cd",
                    "--config-dir", "--experimental-rerun")


def overrides_of(argv: list[str]) -> list[str]:
    """The command's overrides: its arguments that are neither Hydra flags nor their values."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in FLAGS_WITH_VALUE:
            skip = arg != "--info" or False
        elif not arg.startswith("-"):
            out.append(arg)
    return out


def first_job_command(config_name: str, conf_dir: Path, argv: list[str]) -> tuple[list[str], str]:
    """For ``--cfg``: the command with every sweep (command line or ``hydra.sweeper.params``)
    replaced by its first value, so Hydra shows the first job's config; and a note saying so
    (empty when nothing is swept). ``-m`` is dropped."""
    from hydra import compose, initialize_config_dir
    from hydra.core.override_parser.overrides_parser import OverridesParser

    given = overrides_of(argv)
    parser = OverridesParser.create()
    try:
        parsed = parser.parse_overrides(given)
        with initialize_config_dir(config_dir=str(conf_dir), version_base="1.3",
                                   job_name="cfg"):
            fixed = [o.input_line for o in parsed if not o.is_sweep_override()]
            cfg = compose(config_name, overrides=fixed, return_hydra_config=True)
            params = dict(cfg.hydra.sweeper.params or {})
    except Exception:  # noqa: BLE001 - a bad command: the usual checks say why
        return argv, ""
    fixed_keys = {o.key_or_group for o in parsed if not o.is_sweep_override()}
    swept = {k: str(v) for k, v in params.items() if k not in fixed_keys}
    swept.update({o.key_or_group: o.input_line.split("=", 1)[1] for o in parsed
                  if o.is_sweep_override()})
    firsts = {}
    for key, value in swept.items():
        values = list(parser.parse_override(f"{key}={value}").sweep_string_iterator()) \
            if "," in value or "(" in value else [value]
        firsts[key] = values[0]
    flags, skip = [], False
    for arg in argv:
        if skip:
            flags.append(arg)
            skip = False
        elif arg in FLAGS_WITH_VALUE:
            flags.append(arg)
            skip = arg != "--info"
        elif arg.startswith("-") and arg not in ("-m", "--multirun"):
            flags.append(arg)
    kept = [o.input_line for o in parsed if not o.is_sweep_override()
            and o.key_or_group not in firsts]
    command = flags + kept + [f"{k}={v}" for k, v in firsts.items()]
    several = {k for k, v in swept.items() if "," in v or "(" in v}
    note = (f"note: a sweep; this is its first job's config "
            f"({', '.join(f'{k}={firsts[k]}' for k in sorted(several))}); the jobs differ in "
            f"{', '.join(sorted(several))}") if several else ""
    return command, note


def refuse_bad_command(prog: str, conf_dir: Path, config_name: str, argv: list[str]) -> None:
    """Exit with status 2 and one message when the command line's config cannot work. Shell
    completion (``-sc``) is Hydra's alone."""
    if any(a in ("-sc", "--shell-completion") for a in argv):
        return
    argv = overrides_of(argv)
    problem = override_syntax_problem(argv) or unknown_group_choice(argv, conf_dir) or \
        composition_problem(conf_dir, config_name, argv)
    if problem:
        print(f"{prog}: {problem}", file=sys.stderr)
        sys.exit(2)
