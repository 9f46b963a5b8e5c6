"""The PreTrainedModel wrapper: typed outputs, losses, save/load round trip."""

import pytest
import torch

from bio_mrc.model import BioMrcConfig, BioMrcForQuestionAnswering, BioMrcOutput, FreshHeadsNote


def batch(seq=9):
    torch.manual_seed(0)
    ids = torch.randint(5, 50, (2, seq))
    paragraph = torch.zeros(2, seq, dtype=torch.long)
    paragraph[:, 4:8] = 1
    tags = torch.full((2, seq), 2)
    tags[0, 5], tags[0, 6] = 0, 1
    return {
        "input_ids": ids,
        "attention_mask": torch.ones(2, seq, dtype=torch.long),
        "paragraph_mask": paragraph,
        "start_positions": torch.tensor([5, 0]),
        "end_positions": torch.tensor([6, 0]),
        "bio_targets": torch.nn.functional.one_hot(tags, 3).float(),
    }


@pytest.mark.parametrize("heads", ["span", "bio", "span+bio"])
def test_forward_outputs_and_loss(tiny_encoder_dir, heads):
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads=heads, bio_loss_weight=0.5)
    out = model(**batch())
    assert (out.start_logits is not None) == ("span" in heads)
    assert (out.bio_logits is not None) == ("bio" in heads)
    expected = torch.tensor(0.0)
    if "span" in heads:
        expected += out.span_loss
    if "bio" in heads:
        expected += 0.5 * out.bio_loss
    assert out.loss.item() == pytest.approx(expected.item(), rel=1e-6)
    out.loss.backward()
    # No labels, no loss.
    inputs = {k: v for k, v in batch().items() if k in ("input_ids", "attention_mask")}
    assert model(**inputs).loss is None


def test_tag_mask_decides_which_tokens_the_bio_loss_reads(tiny_encoder_dir):
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="bio", tag_level="word")
    model.eval()
    inputs = batch()
    tag_mask = inputs["paragraph_mask"].clone()
    tag_mask[:, 7] = 0  # a continuation piece: no tag, no loss
    with_tags = model(**inputs, tag_mask=tag_mask).bio_loss
    changed = dict(inputs, bio_targets=inputs["bio_targets"].clone())
    changed["bio_targets"][:, 7] = torch.tensor([1.0, 0.0, 0.0])
    assert model(**changed, tag_mask=tag_mask).bio_loss.item() == pytest.approx(with_tags.item(), rel=1e-6)
    assert model(**changed).bio_loss.item() != pytest.approx(with_tags.item(), rel=1e-6)  # paragraph_mask reads token 7
    annotators = inputs["bio_targets"].argmax(-1).unsqueeze(-1)  # one annotator: marginal = one-hot
    assert model(**dict(inputs, bio_targets=annotators), tag_mask=tag_mask).bio_loss.item() == pytest.approx(with_tags.item(), rel=1e-5)


def test_encoder_weights_are_the_pretrained_ones(tiny_encoder_dir):
    from transformers import AutoModel

    encoder = AutoModel.from_pretrained(str(tiny_encoder_dir))
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir))
    for name, value in model.encoder.state_dict().items():
        assert torch.equal(value, encoder.state_dict()[name]), name


def test_an_fp16_encoder_gives_an_fp32_model_that_saves_and_loads_in_fp32(tiny_encoder_dir, tmp_path):
    """A half-precision copy of an encoder (half the bytes to carry to a GPU machine) trains in fp32 or bf16 autocast."""
    from transformers import AutoModel

    AutoModel.from_pretrained(str(tiny_encoder_dir), dtype=torch.float16).save_pretrained(str(tmp_path / "fp16"))
    model = BioMrcForQuestionAnswering.from_encoder(str(tmp_path / "fp16"), heads="span+bio")
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    model.save_pretrained(str(tmp_path / "model"))
    assert {p.dtype for p in BioMrcForQuestionAnswering.from_pretrained(str(tmp_path / "model")).parameters()} == {torch.float32}


def test_save_and_load_round_trip(tiny_encoder_dir, tmp_path):
    from transformers import AutoTokenizer

    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio")
    model.config.no_answer_thresholds = {"span": -1.25}
    model.save_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(str(tiny_encoder_dir)).save_pretrained(tmp_path)
    loaded = BioMrcForQuestionAnswering.from_pretrained(tmp_path)
    assert loaded.config.heads == "span+bio"
    assert loaded.config.no_answer_thresholds == {"span": -1.25}
    assert model.state_dict().keys() == loaded.state_dict().keys()
    for name, value in model.state_dict().items():
        assert torch.equal(value, loaded.state_dict()[name]), name
    model.eval(), loaded.eval()
    inputs = {k: v for k, v in batch().items() if k in ("input_ids", "attention_mask")}
    assert torch.equal(model(**inputs).bio_logits, loaded(**inputs).bio_logits)
    tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    assert tokenizer("Isaac Newton")["input_ids"] == AutoTokenizer.from_pretrained(str(tiny_encoder_dir))("Isaac Newton")["input_ids"]


def test_bad_head_choice_is_named():
    with pytest.raises(ValueError, match="heads must be one of"):
        _ = BioMrcConfig(heads="crf").head_names


def test_bio_targets_need_a_paragraph_mask(tiny_encoder_dir):
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="bio")
    data = batch()
    data.pop("paragraph_mask")
    with pytest.raises(ValueError, match="paragraph_mask"):
        model(**data)


def test_auto_classes_load_a_saved_model(tiny_encoder_dir, tmp_path):
    from transformers import AutoConfig, AutoModel, AutoModelForQuestionAnswering

    BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="bio").save_pretrained(tmp_path)
    for auto in (AutoModelForQuestionAnswering, AutoModel):
        loaded = auto.from_pretrained(tmp_path)
        assert isinstance(loaded, BioMrcForQuestionAnswering) and loaded.config.heads == "bio"
    assert isinstance(AutoConfig.from_pretrained(tmp_path), BioMrcConfig)
    assert isinstance(AutoModel.from_config(AutoConfig.from_pretrained(tmp_path)), BioMrcForQuestionAnswering)


@pytest.mark.slow
def test_auto_classes_know_bio_mrc_models_once_bio_mrc_is_imported(tiny_encoder_dir, tmp_path):
    """transformers reads no entry points: in a fresh interpreter the folder's model_type is unknown until
    ``import bio_mrc``, which stays light (bio_mrc.model loads when transformers first looks the type up);
    bio_mrc.register_auto_classes() still registers at once."""
    import subprocess
    import sys

    BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span").save_pretrained(tmp_path)
    script = (
        "import sys\n"
        "from transformers import AutoModelForQuestionAnswering as Auto\n"
        "try:\n    Auto.from_pretrained(sys.argv[1])\nexcept ValueError as error:\n    print('refused:', 'bio_mrc' in str(error))\n"
        "import bio_mrc\n"
        "assert 'bio_mrc.model' not in sys.modules\n"
        "print('loaded:', type(Auto.from_pretrained(sys.argv[1])).__name__)\n"
        "bio_mrc.register_auto_classes()\n"
        "print('again:', type(Auto.from_pretrained(sys.argv[1])).__name__)\n"
    )
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:3] == ["refused: True", "loaded: BioMrcForQuestionAnswering", "again: BioMrcForQuestionAnswering"]


@pytest.mark.parametrize("load", ["class", "auto"])
def test_attn_implementation_reaches_the_encoder(tiny_encoder_dir, tmp_path, load):
    from transformers import AutoModelForQuestionAnswering

    BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio").save_pretrained(tmp_path)
    loader = BioMrcForQuestionAnswering if load == "class" else AutoModelForQuestionAnswering
    inputs = {k: v for k, v in batch().items() if k in ("input_ids", "attention_mask")}
    logits = {}
    for implementation in ("sdpa", "eager"):
        model = loader.from_pretrained(tmp_path, attn_implementation=implementation).eval()
        assert model.encoder.config._attn_implementation == implementation == model.config._attn_implementation
        with torch.no_grad():
            logits[implementation] = model(**inputs)
    for name in ("start_logits", "end_logits", "bio_logits"):  # two kernels, one computation
        torch.testing.assert_close(logits["sdpa"][name], logits["eager"][name], atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="not supported"):
        loader.from_pretrained(tmp_path, attn_implementation="no-such-kernel")


def test_hidden_states_and_attentions_pass_through_to_the_encoder(tiny_encoder_dir):
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio")
    model.set_attn_implementation("eager")  # sdpa computes no attention weights
    model.eval()
    inputs = {k: v for k, v in batch().items() if k in ("input_ids", "attention_mask")}
    assert model(**inputs).hidden_states is None and model(**inputs).attentions is None
    out = model(**inputs, output_hidden_states=True, output_attentions=True)
    layers = model.config.encoder.num_hidden_layers
    assert len(out.hidden_states) == layers + 1 and out.hidden_states[-1].shape == (2, 9, 32)
    assert len(out.attentions) == layers and out.attentions[0].shape == (2, 2, 9, 9)
    assert torch.equal(model.bio_head(out.hidden_states[-1]), out.bio_logits)  # the heads read the last layer


def test_return_dict_false_gives_the_tuple_of_the_fields_set(tiny_encoder_dir):
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio")
    model.eval()
    out = model(**batch())
    as_tuple = model(**batch(), return_dict=False)
    assert isinstance(as_tuple, tuple) and len(as_tuple) == 6  # loss, span_loss, bio_loss, start, end, bio logits
    for got, expected in zip(as_tuple, (out.loss, out.span_loss, out.bio_loss, out.start_logits, out.end_logits, out.bio_logits)):
        assert torch.equal(got, expected)
    model.config.return_dict = False  # the config's default, as in transformers
    assert isinstance(model(**batch()), tuple)
    assert isinstance(model(**batch(), return_dict=True), BioMrcOutput)


def test_an_unknown_argument_is_a_type_error_not_a_silently_missing_loss(tiny_encoder_dir):
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="bio")
    data = batch()
    data["bio_target"] = data.pop("bio_targets")
    with pytest.raises(TypeError, match="bio_target"):
        model(**data)


def test_a_head_given_part_of_its_labels_is_a_type_error_not_a_silently_missing_loss(tiny_encoder_dir):
    # end_positions forgotten: the loss was the BIO loss alone, the span head never trained.
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio")
    data = batch()
    del data["end_positions"]
    with pytest.raises(TypeError, match=r"got \['start_positions'\] but not \['end_positions'\]: the span head's loss needs all of "
                                        r"\['start_positions', 'end_positions'\]"):
        model(**data)
    del data["start_positions"]
    out = model(**data)  # no span label at all: the BIO loss alone, as asked
    assert out.span_loss is None and out.loss.item() == pytest.approx(model.config.bio_loss_weight * out.bio_loss.item(), rel=1e-6)


def test_trainer_passes_no_loss_kwargs(tiny_encoder_dir, tmp_path):
    from transformers import Trainer, TrainingArguments

    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir))
    trainer = Trainer(model=model, args=TrainingArguments(output_dir=str(tmp_path), report_to="none"))
    assert trainer.model_accepts_loss_kwargs is False  # no num_items_in_batch in forward


def test_the_output_rebuilds_from_its_items_as_accelerate_and_pytrees_do(tiny_encoder_dir):
    """accelerate's mixed precision rebuilds outputs as ``type(output)(mapping)``, and DDP and torch.export through
    pytrees as ``type(output)(**items)``: every head's logits and losses come back, in order."""
    from torch.utils import _pytree

    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio").eval()
    out = model(**batch())
    for rebuilt in (type(out)(dict(out.items())), _pytree.tree_unflatten(*_pytree.tree_flatten(out))):
        assert isinstance(rebuilt, BioMrcOutput) and list(rebuilt.keys()) == list(out.keys())
        assert all(torch.equal(rebuilt[name], out[name]) for name in out.keys())
        assert torch.equal(rebuilt.loss, out.loss) and torch.equal(rebuilt.bio_logits, out.bio_logits)


def test_a_registered_heads_output_the_model_lacks_reads_none(tiny_encoder_dir):
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="bio").eval()
    out = model(**batch())
    assert out.start_logits is None and out.span_loss is None and "start_logits" not in out
    assert set(out.head_losses) == {"bio"} and set(out.logits) == {"bio_logits"}
    with pytest.raises(AttributeError, match="no_such_field"):
        out.no_such_field  # noqa: B018


def test_resized_token_embeddings_save_and_load_back(tiny_encoder_dir, tmp_path):
    """The new vocabulary size is the encoder config's, which the saved folder's model is rebuilt from."""
    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir))
    rows = model.config.encoder.vocab_size + 7
    model.resize_token_embeddings(rows)
    assert model.config.encoder.vocab_size == rows
    model.save_pretrained(tmp_path)
    loaded = BioMrcForQuestionAnswering.from_pretrained(tmp_path)
    assert loaded.get_input_embeddings().weight.shape[0] == rows
    assert torch.equal(loaded.get_input_embeddings().weight, model.get_input_embeddings().weight)


def _trainer_windows(heads: str) -> list[dict]:
    """Three windows as the package's collator takes them, with the labels of ``heads``."""
    rows = []
    for length in (9, 11, 12):
        paragraph = [0] * 4 + [1] * (length - 5) + [0]
        row = {"input_ids": list(range(5, 5 + length)), "attention_mask": [1] * length, "tag_mask": paragraph}
        if "span" in heads:
            row |= {"start_positions": 5, "end_positions": 6}
        if "bio" in heads:
            row["bio_targets"] = [[1.0, 0.0, 0.0] if i == 5 else [0.0, 0.0, float(p)] for i, p in enumerate(paragraph)]
        rows.append(row)
    return rows


def test_a_trainer_of_ones_own_finds_the_labels_and_predicts_the_heads_logits(tiny_encoder_dir, tmp_path):
    """transformers' Trainer read ``**labels`` as one label named ``labels``: no evaluation loss, no label ids, the heads'
    targets dropped from a dataset (``remove_unused_columns``), and each head's loss in front of the predicted logits."""
    import datasets
    from transformers import Trainer, TrainingArguments

    from bio_mrc.features.collate import WindowCollator

    model = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio").eval()
    windows = _trainer_windows("span+bio")
    args = TrainingArguments(output_dir=str(tmp_path), report_to="none", per_device_eval_batch_size=2, use_cpu=True)
    trainer = Trainer(model=model, args=args, data_collator=WindowCollator(pad_to_multiple_of=None))
    assert trainer.label_names == ["start_positions", "end_positions"]
    result = trainer.predict(datasets.Dataset.from_list(windows))  # remove_unused_columns keeps the targets
    start, end, bio = result.predictions
    assert start.shape == end.shape == (3, 12) and bio.shape == (3, 12, 3)
    assert [labels.tolist() for labels in result.label_ids] == [[5, 5, 5], [6, 6, 6]]
    batches = [WindowCollator(pad_to_multiple_of=None)(windows[:2]), WindowCollator(pad_to_multiple_of=None)(windows[2:])]
    with torch.no_grad():
        losses = [model(**batch).loss.item() for batch in batches]
    assert result.metrics["test_loss"] == pytest.approx((2 * losses[0] + losses[1]) / 3, rel=1e-5)
    with torch.no_grad():
        expected_bio = model(**{k: v for k, v in batches[1].items() if k in ("input_ids", "attention_mask")}).bio_logits
    assert torch.allclose(torch.from_numpy(bio[2]), expected_bio[0], atol=1e-5)


def test_hidden_states_and_attentions_asked_by_the_models_config(tiny_encoder_dir, tmp_path):
    """As every transformers model: ``from_pretrained(..., output_hidden_states=True)`` (the model's config) is read when
    forward leaves them unset; they went to the top config, which the encoder never read."""
    BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir)).save_pretrained(tmp_path)
    model = BioMrcForQuestionAnswering.from_pretrained(tmp_path, attn_implementation="eager", output_hidden_states=True,
                                                       output_attentions=True).eval()
    out = model(input_ids=batch()["input_ids"])
    assert len(out.hidden_states) == 3 and len(out.attentions) == 2  # embeddings + 2 layers; 2 layers
    out = model(input_ids=batch()["input_ids"], output_hidden_states=False, output_attentions=False)
    assert out.hidden_states is None and out.attentions is None


def test_a_head_from_pretrained_adds_starts_at_its_prior_and_loaded_heads_keep_their_bias(tiny_encoder_dir, tmp_path):
    """``from_pretrained(span_only, heads="span+bio")`` (as ``train --init-from`` a span model with both heads) builds
    the BIO head the checkpoint lacks at log prior, as a fresh model's; it started at a zero (uniform) bias."""
    BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span").save_pretrained(tmp_path / "span")
    with pytest.warns(FreshHeadsNote, match="has no bio head"):
        added = BioMrcForQuestionAnswering.from_pretrained(tmp_path / "span", heads="span+bio", bio_prior=[0.25, 0.25, 0.5])
    assert torch.allclose(added.bio_head.classifier.bias, torch.log(torch.tensor([0.25, 0.25, 0.5])))
    joint = BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir), heads="span+bio", bio_prior=[0.25, 0.25, 0.5])
    with torch.no_grad():
        joint.bio_head.classifier.bias.copy_(torch.tensor([1.0, 2.0, 3.0]))
    joint.save_pretrained(tmp_path / "joint")
    loaded = BioMrcForQuestionAnswering.from_pretrained(tmp_path / "joint")
    assert loaded.bio_head.classifier.bias.tolist() == [1.0, 2.0, 3.0]


def test_forwards_signature_names_each_heads_labels_and_keeps_its_return_type():
    import inspect
    import typing

    signature = inspect.signature(BioMrcForQuestionAnswering.forward)
    assert {"start_positions", "end_positions", "bio_targets"} <= set(signature.parameters)  # what Trainer reads
    assert signature.return_annotation == "BioMrcOutput | tuple[torch.Tensor, ...]"  # help() shows what it returns
    assert typing.get_type_hints(BioMrcForQuestionAnswering.forward)["return"] == BioMrcOutput | tuple[torch.Tensor, ...]


def test_fresh_heads_on_an_encoder_load_it_quietly_and_leave_the_callers_bars_as_they_were(tiny_encoder_dir, capfd):
    """``from_encoder`` is a library call: transformers' "Loading weights" bar of the encoder stays hidden, while the
    program's own setting (on, transformers' default) is kept for its own loads."""
    import transformers.utils.logging as transformers_logging

    before = transformers_logging.is_progress_bar_enabled()
    transformers_logging.enable_progress_bar()
    try:
        capfd.readouterr()
        BioMrcForQuestionAnswering.from_encoder(str(tiny_encoder_dir))
        assert capfd.readouterr() == ("", "")
        assert transformers_logging.is_progress_bar_enabled()
    finally:
        transformers_logging.enable_progress_bar() if before else transformers_logging.disable_progress_bar()
