"""The server's options and the limits a request must keep, as one dataclass: the command-line
options of ``bio-mrc serve`` and the request schema's limits are both read from it."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config_schema import check_fields
from ..inference.defaults import SLICE_WINDOWS

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class ServeConfig:
    """How ``bio-mrc serve`` listens, batches and bounds requests; each field's metadata gives its help."""

    host: str = field(default=LOOPBACK, metadata={
        "help": "address to listen on; the loopback default serves this machine only (0.0.0.0: every interface)"})
    port: int = field(default=8000, metadata={"help": "TCP port to listen on", "minimum": 1, "maximum": 65535})
    max_batch_size: int = field(default=32, metadata={
        "help": "most questions answered in one forward pass; also the most one request may ask (more: 413)",
        "minimum": 1, "maximum": 4096})
    max_wait_ms: float = field(default=5.0, metadata={
        "help": "how long the first waiting request waits for others to join its batch (0: no waiting)",
        "minimum": 0, "maximum": 10_000})
    max_context_chars: int = field(default=100_000, metadata={
        "help": "longest context a request may send, in characters (longer: 422)", "minimum": 1, "maximum": 10_000_000})
    max_question_chars: int = field(default=1_000, metadata={
        "help": "longest question a request may send, in characters (longer: 422)", "minimum": 1, "maximum": 100_000})

    request_timeout_s: float = field(default=60.0, metadata={
        "help": "longest a request may take, waiting included (longer: 504, and its questions not yet run are dropped)",
        "exclusive_minimum": 0, "maximum": 86_400})
    max_batch_chars: int = field(default=50_000, metadata={
        "help": "most characters (questions and contexts) one forward pass takes; a longer question runs alone. "
                "Batches are filled request by request, the request served least first, so long requests "
                "cannot hold back short ones", "minimum": 1, "maximum": 100_000_000})
    max_request_windows: int = field(default=SLICE_WINDOWS, metadata={
        "help": "most windows of one request's questions read and answered at once, estimated from their contexts' "
                "lengths at a token a character: a request past it is answered in consecutive slices of its questions "
                "(or of one question's documents), each read once the one before is answered (a question estimated past "
                "it is a slice alone), so its memory is about one slice's", "minimum": 1, "maximum": 100_000_000})
    long_pass_ms: float = field(default=10.0, metadata={
        "help": "how long one forward pass over a long question's windows (more than one pass of them) may take, "
                "judged by the passes run so far (at least one window a pass): a short request waits behind others' "
                "long questions for about one such pass; longer passes answer long questions a little faster",
        "exclusive_minimum": 0, "maximum": 60_000})
    max_bodies_bytes: int = field(default=256 * 1024 * 1024, metadata={
        "help": "most bytes of request bodies held at once, all requests being read or answered together (never "
                "less than one body of the largest valid request); a body past it: 503, try again",
        "minimum": 1, "maximum": 1 << 40})
    max_concurrent_requests: int = field(default=256, metadata={
        "help": "most requests being read or answered at once (a connection idle between requests is none); one more "
                "is refused unread: 503, try again", "minimum": 1, "maximum": 1_000_000})
    head_timeout_s: float = field(default=10.0, metadata={
        "help": "longest a connection may take to send a request's line and headers, from its opening or from the first "
                "byte of its next request (longer: 408, and the connection closed)", "exclusive_minimum": 0, "maximum": 3_600})
    keep_alive_s: float = field(default=5.0, metadata={
        "help": "how long a connection may stay idle after a response before the server closes it",
        "exclusive_minimum": 0, "maximum": 3_600})
    max_connections: int = field(default=1_000, metadata={
        "help": "most connections open at once, idle ones included; one more is answered 503 and closed, lingering "
                "briefly so that its client reads the answer, not a reset (a few at once; past them, closed at once) (the "
                "server raises its open-file limit to hold them, up to the hard limit, else lowers this bound to fit)", "minimum": 1, "maximum": 1_000_000})
    max_head_bytes: int = field(default=16_384, metadata={
        "help": "most bytes of a request line and headers, still coming or sent whole (more: 431, and the connection "
                "closed)",
        "minimum": 1_024, "maximum": 1 << 20})
    backlog: int = field(default=2_048, metadata={
        "help": "most connections the system queues before the server accepts them (at most the system's somaxconn)",
        "minimum": 1, "maximum": 65_535})
    stop_grace_s: float = field(default=10.0, metadata={
        "help": "on SIGTERM or Ctrl-C, how long the server waits for the requests it is answering (a forward pass "
                "running, a body still being sent) before it cuts them (503); questions still queued are answered 503 "
                "at once", "minimum": 0, "maximum": 3_600})
    allowed_hosts: str = field(default="", metadata={
        "help": "comma-separated host names the Host header may name (DNS-rebinding protection); "
                "empty: localhost, 127.0.0.1, ::1 and --host; '*': any"})

    def __post_init__(self) -> None:
        check_fields(self)

    @property
    def max_body_bytes(self) -> int:
        """The largest body a valid request can need (twelve bytes per character: one beyond the BMP
        written as two JSON ``\\uXXXX`` escapes), plus room for the options; a longer body is refused (413) unread."""
        return self.max_batch_size * (self.max_context_chars + self.max_question_chars) * 12 + 65_536
