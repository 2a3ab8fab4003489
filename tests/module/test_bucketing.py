"""BucketingModule: buckets share parameters by identity and memory, and checkpoints round-trip."""

import functools
import json

import numpy as np
import pytest

import rebind as mx
from rebind.errors import LifecycleError

from .log_capture import logs_warning

VOCAB, EMBED, HIDDEN, CLASSES, BATCH = 10, 6, 5, 3, 4
DEFAULT = 5  # the longest sequence: the other buckets borrow its memory
PARAM_SHAPES = {
    "embed_weight": (VOCAB, EMBED),
    "fc1_weight": (HIDDEN, EMBED),
    "fc1_bias": (HIDDEN,),
    "bn_gamma": (HIDDEN,),
    "bn_beta": (HIDDEN,),
    "fc2_weight": (CLASSES, HIDDEN),
    "fc2_bias": (CLASSES,),
}


def sym_gen(seq_len, batch_norm=True):
    """Tokens (batch, seq_len) -> embed -> tanh(FC) per step -> mean over steps -> BN -> FC."""
    data = mx.sym.Variable("data")
    embed = mx.sym.Embedding(data, input_dim=VOCAB, output_dim=EMBED, name="embed")
    hidden = mx.sym.FullyConnected(embed, num_hidden=HIDDEN, flatten=False, name="fc1")
    hidden = mx.sym.Activation(hidden, act_type="tanh")
    pooled = mx.sym.sum(hidden, axis=1) * (1.0 / seq_len)
    normed = mx.sym.BatchNorm(pooled, name="bn") if batch_norm else pooled
    scores = mx.sym.FullyConnected(normed, num_hidden=CLASSES, name="fc2")
    return mx.sym.SoftmaxOutput(scores, name="softmax"), ("data",), ("softmax_label",)


def np_predict(p, aux, tokens):
    """NumPy reference of ``sym_gen`` at inference (BatchNorm on its moving statistics)."""
    hidden = np.tanh(p["embed_weight"][tokens.astype(int)] @ p["fc1_weight"].T + p["fc1_bias"])
    pooled = hidden.mean(axis=1)
    normed = (pooled - aux["bn_moving_mean"]) / np.sqrt(aux["bn_moving_var"] + 1e-3)
    normed = normed + p["bn_beta"]  # fix_gamma: gamma is 1
    logits = normed @ p["fc2_weight"].T + p["fc2_bias"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def random_params(seed=0):
    rs = np.random.RandomState(seed)
    params = {
        name: (rs.randn(*shape) * 0.5).astype(np.float32) for name, shape in PARAM_SHAPES.items()
    }
    params["bn_gamma"][:] = 1.0
    aux = {
        "bn_moving_mean": (rs.randn(HIDDEN) * 0.1).astype(np.float32),
        "bn_moving_var": (rs.rand(HIDDEN) + 0.5).astype(np.float32),
    }
    return params, aux


def to_nd(arrays, ctx=None):
    return {name: mx.nd.array(value, ctx=ctx) for name, value in arrays.items()}


def as_numpy(arrays):
    return {name: value.asnumpy() for name, value in arrays.items()}


def make_batch(seq_len, seed, batch=BATCH):
    rs = np.random.RandomState(seed)
    tokens = rs.randint(0, VOCAB, size=(batch, seq_len)).astype(np.float32)
    labels = rs.randint(0, CLASSES, size=(batch,)).astype(np.float32)
    return mx.io.DataBatch(
        [mx.nd.array(tokens)],
        [mx.nd.array(labels)],
        bucket_key=seq_len,
        provide_data=[mx.io.DataDesc("data", tokens.shape)],
        provide_label=[mx.io.DataDesc("softmax_label", labels.shape)],
    )


def bound(ctx, for_training=True, seed=0, **kwargs):
    """A BucketingModule bound for the default bucket, parameters from ``random_params``."""
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=DEFAULT, context=ctx, **kwargs)
    mod.bind([("data", (BATCH, DEFAULT))], [("softmax_label", (BATCH,))], for_training=for_training)
    params, aux = random_params(seed)
    mod.init_params(arg_params=to_nd(params), aux_params=to_nd(aux))
    return mod


def reference_module(ctx, seq_len, arg_params, aux_params, for_training=False):
    """A plain Module of bucket ``seq_len``'s symbol with the given parameters."""
    symbol, data_names, label_names = sym_gen(seq_len)
    mod = mx.mod.Module(symbol, data_names, label_names, context=ctx)
    mod.bind([("data", (BATCH, seq_len))], [("softmax_label", (BATCH,))], for_training=for_training)
    mod.init_params(arg_params=arg_params, aux_params=aux_params)
    return mod


def outputs_of(mod, batch):
    mod.forward(batch, is_train=False)
    return mod.get_outputs()[0].asnumpy()


# -- sharing ------------------------------------------------------------------------------


def test_buckets_share_parameters_gradients_and_aux_states_by_identity(ctx):
    mod = bound(ctx)
    for key in (3, 4, 3):
        mod.forward(make_batch(key, seed=key), is_train=True)
    assert list(mod._buckets) == [DEFAULT, 3, 4]
    default = mod._buckets[DEFAULT]
    for key in (3, 4):
        module = mod._buckets[key]
        assert module._arg_params is default._arg_params
        assert module._aux_params is default._aux_params
        group, base = module._exec_group, default._exec_group
        assert group.param_names == base.param_names
        for mine, theirs in zip(
            group.param_arrays + group.grad_arrays + group.aux_arrays,
            base.param_arrays + base.grad_arrays + base.aux_arrays,
            strict=True,
        ):
            assert mine[0] is theirs[0]
        for name in PARAM_SHAPES:
            assert group.execs[0].arg_dict[name] is base.execs[0].arg_dict[name]


def test_smaller_buckets_borrow_memory_from_the_default_bucket(ctx, xp):
    mod = bound(ctx)
    mod.forward(make_batch(3, seed=1), is_train=True)
    small, big = mod._buckets[3]._exec_group, mod._buckets[DEFAULT]._exec_group
    assert small.shared_data_arrays is big.shared_data_arrays
    small_data, big_data = small.execs[0].arg_dict["data"], big.execs[0].arg_dict["data"]
    assert small_data.shape == (BATCH, 3) and big_data.shape == (BATCH, DEFAULT)
    assert xp.shares_memory(small_data.data, big_data.data)
    small_label = small.execs[0].arg_dict["softmax_label"]
    assert xp.shares_memory(small_label.data, big.execs[0].arg_dict["softmax_label"].data)


def test_outputs_stay_right_when_switching_buckets_back_and_forth(ctx):
    mod = bound(ctx, for_training=False)
    batches = {key: make_batch(key, seed=10 + key) for key in (DEFAULT, 2, 3, 4)}
    first = {key: outputs_of(mod, batches[key]) for key in (DEFAULT, 2, 3, 4)}
    for key in (3, DEFAULT, 2, 4, 2, 3, DEFAULT):
        np.testing.assert_array_equal(outputs_of(mod, batches[key]), first[key])
        assert mod._curr_bucket_key == key
    params, aux = random_params()
    arg_params, aux_params = mod.get_params()
    for key, batch in batches.items():
        ref = reference_module(ctx, key, arg_params, aux_params)
        np.testing.assert_allclose(first[key], outputs_of(ref, batch), rtol=1e-6, atol=1e-7)
        expected = np_predict(params, aux, batch.data[0].asnumpy())
        np.testing.assert_allclose(first[key], expected, rtol=1e-4, atol=1e-6)


def test_training_over_buckets_updates_the_shared_parameters_once_per_batch(ctx):
    lr = 0.5
    mod = bound(ctx)
    mod.init_optimizer(
        optimizer="sgd", optimizer_params={"learning_rate": lr, "rescale_grad": 1.0 / BATCH}
    )
    for step, key in enumerate((DEFAULT, 3, 4, 3, DEFAULT, 2)):
        batch = make_batch(key, seed=100 + step)
        before_args, before_aux = (dict(p) for p in mod.get_params())
        before = as_numpy(before_args)
        ref = reference_module(ctx, key, before_args, before_aux, for_training=True)
        ref.forward_backward(batch)
        grads = {name: ref._exec_group.execs[0].grad_dict[name].asnumpy() for name in before}
        mod.forward_backward(batch)
        mod.update()
        after = as_numpy(mod.get_params()[0])
        for name, value in before.items():
            np.testing.assert_allclose(
                after[name],
                value - lr * grads[name] / BATCH,
                rtol=1e-5,
                atol=1e-6,
                err_msg=f"{name} at step {step}",
            )
        # every bucket sees the update: it runs with the same arrays
        default_exec = mod._buckets[DEFAULT]._exec_group.execs[0]
        np.testing.assert_array_equal(
            default_exec.arg_dict["fc2_weight"].asnumpy(), after["fc2_weight"]
        )


def test_several_contexts_train_as_one():
    # without BatchNorm, whose batch statistics are per device
    gen = functools.partial(sym_gen, batch_norm=False)
    params = {k: v for k, v in random_params()[0].items() if not k.startswith("bn_")}
    modules = []
    for contexts in ([mx.cpu(0)], [mx.cpu(0), mx.cpu(1)]):
        mod = mx.mod.BucketingModule(gen, default_bucket_key=DEFAULT, context=contexts)
        mod.bind([("data", (BATCH, DEFAULT))], [("softmax_label", (BATCH,))])
        mod.init_params(arg_params=to_nd(params))
        mod.init_optimizer(optimizer_params={"learning_rate": 0.3, "momentum": 0.9})
        for step, key in enumerate((DEFAULT, 3, 4, 3, DEFAULT)):
            mod.forward_backward(make_batch(key, seed=step))
            mod.update()
        modules.append(mod)
    one, two = modules
    for key in (DEFAULT, 2, 3):
        batch = make_batch(key, seed=20)
        np.testing.assert_allclose(outputs_of(two, batch), outputs_of(one, batch), atol=1e-6)
        group = two._buckets[key]._exec_group
        assert len(group.execs) == 2
        assert group.param_arrays[0][1] is two._buckets[DEFAULT]._exec_group.param_arrays[0][1]
    expected, found = (as_numpy(m.get_params()[0]) for m in modules)
    for name, value in expected.items():
        np.testing.assert_allclose(found[name], value, rtol=1e-5, atol=1e-6)


def test_get_params_after_switching_sees_updates_made_in_another_bucket(ctx):
    mod = bound(ctx)
    mod.forward(make_batch(3, seed=0), is_train=False)  # bucket 3 synced, not dirty
    mod.switch_bucket(DEFAULT, None)
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    mod.forward_backward(make_batch(DEFAULT, seed=1))
    mod.update()
    on_device = mod._buckets[DEFAULT]._exec_group.param_arrays[0][0].asnumpy()
    mod.forward(make_batch(3, seed=2), is_train=False)
    name = mod._buckets[3]._exec_group.param_names[0]
    np.testing.assert_array_equal(mod.get_params()[0][name].asnumpy(), on_device)


def test_optimizer_installed_on_the_current_bucket_is_borrowed_by_all(ctx):
    mod = bound(ctx)
    mod.forward(make_batch(3, seed=0), is_train=True)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    mod.forward(make_batch(4, seed=1), is_train=True)  # a bucket bound after init_optimizer
    current = mod._curr_module
    for module in mod._buckets.values():
        assert module.optimizer_initialized
        assert module._optimizer is mod._buckets[3]._optimizer
        assert module._updater is mod._buckets[3]._updater
    assert mod._optimizer is current._optimizer and mod._updater is current._updater


def test_prepare_binds_the_next_bucket_and_stays_on_the_current_one(ctx):
    mod = bound(ctx)
    mod.prepare(make_batch(3, seed=0))
    assert 3 in mod._buckets and mod._buckets[3].binded
    assert mod._curr_bucket_key == DEFAULT


class Buckets(mx.io.DataIter):
    """A fixed list of batches of several bucket keys (as BucketSentenceIter yields them)."""

    def __init__(self, keys):
        super().__init__(BATCH)
        self.batches = [make_batch(key, seed=i) for i, key in enumerate(keys)]
        self.provide_data = self.batches[0].provide_data
        self.provide_label = self.batches[0].provide_label
        self.position = 0

    def reset(self):
        self.position = 0

    def next(self):
        if self.position == len(self.batches):
            raise StopIteration
        self.position += 1
        return self.batches[self.position - 1]


def fitted(ctx, num_epoch, resume_prefix=None, **kwargs):
    """A BucketingModule fitted from seed 3; ``resume_prefix``: write resume points there."""
    mx.random.seed(3)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=DEFAULT, context=ctx)
    if resume_prefix is not None:
        kwargs["epoch_end_callback"] = mx.mod.ResumeCheckpoint(mod, resume_prefix)
    mod.fit(
        Buckets([DEFAULT, 3, 2, DEFAULT, 3]),
        num_epoch=num_epoch,
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
        initializer=mx.init.Xavier(),
        **kwargs,
    )
    return mod


def test_fit_score_and_predict_over_a_bucketed_iterator(ctx):
    mod = fitted(ctx, 2, eval_metric="ce")
    assert sorted(mod._buckets) == [2, 3, DEFAULT]
    data = Buckets([DEFAULT, 3, 2, DEFAULT, 3])
    outputs = mod.predict(data, merge_batches=False)
    assert [out[0].shape for out in outputs] == [(BATCH, CLASSES)] * 5
    labels = np.concatenate([b.label[0].asnumpy() for b in data.batches])
    predicted = np.concatenate([out[0].asnumpy().argmax(axis=1) for out in outputs])
    accuracy = dict(mod.score(data, "acc"))["accuracy"]
    assert accuracy == pytest.approx(np.mean(predicted == labels))


def test_resumed_fit_equals_an_uninterrupted_one(ctx, tmp_path):
    prefix = str(tmp_path / "run")
    uninterrupted = fitted(ctx, 4)
    fitted(ctx, 2, resume_prefix=prefix)
    resumed = fitted(ctx, 4, resume_from=prefix)
    expected, found = uninterrupted.get_params()[0], resumed.get_params()[0]
    for name, value in expected.items():
        np.testing.assert_array_equal(found[name].asnumpy(), value.asnumpy())


def test_a_batch_without_bucket_key_runs_on_the_current_bucket(ctx):
    mod = bound(ctx, for_training=False)
    batch = make_batch(3, seed=4)
    expected = outputs_of(mod, batch)
    plain = mx.io.DataBatch(batch.data, batch.label)
    np.testing.assert_array_equal(outputs_of(mod, plain), expected)
    assert mod._curr_bucket_key == 3


def test_new_bucket_without_provide_data_is_bound_for_its_arrays(ctx):
    mod = bound(ctx, for_training=False)
    batch = make_batch(3, seed=4)
    bare = mx.io.DataBatch(batch.data, batch.label, bucket_key=3)
    np.testing.assert_array_equal(
        outputs_of(mod, bare), outputs_of(bound(ctx, for_training=False), batch)
    )


# -- lifecycle ----------------------------------------------------------------------------


def test_calls_out_of_order_raise_lifecycle_errors():
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=DEFAULT)
    with pytest.raises(LifecycleError, match=r"BucketingModule.forward\(\).*bind\(\)"):
        mod.forward(make_batch(3, seed=0))
    mod.bind([("data", (BATCH, DEFAULT))], [("softmax_label", (BATCH,))])
    with pytest.raises(LifecycleError, match=r"switch_bucket\(\).*init_params\(\)"):
        mod.switch_bucket(3, [("data", (BATCH, 3))], [("softmax_label", (BATCH,))])
    mod.init_params()
    with pytest.raises(LifecycleError, match=r"update\(\).*init_optimizer\(\)"):
        mod.update()
    with pytest.raises(ValueError, match="bucket 7 is new"):
        mod.switch_bucket(7, None)
    assert (mod.binded, mod.params_initialized, mod.optimizer_initialized) == (True, True, False)


def test_default_bucket_key_is_required():
    with pytest.raises(ValueError, match="default_bucket_key"):
        mx.mod.BucketingModule(sym_gen)


def test_second_bind_warns_and_force_rebind_keeps_parameters_and_optimizer(ctx):
    mod = bound(ctx)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    for key in (3, DEFAULT):
        mod.forward_backward(make_batch(key, seed=key))
        mod.update()
    updater = mod._updater
    params = as_numpy(mod.get_params()[0])
    with logs_warning(r"^Already bound, ignoring bind\(\)"):  # MXNet logs it
        mod.bind([("data", (BATCH, DEFAULT))], [("softmax_label", (BATCH,))])
    mod.bind([("data", (BATCH, DEFAULT))], [("softmax_label", (BATCH,))], force_rebind=True)
    assert list(mod._buckets) == [DEFAULT] and mod.optimizer_initialized
    assert mod._updater is updater  # momentum carries over
    for name, value in as_numpy(mod.get_params()[0]).items():
        np.testing.assert_array_equal(value, params[name])
    mod.forward_backward(make_batch(3, seed=9))
    mod.update()


def test_install_monitor_reaches_buckets_bound_later(ctx):
    mod = bound(ctx)
    mon = mx.monitor.Monitor(1)
    mod.install_monitor(mon)
    mod.forward(make_batch(3, seed=0), is_train=True)
    assert mod._buckets[3]._exec_group.execs[0] in mon.exes


# -- checkpoints --------------------------------------------------------------------------


def test_checkpoint_round_trip(ctx, tmp_path):
    mod = bound(ctx)
    mod.init_optimizer(optimizer_params={"learning_rate": 0.2})
    for key in (DEFAULT, 3, 4):
        mod.forward_backward(make_batch(key, seed=key))
        mod.update()
    prefix = str(tmp_path / "lm")
    mod.save_checkpoint(prefix, 2)
    for name in (
        "lm-symbol.json",
        "lm-0002.params",
        "lm-5-symbol.json",
        "lm-3-symbol.json",
        "lm-4-symbol.json",
        "lm.buckets",
    ):
        assert (tmp_path / name).exists(), name
    (keys,) = mx.nd.load(f"{prefix}.buckets")
    assert keys.dtype == np.int32 and keys.asnumpy().tolist() == [DEFAULT, 3, 4]

    loaded = mx.mod.BucketingModule.load(
        prefix, 2, sym_gen=sym_gen, default_bucket_key=DEFAULT, context=ctx
    )
    assert loaded.params_initialized and not loaded.binded
    assert list(loaded._buckets) == [DEFAULT, 3, 4]
    loaded.bind([("data", (BATCH, DEFAULT))], [("softmax_label", (BATCH,))], for_training=False)
    saved_args, saved_aux = (as_numpy(p) for p in mod.get_params())
    loaded_args, loaded_aux = (as_numpy(p) for p in loaded.get_params())
    for saved, back in ((saved_args, loaded_args), (saved_aux, loaded_aux)):
        assert saved.keys() == back.keys()
        for name in saved:
            np.testing.assert_array_equal(back[name], saved[name])
    for key in (DEFAULT, 3, 4, 2):
        batch = make_batch(key, seed=50 + key)
        np.testing.assert_array_equal(outputs_of(loaded, batch), outputs_of(mod, batch))
    symbol, args, _ = mx.model.load_checkpoint(prefix, 2)  # the default bucket's symbol
    assert symbol.tojson() == mod._buckets[DEFAULT].symbol.tojson()
    assert args.keys() == saved_args.keys()


def test_save_checkpoint_refuses_keys_that_are_not_integers(tmp_path):
    def gen(key):
        return sym_gen(key[0])

    mod = mx.mod.BucketingModule(gen, default_bucket_key=(DEFAULT, "a"))
    mod.bind([("data", (BATCH, DEFAULT))], [("softmax_label", (BATCH,))])
    mod.init_params()
    with pytest.raises(ValueError, match="bucket key .* is not an integer"):
        mod.save_checkpoint(str(tmp_path / "x"), 1)
    assert not list(tmp_path.iterdir())


def test_load_needs_sym_gen_and_default_bucket_key(tmp_path):
    with pytest.raises(ValueError, match="sym_gen and default_bucket_key are required"):
        mx.mod.BucketingModule.load(str(tmp_path / "x"), 1, default_bucket_key=DEFAULT)


# -- the LSTM language model trained by MXNet 1.9.1 ---------------------------------------


def _golden_case(golden):
    manifest = json.loads((golden / "manifest.json").read_text())
    (case,) = [c for c in manifest["categories"]["checkpoints"]["cases"] if c["id"] == "lstm_lm"]
    return case


def test_golden_lstm_lm_loads_predicts_and_saves_back(golden, ctx, tmp_path):
    case = _golden_case(golden)
    prefix = str(golden / case["dir"] / case["prefix"])
    info = case["info"]
    default, other = info["default_bucket_key"], info["other_bucket_key"]
    data = np.load(f"{prefix}-data.npz")

    def saved_sym_gen(key):
        return mx.sym.load(f"{prefix}-{key}-symbol.json"), ("data",), ("softmax_label",)

    mod = mx.mod.BucketingModule.load(
        prefix, case["epoch"], sym_gen=saved_sym_gen, default_bucket_key=default, context=ctx
    )
    eval_shape = data["eval.data"].shape
    mod.bind([("data", eval_shape)], [("softmax_label", eval_shape)], for_training=False)
    for part, key in (("eval", default), ("eval2", other), ("eval", default)):
        tokens, labels = data[f"{part}.data"], data[f"{part}.softmax_label"]
        batch = mx.io.DataBatch(
            [mx.nd.array(tokens)],
            [mx.nd.array(labels)],
            bucket_key=key,
            provide_data=[("data", tokens.shape)],
            provide_label=[("softmax_label", labels.shape)],
        )
        np.testing.assert_allclose(
            outputs_of(mod, batch), data[f"{part}.output.0"], rtol=1e-5, atol=1e-6
        )

    out = str(tmp_path / case["prefix"])
    mod.save_checkpoint(out, case["epoch"])
    params_name = f"-{case['epoch']:04d}.params"
    original, written = mx.nd.load(prefix + params_name), mx.nd.load(out + params_name)
    assert sorted(written) == sorted(original) == sorted(case["params_keys"])
    for key, value in original.items():
        assert written[key].dtype == value.dtype
        np.testing.assert_array_equal(written[key].asnumpy(), value.asnumpy())
    with open(f"{prefix}.buckets", "rb") as a, open(f"{out}.buckets", "rb") as b:
        assert a.read() == b.read()
    for key in (default, other):  # the networks read from MXNet's files, written back
        with (
            open(f"{prefix}-{key}-symbol.json", "rb") as a,
            open(f"{out}-{key}-symbol.json", "rb") as b,
        ):
            assert a.read() == b.read()
    with open(f"{prefix}-{default}-symbol.json", "rb") as a, open(f"{out}-symbol.json", "rb") as b:
        assert a.read() == b.read()
