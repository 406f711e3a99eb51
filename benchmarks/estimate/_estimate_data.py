"""The real data sets of issue 44's benchmark scripts (``adaptive_tables.py``, ``adaptive_limit.py``,
``adaptive_looking_stop.py``): one response matrix per name asked for, opencompass-irt one per benchmark."""

from evalsift.estimate import response_matrix


def datasets(which):
    """(name, ResponseMatrix) for each of ``which`` (``wmt23``: WMT23 en-de MQM; ``alpaca-eval``;
    ``opencompass-irt``: one matrix per value of its ``benchmark`` column), in that order."""
    if "wmt23" in which:
        yield "wmt23/en-de mqm", response_matrix("wmt23/en-de", metric="mqm")
    if "alpaca-eval" in which:
        yield "alpaca-eval", response_matrix("alpaca-eval")
    if "opencompass-irt" in which:
        R = response_matrix("opencompass-irt")
        for value in R.groups("benchmark"):
            yield f"opencompass-irt/{value}", R.group("benchmark", value)
