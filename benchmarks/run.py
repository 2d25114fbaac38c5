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
    the strategies alone, on the small cloud (``background`` hosts) and
    on the grown one (``grow_to``), in ``growth_cycles`` cycles ordered
    A B, B A, ... (:func:`benchmarks.phases.growth_order`); this gives
    the growth ratios.

The create path is measured after ``main``; the placement requests of
aggregate isolation (:mod:`benchmarks.isolation`, counted, not timed)
after the growth phases; the audit runs last, on the grown cloud, whose
background hosts serve as its compute nodes.
Prints Markdown, writes JSON (and ``benchmarks/RESULTS.md`` after a full
run) and exits 1 when a target is missed or pending.

The phases are measured by :mod:`benchmarks.phases`, judged by
:mod:`benchmarks.targets` and rendered by :mod:`benchmarks.tables`.
"""

import argparse
import json
import logging
import os
import sys
import time
import warnings

from benchmarks import machine
from benchmarks import phases
from benchmarks import report
from benchmarks import scenario
from benchmarks import tables
from benchmarks import targets

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_JSON = os.path.join(HERE, 'results', 'latest.json')
RESULTS_MD = os.path.join(HERE, 'RESULTS.md')
#: The same run as reStructuredText, included by the performance page.
RESULTS_RST = os.path.join(os.path.dirname(HERE), 'doc', 'source', 'admin',
                           'performance-results.inc')

#: Settings of a full run and of a ``--quick`` smoke run.
PROFILES = {
    'full': {'ns': [0, 16, 64, 256], 'background': 200, 'grow_to': 2000,
             'runs': 15, 'per_round': 2, 'growth_cycles': 4,
             'create_hosts': 10000, 'create_runs': 21, 'precheck_runs': 41,
             'audit': [
                 (strategy, servers, hosts)
                 for strategy in ('held_providers', 'reject', 'root_traits',
                                  'tree_traits', 'in_tree_candidates',
                                  'allocation_traits')
                 for servers, hosts in ((1000, 100), (2000, 100))] + [
                 ('in_tree_candidates', 10000, 1000)]},
    'quick': {'ns': [0, 64], 'background': 100, 'grow_to': 1000,
              'runs': 5, 'per_round': 1, 'growth_cycles': 2,
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


def _quiet():
    """Keep library warnings and logs off the report."""
    warnings.simplefilter('ignore')
    logging.getLogger().setLevel(logging.ERROR)


def run_all(config):
    """Run every measurement and return the results dict."""
    # Imported here: nova takes seconds to import and prints warnings.
    from benchmarks import audit
    from benchmarks import createpath
    from benchmarks import derive
    from benchmarks import isolation
    from benchmarks import novacheck
    from benchmarks import precheck
    from benchmarks import rebuild

    strategies = list(rebuild.STRATEGIES)
    results = {'config': dict(config, strategies=strategies,
                              cases=[c.name for c in scenario.CASES])}
    cloud = phases.build_cloud(config)
    try:
        engine = rebuild.Engine(cloud)
        nova = novacheck.NovaCheck(cloud)
        results['negotiation'] = engine.negotiate(
            cloud.host(0, scenario.CASES[0]), scenario.CASES[0])
        cells, results['nova'] = phases.measure_main(
            cloud, engine, nova, config, strategies)
        results['create_path'] = createpath.measure(
            cloud, config['create_hosts'], config['create_runs'])
        phases.progress('create path measured')
        grown, cycles = phases.measure_growth(cloud, engine, config,
                                              strategies)
        results['rebuild'] = cells + grown
        results['growth'] = phases.growth(grown, cycles)
        results['derived'] = derive.measure(cloud, engine, config['runs'])
        phases.progress('derived requirements measured')
        results['isolation'] = isolation.measure(cloud, engine, strategies)
        phases.progress('aggregate isolation counted')
        engine.close()
        started = time.monotonic()
        results['audit'] = audit.measure(cloud, config['audit'])
        phases.progress('audit %s in %.0f s' % (
            results['audit']['status'], time.monotonic() - started))
    finally:
        cloud.stop()
    started = time.monotonic()
    results['precheck'] = precheck.measure_in_subprocess(
        config['precheck_runs'])
    phases.progress('nova-api pre-check %s in %.0f s' % (
        results['precheck']['status'], time.monotonic() - started))
    return results


def write_json(path, results):
    """Write the results as JSON, creating the directory."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, 'w') as f:
        json.dump(results, f, indent=1, sort_keys=True)


def write_results_md(results, verdicts, text):
    """Write ``benchmarks/RESULTS.md`` and the documentation's copy.

    Both are committed: the Markdown for reviewers, the reStructuredText
    for ``doc/source/admin/performance.rst``, which includes it.
    """
    lines = ['# Benchmark results', '',
             'The last full run of `tox -e bench` (`python -m '
             'benchmarks.run`). See `doc/source/admin/performance.rst` for '
             'what is measured and why.', '', '## Machine', '']
    lines += ['- %s' % line for line in tables.machine_lines(
        results['machine'])]
    missed = targets.missed(verdicts)
    lines += ['', '## Verdict', '']
    lines += ['- %s: %s' % (t['status'].upper(), targets.summary(t))
              for t in missed] or ['All targets met.']
    lines += ['', text]
    new = '\n'.join(lines) + '\n'
    if os.path.exists(RESULTS_MD):
        # The hand-written sections (the load run's) stay.
        with open(RESULTS_MD) as f:
            new = report.keep_hand_written(new, f.read())
    with open(RESULTS_MD, 'w') as f:
        f.write(new)
    with open(RESULTS_RST, 'w') as f:
        f.write(tables.render_rst(results, verdicts) + '\n')


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
    verdicts = targets.evaluate(results)
    results['targets'] = verdicts
    text = tables.render_markdown(results, verdicts)
    sys.stdout.write(text + '\n')
    write_json(args.json, results)
    if not args.quick:
        write_results_md(results, verdicts, text)
    missed = targets.missed(verdicts)
    for target in missed:
        status = target['status'].upper()
        sys.stdout.write('TARGET %s: %s\n' % (status,
                                              targets.summary(target)))
    return 1 if missed else 0


if __name__ == '__main__':
    sys.exit(main())
