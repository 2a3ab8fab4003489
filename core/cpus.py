"""The CPUs this process may use, and how much of them other processes keep busy.

Read from Linux's own accounts: the affinity mask (``sched_getaffinity``), the
cores behind those CPUs (``/sys/devices/system/cpu``, so two hyperthreads of one
core count once), the CPU bandwidth quota of the process's cgroup (v2
``cpu.max``, v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``, the smallest over
the cgroup and its parents) and, for the load, ``/proc/stat``. Elsewhere
(macOS, Windows) the answers fall back to ``os.cpu_count()`` and "no load
known". The thread policy that uses these figures is ``threadpool.py``.
"""

import math
import os
import time

__all__ = ["LoadSampler", "usable_cpus"]

# Where the kernel's figures are read (tests point these at fake files)
PROC_CGROUP = "/proc/self/cgroup"
PROC_MOUNTINFO = "/proc/self/mountinfo"
PROC_STAT = "/proc/stat"
PROC_LOADAVG = "/proc/loadavg"
PROC_TASKS = "/proc/self/task"
SYS_CPU = "/sys/devices/system/cpu"


def _read(path):
    try:
        with open(path, encoding="ascii") as file:
            return file.read()
    except (OSError, UnicodeDecodeError):
        return None


def affinity():
    """The ids of the CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def physical_cores(cpus):
    """How many distinct cores the logical ``cpus`` sit on (each CPU its own when unknown)."""
    cores = set()
    for cpu in cpus:
        topology = f"{SYS_CPU}/cpu{cpu}/topology"
        package, core = _read(f"{topology}/physical_package_id"), _read(f"{topology}/core_id")
        cores.add((package.strip(), core.strip()) if package and core else ("cpu", cpu))
    return len(cores)


def cgroup_quota():
    """The CPUs' worth of time the cgroup bandwidth quota allows (a float), or None if unlimited."""
    quotas = [q for directory, version in _cgroup_cpu_dirs() for q in _quotas(directory, version)]
    return min(quotas) if quotas else None


def _cgroup_cpu_dirs():
    """(directory, version): this process's cgroup in each hierarchy with the cpu controller."""
    memberships = {}  # controller ("" for v2) -> path of this process's cgroup
    for line in (_read(PROC_CGROUP) or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(",") if parts[1] else [""]:
                memberships[controller] = parts[2]
    found = []
    for line in (_read(PROC_MOUNTINFO) or "").splitlines():
        fields, _, tail = line.partition(" - ")
        fields, tail = fields.split(), tail.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        root, mount_point, fs_type, options = fields[3], fields[4], tail[0], tail[2]
        if fs_type == "cgroup2" and "" in memberships:
            path, version = memberships[""], 2
        elif fs_type == "cgroup" and "cpu" in options.split(",") and "cpu" in memberships:
            path, version = memberships["cpu"], 1
        else:
            continue
        # a container sees its own cgroup mounted as the root of the hierarchy
        relative = path[len(root) :] if path.startswith(root) and root != "/" else path
        found.append((os.path.normpath(f"{mount_point}/{relative}"), version))
    return found


def _quotas(directory, version):
    """The quotas of ``directory`` and its parents up to the mount point (each in CPUs)."""
    quotas, seen = [], set()
    while directory not in seen:
        seen.add(directory)
        if version == 2:
            words = (_read(f"{directory}/cpu.max") or "").split()
            if len(words) == 2 and words[0] != "max":
                quotas.append(_ratio(words[0], words[1]))
        else:
            quota, period = (
                _read(f"{directory}/cpu.cfs_quota_us"),
                _read(f"{directory}/cpu.cfs_period_us"),
            )
            if quota and period and quota.strip() != "-1":
                quotas.append(_ratio(quota, period))
        if not os.path.exists(f"{os.path.dirname(directory)}/cgroup.procs"):
            break  # the parent is no cgroup: the mount point was reached
        directory = os.path.dirname(directory)
    return [q for q in quotas if q is not None]


def _ratio(quota, period):
    try:
        quota, period = int(quota), int(period)
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def usable_cpus():
    """How many CPUs this process may keep busy: its cores, within the cgroup quota (>= 1)."""
    count = physical_cores(affinity())
    quota = cgroup_quota()
    if quota is not None:
        count = min(count, math.ceil(quota))
    return max(1, count)


class LoadSampler:
    """How many CPUs other processes keep busy, measured since the previous sample.

    Each ``sample()`` (about 150 microseconds) takes the larger of two readings:

    - the time other processes ran on our CPUs since the previous sample (the
      busy time ``/proc/stat`` counts for the CPUs in the affinity mask, less
      this process's own CPU time), over the wall time between: 0.0 on an idle
      machine, 1.0 when other work keeps one CPU busy;
    - the tasks running or waiting to run at this instant, machine-wide, less
      this process's own (``/proc/loadavg``, ``/proc/self/task``). Time alone
      understates others' demand when our own BLAS threads spin: they take CPU
      time others wanted. Read only where the affinity mask spans the whole
      machine (a container pinned to a few of a host's CPUs would count the host).

    ``None`` where neither can be read (no ``/proc``).
    """

    def __init__(self, cpus=None):
        cpus = affinity() if cpus is None else cpus
        self._cpus = {f"cpu{c}" for c in cpus}
        self._whole_machine = len(cpus) >= (os.cpu_count() or 1)
        self._ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self._previous = self._snapshot()

    def _snapshot(self):
        text = _read(PROC_STAT)
        if text is None:
            return None
        busy = 0
        for line in text.splitlines():
            words = line.split()
            if words and words[0] in self._cpus:
                # user nice system idle iowait irq softirq steal (guest time is within user)
                values = [int(w) for w in words[1:9]]
                busy += sum(values) - values[3] - values[4]
        return time.monotonic(), busy / self._ticks, time.process_time()

    def sample(self):
        """CPUs' worth of other processes' work since the previous sample, or None if unknown."""
        current, previous = self._snapshot(), self._previous
        self._previous = current
        used = None
        if current is not None and previous is not None and current[0] > previous[0]:
            others = (current[1] - previous[1]) - (current[2] - previous[2])
            used = max(0.0, others / (current[0] - previous[0]))
        running = self.running_others() if self._whole_machine else None
        if used is None or running is None:
            return used if running is None else float(running)
        return max(used, float(running))

    def restart(self):
        """Begin a new window now; the tasks of others running at this instant (None if unknown).

        Only where the affinity mask spans the whole machine (see the class).
        """
        self._previous = self._snapshot()
        return self.running_others() if self._whole_machine else None

    @staticmethod
    def running_others():
        """Tasks running or runnable now, machine-wide, less this process's (None if unknown)."""
        words = (_read(PROC_LOADAVG) or "").split()
        if len(words) < 4 or "/" not in words[3]:
            return None
        return max(0, int(words[3].split("/")[0]) - _own_running())


def _own_running():
    """This process's threads running or runnable now (at least the caller)."""
    try:
        tasks = os.listdir(PROC_TASKS)
    except OSError:
        return 1
    running = 0
    for task in tasks:
        stat = _read(f"{PROC_TASKS}/{task}/stat") or ""
        # the state follows the command name, which is in parentheses and may hold spaces
        running += stat[stat.rfind(")") + 2 : stat.rfind(")") + 3] == "R"
    return max(1, running)
