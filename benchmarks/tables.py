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
"""The benchmark's results as Markdown or reStructuredText tables.

Everything here works on the JSON-able results dict that
:mod:`benchmarks.run` writes, and on the verdicts of
:mod:`benchmarks.targets`.
"""

from benchmarks import isolation


def _fmt(value, digits=1):
    if value is None:
        return '-'
    return '%.*f' % (digits, value)


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
        ('Aggregate isolation: placement requests per decision',
         isolation.rows(results)),
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
    rounds = pre.get('rounds', pre['runs'])
    return (['POST rebuild', 'runs', 'median ms', 'median paired ratio'], [
        ['accepted (202), nova alone', rounds,
         _fmt(pre['accepted_without_ms']), '1'],
        ['accepted (202), decided by the pre-check', rounds,
         _fmt(pre['accepted_with_ms']), _fmt(pre.get('ratio'), 2)],
        ['added by the pre-check', '-', _fmt(pre['added_ms']), '-'],
        ["accepted (202), decided after the node's generation moved "
         '(its traits asked again, after the allocations)', rounds,
         _fmt(pre.get('moved_ms')), _fmt(pre.get('moved_ratio'), 2)],
        ['refused by the pre-check (400)', rounds,
         _fmt(pre['refused_ms']), _fmt(pre.get('refused_ratio'), 2)],
        ["of which placement's own server CPU, in nova-api's process here",
         rounds, _fmt(pre.get('placement_cpu_ms')), '-'],
        ['decided, less placement\'s server CPU (placement elsewhere, '
         'estimated)', rounds, '-',
         _fmt(pre.get('ratio_placement_elsewhere'), 2)]])


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
