"""Type hints of ``bio_mrc``'s exports, which ``__init__.py`` loads on first use: a type checker reads
``from bio_mrc import AnswerExtractor`` as the class itself, not as ``Any`` (tests/test_packaging.py keeps the two in step)."""

from .heads.base import Head as Head
from .heads.bio import BIOHead as BIOHead
from .heads.span import SpanHead as SpanHead
from .inference.extract import AnswerExtractor as AnswerExtractor
from .inference.loading import TrainedModel as TrainedModel
from .inference.pipeline import BioMrcQuestionAnsweringPipeline as BioMrcQuestionAnsweringPipeline, register_pipeline as register_pipeline
from .metrics.entity_scores import tag_scores as tag_scores
from .model import BioMrcConfig as BioMrcConfig, BioMrcForQuestionAnswering as BioMrcForQuestionAnswering, register_auto_classes as register_auto_classes
from .types import AnswerSpan as AnswerSpan, Example as Example, Prediction as Prediction

__version__: str
