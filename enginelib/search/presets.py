"""Named fusion presets (the spec's ``search_config`` table), stored in the catalog."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..catalog_presets import preset_rows, upsert_preset
from ..errors import InvalidInputError
from ..validation import check_name, check_text
from .request import OPTIONS, SearchRequest, build_request, option_spec

if TYPE_CHECKING:
    from ..catalog import Catalog

def load_presets(catalog: Catalog) -> dict[str, dict[str, Any]]:
    """Every preset as the search options it stands for (``fusion``, ``rrf_k``, ...)."""
    presets = {}
    for name, fusion, rrf_k, vw, tw, min_score, description in preset_rows(catalog):
        options: dict[str, Any] = {"fusion": fusion, "rrf_k": int(rrf_k), "weights": (vw, tw)}
        if min_score is not None:
            options["min_score"] = float(min_score)
        presets[name] = {"options": options, "description": description}
    return presets


# The options a preset sets (the columns of search_config); their defaults are the request's.
PRESET_OPTIONS = tuple(name for name in OPTIONS if option_spec(name).preset)


def save_preset(
    catalog: Catalog,
    name: str,
    *,
    fusion: str = SearchRequest.fusion,
    rrf_k: int = SearchRequest.rrf_k,
    weights: Sequence[float] | Mapping[str, float] = SearchRequest.weights,
    min_score: float | None = SearchRequest.min_score,
    description: str | None = None,
) -> None:
    """Insert or replace a preset; values are validated as a search request would be."""
    # a name is typed on command lines and shown in lists: the snapshot names' rule
    name = check_name("preset", name)
    if description is not None:
        check_text("preset description", description, max_chars=MAX_DESCRIPTION_CHARS)
    # One rule for a preset's values and a search's: build the request they would make.
    request = build_request("preset", fusion=fusion, rrf_k=rrf_k, weights=weights,
                            min_score=min_score)
    vw, tw = request.weights
    values = [name.strip(), request.fusion, request.rrf_k, vw, tw, request.min_score, description]
    with catalog.transaction():
        upsert_preset(catalog, values)
        catalog.bump_generation()  # readers in other processes reload their presets


MAX_DESCRIPTION_CHARS = 1_000
PRESET_FIELDS = frozenset({"fusion", "rrf_k", "weights", "min_score", "description"})
DEFAULT_PRESET = "default"  # RRF, k = 60: the canonical spec's fusion
_DEFAULT_KEY = "default_search_preset"


def default_preset(catalog: Catalog) -> str:
    """The preset a search uses when the caller names none (set per store)."""
    return catalog.get_meta(_DEFAULT_KEY) or DEFAULT_PRESET


def set_default_preset(catalog: Catalog, name: str) -> None:
    presets = load_presets(catalog)
    if name not in presets:
        raise InvalidInputError(
            f"unknown search preset {name!r}; this store has: {', '.join(sorted(presets))}"
        )
    with catalog.transaction():
        catalog.set_meta(_DEFAULT_KEY, name)
        catalog.bump_generation()  # readers in other processes reload their presets


def apply_preset(
    presets: Mapping[str, Mapping[str, Any]], options: dict[str, Any], default: str = DEFAULT_PRESET
) -> dict[str, Any]:
    """The search options with the named (else the default) preset's values under the
    caller's explicit ones."""
    name = options.get("preset")
    if name is None:
        name = default
        if name not in presets:  # the default preset was deleted by hand: plain defaults
            return options
    if name not in presets:
        raise InvalidInputError(
            f"unknown search preset {name!r}; this store has: {', '.join(sorted(presets))}"
        )
    return {**presets[name]["options"], **options}
