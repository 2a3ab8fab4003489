"""Run chosen MXNet 1.9.1 unittest functions with `mxnet` aliased to rebind (a sanity check).

Usage (not collected by pytest):
  git -C /work/.mirror/apache+mxnet/repo show 1.9.1:tests/python/unittest/test_operator.py \
      > /tmp/test_operator_mx.py
  python tests/recording/run_mxnet_unittests.py /tmp/test_operator_mx.py test_concat,test_dot
Shims only what the file imports around the tests (nose, common.with_seed, mx.use_np_shape).
"""
import functools, signal, sys, time, traceback, types, random
import numpy as np
import rebind, rebind.test_utils, rebind.operator, rebind.base

shim = types.ModuleType("mxnet")
shim.__dict__.update({k: getattr(rebind, k) for k in dir(rebind)})
rebind.use_np_shape = shim.use_np_shape = lambda f: f  # harness only: rebind has no numpy-shape mode
sys.modules["mxnet"] = shim
sys.modules["mxnet.test_utils"] = rebind.test_utils
sys.modules["mxnet.operator"] = rebind.operator
base = types.ModuleType("mxnet.base"); base.__dict__.update(rebind.base.__dict__)
base._as_list = lambda x: x if isinstance(x, (list, tuple)) else [x]
sys.modules["mxnet.base"] = base
common = types.ModuleType("common")
def with_seed(seed=None):
    def deco(f):
        @functools.wraps(f)
        def w(*a, **k):
            s = seed if seed is not None else np.random.randint(0, 2**31)
            np.random.seed(s); random.seed(s); rebind.random.seed(s)
            return f(*a, **k)
        return w
    return deco
def assert_raises(exc, f=None, *a, **k):
    try:
        f(*a, **k)
    except exc:
        return
    raise AssertionError("did not raise")
passthrough = lambda *a, **k: (lambda f: f)
common.__dict__.update(with_seed=with_seed, setup_module=lambda: None, teardown=lambda: None,
    assert_raises_cudnn_not_satisfied=passthrough, assert_raises_cuda_not_satisfied=passthrough,
    assertRaises=assert_raises, run_in_spawned_process=None, with_environment=rebind.test_utils.environment)
sys.modules["common"] = common
nose = types.ModuleType("nose"); tools = types.ModuleType("nose.tools")
tools.assert_raises = assert_raises; tools.ok_ = lambda c, m=None: None if c else (_ for _ in ()).throw(AssertionError(m))
sys.modules["nose"] = nose; sys.modules["nose.tools"] = tools
src = open(sys.argv[1]).read()
ns = {"__name__": "mx_unittest"}
exec(compile(src, "test_operator.py", "exec"), ns)
names = sys.argv[2].split(",")
def alarm(*_): raise TimeoutError("over 20 s")
signal.signal(signal.SIGALRM, alarm)
res = {}
for name in names:
    f = ns.get(name)
    if f is None:
        res[name] = "missing"; continue
    t = time.time(); signal.alarm(20)
    try:
        f(); res[name] = "PASS"
    except BaseException as e:
        tb = traceback.extract_tb(e.__traceback__)
        where = next((f"{fr.name}:{fr.lineno}" for fr in reversed(tb) if fr.filename == "test_operator.py"), "?")
        res[name] = f"FAIL {type(e).__name__}: {str(e).splitlines()[0][:150] if str(e) else ''} @ {where}"
    finally:
        signal.alarm(0)
    print(f"{name}: {res[name]} ({time.time()-t:.1f}s)", flush=True)
print("PASSED", sum(v == "PASS" for v in res.values()), "of", len(res))
