"""One error type for bad input, always naming the file and the record."""


class DataFormatError(ValueError):
    """Raised when an input file or record does not fit the expected layout."""

    def __init__(self, problem: str, record: str | None = None, source: str | None = None) -> None:
        where = ", ".join(part for part in (f"in {source}" if source else "", f"record {record!r}" if record else "") if part)
        super().__init__(f"{problem} ({where})" if where else problem)
        self.problem, self.record, self.source = problem, record, source
