"""Table-driven tests: rows of (id, *values) become pytest parameters."""

import pytest


def params(table):
    return [pytest.param(*row[1:], id=row[0]) for row in table]
