from __future__ import annotations

from raf.tools.docstring import parse_docstring


def test_summary_is_the_first_paragraph_joined_into_one_line() -> None:
    doc = parse_docstring(
        """Look up the weather
        for a city.

        More detail that is not part of the summary.
        """
    )
    assert doc.summary == "Look up the weather for a city."


def test_args_section_with_types_and_continuation_lines() -> None:
    doc = parse_docstring(
        """Book a table.

        Args:
            restaurant (str): where to eat.
            people: how many guests,
                children included.
            *extras: ignored extras.

        Returns:
            confirmation: not a parameter.

        Raises:
            ValueError: not a parameter either.
        """
    )
    assert doc.summary == "Book a table."
    assert doc.params == {
        "restaurant": "where to eat.",
        "people": "how many guests, children included.",
        "extras": "ignored extras.",
    }


def test_other_section_headers_are_accepted() -> None:
    doc = parse_docstring("Do it.\n\nArguments:\n    speed: how fast.\n")
    assert doc.params == {"speed": "how fast."}


def test_summary_stops_at_a_section_without_blank_line() -> None:
    doc = parse_docstring("Do it.\nArgs:\n    speed: how fast.\n")
    assert doc.summary == "Do it."
    assert doc.params == {"speed": "how fast."}


def test_missing_docstring_gives_empty_results() -> None:
    assert parse_docstring(None).summary == ""
    assert parse_docstring("").params == {}
