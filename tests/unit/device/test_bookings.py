"""`Device.book` books a run of writes, MVMs and barriers at once as they would run one by one:
the same metrics per crossbar, timeline, noise-stream counters and crossbar contents."""

import numpy as np
import pytest

from cimxdsl.device import Device, preset
from cimxdsl.device.crossbar import sliced_product, stack_tiles
from cimxdsl.device.device import BARRIER, MVM, WRITE, Booked, Bookings


def random_run(rng, tiles: int, length: int, weights: list, precisions: list):
    """Operations on `tiles` tile ids: writes of one of `weights` (a tile's own, or another's),
    MVMs of tiles written before in the run, barriers alone and in runs."""
    kinds, ids, chosen, chosen_precisions = [], [], [], []
    written = set()
    for _ in range(length):
        kind = rng.choice([WRITE, MVM, BARRIER], p=[0.4, 0.4, 0.2])
        tile = int(rng.integers(tiles))
        if kind == MVM and tile not in written:
            kind = WRITE
        w = int(rng.integers(len(weights))) if kind == WRITE else None
        kinds.append(int(kind))
        ids.append(tile)
        chosen.append(None if w is None else weights[w])
        chosen_precisions.append(None if w is None else precisions[w])
        if kind == WRITE:
            written.add(tile)
    return kinds, ids, chosen, chosen_precisions


def one_by_one(device: Device, kinds, ids, weights, precisions, batches) -> None:
    crossbars = device.config.crossbars
    for kind, tile, w, precision, batch in zip(kinds, ids, weights, precisions, batches, strict=True):
        xbar = tile % crossbars
        if kind == WRITE:
            if not device.holds(xbar, w, precision):
                device.write(xbar, w, precision)
        elif kind == MVM:
            device.count_mvm(xbar, np.zeros((batch, device.tile(xbar).shape[0]), np.float32))
        else:
            device.barrier(xbar)


def state(device: Device) -> tuple:
    tiles = [None if t is None else (t.weights.shape, t.weights.tobytes()) for t in device._tiles]
    return device.report(), device.latency_ns, device.now_ns, list(device._free_at), device._ops_seen.tolist(), tiles


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("crossbars", [3, 16])
def test_booked_run_equals_one_by_one(seed, crossbars):
    """Random runs, each three times in a row, twice on one device (later runs find weights
    resident): the same state after each run as writing, counting and waiting one operation at a
    time."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(130, 70)).astype(np.float32)
    base.flags.writeable = False
    weights = [base[:128, :64], base[:64, :70], base[2:130, :64], rng.normal(size=(9, 1)).astype(np.float32)]
    weights.append(weights[0].copy())  # equal values, another array
    precisions = [None] * len(weights)
    config = preset("ideal").replace(crossbars=crossbars)
    booked, reference = Device(config), Device(config)
    for _ in range(2):
        for length in (1, 7, 40):
            kinds, ids, chosen, chosen_precisions = random_run(rng, 2 * crossbars, length, weights, precisions)
            batches = rng.integers(1, 50, length)
            ops = Bookings(kinds, ids, chosen, chosen_precisions)
            mvms = [j for j, kind in enumerate(kinds) if kind == MVM]
            for _ in range(3):  # (a run booked again finds what it left: the same booking from the third on)
                configs = booked.book(ops, batches, mvms)
                one_by_one(reference, kinds, ids, chosen, chosen_precisions, batches)
                assert configs is not None
                assert len(configs) == len(mvms) and all(c.exact for c in configs)
                assert state(booked) == state(reference)
        booked.reset_metrics(), reference.reset_metrics()


def test_runs_that_cannot_be_booked_leave_the_device_alone():
    """Float weights on a device that is not exact, an MVM on a crossbar never written, a tile
    too large: None, and nothing booked."""
    w = np.ones((4, 4), np.float32)
    run = Bookings([WRITE, MVM, BARRIER], [0, 0, 0], [w, None, None], [None, None, None])
    lossy = Device(preset("isaac"))
    assert lossy.book(run, np.array([0, 2, 0])) is None and lossy.crossbars_used() == 0
    device = Device("ideal")
    unwritten = Bookings([MVM], [1], [None], [None])
    assert device.book(unwritten, np.array([2])) is None
    large = Bookings([WRITE], [0], [np.ones((129, 4), np.float32)], [None])
    assert device.book(large, np.array([0])) is None
    assert device.crossbars_used() == 0 and device.tile(0) is None and device.latency_ns == 0
    assert device.book(run, np.array([0, 2, 0])) == [] and device.crossbars_used() == 1


@pytest.mark.parametrize("seed", range(3))
def test_runs_booked_again_as_inferences(seed, monkeypatch):
    """Runs booked in turn, again and again as the layers of repeated inferences: a run that
    finds on its crossbars what it found when last booked books without comparing weights
    (`Device.holds`), and from the crossbars' times it last started from replays the times it
    left then; a write between inferences changes what it finds, and it is booked anew. Each run
    leaves the state writing, counting and waiting one operation at a time leaves."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(130, 70)).astype(np.float32)
    base.flags.writeable = False
    weights = [base[:128, :64], base[:64, :70], base[2:130, :64], base[:9, :1]]
    precisions = [None] * len(weights)
    config = preset("ideal").replace(crossbars=4)
    booked, reference = Device(config), Device(config)
    runs = []
    for length in (12, 30, 20):
        kinds, ids, chosen, chosen_precisions = random_run(rng, 8, length, weights, precisions)
        runs.append((Bookings(kinds, ids, chosen, chosen_precisions), rng.integers(1, 50, length)))
    compared, replayed = [], []
    original = Device.holds
    monkeypatch.setattr(Device, "holds", lambda *args: compared.append(args[0]) or original(*args))
    advance = Booked.advance

    def replaying(self, free, now):  # (whether the run's timeline was the one it last left, replayed)
        before = self.timeline
        now = advance(self, free, now)
        replayed.append(before is not None and self.timeline is before)
        return now

    monkeypatch.setattr(Booked, "advance", replaying)
    for inference in range(5):
        if inference in (1, 2, 4):  # (each inference's timeline from zero, as `Model.__call__` runs them)
            booked.reset_metrics(), reference.reset_metrics()
        if inference == 4:  # (other weights on every crossbar: the first run must compare what it finds)
            for device in (booked, reference):
                for xbar in range(4):
                    device.write(xbar, base[:3, :5])
        compared.clear(), replayed.clear()
        for ops, batches in runs:
            assert booked.book(ops, batches) is not None
            one_by_one(reference, ops.kinds.tolist(), ops.tiles.tolist(), ops.weights, ops.precisions, batches)
            assert state(booked) == state(reference)
        firsts = [len(ops.plan(4).firsts) for ops, _ in runs]
        if inference == 0:
            assert compared.count(booked) == sum(firsts) and not any(replayed)
        elif inference == 2:  # (the third finds what the second left, from the same times)
            assert compared.count(booked) == 0 and all(replayed)
        elif inference == 3:  # (the times the third left: the same bookings, advanced anew)
            assert compared.count(booked) == 0 and not any(replayed)
        elif inference == 4:
            assert compared.count(booked) >= firsts[0] > 0 and not replayed[0]


@pytest.mark.parametrize("seed", range(3))
def test_booked_bit_sliced_run_equals_one_by_one(seed):
    """On a noiseless bit-sliced device (int8 weights in 2-bit cells, 8-bit ADC), a run booked
    at once leaves the state running it one operation at a time leaves, and each MVM's sliced
    product on the tile booking gives it equals the MVM run on its own; inputs that do not fit the
    DACs as a whole are not booked."""
    rng = np.random.default_rng(seed)
    base = rng.integers(-127, 128, size=(130, 70)).astype(np.int8)
    base.flags.writeable = False
    weights = [base[:128, :32], base[:64, :20], base[2:130, :32], base[:9, :1], base[:128, :32].copy()]
    precisions = [None] * len(weights)
    config = preset("cinnamon").replace(weight_bits=8, input_bits=8, adc_bits=8, crossbars=3)
    assert config.noiseless and not config.exact
    booked, reference = Device(config), Device(config)
    x = rng.integers(-128, 128, size=(5, 128)).astype(np.int64)
    for length in (7, 40, 40):
        kinds, ids, chosen, chosen_precisions = random_run(rng, 6, length, weights, precisions)
        batches = np.where(np.array(kinds) == MVM, len(x), 0)
        ops = Bookings(kinds, ids, chosen, chosen_precisions)
        mvms = [j for j, kind in enumerate(kinds) if kind == MVM]
        for _ in range(2):
            assert booked.book(ops, batches, mvms, [np.full((1, 4), 256)]) is None
            configs = booked.book(ops, batches, mvms, [x])
            assert configs is not None and all(not c.exact for c in configs)
            read = ops.booked.last_read
            for j, (kind, tile) in enumerate(zip(kinds, ids, strict=True)):  # (one by one, as `one_by_one`)
                xbar = tile % config.crossbars
                if kind == WRITE and not reference.holds(xbar, chosen[j]):
                    reference.write(xbar, chosen[j])
                elif kind == MVM:
                    rows = x[:, : reference.tile(xbar).shape[0]]
                    expected = reference.mvm(xbar, rows)
                    assert read[j].weights.tobytes() == reference.tile(xbar).weights.tobytes()
                    stack = stack_tiles([[read[j]]], None, configs[mvms.index(j)])
                    assert np.array_equal(sliced_product(rows, stack, configs[mvms.index(j)]), expected)
                elif kind == BARRIER:
                    reference.barrier(xbar)
            assert state(booked) == state(reference)
