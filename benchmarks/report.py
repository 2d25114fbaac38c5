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
"""Judge the targets and render results as Markdown or reStructuredText.

Everything here works on the JSON-able results dict that
:mod:`benchmarks.run` writes, so a saved ``latest.json`` can be rendered
again with ``python -m benchmarks.report PATH [--rst]``.
"""

import argparse
import json
import sys

from nova_image_traits.conf import image_traits as image_traits_conf

#: The strategy the targets are about: [image_traits] strategy's default.
DEFAULT_STRATEGY = [o.default for o in image_traits_conf.ALL_OPTS
                    if o.name == 'strategy'][0]
#: At most this many placement requests per decision of the default.
MAX_REQUESTS = 3
#: At N = RATIO_N, the default at least this much faster than nova.
MIN_NOVA_RATIO = 50.0
RATIO_N = 64
#: Create path: at most this times AllHostsFilter's cost per host.
MAX_CREATE_RATIO = 1.5
#: At most this latency growth of the default from the small to the large
#: cloud.
MAX_GROWTH = 1.2
#: Every strategy at most this times the time its own requests take bare.
MAX_OVERHEAD = 1.2
#: Audit requests may grow at most this much faster than hosts.
MAX_AUDIT_SLOPE = 1.5


def _fmt(value, digits=1):
    if value is None:
        return '-'
    return '%.*f' % (digits, value)


# -- targets ---------------------------------------------------------------

def _target(name, cells, failures, detail):
    """Return one target's verdict for the report."""
    if cells is None:
        status = 'pending'
    else:
        status = 'fail' if failures else 'pass'
    return {'name': name, 'status': status, 'checked': cells or 0,
            'failures': failures, 'detail': detail}


def target_requests(results):
    """The default: at most 3 requests; every cell: counts agree."""
    failures = []
    for cell in results['rebuild']:
        where = '%(phase)s N=%(n)s %(case)s %(strategy)s' % cell
        if (cell['strategy'] == DEFAULT_STRATEGY and
                cell['requests_max'] > MAX_REQUESTS):
            failures.append('%s: %d requests' % (where,
                                                 cell['requests_max']))
        if cell['mismatch']:
            failures.append('%s: engine and recorder disagree' % where)
        if cell['version_requests']:
            failures.append('%s: microversion discovery in steady state'
                            % where)
    return _target('%s: <= %d placement requests per decision' % (
        DEFAULT_STRATEGY, MAX_REQUESTS), len(results['rebuild']), failures,
        'every N, case and cloud size; engine and server counts agree for '
        'every strategy')


def target_nova_ratio(results):
    """At N=64, the default >= 50x faster than nova's cold check."""
    failures, checked = [], 0
    for cell in results['rebuild']:
        if (cell['phase'] != 'main' or cell['n'] != RATIO_N or
                cell['strategy'] != DEFAULT_STRATEGY):
            continue
        checked += 1
        if cell['nova_ratio'] is None or cell['nova_ratio'] < MIN_NOVA_RATIO:
            failures.append('N=%(n)s %(case)s %(strategy)s: '
                            '%(nova_ratio).1fx' % cell)
    return _target('%s, N=%d: >= %gx faster than nova cold' % (
        DEFAULT_STRATEGY, RATIO_N, MIN_NOVA_RATIO), checked, failures,
        'median ratio, same run, every case')


def target_create_path(results):
    """Create path: <= 1.5x AllHostsFilter per host, no request."""
    create = results.get('create_path') or {}
    if create.get('status') != 'measured':
        return _target('create path <= %gx AllHostsFilter, 0 requests'
                       % MAX_CREATE_RATIO, None, [],
                       create.get('detail', 'not measured'))
    failures = []
    if create['ratio'] > MAX_CREATE_RATIO:
        failures.append('ratio %.2f' % create['ratio'])
    if create['placement_requests']:
        failures.append('%d placement requests'
                        % create['placement_requests'])
    return _target('create path <= %gx AllHostsFilter, 0 requests'
                   % MAX_CREATE_RATIO, 1, failures,
                   '%d HostStates, ratio %.2f' % (create['hosts'],
                                                  create['ratio']))


def target_growth(results):
    """The default: at most 1.2x latency growth with the cloud's size."""
    growth = [g for g in results.get('growth') or []
              if g['strategy'] == DEFAULT_STRATEGY]
    failures = ['N=%(n)s %(case)s %(strategy)s: %(ratio).2fx' % g
                for g in growth if g['ratio'] > MAX_GROWTH]
    detail = '%s -> %s background hosts' % (
        results['config']['background'], results['config']['grow_to'])
    return _target('%s: <= %gx latency growth with cloud size' % (
        DEFAULT_STRATEGY, MAX_GROWTH), len(growth) or None, failures,
        detail)


def target_overhead(results):
    """Every strategy within 1.2x of its own requests sent bare."""
    failures, checked = [], 0
    for cell in results['rebuild']:
        if cell['phase'] != 'main' or cell.get('overhead') is None:
            continue
        checked += 1
        if cell['overhead'] > MAX_OVERHEAD:
            failures.append('N=%(n)s %(case)s %(strategy)s: %(overhead).2fx'
                            % cell)
    return _target('every strategy <= %gx its bare placement requests'
                   % MAX_OVERHEAD, checked or None, failures,
                   'median decision / median of the same requests over a '
                   'plain keep-alive session, alternating which goes first')


def growth_property(results, strategy='in_tree_candidates'):
    """Return how much a strategy's latency grows with the cloud.

    It is stated as a measured property, not judged as a target.
    """
    ratios = [g['ratio'] for g in results.get('growth') or []
              if g['strategy'] == strategy and g['ratio'] is not None]
    if not ratios:
        return None
    return {'strategy': strategy, 'min': min(ratios), 'max': max(ratios),
            'background': results['config']['background'],
            'grow_to': results['config']['grow_to']}


def target_audit(results):
    """Audit requests grow with hosts, not servers."""
    audit = results.get('audit') or {}
    if audit.get('status') != 'measured':
        return _target('audit requests proportional to hosts', None, [],
                       audit.get('detail', 'not measured'))
    failures = []
    first = {}
    for run in audit['runs']:
        base = first.setdefault(run['strategy'], run)
        per_host = run['requests'] / float(run['hosts'])
        base_per_host = base['requests'] / float(base['hosts'])
        if per_host > MAX_AUDIT_SLOPE * base_per_host:
            failures.append(
                '%s: %d requests for %d servers on %d hosts (%.1f per '
                'host, against %.1f with %d servers on %d hosts)' % (
                    run['strategy'], run['requests'], run['servers'],
                    run['hosts'], per_host, base_per_host, base['servers'],
                    base['hosts']))
    return _target('audit requests proportional to hosts',
                   len(audit['runs']), failures,
                   'requests per host stay within %gx as servers per host '
                   'and hosts grow' % MAX_AUDIT_SLOPE)


def evaluate(results):
    """Return every target's verdict."""
    from benchmarks import derive  # nova: imported when used
    return [check(results) for check in (
        target_requests, target_nova_ratio, target_create_path,
        target_growth, target_overhead, target_audit)] + [
        derive.target(results, sys.modules[__name__])]


def missed(targets):
    """Return the targets that did not pass (failed or pending)."""
    return [t for t in targets if t['status'] != 'pass']


def summary(target, limit=6):
    """Return 'name -- first failures (and N more)' for one target."""
    failures = target['failures']
    text = '; '.join(failures[:limit]) or target['detail']
    if len(failures) > limit:
        text += '; and %d more' % (len(failures) - limit)
    return '%s -- %s' % (target['name'], text)


# -- tables ----------------------------------------------------------------

def markdown(headers, rows):
    """Render a Markdown table."""
    lines = ['| %s |' % ' | '.join(headers),
             '|%s|' % '|'.join('---' for _h in headers)]
    lines += ['| %s |' % ' | '.join(str(c) for c in row) for row in rows]
    return '\n'.join(lines)


def rst(headers, rows):
    """Render a reStructuredText grid table."""
    table = [list(headers)] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(headers))]
    rule = '+%s+' % '+'.join('-' * (w + 2) for w in widths)
    head = '+%s+' % '+'.join('=' * (w + 2) for w in widths)

    def line(row):
        cells = [c.ljust(w) for c, w in zip(row, widths)]
        return '| %s |' % ' | '.join(cells)
    out = [rule, line(table[0]), head]
    for row in table[1:]:
        out += [line(row), rule]
    return '\n'.join(out)


def rebuild_rows(results):
    """Rows of the rebuild table for the main (small cloud) phase."""
    rows = []
    for cell in results['rebuild']:
        if cell['phase'] != 'main':
            continue
        requests = str(cell['requests_max'])
        if cell['requests_min'] != cell['requests_max']:
            requests = '%d-%d' % (cell['requests_min'], cell['requests_max'])
        rows.append([cell['n'], cell['case'], cell['strategy'],
                     cell['outcome'], requests, cell['recorded_max'],
                     _fmt(cell['median_ms']), _fmt(cell['p95_ms']),
                     _fmt(cell.get('bare_median_ms')),
                     _fmt(cell.get('overhead'), 2) + 'x'
                     if cell.get('overhead') else '-',
                     _fmt(cell['nova_ratio'], 0) + 'x'
                     if cell['strategy'] != 'reject' else '-'])
    return (['N', 'case', 'strategy', 'outcome', 'requests', 'recorded',
             'median ms', 'p95 ms', 'bare ms', 'this / bare',
             'nova / this'], rows)


def nova_rows(results):
    """Rows of nova's cold check table."""
    rows = []
    for cell in results['nova']:
        outcomes = ', '.join('%s: %s' % kv
                             for kv in cell['outcomes'].items())
        rows.append([cell['n'], cell['requests_max'], cell['runs'],
                     _fmt(cell['median_ms']), _fmt(cell['p95_ms']),
                     outcomes])
    return (['N', 'requests', 'runs', 'median ms', 'p95 ms', 'outcome'],
            rows)


def growth_rows(results):
    """Rows of the cloud-size growth table, one column per strategy."""
    strategies = results['config']['strategies']
    by_key = {}
    for g in results.get('growth') or []:
        by_key.setdefault((g['n'], g['case']), {})[g['strategy']] = g
    rows = []
    for (n, case), cells in sorted(by_key.items(), key=_order):
        rows.append([n, case] + [_growth_cell(cells.get(s))
                                 for s in strategies])
    return (['N', 'case'] + list(strategies), rows)


def _order(item):
    (n, case), _cells = item
    cases = ('root', 'child', 'missing', 'full')
    return n, cases.index(case) if case in cases else len(cases)


def _growth_cell(cell):
    """'base / grown = ratio', with each cycle's ratio when several."""
    if cell is None:
        return '-'
    text = '%s / %s = %.2fx' % (_fmt(cell['base_ms']),
                                _fmt(cell['grown_ms']), cell['ratio'])
    cycles = cell.get('cycle_ratios') or []
    if len(cycles) > 1:
        text += ' (%s)' % ', '.join('%.2f' % r for r in cycles)
    return text


def negotiation_rows(results):
    """Rows describing the once-per-process microversion negotiation."""
    neg = results.get('negotiation') or {}
    if not neg:
        return (['negotiation'], [['not measured']])
    return (['decision', 'requests (engine)', 'requests (recorder)', 'ms'],
            [['first in the process (%s)' % neg['strategy'],
              neg['first_decision_requests'],
              neg['first_decision_recorded'],
              _fmt(neg['first_decision_ms'])],
             ['steady state, median of 5', neg['steady_requests'],
              neg['steady_requests'], _fmt(neg['steady_ms'])]])


def create_rows(results):
    """Rows of the create-path table."""
    create = results.get('create_path') or {}
    if create.get('status') != 'measured':
        return (['create path'], [[create.get('detail', 'not measured')]])
    return (['HostStates', 'runs', 'ImageTraitsFilter ns/host',
             'AllHostsFilter ns/host', 'ratio', 'placement requests'],
            [[create['hosts'], create['runs'],
              _fmt(create['ours_ns_per_host']),
              _fmt(create['all_hosts_ns_per_host']),
              _fmt(create['ratio'], 2), create['placement_requests']]])


def audit_rows(results):
    """Rows of the audit table."""
    audit = results.get('audit') or {}
    if audit.get('status') != 'measured':
        return (['audit'], [['pending: %s' % audit.get('detail', '')]])
    return (['strategy', 'servers', 'hosts', 'placement requests',
             'per host', 'per server', 'seconds'],
            [[r['strategy'], r['servers'], r['hosts'], r['requests'],
              _fmt(r['requests'] / float(r['hosts'])),
              _fmt(r['requests'] / float(r['servers']), 2),
              _fmt(r['seconds'], 1)] for r in audit['runs']])


def target_rows(targets):
    """Rows of the targets table."""
    return (['target', 'result', 'detail'],
            [[t['name'], t['status'].upper(),
              '; '.join(t['failures']) or t['detail']] for t in targets])


def sections(results, targets):
    """Return ``(title, (headers, rows))`` for every table, in order."""
    config = results['config']
    return [
        ('Rebuild decisions, %d background hosts' % config['background'],
         rebuild_rows(results)),
        ("Nova's conductor check, cold cache, %d background hosts"
         % config['background'], nova_rows(results)),
        ('Latency growth, median ms at %d / %d background hosts '
         '(per-cycle ratios)' % (config['background'], config['grow_to']),
         growth_rows(results)),
        ('Microversion negotiation (once per process, not in the '
         'tables above)', negotiation_rows(results)),
        ('Create path through nova\'s filter handler',
         create_rows(results)),
        ('Audit', audit_rows(results)),
        ("The nova-api pre-check, through nova's API", precheck_rows(results)),
        ('Derived requirements (vTPM, disk bus, ...)',
         _derived_rows(results)),
        ('Measured properties, not targets', property_rows(results)),
        ('Targets', target_rows(targets)),
    ]


def _derived_rows(results):
    from benchmarks import derive  # nova: imported when used
    return derive.rows(results)


def precheck_rows(results):
    """Rows of the pre-check's cost per rebuild."""
    pre = results.get('precheck') or {}
    if pre.get('status') != 'measured':
        return (['pre-check'], [[pre.get('status', 'not measured')]])
    return (['POST rebuild', 'runs', 'median ms'], [
        ['accepted (202), without the pre-check', pre['runs'],
         _fmt(pre['accepted_without_ms'])],
        ['accepted (202), with the pre-check', pre['runs'],
         _fmt(pre['accepted_with_ms'])],
        ['added by the pre-check', '-', _fmt(pre['added_ms'])],
        ['refused by the pre-check (400)', pre['runs'],
         _fmt(pre['refused_ms'])]])


def property_rows(results):
    """Rows of what is measured and stated rather than targeted."""
    rows = []
    prop = growth_property(results)
    if prop:
        rows.append(['%(strategy)s latency growth, %(background)d -> '
                     '%(grow_to)d background hosts' % prop,
                     '%.2fx to %.2fx' % (prop['min'], prop['max']),
                     "placement sums the usage of every provider with the "
                     "requested classes before it applies in_tree"])
    return (['property', 'measured', 'why'], rows)


def render_markdown(results, targets):
    """Return the Markdown report: every table with a heading."""
    out = []
    for title, (headers, rows) in sections(results, targets):
        out += ['### %s' % title, '', markdown(headers, rows), '']
    return '\n'.join(out)


def render_rst(results, targets):
    """Return the machine as a field list, then every table."""
    out = [':%s: %s' % tuple(line.split(': ', 1))
           for line in machine_lines(results.get('machine') or {})]
    out.append('')
    for title, (headers, rows) in sections(results, targets):
        out += ['.. rubric:: %s' % title, '', rst(headers, rows), '']
    return '\n'.join(out)


def machine_lines(machine):
    """Return 'key: value' lines describing the machine."""
    keys = ('date', 'command', 'nproc', 'cpu', 'platform', 'python', 'nova',
            'openstack-placement', 'nova-image-traits',
            'load_average_start', 'load_average_end', 'duration_s')
    return ['%s: %s' % (k, machine.get(k)) for k in keys if k in machine]


def main(argv=None):
    """Render a saved results file again."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument('path')
    parser.add_argument('--rst', action='store_true')
    args = parser.parse_args(argv)
    with open(args.path) as f:
        results = json.load(f)
    targets = evaluate(results)
    render = render_rst if args.rst else render_markdown
    sys.stdout.write(render(results, targets) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
