"""What an engineer's tools read of the public names: a head's call typed as its ``forward`` (``nn.Module`` types every
call as ``Any``), and every parameter of the main entry points named in the docstring that ``help()`` shows."""

import ast
import inspect
import re
from pathlib import Path

import pytest

import bio_mrc
from bio_mrc import AnswerExtractor, BIOHead, Head, SpanHead, TrainedModel, tag_scores
from bio_mrc.decoding.postprocess import decode_span
from bio_mrc.inference import predict_to_files
from bio_mrc.inference.forward import predict_windows, run_windows
from bio_mrc.inference.model_tuning import tune_model
from bio_mrc.inference.onnx import export_onnx
from bio_mrc.inference.pipeline import BioMrcQuestionAnsweringPipeline
from bio_mrc.model import BioMrcForQuestionAnswering

from .read_once import parsed

HEADS = [Head, BIOHead, SpanHead]


def _checked_call(head: type) -> ast.FunctionDef:
    """The ``__call__`` a head's class body declares for type checkers alone (under ``if TYPE_CHECKING:``)."""
    (node,) = [n for n in parsed(Path(inspect.getfile(head))).body
               if isinstance(n, ast.ClassDef) and n.name == head.__name__]
    blocks = [n for n in node.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    (call,) = [n for block in blocks for n in block.body if isinstance(n, ast.FunctionDef) and n.name == "__call__"]
    return call


@pytest.mark.parametrize("head", HEADS, ids=lambda head: head.__name__)
def test_a_heads_call_is_typed_for_type_checkers_as_its_forward(head):
    # nn.Module types its call as Any; the declared call must say what forward says, and run nothing
    call, forward = _checked_call(head), inspect.signature(head.forward)
    assert [arg.arg for arg in call.args.args] == list(forward.parameters)
    assert [ast.unparse(arg.annotation) for arg in call.args.args[1:]] == [p.annotation for p in list(forward.parameters.values())[1:]]
    assert ast.unparse(call.returns) == forward.return_annotation
    assert "__call__" not in vars(head)  # at run time the call is nn.Module's own


def _documented(function) -> list[str]:
    """The parameters of ``function`` that its docstring (a constructor's: its class's) leaves unnamed."""
    owner = function if inspect.isclass(function) else None
    doc = inspect.getdoc(owner or function) or ""
    parameters = inspect.signature(function).parameters.values()
    return [p.name for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in ("self", "cls")
            and not re.search(rf"`{p.name}\b", doc)]


ENTRY_POINTS = {
    "BIOHead": BIOHead, "SpanHead": SpanHead, "BIOHead.forward": BIOHead.forward, "SpanHead.forward": SpanHead.forward,
    "SpanHead.loss": SpanHead.loss, "Head.loss": Head.loss, "AnswerExtractor": AnswerExtractor,
    "AnswerExtractor.__call__": AnswerExtractor.__call__, "AnswerExtractor.from_pretrained": AnswerExtractor.from_pretrained,
    "AnswerExtractor.predict": AnswerExtractor.predict, "TrainedModel.load": TrainedModel.load, "tag_scores": tag_scores,
    "predict_to_files": predict_to_files, "BioMrcQuestionAnsweringPipeline": BioMrcQuestionAnsweringPipeline,
    "BioMrcQuestionAnsweringPipeline.postprocess": BioMrcQuestionAnsweringPipeline.postprocess,
    "TrainedModel.from_qa_checkpoint": TrainedModel.from_qa_checkpoint, "export_onnx": export_onnx,
    "predict_windows": predict_windows, "run_windows": run_windows, "tune_model": tune_model, "decode_span": decode_span,
    "BioMrcForQuestionAnswering.forward": BioMrcForQuestionAnswering.forward,
    "BioMrcForQuestionAnswering.from_encoder": BioMrcForQuestionAnswering.from_encoder,
}


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_each_parameter_of_an_entry_point_is_named_in_its_docstring(name):
    assert _documented(ENTRY_POINTS[name]) == []
