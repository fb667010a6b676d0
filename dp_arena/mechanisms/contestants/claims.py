"""What a contestant claims, and what each shipped adapter declares (its manifest).

A contestant's row on the board is only as good as its claim, and the claims differ in kind, so
each contestant declares, and each run is tagged with (:meth:`Claim.tags`):

- ``claim.guarantee``: ``pure`` (epsilon-DP), ``approximate`` ((epsilon, delta)-DP), or
  ``undeclared`` (a user's script that said nothing);
- ``claim.accountant``: how the contestant composes its budget (free text, e.g.
  ``zcdp (OpenDP Context)``);
- ``claim.reads_from_data``: what it takes from the private data *outside* its budget, a
  comma-separated subset of :data:`READS` in that order (``domain``: the categories or columns'
  ranges; ``bins``: cut points; ``row_count``: the exact number of private rows), ``none``, or
  ``unknown`` (undeclared);
- ``claim.budget_checked``: ``true`` only when dp-arena's own ledger sees every noisy release
  (no external contestant does: its noise is drawn by its library), else ``false``;
- ``claim.budget_path``: ``adapter`` when dp-arena's domain and budget reach the library through
  adapter code in this repository (converted by code we read, spent by the library's own
  accounting), ``library`` when the library takes them its own way (code we do not control);
- ``claim.note``: one public sentence (where a leak is, or how the adapter closed one); absent
  when there is none.

The shipped adapters' manifests are :data:`SHIPPED` (filled in from reading each adapter and the
library code it calls); a user's ``external`` contestant declares its claim in
``mechanism.claim`` (:func:`claim_from_config`). A manifest also lists the ``report.json`` tag
names the contestant may report (:attr:`Adapter.report_tags`): any other tag is dropped.

Nothing here reads data: a claim is a constant of the contestant.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dp_arena.errors import ConfigError

GUARANTEES = ("pure", "approximate", "undeclared")
#: What a contestant may read from the private data outside its budget, in tag order.
READS = ("domain", "bins", "row_count")
BUDGET_PATHS = ("adapter", "library")
#: The run tags a claim writes (the board reads these names).
CLAIM_TAGS = ("claim.guarantee", "claim.accountant", "claim.reads_from_data",
              "claim.budget_checked", "claim.budget_path", "claim.note")


@dataclass(frozen=True)
class Claim:
    """A contestant's declared guarantee (see the module docstring). ``reads_from_data``:
    a tuple of :data:`READS` names, or ``None`` when undeclared (``unknown``)."""

    guarantee: str = "undeclared"
    accountant: str = "undeclared"
    reads_from_data: tuple[str, ...] | None = None
    budget_checked: bool = False
    budget_path: str = "library"
    note: str = ""

    def __post_init__(self) -> None:
        problems = claim_problems(self)
        if problems:
            raise ConfigError(f"contestant claim: {'; '.join(problems)}",
                              f"set mechanism.claim.guarantee to one of {list(GUARANTEES)}, "
                              f"reads_from_data to a list from {list(READS)} (or []), "
                              f"budget_path to one of {list(BUDGET_PATHS)}")

    def tags(self) -> dict[str, str]:
        """The run tags of this claim (names :data:`CLAIM_TAGS`)."""
        return {"claim.guarantee": self.guarantee, "claim.accountant": self.accountant,
                "claim.reads_from_data": reads_text(self.reads_from_data),
                "claim.budget_checked": "true" if self.budget_checked else "false",
                "claim.budget_path": self.budget_path,
                **({"claim.note": self.note} if self.note else {})}

    def markers(self) -> str:
        """One short line for ``dp-arena-contestants list``."""
        guarantee = {"pure": "pure DP", "approximate": "approximate DP"}.get(
            self.guarantee, "guarantee undeclared")
        budget = ("budget checked by the ledger" if self.budget_checked else
                  "budget declared" + (" (passed by the adapter)" if self.budget_path ==
                                       "adapter" else " (library's own accounting)"))
        return (f"{guarantee}, {self.accountant}; reads from data: "
                f"{reads_text(self.reads_from_data)}; {budget}")


def reads_text(reads: tuple[str, ...] | None) -> str:
    """``claim.reads_from_data``: the names in :data:`READS` order, ``none`` or ``unknown``."""
    if reads is None:
        return "unknown"
    return ",".join(r for r in READS if r in reads) or "none"


def claim_problems(claim: Claim) -> list[str]:
    problems = []
    if claim.guarantee not in GUARANTEES:
        problems.append(f"guarantee must be one of {list(GUARANTEES)} (got {claim.guarantee!r})")
    if claim.reads_from_data is not None:
        unknown = [r for r in claim.reads_from_data if r not in READS]
        if unknown:
            problems.append(f"reads_from_data may name only {list(READS)} (got {unknown})")
    if claim.budget_path not in BUDGET_PATHS:
        problems.append(f"budget_path must be one of {list(BUDGET_PATHS)} "
                        f"(got {claim.budget_path!r})")
    if not isinstance(claim.budget_checked, bool):
        problems.append("budget_checked must be true or false")
    return problems


def claim_from_config(settings: Mapping[str, Any]) -> Claim:
    """A user's ``mechanism.claim`` (keys of :class:`Claim`); an empty mapping is the
    undeclared claim. ``budget_checked`` cannot be claimed: an external contestant's noise is
    drawn outside the ledger."""
    known = {"guarantee", "accountant", "reads_from_data", "budget_path", "note"}
    extra = sorted(set(settings) - known)
    if extra:
        raise ConfigError(f"unknown keys in mechanism.claim: {extra}",
                          f"use only {sorted(known)} (budget_checked is always false for an "
                          "external contestant)")
    reads = settings.get("reads_from_data")
    if isinstance(reads, str):
        reads = [r.strip() for r in reads.split(",") if r.strip() and r.strip() != "none"]
    return Claim(guarantee=str(settings.get("guarantee", "undeclared")),
                 accountant=str(settings.get("accountant", "undeclared")),
                 reads_from_data=None if reads is None else tuple(str(r) for r in reads),
                 budget_checked=False,
                 budget_path=str(settings.get("budget_path", "library")),
                 note=str(settings.get("note", "")))


@dataclass(frozen=True)
class Adapter:
    """A shipped contestant's manifest: its environment, its claim, and the ``report.json``
    tag names it may report."""

    name: str
    env: str
    claim: Claim
    report_tags: tuple[str, ...] = ()


_OPENDP = Claim(
    guarantee="approximate", accountant="zcdp (OpenDP Context, rho from OpenDP's conversion)",
    reads_from_data=(), budget_checked=False, budget_path="adapter",
    note="domain given as keys; row count: the model's noisy total; OpenDP's Context refuses a "
         "query over its loss")
_SMARTNOISE_AIM = Claim(
    guarantee="approximate", accountant="zcdp (smartnoise cdp_rho, its own rho arithmetic)",
    reads_from_data=(), budget_checked=False, budget_path="adapter",
    note="domain given (transformer fitted on the schema, preprocessor_eps=0); the adapter "
         "draws a noisy row count from 1% of rho (smartnoise's default is the exact count)")
_SMARTNOISE_MST = Claim(
    guarantee="approximate", accountant="zcdp (smartnoise cdp_rho, its own rho arithmetic)",
    reads_from_data=("row_count",), budget_checked=False, budget_path="adapter",
    note="domain given; the adapter draws a noisy row count for the output, but smartnoise "
         "1.0.8's MST fits its model with known_total = the exact private row count")

#: The shipped adapters (``dp_arena/mechanisms/contestants/NAME.py``) and what each declares.
SHIPPED: dict[str, Adapter] = {
    "opendp_aim": Adapter("opendp_aim", "opendp", _OPENDP,
                          ("null_rows_dropped", "rho_shaved_permille")),
    "opendp_mst": Adapter("opendp_mst", "opendp", _OPENDP,
                          ("null_rows_dropped", "rho_shaved_permille")),
    "smartnoise_aim": Adapter("smartnoise_aim", "smartnoise", _SMARTNOISE_AIM),
    "smartnoise_mst": Adapter("smartnoise_mst", "smartnoise", _SMARTNOISE_MST),
    # smartnoise-synth 1.0.8's GANs and MWEM (smartnoise_common.py: fit_and_write_pure_split);
    # the GANs' "domain": smartnoise's DataSampler reads each column's exact category
    # frequencies (more than the domain; no finer name in READS yet)
    "smartnoise_dpctgan": Adapter("smartnoise_dpctgan", "smartnoise", Claim(
        guarantee="approximate", accountant="rdp (opacus 0.14 PrivacyEngine at the given delta; "
        "the adapter's row count 1% by basic composition)",
        reads_from_data=("domain", "row_count"), budget_checked=False, budget_path="adapter",
        note="the library draws its conditional vectors (training and sampling) from each "
             "column's exact category frequencies and sets its sampling rate from the exact "
             "row count; it checks the budget only before each epoch, so the adapter "
             "recomputes the spend and refuses a model past it; output row count noisy")),
    "smartnoise_patectgan": Adapter("smartnoise_patectgan", "smartnoise", Claim(
        guarantee="approximate", accountant="PATE moments accountant (smartnoise's own, "
        "Laplace votes; the adapter's row count 1% by basic composition)",
        reads_from_data=("domain", "row_count"), budget_checked=False, budget_path="adapter",
        note="the library trains on conditional vectors from exact category frequencies, "
             "samples them from private rows, sizes its teachers by the exact row count, and "
             "its teachers are one shared discriminator; output row count noisy")),
    "smartnoise_mwem": Adapter("smartnoise_mwem", "smartnoise", Claim(
        guarantee="pure", accountant="basic composition (smartnoise's own epsilon split over "
        "histograms and iterations; the adapter's row count 1%)",
        reads_from_data=(), budget_checked=False, budget_path="adapter",
        note="the adapter sizes the histograms from the schema and starts them and the "
             "row-count defaults from its noisy count (smartnoise reads the observed code "
             "range and the exact count)")),
    # DataSynthesizer 0.1.13 and dpmm 0.1.9 (datasynthesizer_privbayes.py, dpmm_common.py)
    "datasynthesizer_privbayes": Adapter("datasynthesizer_privbayes", "datasynthesizer", Claim(
        guarantee="pure", accountant="basic composition (DataSynthesizer's own: exponential "
        "mechanism epsilon/2, Laplace epsilon/2; the adapter's row count 1%)",
        reads_from_data=("row_count",), budget_checked=False, budget_path="adapter",
        note="domain given (domain file and public rows holding every code); output row "
             "count noisy; the library calibrates its noise to the exact private row count"),
        ("public_rows_added",)),
    **{f"dpmm_{n}": Adapter(f"dpmm_{n}", "dpmm", Claim(
        guarantee="approximate", accountant="zcdp (dpmm's cdp_rho, its own rho arithmetic)",
        reads_from_data=(), budget_checked=False, budget_path="adapter",
        note="domain given as sizes; row count: the model's noisy total")) for n in ("mst", "aim")},
    "dpmm_privbayes": Adapter("dpmm_privbayes", "dpmm", Claim(
        guarantee="approximate", accountant="basic composition (dpmm's own: exponential "
        "mechanism epsilon/2, Gaussian zcdp at cdp_rho(epsilon/2, delta))",
        reads_from_data=("row_count",), budget_checked=False, budget_path="adapter",
        note="domain given as sizes; output row count: the model's noisy total; its "
             "structure search calibrates to the exact private row count")),
}
