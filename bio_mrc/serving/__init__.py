"""``bio-mrc serve``: answers over HTTP, with concurrent requests batched into one forward pass.

* :mod:`.config`: the server's options and request limits (``ServeConfig``; no web stack needed to read them);
* :mod:`.schema`: the JSON request and response models (pydantic), with the limits as field constraints;
* :mod:`.batching`: the worker that gathers concurrent requests for a few milliseconds into one batch;
* :mod:`.answering`: one batch of requests -> one forward pass -> each request's answers (``AnswerExtractor``'s);
* :mod:`.app`: the FastAPI application (``POST /answer``, ``GET /health``, the OpenAPI page);
* :mod:`.server`: loading a model folder and running the application under uvicorn;
* :mod:`.connections`: bounds on connections before a request reaches the application (a request head's time, the
  connections open at once).

Needs the ``serve`` extra (``pip install "bio_mrc[serve]"``: FastAPI and uvicorn); only :mod:`.config`
loads without it.
"""
