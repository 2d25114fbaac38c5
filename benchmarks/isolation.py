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
"""What judging aggregate isolation costs, in placement requests.

With nova's ``[scheduler] enable_isolated_aggregate_filtering`` on, nova's
own ``isolate_aggregates`` gives the engine the aggregates a boot of the
new image may not use (from the API database: no placement request), and
the engine judges the server's providers against them
(:mod:`nova_image_traits.isolation`). Here the engine is handed them as
nova's code hands them over (``RebuildRequest.forbidden_aggregates``),
for every strategy on every measured host and case of the benchmark
cloud, three ways (:data:`MODES`):

``off``
    nothing forbidden: the option off, nova's default;
``outside``
    one aggregate forbidden, which the compute node is not in (it is in
    another one);
``inside``
    the compute node in the forbidden aggregate: a refusal, cause
    ``isolated-aggregate``, whatever the strategy.

Counted, not timed: each decision's requests, by the engine and by
placement's recorder, which the machine's load does not change.
:mod:`benchmarks.run` runs this on the benchmark's cloud; ``python -m
benchmarks.isolation`` runs it alone, on a cloud of its own.
"""

import argparse
import json
import sys
import uuid as uuid_lib

from nova_image_traits.reasons import isolation as isolation_reason

MODES = ('off', 'outside', 'inside')
#: The default strategy's requests with isolation off: as many as before
#: isolation existed.
MAX_OFF = 2
#: What isolation may add to a decision's requests.
MAX_EXTRA = 1
#: The forbidden aggregate, and another one every measured node is in.
ISOLATED = str(uuid_lib.UUID(int=0x15013))
ELSEWHERE = str(uuid_lib.UUID(int=0xe15e))
REFUSED = 'reject'


def _set_aggregates(builder, roots, aggregates):
    for root in roots:
        path = '/resource_providers/%s/aggregates' % root
        generation = builder.get(path)['resource_provider_generation']
        builder.request('PUT', path, {
            'aggregates': list(aggregates),
            'resource_provider_generation': generation})


def summarize(key, samples):
    """One cell, ``(n, case, strategy, mode)``, of decisions' counts.

    :param samples: :class:`~benchmarks.rebuild.Sample` objects
    """
    n, case, strategy, mode = key
    return {'n': n, 'case': case, 'strategy': strategy, 'mode': mode,
            'runs': len(samples),
            'outcome': '/'.join(sorted({s.outcome for s in samples})),
            'cause': '/'.join(sorted({s.cause or '-' for s in samples})),
            'requests_min': min(s.requests for s in samples),
            'requests_max': max(s.requests for s in samples),
            'recorded_max': max(s.recorded for s in samples),
            'mismatch': any(s.requests != s.recorded for s in samples),
            'version_requests': sum(1 for s in samples if s.discovery)}


def measure(cloud, engine, strategies, runs=2):
    """Every strategy, host and case, in each of :data:`MODES`.

    The measured compute nodes are put in an aggregate of their own, and
    in the forbidden one for ``inside``; they leave both at the end.

    :returns: a dict for the report, its cells one per
        ``(n, case, strategy, mode)``
    """
    from benchmarks import scenario  # placement: imported when used
    hosts = [(n, case, cloud.host(n, case))
             for n in sorted({n for n, _full in cloud.hosts})
             for case in scenario.cases_for(n)]
    roots = sorted({host.root for _n, _case, host in hosts})
    samples = {}
    try:
        for mode in MODES:
            _set_aggregates(cloud.builder, roots, [ELSEWHERE] + (
                [ISOLATED] if mode == 'inside' else []))
            forbidden = () if mode == 'off' else (ISOLATED,)
            for _i in range(runs):
                for n, case, host in hosts:
                    for strategy in strategies:
                        samples.setdefault(
                            (n, case.name, strategy, mode), []).append(
                            engine.decide(strategy, host, case,
                                          forbidden=forbidden))
    finally:
        _set_aggregates(cloud.builder, roots, [])
    return {'status': 'measured', 'runs': runs,
            'cells': [summarize(key, values)
                      for key, values in samples.items()]}


def _span(cells):
    low = min(c['requests_min'] for c in cells)
    high = max(c['requests_max'] for c in cells)
    return str(high) if low == high else '%d-%d' % (low, high)


def rows(results):
    """The report's table: each strategy's requests in each mode.

    Each count is the range over every N and case.
    """
    iso = results.get('isolation') or {}
    if iso.get('status') != 'measured':
        return (['aggregate isolation'], [[iso.get('detail',
                                                   'not measured')]])
    by_strategy = {}
    for cell in iso['cells']:
        by_strategy.setdefault(cell['strategy'], {}).setdefault(
            cell['mode'], []).append(cell)
    out = []
    for strategy, modes in by_strategy.items():
        out.append([strategy] + [_span(modes[m]) if m in modes else '-'
                                 for m in MODES] +
                   [len(modes.get('off', ()))])
    return (['strategy', 'isolation off', 'on, outside', 'on, refused',
             'cells (N and case)'], out)


def _judged(results):
    iso = results.get('isolation') or {}
    if iso.get('status') != 'measured':
        return None, iso.get('detail', 'not measured')
    return {(c['n'], c['case'], c['strategy'], c['mode']): c
            for c in iso['cells']}, None


def target_requests(results, targets):
    """The default: 2 requests with isolation off, at most 1 more on.

    Every strategy's counts agree between the engine and placement.

    :param targets: the :mod:`benchmarks.targets` module
    """
    name = ('%s: <= %d placement requests with isolation off, <= %d more '
            'with it on' % (targets.DEFAULT_STRATEGY, MAX_OFF, MAX_EXTRA))
    cells, detail = _judged(results)
    if cells is None:
        return targets._target(name, None, [], detail)
    failures, checked = [], 0
    for (n, case, strategy, mode), cell in sorted(cells.items()):
        where = 'N=%s %s %s %s' % (n, case, strategy, mode)
        if cell['mismatch']:
            failures.append('%s: engine and recorder disagree' % where)
        if cell['version_requests']:
            failures.append('%s: microversion discovery' % where)
        if strategy != targets.DEFAULT_STRATEGY:
            continue
        checked += 1
        off = cells.get((n, case, strategy, 'off'))
        most = MAX_OFF if mode == 'off' else min(
            targets.MAX_REQUESTS,
            (off['requests_max'] if off else MAX_OFF) + MAX_EXTRA)
        if cell['requests_max'] > most:
            failures.append('%s: %d requests' % (where,
                                                 cell['requests_max']))
    return targets._target(name, checked, failures,
                           'every N and case, off, outside and refused; '
                           'engine and server counts agree for every '
                           'strategy')


def target_alike(results, targets):
    """Every strategy refuses inside, and decides outside as with it off."""
    name = 'every strategy judges aggregate isolation alike'
    cells, detail = _judged(results)
    if cells is None:
        return targets._target(name, None, [], detail)
    failures, checked = [], 0
    for (n, case, strategy, mode), cell in sorted(cells.items()):
        where = 'N=%s %s %s' % (n, case, strategy)
        off = cells.get((n, case, strategy, 'off'))
        if mode == 'outside' and off:
            checked += 1
            if (cell['outcome'], cell['cause']) != (off['outcome'],
                                                    off['cause']):
                failures.append('%s: %s outside, %s off' % (
                    where, cell['outcome'], off['outcome']))
        elif mode == 'inside':
            checked += 1
            if (cell['outcome'], cell['cause']) != (
                    REFUSED, isolation_reason.CAUSE):
                failures.append('%s: %s (%s) inside' % (
                    where, cell['outcome'], cell['cause']))
    return targets._target(name, checked, failures,
                           'inside: refused, cause %s; outside: as with '
                           'isolation off' % isolation_reason.CAUSE)


def main(argv=None):
    """Run this phase alone: print its table and targets, write JSON."""
    parser = argparse.ArgumentParser(
        prog='python -m benchmarks.isolation', description=main.__doc__)
    parser.add_argument('--quick', action='store_true',
                        help="the quick profile's hosts (N=0 and 64)")
    parser.add_argument('--json', default=None,
                        help='where to write the JSON results')
    args = parser.parse_args(argv)
    from benchmarks import phases
    from benchmarks import rebuild
    from benchmarks import run
    from benchmarks import scenario
    from benchmarks import tables
    from benchmarks import targets
    run._quiet()
    config = run.PROFILES['quick' if args.quick else 'full']
    cloud = phases.build_cloud(config)
    try:
        engine = rebuild.Engine(cloud)
        first = scenario.CASES[0]
        engine.negotiate(cloud.host(0, first), first)
        results = {'isolation': measure(cloud, engine,
                                        list(rebuild.STRATEGIES))}
        engine.close()
    finally:
        cloud.stop()
    verdicts = [target_requests(results, targets),
                target_alike(results, targets)]
    sys.stdout.write('%s\n\n%s\n' % (
        tables.markdown(*rows(results)),
        tables.markdown(*tables.target_rows(verdicts))))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(results, f, indent=1, sort_keys=True)
    return 1 if targets.missed(verdicts) else 0


if __name__ == '__main__':
    sys.exit(main())
