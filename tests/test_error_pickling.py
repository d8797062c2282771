"""Every enginelib error copies and unpickles as it was raised: an error raised in a worker
process (multiprocessing, ProcessPoolExecutor) must reach the caller, not break the pool."""

from __future__ import annotations

import copy
import inspect
import pickle
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest

from enginelib import errors


def _all_errors() -> list[type[errors.EngineError]]:
    seen: list[type[errors.EngineError]] = []
    todo: list[type[errors.EngineError]] = [errors.EngineError]
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.append(cls)
            todo.extend(cls.__subclasses__())
    return sorted(seen, key=lambda c: c.__name__)


def _sample(cls: type[errors.EngineError]) -> errors.EngineError:
    """An instance built through the class's own __init__, every parameter given a value of
    the kind its annotation names."""
    values: dict[str, Any] = {"job_id": 7, "size": 9, "deleted": True, "status": "DONE"}
    args, kwargs = [], {}
    for name, param in inspect.signature(cls.__init__).parameters.items():
        if name == "self" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        value = values.get(name, f"{name} of {cls.__name__}")
        if param.kind == param.KEYWORD_ONLY:
            kwargs[name] = value
        else:
            args.append(value)
    return cls(*args, **kwargs)


@pytest.mark.parametrize("cls", _all_errors(), ids=lambda c: c.__name__)
def test_every_error_copies_and_unpickles_with_its_message_and_attributes(cls):
    error = _sample(cls)
    for again in (pickle.loads(pickle.dumps(error)), copy.copy(error), copy.deepcopy(error)):
        assert type(again) is cls
        assert str(again) == str(error) and again.args == error.args
        assert vars(again) == vars(error)


def _raise_job_state_error() -> None:
    raise errors.JobStateError("job 7 is DONE: only a job in the DLQ can be retried",
                               job_id=7, status="DONE")


def test_an_error_with_more_than_a_message_reaches_the_caller_of_a_process_pool():
    # Exception's own pickling rebuilt it as JobStateError(message), which its __init__ cannot
    # take: the pool broke (BrokenProcessPool) and the caller never saw the error
    with ProcessPoolExecutor(max_workers=1) as pool:
        future = pool.submit(_raise_job_state_error)
        with pytest.raises(errors.JobStateError) as raised:
            future.result(timeout=120)
    assert raised.value.job_id == 7 and raised.value.status == "DONE"
    assert "only a job in the DLQ" in str(raised.value)
