"""The MXNet-suite runner's scope rule (suite_scope.py), file patching and failure summaries."""

import argparse
import textwrap

import run_mxnet_suite as suite
import suite_scope

SOURCE = textwrap.dedent(
    """\
    import mxnet as mx
    from mxnet import gluon, nd
    from mxnet.test_utils import assert_almost_equal, use_np, default_context, rand_ndarray
    from mxnet.contrib import text, amp
    from mxnet.contrib.svrg_optimization.svrg_module import SVRGModule

    def helper():
        with mx.autograd.record():
            return mx.nd.ones((2,))

    def sparse_helper():
        return mx.nd.ones((2,), stype='row_sparse')

    def test_sparse_and_contrib():
        mx.nd.contrib.boolean_mask(sparse_helper(), rand_ndarray((2,), 'csr'))
        SVRGModule, amp

    def test_text():
        text.vocab.Vocabulary()

    def plain_helper():
        return mx.nd.ones((2,))

    def test_plain():
        assert_almost_equal(plain_helper(), plain_helper())

    def test_via_helper():
        helper()

    def test_gluon_name():
        gluon.nn.Dense(2)

    @use_np
    def test_decorated():
        pass

    def test_gpu_named_only():
        ctx = mx.gpu(1)

    class TestCase:
        def test_method(self):
            mx.autograd.record()
    """
)


def test_scope_rule(tmp_path):
    path = tmp_path / "test_x.py"
    path.write_text(SOURCE)
    scope = suite_scope.FileScope(str(path))
    assert scope.bad_names == {"gluon", "use_np", "text"}
    assert scope.test_reason("", "test_plain") is None
    assert scope.test_reason("", "test_via_helper") == "helper() uses 'autograd'"
    # sparse storage, the contrib operators and the contrib packages rebind has: in scope
    assert scope.test_reason("", "test_sparse_and_contrib") is None
    assert scope.test_reason("", "test_text") == "uses 'text'"
    assert scope.test_reason("", "test_gluon_name") == "uses 'gluon'"
    assert scope.test_reason("", "test_decorated") == "uses 'use_np'"
    assert scope.test_reason("", "test_gpu_named_only") is None
    assert scope.test_reason("TestCase", "test_method") == "uses 'autograd'"


def test_patched_copy_keeps_what_rebind_can_import(tmp_path):
    tests = tmp_path / "tests"
    (tests / "unittest").mkdir(parents=True)
    (tests / "unittest" / "test_x.py").write_text(SOURCE)
    args = argparse.Namespace(out=str(tmp_path / "out"), tests_dir=str(tests))
    scope = suite_scope.FileScope(str(tests / "unittest" / "test_x.py"))
    patched = open(suite_scope.patched_copy(args, "unittest", "test_x.py", scope)).read()
    assert "from mxnet import nd\n" in patched
    assert (
        "from mxnet.test_utils import assert_almost_equal, default_context, rand_ndarray\n"
        in patched
    )
    assert "from mxnet.contrib import amp\n" in patched
    assert "from mxnet.contrib.svrg_optimization.svrg_module import SVRGModule\n" in patched
    assert "use_np" not in patched and "def test_decorated" not in patched
    assert len(patched.splitlines()) == len(SOURCE.splitlines())  # line numbers kept
    compile(patched, "test_x.py", "exec")


def test_failure_summary_and_comparison(tmp_path):
    text = textwrap.dedent(
        """\
        >       assert np.all(out == 4)
        E       assert np.False_
        E        +  where np.False_ = all(...)

        test_executor.py:146: AssertionError"""
    )
    assert suite.one_line(text) == (
        "assert np.False_ at `assert np.all(out == 4)` (test_executor.py:146)"
    )
    path = tmp_path / "test_x.py"
    path.write_text(SOURCE)
    scope = suite_scope.FileScope(str(path))
    mx = {("", n): ("passed", "") for n in ("test_plain", "test_gluon_name", "test_gpu_named_only")}
    rb = {
        ("", "test_plain"): ("failed", "ValueError: boom"),
        ("", "test_gluon_name"): ("failed", "NameError: name 'gluon' is not defined"),
        ("", "test_gpu_named_only"): ("failed", "gpu(1) cannot be used: no CUDA device"),
    }
    row = suite.compare_file(scope, mx, rb)
    assert (row["tests"], row["out_of_scope"], row["in_scope"]) == (3, 2, 1)
    assert row["regressions"] == [("test_plain", "[failed] ValueError: boom")]
    collect = {("", "test_x"): ("collect_error", "ImportError: nope")}
    row = suite.compare_file(scope, {("", "test_plain"): ("passed", "")}, collect)
    assert row["regressions"] == [("test_plain", "[failed] collection error: ImportError: nope")]


def test_sparse_and_contrib_files_are_run(tmp_path):
    unittest = tmp_path / "unittest"
    unittest.mkdir()
    kept = [
        "test_sparse_ndarray.py",
        "test_sparse_operator.py",
        "test_contrib_operator.py",
        "test_contrib_optimizer.py",
        "test_dgl_graph.py",
        "test_contrib_svrg_module.py",
    ]
    dropped = ["test_gluon.py", "test_numpy_op.py", "test_contrib_text.py", "test_autograd.py"]
    for name in kept + dropped:
        (unittest / name).write_text("")
    args = suite.parse_args([str(tmp_path)])
    assert sorted(name for _, name in suite.discover(args)) == sorted(kept)


def test_missing_subsystem_errors():
    missing = suite_scope.MISSING_SUBSYSTEM.search
    assert missing("ModuleNotFoundError: No module named 'rebind.contrib.text'")
    assert missing("AttributeError: module 'rebind' has no attribute 'gluon'")
    assert not missing("ModuleNotFoundError: No module named 'rebind.contrib.amp'")
    assert not missing("AttributeError: module 'rebind.ndarray' has no attribute 'contrib'")
