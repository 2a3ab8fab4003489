"""rebind.cpus: the CPUs a process may use (affinity, cores, cgroup quota) and others' load.

The kernel's files are faked in a temporary directory; the expected figures
follow from the files' definitions (cgroup v2 ``cpu.max`` is "quota period" or
"max period"; v1 ``cpu.cfs_quota_us`` is -1 when unlimited; ``/proc/stat``
counts clock ticks per CPU).
"""

import os
import types

import pytest

from rebind import cpus


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _cgroup(directory, files):
    """A fake cgroup directory: ``cgroup.procs`` marks it as one, plus ``files``."""
    _write(directory / "cgroup.procs", "")
    for name, text in files.items():
        _write(directory / name, text)


@pytest.fixture
def fake_proc(tmp_path, monkeypatch):
    """Points rebind.cpus at fake /proc files; returns a function writing them."""

    def write(cgroup, mountinfo):
        _write(tmp_path / "cgroup", cgroup)
        _write(tmp_path / "mountinfo", mountinfo)

    monkeypatch.setattr(cpus, "PROC_CGROUP", str(tmp_path / "cgroup"))
    monkeypatch.setattr(cpus, "PROC_MOUNTINFO", str(tmp_path / "mountinfo"))
    return write


def _mount(point, fs_type, options, root="/"):
    return f"35 31 0:30 {root} {point} rw,relatime shared:9 - {fs_type} {fs_type} {options}\n"


def test_cgroup_v2_quota_is_the_smallest_over_the_cgroup_and_its_parents(tmp_path, fake_proc):
    mount = tmp_path / "v2"
    _cgroup(mount, {})  # the root cgroup has no cpu.max
    _cgroup(mount / "jobs", {"cpu.max": "250000 100000\n"})
    _cgroup(mount / "jobs" / "mine", {"cpu.max": "max 100000\n"})
    fake_proc("0::/jobs/mine\n", _mount(mount, "cgroup2", "rw"))
    assert cpus.cgroup_quota() == pytest.approx(2.5)


def test_cgroup_v2_without_a_limit_is_none(tmp_path, fake_proc):
    mount = tmp_path / "v2"
    _cgroup(mount / "mine", {"cpu.max": "max 100000\n"})
    fake_proc("0::/mine\n", _mount(mount, "cgroup2", "rw"))
    assert cpus.cgroup_quota() is None


def test_cgroup_v1_in_a_container_reads_the_mounted_root(tmp_path, fake_proc):
    # a container without a cgroup namespace: its cgroup is mounted as the hierarchy's root
    mount = tmp_path / "cpu,cpuacct"
    _cgroup(mount, {"cpu.cfs_quota_us": "150000\n", "cpu.cfs_period_us": "100000\n"})
    fake_proc(
        "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n",
        _mount(mount, "cgroup", "rw,cpu,cpuacct", root="/docker/abc")
        + _mount(tmp_path / "memory", "cgroup", "rw,memory", root="/docker/abc"),
    )
    assert cpus.cgroup_quota() == pytest.approx(1.5)


def test_cgroup_v1_unlimited_quota_is_none(tmp_path, fake_proc):
    mount = tmp_path / "cpu"
    _cgroup(mount, {"cpu.cfs_quota_us": "-1\n", "cpu.cfs_period_us": "100000\n"})
    fake_proc("1:cpu:/\n", _mount(mount, "cgroup", "rw,cpu"))
    assert cpus.cgroup_quota() is None


def test_no_cgroup_files_means_no_quota(tmp_path, fake_proc):
    fake_proc("", "")
    assert cpus.cgroup_quota() is None


def test_usable_cpus_is_the_affinity_within_the_quota_rounded_up(tmp_path, fake_proc, monkeypatch):
    mount = tmp_path / "v2"
    _cgroup(mount / "mine", {"cpu.max": "150000 100000\n"})
    fake_proc("0::/mine\n", _mount(mount, "cgroup2", "rw"))
    monkeypatch.setattr(cpus, "SYS_CPU", str(tmp_path / "no-topology"))
    monkeypatch.setattr(cpus, "affinity", lambda: [0, 1, 2, 3])
    assert cpus.usable_cpus() == 2  # ceil(1.5) of 4
    _cgroup(mount / "mine", {"cpu.max": "20000 100000\n"})
    assert cpus.usable_cpus() == 1  # a fifth of a CPU still runs one thread
    _cgroup(mount / "mine", {"cpu.max": "max 100000\n"})
    assert cpus.usable_cpus() == 4


def test_hyperthreads_of_one_core_count_once(tmp_path, monkeypatch):
    # CPUs 0 and 2 are the two threads of core 0, 1 and 3 those of core 1
    for cpu, core in ((0, 0), (1, 1), (2, 0), (3, 1)):
        _write(tmp_path / f"cpu{cpu}/topology/core_id", f"{core}\n")
        _write(tmp_path / f"cpu{cpu}/topology/physical_package_id", "0\n")
    monkeypatch.setattr(cpus, "SYS_CPU", str(tmp_path))
    assert cpus.physical_cores([0, 1, 2, 3]) == 2
    assert cpus.physical_cores([0, 2]) == 1
    assert cpus.physical_cores([0, 1]) == 2


def test_affinity_is_the_scheduler_mask():
    if hasattr(os, "sched_getaffinity"):
        assert cpus.affinity() == sorted(os.sched_getaffinity(0))
    assert len(cpus.affinity()) >= 1


def _stat_line(cpu, user, system, idle, steal=0):
    # cpuN user nice system idle iowait irq softirq steal guest guest_nice
    return f"cpu{cpu} {user} 0 {system} {idle} 7 0 0 {steal} 0 0\n"


def test_load_sampler_counts_other_processes_time_on_our_cpus(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    clock = types.SimpleNamespace(wall=100.0, own=5.0)
    fake_time = types.SimpleNamespace(monotonic=lambda: clock.wall, process_time=lambda: clock.own)
    monkeypatch.setattr(cpus, "PROC_STAT", str(stat))
    monkeypatch.setattr(cpus, "PROC_LOADAVG", str(tmp_path / "no-loadavg"))  # time alone here
    monkeypatch.setattr(cpus, "time", fake_time)
    monkeypatch.setattr(cpus.os, "sysconf", lambda name: 100)
    # cpu2 is not in our affinity mask: its time never counts
    _write(stat, "cpu  0 0 0 0\n" + _stat_line(0, 1000, 0, 5000) + _stat_line(1, 0, 0, 5000))
    stat.write_text(stat.read_text() + _stat_line(2, 0, 0, 0))
    sampler = cpus.LoadSampler(cpus=[0, 1])
    # 0.5 s later: cpu0 busy 50 ticks (user 30, system 20), cpu1 10 ticks stolen by the
    # hypervisor, cpu2 busy 50; this process ran 0.2 s of those
    clock.wall, clock.own = 100.5, 5.2
    _write(
        stat,
        _stat_line(0, 1030, 20, 5000)
        + _stat_line(1, 0, 0, 5040, steal=10)
        + _stat_line(2, 50, 0, 0),
    )
    # ((50 + 10) / 100 s - 0.2 s) / 0.5 s
    assert sampler.sample() == pytest.approx(0.8)
    clock.wall, clock.own = 101.0, 5.7  # idle machine: only this process ran
    _write(stat, _stat_line(0, 1080, 20, 5000) + _stat_line(1, 0, 0, 5090, steal=10))
    assert sampler.sample() == pytest.approx(0.0)


def test_load_sampler_restart_begins_a_new_window(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    clock = types.SimpleNamespace(wall=100.0, own=5.0)
    fake_time = types.SimpleNamespace(monotonic=lambda: clock.wall, process_time=lambda: clock.own)
    monkeypatch.setattr(cpus, "PROC_STAT", str(stat))
    monkeypatch.setattr(cpus, "time", fake_time)
    monkeypatch.setattr(cpus.os, "sysconf", lambda name: 100)
    _write(tmp_path / "loadavg", "1.50 1.00 0.50 3/117 6559\n")  # 3 running machine-wide
    monkeypatch.setattr(cpus, "PROC_LOADAVG", str(tmp_path / "loadavg"))
    monkeypatch.setattr(cpus, "_own_running", lambda: 1)
    _write(stat, _stat_line(0, 1000, 0, 5000) + _stat_line(1, 0, 0, 5000))
    sampler = cpus.LoadSampler(cpus=[0, 1])
    sampler._whole_machine = True  # (this test's mask is two of the machine's CPUs)
    # 10 s pass, another process keeps cpu0 busy all along, then stops
    clock.wall = 110.0
    _write(stat, _stat_line(0, 2000, 0, 5000) + _stat_line(1, 0, 0, 6000))
    assert sampler.restart() == 2  # the tasks of others running at this instant
    # 0.1 s later: nobody else ran since the restart, this process 0.1 s on cpu1
    clock.wall, clock.own = 110.1, 5.1
    _write(stat, _stat_line(0, 2000, 0, 5010) + _stat_line(1, 10, 0, 6000))
    monkeypatch.setattr(cpus, "PROC_LOADAVG", str(tmp_path / "no-loadavg"))  # time alone
    assert sampler.sample() == pytest.approx(0.0)  # not the 10 s of cpu0 before the restart
    sampler._whole_machine = False  # a container's share of a host: the tasks are unknown
    assert sampler.restart() is None


def test_load_sampler_without_proc_knows_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(cpus, "PROC_STAT", str(tmp_path / "missing"))
    monkeypatch.setattr(cpus, "PROC_LOADAVG", str(tmp_path / "missing"))
    sampler = cpus.LoadSampler(cpus=[0])
    assert sampler.sample() is None


@pytest.fixture
def fake_tasks(tmp_path, monkeypatch):
    """This process has three threads: two running (one of them sampling), one asleep."""
    for task, state in (("100", "R"), ("101", "S"), ("102", "R")):
        # a command name with a space and a parenthesis: the state follows the last ")"
        _write(tmp_path / "task" / task / "stat", f"{task} (python (x) y) {state} 1 2 3\n")
    monkeypatch.setattr(cpus, "PROC_TASKS", str(tmp_path / "task"))
    _write(tmp_path / "loadavg", "2.61 2.00 2.77 6/117 6559\n")  # 6 running machine-wide
    monkeypatch.setattr(cpus, "PROC_LOADAVG", str(tmp_path / "loadavg"))


def test_running_others_leaves_this_process_out(tmp_path, monkeypatch, fake_tasks):
    assert cpus.LoadSampler.running_others() == 4
    monkeypatch.setattr(cpus, "PROC_LOADAVG", str(tmp_path / "missing"))
    assert cpus.LoadSampler.running_others() is None


def test_tasks_waiting_count_when_they_exceed_the_time_measured(tmp_path, monkeypatch, fake_tasks):
    # time says others used 0.5 CPU (our spinning threads took the rest); 4 wait right now
    _write(tmp_path / "stat", _stat_line(0, 0, 0, 0))
    clock = types.SimpleNamespace(wall=10.0, own=0.0)
    fake_time = types.SimpleNamespace(monotonic=lambda: clock.wall, process_time=lambda: clock.own)
    monkeypatch.setattr(cpus, "time", fake_time)
    monkeypatch.setattr(cpus.os, "sysconf", lambda name: 100)
    monkeypatch.setattr(cpus, "PROC_STAT", str(tmp_path / "stat"))
    monkeypatch.setattr(cpus.os, "cpu_count", lambda: 1)
    sampler = cpus.LoadSampler(cpus=[0])
    clock.wall, clock.own = 11.0, 0.5
    _write(tmp_path / "stat", _stat_line(0, 100, 0, 0))
    assert sampler.sample() == 4.0
    # pinned to some of a machine's CPUs, the machine-wide count says nothing about ours
    monkeypatch.setattr(cpus.os, "cpu_count", lambda: 8)
    sampler = cpus.LoadSampler(cpus=[0])
    clock.wall, clock.own = 12.0, 1.0
    _write(tmp_path / "stat", _stat_line(0, 200, 0, 0))
    assert sampler.sample() == pytest.approx(0.5)
