"""``errors.frame_free``: the copy of an error that failed tensors and finished runs store
and raise again. It must read as the original (type, message, cause, where it was raised)
and hold no frame, since a frame holds its locals and its callers' frames (the program's
tensors; see ``test_faults.py``'s freed-tensors test)."""

from __future__ import annotations

import pytest

from lazygen.runtime.errors import LazygenRuntimeError, frame_free


class _NeedsTwoArguments(Exception):
    def __init__(self, what: str, code: int) -> None:
        super().__init__(f"{what} ({code})")


def _raised(error: BaseException) -> BaseException:
    try:
        raise error
    except BaseException as caught:
        return caught


def _cause_and_error() -> BaseException:
    try:
        try:
            raise KeyError("inner")
        except KeyError as inner:
            raise ValueError("outer") from inner
    except ValueError as error:
        return error


def test_the_copy_reads_as_the_original_and_holds_no_frame():
    error = _cause_and_error()
    copy = frame_free(error)
    assert copy is not error and type(copy) is ValueError and str(copy) == "outer"
    assert copy.__traceback__ is None and copy.__cause__.__traceback__ is None
    assert type(copy.__cause__) is KeyError and copy.__cause__.args == ("inner",)
    # where it was raised stays readable
    assert any("_cause_and_error" in note for note in copy.__notes__)
    assert error.__traceback__ is not None  # the original is left as it was


def test_raising_the_copy_leaves_the_stored_error_without_the_raisers_frames():
    stored = frame_free(_raised(RuntimeError("run failed")))
    again = _raised(frame_free(stored))
    assert again.__traceback__ is not None and stored.__traceback__ is None


def test_an_error_that_cannot_be_copied_keeps_its_type_and_message_in_words():
    copy = frame_free(_raised(_NeedsTwoArguments("device lost", 3)))
    assert isinstance(copy, LazygenRuntimeError)
    assert str(copy) == "_NeedsTwoArguments: device lost (3)"


@pytest.mark.parametrize("error", [KeyboardInterrupt(), SystemExit(2)])
def test_base_exceptions_copy_too(error):
    copy = frame_free(_raised(error))
    assert type(copy) is type(error) and copy.args == error.args and copy is not error
