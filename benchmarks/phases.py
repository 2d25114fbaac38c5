# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""The benchmark's measurements, phase by phase (see :mod:`benchmarks.run`).

Each phase returns JSON-able cells: one per ``(N, case, strategy)``, with
the samples' statistics, and nova's own runs beside them.
"""

import sys
import time

from benchmarks import scenario
from benchmarks import stats


def progress(message):
    """Write a time-stamped progress line on standard error."""
    stamp = time.strftime('%H:%M:%S')
    sys.stderr.write('[bench %s] %s\n' % (stamp, message))
    sys.stderr.flush()


def build_cloud(config):
    """Start placement and load the small cloud and the measured hosts."""
    cloud = scenario.Cloud().start()
    cloud.add_background(config['background'])
    for n in config['ns']:
        cloud.add_host(n)
        cloud.add_host(n, full=True)
        progress('compute nodes with %d children ready' % n)
    return cloud


def _rotated(items, shift):
    shift %= len(items)
    return list(items[shift:]) + list(items[:shift])


def _warm_up(engine, cloud, n, cases, strategies):
    for case in cases:
        for strategy in strategies:
            for _i in range(2):
                engine.decide(strategy, cloud.host(n, case), case)


def measure_n(cloud, engine, nova, n, rounds, per_round, strategies,
              bare=False):
    """Measure every strategy and case (and nova) at one N.

    :param nova: a :class:`~benchmarks.novacheck.NovaCheck`, run once per
        round, or None
    :param bare: also time each decision's requests sent bare
    :returns: ``(samples, nova_runs)``; samples maps ``(n, case name,
        strategy)`` to a list of :class:`~benchmarks.rebuild.Sample`,
        nova_runs is a list of ``(case name, seconds, requests, outcome)``
    """
    cases = scenario.cases_for(n)
    _warm_up(engine, cloud, n, cases, strategies)
    if nova is not None:
        nova.run(cloud.host(n, cases[0]), cases[0])
    samples, nova_runs = {}, []
    for rnd in range(rounds):
        if nova is not None:
            case = cases[rnd % len(cases)]
            nova_runs.append((case.name,) + nova.run(cloud.host(n, case),
                                                     case))
        for _k in range(per_round):
            for case in cases:
                for strategy in _rotated(strategies, rnd):
                    samples.setdefault((n, case.name, strategy), []).append(
                        engine.decide(strategy, cloud.host(n, case), case,
                                      bare=bare))
    return samples, nova_runs


def summarize_cell(phase, background, key, samples):
    """Reduce one cell's samples to a JSON-able dict.

    :param key: ``(n, case name, strategy)``
    """
    n, case, strategy = key
    cell = {'phase': phase, 'background': background, 'n': n,
            'case': case, 'strategy': strategy}
    cell.update(stats.summarize([s.seconds for s in samples]))
    outcomes = sorted({s.outcome for s in samples})
    cell.update({
        'outcome': '/'.join(outcomes),
        'requests_min': min(s.requests for s in samples),
        'requests_max': max(s.requests for s in samples),
        'recorded_max': max(s.recorded for s in samples),
        'mismatch': any(s.requests != s.recorded for s in samples),
        'version_requests': sum(1 for s in samples if s.discovery),
        'cpu_median_ms': stats.median([s.cpu for s in samples]) * 1000.0,
        'nova_ratio': None,
        'bare_median_ms': None,
        'overhead': None,
    })
    bare = [s.bare for s in samples if s.bare is not None]
    if bare:
        cell['bare_median_ms'] = stats.median(bare) * 1000.0
        # NOTE(founders): the median of each decision's ratio to its own
        # bare replay, sent right before or right after it: the two see
        # the same machine, which the two medians of the whole cell, taken
        # over a minute apart in the samples, do not.
        cell['overhead'] = stats.paired_ratio(
            [(s.seconds, s.bare) for s in samples if s.bare])
    return cell


def summarize_nova(background, n, runs):
    """Reduce nova's runs at one N to a JSON-able dict."""
    cell = {'background': background, 'n': n, 'runs': len(runs)}
    cell.update(stats.summarize([r[1] for r in runs]))
    outcomes = {}
    for case, _s, _r, outcome in runs:
        outcomes.setdefault(case, outcome)
    cell.update({'requests_min': min(r[2] for r in runs),
                 'requests_max': max(r[2] for r in runs),
                 'outcomes': outcomes})
    return cell


def measure_main(cloud, engine, nova, config, strategies):
    """The main phase: every N, strategies interleaved with nova.

    :returns: ``(cells, nova_cells)``
    """
    cells, nova_cells = [], []
    for n in config['ns']:
        started = time.monotonic()
        samples, nova_runs = measure_n(cloud, engine, nova, n,
                                       config['runs'], config['per_round'],
                                       strategies, bare=True)
        nova_cell = summarize_nova(cloud.background, n, nova_runs)
        nova_cells.append(nova_cell)
        for key, values in samples.items():
            cell = summarize_cell('main', cloud.background, key, values)
            if key[2] != 'reject':
                cell['nova_ratio'] = stats.ratio(nova_cell['median_ms'],
                                                 cell['median_ms'])
            cells.append(cell)
        progress('main phase, N=%d measured in %.0f s' % (
            n, time.monotonic() - started))
    return cells, nova_cells


def measure_strategies(label, cloud, engine, config, strategies):
    """Measure the strategies alone at every N (no nova runs).

    Round by round over every N, so that each cell's samples spread over
    the whole phase, and a burst of load on the machine touches a few
    samples of every cell rather than all the samples of one.

    :returns: samples keyed by ``(n, case name, strategy)``
    """
    started = time.monotonic()
    samples = {}
    for n in config['ns']:
        _warm_up(engine, cloud, n, scenario.cases_for(n), strategies)
    for rnd in range(config['runs']):
        for n in config['ns']:
            for case in scenario.cases_for(n):
                for strategy in _rotated(strategies, rnd):
                    samples.setdefault((n, case.name, strategy), []).append(
                        engine.decide(strategy, cloud.host(n, case), case))
    progress('%s: %d background hosts measured in %.0f s' % (
        label, cloud.background, time.monotonic() - started))
    return samples


def _resize(cloud, config, phase):
    """Bring the cloud to the size ``phase`` is measured at."""
    started = time.monotonic()
    if phase == 'grown' and cloud.background < config['grow_to']:
        cloud.add_background(config['grow_to'] - cloud.background)
        progress('grew to %d background hosts in %.0f s' % (
            cloud.background, time.monotonic() - started))
    elif phase == 'base' and cloud.background > config['background']:
        cloud.remove_background(config['background'])
        progress('shrank back to %d background hosts in %.0f s' % (
            cloud.background, time.monotonic() - started))


def measure_growth(cloud, engine, config, strategies):
    """Alternate the small and the grown cloud: A B, B A, A B, B A ...

    Each phase measures the strategies at every N after the cloud is
    brought to its size (hosts added, or deleted with their servers).
    Samples of all cycles are pooled per phase (see
    :func:`benchmarks.stats.balanced_order`).
    The cloud is left grown: the audit runs on it.

    :returns: ``(cells, per-cycle medians)``
    """
    pooled = {'base': {}, 'grown': {}}
    cycles = []
    for cycle, order in enumerate(stats.balanced_order(
            config['growth_cycles'], 'base', 'grown')):
        medians = {}
        for phase in order:
            _resize(cloud, config, phase)
            found = measure_strategies('cycle %d %s' % (cycle + 1, phase),
                                       cloud, engine, config, strategies)
            for key, values in found.items():
                pooled[phase].setdefault(key, []).extend(values)
                medians.setdefault(key, {})[phase] = stats.median(
                    [s.seconds for s in values]) * 1000.0
        cycles.append(medians)
    _resize(cloud, config, 'grown')
    cells = []
    for phase, background in (('base', config['background']),
                              ('grown', config['grow_to'])):
        cells += [summarize_cell(phase, background, key, values)
                  for key, values in pooled[phase].items()]
    return cells, cycles


def growth(cells, cycles):
    """Compare each cell of the grown cloud with the small cloud.

    :param cycles: per-cycle ``{key: {'base': ms, 'grown': ms}}``
    """
    base = {(c['n'], c['case'], c['strategy']): c for c in cells
            if c['phase'] == 'base'}
    out = []
    for cell in cells:
        key = (cell['n'], cell['case'], cell['strategy'])
        if cell['phase'] != 'grown' or key not in base:
            continue
        small = base[key]
        out.append({
            'n': cell['n'], 'case': cell['case'],
            'strategy': cell['strategy'],
            'base_ms': small['median_ms'], 'grown_ms': cell['median_ms'],
            'ratio': stats.ratio(cell['median_ms'], small['median_ms']),
            'base_cpu_ms': small['cpu_median_ms'],
            'grown_cpu_ms': cell['cpu_median_ms'],
            'cpu_ratio': stats.ratio(cell['cpu_median_ms'],
                                     small['cpu_median_ms']),
            'cycle_ratios': [stats.ratio(c[key]['grown'], c[key]['base'])
                             for c in cycles],
        })
    return out
