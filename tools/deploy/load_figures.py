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
"""The load run's figures, from Rally's JSON report (``load_run.py``).

Each rebuild call's duration is an atomic action of the scenario
(``rally-jobs/plugins/nit_rebuild.py``); p50 and p95 are interpolated as
Rally's own tables do, and written as the Markdown table that
``benchmarks/RESULTS.md``'s "Load run (Rally)" section records.
"""

#: The atomic actions around the rebuild calls alone.
ATOMIC = ('nit.rebuild_accepted', 'nit.rebuild_refused')


def percentile(values, p):
    """The P-th percentile of VALUES, interpolated (as Rally's tables)."""
    values = sorted(values)
    k = (len(values) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def atomic_durations(report):
    """{atomic action name: [seconds]}, and the iterations with an error."""
    durations, errors = {}, []
    for task in report['tasks']:
        for sub in task['subtasks']:
            for wl in sub['workloads']:
                for it in wl['data']:
                    if it.get('error'):
                        errors.append(it['error'])
                    for act in it['atomic_actions']:
                        durations.setdefault(act['name'], []).append(
                            act['finished_at'] - act['started_at'])
    return durations, errors


def write_table(path, sizes, results, refusals):
    """Write RESULTS, by configuration, as a Markdown table; return it.

    :param sizes: servers, concurrency and times of the run
    :param results: configuration: its row (``LoadRun.run_config``)
    :param refusals: configuration: ``precheck`` or ``error``
    """
    lines = ['%d servers on one host, %d iterations at %d at once; each '
             'iteration one accepted and one refused rebuild '
             '(%d rebuild calls).' % (
                 sizes['servers'], sizes['times'], sizes['concurrency'],
                 2 * sizes['times']), '',
             '| configuration | refusal | accepted p50 / p95 (ms) | '
             'refused p50 / p95 (ms) | unexpected errors | left of the '
             'refused image | load average |',
             '| --- | --- | --- | --- | --- | --- | --- |']
    for label in refusals:
        row = results.get(label)
        if row is None:
            continue
        cells = []
        for action in ATOMIC:
            a = row.get(action)
            cells.append('%.0f / %.0f (n=%d)' % (
                a['p50'] * 1000, a['p95'] * 1000, a['n']) if a else '-')
        errors = '%d' % len(row['errors'])
        if row['rc']:
            errors += ' (rally exited %d)' % row['rc']
        lines.append('| %s | %s | %s | %s | %s | %s | %.1f to %.1f |' % (
            label, refusals[label].replace(
                'precheck', '400').replace('error', 'ERROR'),
            cells[0], cells[1], errors,
            'nothing' if not row['problems'] else '; '.join(
                row['problems']), row['load'][0], row['load'][1]))
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    return '\n'.join(lines)
