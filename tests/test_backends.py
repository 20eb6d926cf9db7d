"""The registry of what each backend offers (fastcal._backends): complete, true, and the table the guide shows."""

import pathlib

import fastcal
import fastcal.dask
import fastcal.outofcore
import fastcal.spark
from fastcal._backends import BACKENDS, NOT_ROWS, OWN, PARITY, Missing, table

MODULES = {"dask": fastcal.dask, "spark": fastcal.spark, "outofcore": fastcal.outofcore}


def test_every_public_name_is_listed_once():
    public = set(fastcal.__all__)
    assert not set(PARITY) & NOT_ROWS
    assert public == set(PARITY) | NOT_ROWS, (public - set(PARITY) - NOT_ROWS, set(PARITY) | NOT_ROWS - public)


def test_each_entry_names_a_function_of_its_backend_or_says_why_not():
    for name, entry in PARITY.items():
        assert set(entry) == set(BACKENDS), name
        for backend, value in entry.items():
            if isinstance(value, Missing):
                assert len(value) > 10, (name, backend)
                assert value not in MODULES[backend].__all__, (name, backend)
            else:
                assert value in MODULES[backend].__all__ and callable(getattr(MODULES[backend], value)), \
                    (name, backend, value)


def test_each_backend_function_has_an_entry_or_is_its_own():
    for backend, module in MODULES.items():
        named = {entry[backend] for entry in PARITY.values() if not isinstance(entry[backend], Missing)}
        assert set(module.__all__) == named | OWN[backend], (backend, set(module.__all__) ^ (named | OWN[backend]))


def test_a_function_of_the_same_name_computes_the_same_thing():
    """A backend function named as an in-memory function takes its place: a missing one would be an unlisted gap."""
    for name, entry in PARITY.items():
        if callable(getattr(fastcal, name)) and not isinstance(getattr(fastcal, name), type):
            for backend, value in entry.items():
                if not isinstance(value, Missing):
                    assert value == name, (name, backend, value)


def test_the_guide_shows_the_registry():
    text = (pathlib.Path(__file__).parents[1] / "docs" / "user_guide" / "backends.md").read_text()
    assert table() in text
