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
"""The tables ``simulate`` prints: compact (the default), matrix and long.

The compact matrix is for people: cases down, strategies across, a few
characters a cell, so that the table fits 120 columns and a row where the
strategies disagree stands out.
"""

import textwrap

from nova_image_traits import cli
from nova_image_traits.cli import derive
from nova_image_traits import decision as nit_decision

#: Column headers of the strategies.
SHORT_NAMES = {
    'held_providers': 'held',
    'reject': 'reject',
    'root_traits': 'root',
    'tree_traits': 'tree',
    'in_tree_candidates': 'intree',
    'allocation_traits': 'alloc',
}
#: Cells of the outcomes; other outcomes show their first three letters.
CELLS = {nit_decision.ACCEPT: 'ok', nit_decision.REJECT: 'no'}
#: Marks the cells the fallback strategy decided.
FALLBACK = '*'
#: Marks the rows where the strategies disagree.
SPLIT = '!'
#: The widest ``Traits At`` cell.
WHERE_LIMIT = 34
WIDTH = 120


def cell(decision):
    """``ok``, ``no`` (``ok*``/``no*`` when the fallback decided)."""
    text = CELLS.get(decision.outcome, decision.outcome[:3])
    return text + FALLBACK if decision.fallback else text


def legend(names, decisions):
    """The lines printed under the matrix."""
    fallbacks = sorted({d.fallback for d in decisions if d.fallback})
    parts = ['ok = accept, no = reject']
    if fallbacks:
        parts.append('%s = decided by the fallback strategy (%s)' % (
            FALLBACK, ', '.join(fallbacks)))
    parts.append('%s = the strategies disagree' % SPLIT)
    parts.append('; '.join('%s = %s' % (SHORT_NAMES.get(n, n), n)
                           for n in names if SHORT_NAMES.get(n, n) != n))
    parts.append('--long for the reasons')
    return textwrap.wrap('. '.join(p for p in parts if p) + '.', WIDTH)


def compact(names, judged):
    """The compact matrix: ``(columns, rows)``.

    A row is a case: its name, where the traits are, a cell per strategy
    and the mark of a split.
    """
    rows = []
    for j in judged:
        split = len({d.allowed for d in j.decisions}) > 1
        rows.append((j.case.name, cli.cut(j.where, WHERE_LIMIT)) + tuple(
            cell(d) for d in j.decisions) + (SPLIT if split else '',))
    return ('Case', 'Traits At') + tuple(
        SHORT_NAMES.get(n, n) for n in names) + (SPLIT,), rows


def matrix(names, judged):
    """A case a row, a strategy a column, each cell the outcome."""
    return ('Case', 'Traits At') + tuple(names), [
        (j.case.name, j.where) + tuple(
            '%s (%s)' % (d.outcome, d.fallback) if d.fallback
            else d.outcome for d in j.decisions)
        for j in judged]


def long(judged):
    """A row per case and strategy, with the reasons."""
    return [(j.case.name, j.request.host, j.case.image, j.where,
             d.strategy, d.outcome, d.allowed, d.fallback or '-',
             cli.join(d.missing), d.requests, d.derived,
             derive.requirements_cell(d), cli.short_reason(d))
            for j in judged for d in j.decisions]
