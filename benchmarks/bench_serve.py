"""bio-mrc serve under load: dynamic batching against one request at a time, on a loopback port.

Both sides are the same server (``bio-mrc serve`` in a subprocess, the same model, fp32 by default)
under the same bounded load, one after the other: ``--clients`` concurrent clients (asyncio tasks in
this process, each with its own connection), each sending one question at a time and the next as
soon as its answer comes, for ``--duration`` seconds after a warm-up. With ``--shared-pool`` the
clients share one httpx connection pool instead: httpx then spends more of this process's CPU per
request the more requests wait for a connection, and the clients, not the server, set the pace. The questions are the
first ``--questions`` of SQuAD v1.1 dev, taken in turn.

* ONE AT A TIME: ``--max-batch-size 1 --max-wait-ms 0``: each request is its own forward pass;
  the others wait their turn (what a server without batching does, and what calling
  ``AnswerExtractor`` once per request costs).
* BATCHED: ``--max-batch-size`` and ``--max-wait-ms`` as given (the server's defaults unless set).

Reported per side: questions answered per second, latency p50 and p99 (from sending to the whole
answer read), the mean batch the server ran (from ``/health``). Identical: every answer of both
sides against ``AnswerExtractor`` on the same model, one question alone, in this process: the same
spans (text and offsets) and abstention, and the largest score difference.

The model: ``--model DIR``, or by default a random 2-layer BERT (H=32, windows of 384, stride 128)
with a WordPiece vocabulary of the questions' words: the tiny model the serving targets are set on,
where the forward pass is cheap and a request's fixed costs (featurising, decoding, HTTP) dominate.

    python benchmarks/bench_serve.py [--model DIR] [--clients 16] [--duration 20] [--questions 300]
        [--max-batch-size 32] [--max-wait-ms 5] [--precision fp32]

The last line is one JSON object: ``{"benchmark": "serve", "ratio": batched / one-at-a-time
throughput, "identical": ..., "one_at_a_time": {...}, "batched": {...}, "machine": ...}``.

With ``--hostile N`` it measures fairness instead, on one server with the defaults: one client sends
one short question at a time for ``--duration`` seconds, first alone, then while ``N`` clients each
send the largest request the server accepts (``--max-batch-size`` questions, each with a context of
``max_context_chars``) and hang up after ``--hang-up-s``, over and over, from a process of their own (as other
people's clients would: on the short client's event loop their work would delay its requests). Reported: the
short question's p50 and p99 latency on both sides and their ratio (target: p99 within 3x), and the seconds a
request of 4 of those long questions takes alone (what long questions pay for the short ones' turns).

    python benchmarks/bench_serve.py --hostile 3 --duration 15
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


from bio_mrc.data.squad import load_squad
from bio_mrc.inference import AnswerExtractor, TrainedModel
from bio_mrc.serving.config import ServeConfig

import _common

NAME = "serve"
TARGET = 3.0  # batched throughput at least this many times one-at-a-time
LONG_QUESTIONS = 4  # of the maximal request, timed alone: what a long question pays for the short ones' turns
FAIR_TARGET = 3.0  # a short request's p99 beside hostile clients at most this many times its p99 alone


def parse_args() -> argparse.Namespace:
    """The options, with the data and model checked before any work."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="a bio_mrc model folder (default: a tiny random model, see above)")
    _common.add_data_arguments(parser, "squad-v1.1/dev.json", "SQuAD v1.1 dev JSON")
    parser.add_argument("--questions", type=int, default=300, help="distinct questions sent, in turn")
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients, each with one request in flight")
    parser.add_argument("--shared-pool", action="store_true",
                        help="the clients share one httpx connection pool (default: each its own connection)")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of measured load per side")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds of unmeasured load per side first")
    parser.add_argument("--max-batch-size", type=int, default=None, help="the batched server's (default: serve's default)")
    parser.add_argument("--max-wait-ms", type=float, default=None, help="the batched server's (default: serve's default)")
    parser.add_argument("--precision", default="fp32", help="of the server's and the reference's forward pass")
    parser.add_argument("--hostile", type=int, default=0,
                        help="measure fairness: this many clients send maximal requests and hang up (see above)")
    parser.add_argument("--hang-up-s", type=float, default=0.5, help="how long a hostile client waits before hanging up")
    parser.add_argument("--server-threads", type=int, default=None,
                        help="the server's torch threads (OMP_NUM_THREADS; default: torch's, one per core)")
    args = parser.parse_args()
    if args.model is not None and _common.existing_input(args.model) is None:
        _common.fail(f"no model folder at {args.model}: pass --model with a folder `bio-mrc train` wrote, or leave it out")
    _common.require_module("fastapi", "pip install -e '.[serve]'")
    _common.require_module("httpx", "pip install httpx")
    args.data = _common.data_file(args, "squad-v1.1/dev.json")
    return args


def tiny_model(folder: Path, texts: list[str]) -> Path:
    """A random 2-layer BERT joint model with windows of 384, its vocabulary the words of ``texts``."""
    words = sorted({w for text in texts for w in re.findall(r"\w+|[^\w\s]", text.lower())})
    chars = sorted({c for w in words for c in w})
    return _common.untrained_tiny_model(folder, list(dict.fromkeys(words + chars + ["##" + c for c in chars])))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(model_dir: Path, options: list[str], precision: str, log: Path, threads: int | None) -> tuple[subprocess.Popen, str]:
    """``bio-mrc serve`` in a subprocess on a free loopback port (its log to ``log``), once ``/health`` answers: (process, URL)."""
    port = free_port()
    command = [sys.executable, "-m", "bio_mrc.cli", "serve", str(model_dir), "--port", str(port), "--precision", precision,
               *options]
    with log.open("w") as stream:
        env = {**os.environ, **({"OMP_NUM_THREADS": str(threads)} if threads else {})}
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stream, env=env)
    import httpx  # optional (the dev extra): parse_args has checked it is installed

    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            _common.fail(f"the server ended before it answered: {log.read_text().strip()[-400:]}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return process, url
        except httpx.TransportError:
            time.sleep(0.2)
    process.terminate()
    _common.fail("the server did not answer /health within 120 s")


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux's /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def load(url: str, pid: int, bodies: list[dict], clients: int, warmup: float, duration: float,
               shared_pool: bool = False) -> dict:
    """``clients`` closed-loop clients for ``warmup`` then ``duration`` seconds: throughput, latencies, where the
    CPU went (the server process, the batch worker inside it, this process: the clients) and the answers. Each
    client has its own connection, as independent clients do; with ``shared_pool``, all share one httpx pool."""
    import httpx  # optional (the dev extra): parse_args has checked it is installed

    latencies: list[float] = []  # of the requests sent in the measured window
    completed = 0  # answers that came back in the measured window
    answers: dict[int, dict] = {}
    turn = iter(range(10**12))
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with contextlib.AsyncExitStack() as stack:
        def new_client(**options) -> httpx.AsyncClient:
            return stack.enter_async_context(httpx.AsyncClient(base_url=url, timeout=60, **options))

        monitor = await new_client()  # its own connection: the clients hold every other
        pool = await new_client(limits=limits) if shared_pool else None

        async def snapshot() -> tuple[float, float, float, dict]:
            served = (await monitor.get("/health")).json()["served"]
            return time.perf_counter(), process_cpu_seconds(pid), time.process_time(), served

        start = time.perf_counter()
        measured_from, until = start + warmup, start + warmup + duration

        async def one_client() -> None:
            nonlocal completed
            client = pool or await new_client()
            while (sent := time.perf_counter()) < until:
                index = next(turn) % len(bodies)
                response = await client.post("/answer", json=bodies[index])
                if response.status_code != 200:
                    raise RuntimeError(f"{response.status_code}: {response.text[:300]}")
                done = time.perf_counter()
                completed += measured_from <= done < until
                if sent >= measured_from:
                    latencies.append(done - sent)
                    answers.setdefault(index, response.json()["results"][0])

        async def measure() -> tuple:
            await asyncio.sleep(warmup)
            return await snapshot()

        before, *_ = await asyncio.gather(measure(), *(one_client() for _ in range(clients)))
        after = await snapshot()
    n = len(latencies)
    questions, batches = (after[3][k] - before[3][k] for k in ("questions", "batches"))
    latencies.sort()
    return {"questions_per_s": round(completed / duration, 1), "answered": completed, "seconds": duration,
            "p50_ms": round(1000 * statistics.median(latencies), 1),
            "p99_ms": round(1000 * latencies[min(n - 1, int(0.99 * n))], 1),
            "mean_batch": round(questions / max(batches, 1), 2),
            "worker_busy_share": round((after[3]["busy_seconds"] - before[3]["busy_seconds"]) / (after[0] - before[0]), 2),
            "worker_ms_per_question": round(1000 * (after[3]["busy_seconds"] - before[3]["busy_seconds"]) / max(questions, 1), 2),
            "server_cpu_ms_per_question": round(1000 * (after[1] - before[1]) / max(questions, 1), 2),
            "client_cpu_ms_per_question": round(1000 * (after[2] - before[2]) / max(n, 1), 2),
            "answers": answers}


def run_side(model_dir: Path, options: list[str], args: argparse.Namespace, bodies: list[dict], log: Path) -> dict:
    process, url = start_server(model_dir, options, args.precision, log, args.server_threads)
    try:
        return asyncio.run(load(url, process.pid, bodies, args.clients, args.warmup, args.duration, args.shared_pool))
    finally:
        process.terminate()
        process.wait(30)


def compare_answers(extractor: AnswerExtractor, bodies: list[dict], answers: dict[int, dict]) -> tuple[int, float]:
    """How many answers differ from AnswerExtractor's (spans, offsets, abstention), and the largest score difference."""
    differing, largest = 0, 0.0
    for index, got in answers.items():
        want = extractor(bodies[index]["question"], bodies[index]["context"]).to_dict()
        if [(s["text"], s["start"], s["end"]) for s in got["spans"]] != [(s["text"], s["start"], s["end"]) for s in want["spans"]] \
                or got["abstain"] != want["abstain"]:
            differing += 1
            continue
        pairs = [(got[k], want[k]) for k in ("confidence", "no_answer_score") if want[k] is not None]
        pairs += [(g["score"], w["score"]) for g, w in zip(got["spans"], want["spans"])]
        largest = max([largest, *(abs(float(g) - float(w)) for g, w in pairs)])
    return differing, largest


def main(args: argparse.Namespace) -> None:
    examples = load_squad(args.data, limit=args.questions).examples
    bodies = [{"question": ex.question, "context": ex.context} for ex in examples]
    batched = ServeConfig(**{k: v for k, v in (("max_batch_size", args.max_batch_size), ("max_wait_ms", args.max_wait_ms))
                             if v is not None})
    sides = {"one_at_a_time": ["--max-batch-size", "1", "--max-wait-ms", "0"],
             "batched": ["--max-batch-size", str(batched.max_batch_size), "--max-wait-ms", str(batched.max_wait_ms)]}
    with tempfile.TemporaryDirectory() as scratch:
        model_dir = Path(args.model) if args.model else tiny_model(Path(scratch), [b["question"] + " " + b["context"] for b in bodies])
        print(f"model: {args.model or 'tiny random 2-layer BERT, windows of 384'}; {len(bodies)} questions; "
              f"{args.clients} clients; {args.duration:.0f} s per side after {args.warmup:.0f} s of warm-up", file=sys.stderr)
        results = {side: run_side(model_dir, options, args, bodies, Path(scratch) / f"{side}.log") for side, options in sides.items()}
        extractor = AnswerExtractor(TrainedModel.load(model_dir, precision=args.precision))
        checks = {side: compare_answers(extractor, bodies, result.pop("answers")) for side, result in results.items()}
    ratio = results["batched"]["questions_per_s"] / results["one_at_a_time"]["questions_per_s"]
    for side, result in results.items():
        differing, largest = checks[side]
        result.update(differing_answers=differing, largest_score_difference=float(f"{largest:.3g}"))
        print(f"{side:>14}: {result['questions_per_s']:7.1f} questions/s, p50 {result['p50_ms']:7.1f} ms, "
              f"p99 {result['p99_ms']:7.1f} ms, mean batch {result['mean_batch']:5.2f}, "
              f"{differing} answers differ from AnswerExtractor's (largest score difference {largest:.2g})")
        print(f"{'':>14}  per question: batch worker {result['worker_ms_per_question']:.1f} ms (busy "
              f"{result['worker_busy_share']:.0%} of the time), server CPU {result['server_cpu_ms_per_question']:.1f} ms, "
              f"clients' CPU {result['client_cpu_ms_per_question']:.1f} ms")
    identical = all(differing == 0 for differing, _ in checks.values())
    print(f"batched / one at a time: {ratio:.2f}x (target {TARGET}x: {'met' if ratio >= TARGET else 'missed'}); "
          f"answers identical: {identical}")
    print(f"machine: {_common.machine_description()}; {_common.command_load_and_date()}")
    print(json.dumps({"benchmark": NAME, "ratio": round(ratio, 2), "identical": identical, "clients": args.clients,
                      "shared_pool": args.shared_pool, "duration_s": args.duration, "precision": args.precision,
                      "server_threads": args.server_threads, "model": args.model or "tiny-random-2x32-384",
                      **results, "machine": _common.machine_description()}))


async def short_requests(url: str, body: dict, until: float) -> dict:
    """One client sending ``body`` again and again until ``until`` (``time.time()``): its latencies."""
    import httpx  # optional (the dev extra): parse_args has checked it is installed

    latencies: list[float] = []
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        while time.time() < until:
            sent = time.perf_counter()
            response = await client.post("/answer", json=body)
            if response.status_code != 200:
                raise RuntimeError(f"{response.status_code}: {response.text[:300]}")
            latencies.append(time.perf_counter() - sent)
    latencies.sort()
    n = len(latencies)
    return {"requests": n, "p50_ms": round(1000 * statistics.median(latencies), 1),
            "p99_ms": round(1000 * latencies[min(n - 1, int(0.99 * n))], 1)}


async def rude_clients(url: str, payload: bytes, until: float, clients: int, hang_up: float) -> int:
    """``clients`` clients each sending ``payload`` and hanging up after ``hang_up`` s, over and over, until
    ``until`` (``time.time()``): how many requests they abandoned."""
    import httpx  # optional (the dev extra): parse_args has checked it is installed

    abandoned = 0

    async def rude() -> None:
        nonlocal abandoned
        while time.time() < until:
            async with httpx.AsyncClient(base_url=url, timeout=hang_up) as client:
                try:
                    await client.post("/answer", content=payload, headers={"content-type": "application/json"})
                except httpx.TimeoutException:
                    abandoned += 1

    await asyncio.gather(*(rude() for _ in range(clients)))
    return abandoned


def _rude_process(url: str, payload: bytes, clients: int, hang_up: float, ready, go, until, abandoned) -> None:
    ready.set()
    go.wait()
    abandoned.value = asyncio.run(rude_clients(url, payload, until.value, clients, hang_up))


def beside_hostile(url: str, body: dict, duration: float, hostile: int, maximal: dict, hang_up: float) -> dict:
    """The short client's latencies while ``hostile`` clients send ``maximal`` and hang up. The hostile clients run
    in a process of their own, as other people's clients would: on the short client's event loop, their work (an
    httpx client made per request: ~20 ms of CPU each) would delay its own requests and count as the server's."""
    context = multiprocessing.get_context("spawn")
    ready, go, until, abandoned = context.Event(), context.Event(), context.Value("d", 0.0), context.Value("i", 0)
    process = context.Process(target=_rude_process, args=(url, json.dumps(maximal).encode(), hostile, hang_up, ready, go,
                                                           until, abandoned), daemon=True)
    process.start()
    try:
        if not ready.wait(120):
            _common.fail("the hostile clients' process did not start within 120 s")
        until.value = time.time() + duration
        go.set()
        result = asyncio.run(short_requests(url, body, until.value))
    finally:
        process.join(hang_up + 30)
        if process.is_alive():
            process.kill()
    return {**result, "abandoned_maximal_requests": abandoned.value}


def long_request_seconds(url: str, body: dict, repeats: int = 4) -> list[float]:
    """Seconds each of ``repeats`` requests of ``body`` took, one after another, nothing else asked meanwhile."""
    import httpx  # optional (the dev extra): parse_args has checked it is installed

    seconds = []
    with httpx.Client(base_url=url, timeout=600) as client:
        for _ in range(repeats):
            started = time.perf_counter()
            response = client.post("/answer", json=body)
            if response.status_code != 200:
                raise RuntimeError(f"{response.status_code}: {response.text[:300]}")
            seconds.append(time.perf_counter() - started)
    return seconds


def fairness(args: argparse.Namespace) -> None:
    """A short request's latency alone and beside ``args.hostile`` clients that send maximal requests and hang up."""
    examples = load_squad(args.data, limit=args.questions).examples
    config = ServeConfig(**{k: v for k, v in (("max_batch_size", args.max_batch_size), ("max_wait_ms", args.max_wait_ms))
                            if v is not None})
    body = {"question": examples[0].question, "context": examples[0].context}
    long_context = (" ".join(ex.context for ex in examples) * 100)[: config.max_context_chars]
    maximal = {"question": [ex.question for ex in examples[: config.max_batch_size]],
               "context": [long_context] * config.max_batch_size}
    with tempfile.TemporaryDirectory() as scratch:
        model_dir = Path(args.model) if args.model else tiny_model(Path(scratch), [ex.question + " " + ex.context for ex in examples])
        options = ["--max-batch-size", str(config.max_batch_size), "--max-wait-ms", str(config.max_wait_ms)]
        process, url = start_server(model_dir, options, args.precision, Path(scratch) / "fair.log", args.server_threads)
        try:
            asyncio.run(short_requests(url, body, time.time() + args.warmup))
            alone = asyncio.run(short_requests(url, body, time.time() + args.duration))
            long_alone = long_request_seconds(url, {key: value[:LONG_QUESTIONS] for key, value in maximal.items()})
            beside = beside_hostile(url, body, args.duration, args.hostile, maximal, args.hang_up_s)
        finally:
            process.terminate()
            process.wait(30)
    ratio = beside["p99_ms"] / alone["p99_ms"]
    print(f"long request alone ({LONG_QUESTIONS} questions of {config.max_context_chars:,} characters): "
          f"{', '.join(f'{seconds:.2f}' for seconds in long_alone)} s")
    print(f"short request alone: p50 {alone['p50_ms']} ms, p99 {alone['p99_ms']} ms ({alone['requests']} requests)")
    print(f"beside {args.hostile} clients sending {config.max_batch_size} x {config.max_context_chars:,}-character "
          f"requests and hanging up after {args.hang_up_s} s ({beside['abandoned_maximal_requests']} abandoned): "
          f"p50 {beside['p50_ms']} ms, p99 {beside['p99_ms']} ms ({beside['requests']} requests)")
    print(f"p99 beside / alone: {ratio:.2f}x (target within {FAIR_TARGET}x: {'met' if ratio <= FAIR_TARGET else 'missed'})")
    print(f"machine: {_common.machine_description()}; {_common.command_load_and_date()}")
    print(json.dumps({"benchmark": NAME + "-fairness", "ratio": round(ratio, 2), "hostile": args.hostile,
                      "hang_up_s": args.hang_up_s, "alone": alone, "beside": beside,
                      "long_alone_s": [round(seconds, 3) for seconds in long_alone],
                      "model": args.model or "tiny-random-2x32-384", "machine": _common.machine_description()}))


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    arguments = parse_args()
    fairness(arguments) if arguments.hostile else main(arguments)
