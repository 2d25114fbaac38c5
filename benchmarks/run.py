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
"""Run the benchmark: ``python -m benchmarks.run [--quick] [--runs K]``.

One real placement (SQLite, 127.0.0.1, ``TCP_NODELAY``) holds the whole
cloud. Phases:

``main``
    for each N, rounds alternate one run of nova's cold conductor check
    with decisions of every strategy for every case, so that both see the
    same machine load; this gives the ratios to nova;
``base`` and ``grown``
    the strategies alone, on the small cloud and after it grows from
    ``background`` to ``grow_to`` hosts, alternately (``growth_cycles``
    times; the added hosts are deleted between cycles); this gives the
    growth ratios.

The create path is measured after ``main``; the audit runs last, on the
grown cloud, whose background hosts serve as its compute nodes.
Prints Markdown, writes JSON (and ``benchmarks/RESULTS.md`` after a full
run) and exits 1 when a target is missed or pending.
"""

import argparse
import json
import logging
import os
import sys
import time
import warnings

from benchmarks import machine
from benchmarks import report
from benchmarks import scenario
from benchmarks import stats

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_JSON = os.path.join(HERE, 'results', 'latest.json')
RESULTS_MD = os.path.join(HERE, 'RESULTS.md')
#: The same run as reStructuredText, included by the performance page.
RESULTS_RST = os.path.join(os.path.dirname(HERE), 'doc', 'source', 'admin',
                           'performance-results.inc')

#: Settings of a full run and of a ``--quick`` smoke run.
PROFILES = {
    'full': {'ns': [0, 16, 64, 256], 'background': 200, 'grow_to': 2000,
             'runs': 15, 'per_round': 2, 'growth_cycles': 2,
             'create_hosts': 10000, 'create_runs': 21, 'precheck_runs': 15,
             'audit': [
                 (strategy, servers, hosts)
                 for strategy in ('held_providers', 'reject', 'root_traits',
                                  'tree_traits', 'in_tree_candidates',
                                  'allocation_traits')
                 for servers, hosts in ((1000, 100), (2000, 100))] + [
                 ('in_tree_candidates', 10000, 1000)]},
    'quick': {'ns': [0, 64], 'background': 100, 'grow_to': 1000,
              'runs': 5, 'per_round': 1, 'growth_cycles': 1,
              'create_hosts': 10000, 'create_runs': 7, 'precheck_runs': 3,
              'audit': [
                  (strategy, servers, hosts)
                  for strategy in ('held_providers', 'in_tree_candidates')
                  for servers, hosts in ((100, 10), (300, 10))]},
}


def parse_args(argv):
    """Parse the command line."""
    parser = argparse.ArgumentParser(
        prog='python -m benchmarks.run',
        description='Benchmark every rebuild strategy beside nova\'s own '
                    'check on a real placement.')
    parser.add_argument('--quick', action='store_true',
                        help='a smoke run of about a minute; does not '
                             'update benchmarks/RESULTS.md')
    parser.add_argument('--runs', type=int, default=None,
                        help='rounds per N (default 15; at least 15 for '
                             'a full run)')
    parser.add_argument('--json', default=DEFAULT_JSON,
                        help='where to write the JSON results')
    args = parser.parse_args(argv)
    if args.runs is not None and args.runs < (1 if args.quick else 15):
        parser.error('a full run needs --runs of at least 15')
    return args


def _progress(message):
    stamp = time.strftime('%H:%M:%S')
    sys.stderr.write('[bench %s] %s\n' % (stamp, message))
    sys.stderr.flush()


def _quiet():
    """Keep library warnings and logs off the report."""
    warnings.simplefilter('ignore')
    logging.getLogger().setLevel(logging.ERROR)


def build_cloud(config):
    """Start placement and load the small cloud and the measured hosts."""
    cloud = scenario.Cloud().start()
    cloud.add_background(config['background'])
    for n in config['ns']:
        cloud.add_host(n)
        cloud.add_host(n, full=True)
        _progress('compute nodes with %d children ready' % n)
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
        cell['overhead'] = stats.ratio(cell['median_ms'],
                                       cell['bare_median_ms'])
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
        _progress('main phase, N=%d measured in %.0f s' % (
            n, time.monotonic() - started))
    return cells, nova_cells


def measure_strategies(label, cloud, engine, config, strategies):
    """Measure the strategies alone at every N (no nova runs).

    :returns: samples keyed by ``(n, case name, strategy)``
    """
    started = time.monotonic()
    samples = {}
    for n in config['ns']:
        found, _none = measure_n(cloud, engine, None, n, config['runs'], 1,
                                 strategies)
        samples.update(found)
    _progress('%s: %d background hosts measured in %.0f s' % (
        label, cloud.background, time.monotonic() - started))
    return samples


def _grow(cloud, config):
    started = time.monotonic()
    cloud.add_background(config['grow_to'] - config['background'])
    _progress('grew to %d background hosts in %.0f s' % (
        cloud.background, time.monotonic() - started))


def measure_growth(cloud, engine, config, strategies):
    """Alternate small and grown cloud: A B (shrink) A B ...

    Each cycle measures the strategies on the small cloud, adds the hosts,
    measures again and (except after the last cycle) deletes them. Samples
    of all cycles are pooled per phase, so slow drift in machine load
    weighs on both phases alike.

    :returns: ``(cells, per-cycle medians)``
    """
    pooled = {'base': {}, 'grown': {}}
    cycles = []
    for cycle in range(config['growth_cycles']):
        medians = {}
        for phase in ('base', 'grown'):
            if phase == 'grown':
                _grow(cloud, config)
            found = measure_strategies('cycle %d %s' % (cycle + 1, phase),
                                       cloud, engine, config, strategies)
            for key, values in found.items():
                pooled[phase].setdefault(key, []).extend(values)
                medians.setdefault(key, {})[phase] = stats.median(
                    [s.seconds for s in values]) * 1000.0
        cycles.append(medians)
        if cycle + 1 < config['growth_cycles']:
            cloud.remove_background(config['background'])
            _progress('shrank back to %d background hosts'
                      % cloud.background)
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


def run_all(config):
    """Run every measurement and return the results dict."""
    # Imported here: nova takes seconds to import and prints warnings.
    from benchmarks import audit
    from benchmarks import createpath
    from benchmarks import derive
    from benchmarks import novacheck
    from benchmarks import precheck
    from benchmarks import rebuild

    strategies = list(rebuild.STRATEGIES)
    results = {'config': dict(config, strategies=strategies,
                              cases=[c.name for c in scenario.CASES])}
    cloud = build_cloud(config)
    try:
        engine = rebuild.Engine(cloud)
        nova = novacheck.NovaCheck(cloud)
        results['negotiation'] = engine.negotiate(
            cloud.host(0, scenario.CASES[0]), scenario.CASES[0])
        cells, results['nova'] = measure_main(cloud, engine, nova, config,
                                              strategies)
        results['create_path'] = createpath.measure(
            cloud, config['create_hosts'], config['create_runs'])
        _progress('create path measured')
        grown, cycles = measure_growth(cloud, engine, config, strategies)
        results['rebuild'] = cells + grown
        results['growth'] = growth(grown, cycles)
        results['derived'] = derive.measure(cloud, engine, config['runs'])
        _progress('derived requirements measured')
        engine.close()
        started = time.monotonic()
        results['audit'] = audit.measure(cloud, config['audit'])
        _progress('audit %s in %.0f s' % (results['audit']['status'],
                                          time.monotonic() - started))
    finally:
        cloud.stop()
    started = time.monotonic()
    results['precheck'] = precheck.measure_in_subprocess(
        config['precheck_runs'])
    _progress('nova-api pre-check %s in %.0f s' % (
        results['precheck']['status'], time.monotonic() - started))
    return results


def write_json(path, results):
    """Write the results as JSON, creating the directory."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, 'w') as f:
        json.dump(results, f, indent=1, sort_keys=True)


def write_results_md(results, targets, text):
    """Write ``benchmarks/RESULTS.md`` and the documentation's copy.

    Both are committed: the Markdown for reviewers, the reStructuredText
    for ``doc/source/admin/performance.rst``, which includes it.
    """
    lines = ['# Benchmark results', '',
             'The last full run of `tox -e bench` (`python -m '
             'benchmarks.run`). See `doc/source/admin/performance.rst` for '
             'what is measured and why.', '', '## Machine', '']
    lines += ['- %s' % line for line in report.machine_lines(
        results['machine'])]
    missed = report.missed(targets)
    lines += ['', '## Verdict', '']
    lines += ['- %s: %s' % (t['status'].upper(), report.summary(t))
              for t in missed] or ['All targets met.']
    lines += ['', text]
    with open(RESULTS_MD, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    with open(RESULTS_RST, 'w') as f:
        f.write(report.render_rst(results, targets) + '\n')


def main(argv=None):
    """Run the benchmark; return 0 when every target is met, else 1."""
    args = parse_args(argv)
    _quiet()
    config = dict(PROFILES['quick' if args.quick else 'full'],
                  quick=args.quick)
    if args.runs is not None:
        config['runs'] = args.runs
    info = machine.describe()
    started = time.monotonic()
    results = run_all(config)
    info['load_average_end'] = machine.load_average()
    info['duration_s'] = round(time.monotonic() - started)
    results['machine'] = info
    targets = report.evaluate(results)
    results['targets'] = targets
    text = report.render_markdown(results, targets)
    sys.stdout.write(text + '\n')
    write_json(args.json, results)
    if not args.quick:
        write_results_md(results, targets, text)
    missed = report.missed(targets)
    for target in missed:
        status = target['status'].upper()
        sys.stdout.write('TARGET %s: %s\n' % (status,
                                              report.summary(target)))
    return 1 if missed else 0


if __name__ == '__main__':
    sys.exit(main())
