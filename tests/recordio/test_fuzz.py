"""Damaged RecordIO files raise RecordIOError naming file and offset: never a crash or a hang.

Every truncation of MXNet's golden files, and seeded random byte flips of them.
"""

import random
import shutil

import pytest

from rebind import recordio
from tests.recordio import cases

GOLDEN = ["plain.rec", "indexed.rec"]


def record_ends(records):
    """Byte offsets where each record of ``records`` ends, computed from the format alone."""
    ends, offset = [], 0
    for buf in records:
        splits = sum(1 for i in range(0, len(buf) - 3, 4) if buf[i : i + 4] == cases.MAGIC)
        offset += 8 * (splits + 1) + len(buf) - 4 * splits + (-len(buf) % 4)
        ends.append(offset)
    return ends


def read_until_error(path):
    """(records read, error or None) for the whole file."""
    reader = recordio.MXRecordIO(path, "r")
    out = []
    try:
        while (buf := reader.read()) is not None:
            out.append(buf)
            assert len(out) <= 10_000, "the reader does not advance"
    except recordio.RecordIOError as error:
        return out, error
    finally:
        reader.close()
    return out, None


def test_every_truncation_of_plain_rec(tmp_path):
    data = (cases.DATA / "plain.rec").read_bytes()
    ends = record_ends(cases.PLAIN_RECORDS)
    assert ends[-1] == len(data)
    path = tmp_path / "t.rec"
    for size in range(len(data)):
        path.write_bytes(data[:size])
        got, error = read_until_error(path)
        whole = sum(1 for end in ends if end <= size)
        assert got == cases.PLAIN_RECORDS[:whole], size
        if size in (0, *ends):
            assert error is None, size
        else:
            start = ends[whole - 1] if whole else 0
            assert "t.rec" in str(error) and f"record starting at byte {start}" in str(error)


def test_every_truncation_of_indexed_rec(tmp_path):
    data = (cases.DATA / "indexed.rec").read_bytes()
    offsets = sorted(int(line.split("\t")[1]) for line in (cases.DATA / "indexed.idx").open())
    path = tmp_path / "t.rec"
    for size in range(len(data)):
        path.write_bytes(data[:size])
        got, error = read_until_error(path)
        assert (error is None) == (size in offsets), size
        assert len(got) == sum(1 for offset in offsets[1:] if offset <= size)


def test_error_names_file_and_offset(tmp_path):
    data = bytearray((cases.DATA / "plain.rec").read_bytes())
    second = record_ends(cases.PLAIN_RECORDS)[0]
    data[second] ^= 0xFF  # break the magic number of the second record
    path = tmp_path / "broken.rec"
    path.write_bytes(bytes(data))
    got, error = read_until_error(path)
    assert got == cases.PLAIN_RECORDS[:1]
    assert "broken.rec" in str(error) and f"at byte {second}" in str(error)
    assert "magic number" in str(error)


@pytest.mark.parametrize("name", GOLDEN)
def test_random_byte_flips(tmp_path, name):
    seed = random.randrange(2**32)
    print(f"seed {seed}")  # shown by pytest when the test fails
    rng = random.Random(seed)
    original = (cases.DATA / name).read_bytes()
    path = tmp_path / name
    for _ in range(300):
        data = bytearray(original)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        path.write_bytes(bytes(data))
        got, _ = read_until_error(path)
        for buf in got:
            try:
                recordio.unpack(buf)
            except recordio.RecordIOError:
                pass


def test_flipped_index_reads_or_raises(tmp_path):
    shutil.copy(cases.DATA / "indexed.rec", tmp_path / "x.rec")
    lines = (cases.DATA / "indexed.idx").read_text().splitlines()
    for number in range(len(lines)):
        for shift in (1, 4, 8, 10_000):
            changed = list(lines)
            key, offset = changed[number].split("\t")
            changed[number] = f"{key}\t{int(offset) + shift}"
            (tmp_path / "x.idx").write_text("\n".join(changed) + "\n")
            reader = recordio.MXIndexedRecordIO(tmp_path / "x.idx", tmp_path / "x.rec", "r")
            with pytest.raises(recordio.RecordIOError, match=r"x\.(rec|idx)"):
                reader.read_idx(int(key))
            reader.close()
